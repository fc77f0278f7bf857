//! The async runner: partitions as tokio tasks, each chunk one transaction with its checkpoint.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Instant;
use tandem_async::Executor as _;

use futures_util::TryStreamExt;
use tandem_async::{BatchOptions, BatchTransaction, Database, Transaction, TxOptions};
use tandem_sql::FromRow;
use tandem_sql::prelude::*;

use crate::job::{
    BatchJob, JobError, JobReport, PartitionReport, Start, abandon_statement, bounds_statement,
    check_last_run, checkpoint_statement, chunk_plan, completed_run_query, end_job_statement,
    end_step_statement, new_execution, new_steps, page_statement, process_page, resume_query,
    set_step_ids, steps_query,
};
use crate::lock::{
    LeaseLost, LeaseStep, RunLock, already_running, job_key, lease_insert, lease_read,
    lease_release, lease_renew, lease_step, lease_table, lease_take_over, local_lock, new_owner,
    node_statement, server_lock_statement, server_unlock_statement,
};
use crate::model::{
    JobExecution, RunStatus, StepExecution, batch_job_execution as jx, batch_step_execution as sx,
};

/// Creates the job repository tables if they are missing.
pub async fn prepare(db: &Database) -> tandem_core::Result<()> {
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
    // The lock first: it needs no table, and two processes creating the tables at once can collide
    // (PostgreSQL's CREATE TABLE IF NOT EXISTS is not safe against a concurrent twin).
    let (lock, lease) = lock(db, job).await?;
    let lost = lease
        .as_ref()
        .map_or_else(|| Arc::new(LeaseLost::default()), |l| l.lost.clone());
    let result = run_locked(db, job, lost).await;
    if let Some(lease) = lease {
        lease.release(db).await;
    }
    // Released on the server before returning, so a rerun right after does not find it still held by a
    // session that is closing. (If this future is dropped instead, the connection is closed and the server
    // drops the lock with the session, a moment later.)
    if let RunLock::Server(conn) = lock {
        let _ = conn
            .execute(&server_unlock_statement(db.dialect(), job_key(job)))
            .await;
    }
    result
}

async fn run_locked<S, T>(
    db: &Database,
    job: &BatchJob<S, T>,
    lost: Arc<LeaseLost>,
) -> Result<JobReport, JobError>
where
    S: Entity<Key = i64> + FromRow + Send + 'static,
    T: Entity + Sync + 'static,
{
    let started = Instant::now();
    prepare(db).await?;
    let Start {
        execution,
        steps,
        resumed,
        source_rows,
    } = {
        // begin/commit rather than a closure: the caller's future must be Send. Run again, as the blocking
        // runner's transaction does, when it meets a deadlock or a serialization failure (on a Galera
        // cluster: a certification failure at COMMIT, error 1213).
        let opts = job.write_options();
        let mut attempts = tandem_core::Attempts::new(&opts);
        loop {
            let attempt = async {
                let tx = db.begin(TxOptions::default()).await?;
                match start(&tx, job).await {
                    Ok(start) => {
                        tx.commit().await?;
                        Ok(start)
                    }
                    Err(e) => {
                        let _ = tx.rollback().await;
                        Err(e)
                    }
                }
            };
            match attempt.await {
                Err(JobError::Database(e)) if attempts.again(&e, false) => {
                    tokio::time::sleep(attempts.pause()).await;
                    continue;
                }
                done => break done?,
            }
        }
    };
    let failed_rows = Arc::new(AtomicU64::new(0));
    let names: Vec<String> = steps.iter().map(|s| s.step_name.clone()).collect();
    let tasks: Vec<_> = steps
        .into_iter()
        .map(|step| {
            let (db, job, failed_rows, lost) =
                (db.clone(), job.clone(), failed_rows.clone(), lost.clone());
            tokio::spawn(async move { run_step(&db, &job, &step, &failed_rows, &lost).await })
        })
        .collect();
    let mut results = Vec::with_capacity(tasks.len());
    for (t, partition) in tasks.into_iter().zip(names) {
        results.push(match t.await {
            Ok(r) => r,
            Err(e) => Err(JobError::Panicked {
                partition,
                message: if e.is_panic() {
                    tandem_core::tx::panic_message(&*e.into_panic())
                } else {
                    "the task was cancelled".into()
                },
            }),
        });
    }
    let (mut report, outcome) =
        crate::job::assemble(execution, resumed, started, source_rows, results);
    report.duration = started.elapsed();
    let totals = (report.read, report.written, report.skipped);
    match outcome {
        Ok(()) => {
            let end = end_job_statement(execution, RunStatus::Completed, totals, None);
            tandem_async::retry(&job.write_options(), || db.execute(&end)).await?;
            Ok(report)
        }
        Err(e) => {
            let _ = db
                .execute(&end_job_statement(
                    execution,
                    RunStatus::Failed,
                    totals,
                    Some(e.to_string()),
                ))
                .await;
            Err(e)
        }
    }
}

/// Takes the job's run lock (see [`crate::lock`]); it is released when the returned guard is dropped —
/// also when the run's future is dropped midway.
async fn lock<S, T>(
    db: &Database,
    job: &BatchJob<S, T>,
) -> Result<(RunLock<tandem_async::PooledConnection>, Option<Lease>), JobError> {
    if let Some(local) = local_lock(db.options(), db.pool_id(), job)? {
        return Ok((RunLock::Local(local), None));
    }
    let sql = server_lock_statement(db.dialect(), job_key(job)).expect("server engines lock");
    let mut conn = db.checkout().await?;
    // Closed, not pooled, when the run ends: the server drops the lock with the session.
    conn.close_on_drop();
    let (taken,): (i64,) = conn.fetch_one(&sql).await?;
    if taken != 1 {
        return Err(already_running(job));
    }
    let lease = match db.dialect() {
        Dialect::MySql => match Lease::take(db, &conn, job).await {
            Ok(lease) => Some(lease),
            Err(e) => {
                // Released before the refusal, as at a run's end: a rerun right after must not find the
                // lock still held by this session while it closes.
                let _ = conn
                    .execute(&server_unlock_statement(db.dialect(), job_key(job)))
                    .await;
                return Err(e);
            }
        },
        _ => None,
    };
    Ok((RunLock::Server(Box::new(conn)), lease))
}

/// A MySQL/MariaDB run's lease on its job, and the task renewing it (see [`crate::lock`]); dropped, the
/// task stops (the lease then expires, or a rerun on this node takes it over at once).
struct Lease {
    key: u64,
    owner: String,
    lost: Arc<LeaseLost>,
    renewer: tokio::task::JoinHandle<()>,
}

impl Lease {
    /// Takes the lease, in a transaction the cluster certifies, on behalf of the session `conn` that holds
    /// this node's `GET_LOCK`; then renews it every third of its length until released.
    async fn take<S, T>(
        db: &Database,
        conn: &tandem_async::PooledConnection,
        job: &BatchJob<S, T>,
    ) -> Result<Lease, JobError> {
        let key = job_key(job);
        let length = job.lock_lease;
        conn.execute(&lease_table()).await?;
        let (node,): (String,) = conn.fetch_one(&node_statement()).await?;
        let owner = new_owner();
        let held = tandem_async::retry(&TxOptions::default(), || async {
            let tx = db.begin(TxOptions::default()).await?;
            let held = match lease_step(tx.fetch_optional(&lease_read(key)).await?, &node) {
                LeaseStep::Insert => {
                    tx.execute(&lease_insert(key, &owner, &node, length))
                        .await?;
                    None
                }
                LeaseStep::TakeOver(from) => {
                    tx.execute(&lease_take_over(key, &from, &owner, &node, length))
                        .await?;
                    None
                }
                LeaseStep::Held { node, ms_left } => Some((node, ms_left)),
            };
            tx.commit().await?;
            Ok(held)
        })
        .await;
        match held {
            Ok(None) => {}
            Ok(Some((node, ms_left))) => {
                tracing::info!(%node, ms_left, "the job's lease is held by a run on another node");
                return Err(already_running(job));
            }
            // Another node inserted the row first.
            Err(e) if e.kind() == Some(tandem_core::DbErrorKind::UniqueViolation) => {
                return Err(already_running(job));
            }
            Err(e) => return Err(e.into()),
        }
        let lost = Arc::new(LeaseLost::default());
        let (db, flag, renew) = (db.clone(), lost.clone(), lease_renew(key, &owner, length));
        let renewer = tokio::spawn(async move {
            let mut renewed = Instant::now();
            loop {
                tokio::time::sleep(length / 3).await;
                match db.execute(&renew).await {
                    Ok(1) => renewed = Instant::now(),
                    Ok(_) => return flag.set(),
                    Err(_) if renewed.elapsed() >= length => return flag.set(),
                    Err(_) => {}
                }
            }
        });
        Ok(Lease {
            key,
            owner,
            lost,
            renewer,
        })
    }

    /// Stops renewing and gives the lease back (through the pool: the lock's node may be the one that died).
    async fn release(self, db: &Database) {
        self.renewer.abort();
        let _ = db.execute(&lease_release(self.key, &self.owner)).await;
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.renewer.abort();
    }
}

/// Creates the run inside `tx`: earlier unfinished runs marked FAILED, the new execution row, and its steps
/// (fresh partitions, or the steps of the latest run that has any, carried over with their checkpoints). The
/// caller commits; a run that stops at any point leaves either all of this or none of it.
async fn start<S: Entity, T>(tx: &Transaction, job: &BatchJob<S, T>) -> Result<Start, JobError> {
    let jobs = tx.repository::<JobExecution>();
    let last: Option<JobExecution> = jobs
        .find_all(completed_run_query(job))
        .await?
        .try_next()
        .await?;
    check_last_run(job, last.as_ref())?;
    tx.execute(&abandon_statement(job)).await?;
    let resume_from: Option<JobExecution> =
        jobs.find_all(resume_query(job)).await?.try_next().await?;
    let previous = match &resume_from {
        Some(r) => {
            tx.repository::<StepExecution>()
                .find_all(steps_query(r.id))
                .await?
                .try_collect::<Vec<_>>()
                .await?
        }
        None => Vec::new(),
    };
    let (lo, hi, source_rows): (Option<i64>, Option<i64>, i64) =
        tx.fetch_one(&bounds_statement::<S>()).await?;
    let execution = jobs.insert(&new_execution(job)).await?;
    let (mut steps, resumed) = new_steps(execution, previous, (lo, hi), job.parallelism);
    if !steps.is_empty() {
        let ids = tx.repository::<StepExecution>().insert_all(&steps).await?;
        set_step_ids(&mut steps, ids);
    }
    Ok(Start {
        execution,
        steps,
        resumed,
        source_rows,
    })
}

async fn run_step<S, T>(
    db: &Database,
    job: &BatchJob<S, T>,
    step: &StepExecution,
    failed_rows: &AtomicU64,
    lost: &LeaseLost,
) -> Result<PartitionReport, JobError>
where
    S: Entity<Key = i64> + FromRow + Send + 'static,
    T: Entity + Sync + 'static,
{
    let started = Instant::now();
    let mut report = PartitionReport::from_step(step);
    if step.status == RunStatus::Completed {
        return Ok(report);
    }
    let opts = BatchOptions {
        chunk_rows: Some(job.chunk_size),
        ignore_duplicates: job.ignore_duplicates,
        transaction: BatchTransaction::PerCall,
        // Multi-row INSERT: for 500-row chunks COPY gains nothing, and sqlx's COPY costs a slow round trip.
        allow_copy: false,
        ..BatchOptions::default()
    };
    let mut after = step
        .checkpoint
        .unwrap_or(step.partition_lo.saturating_sub(1));
    // Pages are read one ahead: the next page's first key is known once a page is processed, so it is
    // read (on another connection, in a task of its own) while this page's chunks are written. The
    // source is only read, never written, by the job. A read left running when the step fails finishes
    // on its own; it is never cut short mid-statement.
    let read = |after: i64| {
        let (db, page) = (
            db.clone(),
            page_statement::<S>(after, step.partition_hi, job.page_size),
        );
        tokio::spawn(async move { db.fetch_all::<S>(&page).await })
    };
    let result: Result<(), JobError> = async {
        let mut next = read(after);
        loop {
            let page: Vec<S> = next.await.map_err(|e| tandem_core::Error::Panicked {
                message: format!("a page read: {e}"),
            })??;
            if page.is_empty() {
                return Ok(());
            }
            let chunks = process_page(job, page, failed_rows)?;
            next = read(chunks.last().map_or(after, |c| c.last_key));
            for chunk in chunks {
                lost.check(job)?;
                // Rows and checkpoint as one transaction sent at once, when the checkpoint is known before
                // the INSERTs run; otherwise begin/commit rather than a closure, so the task's future is
                // Send. Either way a chunk that meets a deadlock or serialization failure is written again,
                // as the blocking runner does.
                let plan = chunk_plan(db.dialect(), step.id, &chunk, &opts)?;
                let (written, duplicates) = if let Some(plan) = plan {
                    (db.run_atomically(&job.write_options(), plan).await?, 0)
                } else {
                    tandem_async::retry(&job.write_options(), || async {
                        let tx = db.begin(TxOptions::default()).await?;
                        let written = if chunk.rows.is_empty() {
                            0
                        } else {
                            tx.repository::<T>()
                                .batch_insert(&chunk.rows, &opts)
                                .await?
                                .inserted
                        };
                        let duplicates = chunk.rows.len() as u64 - written;
                        tx.execute(&checkpoint_statement(step.id, &chunk, written, duplicates))
                            .await?;
                        tx.commit().await?;
                        Ok((written, duplicates))
                    })
                    .await?
                };
                after = chunk.last_key;
                report.read += chunk.read;
                report.written += written;
                report.skipped += chunk.skipped + duplicates;
                report.chunks += 1;
                if let Some(d) = job.chunk_delay {
                    tokio::time::sleep(d).await;
                }
            }
        }
    }
    .await;
    report.duration = started.elapsed();
    match result {
        Ok(()) => {
            let end = end_step_statement(step.id, RunStatus::Completed, None);
            tandem_async::retry(&job.write_options(), || db.execute(&end)).await?;
            Ok(report)
        }
        Err(e) => {
            let _ = db
                .execute(&end_step_statement(
                    step.id,
                    RunStatus::Failed,
                    Some(e.to_string()),
                ))
                .await;
            Err(e)
        }
    }
}
