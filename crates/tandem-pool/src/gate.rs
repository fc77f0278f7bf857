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
//! `.await`, and threads take it too. It is not taken at all while permits are free and nobody waits (see
//! `Inner`): that is the path a healthy pool runs all day, and its cost is measured by `tandem-bench pool`.

use std::collections::VecDeque;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::atomic::{AtomicU64, AtomicUsize};
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

/// What only the lock guards: the queue and the figures of acquires that waited in it.
struct State {
    queue: VecDeque<(u64, Waiter)>,
    next_id: u64,
    queued_acquired: u64,
    timed_out: u64,
    rejected: u64,
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
    /// Permits held (or on their way to a waiter).
    pub in_use: usize,
    /// Acquires waiting.
    pub waiting: usize,
    /// Counters.
    pub counters: Counters,
    /// Median wait of the acquires that got a permit: those that found one free count as zero, those that
    /// queued by their last 4,096 waits.
    pub wait_p50: Duration,
    /// 99th percentile of those waits.
    pub wait_p99: Duration,
    /// The longest of the recent queued waits.
    pub wait_max: Duration,
}

/// Queued waits kept for the percentiles.
const WAIT_SAMPLES: usize = 4_096;

/// The gate's state. The common case — a permit is free and nobody waits — touches only `word`: one
/// compare-and-swap takes a permit and counts the acquire, one add gives it back, so admission costs two
/// atomic operations when the pool is not saturated. The queue and its figures sit behind the lock, which
/// only waiters, their releasers and metrics take.
///
/// No wake-up is lost: a waiter publishes `queued` before it looks at the free permits again, and a
/// releaser adds its permit before it looks at `queued` (all `SeqCst`), so at least one of them sees the
/// other and hands the permit over under the lock.
// `repr(C)` with the two hot atomics first: they share a cache line with the `Arc`'s counts, which every
// permit also touches, so one acquire or release moves one line between cores, not two or three.
#[repr(C)]
struct Inner {
    /// Free permits (low [`AVAILABLE_BITS`] bits) and acquires granted (the rest; see [`Inner::fold`]).
    word: AtomicU64,
    /// Waiters in the queue (a copy of `queue.len()`, written under the lock, read without it).
    queued: AtomicUsize,
    /// Acquire counts moved out of `word` before they could overflow it.
    folded: AtomicU64,
    config: GateConfig,
    state: Mutex<State>,
    /// The `tandem_pool_waiting` gauge, set whenever the queue's length changes (under the lock).
    waiting: metrics::Gauge,
}

/// Bits of `word` that hold the free permits: a gate admits at most 2^20 − 1 at once.
const AVAILABLE_BITS: u32 = 20;
const AVAILABLE_MASK: u64 = (1 << AVAILABLE_BITS) - 1;
const COUNT_ONE: u64 = 1 << AVAILABLE_BITS;
/// When the count in `word` reaches this, it is moved to `folded` (once in 2^42 acquires).
const FOLD_AT: u64 = 1 << 62;

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes one free permit, if there is one, and counts the acquire.
    fn take_available(&self) -> bool {
        let mut cur = self.word.load(SeqCst);
        loop {
            if cur & AVAILABLE_MASK == 0 {
                return false;
            }
            let next = cur - 1 + COUNT_ONE;
            match self.word.compare_exchange_weak(cur, next, SeqCst, SeqCst) {
                Ok(_) => {
                    if cur < FOLD_AT && next >= FOLD_AT {
                        self.fold();
                    }
                    return true;
                }
                Err(actual) => cur = actual,
            }
        }
    }

    /// Moves 2^42 counted acquires out of `word`, so it never overflows. Only the acquire that crossed
    /// the mark does it.
    fn fold(&self) {
        self.word.fetch_sub(FOLD_AT, SeqCst);
        self.folded.fetch_add(FOLD_AT >> AVAILABLE_BITS, SeqCst);
    }

    fn available(&self) -> usize {
        (self.word.load(SeqCst) & AVAILABLE_MASK) as usize
    }

    fn acquired(&self) -> u64 {
        (self.word.load(SeqCst) >> AVAILABLE_BITS) + self.folded.load(SeqCst)
    }

    /// A permit came back: to the free count, then to the first waiter if anyone waits.
    fn release(self: &Arc<Self>) {
        self.word.fetch_add(1, SeqCst);
        if self.queued.load(SeqCst) > 0 {
            let mut state = self.lock();
            self.hand_over(&mut state);
        }
    }

    /// Under the lock: while permits are free and waiters wait, the first waiter gets one. A waiter that gave
    /// up (its channel is closed) is skipped and its permit goes back to the free count.
    fn hand_over(self: &Arc<Self>, state: &mut State) {
        while !state.queue.is_empty() && self.take_available() {
            let (_, waiter) = state.queue.pop_front().expect("not empty");
            self.queued.store(state.queue.len(), SeqCst);
            self.waiting.set(state.queue.len() as f64);
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
            if let Some(mut p) = refused {
                // Not through `release`: we hold the lock. Back to the free count, uncounted, and round
                // again.
                p.gate = None;
                self.word.fetch_sub(COUNT_ONE - 1, SeqCst);
            }
        }
    }

    /// Records the wait of an acquire that queued (its permit was counted when it was handed over).
    fn granted(&self, state: &mut State, waited: Duration) {
        state.queued_acquired += 1;
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
        Gate::observed(config, metrics::Gauge::noop())
    }

    /// A gate that keeps the `waiting` gauge at its queue's length.
    pub fn observed(config: GateConfig, waiting: metrics::Gauge) -> Gate {
        Gate {
            inner: Arc::new(Inner {
                word: AtomicU64::new(config.max_size.min(AVAILABLE_MASK as usize) as u64),
                queued: AtomicUsize::new(0),
                folded: AtomicU64::new(0),
                config,
                state: Mutex::new(State {
                    queue: VecDeque::new(),
                    next_id: 0,
                    queued_acquired: 0,
                    timed_out: 0,
                    rejected: 0,
                    waits: VecDeque::new(),
                }),
                waiting,
            }),
        }
    }

    /// The configuration.
    pub fn config(&self) -> GateConfig {
        self.inner.config
    }

    fn permit(&self) -> Permit {
        Permit {
            gate: Some(self.inner.clone()),
        }
    }

    /// Takes a free permit, or a place in the queue (made by `waiter`), or refuses.
    fn enter<W>(&self, waiter: impl FnOnce() -> (Waiter, W)) -> Result<Entry<W>, AdmissionError> {
        let inner = &self.inner;
        // ANCHOR: admission
        // Nobody waits and a permit is free: no lock at all.
        if inner.queued.load(SeqCst) == 0 && inner.take_available() {
            return Ok(Entry::Now(self.permit()));
        }
        let mut state = inner.lock();
        if state.queue.is_empty() && inner.take_available() {
            return Ok(Entry::Now(self.permit()));
        }
        // ANCHOR_END: admission
        if state.queue.len() >= inner.config.max_pending {
            state.rejected += 1;
            let pending = state.queue.len();
            drop(state);
            tracing::warn!(pending, "pool saturated: acquire rejected");
            return Err(AdmissionError::Saturated {
                pending,
                max_size: inner.config.max_size,
            });
        }
        let id = state.next_id;
        state.next_id += 1;
        let (w, mine) = waiter();
        state.queue.push_back((id, w));
        inner.queued.store(state.queue.len(), SeqCst);
        inner.waiting.set(state.queue.len() as f64);
        // A permit freed while `queued` still read 0 went to the free count: hand it over now.
        inner.hand_over(&mut state);
        Ok(Entry::Wait(id, mine))
    }

    /// After a timeout: leave the queue; `true` if we were still in it (so no permit is on its way).
    fn leave(&self, id: u64) -> bool {
        let mut state = self.inner.lock();
        let left = Self::remove_locked(&self.inner, &mut state, id);
        if left {
            state.timed_out += 1;
        }
        left
    }

    /// Takes waiter `id` out of the queue; `false` if it was no longer there (served already).
    fn remove(&self, id: u64) -> bool {
        let mut state = self.inner.lock();
        Self::remove_locked(&self.inner, &mut state, id)
    }

    fn remove_locked(inner: &Inner, state: &mut State, id: u64) -> bool {
        match state.queue.iter().position(|(i, _)| *i == id) {
            Some(pos) => {
                state.queue.remove(pos);
                inner.queued.store(state.queue.len(), SeqCst);
                inner.waiting.set(state.queue.len() as f64);
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
        self.acquire_blocking_waited().map(|(p, _)| p)
    }

    /// [`Gate::acquire_blocking`], with how long the acquire waited in the queue: zero when a permit was
    /// free, and then no clock was read (the free path stays as cheap as it can be).
    pub fn acquire_blocking_waited(&self) -> Result<(Permit, Duration), AdmissionError> {
        let (id, rx) = match self.enter(|| {
            let (tx, rx) = std::sync::mpsc::sync_channel(1);
            (Waiter::Thread(tx), rx)
        })? {
            Entry::Now(p) => return Ok((p, Duration::ZERO)),
            Entry::Wait(id, rx) => (id, rx),
        };
        let started = Instant::now();
        let p = match rx.recv_timeout(self.inner.config.timeout) {
            Ok(p) => p,
            Err(_) => {
                if self.leave(id) {
                    return Err(self.timeout(started.elapsed()));
                }
                // A permit was sent between the timeout and leaving the queue: take it.
                rx.recv().map_err(|_| self.timeout(started.elapsed()))?
            }
        };
        let waited = started.elapsed();
        self.record(waited);
        Ok((p, waited))
    }

    /// Waits (asynchronously) for a permit. Dropping the future gives its place up; a permit already sent
    /// to it goes to the next waiter.
    pub async fn acquire(&self) -> Result<Permit, AdmissionError> {
        self.acquire_waited().await.map(|(p, _)| p)
    }

    /// [`Gate::acquire`], with how long the acquire waited in the queue: zero when a permit was free, and
    /// then no clock was read.
    pub async fn acquire_waited(&self) -> Result<(Permit, Duration), AdmissionError> {
        let (id, mut rx) = match self.enter(|| {
            let (tx, rx) = tokio::sync::oneshot::channel();
            (Waiter::Task(tx), rx)
        })? {
            Entry::Now(p) => return Ok((p, Duration::ZERO)),
            Entry::Wait(id, rx) => (id, rx),
        };
        let started = Instant::now();
        // If this future is dropped while it waits, the guard takes its place out of the queue at once, so
        // abandoned waiters never count against `max_pending`.
        let mut place = QueuePlace {
            gate: self,
            id,
            queued: true,
        };
        let result = match tokio::time::timeout(self.inner.config.timeout, &mut rx).await {
            Ok(Ok(p)) => {
                let waited = started.elapsed();
                self.record(waited);
                Ok((p, waited))
            }
            _ => {
                if self.leave(id) {
                    place.queued = false;
                    return Err(self.timeout(started.elapsed()));
                }
                let p = rx.await.map_err(|_| self.timeout(started.elapsed()))?;
                let waited = started.elapsed();
                self.record(waited);
                Ok((p, waited))
            }
        };
        // Served (or the permit is in hand): no longer in the queue.
        place.queued = false;
        result
    }

    /// The current snapshot.
    pub fn metrics(&self) -> GateMetrics {
        let state = self.inner.lock();
        let total = self.inner.acquired();
        let fast = total.saturating_sub(state.queued_acquired);
        let mut waits: Vec<Duration> = state.waits.iter().copied().collect();
        waits.sort();
        // The free-permit acquires waited zero; the queued ones are represented by their recent waits.
        let zeros = if total == 0 {
            0.0
        } else {
            fast as f64 / total as f64
        };
        let pct = |p: f64| -> Duration {
            if waits.is_empty() || p <= zeros {
                return Duration::ZERO;
            }
            let q = (p - zeros) / (1.0 - zeros);
            waits[((waits.len() - 1) as f64 * q).round() as usize]
        };
        GateMetrics {
            size: self.inner.config.max_size,
            in_use: self
                .inner
                .config
                .max_size
                .saturating_sub(self.inner.available()),
            waiting: state.queue.len(),
            counters: Counters {
                acquired: total,
                timed_out: state.timed_out,
                rejected: state.rejected,
            },
            wait_p50: pct(0.5),
            wait_p99: pct(0.99),
            wait_max: waits.last().copied().unwrap_or_default(),
        }
    }
}

#[cfg(test)]
mod tests;
