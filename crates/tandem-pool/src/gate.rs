//! The admission gate: at most `max_size` [`Permit`]s, and a bounded queue of the acquires that wait for
//! one, served in arrival order with a bounded exception.
//!
//! An acquire that finds no free permit joins the queue if it holds fewer than `max_pending` waiters, and
//! fails at once with [`AdmissionError::Saturated`] if not; a waiter that gets nothing within the timeout
//! fails with [`AdmissionError::Timeout`] carrying how long it waited. Blocking threads and async tasks wait in
//! the same queue.
//!
//! # Who gets a freed permit
//! A released permit goes back to the free count, and the first waiter not yet told is told (a thread
//! unparked, a task woken); it takes the permit when it runs. A caller that is running already — typically
//! the one that just released, going on to its next statement — may take the permit first, and the told
//! waiter, finding none, waits on. That costs the waiter a little latency and saves two context switches
//! per checkout: handing every permit straight to the oldest waiter put a sleep and a wake-up into each of
//! the twenty checkouts of a `/queries?q=20` request on a thread-per-request server, at a fifth of the
//! throughput of the same server on a plain mutex and condition variable (`tandem-bench service`).
//!
//! The exception is bounded: every [`FAIR_EVERY`]th release while acquires wait, the free permits go
//! straight to the waiters that have waited longest (granted: nobody can take them first). So the oldest
//! waiter is passed over at most `FAIR_EVERY − 1` times in a row, waiters are served among themselves in
//! arrival order, and the deadline of each holds as before.
//!
//! Nothing is lost when a waiter gives up: a waiter leaves the queue itself, under the lock, and a permit
//! granted to it or a wake-up told to it passes to the next.
//!
//! Why a std `Mutex` and not Tokio's: the lock is held for a few pointer moves and never across an
//! `.await`, and threads take it too. It is not taken at all while permits are free and nobody waits (see
//! `Inner`): that is the path a healthy pool runs all day, and its cost is measured by `tandem-bench pool`.

use std::collections::VecDeque;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::atomic::{AtomicU64, AtomicUsize};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Poll, Waker};
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

/// Every this many releases while acquires wait, the freed permits are granted to the longest waiters
/// instead of being left for whoever takes them first.
pub const FAIR_EVERY: u32 = 16;

/// How a waiter is woken: a parked thread, or a task's waker (none before the task's first look).
enum Wake {
    Thread(std::thread::Thread),
    Task(Option<Waker>),
}

impl Wake {
    fn wake(&self) {
        match self {
            Wake::Thread(t) => t.unpark(),
            Wake::Task(Some(w)) => w.wake_by_ref(),
            Wake::Task(None) => {}
        }
    }
}

/// An acquire in the queue. Only the acquire itself takes its entry out (served, timed out or dropped).
struct Waiter {
    id: u64,
    since: Instant,
    wake: Wake,
    /// A permit was taken for it on a fair turn: it is in, whenever it next looks.
    granted: bool,
    /// Told a permit is free, and not yet looked: counted against the free permits others are told of.
    told: bool,
}

/// What only the lock guards: the queue and the figures of acquires that waited in it.
struct State {
    queue: VecDeque<Waiter>,
    next_id: u64,
    /// Waiters told and not yet looked.
    told: usize,
    /// Releases while acquires waited since the last fair turn.
    passed: u32,
    queued_acquired: u64,
    timed_out: u64,
    rejected: u64,
    waits: VecDeque<Duration>,
}

impl State {
    /// Where waiter `id` is in the queue, if it is there. Ids are given in arrival order and waiters
    /// leave from anywhere, never join in the middle: the queue stays sorted by id, and a search is
    /// O(log n) with thousands waiting.
    fn position(&self, id: u64) -> Option<usize> {
        self.queue.binary_search_by_key(&id, |w| w.id).ok()
    }
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
/// other and tells a waiter under the lock. A told waiter that finds the permit taken waits on; whoever
/// took it releases it later, and that release tells a waiter again.
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

    /// A permit came back: to the free count, then a waiter is told (or granted it) if anyone waits.
    fn release(self: &Arc<Self>) {
        self.word.fetch_add(1, SeqCst);
        if self.queued.load(SeqCst) > 0 {
            let mut state = self.lock();
            self.pass_on(&mut state, true);
        }
    }

    /// Under the lock, after a release (`released`) or a change in the queue: on a fair turn (every
    /// [`FAIR_EVERY`]th release while acquires wait) the free permits are taken for the longest waiters,
    /// which find them granted; otherwise the first waiters not yet told are told, as many as there are
    /// free permits no told waiter will look for, and take one themselves when they run — unless a running
    /// caller took it first.
    fn pass_on(&self, state: &mut State, released: bool) {
        if state.queue.is_empty() {
            return;
        }
        let State {
            queue,
            told,
            passed,
            ..
        } = state;
        if released {
            *passed += 1;
            if *passed >= FAIR_EVERY {
                let mut granted = false;
                for w in queue.iter_mut().filter(|w| !w.granted) {
                    if !self.take_available() {
                        break;
                    }
                    w.granted = true;
                    if std::mem::take(&mut w.told) {
                        *told -= 1;
                    }
                    w.wake.wake();
                    granted = true;
                }
                if granted {
                    *passed = 0;
                }
                // Nothing free (a running caller was quicker): the next release is the fair turn.
                return;
            }
        }
        let mut tell = self.available().saturating_sub(*told);
        for w in queue.iter_mut() {
            if tell == 0 {
                break;
            }
            if !w.granted && !w.told {
                w.told = true;
                *told += 1;
                w.wake.wake();
                tell -= 1;
            }
        }
    }

    /// Under the lock: waiter `id` looks. Its permit and how long it waited, if one was granted to it or
    /// one is free; otherwise it stays, to be woken through `waker` if it is a task.
    fn turn(
        self: &Arc<Self>,
        state: &mut State,
        id: u64,
        waker: Option<&Waker>,
    ) -> Option<(Permit, Duration)> {
        let pos = state.position(id)?;
        let w = &mut state.queue[pos];
        if std::mem::take(&mut w.told) {
            state.told -= 1;
        }
        if !w.granted && !self.take_available() {
            if let (Some(waker), Wake::Task(mine)) = (waker, &mut w.wake)
                && !mine.as_ref().is_some_and(|m| m.will_wake(waker))
            {
                *mine = Some(waker.clone());
            }
            return None;
        }
        let w = self.remove_at(state, pos);
        let waited = w.since.elapsed();
        self.record_wait(state, waited);
        // More permits free than told waiters (several came back at once): tell the next.
        self.pass_on(state, false);
        Some((
            Permit {
                gate: Some(self.clone()),
            },
            waited,
        ))
    }

    /// Under the lock: waiter `id` gives up (a deadline, or a dropped future). The waiter as it left, if
    /// it was still queued: `granted` says whether a permit had been granted to it — taken and counted;
    /// the caller keeps it or gives it back. A wake-up told to it passes to the next waiter.
    fn leave(&self, state: &mut State, id: u64) -> Option<Waiter> {
        let pos = state.position(id)?;
        let w = self.remove_at(state, pos);
        if w.told {
            state.told -= 1;
            self.pass_on(state, false);
        }
        Some(w)
    }

    fn remove_at(&self, state: &mut State, pos: usize) -> Waiter {
        let w = state.queue.remove(pos).expect("a position in the queue");
        self.queued.store(state.queue.len(), SeqCst);
        self.waiting.set(state.queue.len() as f64);
        w
    }

    /// Records the wait of an acquire that queued (its permit was counted when it was taken).
    fn record_wait(&self, state: &mut State, waited: Duration) {
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
            let inner = &self.gate.inner;
            let mut state = inner.lock();
            if inner.leave(&mut state, self.id).is_some_and(|w| w.granted) {
                // A permit granted and never used: back to the free count, uncounted, and on to the
                // next waiter (not through `release`: we hold the lock).
                inner.word.fetch_sub(COUNT_ONE - 1, SeqCst);
                inner.pass_on(&mut state, false);
            }
        }
    }
}

enum Entry {
    Now(Permit),
    Wait(u64),
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
                    told: 0,
                    passed: 0,
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

    /// Takes a free permit, or a place in the queue (woken through `wake`), or refuses.
    fn enter(&self, wake: impl FnOnce() -> Wake) -> Result<Entry, AdmissionError> {
        let inner = &self.inner;
        // ANCHOR: admission
        // A permit is free: in, at once, without a lock — even when a waiter has been told of it and has
        // not run yet. A running caller goes first; every `FAIR_EVERY`th release while callers wait, the
        // freed permit is granted to the longest waiter instead, out of this path's reach.
        if inner.take_available() {
            return Ok(Entry::Now(self.permit()));
        }
        let mut state = inner.lock();
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
        state.queue.push_back(Waiter {
            id,
            since: Instant::now(),
            wake: wake(),
            granted: false,
            told: false,
        });
        inner.queued.store(state.queue.len(), SeqCst);
        inner.waiting.set(state.queue.len() as f64);
        // A permit freed while `queued` still read 0 went to the free count: tell a waiter now (maybe
        // this one, which looks before it waits).
        inner.pass_on(&mut state, false);
        Ok(Entry::Wait(id))
    }

    /// Waiter `id` gives up at its deadline: the permit granted to it meanwhile, or `Timeout`.
    fn give_up(&self, id: u64) -> Result<(Permit, Duration), AdmissionError> {
        let mut state = self.inner.lock();
        let left = self.inner.leave(&mut state, id);
        let waited = left
            .as_ref()
            .map_or(self.inner.config.timeout, |w| w.since.elapsed());
        if left.is_some_and(|w| w.granted) {
            self.inner.record_wait(&mut state, waited);
            return Ok((self.permit(), waited));
        }
        state.timed_out += 1;
        drop(state);
        tracing::warn!(?waited, "pool acquire timed out");
        Err(AdmissionError::Timeout {
            waited,
            max_size: self.inner.config.max_size,
        })
    }

    /// Waits (blocking this thread) for a permit.
    pub fn acquire_blocking(&self) -> Result<Permit, AdmissionError> {
        self.acquire_blocking_waited().map(|(p, _)| p)
    }

    /// [`Gate::acquire_blocking`], with how long the acquire waited in the queue: zero when a permit was
    /// free, and then no clock was read (the free path stays as cheap as it can be).
    pub fn acquire_blocking_waited(&self) -> Result<(Permit, Duration), AdmissionError> {
        let id = match self.enter(|| Wake::Thread(std::thread::current()))? {
            Entry::Now(p) => return Ok((p, Duration::ZERO)),
            Entry::Wait(id) => id,
        };
        let deadline = Instant::now() + self.inner.config.timeout;
        loop {
            if let Some(got) = self.inner.turn(&mut self.inner.lock(), id, None) {
                return Ok(got);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return self.give_up(id);
            }
            // Woken early (told, granted, or an unpark meant for something else): look again.
            std::thread::park_timeout(left);
        }
    }

    /// Waits (asynchronously) for a permit. Dropping the future gives its place up; a permit already
    /// granted to it goes to the next waiter.
    pub async fn acquire(&self) -> Result<Permit, AdmissionError> {
        self.acquire_waited().await.map(|(p, _)| p)
    }

    /// [`Gate::acquire`], with how long the acquire waited in the queue: zero when a permit was free, and
    /// then no clock was read.
    pub async fn acquire_waited(&self) -> Result<(Permit, Duration), AdmissionError> {
        let id = match self.enter(|| Wake::Task(None))? {
            Entry::Now(p) => return Ok((p, Duration::ZERO)),
            Entry::Wait(id) => id,
        };
        // If this future is dropped while it waits, the guard takes its place out of the queue at once, so
        // abandoned waiters never count against `max_pending`, and passes on what was meant for it.
        let mut place = QueuePlace {
            gate: self,
            id,
            queued: true,
        };
        let turn = std::future::poll_fn(|cx| {
            match self
                .inner
                .turn(&mut self.inner.lock(), id, Some(cx.waker()))
            {
                Some(got) => Poll::Ready(got),
                None => Poll::Pending,
            }
        });
        let result = match tokio::time::timeout(self.inner.config.timeout, turn).await {
            Ok(got) => Ok(got),
            Err(_) => self.give_up(id),
        };
        // Served, or gone from the queue at its deadline.
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
