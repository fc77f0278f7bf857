//! The job repository, kept in the job's own database: `batch_job_execution` (one row per run of a job) and
//! `batch_step_execution` (one row per partition of a run, with its checkpoint and counts).
//!
//! Both runners read and write these tables with the same statements; only the I/O differs.

use tandem_sql::typed::{AsExpr, AsValue};
use tandem_sql::{SqlType, SqlValue, Table, Value, ValueError, kind};

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
    /// Where the run or step is (stored as `STARTED`, `COMPLETED` or `FAILED`).
    #[column(varchar = 20)]
    pub status: RunStatus,
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
    /// Where the run or step is (stored as `STARTED`, `COMPLETED` or `FAILED`).
    #[column(varchar = 20)]
    pub status: RunStatus,
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

/// Where a run or a step is; stored as its name in capitals.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RunStatus {
    /// Running (or killed while running).
    Started,
    /// Finished with every row accounted for.
    Completed,
    /// Stopped by an error.
    Failed,
}

impl RunStatus {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Started => "STARTED",
            RunStatus::Completed => "COMPLETED",
            RunStatus::Failed => "FAILED",
        }
    }
}

impl std::fmt::Display for RunStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl SqlValue for RunStatus {
    type Kind = kind::Text;
    type Null = kind::NotNull;
    const SQL_TYPE: SqlType = SqlType::Text;
    fn into_value(self) -> Value {
        Value::Text(self.as_str().to_owned())
    }
    fn from_value(value: Value) -> Result<Self, ValueError> {
        match value {
            Value::Text(s) => match s.as_str() {
                "STARTED" => Ok(RunStatus::Started),
                "COMPLETED" => Ok(RunStatus::Completed),
                "FAILED" => Ok(RunStatus::Failed),
                _ => Err(ValueError::Parse {
                    text: s,
                    target: "RunStatus",
                }),
            },
            other => Err(ValueError::WrongType {
                expected: "RunStatus",
                found: other.kind_name(),
            }),
        }
    }
}

impl AsExpr<kind::Text> for RunStatus {
    type Sources = ();
    fn into_expr(self) -> tandem_sql::ast::Expr {
        tandem_sql::ast::Expr::Value(SqlValue::into_value(self))
    }
}

impl AsValue<kind::Text> for RunStatus {
    fn into_value(self) -> Value {
        SqlValue::into_value(self)
    }
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}
