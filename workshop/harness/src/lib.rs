//! The harness of the workshop's tests (`harness = false` on each stage's `tests/check.rs`).
//!
//! A stage lists its checks with [`checks!`]; they run under libtest-mimic, so `cargo test` looks and filters
//! as usual. When `TANDEM_WORKSHOP_REPORT` names a file, the outcome of every check (passed or not, and what
//! a failing one said) is also written there as JSON ([`Report`]): the workshop runner (`just check NN`)
//! reads that, never libtest's text.
//!
//! Also here, for every stage's tests: [`ui`] (programs that must or must not compile), [`sql_mismatch`]
//! (what differs between two SQL texts, said so a learner can act on it) and [`proptest_config`].

#[cfg(feature = "checks")]
pub mod limit;
#[cfg(feature = "checks")]
mod panics;
#[cfg(feature = "checks")]
pub mod ui;

#[cfg(feature = "checks")]
use std::panic::{AssertUnwindSafe, catch_unwind};
#[cfg(feature = "checks")]
use std::sync::{Arc, Mutex};

#[cfg(feature = "checks")]
use libtest_mimic::{Arguments, Failed, Trial};
use serde::{Deserialize, Serialize};

/// The variable naming the report file.
pub const REPORT_VAR: &str = "TANDEM_WORKSHOP_REPORT";

/// What the checks tell the runner about the database servers, one line on stderr each, a marker and
/// what follows it: the engines they reached, and the ones they skipped with the reason. Written by
/// [`Engines::say_reached`] and [`Engines::say_skipped`], read by [`Engines::read`] — one definition of
/// the format on both sides.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Engines {
    /// The engines the checks reached (`SQLite`, `PostgreSQL`, `MariaDB/MySQL`), each once, in order.
    pub reached: Vec<String>,
    /// `<check>: <why>` for each server that did not answer (the URL tried, the variable that sets it).
    pub skipped: Vec<String>,
}

/// The engines a check can reach, as the markers name them.
pub const ENGINE_NAMES: [&str; 3] = ["SQLite", "PostgreSQL", "MariaDB/MySQL"];

const REACHED: &str = "TANDEM-WORKSHOP-ENGINE ";
const SKIPPED: &str = "TANDEM-WORKSHOP-SKIPPED ";

impl Engines {
    /// Says, on stderr, that a check reached `engine` (one of [`ENGINE_NAMES`]).
    pub fn say_reached(engine: &str) {
        say(&Engines::reached_line(engine));
    }

    /// Says, on stderr, that `check` skipped a server, and why.
    pub fn say_skipped(check: &str, why: &str) {
        say(&Engines::skipped_line(check, why));
    }

    /// The line [`Engines::say_reached`] writes.
    pub fn reached_line(engine: &str) -> String {
        format!("{REACHED}{engine}\n")
    }

    /// The line [`Engines::say_skipped`] writes: one line, whatever the reason's.
    pub fn skipped_line(check: &str, why: &str) -> String {
        format!("{SKIPPED}{check}: {}\n", why.replace('\n', " "))
    }

    /// What the checks said, from their stderr: only whole lines that start with a marker, and for
    /// engines only the names in [`ENGINE_NAMES`] — a line another thread's output broke is not taken.
    pub fn read(stderr: &str) -> Engines {
        let mut found = Engines::default();
        for line in stderr.lines() {
            if let Some(name) = line.strip_prefix(REACHED) {
                if ENGINE_NAMES.contains(&name) && !found.reached.iter().any(|r| r == name) {
                    found.reached.push(name.to_owned());
                }
            } else if let Some(why) = line.strip_prefix(SKIPPED)
                && !found.skipped.iter().any(|s| s == why)
            {
                found.skipped.push(why.to_owned());
            }
        }
        found
    }
}

/// Writes `line` to stderr in one `write` call, so that no other thread's output lands inside it, after a
/// line break, so that it starts a line even when another thread left one unfinished.
fn say(line: &str) {
    use std::io::Write as _;
    let _ = std::io::stderr()
        .lock()
        .write_all(format!("\n{line}").as_bytes());
}

/// What a run of a stage's checks wrote.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// Every check that ran (filtered-out checks are not listed), in the order the stage declares them.
    pub checks: Vec<Outcome>,
}

/// One check's outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    /// The check's name (its function's).
    pub name: String,
    /// Whether it passed.
    pub passed: bool,
    /// What a failing check said (its panic message), first line first.
    pub message: Option<String>,
}

#[cfg(feature = "checks")]
/// One check: a name and the function that panics when the learner's code is wrong.
pub struct Check {
    name: &'static str,
    run: Box<dyn FnOnce() + Send + 'static>,
    /// Run in a child process of its own (see [`checks!`]).
    alone: bool,
}

/// The variable that makes the test binary run one check alone, in this process, and exit.
#[cfg(feature = "checks")]
const ALONE_VAR: &str = "TANDEM_WORKSHOP_ALONE";

/// The variable that leaves out the checks that run alone (they measure the process, and are slow): for
/// the runner's `repeat`, which reruns the checks that race.
pub const SKIP_ALONE_VAR: &str = "TANDEM_WORKSHOP_SKIP_ALONE";

#[cfg(feature = "checks")]
impl Check {
    /// A check called `name`.
    pub fn new(name: &'static str, run: impl FnOnce() + Send + 'static) -> Check {
        Check {
            name,
            run: Box::new(run),
            alone: false,
        }
    }

    /// A check called `name` that runs in a process of its own.
    pub fn alone(name: &'static str, run: impl FnOnce() + Send + 'static) -> Check {
        Check {
            alone: true,
            ..Check::new(name, run)
        }
    }
}

/// Runs check `name` in a child process (this test binary again, told to run that check alone) and
/// panics with what the child's check said if it failed.
#[cfg(feature = "checks")]
fn in_own_process(name: &str) {
    let exe = std::env::current_exe().expect("the test binary's path");
    let child = std::process::Command::new(exe)
        .env(ALONE_VAR, name)
        .env_remove(REPORT_VAR)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start the check's own process");
    let pid = child.id();
    limit::child_started(pid);
    let out = child
        .wait_with_output()
        .expect("the check's own process ends");
    limit::child_ended(pid);
    if !out.status.success() {
        let said = String::from_utf8_lossy(&out.stderr);
        let message = said
            .split_once("CHECK FAILED: ")
            .map_or(said.as_ref(), |(_, m)| m);
        // Without the panic hook: the child's message already says where it failed.
        std::panic::resume_unwind(Box::new(message.trim_end().to_owned()));
    }
}

/// Declares the stage's `main`: `checks!(a, b, c)` runs the functions `a`, `b` and `c` as checks;
/// `checks!(a, b; alone: c)` runs `c` in a process of its own (for a check that measures the process, such
/// as its memory, which the other checks running beside it would disturb).
#[macro_export]
macro_rules! checks {
    ($($name:ident),* $(,)? $(; alone: $($alone:ident),* $(,)?)?) => {
        fn main() {
            $crate::main(vec![
                $($crate::Check::new(stringify!($name), $name),)*
                $($($crate::Check::alone(stringify!($alone), $alone),)*)?
            ]);
        }
    };
}

#[cfg(feature = "checks")]
/// Runs the checks with libtest's command line; writes the report when asked; exits with libtest's code.
pub fn main(checks: Vec<Check>) {
    if let Ok(name) = std::env::var(ALONE_VAR) {
        // The child of a check that runs alone: that check only, its failure on stderr.
        let Some(check) = checks.into_iter().find(|c| c.name == name) else {
            eprintln!("CHECK FAILED: no check is called {name}");
            std::process::exit(2);
        };
        panics::install(true);
        let mark = panics::start();
        match catch_unwind(AssertUnwindSafe(check.run)) {
            Ok(()) => std::process::exit(0),
            Err(p) => {
                eprintln!(
                    "CHECK FAILED: {}",
                    panics::failure(&panics::text(&*p), &mark)
                );
                std::process::exit(101);
            }
        }
    }
    let args = Arguments::from_args();
    // Remembers where panics happen (the standard hook still prints them for `cargo test`).
    panics::install(false);
    let outcomes = Arc::new(Mutex::new(Vec::new()));
    let skip_alone = std::env::var_os(SKIP_ALONE_VAR).is_some();
    // The report lists the checks in the stage's order (the chapter's), not as they finished.
    let order: Vec<&'static str> = checks.iter().map(|c| c.name).collect();
    let trials = checks
        .into_iter()
        .filter(|c| !(skip_alone && c.alone))
        .map(|c| {
            let outcomes = outcomes.clone();
            let (name, alone) = (c.name, c.alone);
            let run: Box<dyn FnOnce() + Send> = if alone {
                Box::new(move || in_own_process(name))
            } else {
                c.run
            };
            Trial::test(c.name, move || {
                let mark = panics::start();
                limit::started(c.name, alone);
                let result = catch_unwind(AssertUnwindSafe(run))
                    .map_err(|p| panics::failure(&panics::text(&*p), &mark));
                limit::finished(c.name);
                outcomes
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(Outcome {
                        name: c.name.to_owned(),
                        passed: result.is_ok(),
                        message: result.as_ref().err().cloned(),
                    });
                result.map_err(Failed::from)
            })
        })
        .collect();
    // A check past its time bound ends the run: it fails with what its thread was doing, the checks
    // still running with it are cut short, and the report says so.
    let cut_short = outcomes.clone();
    let watched_order = order.clone();
    limit::watch(move |said| {
        let mut done = cut_short.lock().unwrap_or_else(|e| e.into_inner());
        for (name, message) in said {
            eprintln!("\nCHECK STOPPED: {message}");
            done.push(Outcome {
                name: name.to_owned(),
                passed: false,
                message: Some(message),
            });
        }
        write_report(done.clone(), &watched_order);
    });
    let conclusion = libtest_mimic::run(&args, trials);
    write_report(
        outcomes.lock().unwrap_or_else(|e| e.into_inner()).clone(),
        &order,
    );
    conclusion.exit();
}

#[cfg(feature = "checks")]
/// Writes the report where [`REPORT_VAR`] says, when it says so, the checks in `order` (the stage's).
fn write_report(checks: Vec<Outcome>, order: &[&str]) {
    if let Ok(path) = std::env::var(REPORT_VAR) {
        let report = Report {
            checks: in_order(checks, order),
        };
        let json = serde_json::to_string_pretty(&report).expect("a report serializes");
        if let Err(e) = std::fs::write(&path, json) {
            eprintln!("cannot write the workshop report to {path}: {e}");
            std::process::exit(101);
        }
    }
}

/// The outcomes in `order` (the names as the stage declares its checks), whatever order they finished
/// in; a name not in `order` goes last.
#[cfg(any(feature = "checks", test))]
fn in_order(mut checks: Vec<Outcome>, order: &[&str]) -> Vec<Outcome> {
    checks.sort_by_key(|c| {
        order
            .iter()
            .position(|n| *n == c.name)
            .unwrap_or(order.len())
    });
    checks
}

/// Reads a report written by [`main`].
pub fn read_report(path: &std::path::Path) -> Result<Report, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(feature = "checks")]
/// proptest's settings for a check: `cases` random inputs, no regression files written next to the tests
/// (a learner's failures are theirs, not the repository's), shrinking as usual.
pub fn proptest_config(cases: u32) -> proptest::test_runner::Config {
    proptest::test_runner::Config {
        cases,
        failure_persistence: None,
        ..proptest::test_runner::Config::default()
    }
}

/// `None` when `mine` and `expected` are the same SQL; otherwise both, one above the other, with a caret
/// under the first character that differs and the words around it.
pub fn sql_mismatch(mine: &str, expected: &str) -> Option<String> {
    if mine == expected {
        return None;
    }
    let at = mine
        .char_indices()
        .zip(expected.chars())
        .find(|((_, a), b)| a != b)
        .map(|((i, _), _)| i)
        .unwrap_or(mine.len().min(expected.len()));
    // Show a window of at most 100 characters around the difference.
    let start =
        floor_char(mine, at.saturating_sub(60)).min(floor_char(expected, at.saturating_sub(60)));
    let window = |s: &str| -> String { s.get(start..).unwrap_or("").chars().take(100).collect() };
    let caret = " ".repeat(mine.get(start..at).map_or(0, |s| s.chars().count()));
    let ellipsis = if start > 0 { "…" } else { "" };
    Some(format!(
        "the SQL differs at character {}:\n      yours: {ellipsis}{}\n   expected: {ellipsis}{}\n             {}{caret}^",
        mine[..at.min(mine.len())].chars().count() + 1,
        window(mine),
        window(expected),
        if start > 0 { " " } else { "" },
    ))
}

/// The largest char boundary of `s` at or below `i`.
fn floor_char(s: &str, i: usize) -> usize {
    let mut i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The report keeps the stage's order (the chapter's), not the order the checks finished in, nor
    /// their names' alphabetical order.
    #[test]
    fn the_report_lists_checks_in_the_stages_order() {
        let outcome = |name: &str| Outcome {
            name: name.to_owned(),
            passed: false,
            message: None,
        };
        let finished = vec![
            outcome("b_second"),
            outcome("z_first"),
            outcome("stray"),
            outcome("a_third"),
        ];
        let names: Vec<String> = in_order(finished, &["z_first", "b_second", "a_third"])
            .into_iter()
            .map(|o| o.name)
            .collect();
        assert_eq!(names, ["z_first", "b_second", "a_third", "stray"]);
    }

    /// Each engine and each skip is read once, in order; a marker that another thread's output broke
    /// (not at the start of a line, or an unknown engine name) is not read as one.
    #[test]
    fn engines_are_read_strictly() {
        let skip = "w7crowd: PostgreSQL unreachable at postgres://127.0.0.1:5432/test (refused); set \
                    TANDEM_POSTGRES_URL to a reachable server";
        let (check, why) = skip.split_once(": ").unwrap();
        let stderr = [
            "running 6 checks\n".to_owned(),
            Engines::reached_line("SQLite"),
            Engines::skipped_line(check, why),
            Engines::reached_line("SQLite"),
            Engines::skipped_line(check, why),
            format!(
                "thread 'x' panicked {}",
                Engines::reached_line("PostgreSQL")
            ),
            Engines::reached_line("SQLite,  16: libtest_mimic::Trial"),
            Engines::reached_line("MariaDB/MySQL"),
        ]
        .concat();
        let found = Engines::read(&stderr);
        assert_eq!(found.reached, ["SQLite", "MariaDB/MySQL"]);
        assert_eq!(found.skipped, [skip]);
        assert_eq!(Engines::read("all fine\n"), Engines::default());
        assert!(Engines::skipped_line("c", "two\nlines").lines().count() == 1);
    }
}
