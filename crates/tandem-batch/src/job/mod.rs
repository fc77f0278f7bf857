//! A job: source and target entities, a processor, sizes, parallelism and policies — and what is shared by
//! both runners without I/O: partitioning, the reader's keyset query, the statements that keep the job
//! repository, and the report with its consistency check.

use std::sync::Arc;
use std::time::Duration;

use tandem_sql::Render;
use tandem_sql::ast::{BinaryOp, Expr, Order, OrderBy};
use tandem_sql::typed::{Entity, Table};

use crate::model::{RunStatus, StepExecution};

mod flow;
mod partition;
mod read;
mod reads;
mod record;

pub(crate) use flow::*;
pub(crate) use partition::*;
pub(crate) use read::*;
pub(crate) use reads::*;
pub(crate) use record::*;

/// The longest lease a job takes ([`BatchJob::lock_lease`]): a day. A run that dies without a word keeps
/// the job from every other node for one lease.
pub const MAX_LEASE: Duration = Duration::from_secs(24 * 60 * 60);

/// What the processor decided for one source row.
#[derive(Debug)]
pub enum Processed<T> {
    /// Write this target row.
    Write(T),
    /// Leave the row out on purpose (counted as skipped).
    Skip,
}

/// A processor error, any error type (`"text".into()` makes one from a message): the job fails with the
/// row's key and this error as its source, unless the skip policy skips the row.
pub type ProcessError = Box<dyn std::error::Error + Send + Sync + 'static>;

type ProcessorFn<S, T> = dyn Fn(S) -> Result<Processed<T>, ProcessError> + Send + Sync;

/// What to do when the processor returns an error.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum SkipPolicy {
    /// Fail the job, naming the row's key (the default).
    #[default]
    Fail,
    /// Skip up to this many failing rows over the job, counting them; the next one fails the job.
    SkipUpTo(u64),
}

/// A batch job from source entity `S` to target entity `T`.
pub struct BatchJob<S, T> {
    /// The job's name.
    pub name: String,
    /// Parameters; with the name they identify the job across restarts.
    pub params: Vec<(String, String)>,
    /// Rows per keyset page. Default 500.
    pub page_size: u64,
    /// Rows per written chunk (one transaction each, with its checkpoint). Default 500.
    pub chunk_size: usize,
    /// Partitions run at once. Default 1.
    pub parallelism: usize,
    /// Skip target rows that collide with a unique key instead of failing (counted as skipped).
    pub ignore_duplicates: bool,
    /// Processor errors.
    pub skip_policy: SkipPolicy,
    /// Pause after each committed chunk (tests use it to stop a job midway). Default none.
    pub chunk_delay: Option<Duration>,
    /// How long the run's lease on the job lasts after the run last made progress (read a page, wrote a
    /// chunk), on PostgreSQL and MySQL/MariaDB: how long the next run — on any node — waits for a run that
    /// died without a word, was stopped, or stalled. It is renewed every third of this on the run's lock
    /// session, and by every write. So it must exceed the time one page takes to process and one chunk to
    /// write, or another run may take the job over between two of them. Default 30 s; it also bounds the
    /// lock waits of the run's bookkeeping on PostgreSQL. (See [`crate::lock`].)
    pub lock_lease: Duration,
    /// How many times a chunk's transaction, and each write that records a step's or a run's end, runs at
    /// most when it fails retriably: a deadlock, a serialization failure, or — on a Galera cluster — a
    /// certification failure or a write aborted by another node's commit (all error 1213). The chunk is
    /// rolled back whole before it is written again, so retrying never duplicates rows. Default 10.
    pub write_attempts: u32,
    pub(crate) processor: Arc<ProcessorFn<S, T>>,
}

impl<S, T> Clone for BatchJob<S, T> {
    fn clone(&self) -> Self {
        BatchJob {
            name: self.name.clone(),
            params: self.params.clone(),
            page_size: self.page_size,
            chunk_size: self.chunk_size,
            parallelism: self.parallelism,
            ignore_duplicates: self.ignore_duplicates,
            skip_policy: self.skip_policy,
            chunk_delay: self.chunk_delay,
            lock_lease: self.lock_lease,
            write_attempts: self.write_attempts,
            processor: self.processor.clone(),
        }
    }
}

/// A job's source rows are read in key order and partitioned by key ranges, so the source's key is an
/// integer: `S: Entity<Key = i64>`, checked when the job is built.
impl<S: Entity<Key = i64>, T: Entity> BatchJob<S, T> {
    /// A job named `name` with this processor and the default sizes.
    pub fn new(
        name: impl Into<String>,
        processor: impl Fn(S) -> Result<Processed<T>, ProcessError> + Send + Sync + 'static,
    ) -> Self {
        BatchJob {
            name: name.into(),
            params: Vec::new(),
            page_size: 500,
            chunk_size: 500,
            parallelism: 1,
            ignore_duplicates: false,
            skip_policy: SkipPolicy::Fail,
            chunk_delay: None,
            lock_lease: Duration::from_secs(30),
            write_attempts: 10,
            processor: Arc::new(processor),
        }
    }

    /// Adds a parameter.
    pub fn param(mut self, key: impl Into<String>, value: impl ToString) -> Self {
        self.params.push((key.into(), value.to_string()));
        self
    }

    /// Sets the partition count.
    pub fn parallelism(mut self, n: usize) -> Self {
        self.parallelism = n.max(1);
        self
    }

    /// Sets the run lock's lease (server engines): at least one second, at most [`MAX_LEASE`].
    pub fn lock_lease(mut self, lease: Duration) -> Self {
        self.lock_lease = lease.clamp(Duration::from_secs(1), MAX_LEASE);
        self
    }

    /// Sets the attempt bound of each chunk's transaction (at least 1; see [`BatchJob::write_attempts`]).
    pub fn write_attempts(mut self, attempts: u32) -> Self {
        self.write_attempts = attempts.max(1);
        self
    }

    /// Sets page and chunk sizes.
    pub fn sizes(mut self, page_size: u64, chunk_size: usize) -> Self {
        self.page_size = page_size.max(1);
        self.chunk_size = chunk_size.max(1);
        self
    }

    /// Ignores duplicate target rows.
    pub fn ignore_duplicates(mut self) -> Self {
        self.ignore_duplicates = true;
        self
    }

    /// Sets the skip policy.
    pub fn skip_policy(mut self, policy: SkipPolicy) -> Self {
        self.skip_policy = policy;
        self
    }
}

impl<S, T> BatchJob<S, T> {
    /// The key of this job's run lock: 16 hex digits from its name and parameters, the same in every
    /// process. On the server engines it is the `job_key` of its lease row in `batch_job_lock` (an
    /// operator looking for who runs the job finds the owner and node there).
    pub fn lock_key(&self) -> String {
        format!("{:016x}", crate::lock::job_key(self))
    }

    /// The options of the runner's writes: [`BatchJob::write_attempts`] attempts each; on PostgreSQL no
    /// lock wait longer than the lease, and no session left idle inside one of the run's transactions
    /// longer than the lease (both set with the BEGIN, in its round trip) — a run stopped inside a chunk
    /// holds that chunk's row locks at most a lease, and the run that took over waits for them at most a
    /// lease. (On MariaDB a run's statements bound their lock waits by the lease themselves, where the
    /// server takes `SET STATEMENT`: see `job::reads`.)
    pub(crate) fn write_options(&self) -> tandem_core::TxOptions {
        tandem_core::TxOptions::default()
            .max_attempts(self.write_attempts)
            .lock_timeout(self.lock_lease)
            .idle_timeout(self.lock_lease)
    }

    /// The options of the run's bookkeeping (its start, a partition's end, its end): those of its writes
    /// — a start waiting on a lock a stuck session holds fails (and is retried) instead of waiting without
    /// end.
    pub(crate) fn bookkeeping_options(&self) -> tandem_core::TxOptions {
        self.write_options()
    }

    /// The parameters as stored: sorted `key=value` pairs joined by `&`.
    pub fn params_text(&self) -> String {
        let mut p: Vec<String> = self
            .params
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        p.sort();
        p.join("&")
    }
}

/// Why a job failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JobError {
    /// A database error (the run is marked FAILED when the database still answers).
    #[error(transparent)]
    Database(#[from] tandem_core::Error),
    /// The processor failed for the row with this key.
    #[error("processor failed for source key {key}: {source}")]
    Processor {
        /// The source row's key.
        key: i64,
        /// The processor's error.
        source: ProcessError,
    },
    /// A partition's thread or task panicked (in the processor, most likely). Its committed chunks stay,
    /// with their checkpoint: a rerun resumes after them.
    #[error("partition {partition} panicked: {message}")]
    Panicked {
        /// `partition-<n>`.
        partition: String,
        /// The panic message, when it was a string.
        message: String,
    },
    /// The counts do not add up: rows were lost or written twice.
    #[error("counts do not add up: {0}")]
    Inconsistent(String),
    /// The last run with this name and parameters already completed.
    #[error(
        "job {name:?}{} already completed (execution {execution})",
        with_params(params)
    )]
    AlreadyCompleted {
        /// Job name.
        name: String,
        /// Job parameters.
        params: String,
        /// The completed execution.
        execution: i64,
    },
    /// Another run of this job (same name and parameters) holds its run lock, in this process or another.
    #[error("job {name:?}{} is already running", with_params(params))]
    AlreadyRunning {
        /// Job name.
        name: String,
        /// Job parameters.
        params: String,
    },
    /// Another run took the job's lease over (see [`crate::lock`]): this run's next write was refused by
    /// its guard, and it wrote nothing more — its chunks, its steps' ends and its own end included. What
    /// it committed before stays, with its checkpoints, for the run that took over.
    #[error(
        "job {name:?}{} lost its run lock (another run took its lease over)",
        with_params(params)
    )]
    LockLost {
        /// Job name.
        name: String,
        /// Job parameters.
        params: String,
    },
    /// The server takes no writes (a PostgreSQL standby in recovery, a MySQL/MariaDB server in
    /// `read_only`): a run starts only on a server whose reads see everything committed and that takes its
    /// writes. Point the URL at the primary (PostgreSQL: `target_session_attrs=read-write`).
    #[error(
        "job {name:?} cannot run on {server}: the server takes no writes (a standby, or read_only); \
         point the URL at the primary (PostgreSQL: target_session_attrs=read-write)"
    )]
    ReadOnlyServer {
        /// Job name.
        name: String,
        /// The server, `host:port` as it names itself (or the URL).
        server: String,
    },
    /// The lock file of a SQLite job could not be opened or locked.
    #[error("cannot lock {path}: {source}")]
    LockFile {
        /// The lock file, beside the database file.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// " with parameters …" for a job that has some, nothing for one that has none.
fn with_params(params: &str) -> String {
    match params.is_empty() {
        true => String::new(),
        false => format!(" with parameters {params:?}"),
    }
}

/// One partition's figures.
#[derive(Clone, Debug, PartialEq)]
pub struct PartitionReport {
    /// `partition-<n>`.
    pub name: String,
    /// Key range.
    pub range: (i64, i64),
    /// Rows read (whole job, earlier runs included).
    pub read: u64,
    /// Rows written.
    pub written: u64,
    /// Rows skipped.
    pub skipped: u64,
    /// Chunks committed.
    pub chunks: u64,
    /// Time this run spent on the partition.
    pub duration: Duration,
}

impl PartitionReport {
    /// A partition's figures as its step row has them (carried over from earlier runs), before this run.
    pub(crate) fn from_step(step: &StepExecution) -> Self {
        PartitionReport {
            name: step.step_name.clone(),
            range: (step.partition_lo, step.partition_hi),
            read: step.read_count as u64,
            written: step.write_count as u64,
            skipped: step.skip_count as u64,
            chunks: step.chunk_count as u64,
            duration: Duration::default(),
        }
    }
}

/// What a run did.
#[derive(Clone, Debug, PartialEq)]
pub struct JobReport {
    /// The run's execution id.
    pub execution_id: i64,
    /// Per partition.
    pub partitions: Vec<PartitionReport>,
    /// Totals over the job (earlier runs included).
    pub read: u64,
    /// Rows written in total.
    pub written: u64,
    /// Rows skipped in total.
    pub skipped: u64,
    /// Chunks in total.
    pub chunks: u64,
    /// This run's wall time.
    pub duration: Duration,
    /// Whether this run resumed an earlier, unfinished one.
    pub resumed: bool,
    /// The job's `parallelism`. A resumed run keeps the partitions of the run it resumes (their ranges
    /// carry the checkpoints), so `partitions.len()` differs from this when the job was resumed with
    /// another parallelism — said in a warning too.
    pub parallelism_asked: usize,
}

/// `[lo, hi]` cut into `n` contiguous ranges (fewer when the range is smaller than `n`).
pub fn partitions(lo: i64, hi: i64, n: usize) -> Vec<(i64, i64)> {
    if hi < lo {
        return Vec::new();
    }
    let span = (hi - lo) as u128 + 1;
    let n = (n.max(1) as u128).min(span);
    (0..n)
        .map(|i| {
            let start = lo + (span * i / n) as i64;
            let end = lo + (span * (i + 1) / n) as i64 - 1;
            (start, end)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ranges cover `[lo, hi]` exactly once, in order, and never exceed the key count.
    #[test]
    fn partition_ranges() {
        assert_eq!(partitions(1, 10, 4), [(1, 2), (3, 5), (6, 7), (8, 10)]);
        assert_eq!(partitions(5, 6, 8), [(5, 5), (6, 6)]);
        assert_eq!(partitions(3, 3, 1), [(3, 3)]);
        assert!(partitions(5, 4, 2).is_empty());
        let p = partitions(-100, i64::MAX / 2, 7);
        assert_eq!(p.first().unwrap().0, -100);
        assert_eq!(p.last().unwrap().1, i64::MAX / 2);
        assert!(p.windows(2).all(|w| w[1].0 == w[0].1 + 1));
    }
}

/// The spans of a batch run, the same from both runners (see `tandem_core::observe` for the statement,
/// transaction and checkout spans inside them): `batch.run` around the whole run, `batch.partition` around
/// each partition (on its thread or in its task, a child of the run's), `batch.chunk` around each chunk's
/// write (its transaction and statements inside).
pub(crate) mod spans {
    use tracing::Span;

    use super::{BatchJob, ProcessedChunk, StepExecution};

    /// `batch.run`: the job's name and the parallelism asked for.
    pub(crate) fn run<S, T>(job: &BatchJob<S, T>) -> Span {
        tracing::info_span!(
            "batch.run",
            job = %job.name,
            parallelism = job.parallelism,
            chunk_size = job.chunk_size
        )
    }

    /// `batch.partition`: its step name and key range.
    pub(crate) fn partition(step: &StepExecution) -> Span {
        tracing::info_span!(
            "batch.partition",
            step = %step.step_name,
            lo = step.partition_lo,
            hi = step.partition_hi
        )
    }

    /// `batch.chunk`: the rows it writes and the last source key it covers.
    pub(crate) fn chunk<T>(chunk: &ProcessedChunk<T>) -> Span {
        tracing::info_span!(
            "batch.chunk",
            rows = chunk.rows.len(),
            last_key = chunk.last_key
        )
    }
}
