//! The job repository, kept in the job's own database: `batch_job_execution` (one row per run of a job) and
//! `batch_step_execution` (one row per partition of a run, with its checkpoint and counts).
//!
//! Both runners read and write these tables with the same statements; only the I/O differs.

use tandem_sql::Table;

/// One run of a job.
#[derive(Table, Debug, Clone, PartialEq)]
#[table(name = "batch_job_execution", index(job_name, job_params))]
pub struct JobExecution {
    /// Generated key.
    #[column(primary_key, auto_increment)]
    pub id: i64,
    /// The job's name.
    #[column(varchar = 100)]
    pub job_name: String,
    /// The job's parameters, as `key=value` pairs in a fixed order: a run with the same name and parameters
    /// restarts the same job.
    #[column(varchar = 500)]
    pub job_params: String,
    /// `STARTED`, `COMPLETED` or `FAILED`.
    #[column(varchar = 20)]
    pub status: String,
    /// Start, in milliseconds since the Unix epoch.
    pub started_at: i64,
    /// End, in milliseconds since the Unix epoch.
    pub ended_at: Option<i64>,
    /// Rows read over the whole job (earlier runs included).
    pub read_count: i64,
    /// Rows written over the whole job.
    pub write_count: i64,
    /// Rows skipped (processor skips and ignored duplicates) over the whole job.
    pub skip_count: i64,
    /// Why the run failed.
    pub error_text: Option<String>,
}

/// One partition of one run: a key range, how far it got, and its counts.
#[derive(Table, Debug, Clone, PartialEq)]
#[table(name = "batch_step_execution", index(job_execution_id))]
pub struct StepExecution {
    /// Generated key.
    #[column(primary_key, auto_increment)]
    pub id: i64,
    /// The run this step belongs to.
    pub job_execution_id: i64,
    /// `partition-<n>`.
    #[column(varchar = 100)]
    pub step_name: String,
    /// First key of the partition.
    pub partition_lo: i64,
    /// Last key of the partition.
    pub partition_hi: i64,
    /// `STARTED`, `COMPLETED` or `FAILED`.
    #[column(varchar = 20)]
    pub status: String,
    /// The last source key whose chunk is committed; the step resumes after it. Committed in the same
    /// transaction as that chunk.
    pub checkpoint: Option<i64>,
    /// Rows read (earlier runs included).
    pub read_count: i64,
    /// Rows written.
    pub write_count: i64,
    /// Rows skipped.
    pub skip_count: i64,
    /// Chunks committed.
    pub chunk_count: i64,
    /// Start, ms since the epoch.
    pub started_at: i64,
    /// End, ms since the epoch.
    pub ended_at: Option<i64>,
    /// Why the step failed.
    pub error_text: Option<String>,
}

/// Status values.
pub mod status {
    /// Running (or killed while running).
    pub const STARTED: &str = "STARTED";
    /// Finished with every row accounted for.
    pub const COMPLETED: &str = "COMPLETED";
    /// Stopped by an error.
    pub const FAILED: &str = "FAILED";
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}
