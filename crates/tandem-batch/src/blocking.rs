//! The blocking runner: partitions on OS threads, each chunk one transaction with its checkpoint.

use std::sync::atomic::AtomicU64;
use std::time::Instant;
use tandem_blocking::Executor as _;

use tandem_blocking::{BatchOptions, BatchTransaction, Database};
use tandem_sql::FromRow;
use tandem_sql::prelude::*;

use crate::job::{
    BatchJob, JobError, JobReport, PartitionReport, Start, abandon_statement, bounds_statement,
    check_last_run, checkpoint_statement, end_job_statement, end_step_statement, last_run_query,
    new_execution, new_steps, page_statement, process_page, resume_query, set_step_ids,
    steps_query,
};
use crate::lock::{
    RunLock, already_running, job_key, local_lock, server_lock_statement, server_unlock_statement,
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
    let lock = lock(db, job)?;
    let result = run_locked(db, job);
    // Released on the server before returning, so a rerun right after does not find it still held by a
    // session that is closing.
    if let RunLock::Server(conn) = lock {
        let _ = conn.execute(&server_unlock_statement(db.dialect(), job_key(job)));
    }
    result
}

fn run_locked<S, T>(db: &Database, job: &BatchJob<S, T>) -> Result<JobReport, JobError>
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
                scope.spawn(move || run_step(db, job, step, failed_rows))
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
            db.execute(&end_job_statement(
                execution,
                RunStatus::Completed,
                totals,
                None,
            ))?;
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

/// Takes the job's run lock (see [`crate::lock`]); it is released when the returned guard is dropped.
fn lock<S, T>(
    db: &Database,
    job: &BatchJob<S, T>,
) -> Result<RunLock<tandem_blocking::engine::PooledConnection>, JobError> {
    if let Some(local) = local_lock(db.options(), db.pool_id(), job)? {
        return Ok(RunLock::Local(local));
    }
    let sql = server_lock_statement(db.dialect(), job_key(job)).expect("server engines lock");
    let mut conn = db.checkout()?;
    // Closed, not pooled, when the run ends: the server drops the lock with the session.
    conn.close_on_drop();
    let (taken,): (i64,) = conn.fetch_one(&sql)?;
    if taken != 1 {
        return Err(already_running(job));
    }
    Ok(RunLock::Server(Box::new(conn)))
}

/// Creates the run in one transaction: earlier unfinished runs marked FAILED, the new execution row, and its
/// steps (fresh partitions, or the steps of the latest run that has any, carried over with their
/// checkpoints). A run that stops at any point leaves either all of this or none of it.
fn start<S: Entity, T>(db: &Database, job: &BatchJob<S, T>) -> Result<Start, JobError> {
    db.transaction(|tx| {
        let jobs = tx.repository::<JobExecution>();
        let last: Option<JobExecution> = jobs.find_all(last_run_query(job))?.next().transpose()?;
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
                let (written, duplicates) = db.transaction(|tx| {
                    let written = if chunk.rows.is_empty() {
                        0
                    } else {
                        tx.repository::<T>()
                            .batch_insert(&chunk.rows, &opts)?
                            .inserted
                    };
                    let duplicates = chunk.rows.len() as u64 - written;
                    tx.execute(&checkpoint_statement(step.id, &chunk, written, duplicates))?;
                    Ok::<_, tandem_core::Error>((written, duplicates))
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
            db.execute(&end_step_statement(step.id, RunStatus::Completed, None))?;
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
