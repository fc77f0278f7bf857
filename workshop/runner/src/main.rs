//! The workshop's commands (the justfile calls them):
//!
//! - `check NN [--mine] [--verbose]`: run stage NN's checks on the learner's code, with a readable verdict.
//!   By default the stage builds on the reference solutions of the stages before it; `--mine` builds it on
//!   the learner's own earlier stages instead (the stage's `reference` feature off).
//! - `next`: name the first stage whose checks do not pass yet;
//! - `solve NN`: show stage NN's reference solution and how the learner's file differs from it;
//! - `reset NN`: put stage NN's starter back (the learner's file kept as `src/exercise.rs.bak`);
//! - `verify` (CI): every reference solution passes its checks and clippy, every starter fails all of them;
//! - `mutants NN`: the mistakes planted in stage NN's solution each fail their check ([`mutants`]; `verify`
//!   runs them for every stage);
//! - `repeat TIMES NN…`: each stage's reference solution passes its checks TIMES runs in a row (the checks
//!   that race: the ones that run alone, which measure memory, are left out);
//! - `down`: remove the containers `check` started for servers that were not there ([`servers`]).
//!
//! It reads structured output only: cargo's JSON messages (`--message-format=json`) for compile errors and
//! build progress, and the JSON report the stage's harness writes (`workshop-harness`) for each check.

mod cargo;
mod fresh;
mod mutants;
mod servers;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::sync::OnceLock;
use std::time::Instant;

use cargo::{Built, Progress, TestRun};
use workshop_harness::{Outcome, REPORT_VAR, Report};

/// One stage: `workshop/NN-name`.
#[derive(Debug)]
struct Stage {
    dir: PathBuf,
    number: String,
    package: String,
    title: String,
}

impl Stage {
    /// `NN-name`, the folder's and the chapter's name.
    fn slug(&self) -> String {
        self.dir
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned()
    }
}

/// Which code a run builds.
#[derive(Clone, Copy, Debug, Default)]
struct Mode {
    /// The stage's reference solution instead of the learner's file.
    solution: bool,
    /// The learner's earlier stages instead of their reference solutions.
    mine: bool,
}

/// What running a stage's checks gave.
enum Run {
    /// The code did not compile: the compiler's rendered messages.
    DoesNotCompile(Vec<String>),
    /// The checks ran; the compiler's warnings about the learner's code; what the tests said of their run.
    Ran(Report, Vec<String>, TestRun),
}

/// The checkout the learner works in: the nearest directory, from `start` up, holding the workshop's runner.
///
/// Found at run time, never fixed when the runner is compiled: two checkouts sharing one `CARGO_TARGET_DIR`
/// share one runner binary, and each must check its own files.
fn find_workspace(start: &Path) -> Option<PathBuf> {
    start
        .ancestors()
        .find(|dir| dir.join("workshop/runner/Cargo.toml").is_file())
        .map(Path::to_path_buf)
}

/// The workspace around the current directory (`just` runs the runner from the justfile's directory).
fn workspace() -> Result<PathBuf, String> {
    let here = std::env::current_dir().map_err(|e| format!("the current directory: {e}"))?;
    find_workspace(&here).ok_or_else(|| {
        format!(
            "{} is not inside a tandem checkout (no workshop/runner/Cargo.toml here or above): run just check \
             from the checkout",
            here.display()
        )
    })
}

/// A `key = "value"` line of a manifest's `[package]`.
fn manifest_field(manifest: &str, key: &str) -> Option<String> {
    manifest.lines().find_map(|l| {
        let rest = l.strip_prefix(key)?.trim_start().strip_prefix('=')?.trim();
        Some(rest.trim_matches('"').to_owned())
    })
}

fn stages() -> Result<Vec<Stage>, String> {
    stages_in(&workspace()?)
}

/// The stages of the checkout at `root`.
fn stages_in(root: &Path) -> Result<Vec<Stage>, String> {
    let dir = root.join("workshop");
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))? {
        let path = entry.map_err(|e| e.to_string())?.path();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_owned();
        let Some(number) = name
            .get(..2)
            .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
        else {
            continue;
        };
        let manifest = std::fs::read_to_string(path.join("Cargo.toml"))
            .map_err(|e| format!("{}: {e}", path.display()))?;
        out.push(Stage {
            number: number.to_owned(),
            package: manifest_field(&manifest, "name").ok_or("a stage without a name")?,
            title: manifest_field(&manifest, "description").unwrap_or_default(),
            dir: path,
        });
    }
    out.sort_by(|a, b| a.number.cmp(&b.number));
    Ok(out)
}

fn stage(number: &str) -> Result<Stage, String> {
    // `1` means `01`.
    let number = &format!("{number:0>2}");
    let all = stages()?;
    let names: Vec<String> = all.iter().map(Stage::slug).collect();
    all.into_iter()
        .find(|s| s.number == *number)
        .ok_or_else(|| format!("no stage {number}: the stages are {}", names.join(" ")))
}

/// The stages `stage` builds on (those its `reference` feature names), each with whether the learner's
/// code of it passed its checks as it is now ([`record_pass`]).
fn earlier_stages(stage: &Stage) -> Result<Vec<(Stage, bool)>, String> {
    let manifest = std::fs::read_to_string(stage.dir.join("Cargo.toml"))
        .map_err(|e| format!("{}: {e}", stage.dir.display()))?;
    let named = manifest_field(&manifest, "reference").unwrap_or_default();
    let packages: Vec<&str> = named
        .trim_matches(['[', ']'])
        .split(',')
        .filter_map(|p| p.trim().trim_matches('"').strip_suffix("/solution"))
        .collect();
    Ok(stages()?
        .into_iter()
        .filter(|s| packages.contains(&s.package.as_str()))
        .map(|s| {
            let passed = passed_as_is(&s);
            (s, passed)
        })
        .collect())
}

/// Where the copy of a stage's file that last passed is kept.
fn pass_record(stage: &Stage) -> Option<PathBuf> {
    Some(
        workspace()
            .ok()?
            .join("target/workshop-passed")
            .join(format!("{}.rs", stage.number)),
    )
}

/// Remembers that the learner's file of `stage`, as it is now, passed all its checks.
fn record_pass(stage: &Stage) {
    let Some(record) = pass_record(stage) else {
        return;
    };
    if let Some(dir) = record.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let _ = std::fs::copy(stage.dir.join("src/exercise.rs"), record);
}

/// Whether the learner's file of `stage` passed all its checks as it is now (unchanged since).
fn passed_as_is(stage: &Stage) -> bool {
    let Some(record) = pass_record(stage) else {
        return false;
    };
    let mine = std::fs::read(stage.dir.join("src/exercise.rs")).ok();
    mine.is_some() && std::fs::read(record).ok() == mine
}

/// "built on: …" — which earlier stages a run builds on, said per stage.
fn built_on(stage: &Stage, mode: Mode) -> Result<String, String> {
    if !mode.mine {
        return Ok(
            "the reference solutions of the earlier stages (add --mine to use yours)".to_owned(),
        );
    }
    let earlier = earlier_stages(stage)?;
    let numbers = |passed: bool| -> Vec<String> {
        earlier
            .iter()
            .filter(|(_, p)| *p == passed)
            .map(|(s, _)| s.number.trim_start_matches('0').to_owned())
            .collect()
    };
    let (mine, reference) = (numbers(true), numbers(false));
    // Which of the learner's versions: the file as it is now, which passed its check at this time.
    let when: Vec<String> = earlier
        .iter()
        .filter(|(_, passed)| *passed)
        .filter_map(|(s, _)| {
            let at = std::fs::metadata(pass_record(s)?).ok()?.modified().ok()?;
            Some(format!(
                "{} passed {}",
                s.number.trim_start_matches('0'),
                ago(at.elapsed().unwrap_or_default())
            ))
        })
        .collect();
    let when = if when.is_empty() {
        String::new()
    } else {
        format!(
            " — your files as they are now, as they passed their checks: {}",
            when.join(", ")
        )
    };
    let stages = |n: &[String]| match n {
        [one] => format!("stage {one}"),
        _ => format!("stages {}", n.join(", ")),
    };
    Ok(match (mine.is_empty(), reference.is_empty()) {
        (_, true) => format!("your own {} (--mine){when}", stages(&mine)),
        (true, false) => format!(
            "the reference solutions of {} — none of yours has passed `just check` as it is now \
             (--mine uses each of your stages once it passes)",
            stages(&reference)
        ),
        (false, false) => format!(
            "your {} · the reference solutions of {} (yours have not passed `just check` as they are \
             now){when}",
            stages(&mine),
            stages(&reference)
        ),
    })
}

/// How long ago, in words: "just now", "12 min ago", "3 h ago", "2 days ago".
fn ago(d: std::time::Duration) -> String {
    match d.as_secs() {
        s if s < 60 => "just now".to_owned(),
        s if s < 3_600 => format!("{} min ago", s / 60),
        s if s < 2 * 86_400 => format!("{} h ago", s / 3_600),
        s => format!("{} days ago", s / 86_400),
    }
}

/// Whether a stage's checks reach the servers (they ask for a server target or loop over the engines).
fn needs_servers(stage: &Stage) -> bool {
    std::fs::read_to_string(stage.dir.join("tests/check.rs"))
        .is_ok_and(|t| t.contains("target_or_skip") || t.contains("ENGINES"))
}

/// The servers' environment for the checks, prepared once per run of the runner (containers started
/// where a server is missing, [`servers`]); what was done is printed the first time.
fn server_env() -> Result<&'static [(&'static str, String)], String> {
    static PREPARED: OnceLock<Vec<(&'static str, String)>> = OnceLock::new();
    if let Some(env) = PREPARED.get() {
        return Ok(env);
    }
    let (env, notes) = servers::prepare(&workspace()?);
    for n in notes {
        println!("   {n}");
    }
    Ok(PREPARED.get_or_init(|| env))
}

/// Which of a stage's checks a run runs.
#[derive(Clone, Copy, Debug)]
enum Pick<'a> {
    /// Every check.
    All,
    /// The check of that name.
    Only(&'a str),
    /// Every check but the ones that run alone (they measure the process).
    Racing,
}

/// Runs a stage's checks (those `pick` says).
fn run(stage: &Stage, mode: Mode, progress: Progress, pick: Pick<'_>) -> Result<Run, String> {
    let report = std::env::temp_dir().join(format!(
        "tandem-workshop-{}-{}{}.json",
        stage.number,
        std::process::id(),
        if mode.solution { "-solution" } else { "" }
    ));
    let _ = std::fs::remove_file(&report);
    let command = || -> Result<std::process::Command, String> {
        let mut cmd = cargo::command();
        cmd.current_dir(&stage.dir)
            .args([
                "test",
                "-q",
                "-p",
                &stage.package,
                "--test",
                "check",
                "--message-format=json",
            ])
            .env(REPORT_VAR, &report);
        if needs_servers(stage) {
            cmd.envs(server_env()?.iter().map(|(k, v)| (k, v)));
        }
        if mode.solution {
            cmd.args(["--features", "solution"]);
        }
        if mode.mine {
            // The learner's earlier stages that passed as they are now; the reference for the others.
            cmd.arg("--no-default-features");
            let reference: Vec<String> = earlier_stages(stage)?
                .into_iter()
                .filter(|(_, passed)| !passed)
                .map(|(s, _)| format!("{}/solution", s.package))
                .collect();
            if !reference.is_empty() {
                cmd.args(["--features", &reference.join(",")]);
            }
        }
        match pick {
            Pick::All => {}
            Pick::Only(name) => {
                cmd.args(["--", "--exact", name]);
            }
            Pick::Racing => {
                cmd.env(workshop_harness::SKIP_ALONE_VAR, "1");
            }
        }
        Ok(cmd)
    };
    // Code put back with an older time than the last build (`mv`, `just reset`'s `.bak`), or built since
    // by something the runner did not follow, is built anew (see `fresh`).
    let root = workspace()?;
    let record_path = fresh::record_path(&root);
    let mut record = fresh::Record::load(&record_path);
    let now = fresh::Current::read(
        &fresh::stage_sources_upto(&root.join("workshop"), &stage.number),
        &root,
    );
    record.prepare(&now);
    let (mut built, artifacts) = cargo::run(command()?, progress, &stage.package)?;
    let unvouched = record.settle(&now, &artifacts, false);
    if !unvouched.is_empty() {
        if progress == Progress::Show {
            println!(
                "   cargo reused a build of {} that may hold other code than yours (made by another \
                 checkout or a plain cargo): building it again and checking once more",
                unvouched.join(", ")
            );
        }
        now.touch_stages(&unvouched);
        let _ = std::fs::remove_file(&report);
        let (again, artifacts) = cargo::run(command()?, progress, &stage.package)?;
        record.settle(&now, &artifacts, true);
        built = again;
    }
    record.save(&record_path);
    match built {
        Built::Failed(errors) => Ok(Run::DoesNotCompile(errors)),
        Built::Ok(warnings, tests) => {
            let report = workshop_harness::read_report(&report).map_err(|e| {
                format!("the checks of stage {} left no report ({e})", stage.number)
            })?;
            Ok(Run::Ran(report, warnings, tests))
        }
    }
}

/// The failing checks grouped by what they said, in the order they failed: checks that all stop at the
/// same `todo!` (or fail the same way) are shown once.
fn same_failures<'r>(failed: &[&'r Outcome]) -> Vec<(Vec<&'r str>, &'r str)> {
    let mut groups: Vec<(Vec<&str>, &str)> = Vec::new();
    for f in failed {
        let message = f.message.as_deref().unwrap_or("");
        match groups.iter_mut().find(|(_, m)| *m == message) {
            Some((names, _)) => names.push(&f.name),
            None => groups.push((vec![&f.name], message)),
        }
    }
    groups
}

/// `names` after `head`, comma-separated, wrapped at 110 columns with the continuation lines indented.
fn print_names(head: &str, names: &[&str]) {
    let mut line = head.to_owned();
    let indent = " ".repeat(head.chars().take_while(|c| *c == ' ').count() + 1);
    for (i, name) in names.iter().enumerate() {
        let sep = if i + 1 < names.len() { "," } else { "" };
        if line.chars().count() + name.len() + 2 > 110 {
            println!("{line}");
            line = indent.clone();
        }
        line.push_str(&format!(" {name}{sep}"));
    }
    println!("{line}");
}

fn failing(report: &Report) -> Vec<&Outcome> {
    report.checks.iter().filter(|c| !c.passed).collect()
}

/// A failing check's message as a learner needs it: the panic's words, the minimal failing input of a
/// property test; proptest's counters only with `--verbose`; at most 14 lines unless `--verbose`.
fn shown_message(message: &str, verbose: bool) -> Vec<String> {
    let mut lines: Vec<String> = message
        .lines()
        .filter(|l| {
            verbose
                || !["successes:", "local rejects:", "global rejects:"]
                    .iter()
                    .any(|p| l.trim_start().starts_with(p))
        })
        .map(|l| cut_line(l, verbose))
        .collect();
    const MAX: usize = 14;
    if !verbose && lines.len() > MAX {
        let more = lines.len() - MAX;
        lines.truncate(MAX);
        lines.push(format!("… {more} more lines (--verbose shows them)"));
    }
    lines
}

/// A line of a message, cut to its first 300 characters unless `verbose`: a failing check's values can be
/// a 20,000-row INSERT on one line, and the difference is in what the check says around it. A line that
/// runs less than 200 characters past that is shown whole: cutting the end of a sentence saves nothing.
fn cut_line(line: &str, verbose: bool) -> String {
    const WIDTH: usize = 300;
    const WORTH_CUTTING: usize = 200;
    let long = line.char_indices().nth(WIDTH + WORTH_CUTTING).is_some();
    match line.char_indices().nth(WIDTH) {
        Some((at, _)) if long && !verbose => format!(
            "{}… ({} more characters; --verbose shows them)",
            &line[..at],
            line[at..].chars().count()
        ),
        _ => line.to_owned(),
    }
}

/// The first compiler errors, and how many more there were.
fn show_compile_errors(errors: &[String], verbose: bool) {
    let limit = if verbose { errors.len() } else { 3 };
    for e in errors.iter().take(limit) {
        print!("{e}");
    }
    if errors.len() > limit {
        println!(
            "   … and {} more errors (--verbose shows them all)",
            errors.len() - limit
        );
    }
}

/// The compiler's warnings about the learner's code: how many, the first one (all with `--verbose`).
fn show_warnings(warnings: &[String], verbose: bool) {
    if warnings.is_empty() {
        return;
    }
    println!(
        "   ⚠ the compiler has {} warning{} about your code (the project's lints: missing docs, unused items, …):",
        warnings.len(),
        if warnings.len() == 1 { "" } else { "s" }
    );
    let shown = if verbose { warnings.len() } else { 1 };
    for w in warnings.iter().take(shown) {
        print!("{w}");
    }
    if warnings.len() > shown {
        println!("   … --verbose shows them all");
    }
}

/// Whether a starter's compile errors are its intended `compile_error!("TODO …")`: a stage whose first
/// piece must exist before its tests can compile starts that way.
fn is_todo_stop(errors: &[String]) -> bool {
    errors
        .first()
        .is_some_and(|e| e.trim_start().starts_with("error: TODO (stage"))
}

fn check(stage: &Stage, mode: Mode, verbose: bool) -> Result<bool, String> {
    let slug = stage.slug();
    println!("== stage {} · {}", stage.number, stage.title);
    println!("   chapter: book/src/{slug}.md");
    // The whole path: it says which checkout is built when there are several.
    println!(
        "   your code: {}",
        stage.dir.join("src/exercise.rs").display()
    );
    if stage.number != "01" {
        println!("   built on: {}", built_on(stage, mode)?);
    }
    match run(stage, mode, Progress::Show, Pick::All)? {
        Run::DoesNotCompile(errors) => {
            // A starter's TODO stop repeats at every use of the missing piece: once says it.
            let shown = if is_todo_stop(&errors) && !verbose {
                &errors[..1]
            } else {
                &errors[..]
            };
            show_compile_errors(shown, verbose);
            if is_todo_stop(&errors) {
                println!(
                    "   ✗ the first piece to write is named above: the tests compile once it exists."
                );
            } else {
                println!("   ✗ the code does not compile yet (the compiler's words are above).");
            }
            Ok(false)
        }
        Run::Ran(report, warnings, tests) => {
            if !tests.engines.is_empty() {
                println!("   engines: {}", tests.engines.join(", "));
            }
            // Engines neither reached nor skipped: the checks stopped (failed) before them.
            let not_reached: Vec<&str> = if needs_servers(stage) {
                workshop_harness::ENGINE_NAMES
                    .into_iter()
                    .filter(|e| {
                        !tests.engines.iter().any(|r| r == e)
                            && !tests.skipped.iter().any(|s| s.contains(e))
                    })
                    .collect()
            } else {
                Vec::new()
            };
            if !not_reached.is_empty() {
                println!(
                    "   not reached: {} — the checks stopped before getting to them",
                    not_reached.join(", ")
                );
            }
            for s in &tests.skipped {
                println!("   ⚠ not checked: {s}");
            }
            let failed = failing(&report);
            let total = report.checks.len();
            // The tests' own time: a first build's minutes are not theirs.
            let secs = tests.took.as_secs_f64();
            if failed.is_empty() {
                record_pass(stage);
                println!(
                    "   ✓ all {total} tests pass ({secs:.1} s). On to the next stage: just next"
                );
                let mine =
                    std::fs::read_to_string(stage.dir.join("src/exercise.rs")).unwrap_or_default();
                if warnings.is_empty() && mine.contains("#![allow(") {
                    println!(
                        "   ✓ and no warnings the starter's #![allow(…)] lets through: delete it, as its comment says, to see them all"
                    );
                } else if warnings.is_empty() {
                    println!("   ✓ and the compiler has no warnings about your code");
                }
                show_warnings(&warnings, verbose);
                return Ok(true);
            }
            println!(
                "   {total} tests: {} pass, {} to go ({secs:.1} s)",
                total - failed.len(),
                failed.len()
            );
            for (names, message) in same_failures(&failed) {
                let lines = shown_message(message, verbose);
                let (first, rest) = lines
                    .split_first()
                    .map_or(("", &[][..]), |(a, b)| (a.as_str(), b));
                match names.as_slice() {
                    [one] => println!("   ✗ {one} — {first}"),
                    [one, others @ ..] => {
                        println!("   ✗ {one} and {} more — {first}", others.len())
                    }
                    [] => {}
                }
                for l in rest {
                    println!("       {l}");
                }
                if names.len() > 1 {
                    // One unwritten piece stops every check that needs it: one line, not ten alike.
                    print_names("       the same in:", &names[1..]);
                }
            }
            // What already works, by name: progress a learner can see, and the checks to keep passing.
            let passing: Vec<&str> = report
                .checks
                .iter()
                .filter(|c| c.passed)
                .map(|c| c.name.as_str())
                .collect();
            if !passing.is_empty() {
                print_names("   ✓ passing:", &passing);
            }
            show_warnings(&warnings, verbose);
            println!(
                "   The tests in workshop/{slug}/tests/check.rs are the whole specification; stuck? just solve {}",
                stage.number
            );
            Ok(false)
        }
    }
}

fn next() -> Result<bool, String> {
    for s in stages()? {
        println!("== stage {} · {}", s.number, s.title);
        let why = match run(&s, Mode::default(), Progress::Show, Pick::All)? {
            Run::Ran(r, ..) if failing(&r).is_empty() && !r.checks.is_empty() => None,
            Run::Ran(r, ..) if r.checks.is_empty() => Some("no test ran".to_owned()),
            Run::Ran(r, ..) => {
                let names: Vec<&str> = failing(&r).iter().map(|f| f.name.as_str()).collect();
                let more = names.len().saturating_sub(3);
                Some(format!(
                    "{} of {} tests to go: {}{}",
                    names.len(),
                    r.checks.len(),
                    names[..names.len().min(3)].join(", "),
                    if more > 0 {
                        format!(" and {more} more")
                    } else {
                        String::new()
                    }
                ))
            }
            Run::DoesNotCompile(errors) if is_todo_stop(&errors) => {
                // The starter's own words name the piece: no second command needed to read them.
                let first = errors[0].trim_start().lines().next().unwrap_or_default();
                Some(format!(
                    "the first piece to write stops the build: {}",
                    first.trim_start_matches("error: ")
                ))
            }
            Run::DoesNotCompile(_) => Some("the code does not compile yet".to_owned()),
        };
        if let Some(why) = why {
            println!(
                "next: stage {} · {} — {why}.\n      Read book/src/{}.md, then: just check {}",
                s.number,
                s.title,
                s.slug(),
                s.number
            );
            println!(
                "      (next stops at the first stage that does not pass yet; a later stage you worked on\n      \
                 does not need this one: just check NN runs it on the reference solutions of the stages before)"
            );
            return Ok(true);
        }
        println!("   ✓ stage {} passes", s.slug());
    }
    println!(
        "every stage passes: the workshop is done. The book's last chapter has the measured results."
    );
    Ok(true)
}

fn solve(stage: &Stage) -> Result<bool, String> {
    let solution = stage.dir.join("solution/exercise.rs");
    let mine = stage.dir.join("src/exercise.rs");
    println!(
        "== the reference solution of stage {}: {}",
        stage.number,
        solution.display()
    );
    print!(
        "{}",
        std::fs::read_to_string(&solution).map_err(|e| format!("{}: {e}", solution.display()))?
    );
    if std::fs::read(&mine).ok() != std::fs::read(&solution).ok() {
        println!("\n== how your {} differs from it", mine.display());
        // diff's exit code says only whether the files differ.
        let _ = Command::new("diff")
            .arg("-u")
            .arg(&mine)
            .arg(&solution)
            .status();
    }
    Ok(true)
}

/// Puts the stage's starter back in `src/exercise.rs`, keeping the learner's file beside it.
fn reset(stage: &Stage) -> Result<bool, String> {
    let starter = stage.dir.join("starter/exercise.rs");
    let mine = stage.dir.join("src/exercise.rs");
    let backup = stage.dir.join("src/exercise.rs.bak");
    let fresh = std::fs::read(&starter).map_err(|e| format!("{}: {e}", starter.display()))?;
    if std::fs::read(&mine).ok().as_deref() == Some(&fresh[..]) {
        println!(
            "workshop/{}/src/exercise.rs is the starter already",
            stage.slug()
        );
        return Ok(true);
    }
    std::fs::copy(&mine, &backup).map_err(|e| format!("{}: {e}", backup.display()))?;
    std::fs::write(&mine, fresh).map_err(|e| format!("{}: {e}", mine.display()))?;
    let slug = stage.slug();
    println!(
        "workshop/{slug}/src/exercise.rs is the starter again; your file is workshop/{slug}/src/exercise.rs.bak"
    );
    Ok(true)
}

fn verify() -> Result<bool, String> {
    let all = stages()?;
    let mut ok = true;
    // The book shows the starters from `starter/`; the learner's file must start as exactly that.
    for s in &all {
        let (starter, mine) = (
            s.dir.join("starter/exercise.rs"),
            s.dir.join("src/exercise.rs"),
        );
        if std::fs::read(&starter).ok() != std::fs::read(&mine).ok() {
            println!(
                "✗ {}: src/exercise.rs differs from starter/exercise.rs (the starter the book shows)",
                s.slug()
            );
            ok = false;
        }
    }
    // The reference solutions are code learners read: lint them as the project's own code.
    let mut clippy = cargo::command();
    clippy.current_dir(workspace()?).arg("clippy");
    for s in &all {
        clippy.args(["-p", &s.package]);
    }
    let features: Vec<String> = all
        .iter()
        .map(|s| format!("{}/solution", s.package))
        .collect();
    clippy.args([
        "--all-targets",
        "--features",
        &features.join(","),
        "--",
        "-D",
        "warnings",
    ]);
    if !clippy.status().map_err(|e| e.to_string())?.success() {
        println!("✗ the reference solutions do not pass clippy");
        ok = false;
    }
    for s in &all {
        let name = s.slug();
        let solution = Mode {
            solution: true,
            mine: false,
        };
        let started = Instant::now();
        let solved = match run(s, solution, Progress::Quiet, Pick::All)? {
            Run::Ran(r, ..) if failing(&r).is_empty() && !r.checks.is_empty() => r.checks.len(),
            Run::Ran(r, ..) if r.checks.is_empty() => {
                println!("✗ {name}: no check ran");
                ok = false;
                continue;
            }
            Run::Ran(r, ..) => {
                for f in failing(&r) {
                    println!("   {}: {}", f.name, f.message.as_deref().unwrap_or(""));
                }
                println!("✗ {name}: the reference solution fails its checks");
                ok = false;
                continue;
            }
            Run::DoesNotCompile(errors) => {
                errors.iter().for_each(|e| print!("{e}"));
                println!("✗ {name}: the reference solution does not compile");
                ok = false;
                continue;
            }
        };
        let secs = started.elapsed().as_secs_f64();
        match run(s, Mode::default(), Progress::Quiet, Pick::All)? {
            Run::DoesNotCompile(errors) if is_todo_stop(&errors) => println!(
                "✓ {name}: the solution passes {solved} checks ({secs:.1} s), the starter stops at its first TODO"
            ),
            Run::DoesNotCompile(errors) => {
                errors.iter().for_each(|e| print!("{e}"));
                println!("✗ {name}: the starter does not compile");
                ok = false;
            }
            Run::Ran(r, ..) => {
                let failed = failing(&r).len();
                if r.checks.len() != solved || failed != solved {
                    println!(
                        "✗ {name}: the starter passes {} of {solved} checks (every check must fail until the learner works)",
                        r.checks.len() - failed
                    );
                    ok = false;
                } else {
                    println!(
                        "✓ {name}: the solution passes {solved} checks ({secs:.1} s), the starter fails all {failed}"
                    );
                }
            }
        }
    }
    for s in &all {
        ok &= planted_mistakes_are_caught(s)?;
    }
    if ok {
        println!("workshop: {} passed, 0 failed", all.len());
    } else {
        println!("workshop: verification failed");
    }
    Ok(ok)
}

/// The reference solution of `s` passes its checks `times` runs in a row: a check that fails one run in
/// twenty is a check a learner cannot trust.
fn repeat(s: &Stage, times: u32) -> Result<bool, String> {
    let name = s.slug();
    let solution = Mode {
        solution: true,
        mine: false,
    };
    let started = Instant::now();
    let mut checks = 0;
    for run_no in 1..=times {
        match run(s, solution, Progress::Quiet, Pick::Racing)? {
            Run::Ran(r, ..) if failing(&r).is_empty() && !r.checks.is_empty() => {
                checks = r.checks.len()
            }
            Run::Ran(r, ..) => {
                for f in failing(&r) {
                    println!("   {}: {}", f.name, f.message.as_deref().unwrap_or(""));
                }
                println!("✗ {name}: run {run_no} of {times} failed");
                return Ok(false);
            }
            Run::DoesNotCompile(errors) => {
                errors.iter().for_each(|e| print!("{e}"));
                println!("✗ {name}: the reference solution does not compile");
                return Ok(false);
            }
        }
    }
    println!(
        "✓ {name}: {times} runs in a row, all {checks} checks passed each time ({:.0} s)",
        started.elapsed().as_secs_f64()
    );
    Ok(true)
}

/// Puts the starter back in a stage's `src/exercise.rs` when dropped: the mutants borrow that file.
struct StarterBack<'a>(&'a Stage);

impl Drop for StarterBack<'_> {
    fn drop(&mut self) {
        let dir = &self.0.dir;
        if let Err(e) = std::fs::copy(dir.join("starter/exercise.rs"), dir.join("src/exercise.rs"))
        {
            eprintln!("workshop: put the starter back in {}: {e}", dir.display());
        }
    }
}

/// Each mutant of the stage (`workshop/NN-…/mutants`, see [`mutants`]) makes its named check fail. Runs
/// only while the learner's file is the starter, which it then puts back.
fn planted_mistakes_are_caught(s: &Stage) -> Result<bool, String> {
    let file = s.dir.join("mutants");
    let Ok(text) = std::fs::read_to_string(&file) else {
        return Ok(true);
    };
    let name = s.slug();
    let list = mutants::parse(&text).map_err(|e| format!("{}: {e}", file.display()))?;
    let (starter, mine) = (
        s.dir.join("starter/exercise.rs"),
        s.dir.join("src/exercise.rs"),
    );
    if std::fs::read(&starter).ok() != std::fs::read(&mine).ok() {
        println!("✗ {name}: mutants not run: src/exercise.rs is not the starter");
        return Ok(false);
    }
    let solution = std::fs::read_to_string(s.dir.join("solution/exercise.rs"))
        .map_err(|e| format!("{name}: the solution: {e}"))?;
    let _back = StarterBack(s);
    let mut ok = true;
    for m in &list {
        let planted = mutants::apply(&solution, m).map_err(|e| format!("{name}: {e}"))?;
        std::fs::write(&mine, planted).map_err(|e| format!("{}: {e}", mine.display()))?;
        let caught = match run(s, Mode::default(), Progress::Quiet, Pick::Only(&m.fails))? {
            Run::Ran(r, ..) => match r.checks.iter().find(|c| c.name == m.fails) {
                Some(c) if !c.passed => true,
                Some(_) => {
                    println!("✗ {name}: the mistake “{}” passes {}", m.name, m.fails);
                    false
                }
                None => {
                    println!("✗ {name}: mutant “{}”: no check named {}", m.name, m.fails);
                    false
                }
            },
            Run::DoesNotCompile(errors) => {
                errors.iter().for_each(|e| print!("{e}"));
                println!("✗ {name}: mutant “{}” does not compile", m.name);
                false
            }
        };
        if caught {
            println!("✓ {name}: the mistake “{}” fails {}", m.name, m.fails);
        }
        ok &= caught;
    }
    Ok(ok)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let flag = |f: &str| args.iter().any(|a| a == f);
    let words: Vec<&str> = args
        .iter()
        .map(String::as_str)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let unknown: Vec<&String> = args
        .iter()
        .filter(|a| a.starts_with("--") && !["--mine", "--verbose"].contains(&a.as_str()))
        .collect();
    let mode = Mode {
        solution: false,
        mine: flag("--mine"),
    };
    let result = match (words.as_slice(), unknown.first()) {
        (_, Some(u)) => Err(format!("unknown option {u} (--mine, --verbose)")),
        (["check", n], None) => stage(n).and_then(|s| check(&s, mode, flag("--verbose"))),
        (["solve", n], None) => stage(n).and_then(|s| solve(&s)),
        (["reset", n], None) => stage(n).and_then(|s| reset(&s)),
        (["next"], None) => next(),
        (["verify"], None) => verify(),
        (["down"], None) => servers::down(),
        (["mutants", n], None) => stage(n).and_then(|s| planted_mistakes_are_caught(&s)),
        (["repeat", times, ns @ ..], None) if !ns.is_empty() => times
            .parse::<u32>()
            .map_err(|_| format!("repeat: {times} is not a number of runs"))
            .and_then(|times| {
                let mut ok = true;
                for n in ns {
                    ok &= repeat(&stage(n)?, times)?;
                }
                Ok(ok)
            }),
        _ => Err(
            "usage: workshop check NN [--mine] [--verbose] | next | solve NN | reset NN | verify | mutants NN \
             | repeat TIMES NN… | down"
                .into(),
        ),
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("workshop: {e}");
            ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Checks that stop at the same `todo!` are one line; a different message is a line of its own, and
    /// the order is the order they failed in.
    #[test]
    fn checks_failing_alike_are_shown_once() {
        let outcome = |name: &str, message: &str| Outcome {
            name: name.into(),
            passed: false,
            message: Some(message.into()),
        };
        let todo = "not yet implemented: open a database\nat exercise.rs:332:9";
        let failed = [
            outcome("a", todo),
            outcome("b", "left: 1, right: 2"),
            outcome("c", todo),
            outcome("d", todo),
        ];
        let refs: Vec<&Outcome> = failed.iter().collect();
        assert_eq!(
            same_failures(&refs),
            vec![
                (vec!["a", "c", "d"], todo),
                (vec!["b"], "left: 1, right: 2")
            ]
        );
    }

    /// Every stage directory is found, in order, with its package and title.
    #[test]
    fn finds_the_stages() {
        let all = stages().unwrap();
        assert_eq!(all.len(), 9);
        assert_eq!(all[0].number, "01");
        assert_eq!(all[0].package, "workshop-01-tables");
        assert!(!all[0].title.is_empty());
        assert!(stage("42").unwrap_err().contains("no stage 42"));
        assert_eq!(stage("1").unwrap().number, "01", "1 means 01");
    }

    /// With two checkouts (one runner binary shared through `CARGO_TARGET_DIR`), the runner works on the one
    /// it is started in, found from the current directory at run time.
    #[test]
    fn works_on_the_checkout_it_is_started_in() {
        let base = std::env::temp_dir().join(format!("tandem-runner-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        for clone in ["a", "b"] {
            let runner = base.join(clone).join("workshop/runner");
            let stage = base.join(clone).join("workshop/01-tables/src");
            std::fs::create_dir_all(&runner).unwrap();
            std::fs::create_dir_all(&stage).unwrap();
            std::fs::write(
                runner.join("Cargo.toml"),
                "[package]\nname = \"workshop-runner\"\n",
            )
            .unwrap();
            std::fs::write(
                base.join(clone).join("workshop/01-tables/Cargo.toml"),
                format!("[package]\nname = \"stage-in-{clone}\"\ndescription = \"Tables\"\n"),
            )
            .unwrap();
        }
        let b = base.join("b");
        assert_eq!(
            find_workspace(&b.join("workshop/01-tables/src")),
            Some(b.clone())
        );
        assert_eq!(find_workspace(&base.join("a")), Some(base.join("a")));
        assert_eq!(
            find_workspace(&base),
            None,
            "above both checkouts there is none"
        );
        let found = stages_in(&b).unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].package, "stage-in-b");
        assert!(found[0].dir.starts_with(&b));
        std::fs::remove_dir_all(&base).unwrap();
    }

    /// A property test's counters are dropped and long messages cut, unless verbose.
    #[test]
    fn messages_keep_what_helps() {
        let msg = "Test failed: left != right; minimal failing input: a = 3\n\tsuccesses: 0\n\tlocal rejects: 0\n\tglobal rejects: 0";
        assert_eq!(
            shown_message(msg, false),
            ["Test failed: left != right; minimal failing input: a = 3"]
        );
        assert_eq!(shown_message(msg, true).len(), 4);
        let long: String = (0..40).map(|i| format!("line {i}\n")).collect();
        let shown = shown_message(&long, false);
        assert_eq!(shown.len(), 15);
        assert!(shown[14].contains("26 more lines"));
        // A 20,000-row INSERT on one line: its start, and how much was left out.
        let insert = format!(
            "left: \"INSERT INTO t VALUES {}\"",
            "(?, ?), ".repeat(20_000)
        );
        let shown = shown_message(&insert, false);
        assert!(shown[0].chars().count() < 400, "{}", shown[0].len());
        assert!(shown[0].starts_with("left: \"INSERT INTO t VALUES (?, ?)"));
        assert!(
            shown[0].contains("159729 more characters; --verbose shows them"),
            "{}",
            shown[0]
        );
        assert_eq!(shown_message(&insert, true), std::slice::from_ref(&insert));
        // A sentence a little over the width is not cut for the few characters past it.
        let sentence = "x".repeat(313);
        assert_eq!(
            shown_message(&sentence, false),
            std::slice::from_ref(&sentence)
        );
    }

    /// Only a starter's own `compile_error!("TODO …")` counts as the intended first stop.
    #[test]
    fn todo_stops_are_recognised() {
        assert!(is_todo_stop(&[
            "error: TODO (stage 1): write the `table!` macro\n".into()
        ]));
        assert!(!is_todo_stop(&["error[E0425]: cannot find value\n".into()]));
        assert!(!is_todo_stop(&[]));
    }
}
