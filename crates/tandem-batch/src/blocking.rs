//! The blocking runner: partitions on OS threads, each chunk one transaction with its checkpoint.

use std::sync::atomic::AtomicU64;
use std::time::Instant;
use tandem_blocking::Executor as _;

use tandem_blocking::{BatchOptions, BatchTransaction, Database};
use tandem_sql::FromRow;
use tandem_sql::prelude::*;

use crate::job::{
    BatchJob, JobError, JobReport, PartitionReport, Start, abandon_statement, bounds_statement,
    check_last_run, checkpoint_statement, completed_run_query, end_job_statement,
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
pub fn prepare(db: &Database) -> tandem_core::Result<()> {
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
    // The lock first: it needs no table, and two processes creating the tables at once can collide
    // (PostgreSQL's CREATE TABLE IF NOT EXISTS is not safe against a concurrent twin).
    let (lock, lease) = lock(db, job)?;
    let not_lost = LeaseLost::default();
    let lost = lease.as_ref().map_or(&not_lost, |l| &*l.lost);
    let result = run_locked(db, job, lost);
    if let Some(lease) = lease {
        lease.release(db);
    }
    // Released on the server before returning, so a rerun right after does not find it still held by a
    // session that is closing.
    if let RunLock::Server(conn) = lock {
        let _ = conn.execute(&server_unlock_statement(db.dialect(), job_key(job)));
    }
    result
}

fn run_locked<S, T>(
    db: &Database,
    job: &BatchJob<S, T>,
    lost: &LeaseLost,
) -> Result<JobReport, JobError>
where
    S: Entity<Key = i64> + FromRow + Send,
    T: Entity + Sync,
{
    let started = Instant::now();
    prepare(db)?;
    let Start {
        execution,
        steps,
        resumed,
        source_rows,
    } = start(db, job)?;
    let failed_rows = AtomicU64::new(0);
    let results: Vec<Result<PartitionReport, JobError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = steps
            .iter()
            .map(|step| {
                let failed_rows = &failed_rows;
                scope.spawn(move || run_step(db, job, step, failed_rows, lost))
            })
            .collect();
        handles
            .into_iter()
            .zip(&steps)
            .map(|(h, step)| {
                h.join().unwrap_or_else(|payload| {
                    Err(JobError::Panicked {
                        partition: step.step_name.clone(),
                        message: tandem_core::tx::panic_message(&*payload),
                    })
                })
            })
            .collect()
    });
    let (mut report, outcome) =
        crate::job::assemble(execution, resumed, started, source_rows, results);
    report.duration = started.elapsed();
    let totals = (report.read, report.written, report.skipped);
    match outcome {
        Ok(()) => {
            let end = end_job_statement(execution, RunStatus::Completed, totals, None);
            db.transaction_with(job.write_options(), |tx| tx.execute(&end))?;
            Ok(report)
        }
        Err(e) => {
            // Best effort: the database may be what failed.
            let _ = db.execute(&end_job_statement(
                execution,
                RunStatus::Failed,
                totals,
                Some(e.to_string()),
            ));
            Err(e)
        }
    }
}

/// A server lock's connection; on MySQL/MariaDB, also the run's lease.
type Locks = (RunLock<tandem_blocking::PooledConnection>, Option<Lease>);

/// Takes the job's run lock (see [`crate::lock`]); it is released when the returned guard is dropped.
fn lock<S, T>(db: &Database, job: &BatchJob<S, T>) -> Result<Locks, JobError> {
    if let Some(local) = local_lock(db.options(), db.pool_id(), job)? {
        return Ok((RunLock::Local(local), None));
    }
    let sql = server_lock_statement(db.dialect(), job_key(job)).expect("server engines lock");
    let mut conn = db.checkout()?;
    // Closed, not pooled, when the run ends: the server drops the lock with the session.
    conn.close_on_drop();
    let (taken,): (i64,) = conn.fetch_one(&sql)?;
    if taken != 1 {
        return Err(already_running(job));
    }
    let lease = match db.dialect() {
        Dialect::MySql => match Lease::take(db, &conn, job) {
            Ok(lease) => Some(lease),
            Err(e) => {
                // Released before the refusal, as at a run's end: a rerun right after must not find the
                // lock still held by this session while it closes.
                let _ = conn.execute(&server_unlock_statement(db.dialect(), job_key(job)));
                return Err(e);
            }
        },
        _ => None,
    };
    Ok((RunLock::Server(Box::new(conn)), lease))
}

/// A MySQL/MariaDB run's lease on its job, and the thread renewing it (see [`crate::lock`]).
struct Lease {
    key: u64,
    owner: String,
    lost: std::sync::Arc<LeaseLost>,
    /// Dropped to stop the renewing thread.
    stop: Option<std::sync::mpsc::Sender<()>>,
    renewer: Option<std::thread::JoinHandle<()>>,
}

impl Lease {
    /// Takes the lease, in a transaction the cluster certifies, on behalf of the session `conn` that holds
    /// this node's `GET_LOCK`; then renews it every third of its length until released.
    fn take<S, T>(
        db: &Database,
        conn: &tandem_blocking::PooledConnection,
        job: &BatchJob<S, T>,
    ) -> Result<Lease, JobError> {
        let key = job_key(job);
        let length = job.lock_lease;
        conn.execute(&lease_table())?;
        let (node,): (String,) = conn.fetch_one(&node_statement())?;
        let owner = new_owner();
        let held = db.transaction(|tx| {
            let row = tx.fetch_optional(&lease_read(key))?;
            Ok(match lease_step(row, &node) {
                LeaseStep::Insert => {
                    tx.execute(&lease_insert(key, &owner, &node, length))?;
                    None
                }
                LeaseStep::TakeOver(from) => {
                    tx.execute(&lease_take_over(key, &from, &owner, &node, length))?;
                    None
                }
                LeaseStep::Held { node, ms_left } => Some((node, ms_left)),
            })
        });
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
        let lost = std::sync::Arc::new(LeaseLost::default());
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let (db, flag, renew) = (db.clone(), lost.clone(), lease_renew(key, &owner, length));
        let renewer = std::thread::Builder::new()
            .name("tandem-lease".into())
            .spawn(move || {
                let mut renewed = Instant::now();
                while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
                    stopped.recv_timeout(length / 3)
                {
                    match db.execute(&renew) {
                        Ok(1) => renewed = Instant::now(),
                        Ok(_) => return flag.set(),
                        Err(_) if renewed.elapsed() >= length => return flag.set(),
                        Err(_) => {}
                    }
                }
            })
            .map_err(|source| tandem_core::Error::Thread {
                what: "the job's lease keeper thread",
                source,
            })?;
        Ok(Lease {
            key,
            owner,
            lost,
            stop: Some(stop),
            renewer: Some(renewer),
        })
    }

    /// Stops renewing and gives the lease back (through the pool: the lock's node may be the one that died).
    fn release(mut self, db: &Database) {
        self.stop_renewing();
        let _ = db.execute(&lease_release(self.key, &self.owner));
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

/// Creates the run in one transaction: earlier unfinished runs marked FAILED, the new execution row, and its
/// steps (fresh partitions, or the steps of the latest run that has any, carried over with their
/// checkpoints). A run that stops at any point leaves either all of this or none of it.
fn start<S: Entity, T>(db: &Database, job: &BatchJob<S, T>) -> Result<Start, JobError> {
    db.try_transaction_with(job.write_options(), |tx| {
        let jobs = tx.repository::<JobExecution>();
        let last: Option<JobExecution> = jobs
            .find_all(completed_run_query(job))?
            .next()
            .transpose()?;
        check_last_run(job, last.as_ref())?;
        tx.execute(&abandon_statement(job))?;
        let resume_from: Option<JobExecution> =
            jobs.find_all(resume_query(job))?.next().transpose()?;
        let previous = match &resume_from {
            Some(r) => tx
                .repository::<StepExecution>()
                .find_all(steps_query(r.id))?
                .collect::<Result<Vec<_>, _>>()?,
            None => Vec::new(),
        };
        let (lo, hi, source_rows): (Option<i64>, Option<i64>, i64) =
            tx.fetch_one(&bounds_statement::<S>())?;
        let execution = jobs.insert(&new_execution(job))?;
        let (mut steps, resumed) = new_steps(execution, previous, (lo, hi), job.parallelism);
        if !steps.is_empty() {
            let ids = tx.repository::<StepExecution>().insert_all(&steps)?;
            set_step_ids(&mut steps, ids);
        }
        Ok(Start {
            execution,
            steps,
            resumed,
            source_rows,
        })
    })
}

fn run_step<S, T>(
    db: &Database,
    job: &BatchJob<S, T>,
    step: &StepExecution,
    failed_rows: &AtomicU64,
    lost: &LeaseLost,
) -> Result<PartitionReport, JobError>
where
    S: Entity<Key = i64> + FromRow + Send,
    T: Entity + Sync,
{
    let started = Instant::now();
    let mut report = PartitionReport::from_step(step);
    if step.status == RunStatus::Completed {
        return Ok(report);
    }
    let result = (|| -> Result<(), JobError> {
        let mut after = step
            .checkpoint
            .unwrap_or(step.partition_lo.saturating_sub(1));
        let opts = BatchOptions {
            chunk_rows: Some(job.chunk_size),
            ignore_duplicates: job.ignore_duplicates,
            transaction: BatchTransaction::PerCall,
            // Multi-row INSERT: for 500-row chunks COPY gains nothing (and costs sqlx a round trip).
            allow_copy: false,
            ..BatchOptions::default()
        };
        loop {
            let page: Vec<S> = db.fetch_all(&page_statement::<S>(
                after,
                step.partition_hi,
                job.page_size,
            ))?;
            if page.is_empty() {
                return Ok(());
            }
            for chunk in process_page(job, page, failed_rows)? {
                lost.check(job)?;
                let (written, duplicates) = db.transaction_with(job.write_options(), |tx| {
                    let written = if chunk.rows.is_empty() {
                        0
                    } else {
                        tx.repository::<T>()
                            .batch_insert(&chunk.rows, &opts)?
                            .inserted
                    };
                    let duplicates = chunk.rows.len() as u64 - written;
                    tx.execute(&checkpoint_statement(step.id, &chunk, written, duplicates))?;
                    Ok((written, duplicates))
                })?;
                after = chunk.last_key;
                report.read += chunk.read;
                report.written += written;
                report.skipped += chunk.skipped + duplicates;
                report.chunks += 1;
                if let Some(d) = job.chunk_delay {
                    std::thread::sleep(d);
                }
            }
        }
    })();
    report.duration = started.elapsed();
    match result {
        Ok(()) => {
            let end = end_step_statement(step.id, RunStatus::Completed, None);
            db.transaction_with(job.write_options(), |tx| tx.execute(&end))?;
            Ok(report)
        }
        Err(e) => {
            let _ = db.execute(&end_step_statement(
                step.id,
                RunStatus::Failed,
                Some(e.to_string()),
            ));
            Err(e)
        }
    }
}
