//! SQLite for the async executor, through rusqlite: every connection lives on a worker thread of its own and
//! is fed calls over a channel; the caller awaits the answer, so no runtime thread ever blocks on SQLite.
//!
//! Compared with one `spawn_blocking` per call, the connection never moves between threads, and a call costs
//! one channel send and one wake-up each way. Calls on one connection run in the order they were sent, which
//! is what lets a connection given up mid-call go straight back to the pool: the cleanup it needs is queued
//! behind the call and runs before the next user's first call.
//!
//! The pool in front of the workers is small on purpose: the executor's [`Admission`] gate (when on) and a
//! semaphore of `max_size` slots bound the connections in use; idle workers wait in a stack (most recently
//! used first); a worker idle past `idle_timeout` (above `min_idle`) or older than `max_lifetime` is closed
//! when a checkout comes across it.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tandem_core::{ConnectOptions, Error, Result};
use tandem_pool::Admission;
use tandem_pool::PoolConfig;
use tandem_sqlite::{Connection, InterruptHandle};

type Job = Box<dyn FnOnce(&mut Connection) + Send>;

// ANCHOR: worker
/// One connection on its worker thread. Dropping it closes the channel; the thread closes the connection
/// once the calls already sent have run, and ends.
pub(crate) struct Worker {
    jobs: std::sync::mpsc::Sender<Job>,
    interrupt: Arc<InterruptHandle>,
    /// Cleared by the thread as it ends, and by a cleanup that could not end a transaction.
    fit: Arc<AtomicBool>,
    born: Instant,
    last_used: Instant,
}
// ANCHOR_END: worker

/// Interrupts the running statement when dropped armed: a caller that gives up stops its statement instead
/// of letting it run to its end.
struct InterruptOnDrop(Option<Arc<InterruptHandle>>);

impl Drop for InterruptOnDrop {
    fn drop(&mut self) {
        if let Some(i) = &self.0 {
            i.interrupt();
        }
    }
}

/// How long a worker polls for its next call before it parks: parking and being woken costs two context
/// switches, more than a point select; polling costs a core. The worker adapts: a call that arrived while it
/// polled doubles the next poll (up to [`SPIN_MAX`] yields), a poll that ended in parking halves it (down to
/// [`SPIN_MIN`]), so a connection in a tight request loop keeps answering without a wake-up and an idle or
/// lock-bound one stops burning the core others need. Measured here (`tandem-bench point`, 4 tasks, 2
/// cores): parking at once 75–78k selects/s, a fixed 64-yield poll 70–100k, this 136–167k.
struct Spin(usize);

const SPIN_MIN: usize = 16;
const SPIN_START: usize = 512;
const SPIN_MAX: usize = 2048;

impl Spin {
    fn new() -> Spin {
        Spin(SPIN_START)
    }

    /// The next call, or `None` once the connection's owner is gone.
    fn next_job(&mut self, rx: &std::sync::mpsc::Receiver<Job>) -> Option<Job> {
        for _ in 0..self.0 {
            match rx.try_recv() {
                Ok(job) => {
                    self.0 = (self.0 * 2).min(SPIN_MAX);
                    return Some(job);
                }
                Err(std::sync::mpsc::TryRecvError::Empty) => std::thread::yield_now(),
                Err(std::sync::mpsc::TryRecvError::Disconnected) => return None,
            }
        }
        self.0 = (self.0 / 2).max(SPIN_MIN);
        rx.recv().ok()
    }
}

/// Clears the worker's `fit` flag when its thread ends, by a panic included.
struct Ended(Arc<AtomicBool>);

impl Drop for Ended {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

impl Worker {
    /// Starts a thread and opens the connection on it.
    async fn spawn(options: &ConnectOptions) -> Result<Worker> {
        let (jobs, rx) = std::sync::mpsc::channel::<Job>();
        let (opened, answer) = tokio::sync::oneshot::channel();
        let fit = Arc::new(AtomicBool::new(true));
        let ended = Ended(fit.clone());
        let options = options.clone();
        std::thread::Builder::new()
            .name("tandem-sqlite".into())
            .spawn(move || {
                let _ended = ended;
                let mut conn = match Connection::open(&options) {
                    Ok(c) => c,
                    Err(e) => {
                        let _ = opened.send(Err(e));
                        return;
                    }
                };
                if opened.send(Ok(conn.interrupt_handle())).is_err() {
                    return;
                }
                let mut spin = Spin::new();
                while let Some(job) = spin.next_job(&rx) {
                    job(&mut conn);
                }
            })
            .map_err(|source| Error::Thread {
                what: "a SQLite worker thread",
                source,
            })?;
        let interrupt = answer.await.map_err(|_| Error::Panicked {
            message: "the SQLite worker thread panicked while opening".into(),
        })??;
        let now = Instant::now();
        Ok(Worker {
            jobs,
            interrupt: Arc::new(interrupt),
            fit,
            born: now,
            last_used: now,
        })
    }

    /// Sends `f` to the connection's thread now (calls run in the order sent) and returns a future of its
    /// result. Dropping that future interrupts the statement.
    pub(crate) fn call<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection) -> Result<R> + Send + 'static,
    ) -> impl std::future::Future<Output = Result<R>> + Send + 'static {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let sent = self.jobs.send(Box::new(move |c| {
            let _ = tx.send(f(c));
        }));
        let interrupt = self.interrupt.clone();
        async move {
            sent.map_err(|_| Error::Cancelled("the SQLite worker thread has ended".into()))?;
            let mut stop = InterruptOnDrop(Some(interrupt));
            let result = rx.await.map_err(|_| Error::Panicked {
                message: "a call on a SQLite worker thread panicked".into(),
            });
            stop.0 = None;
            result?
        }
    }

    /// Queues the end of a transaction its user abandoned; a connection still inside one afterwards is
    /// closed instead of reused.
    pub(crate) fn end_abandoned_transaction(&self) {
        let fit = self.fit.clone();
        let queued = self.jobs.send(Box::new(move |c| {
            if !c.end_abandoned_transaction() {
                fit.store(false, Ordering::Release);
            }
        }));
        if queued.is_err() {
            self.fit.store(false, Ordering::Release);
        }
    }

    /// Closes this connection when it is given back, instead of pooling it.
    pub(crate) fn close_on_drop(&self) {
        self.fit.store(false, Ordering::Release);
    }

    fn is_fit(&self) -> bool {
        self.fit.load(Ordering::Acquire)
    }
}

/// The workers of one database.
pub(crate) struct SqlitePool {
    options: ConnectOptions,
    config: PoolConfig,
    idle: Mutex<Vec<Worker>>,
    open: AtomicU32,
    slots: Arc<tokio::sync::Semaphore>,
    created: Arc<AtomicU64>,
}

/// A worker checked out of its pool; it goes back (or is closed, when unfit) on drop, before its slot
/// admits the next caller.
pub(crate) struct PooledWorker {
    worker: Option<Worker>,
    pool: Arc<SqlitePool>,
    _slot: tokio::sync::OwnedSemaphorePermit,
}

impl std::ops::Deref for PooledWorker {
    type Target = Worker;
    fn deref(&self) -> &Worker {
        self.worker.as_ref().expect("present until dropped")
    }
}

impl Drop for PooledWorker {
    fn drop(&mut self) {
        if let Some(mut w) = self.worker.take() {
            if w.is_fit() {
                w.last_used = Instant::now();
                self.pool.idle().push(w);
            } else {
                self.pool.open.fetch_sub(1, Ordering::Relaxed);
            }
        }
    }
}

impl SqlitePool {
    /// Opens one connection (so that a bad path is an error here), then warms up to `min_idle` within
    /// `connect_timeout`.
    pub(crate) async fn open(
        options: ConnectOptions,
        config: PoolConfig,
        admission: &Admission,
    ) -> Result<Arc<SqlitePool>> {
        let first = Worker::spawn(&options).await?;
        let created = admission.created_counter();
        created.fetch_add(1, Ordering::Relaxed);
        let wanted = config.effective_min_idle();
        let pool = Arc::new(SqlitePool {
            slots: Arc::new(tokio::sync::Semaphore::new(
                config.effective_max_size() as usize
            )),
            open: AtomicU32::new(1),
            idle: Mutex::new(vec![first]),
            created,
            options,
            config,
        });
        let started = Instant::now();
        let more = (1..wanted).map(|_| Worker::spawn(&pool.options));
        let opened = tokio::time::timeout(
            pool.config.connect_timeout,
            futures_util::future::join_all(more),
        )
        .await;
        let failed = |opened: u32, cause: Error| Error::PoolWarmUp {
            opened,
            wanted,
            waited: started.elapsed(),
            last_error: Some(Box::new(cause)),
        };
        let workers = opened.map_err(|_| {
            failed(
                1,
                Error::connect_timeout(&pool.options, pool.config.connect_timeout),
            )
        })?;
        for w in workers {
            let w = w.map_err(|e| failed(pool.open.load(Ordering::Relaxed), e))?;
            pool.open.fetch_add(1, Ordering::Relaxed);
            pool.created.fetch_add(1, Ordering::Relaxed);
            pool.idle().push(w);
        }
        Ok(pool)
    }

    fn idle(&self) -> std::sync::MutexGuard<'_, Vec<Worker>> {
        self.idle.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Connections open and idle.
    pub(crate) fn state(&self) -> (u32, u32) {
        let idle = self.idle().len() as u32;
        (self.open.load(Ordering::Relaxed), idle)
    }

    /// Whether a worker found idle is past its time.
    fn expired(&self, w: &Worker, now: Instant) -> bool {
        let old = self
            .config
            .max_lifetime
            .is_some_and(|l| now.duration_since(w.born) >= l);
        let idle_too_long = self
            .config
            .idle_timeout
            .is_some_and(|t| now.duration_since(w.last_used) >= t)
            && self.open.load(Ordering::Relaxed) > self.config.effective_min_idle();
        old || idle_too_long
    }

    /// A worker within `left` (`None` when none became free): an idle one, or a new one when none is idle.
    pub(crate) async fn checkout(self: &Arc<Self>, left: Duration) -> Result<Option<PooledWorker>> {
        let slot = match self.slots.clone().try_acquire_owned() {
            Ok(s) => s,
            Err(_) => match tokio::time::timeout(left, self.slots.clone().acquire_owned()).await {
                Ok(Ok(s)) => s,
                // The semaphore is never closed.
                Ok(Err(_)) | Err(_) => return Ok(None),
            },
        };
        let now = Instant::now();
        loop {
            let found = self.idle().pop();
            match found {
                Some(w) if w.is_fit() && !self.expired(&w, now) => {
                    return Ok(Some(self.lend(w, slot)));
                }
                Some(_) => {
                    self.open.fetch_sub(1, Ordering::Relaxed);
                }
                None => break,
            }
        }
        let w = Worker::spawn(&self.options).await?;
        self.open.fetch_add(1, Ordering::Relaxed);
        self.created.fetch_add(1, Ordering::Relaxed);
        Ok(Some(self.lend(w, slot)))
    }

    fn lend(self: &Arc<Self>, w: Worker, slot: tokio::sync::OwnedSemaphorePermit) -> PooledWorker {
        PooledWorker {
            worker: Some(w),
            pool: self.clone(),
            _slot: slot,
        }
    }
}
