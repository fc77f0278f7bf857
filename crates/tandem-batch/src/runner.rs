//! What both runners use, in one import: the decisions of `job` and `lock`, and the job repository's
//! entities.

pub(crate) use crate::job::{
    BatchJob, ChunkWrite, JobError, JobReport, LeaseClaim, LeaseWrite, Partition, PartitionReport,
    RunContext, Start, end_run, lease_taken, panicked, renewal_lost, repository_tables_statement,
    start_reads,
};
pub(crate) use crate::lock::{
    CloseOnDrop, LeaseLost, LockPlan, LockRow, LockSession, RunLock, already_running, job_key,
    lease_read, lease_release, lease_renew, lease_table, lock_plan, server_unlock_statement,
    tables_found,
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
