//! The workshop's commands (the justfile calls them):
//!
//! - `check NN`: run stage NN's checks on the learner's code, with a readable verdict;
//! - `next`: name the first stage whose checks do not pass yet;
//! - `solve NN`: show stage NN's reference solution and how the learner's file differs from it;
//! - `verify` (CI): every reference solution passes its checks and clippy, every starter fails all of them.
//!
//! It reads structured output only: cargo's JSON messages (`--message-format=json`) for compile errors and
//! the JSON report the stage's harness writes (`workshop-harness`) for each check's outcome.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

use workshop_harness::{Outcome, REPORT_VAR, Report};

/// One stage: `workshop/NN-name`.
#[derive(Debug)]
struct Stage {
    dir: PathBuf,
    number: String,
    package: String,
    title: String,
}

/// What running a stage's checks gave.
enum Run {
    /// The code did not compile: the compiler's rendered messages.
    DoesNotCompile(Vec<String>),
    /// The checks ran.
    Ran(Report),
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A `key = "value"` line of a manifest's `[package]`.
fn manifest_field(manifest: &str, key: &str) -> Option<String> {
    manifest.lines().find_map(|l| {
        let rest = l.strip_prefix(key)?.trim_start().strip_prefix('=')?.trim();
        Some(rest.trim_matches('"').to_owned())
    })
}

fn stages() -> Result<Vec<Stage>, String> {
    let dir = workspace().join("workshop");
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
    let all = stages()?;
    let names: Vec<String> = all
        .iter()
        .filter_map(|s| s.dir.file_name().map(|n| n.to_string_lossy().into_owned()))
        .collect();
    all.into_iter()
        .find(|s| s.number == number)
        .ok_or_else(|| format!("no stage {number}: the stages are {}", names.join(" ")))
}

/// Runs a stage's checks (against the reference solution with `solution`).
fn run(stage: &Stage, solution: bool) -> Result<Run, String> {
    let report = std::env::temp_dir().join(format!(
        "tandem-workshop-{}-{}{}.json",
        stage.number,
        std::process::id(),
        if solution { "-solution" } else { "" }
    ));
    let _ = std::fs::remove_file(&report);
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.current_dir(workspace())
        .args([
            "test",
            "-q",
            "-p",
            &stage.package,
            "--test",
            "check",
            "--message-format=json",
        ])
        .env(REPORT_VAR, &report)
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    if solution {
        cmd.args(["--features", "solution"]);
    }
    let output = cmd.output().map_err(|e| format!("cannot run cargo: {e}"))?;
    // cargo's JSON messages on stdout (the checks' own output is interleaved there as plain text).
    let mut errors = Vec::new();
    let mut built = true;
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let Ok(msg) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        match msg["reason"].as_str() {
            Some("compiler-message") if msg["message"]["level"] == "error" => {
                if let Some(text) = msg["message"]["rendered"].as_str() {
                    errors.push(text.to_owned());
                }
            }
            Some("build-finished") => built = msg["success"].as_bool().unwrap_or(false),
            _ => {}
        }
    }
    if !built {
        return Ok(Run::DoesNotCompile(errors));
    }
    let report = workshop_harness::read_report(&report)
        .map_err(|e| format!("the checks of stage {} left no report ({e})", stage.number))?;
    Ok(Run::Ran(report))
}

fn failing(report: &Report) -> Vec<&Outcome> {
    report.checks.iter().filter(|c| !c.passed).collect()
}

fn check(stage: &Stage) -> Result<bool, String> {
    println!("== stage {} · {}", stage.number, stage.title);
    println!(
        "   chapter: book/src/{}.md · your code: workshop/{}/src/lib.rs",
        stage.dir.file_name().unwrap_or_default().to_string_lossy(),
        stage.dir.file_name().unwrap_or_default().to_string_lossy()
    );
    match run(stage, false)? {
        Run::DoesNotCompile(errors) => {
            for e in errors.iter().take(5) {
                print!("{e}");
            }
            println!("   ✗ your code does not compile yet (the compiler's words are above).");
            Ok(false)
        }
        Run::Ran(report) => {
            let failed = failing(&report);
            let total = report.checks.len();
            if failed.is_empty() {
                println!("   ✓ all {total} tests pass. On to the next stage: just next");
                return Ok(true);
            }
            println!(
                "   {total} tests: {} pass, {} to go",
                total - failed.len(),
                failed.len()
            );
            for f in failed {
                let first = f
                    .message
                    .as_deref()
                    .and_then(|m| m.lines().next())
                    .unwrap_or("");
                println!("   ✗ {} — {first}", f.name);
            }
            println!(
                "   Read the tests in workshop/{}/tests/check.rs for the whole specification; stuck? just solve {}",
                stage.dir.file_name().unwrap_or_default().to_string_lossy(),
                stage.number
            );
            Ok(false)
        }
    }
}

fn next() -> Result<bool, String> {
    for s in stages()? {
        let passes = matches!(run(&s, false)?, Run::Ran(r) if failing(&r).is_empty() && !r.checks.is_empty());
        if !passes {
            println!(
                "next: stage {} · {} — read book/src/{}.md, then: just check {}",
                s.number,
                s.title,
                s.dir.file_name().unwrap_or_default().to_string_lossy(),
                s.number
            );
            return Ok(true);
        }
        println!(
            "✓ stage {}",
            s.dir.file_name().unwrap_or_default().to_string_lossy()
        );
    }
    println!(
        "every stage passes: the workshop is done. The book's last chapter has the measured results."
    );
    Ok(true)
}

fn solve(stage: &Stage) -> Result<bool, String> {
    let solution = stage.dir.join("solution/lib.rs");
    let mine = stage.dir.join("src/lib.rs");
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

fn verify() -> Result<bool, String> {
    let all = stages()?;
    let mut ok = true;
    // The reference solutions are code learners read: lint them as the project's own code.
    let mut clippy = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    clippy.current_dir(workspace()).arg("clippy");
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
        let name = s
            .dir
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        let solved = match run(s, true)? {
            Run::Ran(r) if failing(&r).is_empty() && !r.checks.is_empty() => r.checks.len(),
            Run::Ran(r) if r.checks.is_empty() => {
                println!("✗ {name}: no check ran");
                ok = false;
                continue;
            }
            Run::Ran(r) => {
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
        match run(s, false)? {
            Run::DoesNotCompile(errors) => {
                errors.iter().for_each(|e| print!("{e}"));
                println!("✗ {name}: the starter does not compile");
                ok = false;
            }
            Run::Ran(r) => {
                let failed = failing(&r).len();
                if r.checks.len() != solved || failed != solved {
                    println!(
                        "✗ {name}: the starter passes {} of {solved} checks (every check must fail until the learner works)",
                        r.checks.len() - failed
                    );
                    ok = false;
                } else {
                    println!(
                        "✓ {name}: the solution passes {solved} checks, the starter fails all {failed}"
                    );
                }
            }
        }
    }
    if ok {
        println!("workshop: {} passed, 0 failed", all.len());
    } else {
        println!("workshop: verification failed");
    }
    Ok(ok)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match (args.first().map(String::as_str), args.get(1)) {
        (Some("check"), Some(n)) => stage(n).and_then(|s| check(&s)),
        (Some("solve"), Some(n)) => stage(n).and_then(|s| solve(&s)),
        (Some("next"), None) => next(),
        (Some("verify"), None) => verify(),
        _ => Err("usage: workshop check NN | next | solve NN | verify".into()),
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

    /// Every stage directory is found, in order, with its package and title.
    #[test]
    fn finds_the_stages() {
        let all = stages().unwrap();
        assert_eq!(all.len(), 9);
        assert_eq!(all[0].number, "01");
        assert_eq!(all[0].package, "workshop-01-tables");
        assert!(!all[0].title.is_empty());
        assert!(stage("42").unwrap_err().contains("no stage 42"));
    }
}
