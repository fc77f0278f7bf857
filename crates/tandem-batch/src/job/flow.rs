//! A run as both runners carry it out, written once: what the start of a run reads and decides, a
//! partition's progress (where it reads next, what a page becomes, how a chunk is written and counted), how
//! a partition and a run end, and what the lease's answers mean. Each runner is the I/O around these —
//! threads and blocking calls, or tasks and awaits — so the two behave alike by construction.

use std::sync::atomic::AtomicU64;
use std::time::Instant;

use tandem_core::plan::{Atomicity, Plan, Step};
use tandem_core::{BatchOptions, BatchTransaction};
use tandem_sql::typed::Entity;
use tandem_sql::{Dialect, FromRow, RawSql, Render, Rendered};

use super::*;
use crate::lock::{LeaseStep, lease_insert, lease_step, lease_take_over};
use crate::model::{JobExecution, RunStatus, StepExecution};

fn rendered(dialect: Dialect, statement: &impl Render) -> Result<Rendered, JobError> {
    Ok(statement
        .render(dialect)
        .map_err(tandem_core::Error::from)?)
}

/// A plan of statements run together, whose result is nothing.
fn together(statements: Vec<Rendered>) -> Plan<()> {
    Plan::new(
        statements.into_iter().map(Step::Sql).collect(),
        Atomicity::Together,
        |_| Ok(()),
    )
}

/// What a new run reads before it writes anything, in one plan (one transaction, run again after a
/// deadlock or a serialization failure): the job's last completed run, the steps of the run to resume from,
/// and the source's key range and size. It also marks earlier runs still recorded as STARTED, and their
/// unfinished steps, as FAILED: under the job's run lock such a run is known to have stopped without a word.
pub(crate) struct StartReads {
    completed: Option<JobExecution>,
    previous: Vec<StepExecution>,
    bounds: (Option<i64>, Option<i64>),
    source_rows: i64,
}

/// The plan of [`StartReads`] for `job`.
pub(crate) fn start_reads<S: Entity, T>(
    dialect: Dialect,
    job: &BatchJob<S, T>,
) -> Result<Plan<StartReads>, JobError> {
    let completed = tandem_core::repo::find_all::<JobExecution>(dialect, completed_run_query(job))?;
    let abandon_steps = rendered(dialect, &abandon_steps_statement(job))?;
    let abandon = rendered(dialect, &abandon_statement(job))?;
    let previous = tandem_core::repo::find_all::<StepExecution>(dialect, resumed_steps_query(job))?;
    let bounds = rendered(dialect, &bounds_statement::<S>())?;
    let steps = [completed, abandon_steps, abandon, previous, bounds]
        .map(Step::Sql)
        .to_vec();
    Ok(Plan::new(steps, Atomicity::Together, |outcomes| {
        let [completed, _, _, previous, bounds]: [tandem_core::plan::Outcome; 5] =
            outcomes.try_into().map_err(|_| {
                tandem_core::Error::Internal("the start of a run read other than 5 results".into())
            })?;
        let completed = completed
            .rows
            .into_iter()
            .next()
            .map(JobExecution::from_row)
            .transpose()?;
        let previous = previous
            .rows
            .into_iter()
            .map(StepExecution::from_row)
            .collect::<tandem_sql::Result<Vec<_>>>()?;
        let (lo, hi, source_rows): (Option<i64>, Option<i64>, i64) = bounds
            .rows
            .into_iter()
            .next()
            .map(FromRow::from_row)
            .transpose()?
            .ok_or_else(|| tandem_core::Error::Internal("no row of source bounds".into()))?;
        Ok(StartReads {
            completed,
            previous,
            bounds: (lo, hi),
            source_rows,
        })
    }))
}

/// What a new run writes, decided from [`StartReads`]: its execution row, and its steps — carried over
/// from the run it resumes (with their checkpoints), or fresh partitions of the source's key range.
pub(crate) struct StartWrites {
    /// The run's row (its key is generated when inserted).
    pub execution: JobExecution,
    previous: Vec<StepExecution>,
    bounds: (Option<i64>, Option<i64>),
    parallelism: usize,
    source_rows: i64,
}

impl StartReads {
    /// The run to write, or why there is none: a completed job is not run again. A resumed run keeps the
    /// partitions it had; a changed `parallelism` is said in a warning and in the report.
    pub(crate) fn decide<S, T>(self, job: &BatchJob<S, T>) -> Result<StartWrites, JobError> {
        check_last_run(job, self.completed.as_ref())?;
        Ok(StartWrites {
            execution: new_execution(job),
            previous: self.previous,
            bounds: self.bounds,
            parallelism: job.parallelism,
            source_rows: self.source_rows,
        })
    }
}

impl StartWrites {
    /// The steps of the run whose execution row got key `execution`, and whether it resumes.
    pub(crate) fn steps(&self, execution: i64) -> (Vec<StepExecution>, bool) {
        new_steps(
            execution,
            self.previous.clone(),
            self.bounds,
            self.parallelism,
        )
    }

    /// The run as written: its key, and its steps with the keys they got.
    pub(crate) fn started(
        &self,
        execution: i64,
        mut steps: Vec<StepExecution>,
        ids: Vec<i64>,
        resumed: bool,
    ) -> Start {
        set_step_ids(&mut steps, ids);
        let carried = resumed.then_some(steps.len());
        if let Some(kept) = carried.filter(|kept| *kept != self.parallelism) {
            tracing::warn!(
                kept,
                asked = self.parallelism,
                "a resumed run keeps the partitions of the run it resumes, not the parallelism asked for"
            );
        }
        Start {
            execution,
            steps,
            resumed,
            source_rows: self.source_rows,
            parallelism_asked: self.parallelism,
        }
    }
}

/// The options every chunk is written with: the job's chunk size and duplicate policy, one transaction per
/// chunk, and multi-row INSERTs — for chunks of a few hundred rows COPY gains nothing, and sqlx's costs a
/// round trip of its own.
pub(crate) fn chunk_options<S, T>(job: &BatchJob<S, T>) -> BatchOptions {
    BatchOptions {
        chunk_rows: Some(job.chunk_size),
        ignore_duplicates: job.ignore_duplicates,
        transaction: BatchTransaction::PerCall,
        allow_copy: false,
        ..BatchOptions::default()
    }
}

/// What every partition of a run shares: the job, the count of rows the processor failed on (the skip
/// policy's budget is the run's), and the flag the lease keeper raises when the run lost its lease.
pub(crate) struct RunContext<'j, S, T> {
    pub job: &'j BatchJob<S, T>,
    pub failed_rows: &'j AtomicU64,
    pub lost: &'j crate::lock::LeaseLost,
}

impl<S, T> Clone for RunContext<'_, S, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<S, T> Copy for RunContext<'_, S, T> {}

/// One partition of a run under way: its step, the last source key it has committed, its figures.
pub(crate) struct Partition<'j, S, T> {
    run: RunContext<'j, S, T>,
    job: &'j BatchJob<S, T>,
    step: &'j StepExecution,
    dialect: Dialect,
    after: i64,
    report: PartitionReport,
    started: Instant,
    /// How its chunks are written.
    pub opts: BatchOptions,
    /// The last key of the partition's last chunk, once a short page said there is no more to read.
    last_chunk: Option<i64>,
    /// Whether the step's end was written with its last chunk (see [`Partition::process`]).
    ended: bool,
}

/// How a chunk is written: as one plan (its INSERTs and its checkpoint, sent together), or — for a job
/// that skips duplicates, whose checkpoint needs the count the INSERTs report — by the runner, in a
/// transaction: the INSERTs, then [`Partition::checkpoint`].
pub(crate) enum ChunkWrite {
    Plan(Plan<u64>),
    ByHand,
}

impl<'j, S: Entity<Key = i64>, T: Entity> Partition<'j, S, T> {
    /// The partition of `step`, or — when the step completed in an earlier run — its figures as they are.
    pub(crate) fn open(
        run: RunContext<'j, S, T>,
        step: &'j StepExecution,
        dialect: Dialect,
    ) -> Result<Self, PartitionReport> {
        let report = PartitionReport::from_step(step);
        if step.status == RunStatus::Completed {
            return Err(report);
        }
        let job = run.job;
        run.lost.progressed();
        Ok(Partition {
            run,
            job,
            step,
            dialect,
            after: step
                .checkpoint
                .unwrap_or(step.partition_lo.saturating_sub(1)),
            report,
            started: Instant::now(),
            opts: chunk_options(job),
            last_chunk: None,
            ended: false,
        })
    }

    /// Whether the runner reads the next page while it writes this one's chunks. On a server the read
    /// overlaps a round trip; on SQLite both are the same process's work on the same file, and a second
    /// connection reading beside the writer made one-partition runs slower (blocking: 84 → 74 ops/s at
    /// 10,000 rows, same-run A/B), so the page is read after the chunks are written.
    pub(crate) fn reads_ahead(&self) -> bool {
        self.dialect != Dialect::Sqlite
    }

    /// How many connections the async runner's partition keeps from a pool of `max_size` for its whole run:
    /// one it writes its chunks on (and reads its pages on, when it does not read ahead), and one it reads
    /// ahead on. sqlx's pool pings every connection it takes back (a round trip the statement did not
    /// need), and a connection not yet back when the next statement asks makes it open another, which
    /// prepares the partition's statements again: a checkout per statement cost the async runner a
    /// quarter more round trips than the blocking one. Kept only where the pool has room for every
    /// partition's and two more (the run lock's session and the lease keeper's renewals), so that no
    /// partition waits for a connection another holds to its end; otherwise each statement takes one from
    /// the pool, as before. (The blocking pool takes connections back without a round trip: the blocking
    /// runner checks out per statement.)
    pub(crate) fn kept_connections(&self, max_size: u32) -> u32 {
        let partitions = self.run.job.parallelism.max(1) as u32;
        let each = if self.reads_ahead() { 2 } else { 1 };
        (0..=each)
            .rev()
            .find(|&k| max_size >= k * partitions + 2)
            .unwrap_or(0)
    }

    /// The last source key committed.
    pub(crate) fn after(&self) -> i64 {
        self.after
    }

    /// The keyset page of source rows after key `after`. Pages are read one ahead: the next page's first
    /// key is known once a page is processed ([`Partition::next_after`]), so a runner reads it while this
    /// page's chunks are written. The source is only read, never written, by the job.
    pub(crate) fn page(&self, after: i64) -> impl Render + use<S, T> {
        page_statement::<S>(after, self.step.partition_hi, self.job.page_size)
    }

    /// A page through the processor, in chunks ready to write; `None` for an empty page: the partition is
    /// done.
    ///
    /// A page shorter than the page size, or one that reaches the top of the partition's key range, is the
    /// partition's last (the range holds no more rows): its last chunk's transaction also marks the step
    /// COMPLETED, and the partition reads no empty page and writes no step end of its own — one read and
    /// one transaction fewer per partition, and the step is complete exactly when its last rows are. (A
    /// full page that stops short of the range's top is followed by a read that finds nothing, as before.)
    pub(crate) fn process(
        &mut self,
        page: Vec<S>,
    ) -> Result<Option<Vec<ProcessedChunk<T>>>, JobError> {
        if page.is_empty() || self.ended {
            return Ok(None);
        }
        self.run.lost.progressed();
        let short = (page.len() as u64) < self.job.page_size;
        let chunks = process_page(self.job, page, self.run.failed_rows)?;
        let last_key = chunks.last().map(|c| c.last_key);
        if short || last_key == Some(self.step.partition_hi) {
            self.last_chunk = last_key;
        }
        Ok(Some(chunks))
    }

    /// Whether there is no page to read after the one being written (its chunks end the partition).
    pub(crate) fn last_page(&self) -> bool {
        self.last_chunk.is_some()
    }

    /// Whether the partition is done: its last chunk was written, and with it the step's end.
    pub(crate) fn ended(&self) -> bool {
        self.ended
    }

    /// Where the page after these chunks starts.
    pub(crate) fn next_after(&self, chunks: &[ProcessedChunk<T>]) -> i64 {
        chunks.last().map_or(self.after, |c| c.last_key)
    }

    /// How to write `chunk` (see [`ChunkWrite`]) — unless the run lost its lease meanwhile: nothing more
    /// is written by a run that no longer holds the job.
    /// A run that holds a lease ends every chunk's transaction with its guard ([`Partition::fence`]).
    pub(crate) fn write(&self, chunk: &ProcessedChunk<T>) -> Result<ChunkWrite, JobError> {
        self.run.lost.check(self.job)?;
        // The last step of the transaction, when the run holds a lease: the checkpoint matches the step's
        // row only while the lease is this run's, and keeps the lease row locked to COMMIT; otherwise the
        // chunk is rolled back with `tandem_core::Error::Fenced`. A run whose lease was taken over commits
        // nothing more, even a chunk already under way.
        let rows = chunk.rows.len() as u64;
        let fence = (self.run.lost)
            .fenced_checkpoint(self.step.id, chunk.counts(), rows, 0)
            .map(|fenced| (fenced, self.fenced_what()));
        let plan = match chunk_plan(self.dialect, self.step.id, chunk, &self.opts, fence)? {
            Some(plan) => plan,
            None => return Ok(ChunkWrite::ByHand),
        };
        Ok(ChunkWrite::Plan(
            match self.last_chunk == Some(chunk.last_key) {
                true => {
                    let end = end_step_statement(self.step.id, RunStatus::Completed, None);
                    plan.followed_by(
                        Step::Sql(rendered(self.dialect, &end)?),
                        Atomicity::Together,
                    )
                }
                false => plan,
            },
        ))
    }

    /// The lease guard as a statement, for a chunk written by hand: it must affect one row, or the
    /// transaction is given up with [`Partition::refused`].
    pub(crate) fn hold(&self) -> Option<RawSql> {
        self.run.lost.fence()
    }

    /// The error for a chunk whose lease guard matched no row.
    pub(crate) fn refused(&self) -> tandem_core::Error {
        tandem_core::Error::Fenced {
            what: self.fenced_what(),
        }
    }

    fn fenced_what(&self) -> String {
        format!("the lease of job {:?}", self.job.name)
    }

    /// A chunk's write as the run takes it: refused by the lease guard, the lease is lost.
    pub(crate) fn written<X>(&self, result: Result<X, JobError>) -> Result<X, JobError> {
        self.run.lost.fenced(self.job, result)
    }

    /// For a chunk written by hand: the checkpoint to run after its INSERTs, which inserted `inserted`
    /// rows, in the same transaction; and the rows written and skipped as duplicates.
    pub(crate) fn checkpoint(
        &self,
        chunk: &ProcessedChunk<T>,
        inserted: u64,
    ) -> (impl Render + use<S, T>, (u64, u64)) {
        let duplicates = chunk.rows.len() as u64 - inserted;
        let checkpoint = checkpoint_statement(self.step.id, chunk.counts(), inserted, duplicates);
        (checkpoint, (inserted, duplicates))
    }

    /// Counts a chunk committed with `written` rows and `duplicates` skipped.
    pub(crate) fn wrote(&mut self, chunk: &ProcessedChunk<T>, (written, duplicates): (u64, u64)) {
        self.run.lost.progressed();
        // A chunk written by hand (`ChunkWrite::ByHand`) does not end the step: the partition then reads
        // on, finds nothing, and ends as usual.
        self.ended |= self.last_chunk == Some(chunk.last_key) && !self.opts.ignore_duplicates;
        self.after = chunk.last_key;
        self.report.read += chunk.read;
        self.report.written += written;
        self.report.skipped += chunk.skipped + duplicates;
        self.report.chunks += 1;
    }

    /// The job's pause between chunks, if it has one (a test's way to stretch a run).
    pub(crate) fn delay(&self) -> Option<std::time::Duration> {
        self.job.chunk_delay
    }

    /// The end of the partition after `result`: the step marked COMPLETED (a write that must succeed, the
    /// partition's report after it), or FAILED with the error (best effort: the database may be what
    /// failed).
    pub(crate) fn end(
        mut self,
        result: Result<(), JobError>,
    ) -> Result<Ending<PartitionReport>, JobError> {
        self.report.duration = self.started.elapsed();
        let (status, error) = match &result {
            // Written with the last chunk already.
            Ok(()) if self.ended => {
                return Ok(Ending {
                    plan: None,
                    outcome: Ok(self.report),
                });
            }
            Ok(()) => (RunStatus::Completed, None),
            Err(e) => (RunStatus::Failed, Some(e.to_string())),
        };
        let statement = rendered(
            self.dialect,
            &end_step_statement(self.step.id, status, error),
        )?;
        Ok(Ending {
            plan: Some(together(vec![statement])),
            outcome: result.map(|()| self.report),
        })
    }
}

/// How a partition or a run ends: the statement that records it, as a plan (run again after a deadlock),
/// and what the runner returns once it ran.
pub(crate) struct Ending<R> {
    /// The recording statement; none when it was written already (a partition's last chunk ended it).
    pub plan: Option<Plan<()>>,
    outcome: Result<R, JobError>,
}

impl<R> Ending<R> {
    /// Splits off the plan to run, if any; [`Settle::after`] takes its result.
    pub(crate) fn split(self) -> (Option<Plan<()>>, Settle<R>) {
        (self.plan, Settle(self.outcome))
    }
}

/// What a partition or a run returns, once its ending was recorded.
pub(crate) struct Settle<R>(Result<R, JobError>);

impl<R> Settle<R> {
    /// The outcome, after the recording statement gave `recorded`: a success must have been recorded; a
    /// failure is returned whatever its recording did.
    pub(crate) fn after(self, recorded: tandem_core::Result<()>) -> Result<R, JobError> {
        match self.0 {
            Ok(r) => recorded.map(|()| r).map_err(JobError::from),
            Err(e) => Err(e),
        }
    }
}

/// The end of a run whose partitions returned `results`: the report, checked, and the run marked
/// COMPLETED, or FAILED with the first error.
pub(crate) fn end_run(
    dialect: Dialect,
    start: &Start,
    started: Instant,
    results: Vec<Result<PartitionReport, JobError>>,
) -> Result<Ending<JobReport>, JobError> {
    let (mut report, outcome) = assemble(
        start.execution,
        start.resumed,
        started,
        start.source_rows,
        results,
    );
    report.duration = started.elapsed();
    report.parallelism_asked = start.parallelism_asked;
    let totals = (report.read, report.written, report.skipped);
    let (status, error) = match &outcome {
        Ok(()) => (RunStatus::Completed, None),
        Err(e) => (RunStatus::Failed, Some(e.to_string())),
    };
    let statement = rendered(
        dialect,
        &end_job_statement(start.execution, status, totals, error),
    )?;
    Ok(Ending {
        plan: Some(together(vec![statement])),
        outcome: outcome.map(|()| report),
    })
}

/// A partition's thread or task that did not return: it panicked (with this message), or was cancelled.
pub(crate) fn panicked(step: &StepExecution, message: String) -> JobError {
    JobError::Panicked {
        partition: step.step_name.clone(),
        message,
    }
}

/// A run's claim on its job's lease: the job's key, a fresh owner name, the node the run's lock session is
/// on, and the lease's length.
pub(crate) struct LeaseClaim {
    pub key: u64,
    pub owner: String,
    pub node: String,
    pub length: std::time::Duration,
    /// The job's name and parameters, for the refusal when another run holds the lease.
    job: (String, String),
}

impl LeaseClaim {
    /// The claim of a run of `job` whose lock session is on `node`.
    pub(crate) fn new<S, T>(job: &BatchJob<S, T>, node: String) -> Self {
        LeaseClaim {
            key: crate::lock::job_key(job),
            owner: crate::lock::new_owner(),
            node,
            length: job.lock_lease,
            job: (job.name.clone(), job.params_text()),
        }
    }

    /// What the lease transaction writes for the row it read.
    pub(crate) fn write(&self, row: Option<(String, String, i64, i64)>) -> LeaseWrite {
        lease_write(row, &self.node, self.key, &self.owner, self.length)
    }
}

/// What the lease transaction writes, from the lease row it read.
pub(crate) enum LeaseWrite {
    /// A new lease, or one taken over (expired, or this node's, whose run is known to be gone).
    Write(RawSql),
    /// Nothing: another node's run holds it, for this many more milliseconds.
    Held(String, i64),
}

/// The lease transaction's write for the row it read.
fn lease_write(
    row: Option<(String, String, i64, i64)>,
    node: &str,
    key: u64,
    owner: &str,
    length: std::time::Duration,
) -> LeaseWrite {
    match lease_step(row, node) {
        LeaseStep::Insert => LeaseWrite::Write(lease_insert(key, owner, node, length)),
        LeaseStep::TakeOver(from) => {
            LeaseWrite::Write(lease_take_over(key, &from, owner, node, length))
        }
        LeaseStep::Held { node, ms_left } => LeaseWrite::Held(node, ms_left),
    }
}

/// What the lease transaction's result (the holder when another node's run held it) means for the run of
/// `claim`: go on, or another run has the job (held on another node, or inserted by another node first).
pub(crate) fn lease_taken(
    held: tandem_core::Result<Option<(String, i64)>>,
    claim: &LeaseClaim,
) -> Result<(), JobError> {
    let refused = || JobError::AlreadyRunning {
        name: claim.job.0.clone(),
        params: claim.job.1.clone(),
    };
    match held {
        Ok(None) => Ok(()),
        Ok(Some((node, ms_left))) => {
            tracing::info!(%node, ms_left, "the job's lease is held by a run on another node");
            Err(refused())
        }
        Err(e) if e.kind() == Some(tandem_core::DbErrorKind::UniqueViolation) => Err(refused()),
        Err(e) => Err(e.into()),
    }
}

/// What a renewal of the lease (the renewing statement's result, and when it last succeeded) means: keep
/// renewing, or the lease is lost — taken over (no row renewed), or not renewed for a whole lease.
pub(crate) fn renewal_lost(
    renewed: tandem_core::Result<u64>,
    last_renewed: &mut Instant,
    length: std::time::Duration,
) -> bool {
    match renewed {
        Ok(1) => {
            *last_renewed = Instant::now();
            false
        }
        Ok(_) => true,
        Err(_) => last_renewed.elapsed() >= length,
    }
}
