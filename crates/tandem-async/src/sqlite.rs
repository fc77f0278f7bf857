//! SQLite for the async executor, through rusqlite: every connection lives on a worker thread of its own and
//! is fed calls over a channel; the caller awaits the answer, so no runtime thread ever waits on SQLite (a
//! key lookup may run on one, below, but never waits for a lock there).
//!
//! Compared with one `spawn_blocking` per call, a call costs one channel send and one wake-up each way. Calls
//! on one connection run in the order they were sent, which is what lets a connection given up mid-call go
//! straight back to the pool: the cleanup it needs is queued behind the call and runs before the next
//! user's first call.
//!
//! One kind of call skips the trip: a repository's key lookup ([`Worker::run_here`]), one statement that
//! reads at most one row through the key's index, runs on the caller's own thread when nothing is queued
//! for the worker, and only if SQLite can answer it without waiting for another connection's lock
//! (otherwise it goes to the worker like any call). The two wake-ups cost more than the lookup itself.
//!
//! The pool in front of the workers is the executor's [`NativePool`] (idle workers, most recently used
//! first, behind the admission gate that bounds them); [`SqliteOpener`] opens them.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

use tandem_core::plan::{Done, Sink};
use tandem_core::{ConnectOptions, Error, Result, WorkerWait};
use tandem_sql::Rendered;
use tandem_sqlite::{Connection, InterruptHandle};

use crate::native::{NativePool, Opener, Pooled};

type Job = Box<dyn FnOnce(&mut Connection) + Send>;

/// One connection on its worker thread. Dropping it closes the channel; the thread closes the connection
/// once the calls already sent have run, and ends.
pub(crate) struct Worker {
    jobs: std::sync::mpsc::Sender<Job>,
    interrupt: Arc<InterruptHandle>,
    /// Cleared by the thread as it ends, and by a cleanup that could not end a transaction.
    fit: Arc<AtomicBool>,
    /// The connection: locked by the thread while it runs a call, and by a key lookup run where it was
    /// made. The thread takes it out and closes it as it ends.
    conn: Arc<Mutex<Option<Connection>>>,
    /// Calls sent and not yet run to their end.
    queued: Arc<AtomicUsize>,
}

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

// ANCHOR: worker
/// How long a worker polls for its next call before it parks: parking and being woken costs two context
/// switches, more than a point select; polling costs a core. The worker adapts: a call that arrived while it
/// polled doubles the next poll (up to [`SPIN_MAX`] yields), a poll that ended in parking halves it (down to
/// [`SPIN_MIN`]), so a connection in a tight request loop keeps answering without a wake-up and an idle or
/// lock-bound one stops burning the core others need. Measured here with point selects on the worker
/// (`tandem-bench point`, 4 tasks, 2 cores, before key lookups ran on the caller's thread): parking at
/// once 75–78k selects/s, a fixed 64-yield poll 70–100k, this 136–167k. With
/// `?worker_wait=park` ([`WorkerWait::Park`]) the worker parks at once, every time.
struct Spin {
    polls: usize,
    adaptive: bool,
}

const SPIN_MIN: usize = 16;
const SPIN_START: usize = 512;
const SPIN_MAX: usize = 2048;

impl Spin {
    fn new(wait: WorkerWait) -> Spin {
        match wait {
            WorkerWait::Poll => Spin {
                polls: SPIN_START,
                adaptive: true,
            },
            WorkerWait::Park => Spin {
                polls: 0,
                adaptive: false,
            },
        }
    }

    /// The next call, or `None` once the connection's owner is gone.
    fn next_job(&mut self, rx: &std::sync::mpsc::Receiver<Job>) -> Option<Job> {
        for _ in 0..self.polls {
            match rx.try_recv() {
                Ok(job) => {
                    self.polls = (self.polls * 2).min(SPIN_MAX);
                    return Some(job);
                }
                Err(std::sync::mpsc::TryRecvError::Empty) => std::thread::yield_now(),
                Err(std::sync::mpsc::TryRecvError::Disconnected) => return None,
            }
        }
        if self.adaptive {
            self.polls = (self.polls / 2).max(SPIN_MIN);
        }
        rx.recv().ok()
    }
}
// ANCHOR_END: worker

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
        let queued = Arc::new(AtomicUsize::new(0));
        let run = queued.clone();
        let options = options.clone();
        std::thread::Builder::new()
            .name("tandem-sqlite".into())
            .spawn(move || {
                let _ended = ended;
                let conn = match Connection::open(&options) {
                    Ok(c) => c,
                    Err(e) => {
                        let _ = opened.send(Err(e));
                        return;
                    }
                };
                let interrupt = conn.interrupt_handle();
                let conn = Arc::new(Mutex::new(Some(conn)));
                if opened.send(Ok((interrupt, conn.clone()))).is_err() {
                    return;
                }
                let mut spin = Spin::new(options.sqlite_worker_wait);
                while let Some(job) = spin.next_job(&rx) {
                    // A call that panicked ended this thread with the lock held: nothing runs after it.
                    let mut held = conn.lock().unwrap_or_else(PoisonError::into_inner);
                    if let Some(c) = held.as_mut() {
                        job(c);
                    }
                    drop(held);
                    run.fetch_sub(1, Ordering::Release);
                }
                // Closed here, not on whichever thread drops the last handle.
                drop(conn.lock().unwrap_or_else(PoisonError::into_inner).take());
            })
            .map_err(|source| Error::Thread {
                what: "a SQLite worker thread",
                source,
            })?;
        let (interrupt, conn) = answer.await.map_err(|_| Error::Panicked {
            message: "the SQLite worker thread panicked while opening".into(),
        })??;
        Ok(Worker {
            jobs,
            interrupt: Arc::new(interrupt),
            fit,
            conn,
            queued,
        })
    }

    /// Sends a call to the thread, counted until it has run.
    fn send(&self, job: Job) -> std::result::Result<(), std::sync::mpsc::SendError<Job>> {
        self.queued.fetch_add(1, Ordering::Relaxed);
        let sent = self.jobs.send(job);
        if sent.is_err() {
            self.queued.fetch_sub(1, Ordering::Relaxed);
        }
        sent
    }

    /// Runs a key lookup here, on the caller's thread, without waiting for any lock: `None` when it has to
    /// go to the worker instead — a call is still queued or running there (calls keep their order), the
    /// thread has ended, or SQLite answered busy. The caller holds this worker checked out, so no one else
    /// sends it calls meanwhile.
    pub(crate) fn run_here(&self, r: &Rendered, sink: &mut Sink<'_>) -> Option<Result<Done>> {
        if !self.is_fit() || self.queued.load(Ordering::Acquire) != 0 {
            return None;
        }
        let mut held = self.conn.try_lock().ok()?;
        held.as_mut()?.run_without_waiting(r, sink).transpose()
    }

    /// Sends `f` to the connection's thread now (calls run in the order sent) and returns a future of its
    /// result. Dropping that future interrupts the statement.
    pub(crate) fn call<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection) -> Result<R> + Send + 'static,
    ) -> impl std::future::Future<Output = Result<R>> + Send + 'static {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let sent = self.send(Box::new(move |c| {
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
        let queued = self.send(Box::new(move |c| {
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

/// Opens the worker threads of one database, for its [`NativePool`].
pub(crate) struct SqliteOpener {
    pub(crate) options: ConnectOptions,
}

impl Opener for SqliteOpener {
    type Conn = Worker;
    /// A worker is a thread of this process, with no server to go away.
    const ASKS: bool = false;

    async fn open(&self) -> Result<Worker> {
        Worker::spawn(&self.options).await
    }

    /// A worker whose thread ended, or whose abandoned transaction could not be ended, is closed.
    fn fit(w: &Worker) -> bool {
        w.is_fit()
    }
}

/// The workers of one database.
pub(crate) type SqlitePool = NativePool<SqliteOpener>;

/// A worker checked out of its pool; it goes back when dropped (an unfit one is closed at its next
/// checkout).
pub(crate) type PooledWorker = Pooled<SqliteOpener>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use tandem_sql::{Dialect, Render as _};

    /// The value of `v` as a lookup run here reads it, or `None` when the lookup has to go to the worker.
    fn read_here(w: &Worker) -> Option<i64> {
        let read = tandem_sql::raw("SELECT v FROM t WHERE id = 1", vec![])
            .render(Dialect::Sqlite)
            .unwrap();
        let mut seen = None;
        let done = w.run_here(&read, &mut |cells| {
            seen = cells.take(0)?.as_i64();
            Ok(false)
        })?;
        done.unwrap();
        Some(seen.expect("the row"))
    }

    /// [`read_here`] once the worker is free: it counts a call done just after the call answered.
    async fn read_here_soon(w: &Worker) -> i64 {
        for _ in 0..10_000 {
            if let Some(v) = read_here(w) {
                return v;
            }
            tokio::time::sleep(Duration::from_micros(100)).await;
        }
        panic!("the worker never became free");
    }

    /// A lookup runs on the caller's thread only when no call is queued or running on the worker: while
    /// one is, it is refused (the caller sends it to the worker, behind that call), and once the call has
    /// run, a lookup here sees what the call wrote.
    #[test]
    fn run_here_never_runs_ahead_of_a_call_sent_before_it() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let options = ConnectOptions::parse("sqlite::memory:").unwrap();
            let w = Worker::spawn(&options).await.unwrap();
            w.call(|c| c.simple("CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER); INSERT INTO t VALUES (1, 1)"))
                .await
                .unwrap();
            assert_eq!(read_here_soon(&w).await, 1, "nothing queued: answered here");

            let (release, hold) = std::sync::mpsc::channel::<()>();
            let held = w.call(move |c| {
                hold.recv().ok();
                c.simple("UPDATE t SET v = 2 WHERE id = 1")
            });
            assert_eq!(read_here(&w), None, "a call is queued or running");
            release.send(()).unwrap();
            held.await.unwrap();
            assert_eq!(read_here_soon(&w).await, 2, "the call sent first ran first");
        });
    }
}
