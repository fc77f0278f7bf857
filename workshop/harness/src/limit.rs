//! A bound on each check's time. A mistake that hangs — a retry loop that never gives up, an acquire with
//! no timeout — would otherwise leave the learner at "running the tests…" until they kill it, with no
//! verdict. Past the bound the check fails with its name, how long it ran and, on Linux, what its thread
//! was doing (running, sleeping, waiting on a lock or on a socket), the report is written and the run ends.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The variable that sets the bound, in seconds.
pub const LIMIT_VAR: &str = "TANDEM_WORKSHOP_CHECK_SECS";

/// The bound when [`LIMIT_VAR`] is not set: the slowest reference check takes about 20 s on two busy
/// cores, and a learner's slower (correct) code gets room to spare.
pub const DEFAULT_LIMIT: Duration = Duration::from_secs(90);

/// The bound in force.
pub fn limit() -> Duration {
    std::env::var(LIMIT_VAR)
        .ok()
        .and_then(|s| s.trim().parse::<f64>().ok())
        .filter(|s| *s > 0.0)
        .map_or(DEFAULT_LIMIT, Duration::from_secs_f64)
}

/// A check that is running: since when, and its thread (Linux's task id, when it could be read).
struct Running {
    since: Instant,
    task: Option<String>,
}

static RUNNING: Mutex<BTreeMap<&'static str, Running>> = Mutex::new(BTreeMap::new());
/// Processes of checks that run alone, to end with the run.
static CHILDREN: Mutex<Vec<u32>> = Mutex::new(Vec::new());

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The calling thread's task id (`/proc/thread-self` → `<pid>/task/<tid>`).
fn this_task() -> Option<String> {
    let link = std::fs::read_link("/proc/thread-self").ok()?;
    Some(link.file_name()?.to_string_lossy().into_owned())
}

/// Check `name` starts on this thread (`alone`: this thread only waits for the process running it, whose
/// threads cannot be read from here).
pub fn started(name: &'static str, alone: bool) {
    lock(&RUNNING).insert(
        name,
        Running {
            since: Instant::now(),
            task: if alone { None } else { this_task() },
        },
    );
}

/// Check `name` ended.
pub fn finished(name: &str) {
    lock(&RUNNING).remove(name);
}

/// A child process running a check alone: ended with the run if a check hangs.
pub fn child_started(pid: u32) {
    lock(&CHILDREN).push(pid);
}

/// That child has ended.
pub fn child_ended(pid: u32) {
    lock(&CHILDREN).retain(|p| *p != pid);
}

/// What a thread is doing, from `/proc/self/task/<tid>/{stat,wchan}`, in the learner's terms.
fn doing(task: &str) -> Option<String> {
    // A thread that is not running but whose wait the kernel does not name (`wchan` reads "0" when it
    // was caught between two waits, as a loop that sleeps and wakes often is, on a busy machine) is looked
    // at again, a few times, before it is described by its state alone.
    let mut tries = 0;
    let (state, wchan) = loop {
        let (state, wchan) = state_and_wait(task)?;
        tries += 1;
        let unnamed = matches!(wchan.trim(), "" | "0");
        if state == 'R' || !unnamed || tries == 20 {
            break (state, wchan);
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    Some(match (state, wchan.as_str()) {
        ('R', _) => "its thread is running, not waiting: a loop that never ends (a retry without a \
                     limit, a condition that never turns true)"
            .to_owned(),
        (_, w) if w.contains("nanosleep") || w.contains("clock_nanosleep") => {
            "its thread is sleeping over and over: a loop with a pause that never gives up (a retry \
             without a limit, a poll for something that never comes)"
                .to_owned()
        }
        (_, w) if w.contains("futex") => "its thread waits on a lock, a condition variable, a channel \
                                          or a thread's join that nothing releases: a wait with no \
                                          timeout (a pool's acquire, a receive), or a lock held forever"
            .to_owned(),
        (_, w) if w.contains("poll") || w.contains("tcp") || w.contains("sk_wait") || w.contains("recv") => {
            "its thread waits on a socket: a database or server that does not answer, read with no \
             timeout"
                .to_owned()
        }
        (_, w) if w.contains("wait") => "its thread waits for a child process".to_owned(),
        (s, w) => format!("its thread is in state {s} ({})", w.trim()),
    })
}

/// A thread's state letter (`R`, `S`, `D`, …) and the kernel's name for what it waits in.
fn state_and_wait(task: &str) -> Option<(char, String)> {
    let stat = std::fs::read_to_string(format!("/proc/self/task/{task}/stat")).ok()?;
    // The state follows the command name, which is in parentheses and may hold spaces.
    let state = stat.rsplit_once(") ")?.1.chars().next()?;
    let wchan =
        std::fs::read_to_string(format!("/proc/self/task/{task}/wchan")).unwrap_or_default();
    Some((state, wchan))
}

/// Watches the running checks from a thread of its own; when one passes the [`limit`], ends the
/// children, calls `stop` with the check's name and what to say of it, and of each other check still
/// running (they are cut short with it), then ends the process with code 101.
pub fn watch(stop: impl FnOnce(Vec<(&'static str, String)>) + Send + 'static) {
    let bound = limit();
    std::thread::spawn(move || {
        loop {
            std::thread::sleep(Duration::from_millis(200));
            let running = lock(&RUNNING);
            let Some((&hung, late)) = running
                .iter()
                .filter(|(_, r)| r.since.elapsed() > bound)
                .max_by_key(|(_, r)| r.since.elapsed())
            else {
                continue;
            };
            let what = late
                .task
                .as_deref()
                .and_then(doing)
                .map(|d| format!(": {d}"))
                .unwrap_or_default();
            let mut said = vec![(
                hung,
                format!(
                    "{hung} ran for more than {:.0} s without finishing, and was stopped{what}. \
                     (The bound is {LIMIT_VAR}, in seconds; a slow but correct check can be given more.)",
                    bound.as_secs_f64()
                ),
            )];
            for (&other, _) in running.iter().filter(|(n, _)| **n != hung) {
                said.push((
                    other,
                    format!("stopped unfinished: the run ended when {hung} passed its time bound"),
                ));
            }
            drop(running);
            for pid in lock(&CHILDREN).drain(..) {
                let _ = std::process::Command::new("kill")
                    .args(["-9", &pid.to_string()])
                    .status();
            }
            stop(said);
            std::process::exit(101);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A thread in a busy loop, one asleep and one blocked on a lock are each told apart (Linux).
    #[test]
    fn says_what_a_thread_is_doing() {
        if this_task().is_none() {
            return; // No /proc: nothing to read, nothing said.
        }
        let (tx, rx) = std::sync::mpsc::channel();
        let sleeper = std::thread::spawn(move || {
            tx.send(this_task().unwrap()).unwrap();
            std::thread::sleep(Duration::from_secs(2));
        });
        let task = rx.recv().unwrap();
        std::thread::sleep(Duration::from_millis(200));
        let said = doing(&task).unwrap();
        assert!(said.contains("sleeping"), "{said}");
        sleeper.join().unwrap();

        let gate = std::sync::Arc::new(Mutex::new(()));
        let held = gate.lock().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let waiter = {
            let gate = gate.clone();
            std::thread::spawn(move || {
                tx.send(this_task().unwrap()).unwrap();
                drop(gate.lock());
            })
        };
        let task = rx.recv().unwrap();
        std::thread::sleep(Duration::from_millis(200));
        let said = doing(&task).unwrap();
        assert!(said.contains("lock"), "{said}");
        drop(held);
        waiter.join().unwrap();

        let here = doing(&this_task().unwrap()).unwrap();
        assert!(here.contains("running"), "{here}");
    }
}
