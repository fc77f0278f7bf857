//! Running cargo for a stage: its JSON messages read as they arrive, so that a long first build says what it
//! is doing instead of sitting silent, and compile errors come back as the compiler rendered them.

use std::io::{BufRead, BufReader, IsTerminal, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Whether to tell the learner about the build while it runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Progress {
    /// A line when compiling starts, a counter while it goes on, a line when the tests start.
    Show,
    /// Nothing (CI's verification prints one line per stage).
    Quiet,
}

/// How the build went.
pub enum Built {
    /// It compiled (the tests then ran; their report says how they went), with the warnings the compiler
    /// gave the stage's own library — the learner's code — and what the tests said of their run.
    Ok(Vec<String>, TestRun),
    /// It did not: the compiler's rendered errors (or cargo's own words when there were none).
    Failed(Vec<String>),
}

/// What the tests said of their run, besides their report.
pub struct TestRun {
    /// The engines the checks reached.
    pub engines: Vec<String>,
    /// Checks left out on an engine that did not answer, with why.
    pub skipped: Vec<String>,
    /// How long the tests took (from the end of the build).
    pub took: Duration,
}

/// A cargo command (the cargo that started the runner, else the one on the PATH) without the variables
/// `cargo run` set for the runner itself: `CARGO_MANIFEST_DIR`, `CARGO_PKG_*` and the like describe
/// `workshop/runner`, and a build that inherits them sees them as changed settings — ring's build script
/// reruns and some twenty crates after it (rustls, the drivers, every tandem crate) are compiled again,
/// minutes on two cores for a check with no source changed, and again after any plain `cargo test`.
pub fn command() -> Command {
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    for (name, _) in std::env::vars_os() {
        if name.to_str().is_some_and(set_by_cargo_run) {
            cmd.env_remove(&name);
        }
    }
    cmd
}

/// Whether `name` is one of the variables cargo sets for the program it runs (not one a user sets to
/// steer cargo, such as `CARGO_TARGET_DIR`, `CARGO_HOME` or `CARGO_PROFILE_*`, which the child keeps).
fn set_by_cargo_run(name: &str) -> bool {
    name.starts_with("CARGO_PKG_")
        || name.starts_with("CARGO_BIN_EXE_")
        || matches!(
            name,
            "CARGO_MANIFEST_DIR"
                | "CARGO_MANIFEST_PATH"
                | "CARGO_MANIFEST_LINKS"
                | "CARGO_CRATE_NAME"
                | "CARGO_BIN_NAME"
                | "CARGO_PRIMARY_PACKAGE"
                | "CARGO_RUSTC_CURRENT_DIR"
                | "CARGO_TARGET_TMPDIR"
                | "OUT_DIR"
        )
}

/// Runs `cmd` (a cargo command with `--message-format=json`), following its build; `package` is the stage
/// whose library's warnings are kept.
/// Also returns the outputs the build used (see [`crate::fresh`]).
pub fn run(
    mut cmd: Command,
    progress: Progress,
    package: &str,
) -> Result<(Built, Vec<crate::fresh::Artifact>), String> {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    // Read stderr on its own thread so that neither pipe fills up and stalls cargo; a wait for another
    // build's lock is said as it starts (it can last minutes, and would otherwise look like a hang).
    let stderr = child.stderr.take().ok_or("cargo's stderr")?;
    let stderr = std::thread::spawn(move || {
        let mut s = String::new();
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if progress == Progress::Show
                && let Some(note) = lock_wait(&line)
            {
                println!("{note}");
                let _ = std::io::stdout().flush();
            }
            s.push_str(&line);
            s.push('\n');
        }
        s
    });
    let stdout = child.stdout.take().ok_or("cargo's stdout")?;
    let tty = std::io::stdout().is_terminal();
    let mut compiled = 0usize;
    let mut errors = Vec::new();
    let mut warnings = Vec::new();
    let mut built = None;
    let mut artifacts = Vec::new();
    let mut tests_started = Instant::now();
    for line in BufReader::new(stdout).lines() {
        let line = line.map_err(|e| e.to_string())?;
        // The tests' own output is interleaved as plain text: only cargo's messages are JSON.
        let Ok(msg) = serde_json::from_str::<serde_json::Value>(&line) else {
            continue;
        };
        if msg["reason"] == "compiler-artifact"
            && let (Some(manifest), Some(file)) =
                (msg["manifest_path"].as_str(), msg["filenames"][0].as_str())
        {
            artifacts.push(crate::fresh::Artifact {
                package_dir: Path::new(manifest)
                    .parent()
                    .unwrap_or(Path::new(""))
                    .to_owned(),
                file: file.into(),
                fresh: msg["fresh"] == true,
            });
        }
        match msg["reason"].as_str() {
            Some("compiler-artifact") if msg["fresh"] == false => {
                compiled += 1;
                if progress == Progress::Show {
                    let name = msg["target"]["name"].as_str().unwrap_or("");
                    report_artifact(compiled, name, tty);
                }
            }
            Some("compiler-message") if msg["message"]["level"] == "error" => {
                if let Some(text) = msg["message"]["rendered"].as_str() {
                    errors.push(text.to_owned());
                }
            }
            Some("compiler-message")
                if msg["message"]["level"] == "warning"
                    && msg["package_id"]
                        .as_str()
                        .is_some_and(|p| p.contains(package))
                    && msg["target"]["kind"]
                        .as_array()
                        .is_some_and(|k| k.iter().any(|k| k == "lib")) =>
            {
                // "N warnings emitted" summarises the others; it says nothing of its own.
                let text = msg["message"]["rendered"].as_str().unwrap_or_default();
                if msg["message"]["code"].is_object() || !text.contains("warnings emitted") {
                    warnings.push(text.to_owned());
                }
            }
            Some("build-finished") => {
                let ok = msg["success"].as_bool().unwrap_or(false);
                built = Some(ok);
                tests_started = Instant::now();
                if progress == Progress::Show {
                    if compiled >= NOTICE_AFTER {
                        if tty {
                            print!("\r{:70}\r", "");
                        }
                        println!("   compiled {compiled} crates");
                    }
                    if ok {
                        println!("   running the tests…");
                    }
                    let _ = std::io::stdout().flush();
                }
            }
            _ => {}
        }
    }
    let _ = child.wait().map_err(|e| e.to_string())?;
    let stderr = stderr.join().unwrap_or_default();
    let built = match built {
        Some(true) => Ok(Built::Ok(warnings, {
            let said = workshop_harness::Engines::read(&stderr);
            TestRun {
                engines: said.reached,
                skipped: said.skipped,
                took: tests_started.elapsed(),
            }
        })),
        _ if errors.is_empty() => Ok(Built::Failed(vec![format!(
            "cargo stopped before compiling anything:\n{stderr}"
        )])),
        _ => Ok(Built::Failed(errors)),
    };
    built.map(|b| (b, artifacts))
}

/// What to tell the learner when cargo says it waits for another cargo's lock (on the build directory or
/// the package cache), which `just`'s quiet cargo would otherwise keep to itself.
pub fn lock_wait(cargo_said: &str) -> Option<String> {
    let what = cargo_said
        .trim_start()
        .strip_prefix("Blocking waiting for file lock on ")?;
    Some(format!(
        "   waiting for another cargo on this machine to finish: it holds the lock on the {what} (an editor's \
         rust-analyzer, another `just check`, a build in another terminal); the check goes on when it ends"
    ))
}

/// Rebuilding a stage's own crates and its tests is quick; more than this many crates is a first build.
const NOTICE_AFTER: usize = 10;

/// One crate compiled: past the stage's own crates, say why this may take a while, then count up (in place
/// on a terminal, every 25 crates in a log).
fn report_artifact(compiled: usize, name: &str, tty: bool) {
    if compiled < NOTICE_AFTER {
        return;
    }
    if compiled == NOTICE_AFTER {
        println!(
            "   compiling… (a stage's first check also compiles its dependencies — SQLite's C source, the \
             drivers, tandem as the oracle: up to a minute or two on two cores, longer on a busy machine; \
             later checks take seconds)"
        );
    }
    if tty {
        print!("\r   {compiled:>4} crates compiled · {name:<40}");
    } else if compiled.is_multiple_of(25) {
        println!("   … {compiled} crates so far ({name})");
    }
    let _ = std::io::stdout().flush();
}

#[cfg(test)]
mod tests {
    use super::*;

    /// cargo's lock waits are told in the learner's words, and nothing else is.
    #[test]
    fn lock_waits_are_said() {
        let note = lock_wait("    Blocking waiting for file lock on build directory").unwrap();
        assert!(
            note.contains("another cargo") && note.contains("build directory"),
            "{note}"
        );
        assert!(lock_wait("   Compiling ring v0.17.14").is_none());
    }

    /// What `cargo run` set for the runner is taken out of its cargo commands; what a user set to steer
    /// cargo stays.
    #[test]
    fn child_cargo_forgets_the_runners_own_variables() {
        // This test binary runs under `cargo test`, which sets the same variables `cargo run` does.
        assert!(
            std::env::var_os("CARGO_MANIFEST_DIR").is_some(),
            "cargo sets CARGO_MANIFEST_DIR for the programs it runs"
        );
        let cmd = command();
        let removed: Vec<String> = cmd
            .get_envs()
            .filter(|(_, v)| v.is_none())
            .map(|(k, _)| k.to_string_lossy().into_owned())
            .collect();
        for name in ["CARGO_MANIFEST_DIR", "CARGO_PKG_NAME"] {
            assert!(
                removed.iter().any(|r| r == name),
                "{name} not removed: {removed:?}"
            );
        }
        for kept in [
            "CARGO_TARGET_DIR",
            "CARGO_HOME",
            "CARGO_INCREMENTAL",
            "CARGO",
            "CARGO_PROFILE_DEV_DEBUG",
        ] {
            assert!(
                !set_by_cargo_run(kept),
                "{kept} is the user's, not cargo run's"
            );
        }
        // And the child really runs without them: `env` in its place prints what it inherits.
        let mut env = Command::new("env");
        for (k, v) in cmd.get_envs() {
            match v {
                Some(v) => env.env(k, v),
                None => env.env_remove(k),
            };
        }
        let out = String::from_utf8(env.output().expect("env runs").stdout).unwrap();
        assert!(
            !out.lines().any(|l| l.starts_with("CARGO_MANIFEST_DIR=")),
            "{out}"
        );
        assert!(!out.lines().any(|l| l.starts_with("CARGO_PKG_")), "{out}");
    }
}
