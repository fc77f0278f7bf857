//! What both runners use, in one import: the decisions of `job` and `lock`, and the job repository's
//! entities.

pub(crate) use crate::job::{
    BatchJob, ChunkWrite, JobError, JobReport, LeaseClaim, LeaseWrite, Partition, PartitionReport,
    REPOSITORY_TABLES, Reads, RunContext, Start, counts_fall_short, end_run, lease_taken, panicked,
    shortfall_plan, start_reads, tables_present_statement,
};
pub(crate) use crate::lock::{
    CloseOnDrop, LeaseState, LocalLock, LockFound, LockPlan, LockRow, LockSession, Renewal,
    already_running, job_key, lease_read, lease_table, lock_plan, release_wait, server_probe,
    session_bound_statement, session_release_statements, tables_statement,
};
pub(crate) use crate::model::{
    JobExecution, StepExecution, batch_job_execution as jx, batch_step_execution as sx,
};

/// The page after the one being written: being read beside the writes (where the partition reads ahead),
/// or still to read once they are done.
pub(crate) enum Next<Reading, Unread> {
    Reading(Reading),
    Unread(Unread),
}

/// Why a run does not start on the server its lock session reached, from the lock statement's row: its
/// session lock is held by another run, or the server takes no writes.
pub(crate) fn refused<S, T>(
    job: &BatchJob<S, T>,
    found: &LockFound,
    target: &str,
) -> Option<JobError> {
    if !found.taken {
        return Some(already_running(job));
    }
    found.read_only.then(|| JobError::ReadOnlyServer {
        name: job.name.clone(),
        server: match found.node.is_empty() {
            true => target.to_owned(),
            false => found.node.clone(),
        },
    })
}

/// A lease table created by a concurrent run of another job between the look and the CREATE (PostgreSQL's
/// `CREATE TABLE IF NOT EXISTS` is not safe against a concurrent twin: a unique violation on its catalog)
/// is there all the same.
pub(crate) fn created_anyway(result: tandem_core::Result<u64>) -> tandem_core::Result<()> {
    match result {
        Err(e) if e.kind() == Some(tandem_core::DbErrorKind::UniqueViolation) => Ok(()),
        other => other.map(drop),
    }
}
