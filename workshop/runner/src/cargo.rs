//! Running cargo for a stage: its JSON messages read as they arrive, so that a long first build says what it
//! is doing instead of sitting silent, and compile errors come back as the compiler rendered them.

use std::io::{BufRead, BufReader, IsTerminal, Read, Write};
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

/// Runs `cmd` (a cargo command with `--message-format=json`), following its build; `package` is the stage
/// whose library's warnings are kept.
pub fn run(mut cmd: Command, progress: Progress, package: &str) -> Result<Built, String> {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    // Read stderr on its own thread so that neither pipe fills up and stalls cargo.
    let mut stderr = child.stderr.take().ok_or("cargo's stderr")?;
    let stderr = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let stdout = child.stdout.take().ok_or("cargo's stdout")?;
    let tty = std::io::stdout().is_terminal();
    let mut compiled = 0usize;
    let mut errors = Vec::new();
    let mut warnings = Vec::new();
    let mut built = None;
    let mut tests_started = Instant::now();
    for line in BufReader::new(stdout).lines() {
        let line = line.map_err(|e| e.to_string())?;
        // The tests' own output is interleaved as plain text: only cargo's messages are JSON.
        let Ok(msg) = serde_json::from_str::<serde_json::Value>(&line) else {
            continue;
        };
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
    match built {
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
    }
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
