//! A job: source and target entities, a processor, sizes, parallelism and policies — and what is shared by
//! both runners without I/O: partitioning, the reader's keyset query, the statements that keep the job
//! repository, and the report with its consistency check.

use std::sync::Arc;
use std::time::Duration;

use tandem_sql::Render;
use tandem_sql::ast::{BinaryOp, Expr, Order, OrderBy};
use tandem_sql::typed::{Entity, Table};

use crate::model::{RunStatus, StepExecution};

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
    /// MySQL/MariaDB: how long the run's lease on the job lasts unless renewed (it is renewed every third
    /// of this): how long a run on another node waits for the lease of a run that died without a word.
    /// Default 30 s. (See [`crate::lock`].)
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

    /// Sets the run lock's lease (MySQL/MariaDB; at least one second).
    pub fn lock_lease(mut self, lease: Duration) -> Self {
        self.lock_lease = lease.max(Duration::from_secs(1));
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
    /// process. On MySQL/MariaDB it is the `job_key` of its lease row in `batch_job_lock` (an operator
    /// looking for who runs the job finds the owner and node there).
    pub fn lock_key(&self) -> String {
        format!("{:016x}", crate::lock::job_key(self))
    }

    /// The options of the runner's writes: [`BatchJob::write_attempts`] attempts each.
    pub(crate) fn write_options(&self) -> tandem_core::TxOptions {
        tandem_core::TxOptions::default().max_attempts(self.write_attempts)
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
    #[error("job {name:?} with parameters {params:?} already completed (execution {execution})")]
    AlreadyCompleted {
        /// Job name.
        name: String,
        /// Job parameters.
        params: String,
        /// The completed execution.
        execution: i64,
    },
    /// Another run of this job (same name and parameters) holds its run lock, in this process or another.
    #[error("job {name:?} with parameters {params:?} is already running")]
    AlreadyRunning {
        /// Job name.
        name: String,
        /// Job parameters.
        params: String,
    },
    /// The run could not renew its lease on the job (MySQL/MariaDB, see [`crate::lock`]) before it
    /// expired, or another run took it over: it stopped before its next chunk. Committed chunks stay, with
    /// their checkpoints.
    #[error(
        "job {name:?} with parameters {params:?} lost its run lock (lease not renewed in time)"
    )]
    LockLost {
        /// Job name.
        name: String,
        /// Job parameters.
        params: String,
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

pub(crate) fn key_col<S: Entity>() -> Expr {
    Expr::qualified(<S::Table as Table>::NAME, S::KEY)
}

/// `SELECT MIN(key), MAX(key), COUNT(*) FROM source`.
pub(crate) fn bounds_statement<S: Entity>() -> tandem_sql::ast::Select {
    use tandem_sql::ast::{Function, SelectItem};
    let mut s = tandem_sql::ast::Select::from(<S::Table as Table>::NAME);
    let item = |e| SelectItem::Expr {
        expr: e,
        alias: None,
    };
    s.items = vec![
        item(Expr::Cast {
            expr: Box::new(Expr::call(Function::Min, vec![key_col::<S>()])),
            ty: tandem_sql::SqlType::BigInt,
        }),
        item(Expr::Cast {
            expr: Box::new(Expr::call(Function::Max, vec![key_col::<S>()])),
            ty: tandem_sql::SqlType::BigInt,
        }),
        item(Expr::CountStar),
    ];
    s
}

/// The keyset page after `after` within `[.., hi]`.
pub(crate) fn page_statement<S: Entity>(after: i64, hi: i64, size: u64) -> tandem_sql::ast::Select {
    let mut s = tandem_core::repo::entity_select::<S>();
    s.and_where(key_col::<S>().binary(BinaryOp::Gt, Expr::value(after)));
    s.and_where(key_col::<S>().binary(BinaryOp::LtEq, Expr::value(hi)));
    s.order_by = vec![OrderBy {
        expr: key_col::<S>(),
        order: Order::Asc,
    }];
    s.limit = Some(size);
    s
}

/// What processing one page produced, in chunks ready to write.
pub(crate) struct ProcessedChunk<T> {
    pub rows: Vec<T>,
    /// The last source key the chunk covers (its checkpoint).
    pub last_key: i64,
    pub read: u64,
    pub skipped: u64,
}

/// Runs the processor over a page, cutting the output into chunks; applies the skip policy.
pub(crate) fn process_page<S: Entity<Key = i64>, T: Entity>(
    job: &BatchJob<S, T>,
    page: Vec<S>,
    failed_so_far: &std::sync::atomic::AtomicU64,
) -> Result<Vec<ProcessedChunk<T>>, JobError> {
    let mut chunks = Vec::new();
    let mut current = ProcessedChunk {
        rows: Vec::new(),
        last_key: 0,
        read: 0,
        skipped: 0,
    };
    for row in page {
        let key = row.key();
        current.read += 1;
        current.last_key = key;
        match (job.processor)(row) {
            Ok(Processed::Write(t)) => current.rows.push(t),
            Ok(Processed::Skip) => current.skipped += 1,
            Err(e) => match job.skip_policy {
                SkipPolicy::SkipUpTo(limit)
                    if failed_so_far.fetch_add(1, std::sync::atomic::Ordering::SeqCst) < limit =>
                {
                    current.skipped += 1;
                    tracing::warn!(key, error = %e, "processor failed; row skipped");
                }
                _ => return Err(JobError::Processor { key, source: e }),
            },
        }
        if current.rows.len() == job.chunk_size {
            let last = current.last_key;
            chunks.push(std::mem::replace(
                &mut current,
                ProcessedChunk {
                    rows: Vec::new(),
                    last_key: last,
                    read: 0,
                    skipped: 0,
                },
            ));
        }
    }
    if current.read > 0 {
        chunks.push(current);
    }
    Ok(chunks)
}

/// The UPDATE that records a committed chunk on its step (run in the chunk's transaction).
pub(crate) fn checkpoint_statement(
    step_id: i64,
    chunk: &ProcessedChunk<impl Sized>,
    written: u64,
    duplicates: u64,
) -> impl Render {
    use crate::model::batch_step_execution as s;
    use tandem_sql::prelude::*;
    s::table
        .update()
        .set(s::checkpoint, Some(chunk.last_key))
        .set(s::read_count, s::read_count + chunk.read as i64)
        .set(s::write_count, s::write_count + written as i64)
        .set(
            s::skip_count,
            s::skip_count + (chunk.skipped + duplicates) as i64,
        )
        .set(s::chunk_count, s::chunk_count + 1i64)
        .filter(s::id.eq(step_id))
}

/// A chunk's write as one plan — its rows' INSERTs and the checkpoint that counts them written, in one
/// transaction — for a job that fails on duplicates (then every row of a chunk that commits was inserted,
/// so the checkpoint is known before the INSERTs run). `None` for a job that skips duplicates: its
/// checkpoint needs the count the INSERTs report. An executor can then send the whole transaction at once
/// (the async executor's SQLite worker: one call instead of four).
pub(crate) fn chunk_plan<T: Entity>(
    dialect: tandem_sql::Dialect,
    step_id: i64,
    chunk: &ProcessedChunk<T>,
    opts: &tandem_core::BatchOptions,
) -> Result<Option<tandem_core::Plan<u64>>, JobError> {
    if opts.ignore_duplicates {
        return Ok(None);
    }
    let rows = chunk.rows.len() as u64;
    let mut steps = Vec::new();
    let mut insert = None;
    if !chunk.rows.is_empty() {
        let plan = tandem_core::repo::batch_insert::<T>(dialect, &chunk.rows, opts)?;
        steps.extend(plan.steps.iter().cloned());
        insert = Some((plan, steps.len()));
    }
    let checkpoint = checkpoint_statement(step_id, chunk, rows, 0)
        .render(dialect)
        .map_err(tandem_core::Error::from)?;
    steps.push(tandem_core::Step::Sql(checkpoint));
    Ok(Some(tandem_core::Plan::new(
        steps,
        tandem_core::Atomicity::Together,
        move |mut outcomes| {
            let Some((plan, n)) = insert else {
                return Ok(0);
            };
            outcomes.truncate(n);
            let inserted = plan.finish(outcomes)?.inserted;
            if inserted != rows {
                return Err(tandem_core::Error::Internal(format!(
                    "a chunk of {rows} rows inserted {inserted}"
                )));
            }
            Ok(inserted)
        },
    )))
}

/// The UPDATE that ends a step.
pub(crate) fn end_step_statement(
    step_id: i64,
    st: RunStatus,
    error: Option<String>,
) -> impl Render {
    use crate::model::batch_step_execution as s;
    use tandem_sql::prelude::*;
    s::table
        .update()
        .set(s::status, st)
        .set(s::ended_at, Some(crate::model::now_ms()))
        .set(s::error_text, error)
        .filter(s::id.eq(step_id))
}

/// The UPDATE that ends a run, with its totals.
pub(crate) fn end_job_statement(
    execution: i64,
    st: RunStatus,
    totals: (u64, u64, u64),
    error: Option<String>,
) -> impl Render {
    use crate::model::batch_job_execution as j;
    use tandem_sql::prelude::*;
    j::table
        .update()
        .set(j::status, st)
        .set(j::ended_at, Some(crate::model::now_ms()))
        .set(j::read_count, totals.0 as i64)
        .set(j::write_count, totals.1 as i64)
        .set(j::skip_count, totals.2 as i64)
        .set(j::error_text, error)
        .filter(j::id.eq(execution))
}

/// The steps of a new run, and whether it resumes: the latest earlier run's steps carried over (same ranges,
/// checkpoints and counts) so the job resumes where it stopped, or — when there are none — fresh partitions
/// of the source's key range `[lo, hi]` (from its `MIN`/`MAX`, both `None` when it is empty).
pub(crate) fn new_steps(
    execution: i64,
    previous: Vec<StepExecution>,
    (lo, hi): (Option<i64>, Option<i64>),
    parallelism: usize,
) -> (Vec<StepExecution>, bool) {
    let now = crate::model::now_ms();
    let resumed = !previous.is_empty();
    let ranges = match (lo, hi) {
        (Some(lo), Some(hi)) if !resumed => partitions(lo, hi, parallelism),
        _ => Vec::new(),
    };
    let steps = if resumed {
        previous
            .into_iter()
            .map(|s| StepExecution {
                id: 0,
                job_execution_id: execution,
                status: if s.status == RunStatus::Completed {
                    RunStatus::Completed
                } else {
                    RunStatus::Started
                },
                started_at: now,
                ended_at: None,
                error_text: None,
                ..s
            })
            .collect()
    } else {
        ranges
            .into_iter()
            .enumerate()
            .map(|(i, (lo, hi))| StepExecution {
                id: 0,
                job_execution_id: execution,
                step_name: format!("partition-{i}"),
                partition_lo: lo,
                partition_hi: hi,
                status: RunStatus::Started,
                checkpoint: None,
                read_count: 0,
                write_count: 0,
                skip_count: 0,
                chunk_count: 0,
                started_at: now,
                ended_at: None,
                error_text: None,
            })
            .collect()
    };
    (steps, resumed)
}

/// Checks that every source row in the job's range was read once and is written or skipped.
pub(crate) fn check_counts(source_rows: u64, report: &JobReport) -> Result<(), JobError> {
    if report.read != source_rows {
        return Err(JobError::Inconsistent(format!(
            "read {} rows but the source holds {source_rows}",
            report.read
        )));
    }
    if report.written + report.skipped != report.read {
        return Err(JobError::Inconsistent(format!(
            "read {} rows but wrote {} and skipped {}",
            report.read, report.written, report.skipped
        )));
    }
    Ok(())
}

/// Adds up the partitions of a run and checks the counts: the report, and whether the run succeeded.
pub(crate) fn assemble(
    execution_id: i64,
    resumed: bool,
    started: std::time::Instant,
    source_rows: i64,
    partitions: Vec<Result<PartitionReport, JobError>>,
) -> (JobReport, Result<(), JobError>) {
    let mut report = JobReport {
        execution_id,
        partitions: Vec::new(),
        read: 0,
        written: 0,
        skipped: 0,
        chunks: 0,
        duration: started.elapsed(),
        resumed,
    };
    let mut first_error = None;
    for p in partitions {
        match p {
            Ok(p) => {
                report.read += p.read;
                report.written += p.written;
                report.skipped += p.skipped;
                report.chunks += p.chunks;
                report.partitions.push(p);
            }
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    let outcome = match first_error {
        Some(e) => Err(e),
        None => check_counts(source_rows.max(0) as u64, &report),
    };
    (report, outcome)
}

/// The filter that finds a completed run of this job (same name and parameters), the newest. Any completed
/// run counts, not only the latest run: a failed twin run after it (two runs on two nodes of a cluster
/// before the lease existed, or a rerun refused midway) must not hide that the job is done.
pub(crate) fn completed_run_query<S, T>(
    job: &BatchJob<S, T>,
) -> tandem_core::Find<crate::model::batch_job_execution::table> {
    use crate::model::batch_job_execution as jx;
    use tandem_sql::prelude::*;
    tandem_core::Find::all()
        .filter(
            jx::job_name
                .eq(job.name.clone())
                .and(jx::job_params.eq(job.params_text()))
                .and(jx::status.eq(RunStatus::Completed)),
        )
        .order_by(jx::id.desc())
        .limit(1)
}

/// The steps of a run, in order.
pub(crate) fn steps_query(
    execution: i64,
) -> tandem_core::Find<crate::model::batch_step_execution::table> {
    use crate::model::batch_step_execution as sx;
    use tandem_sql::prelude::*;
    tandem_core::Find::all()
        .filter(sx::job_execution_id.eq(execution))
        .order_by(sx::id.asc())
}

/// The latest earlier run of this job that has steps: the one a new run resumes from. A run row without
/// steps (written by an older version that created steps separately, or by hand) is passed over, so its
/// predecessor's checkpoints still count.
pub(crate) fn resume_query<S, T>(
    job: &BatchJob<S, T>,
) -> tandem_core::Find<crate::model::batch_job_execution::table> {
    use crate::model::{batch_job_execution as jx, batch_step_execution as sx};
    use tandem_sql::prelude::*;
    let has_steps = sx::table
        .select(sx::id)
        .correlated_with(jx::table)
        .filter(sx::job_execution_id.eq(jx::id));
    tandem_core::Find::all()
        .filter(
            jx::job_name
                .eq(job.name.clone())
                .and(jx::job_params.eq(job.params_text()))
                .and(exists(has_steps)),
        )
        .order_by(jx::id.desc())
        .limit(1)
}

/// A completed job is not run again.
pub(crate) fn check_last_run<S, T>(
    job: &BatchJob<S, T>,
    last: Option<&crate::model::JobExecution>,
) -> Result<(), JobError> {
    match last {
        Some(l) if l.status == RunStatus::Completed => Err(JobError::AlreadyCompleted {
            name: job.name.clone(),
            params: job.params_text(),
            execution: l.id,
        }),
        _ => Ok(()),
    }
}

/// Marks every run of this job still recorded as STARTED as FAILED. Run while holding the job's run lock
/// ([`crate::lock`]), so such a run is known to have stopped without a word (its process or connection
/// died); its counts stay as they were.
pub(crate) fn abandon_statement<S, T>(job: &BatchJob<S, T>) -> impl Render + use<S, T> {
    use crate::model::batch_job_execution as j;
    use tandem_sql::prelude::*;
    j::table
        .update()
        .set(j::status, RunStatus::Failed)
        .set(j::ended_at, Some(crate::model::now_ms()))
        .set(
            j::error_text,
            Some("abandoned: the run stopped without finishing".to_owned()),
        )
        .filter(
            j::job_name
                .eq(job.name.clone())
                .and(j::job_params.eq(job.params_text()))
                .and(j::status.eq(RunStatus::Started)),
        )
}

/// A run as its start transaction created it: its execution row and its steps, both committed together.
pub(crate) struct Start {
    pub execution: i64,
    pub steps: Vec<StepExecution>,
    pub resumed: bool,
    pub source_rows: i64,
}

/// Puts the keys the database generated on the steps just inserted.
pub(crate) fn set_step_ids(steps: &mut [StepExecution], ids: Vec<i64>) {
    for (s, id) in steps.iter_mut().zip(ids) {
        s.id = id;
    }
}

/// The row of a new run.
pub(crate) fn new_execution<S, T>(job: &BatchJob<S, T>) -> crate::model::JobExecution {
    crate::model::JobExecution {
        id: 0,
        job_name: job.name.clone(),
        job_params: job.params_text(),
        status: RunStatus::Started,
        started_at: crate::model::now_ms(),
        ended_at: None,
        read_count: 0,
        write_count: 0,
        skip_count: 0,
        error_text: None,
    }
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
