//! [`Admission`]: what an executor puts in front of its driver pool — the gate (when `max_pending` is set),
//! the acquire deadline shared by the gate and the pool, the count of connections opened, and the
//! [`PoolMetrics`] snapshot. The blocking and the async executor embed the same value, so both bound, time
//! out and report alike.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::config::PoolConfig;
use crate::gate::{AdmissionError, Gate, GateConfig, Permit};
use crate::losses::LossClock;
use tandem_core::observe::PoolGauges;

/// Admission control and metrics for one pool.
pub struct Admission {
    gate: Option<Gate>,
    timeout: Duration,
    max_size: u32,
    created: Arc<AtomicU64>,
    losses: Arc<LossClock>,
    gauges: Arc<PoolGauges>,
}

impl std::fmt::Debug for Admission {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Admission")
            .field("gate", &self.gate.as_ref().map(Gate::config))
            .finish()
    }
}

/// A connection counted in use (see [`Admission::checked_out`]); dropped when it goes back.
pub struct InUse(Arc<PoolGauges>);

impl Drop for InUse {
    fn drop(&mut self) {
        self.0.returned();
    }
}

impl std::fmt::Debug for InUse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("InUse")
    }
}

/// A status snapshot of a pool: eventually consistent, like any pool status (the counts are read one after
/// the other while other threads go on acquiring).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PoolMetrics {
    /// Most connections open at once.
    pub max_size: u32,
    /// Connections open now.
    pub size: u32,
    /// Of those, idle in the pool.
    pub idle: u32,
    /// Connections handed out (admitted acquires, when admission control is on).
    pub in_use: u32,
    /// Acquires waiting in the admission queue.
    pub waiting: u32,
    /// Acquires that got a connection through the gate (0 with `max_pending: None` on a driver pool that
    /// queues them itself: r2d2's, sqlx's).
    pub acquired: u64,
    /// Acquires that waited past the timeout.
    pub timed_out: u64,
    /// Acquires refused at once because the queue was full.
    pub rejected: u64,
    /// Connections opened since the pool was built (warm-up and replacements included).
    pub created: u64,
    /// Connections closed since: `created − size` (broken, expired, idle past the timeout, failed
    /// validation).
    pub closed: u64,
    /// Median wait of the last admitted acquires.
    pub wait_p50: Duration,
    /// 99th percentile of those waits.
    pub wait_p99: Duration,
    /// The longest of those waits.
    pub wait_max: Duration,
    /// Write transactions waiting for their turn to write (a SQLite file database lines its write
    /// transactions up, see `tandem_sqlite::WriterGate`); always 0 on the servers.
    pub writers_waiting: u32,
}

impl Admission {
    /// Admission for a pool with these settings, recording no metrics.
    pub fn new(config: &PoolConfig) -> Admission {
        Admission::observed(config, PoolGauges::none())
    }

    /// Admission for a pool with these settings that records the pool's metrics in `gauges` (see
    /// `tandem_core::observe`): the waiting gauge, timeouts and rejections here; checkouts, the acquire
    /// wait and the connection counts through [`Admission::checked_out`].
    pub fn observed(config: &PoolConfig, gauges: PoolGauges) -> Admission {
        Admission::with_gate(config, gauges, config.max_pending.map(|p| p as usize))
    }

    /// Admission for a pool that has no bound of its own (tandem's own pools of native connections keep
    /// only the idle ones): the gate is on whatever `max_pending` says — without it, the queue has no
    /// limit — and so it alone keeps the connections in use at `max_size`, with one deadline and the
    /// same metrics.
    pub fn bounding(config: &PoolConfig, gauges: PoolGauges) -> Admission {
        let pending = config.max_pending.map_or(usize::MAX, |p| p as usize);
        Admission::with_gate(config, gauges, Some(pending))
    }

    fn with_gate(config: &PoolConfig, gauges: PoolGauges, pending: Option<usize>) -> Admission {
        let max_size = config.effective_max_size();
        Admission {
            gate: pending.map(|pending| {
                Gate::observed(
                    GateConfig {
                        max_size: max_size as usize,
                        max_pending: pending,
                        timeout: config.acquire_timeout,
                    },
                    gauges.waiting.clone(),
                )
            }),
            timeout: config.acquire_timeout,
            max_size,
            created: Arc::new(AtomicU64::new(0)),
            losses: Arc::new(LossClock::new()),
            gauges: Arc::new(gauges),
        }
    }

    /// Records a checkout that waited `waited` in all (admission and pool); `open`: the driver pool's
    /// count of connections, for a pool that does not count its own (see `PoolGauges`). The guard counts
    /// the connection in use until it is dropped (put it where the connection goes back).
    pub fn checked_out(&self, waited: Duration, open: Option<u32>) -> InUse {
        let g = &self.gauges;
        g.acquire_wait.record(waited.as_secs_f64());
        if let Some(open) = open {
            g.open_now(open);
        }
        g.checked_out();
        InUse(self.gauges.clone())
    }

    /// The pool's metric handles, for its connections to count themselves opened and closed.
    pub fn gauges(&self) -> &Arc<PoolGauges> {
        &self.gauges
    }

    fn counted<T>(&self, result: Result<T, AdmissionError>) -> Result<T, AdmissionError> {
        match &result {
            Err(AdmissionError::Timeout { .. }) => self.gauges.timeouts.increment(1),
            Err(AdmissionError::Saturated { .. }) => self.gauges.rejected.increment(1),
            Ok(_) => {}
        }
        result
    }

    /// When the pool last saw a connection die (see [`LossClock`]).
    pub fn losses(&self) -> &Arc<LossClock> {
        &self.losses
    }

    /// The counter the pool's connect hook bumps for each connection it opens.
    pub fn created_counter(&self) -> Arc<AtomicU64> {
        self.created.clone()
    }

    /// Waits (blocking this thread) for admission; `None` when admission control is off.
    pub fn acquire_blocking(&self) -> Result<Option<Permit>, AdmissionError> {
        self.counted(self.gate.as_ref().map(Gate::acquire_blocking).transpose())
    }

    /// [`Admission::acquire_blocking`], with how long the acquire waited for admission: zero when it was
    /// admitted at once (or admission control is off), and then no clock was read.
    pub fn acquire_blocking_waited(&self) -> Result<(Option<Permit>, Duration), AdmissionError> {
        match &self.gate {
            Some(g) => self.counted(g.acquire_blocking_waited().map(|(p, w)| (Some(p), w))),
            None => Ok((None, Duration::ZERO)),
        }
    }

    /// Waits (asynchronously) for admission; `None` when admission control is off. Dropping the future
    /// gives its place in the queue up.
    pub async fn acquire(&self) -> Result<Option<Permit>, AdmissionError> {
        match &self.gate {
            Some(g) => self.counted(g.acquire().await.map(Some)),
            None => Ok(None),
        }
    }

    /// [`Admission::acquire`], with how long the acquire waited for admission: zero when it was admitted
    /// at once (or admission control is off), and then no clock was read.
    pub async fn acquire_waited(&self) -> Result<(Option<Permit>, Duration), AdmissionError> {
        match &self.gate {
            Some(g) => self.counted(g.acquire_waited().await.map(|(p, w)| (Some(p), w))),
            None => Ok((None, Duration::ZERO)),
        }
    }

    /// What is left of the acquire timeout for the pool's own wait, for an acquire that began at `started`.
    pub fn remaining(&self, started: Instant) -> Duration {
        self.timeout.saturating_sub(started.elapsed())
    }

    /// The timeout error for an acquire that began at `started` and got no connection from the pool.
    pub fn timed_out(&self, started: Instant) -> AdmissionError {
        self.gauges.timeouts.increment(1);
        AdmissionError::Timeout {
            waited: started.elapsed(),
            max_size: self.max_size as usize,
        }
    }

    /// The snapshot, given what the driver pool reports: connections `open` and `idle` (which also set
    /// the size and idle gauges).
    pub fn metrics(&self, open: u32, idle: u32) -> PoolMetrics {
        let created = self.created.load(Ordering::Relaxed);
        let mut m = PoolMetrics {
            max_size: self.max_size,
            size: open,
            idle,
            in_use: open.saturating_sub(idle),
            created,
            closed: created.saturating_sub(u64::from(open)),
            ..PoolMetrics::default()
        };
        if let Some(g) = &self.gate {
            let gm = g.metrics();
            m.in_use = gm.in_use as u32;
            m.waiting = gm.waiting as u32;
            m.acquired = gm.counters.acquired;
            m.timed_out = gm.counters.timed_out;
            m.rejected = gm.counters.rejected;
            m.wait_p50 = gm.wait_p50;
            m.wait_p99 = gm.wait_p99;
            m.wait_max = gm.wait_max;
        }
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// With `max_pending` the gate admits and counts; without it acquires pass straight to the pool.
    #[test]
    fn gate_only_when_bounded() {
        let on = Admission::new(&PoolConfig {
            max_size: 2,
            ..PoolConfig::default()
        });
        let p = on.acquire_blocking().unwrap();
        assert!(p.is_some());
        on.created_counter().fetch_add(3, Ordering::Relaxed);
        let m = on.metrics(2, 1);
        assert_eq!(
            (m.max_size, m.size, m.idle, m.in_use, m.acquired),
            (2, 2, 1, 1, 1)
        );
        assert_eq!((m.created, m.closed), (3, 1));
        drop(p);
        assert_eq!(on.metrics(2, 2).in_use, 0);

        let off = Admission::new(&PoolConfig {
            max_pending: None,
            ..PoolConfig::default()
        });
        assert!(off.acquire_blocking().unwrap().is_none());
        let m = off.metrics(3, 1);
        assert_eq!((m.in_use, m.acquired), (2, 0));
    }

    /// A pool with no bound of its own gets the gate without `max_pending` too: the permits run out at
    /// `max_size` (the next acquire waits, here until its timeout), and a waiter is never refused.
    #[test]
    fn bounding_gates_without_max_pending() {
        let a = Admission::bounding(
            &PoolConfig {
                max_size: 1,
                max_pending: None,
                acquire_timeout: Duration::from_millis(50),
                ..PoolConfig::default()
            },
            PoolGauges::none(),
        );
        let p = a.acquire_blocking().unwrap();
        assert!(p.is_some());
        assert!(matches!(
            a.acquire_blocking(),
            Err(AdmissionError::Timeout { max_size: 1, .. })
        ));
        drop(p);
        assert!(a.acquire_blocking().unwrap().is_some());
    }

    /// The pool's share of the timeout is what the gate left, and the error carries the whole wait.
    #[test]
    fn one_deadline() {
        let a = Admission::new(&PoolConfig {
            acquire_timeout: Duration::from_millis(200),
            ..PoolConfig::default()
        });
        let started = Instant::now() - Duration::from_millis(150);
        assert!(a.remaining(started) <= Duration::from_millis(50));
        let AdmissionError::Timeout { waited, max_size } = a.timed_out(started) else {
            panic!("a timeout")
        };
        assert!(waited >= Duration::from_millis(150));
        assert_eq!(max_size, 10);
        assert_eq!(
            a.remaining(Instant::now() - Duration::from_secs(1)),
            Duration::ZERO
        );
    }
}
