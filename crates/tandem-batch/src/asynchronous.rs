//! The async runner: partitions as tokio tasks, each chunk one transaction with its checkpoint. The
//! decisions are `job`'s (see `job::flow`); this is their I/O on `tandem-async`. Transactions are begun and
//! committed by hand (with `tandem_async::retry`) rather than through closures: a task's future must be
//! `Send`, which an async-closure transaction cannot promise on stable Rust.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Instant;
use tandem_async::Executor as _;

use tandem_async::{Database, PooledConnection, TxOptions, retry};
use tandem_core::Plan;
use tandem_sql::FromRow;
use tandem_sql::prelude::*;
use tracing::Instrument;

use crate::job::spans;
use crate::runner::*;

/// Creates the job repository tables if they are missing (and touches nothing when they are there).
pub async fn prepare(db: &Database) -> tandem_core::Result<()> {
    let (present,): (i64,) = db
        .fetch_one(&repository_tables_statement(db.dialect()))
        .await?;
    if present == 2 {
        return Ok(());
    }
    db.create_table(&jx::table.create_table()).await?;
    db.create_table(&sx::table.create_table()).await
}

/// Runs (or resumes) `job` on `db`; partitions run as tasks on the current tokio runtime. Fails with
/// [`JobError::AlreadyRunning`] when another run of the same job (name and parameters) is under way, here or
/// in another process.
pub async fn run<S, T>(db: &Database, job: &BatchJob<S, T>) -> Result<JobReport, JobError>
where
    S: Entity<Key = i64> + FromRow + Send + 'static,
    T: Entity + Sync + 'static,
{
    run_in_span(db, job).instrument(spans::run(job)).await
}

async fn run_in_span<S, T>(db: &Database, job: &BatchJob<S, T>) -> Result<JobReport, JobError>
where
    S: Entity<Key = i64> + FromRow + Send + 'static,
    T: Entity + Sync + 'static,
{
    // The lock first: it needs no table, and two processes creating the tables at once can collide
    // (PostgreSQL's CREATE TABLE IF NOT EXISTS is not safe against a concurrent twin).
    let (lock, lease, tables) = lock(db, job).await?;
    let lost = (lease.as_ref()).map_or_else(|| Arc::new(LeaseLost::default()), |l| l.lost.clone());
    let result = run_locked(db, job, lost, tables).await;
    if let Some(lease) = lease {
        lease.release(db).await;
    }
    // Released on the server before returning, so a rerun right after does not find it still held by a
    // session that is closing; the session then goes back to the pool. (If this future is dropped
    // instead, the connection is closed and the server drops the lock with the session, a moment later.)
    if let RunLock::Server(mut session) = lock {
        let unlock = server_unlock_statement(db.dialect(), job_key(job));
        if session.execute(&unlock).await.is_ok() {
            session.released();
        }
    }
    result
}

async fn run_locked<S, T>(
    db: &Database,
    job: &BatchJob<S, T>,
    lost: Arc<LeaseLost>,
    tables: bool,
) -> Result<JobReport, JobError>
where
    S: Entity<Key = i64> + FromRow + Send + 'static,
    T: Entity + Sync + 'static,
{
    let started = Instant::now();
    // The lock statement said whether the tables are there; SQLite's lock did not.
    if !tables {
        prepare(db).await?;
    }
    let start = start(db, job).await?;
    let failed_rows = Arc::new(AtomicU64::new(0));
    let tasks: Vec<_> = (start.steps.iter().cloned())
        .map(|step| {
            let (db, job, failed_rows, lost) =
                (db.clone(), job.clone(), failed_rows.clone(), lost.clone());
            // Each partition's task runs inside its span, a child of the run's: the span follows the
            // task onto whichever worker thread polls it.
            let span = spans::partition(&step);
            let partition = async move {
                let run = RunContext {
                    job: &job,
                    failed_rows: &failed_rows,
                    lost: &lost,
                };
                run_step(&db, run, &step).await
            };
            tokio::spawn(partition.instrument(span))
        })
        .collect();
    let mut results = Vec::with_capacity(tasks.len());
    for (task, step) in tasks.into_iter().zip(&start.steps) {
        results.push(task.await.unwrap_or_else(|e| {
            Err(panicked(
                step,
                match e.is_panic() {
                    true => tandem_core::tx::panic_message(&*e.into_panic()),
                    false => "the task was cancelled".into(),
                },
            ))
        }));
    }
    let (plan, settle) = end_run(db.dialect(), &start, started, results)?.split();
    settle.after(record(db, &job.bookkeeping_options(), plan).await)
}

/// A held run lock; on MySQL/MariaDB, also the run's lease; and whether the lock statement found the job
/// repository's tables.
type Locks = (RunLock<PooledConnection>, Option<Lease>, bool);

/// Takes the job's run lock (see [`crate::lock`]); it is released when the returned guard is dropped —
/// also when the run's future is dropped midway.
async fn lock<S, T>(db: &Database, job: &BatchJob<S, T>) -> Result<Locks, JobError> {
    let (statement, leased) = match lock_plan(db.options(), db.pool_id(), job)? {
        LockPlan::Local(local) => return Ok((RunLock::Local(local), None, false)),
        LockPlan::Server { statement, leased } => (statement, leased),
    };
    // Closed when dropped holding the lock (see `LockSession`).
    let session = LockSession::new(db.checkout().await?);
    let conn = &*session;
    let row: LockRow = conn.fetch_one(&statement).await?;
    let (tables, lease_table) = tables_found(&row);
    let (taken, node, _, _) = row;
    if taken != 1 {
        return Err(already_running(job));
    }
    let lease = match leased {
        true => Lease::take(db, conn, LeaseClaim::new(job, node), lease_table)
            .await
            .map(Some),
        false => Ok(None),
    };
    if lease.is_err() {
        // Released before the refusal, as at a run's end: a rerun right after must not find the lock
        // still held by this session while it closes.
        let unlock = server_unlock_statement(db.dialect(), job_key(job));
        let _ = conn.execute(&unlock).await;
    }
    Ok((RunLock::Server(Box::new(session)), lease?, tables))
}

/// A MySQL/MariaDB run's lease on its job (see [`crate::lock`]), renewed by a task every third of its length
/// until released; dropped, the task stops (the lease then expires, or a rerun on this node takes it over
/// at once).
struct Lease {
    claim: LeaseClaim,
    lost: Arc<LeaseLost>,
    renewer: tokio::task::JoinHandle<()>,
}

impl Lease {
    /// Takes the lease for `claim` in a transaction the cluster certifies (begun by hand, so that the
    /// future stays `Send`), once the lock session `conn` made sure the lease table is there; then spawns
    /// the renewing task.
    async fn take(
        db: &Database,
        conn: &PooledConnection,
        claim: LeaseClaim,
        table_found: bool,
    ) -> Result<Lease, JobError> {
        if !table_found {
            conn.execute(&lease_table()).await?;
        }
        let held = retry(&TxOptions::default(), || async {
            let tx = db.begin(TxOptions::default()).await?;
            let row = tx.fetch_optional(&lease_read(claim.key)).await?;
            let held = match claim.write(row) {
                LeaseWrite::Write(write) => tx.execute(&write).await.map(|_| None)?,
                LeaseWrite::Held(node, ms_left) => Some((node, ms_left)),
            };
            tx.commit().await.map(|()| held)
        })
        .await;
        lease_taken(held, &claim)?;
        let lost = Arc::new(LeaseLost::leased(claim.length, claim.key, &claim.owner));
        let length = claim.length;
        let (db, flag) = (db.clone(), lost.clone());
        let renew = lease_renew(claim.key, &claim.owner, length);
        let renewer = tokio::spawn(async move {
            let mut renewed = Instant::now();
            loop {
                tokio::time::sleep(length / 3).await;
                if flag.stalled() || renewal_lost(db.execute(&renew).await, &mut renewed, length) {
                    return flag.set();
                }
            }
        });
        Ok(Lease {
            claim,
            lost,
            renewer,
        })
    }

    /// Stops renewing and gives the lease back (through the pool: the lock's node may be the one that died).
    async fn release(self, db: &Database) {
        self.renewer.abort();
        let release = lease_release(self.claim.key, &self.claim.owner);
        let _ = db.execute(&release).await;
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.renewer.abort();
    }
}

/// Where a partition's statements run: on a connection it keeps for its run, or on the pool (a checkout
/// each).
enum Via {
    Kept(PooledConnection),
    Pool(Database),
}

impl Via {
    /// A connection from `db` to keep, or the pool itself.
    async fn take(db: &Database, keep: bool) -> tandem_core::Result<Via> {
        Ok(match keep {
            true => Via::Kept(db.checkout().await?),
            false => Via::Pool(db.clone()),
        })
    }

    async fn fetch_all<S: FromRow + Send>(
        &self,
        page: &impl Render,
    ) -> tandem_core::Result<Vec<S>> {
        match self {
            Via::Kept(conn) => conn.fetch_all(page).await,
            Via::Pool(db) => db.fetch_all(page).await,
        }
    }

    async fn run_atomically<R>(&self, opts: &TxOptions, plan: Plan<R>) -> tandem_core::Result<R> {
        match self {
            Via::Kept(conn) => conn.run_atomically(opts, plan).await,
            Via::Pool(db) => db.run_atomically(opts, plan).await,
        }
    }
}

/// Creates the run: what it reads and decides (one plan), then its execution row and its steps in one
/// transaction. A run that stops at any point leaves either all of its writes or none of them.
async fn start<S: Entity, T>(db: &Database, job: &BatchJob<S, T>) -> Result<Start, JobError> {
    let opts = job.bookkeeping_options();
    let writes = (db
        .run_atomically(&opts, start_reads(db.dialect(), job)?)
        .await?)
        .decide(job)?;
    Ok(retry(&opts, || async {
        let tx = db.begin(opts.clone()).await?;
        let execution = tx
            .repository::<JobExecution>()
            .insert(&writes.execution)
            .await?;
        let (steps, resumed) = writes.steps(execution);
        // An empty source has no partitions: its run completes at once.
        let ids = if steps.is_empty() {
            Vec::new()
        } else {
            tx.repository::<StepExecution>().insert_all(&steps).await?
        };
        tx.commit().await?;
        Ok::<_, tandem_core::Error>(writes.started(execution, steps, ids, resumed))
    })
    .await?)
}

async fn run_step<S, T>(
    db: &Database,
    run: RunContext<'_, S, T>,
    step: &StepExecution,
) -> Result<PartitionReport, JobError>
where
    S: Entity<Key = i64> + FromRow + Send + 'static,
    T: Entity + Sync + 'static,
{
    let opts = run.job.write_options();
    let mut p = match Partition::open(run, step, db.dialect()) {
        Ok(p) => p,
        Err(completed) => return Ok(completed),
    };
    // Where the partition reads ahead (see `Partition::reads_ahead`), the next page is read in a task of
    // its own while this page's chunks are written. A read left running when the step fails finishes on
    // its own; it is never cut short mid-statement.
    let ahead = p.reads_ahead();
    let keep = p.kept_connections(db.config().max_size);
    let result = async {
        // The connections the partition keeps for its run (see `Partition::kept_connections`): they go
        // back to the pool at the end of this block, before the step is recorded as ended through the pool
        // (a lost connection must not keep the step from being ended).
        let writer = Via::take(db, keep >= 1).await?;
        let mut reader = Some(Via::take(db, keep >= 2).await?);
        let mut page = writer.fetch_all::<S>(&p.page(p.after())).await?;
        loop {
            let Some(chunks) = p.process(page)? else {
                return Ok(());
            };
            let next = p.page(p.next_after(&chunks));
            // Where the partition reads ahead, the next page is read in a task of its own while this
            // page's chunks are written; the task hands its connection back with the rows. A read left
            // running when the step fails finishes on its own; it is never cut short mid-statement.
            let next = match reader.take() {
                Some(on) if ahead && !p.last_page() => {
                    // Its read is the partition's: inside the partition's span.
                    let read = async move {
                        let rows = on.fetch_all::<S>(&next).await;
                        (on, rows)
                    };
                    Next::Reading(tokio::spawn(read.instrument(tracing::Span::current())))
                }
                kept => {
                    reader = kept;
                    Next::Unread(next)
                }
            };
            for chunk in chunks {
                let span = spans::chunk(&chunk);
                let write = span.in_scope(|| p.write(&chunk))?;
                let written = async {
                    match write {
                        ChunkWrite::Plan(plan) => {
                            writer.run_atomically(&opts, plan).await.map(|n| (n, 0))
                        }
                        ChunkWrite::ByHand => {
                            retry(&opts, || async {
                                let tx = db.begin(opts.clone()).await?;
                                let inserted = if chunk.rows.is_empty() {
                                    0
                                } else {
                                    let r = tx.repository::<T>();
                                    r.batch_insert(&chunk.rows, &p.opts).await?.inserted
                                };
                                let (checkpoint, counts) = p.checkpoint(&chunk, inserted);
                                tx.execute(&checkpoint).await?;
                                if let Some(hold) = p.hold()
                                    && tx.execute(&hold).await? == 0
                                {
                                    return Err(p.refused());
                                }
                                tx.commit().await.map(|()| counts)
                            })
                            .await
                        }
                    }
                }
                .instrument(span.clone())
                .await;
                let counts = span.in_scope(|| p.written(written.map_err(JobError::from)))?;
                p.wrote(&chunk, counts);
                if let Some(d) = p.delay() {
                    tokio::time::sleep(d).await;
                }
            }
            if p.ended() {
                return Ok(());
            }
            page = match next {
                Next::Reading(reading) => {
                    let (on, rows) =
                        (reading.await).map_err(|e| panicked(step, format!("a page read: {e}")))?;
                    reader = Some(on);
                    rows?
                }
                Next::Unread(next) => writer.fetch_all::<S>(&next).await?,
            };
        }
    }
    .await;
    let (plan, settle) = p.end(result)?.split();
    settle.after(record(db, &run.job.bookkeeping_options(), plan).await)
}

/// Runs the plan that records an ending, if there is one to run.
async fn record(
    db: &Database,
    opts: &TxOptions,
    plan: Option<Plan<()>>,
) -> tandem_core::Result<()> {
    match plan {
        Some(plan) => db.run_atomically(opts, plan).await,
        None => Ok(()),
    }
}

impl CloseOnDrop for PooledConnection {
    fn close_on_drop(&mut self) {
        PooledConnection::close_on_drop(self);
    }
}
