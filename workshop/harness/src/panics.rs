//! Where a check failed: a panic hook that remembers where each panic happened, so that a failing check's
//! message can say which line of the specification it stopped at and where the learner's code panicked —
//! also on another thread or task, where the message the check itself gives ("a worker thread panicked")
//! has no location.

use std::cell::RefCell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, Once};

/// A place in the learner's `src/exercise.rs` that panicked: the number of its latest panic among all
/// panics, where, what it said. One entry per place and message, however often it panics (a property
/// test's shrinking panics many times), so the list stays short and never goes stale.
struct Mine {
    seq: usize,
    at: String,
    said: String,
}

static MINE: Mutex<Vec<Mine>> = Mutex::new(Vec::new());
/// Panics so far, in this process.
static SEQ: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// Where the last panic on this thread happened: for a failed check, the one that ended it.
    static LAST: RefCell<Option<String>> = const { RefCell::new(None) };
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The text of a panic payload.
pub(crate) fn text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "the check panicked".to_owned())
}

/// Installs the hook (once); `quiet` leaves out the standard hook's printing.
pub(crate) fn install(quiet: bool) {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let standard = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if let Some(loc) = info.location() {
                let at = format!("{}:{}:{}", loc.file(), loc.line(), loc.column());
                record(at, &text(info.payload()));
            }
            if !quiet {
                standard(info);
            }
        }));
    });
}

/// Records a panic at `at` (`file:line:column`) on this thread.
fn record(at: String, said: &str) {
    LAST.with(|l| *l.borrow_mut() = Some(at.clone()));
    let seq = SEQ.fetch_add(1, Ordering::SeqCst) + 1;
    if !is_learners(file_of(&at)) {
        return;
    }
    let said = said.lines().next().unwrap_or("").to_owned();
    let mut mine = lock(&MINE);
    match mine.iter_mut().find(|m| m.at == at && m.said == said) {
        Some(m) => m.seq = seq,
        None => mine.push(Mine { seq, at, said }),
    }
}

/// The file of a `file:line:column` place.
fn file_of(at: &str) -> &str {
    at.rsplitn(3, ':').nth(2).unwrap_or(at)
}

/// A source file the learner writes.
fn is_learners(file: &str) -> bool {
    file.replace('\\', "/").ends_with("src/exercise.rs")
}

/// The moment a check starts, to tell its panics from earlier ones.
pub(crate) struct Mark(usize);

/// Marks the start of a check on this thread.
pub(crate) fn start() -> Mark {
    LAST.with(|l| *l.borrow_mut() = None);
    Mark(SEQ.load(Ordering::SeqCst))
}

/// A failed check's message: what it said, where it stopped, and where the learner's code panicked since
/// `mark` saying what the check repeats (at most three places, each once).
pub(crate) fn failure(said: &str, mark: &Mark) -> String {
    // Only a place in the workspace (a relative path): not one inside a dependency's macro, and not a
    // second place in a file the message already names (a property test's message says where its
    // assertion is; its panic is at the `proptest!` block).
    let own = LAST
        .with(|l| l.borrow().clone())
        .filter(|at| !at.starts_with('/'))
        .filter(|at| !said.contains(&format!("{}:", file_of(at))));
    let mut out = said.trim_end().to_owned();
    if let Some(at) = &own {
        out.push_str(&format!("\n   at {at}"));
    }
    let mut shown: Vec<&str> = Vec::new();
    let mine = lock(&MINE);
    // Checks run side by side, and a thread or task does not say which check it works for: a panic in the
    // learner's file counts for this check when it came after the check started and the check's own
    // message repeats it (as "a worker thread panicked: …" and "task 7 panicked with message …" do).
    for m in mine
        .iter()
        .filter(|m| m.seq > mark.0 && !m.said.is_empty() && said.contains(&m.said))
    {
        if shown.len() == 3 || shown.contains(&m.at.as_str()) || own.as_deref() == Some(&m.at) {
            continue;
        }
        out.push_str(&format!("\n   your code panicked at {}: {}", m.at, m.said));
        shown.push(&m.at);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::panic::catch_unwind;

    /// A panic on another thread in the learner's file is named with its place; the check's own panic
    /// gives its place too; a panic before the check started, or one whose words the check does not repeat
    /// (another check's, running beside it), is not blamed on it.
    #[test]
    fn failures_say_where() {
        install(true);
        assert!(is_learners("workshop/07-pools/src/exercise.rs"));
        assert!(!is_learners("workshop/07-pools/tests/check.rs"));
        // Panics in the learner's file, as the hook records them from other threads.
        let other = |at: &str, said: &str| {
            let (at, said) = (at.to_owned(), said.to_owned());
            std::thread::spawn(move || record(at, &said))
                .join()
                .unwrap();
        };
        let overflow = "attempt to subtract with overflow";
        other("workshop/07-pools/src/exercise.rs:3:1", overflow);
        let mark = start();
        other(
            "workshop/07-pools/src/exercise.rs:12:5",
            &format!("{overflow}\nmore"),
        );
        other("workshop/07-pools/src/exercise.rs:12:5", overflow);
        other(
            "workshop/07-pools/src/exercise.rs:40:9",
            "not yet implemented",
        );
        let payload = catch_unwind(|| panic!("a worker thread panicked: {overflow}")).unwrap_err();
        let message = failure(&text(&*payload), &mark);
        let lines: Vec<&str> = message.lines().collect();
        assert_eq!(lines[0], format!("a worker thread panicked: {overflow}"));
        assert!(
            lines[1].starts_with("   at ") && lines[1].contains("panics.rs"),
            "{message}"
        );
        assert_eq!(
            lines[2],
            format!("   your code panicked at workshop/07-pools/src/exercise.rs:12:5: {overflow}")
        );
        assert_eq!(lines.len(), 3, "{message}");

        // A message that already names the file it stopped in gets no second place in it.
        let mark = start();
        let here = file!();
        let payload =
            catch_unwind(|| panic!("Test failed: differs at {}:83.", file!())).unwrap_err();
        let message = failure(&text(&*payload), &mark);
        assert_eq!(message, format!("Test failed: differs at {here}:83."));
    }
}
