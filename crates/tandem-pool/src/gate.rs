//! The admission gate: at most `max_size` [`Permit`]s, and a bounded first-come-first-served queue of the
//! acquires that wait for one.
//!
//! An acquire that finds no free permit joins the queue if it holds fewer than `max_pending` waiters, and
//! fails at once with [`AdmissionError::Saturated`] if not; a waiter that gets nothing within the timeout
//! fails with [`AdmissionError::Timeout`] carrying how long it waited. Blocking threads and async tasks wait in
//! the same queue. A permit travels to its waiter inside a channel, so a waiter that gives up (timeout, or a
//! dropped future) never loses one: an undelivered permit goes straight to the next waiter.
//!
//! Why a std `Mutex` and not Tokio's: the lock is held for a few pointer moves and never across an
//! `.await`, and threads take it too.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// Why an acquire got no permit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AdmissionError {
    /// The queue of waiters was full: refused at once.
    #[error("pool saturated: {pending} acquires already waiting for {max_size} connections")]
    Saturated {
        /// Waiters in the queue.
        pending: usize,
        /// Permits in all.
        max_size: usize,
    },
    /// No permit came within the timeout.
    #[error("no connection within {waited:?} (pool of {max_size})")]
    Timeout {
        /// How long the acquire waited.
        waited: Duration,
        /// Permits in all.
        max_size: usize,
    },
}

/// What a gate admits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GateConfig {
    /// Permits (connections) in all.
    pub max_size: usize,
    /// Acquires allowed to wait at once.
    pub max_pending: usize,
    /// How long an acquire waits at most.
    pub timeout: Duration,
}

enum Waiter {
    Thread(std::sync::mpsc::SyncSender<Permit>),
    Task(tokio::sync::oneshot::Sender<Permit>),
}

struct State {
    available: usize,
    queue: VecDeque<(u64, Waiter)>,
    next_id: u64,
    counters: Counters,
    waits: VecDeque<Duration>,
}

/// Counters since the gate was made.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Acquires that got a permit.
    pub acquired: u64,
    /// Acquires that timed out.
    pub timed_out: u64,
    /// Acquires refused because the queue was full.
    pub rejected: u64,
}

/// A snapshot of a gate: eventually consistent, like any pool status.
#[derive(Clone, Debug, PartialEq)]
pub struct GateMetrics {
    /// Permits in all.
    pub size: usize,
    /// Permits held.
    pub in_use: usize,
    /// Acquires waiting.
    pub waiting: usize,
    /// Counters.
    pub counters: Counters,
    /// Median wait of the last acquires that got a permit.
    pub wait_p50: Duration,
    /// 99th percentile of those waits.
    pub wait_p99: Duration,
    /// The longest of those waits.
    pub wait_max: Duration,
}

/// Waits kept for the percentiles.
const WAIT_SAMPLES: usize = 4_096;

struct Inner {
    config: GateConfig,
    state: Mutex<State>,
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A permit came back: to the first waiter still waiting, or to the free count.
    fn release(self: &Arc<Self>) {
        let mut state = self.lock();
        while let Some((_, waiter)) = state.queue.pop_front() {
            let permit = Permit {
                gate: Some(self.clone()),
            };
            let refused = match waiter {
                Waiter::Thread(tx) => tx.try_send(permit).err().map(|e| match e {
                    std::sync::mpsc::TrySendError::Full(p)
                    | std::sync::mpsc::TrySendError::Disconnected(p) => p,
                }),
                Waiter::Task(tx) => tx.send(permit).err(),
            };
            match refused {
                // The waiter gave up; its permit must not come back through `release` while we hold the lock.
                Some(mut p) => p.gate = None,
                None => return,
            }
        }
        state.available += 1;
    }

    fn granted(&self, state: &mut State, waited: Duration) {
        state.counters.acquired += 1;
        if state.waits.len() == WAIT_SAMPLES {
            state.waits.pop_front();
        }
        state.waits.push_back(waited);
    }
}

/// One admitted acquire; dropping it admits the next.
pub struct Permit {
    gate: Option<Arc<Inner>>,
}

impl std::fmt::Debug for Permit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Permit")
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        if let Some(gate) = self.gate.take() {
            gate.release();
        }
    }
}

/// The admission gate; cheap to clone (clones share it).
#[derive(Clone)]
pub struct Gate {
    inner: Arc<Inner>,
}

/// An async waiter's place in the queue, given up when its future is dropped.
struct QueuePlace<'g> {
    gate: &'g Gate,
    id: u64,
    queued: bool,
}

impl Drop for QueuePlace<'_> {
    fn drop(&mut self) {
        if self.queued {
            // Served meanwhile? Then the permit sits in the dropped channel and goes back through `release`.
            self.gate.remove(self.id);
        }
    }
}

enum Entry<W> {
    Now(Permit),
    Wait(u64, W),
}

impl Gate {
    /// A gate with `config.max_size` permits.
    pub fn new(config: GateConfig) -> Gate {
        Gate {
            inner: Arc::new(Inner {
                config,
                state: Mutex::new(State {
                    available: config.max_size,
                    queue: VecDeque::new(),
                    next_id: 0,
                    counters: Counters::default(),
                    waits: VecDeque::new(),
                }),
            }),
        }
    }

    /// The configuration.
    pub fn config(&self) -> GateConfig {
        self.inner.config
    }

    /// Takes a free permit, or a place in the queue (made by `waiter`), or refuses.
    fn enter<W>(&self, waiter: impl FnOnce() -> (Waiter, W)) -> Result<Entry<W>, AdmissionError> {
        let mut state = self.inner.lock();
        if state.available > 0 && state.queue.is_empty() {
            state.available -= 1;
            self.inner.granted(&mut state, Duration::ZERO);
            return Ok(Entry::Now(Permit {
                gate: Some(self.inner.clone()),
            }));
        }
        if state.queue.len() >= self.inner.config.max_pending {
            state.counters.rejected += 1;
            let pending = state.queue.len();
            drop(state);
            tracing::warn!(pending, "pool saturated: acquire rejected");
            return Err(AdmissionError::Saturated {
                pending,
                max_size: self.inner.config.max_size,
            });
        }
        let id = state.next_id;
        state.next_id += 1;
        let (w, mine) = waiter();
        state.queue.push_back((id, w));
        Ok(Entry::Wait(id, mine))
    }

    /// After a timeout: leave the queue; `true` if we were still in it (so no permit is on its way).
    fn leave(&self, id: u64) -> bool {
        let left = self.remove(id);
        if left {
            self.inner.lock().counters.timed_out += 1;
        }
        left
    }

    /// Takes waiter `id` out of the queue; `false` if it was no longer there (served already).
    fn remove(&self, id: u64) -> bool {
        let mut state = self.inner.lock();
        match state.queue.iter().position(|(i, _)| *i == id) {
            Some(pos) => {
                state.queue.remove(pos);
                true
            }
            None => false,
        }
    }

    fn record(&self, waited: Duration) {
        let mut state = self.inner.lock();
        self.inner.granted(&mut state, waited);
    }

    fn timeout(&self, waited: Duration) -> AdmissionError {
        tracing::warn!(?waited, "pool acquire timed out");
        AdmissionError::Timeout {
            waited,
            max_size: self.inner.config.max_size,
        }
    }

    /// Waits (blocking this thread) for a permit.
    pub fn acquire_blocking(&self) -> Result<Permit, AdmissionError> {
        let started = Instant::now();
        let (id, rx) = match self.enter(|| {
            let (tx, rx) = std::sync::mpsc::sync_channel(1);
            (Waiter::Thread(tx), rx)
        })? {
            Entry::Now(p) => return Ok(p),
            Entry::Wait(id, rx) => (id, rx),
        };
        match rx.recv_timeout(self.inner.config.timeout) {
            Ok(p) => {
                self.record(started.elapsed());
                Ok(p)
            }
            Err(_) => {
                if self.leave(id) {
                    return Err(self.timeout(started.elapsed()));
                }
                // A permit was sent between the timeout and leaving the queue: take it.
                let p = rx.recv().map_err(|_| self.timeout(started.elapsed()))?;
                self.record(started.elapsed());
                Ok(p)
            }
        }
    }

    /// Waits (asynchronously) for a permit. Dropping the future gives its place up; a permit already sent
    /// to it goes to the next waiter.
    pub async fn acquire(&self) -> Result<Permit, AdmissionError> {
        let started = Instant::now();
        let (id, mut rx) = match self.enter(|| {
            let (tx, rx) = tokio::sync::oneshot::channel();
            (Waiter::Task(tx), rx)
        })? {
            Entry::Now(p) => return Ok(p),
            Entry::Wait(id, rx) => (id, rx),
        };
        // If this future is dropped while it waits, the guard takes its place out of the queue at once, so
        // abandoned waiters never count against `max_pending`.
        let mut place = QueuePlace {
            gate: self,
            id,
            queued: true,
        };
        let result = match tokio::time::timeout(self.inner.config.timeout, &mut rx).await {
            Ok(Ok(p)) => {
                self.record(started.elapsed());
                Ok(p)
            }
            _ => {
                if self.leave(id) {
                    place.queued = false;
                    return Err(self.timeout(started.elapsed()));
                }
                let p = rx.await.map_err(|_| self.timeout(started.elapsed()))?;
                self.record(started.elapsed());
                Ok(p)
            }
        };
        // Served (or the permit is in hand): no longer in the queue.
        place.queued = false;
        result
    }

    /// The current snapshot.
    pub fn metrics(&self) -> GateMetrics {
        let state = self.inner.lock();
        let mut waits: Vec<Duration> = state.waits.iter().copied().collect();
        waits.sort();
        let pct = |p: f64| -> Duration {
            if waits.is_empty() {
                Duration::ZERO
            } else {
                waits[((waits.len() - 1) as f64 * p).round() as usize]
            }
        };
        GateMetrics {
            size: self.inner.config.max_size,
            in_use: self.inner.config.max_size - state.available,
            waiting: state.queue.len(),
            counters: state.counters,
            wait_p50: pct(0.5),
            wait_p99: pct(0.99),
            wait_max: waits.last().copied().unwrap_or_default(),
        }
    }
}

#[cfg(test)]
mod tests;
