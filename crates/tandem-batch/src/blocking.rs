//! The blocking runner: partitions on OS threads, each chunk one transaction with its checkpoint. The
//! decisions are `job`'s (see `job::flow`); this is their I/O on `tandem-blocking`.

use std::sync::atomic::AtomicU64;
use std::time::Instant;
use tandem_blocking::Executor as _;

use tandem_blocking::{Database, PooledConnection};
use tandem_sql::FromRow;
use tandem_sql::prelude::*;

use crate::job::spans;
use crate::runner::*;

/// Creates the job repository tables if they are missing (and touches nothing when they are there).
pub fn prepare(db: &Database) -> tandem_core::Result<()> {
    let (present,): (i64,) = db.fetch_one(&repository_tables_statement(db.dialect()))?;
    if present == 2 {
        return Ok(());
    }
    db.create_table(&jx::table.create_table())?;
    db.create_table(&sx::table.create_table())
}

/// Runs (or resumes) `job` on `db`. Fails with [`JobError::AlreadyRunning`] when another run of the same
/// job (name and parameters) is under way, here or in another process.
pub fn run<S, T>(db: &Database, job: &BatchJob<S, T>) -> Result<JobReport, JobError>
where
    S: Entity<Key = i64> + FromRow + Send,
    T: Entity + Sync,
{
    let span = spans::run(job);
    let _in = span.enter();
    // The lock first: it needs no table, and two processes creating the tables at once can collide
    // (PostgreSQL's CREATE TABLE IF NOT EXISTS is not safe against a concurrent twin).
    let (lock, lease, tables) = lock(db, job)?;
    let not_lost = LeaseLost::default();
    let lost = lease.as_ref().map_or(&not_lost, |l| &*l.lost);
    let result = run_locked(db, job, lost, tables);
    if let Some(lease) = lease {
        lease.release(db);
    }
    // Released on the server before returning, so a rerun right after does not find it still held by a
    // session that is closing; the session then goes back to the pool.
    if let RunLock::Server(mut session) = lock
        && session
            .execute(&server_unlock_statement(db.dialect(), job_key(job)))
            .is_ok()
    {
        session.released();
    }
    result
}

fn run_locked<S, T>(
    db: &Database,
    job: &BatchJob<S, T>,
    lost: &LeaseLost,
    tables: bool,
) -> Result<JobReport, JobError>
where
    S: Entity<Key = i64> + FromRow + Send,
    T: Entity + Sync,
{
    let started = Instant::now();
    // The lock statement said whether the tables are there; SQLite's lock did not.
    if !tables {
        prepare(db)?;
    }
    let start = start(db, job)?;
    let failed_rows = AtomicU64::new(0);
    let run = RunContext {
        job,
        failed_rows: &failed_rows,
        lost,
    };
    let results: Vec<Result<PartitionReport, JobError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (start.steps.iter())
            .map(|step| {
                // Each partition's thread runs inside its span, a child of the run's.
                let span = spans::partition(step);
                scope.spawn(move || span.in_scope(|| run_step(db, run, step)))
            })
            .collect();
        (handles.into_iter().zip(&start.steps))
            .map(|(h, step)| {
                h.join().unwrap_or_else(|payload| {
                    Err(panicked(step, tandem_core::tx::panic_message(&*payload)))
                })
            })
            .collect()
    });
    let (plan, settle) = end_run(db.dialect(), &start, started, results)?.split();
    settle.after(record(db, &job.bookkeeping_options(), plan))
}

/// A held run lock; on MySQL/MariaDB, also the run's lease; and whether the lock statement found the job
/// repository's tables.
type Locks = (RunLock<PooledConnection>, Option<Lease>, bool);

/// Takes the job's run lock (see [`crate::lock`]); it is released when the returned guard is dropped.
fn lock<S, T>(db: &Database, job: &BatchJob<S, T>) -> Result<Locks, JobError> {
    let (statement, leased) = match lock_plan(db.options(), db.pool_id(), job)? {
        LockPlan::Local(local) => return Ok((RunLock::Local(local), None, false)),
        LockPlan::Server { statement, leased } => (statement, leased),
    };
    // Closed when dropped holding the lock (see `LockSession`).
    let session = LockSession::new(db.checkout()?);
    let conn = &*session;
    let row: LockRow = conn.fetch_one(&statement)?;
    let (tables, lease_table) = tables_found(&row);
    let (taken, node, _, _) = row;
    if taken != 1 {
        return Err(already_running(job));
    }
    let lease = leased
        .then(|| Lease::take(db, conn, LeaseClaim::new(job, node), lease_table))
        .transpose();
    if lease.is_err() {
        // Released before the refusal, as at a run's end: a rerun right after must not find the lock
        // still held by this session while it closes.
        let _ = conn.execute(&server_unlock_statement(db.dialect(), job_key(job)));
    }
    Ok((RunLock::Server(Box::new(session)), lease?, tables))
}

/// A MySQL/MariaDB run's lease on its job (see [`crate::lock`]), renewed by a thread of its own every third
/// of its length until released or dropped.
struct Lease {
    claim: LeaseClaim,
    lost: std::sync::Arc<LeaseLost>,
    /// Dropped to stop the renewing thread.
    stop: Option<std::sync::mpsc::Sender<()>>,
    renewer: Option<std::thread::JoinHandle<()>>,
}

impl Lease {
    /// Takes the lease for `claim` — in a transaction the cluster certifies, the lock session `conn`
    /// having made sure the lease table is there — and starts the thread that renews it.
    fn take(
        db: &Database,
        conn: &PooledConnection,
        claim: LeaseClaim,
        table_found: bool,
    ) -> Result<Lease, JobError> {
        if !table_found {
            conn.execute(&lease_table())?;
        }
        let held =
            db.transaction(
                |tx| match claim.write(tx.fetch_optional(&lease_read(claim.key))?) {
                    LeaseWrite::Write(write) => tx.execute(&write).map(|_| None),
                    LeaseWrite::Held(node, ms_left) => Ok(Some((node, ms_left))),
                },
            );
        lease_taken(held, &claim)?;
        let lost = std::sync::Arc::new(LeaseLost::leased(claim.length, claim.key, &claim.owner));
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let length = claim.length;
        let (db, flag, renew) = (
            db.clone(),
            lost.clone(),
            lease_renew(claim.key, &claim.owner, length),
        );
        let renewer = std::thread::Builder::new()
            .name("tandem-lease".into())
            .spawn(move || {
                let mut renewed = Instant::now();
                while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
                    stopped.recv_timeout(length / 3)
                {
                    if flag.stalled() || renewal_lost(db.execute(&renew), &mut renewed, length) {
                        return flag.set();
                    }
                }
            })
            .map_err(|source| tandem_core::Error::Thread {
                what: "the job's lease keeper thread",
                source,
            })?;
        Ok(Lease {
            claim,
            lost,
            stop: Some(stop),
            renewer: Some(renewer),
        })
    }

    /// Stops renewing and gives the lease back (through the pool: the lock's node may be the one that died).
    fn release(mut self, db: &Database) {
        self.stop_renewing();
        let _ = db.execute(&lease_release(self.claim.key, &self.claim.owner));
    }

    fn stop_renewing(&mut self) {
        drop(self.stop.take());
        if let Some(r) = self.renewer.take() {
            let _ = r.join();
        }
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.stop_renewing();
    }
}

/// Creates the run: what it reads and decides (one plan), then its execution row and its steps in one
/// transaction. A run that stops at any point leaves either all of its writes or none of them.
fn start<S: Entity, T>(db: &Database, job: &BatchJob<S, T>) -> Result<Start, JobError> {
    let opts = job.bookkeeping_options();
    let writes = db
        .run_atomically(&opts, start_reads(db.dialect(), job)?)?
        .decide(job)?;
    Ok(db.transaction_with(opts, |tx| {
        let execution = tx.repository::<JobExecution>().insert(&writes.execution)?;
        let (steps, resumed) = writes.steps(execution);
        // An empty source has no partitions: its run completes at once.
        let ids = if steps.is_empty() {
            Vec::new()
        } else {
            tx.repository::<StepExecution>().insert_all(&steps)?
        };
        Ok(writes.started(execution, steps, ids, resumed))
    })?)
}

fn run_step<S, T>(
    db: &Database,
    run: RunContext<'_, S, T>,
    step: &StepExecution,
) -> Result<PartitionReport, JobError>
where
    S: Entity<Key = i64> + FromRow + Send,
    T: Entity + Sync,
{
    let opts = run.job.write_options();
    let mut p = match Partition::open(run, step, db.dialect()) {
        Ok(p) => p,
        Err(completed) => return Ok(completed),
    };
    // Where the partition reads ahead (see `Partition::reads_ahead`), the next page is read on a thread of
    // its own while this page's chunks are written: one reader per partition for all its pages, so that it
    // keeps one connection (on SQLite, its thread's home, with its prepared statements).
    let ahead = p.reads_ahead();
    let result = std::thread::scope(|scope| -> Result<(), JobError> {
        let (ask, asked) = std::sync::mpsc::channel();
        let (answer, answered) = std::sync::mpsc::sync_channel(1);
        let reader = ahead.then(|| {
            // Its reads are the partition's: inside the partition's span.
            let span = tracing::Span::current();
            scope.spawn(move || {
                let _in = span.enter();
                for page in asked {
                    if answer.send(db.fetch_all::<S>(&page)).is_err() {
                        return;
                    }
                }
            })
        });
        let stopped = || panicked(step, "the page reader stopped".into());
        let written = (|| -> Result<(), JobError> {
            let mut page = db.fetch_all::<S>(&p.page(p.after()))?;
            loop {
                let Some(chunks) = p.process(page)? else {
                    return Ok(());
                };
                let next = p.page(p.next_after(&chunks));
                let next = if ahead && !p.last_page() {
                    ask.send(next).map_err(|_| stopped())?;
                    Next::Reading(())
                } else {
                    Next::Unread(next)
                };
                for chunk in chunks {
                    let span = spans::chunk(&chunk);
                    let _in = span.enter();
                    let written = match p.write(&chunk)? {
                        ChunkWrite::Plan(plan) => db.run_atomically(&opts, plan).map(|n| (n, 0)),
                        ChunkWrite::ByHand => db.transaction_with(opts.clone(), |tx| {
                            let inserted = if chunk.rows.is_empty() {
                                0
                            } else {
                                tx.repository::<T>()
                                    .batch_insert(&chunk.rows, &p.opts)?
                                    .inserted
                            };
                            let (checkpoint, counts) = p.checkpoint(&chunk, inserted);
                            tx.execute(&checkpoint)?;
                            if let Some(hold) = p.hold()
                                && tx.execute(&hold)? == 0
                            {
                                return Err(p.refused());
                            }
                            Ok(counts)
                        }),
                    };
                    let counts = p.written(written.map_err(JobError::from))?;
                    p.wrote(&chunk, counts);
                    if let Some(d) = p.delay() {
                        std::thread::sleep(d);
                    }
                }
                if p.ended() {
                    return Ok(());
                }
                page = match next {
                    Next::Reading(()) => answered.recv().map_err(|_| stopped())??,
                    Next::Unread(next) => db.fetch_all::<S>(&next)?,
                };
            }
        })();
        // The reader ends once asked for nothing more (after a read still under way, never cut short).
        drop(ask);
        match reader.map(|r| r.join()) {
            Some(Err(payload)) => Err(panicked(step, tandem_core::tx::panic_message(&*payload))),
            _ => written,
        }
    });
    let (plan, settle) = p.end(result)?.split();
    settle.after(record(db, &run.job.bookkeeping_options(), plan))
}

/// Runs the plan that records an ending, if there is one to run.
fn record(
    db: &Database,
    opts: &tandem_core::TxOptions,
    plan: Option<tandem_core::Plan<()>>,
) -> tandem_core::Result<()> {
    plan.map_or(Ok(()), |plan| db.run_atomically(opts, plan))
}

impl CloseOnDrop for PooledConnection {
    fn close_on_drop(&mut self) {
        PooledConnection::close_on_drop(self);
    }
}
