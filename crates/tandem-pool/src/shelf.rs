//! [`Shelf`]: the idle connections of a pool that has no bound of its own — the gate in front of it is what
//! keeps the connections in use at `max_size` (see [`crate::Admission::bounding`]). A caller holding the
//! gate's permit takes an idle connection from the shelf, or opens one and lends it through the shelf; either
//! way it goes back when dropped. So a checkout passes one gate and one short lock, and the shelf never
//! waits.
//!
//! Idle connections are handed out most recently used first (a connection that just answered is warm; the
//! others may age out). One is closed instead of handed out when it is unfit (the driver says so), older than
//! `max_lifetime`, or idle past `idle_timeout` while the pool holds more than `min_idle`; one that comes back
//! unfit is closed at once. Each connection counts itself in the pool's gauges from its opening to its end.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use tandem_core::observe::PoolGauges;

use crate::PoolConfig;

/// A connection, counted in its pool's gauges from its start to its end.
struct Counted<C> {
    conn: C,
    /// When it was opened, for `max_lifetime`.
    born: Instant,
    gauges: Arc<PoolGauges>,
}

impl<C> Drop for Counted<C> {
    fn drop(&mut self) {
        self.gauges.closed();
    }
}

/// An idle connection and since when.
struct Idle<C> {
    conn: Counted<C>,
    since: Instant,
}

/// The idle connections of one pool, most recently used last, and the rules for handing one out.
pub struct Shelf<C> {
    idle: Mutex<Vec<Idle<C>>>,
    config: PoolConfig,
    gauges: Arc<PoolGauges>,
    created: Arc<AtomicU64>,
    fit: fn(&C) -> bool,
}

impl<C> std::fmt::Debug for Shelf<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (open, idle) = self.state();
        f.debug_struct("Shelf")
            .field("open", &open)
            .field("idle", &idle)
            .finish()
    }
}

/// A connection lent out by a [`Shelf`]: it goes back when dropped (closed instead when it is unfit then;
/// [`Lent::discard`] closes it at once).
pub struct Lent<C> {
    conn: Option<Counted<C>>,
    /// When it last went back to the shelf (or was opened).
    since: Instant,
    shelf: Arc<Shelf<C>>,
}

impl<C> std::ops::Deref for Lent<C> {
    type Target = C;
    fn deref(&self) -> &C {
        &self.conn.as_ref().expect("lent until dropped").conn
    }
}

impl<C> std::ops::DerefMut for Lent<C> {
    fn deref_mut(&mut self) -> &mut C {
        &mut self.conn.as_mut().expect("lent until dropped").conn
    }
}

impl<C> Lent<C> {
    /// When it was last given back, or opened: known good then.
    pub fn idle_since(&self) -> Instant {
        self.since
    }

    /// Closes it now instead of giving it back.
    pub fn discard(mut self) {
        self.conn = None;
    }
}

impl<C> Drop for Lent<C> {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take() {
            self.shelf.put(conn);
        }
    }
}

impl<C> Shelf<C> {
    /// An empty shelf for a pool with these settings, counting its connections in `gauges` and `created`
    /// (the admission's, see [`crate::Admission::gauges`] and [`crate::Admission::created_counter`]); `fit`
    /// says whether a connection can take another caller.
    pub fn new(
        config: &PoolConfig,
        gauges: Arc<PoolGauges>,
        created: Arc<AtomicU64>,
        fit: fn(&C) -> bool,
    ) -> Arc<Shelf<C>> {
        Arc::new(Shelf {
            idle: Mutex::new(Vec::new()),
            config: config.clone(),
            gauges,
            created,
            fit,
        })
    }

    fn lock(&self) -> MutexGuard<'_, Vec<Idle<C>>> {
        self.idle.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether an idle connection may be handed out now: fit, not past `max_lifetime`, and not idle past
    /// `idle_timeout` while the pool holds more than `min_idle`. The clock is read only for a rule that is
    /// set. `closing`: connections already found unusable and about to be closed.
    fn usable(&self, idle: &Idle<C>, closing: usize) -> bool {
        if !(self.fit)(&idle.conn.conn) {
            return false;
        }
        let c = &self.config;
        if c.max_lifetime.is_none() && c.idle_timeout.is_none() {
            return true;
        }
        let now = Instant::now();
        let old = c
            .max_lifetime
            .is_some_and(|l| now.saturating_duration_since(idle.conn.born) >= l);
        let idle_too_long = c
            .idle_timeout
            .is_some_and(|t| now.saturating_duration_since(idle.since) >= t)
            && self.gauges.open_count() - closing as i64 > i64::from(c.effective_min_idle());
        !old && !idle_too_long
    }

    /// The most recently used idle connection that may be handed out, or `None` (then open one and
    /// [`Shelf::lend_new`] it). Those that may not be handed out are closed on the way, outside the lock.
    pub fn take(self: &Arc<Self>) -> Option<Lent<C>> {
        let mut closing = Vec::new();
        let found = {
            let mut idle = self.lock();
            loop {
                match idle.pop() {
                    Some(i) if self.usable(&i, closing.len()) => break Some(i),
                    Some(i) => closing.push(i),
                    None => break None,
                }
            }
        };
        drop(closing);
        let idle = found?;
        Some(Lent {
            conn: Some(idle.conn),
            since: idle.since,
            shelf: self.clone(),
        })
    }

    /// Lends a connection just opened (counted opened from now).
    pub fn lend_new(self: &Arc<Self>, conn: C) -> Lent<C> {
        self.created.fetch_add(1, Ordering::Relaxed);
        self.gauges.opened();
        let born = Instant::now();
        Lent {
            conn: Some(Counted {
                conn,
                born,
                gauges: self.gauges.clone(),
            }),
            since: born,
            shelf: self.clone(),
        }
    }

    /// Puts a connection that came back on the shelf, or closes it when it is unfit.
    fn put(&self, conn: Counted<C>) {
        if !(self.fit)(&conn.conn) {
            return;
        }
        let since = Instant::now();
        self.lock().push(Idle { conn, since });
    }

    /// Connections open and idle.
    pub fn state(&self) -> (u32, u32) {
        let open = self.gauges.open_count().max(0) as u32;
        (open, self.lock().len() as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Connections are numbers; one can be made unfit, also while it is idle.
    struct Fake {
        n: u64,
        fit: Arc<std::sync::atomic::AtomicBool>,
    }

    impl Fake {
        fn break_it(&self) {
            self.fit.store(false, Ordering::Relaxed);
        }
    }

    fn shelf(config: PoolConfig) -> (Arc<Shelf<Fake>>, impl FnMut() -> Fake) {
        let shelf = Shelf::new(
            &config,
            Arc::new(PoolGauges::none()),
            Arc::new(AtomicU64::new(0)),
            |c: &Fake| c.fit.load(Ordering::Relaxed),
        );
        let mut n = 0;
        let open = move || {
            n += 1;
            Fake {
                n,
                fit: Arc::new(true.into()),
            }
        };
        (shelf, open)
    }

    /// The one given back last is handed out first; one that comes back unfit, or is discarded, is closed at
    /// once and counted so; `created` counts every one opened.
    #[test]
    fn most_recently_used_first_and_unfit_ones_closed() {
        let (s, mut open) = shelf(PoolConfig::default());
        assert!(s.take().is_none(), "an empty shelf lends nothing");
        let three: Vec<_> = (0..3).map(|_| s.lend_new(open())).collect();
        assert_eq!(s.state(), (3, 0));
        drop(three);
        assert_eq!(s.state(), (3, 3));
        let a = s.take().unwrap();
        let b = s.take().unwrap();
        assert_eq!((a.n, b.n), (3, 2), "the last given back first");
        drop(b);
        drop(a);
        let c = s.take().unwrap();
        assert_eq!(c.n, 3);
        c.break_it();
        drop(c);
        assert_eq!(s.state(), (2, 2), "the unfit one is closed when given back");
        s.take().unwrap().discard();
        assert_eq!(s.state(), (1, 1));
        let fresh = s.lend_new(open());
        assert_eq!(fresh.n, 4);
        assert_eq!(s.state(), (2, 1));
        assert_eq!(s.created.load(Ordering::Relaxed), 4);
    }

    /// Idle past `idle_timeout`, connections are closed until `min_idle` are left — not one fewer — and the
    /// next of them is handed out; past `max_lifetime` every one is closed, whatever `min_idle` says; an
    /// idle one that became unfit is closed and the next handed out.
    #[test]
    fn idle_old_and_unfit_connections_are_closed_down_to_min_idle() {
        let (s, mut open) = shelf(PoolConfig {
            min_idle: Some(1),
            idle_timeout: Some(Duration::from_millis(30)),
            ..PoolConfig::default()
        });
        drop((0..4).map(|_| s.lend_new(open())).collect::<Vec<_>>());
        std::thread::sleep(Duration::from_millis(40));
        let kept = s.take().expect("min_idle stays open");
        assert_eq!(
            kept.n, 1,
            "the three on top closed, the last one handed out"
        );
        assert_eq!(s.state(), (1, 0));
        drop(kept);

        let (s, mut open) = shelf(PoolConfig {
            min_idle: Some(2),
            max_lifetime: Some(Duration::from_millis(30)),
            ..PoolConfig::default()
        });
        drop((0..2).map(|_| s.lend_new(open())).collect::<Vec<_>>());
        std::thread::sleep(Duration::from_millis(40));
        assert!(s.take().is_none(), "too old to hand out");
        assert_eq!(s.state(), (0, 0));

        let (s, mut open) = shelf(PoolConfig::default());
        let two: Vec<_> = (0..2).map(|_| s.lend_new(open())).collect();
        let top = two[1].fit.clone();
        drop(two);
        top.store(false, Ordering::Relaxed);
        assert_eq!(
            s.take().map(|l| l.n),
            Some(1),
            "the one below the unfit one"
        );
        assert_eq!(s.state(), (1, 1));
    }
}
