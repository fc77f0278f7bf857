//! A check that never ends is stopped at the time bound with a verdict: this binary runs itself as a stage's
//! checks would run (one check that finishes, one that sleeps in a loop for ever, as a retry without a
//! limit does), with a bound of one second, and reads the report the run leaves.

use std::process::Command;
use std::time::{Duration, Instant};

use workshop_harness::{Check, REPORT_VAR, limit::LIMIT_VAR, read_report};

const CHILD_VAR: &str = "TIME_BOUND_CHILD";

fn main() {
    if std::env::var_os(CHILD_VAR).is_some() {
        workshop_harness::main(vec![
            Check::new("finishes", || {}),
            Check::new("retries_for_ever", || {
                loop {
                    std::thread::sleep(Duration::from_millis(20));
                }
            }),
        ]);
        return;
    }
    let path = std::env::temp_dir().join(format!("time-bound-{}.json", std::process::id()));
    let started = Instant::now();
    let out = Command::new(std::env::current_exe().expect("this binary"))
        .env(CHILD_VAR, "1")
        .env(LIMIT_VAR, "1")
        .env(REPORT_VAR, &path)
        .args(["--test-threads", "2"])
        .output()
        .expect("run the checks");
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(101), "the run fails: {stderr}");
    assert!(
        took < Duration::from_secs(20),
        "stopped at the bound, not later: {took:?}"
    );
    let report = read_report(&path).expect("the report is written before the run ends");
    let get = |name: &str| {
        report
            .checks
            .iter()
            .find(|c| c.name == name)
            .unwrap_or_else(|| panic!("{name} in the report: {report:?}"))
    };
    assert!(get("finishes").passed);
    let hung = get("retries_for_ever");
    let said = hung.message.as_deref().unwrap_or_default();
    assert!(!hung.passed);
    assert!(
        said.contains("retries_for_ever ran for more than 1 s"),
        "names the check and the bound: {said}"
    );
    if std::path::Path::new("/proc/thread-self").exists() {
        assert!(
            said.contains("sleeping over and over"),
            "says what it was doing: {said}"
        );
    }
    assert!(
        stderr.contains("CHECK STOPPED: retries_for_ever"),
        "{stderr}"
    );
    let _ = std::fs::remove_file(&path);
    println!("time_bound: a hanging check was stopped after {took:?} with: {said}");
}
