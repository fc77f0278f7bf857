//! [`LossClock`]: when a pool last saw a connection die. A server restart or a killed backend breaks every
//! idle connection at once, but each one is only found out when it is used — without validation, a caller
//! after the first failure draws the next dead connection, and the next. So once a loss has been seen, an
//! idle connection that was last known good before it is checked (a ping) before it is handed out, and
//! replaced if it fails; connections known good since then are not. The check costs nothing until the
//! first loss.
//!
//! The clock also remembers whether the server could be reached at all: once a connect attempt was
//! refused (the server is gone), waiting for a connection is pointless, so a pool asks the server directly
//! (one connect) before it waits, and gives the connect error at once while that fails — a dead server
//! surfaces within the connect timeout as one lost-connection error, not as a string of pool timeouts.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use std::time::{Duration, Instant};
use tandem_core::DbErrorKind;

/// The time of the last connection loss a pool saw; shared by the pool's connections.
#[derive(Debug)]
pub struct LossClock {
    base: Instant,
    /// Nanoseconds since `base` of the last loss, plus one; 0 before any.
    last: AtomicU64,
    /// Set while the server cannot be reached (a connect failed, none succeeded since).
    unreachable: AtomicBool,
}

impl Default for LossClock {
    fn default() -> Self {
        LossClock {
            base: Instant::now(),
            last: AtomicU64::new(0),
            unreachable: AtomicBool::new(false),
        }
    }
}

impl LossClock {
    /// A new clock: no loss yet.
    pub fn new() -> LossClock {
        LossClock::default()
    }

    /// Now, on this clock's scale: stamp a connection with it when it is known good (opened or checked).
    pub fn stamp(&self) -> u64 {
        self.base.elapsed().as_nanos() as u64 + 1
    }

    /// Records that a connection was found dead now.
    pub fn note_loss(&self) {
        self.last.fetch_max(self.stamp(), Ordering::Relaxed);
    }

    /// Whether a connection last known good at `stamp` must be checked before use: a loss was seen at or
    /// after that time.
    pub fn suspect(&self, stamp: u64) -> bool {
        let last = self.last.load(Ordering::Relaxed);
        last != 0 && last >= stamp
    }

    /// Records whether connecting to the server just worked.
    pub fn note_reachable(&self, reachable: bool) {
        self.unreachable.store(!reachable, Ordering::Relaxed);
        if !reachable {
            self.note_loss();
        }
    }

    /// Whether the last connect attempt failed: ask the server before waiting for a connection.
    pub fn unreachable(&self) -> bool {
        self.unreachable.load(Ordering::Relaxed)
    }

    /// Whether any connection was ever lost (a cheap look before [`LossClock::suspect_idle`], which
    /// reads the clock).
    pub fn any_loss(&self) -> bool {
        self.last.load(Ordering::Relaxed) != 0
    }

    /// [`LossClock::suspect`] for a connection that has been idle for `idle_for` (it was known good when
    /// it was given back).
    pub fn suspect_idle(&self, idle_for: Duration) -> bool {
        self.suspect(self.stamp().saturating_sub(idle_for.as_nanos() as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Nothing is suspect before a loss; after one, exactly the connections known good before it are.
    #[test]
    fn suspects_only_connections_older_than_the_loss() {
        let clock = LossClock::new();
        let before = clock.stamp();
        assert!(!clock.suspect(before));
        assert!(!clock.suspect_idle(Duration::from_secs(3600)));
        std::thread::sleep(Duration::from_millis(2));
        clock.note_loss();
        assert!(clock.suspect(before));
        std::thread::sleep(Duration::from_millis(2));
        let checked = clock.stamp();
        assert!(!clock.suspect(checked));
        // Idle since before the loss: suspect; idle only since after it: not.
        assert!(clock.suspect_idle(Duration::from_secs(1)));
        assert!(!clock.suspect_idle(Duration::from_micros(100)));
    }

    /// Unreachable from a failed connect until one succeeds; a failed connect is a loss too.
    #[test]
    fn reachability() {
        let clock = LossClock::new();
        let before = clock.stamp();
        assert!(!clock.unreachable());
        std::thread::sleep(Duration::from_millis(2));
        clock.note_reachable(false);
        assert!(clock.unreachable() && clock.suspect(before));
        clock.note_reachable(true);
        assert!(!clock.unreachable());
    }
}

/// What a pooled connection has learnt of its own health, kept the same way by both executors: whether it
/// was found lost, whether a statement failed retriably, and when it was last known good on its pool's
/// [`LossClock`].
#[derive(Debug, Default)]
pub struct ConnHealth {
    /// Lost, or on a cluster node that cannot serve: closed instead of pooled.
    pub broken: bool,
    /// A statement failed with a retriable error (deadlock, serialization failure, busy) since the flag was
    /// last cleared: a transaction reads it to decide on a retry whatever error type its closure returned.
    pub retriable_seen: bool,
    losses: Option<Arc<LossClock>>,
    known_good: u64,
}

impl ConnHealth {
    /// A connection just opened by a pool that keeps `losses`: known good as of now.
    pub fn new(losses: Option<Arc<LossClock>>) -> Self {
        let known_good = losses.as_ref().map_or(0, |l| l.stamp());
        ConnHealth {
            broken: false,
            retriable_seen: false,
            losses,
            known_good,
        }
    }

    /// Records what a statement's result says of the connection: a retriable failure, or a lost
    /// connection (a cluster node that cannot serve counts as lost) — then it is broken and the pool's
    /// other connections become suspect. Returns whether it was found lost.
    pub fn note<T>(&mut self, result: &tandem_core::Result<T>) -> bool {
        let Err(e) = result else {
            return false;
        };
        self.retriable_seen |= e.is_retriable();
        let lost = matches!(
            e.kind(),
            Some(
                DbErrorKind::ConnectionLost | DbErrorKind::NoAnswer | DbErrorKind::NodeUnavailable
            )
        );
        if lost {
            self.broken = true;
            if let Some(l) = &self.losses {
                l.note_loss();
            }
        }
        lost
    }

    /// `Some(stamp)` when the pool saw a connection die since this one was last known good: check it
    /// (a ping) before handing it out, and record the check with [`ConnHealth::checked`].
    pub fn suspect(&self) -> Option<u64> {
        self.losses
            .as_ref()
            .filter(|l| l.suspect(self.known_good))
            .map(|l| l.stamp())
    }

    /// The connection answered a check made at `stamp`.
    pub fn checked(&mut self, stamp: u64) {
        self.known_good = stamp;
    }

    /// The pool's loss record, for a connection handed on to another owner.
    pub fn take_losses(&mut self) -> Option<Arc<LossClock>> {
        self.losses.take()
    }
}
