//! A partition's progress, as both runners carry it out: where it reads next, what a page becomes, how a
//! chunk is written and counted, and how the partition ends.
//!
//! A partition is complete only when its checkpoint reaches the top of its key range. Its last chunk —
//! the one after which the range holds no more rows — records the range's top as its checkpoint, with the
//! step's end, in its own transaction; a run that resumes reopens every partition whose checkpoint stops
//! short of its range's top, whatever its status says (a step an earlier version marked COMPLETED after a
//! short page included).

use std::sync::atomic::AtomicU64;
use std::time::Instant;

use tandem_core::plan::{Atomicity, Plan, Step};
use tandem_core::{BatchOptions, BatchTransaction};
use tandem_sql::typed::Entity;
use tandem_sql::{Dialect, RawSql, Render};

use super::*;
use crate::lock::LeaseState;
use crate::model::{RunStatus, StepExecution};

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
/// policy's budget is the run's), the lease (taken over: the run writes nothing more), and how its
/// statements read.
pub(crate) struct RunContext<'j, S, T> {
    pub job: &'j BatchJob<S, T>,
    pub failed_rows: &'j AtomicU64,
    pub lease: &'j LeaseState,
    pub reads: Reads,
}

impl<S, T> Clone for RunContext<'_, S, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<S, T> Copy for RunContext<'_, S, T> {}

impl<S, T> RunContext<'_, S, T> {
    /// The options of the run's chunk transactions (see [`BatchJob::write_options`]), begun as the run
    /// reads.
    pub(crate) fn write_options(&self) -> tandem_core::TxOptions {
        self.reads.tx(self.job.write_options())
    }

    /// The options of the run's bookkeeping transactions (see [`BatchJob::bookkeeping_options`]), begun
    /// as the run reads.
    pub(crate) fn bookkeeping_options(&self) -> tandem_core::TxOptions {
        self.reads.tx(self.job.bookkeeping_options())
    }
}

/// Whether a step is done: its checkpoint reached the top of its range.
pub(crate) fn step_complete(step: &StepExecution) -> bool {
    step.checkpoint.is_some_and(|c| c >= step.partition_hi)
}

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
    /// The last key of the partition's last chunk, once a page said there is no more to read.
    last_chunk: Option<i64>,
    /// Whether the step's end was written with its last chunk (see [`Partition::process`]).
    ended: bool,
}

/// How a chunk is written: as one plan (its INSERTs and its checkpoint, sent together), or — for a job
/// that skips duplicates, whose checkpoint needs the count the INSERTs report — by the runner, in a
/// transaction: [`Partition::first`] (on a Galera cluster), the INSERTs, then [`Partition::checkpoint`]
/// and [`Partition::guard`].
pub(crate) enum ChunkWrite {
    Plan(Plan<u64>),
    ByHand,
}

impl<'j, S: Entity<Key = i64>, T: Entity> Partition<'j, S, T> {
    /// The partition of `step`, or — when the step is complete (its checkpoint reached its range's top) —
    /// its figures as they are.
    pub(crate) fn open(
        run: RunContext<'j, S, T>,
        step: &'j StepExecution,
        dialect: Dialect,
    ) -> Result<Self, PartitionReport> {
        let report = PartitionReport::from_step(step);
        if step_complete(step) {
            return Err(report);
        }
        let job = run.job;
        run.lease.progressed();
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
    /// partition's and two more (the run lock's session and the bookkeeping), so that no partition waits
    /// for a connection another holds to its end; otherwise each statement takes one from the pool, as
    /// before. (The blocking pool takes connections back without a round trip: the blocking runner checks
    /// out per statement.)
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

    /// The keyset page of source rows after key `after`, read as the run reads. Pages are read one ahead:
    /// the next page's first key is known once a page is processed ([`Partition::next_after`]), so a runner
    /// reads it while this page's chunks are written. The source is only read, never written, by the job.
    pub(crate) fn page(&self, after: i64) -> impl Render + use<S, T> {
        (self.run.reads).statement(page_statement::<S>(
            after,
            self.step.partition_hi,
            self.job.page_size,
        ))
    }

    /// A page through the processor, in chunks ready to write; `None` for an empty page: the partition is
    /// done.
    ///
    /// A page shorter than the page size, or one that reaches the top of the partition's key range, is the
    /// partition's last (the range holds no more rows: the page was read as the run reads, so on a Galera
    /// cluster after everything committed before it): its last chunk's transaction records the range's top
    /// as the checkpoint and marks the step COMPLETED, and the partition reads no empty page and writes no
    /// step end of its own — one read and one transaction fewer per partition, and the step is complete
    /// exactly when its last rows are. (A full page that stops short of the range's top is followed by a
    /// read that finds nothing, as before.)
    pub(crate) fn process(
        &mut self,
        page: Vec<S>,
    ) -> Result<Option<Vec<ProcessedChunk<T>>>, JobError> {
        if page.is_empty() || self.ended {
            return Ok(None);
        }
        self.run.lease.progressed();
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

    /// What `chunk`'s checkpoint records: its counts, with the range's top as the checkpoint when it is
    /// the partition's last.
    fn counts(&self, chunk: &ProcessedChunk<T>) -> ChunkCounts {
        let mut counts = chunk.counts();
        if self.is_last(chunk) {
            counts.last_key = self.step.partition_hi;
        }
        counts
    }

    fn is_last(&self, chunk: &ProcessedChunk<T>) -> bool {
        self.last_chunk == Some(chunk.last_key)
    }

    /// How to write `chunk` (see [`ChunkWrite`]) — unless the run's lease was taken over meanwhile:
    /// nothing more is written by a run that no longer holds the job.
    pub(crate) fn write(&self, chunk: &ProcessedChunk<T>) -> Result<ChunkWrite, JobError> {
        self.run.lease.check(self.job)?;
        // The last step of the transaction, when the run holds a lease: the checkpoint matches the step's
        // row only while the lease is this run's, and keeps the lease row locked to COMMIT; otherwise the
        // chunk is rolled back with `tandem_core::Error::Fenced`. A run whose lease was taken over commits
        // nothing more, even a chunk already under way.
        let rows = chunk.rows.len() as u64;
        let counts = self.counts(chunk);
        let fence = (self.run.lease)
            .guarded_checkpoint(self.step.id, counts, rows, 0)
            .map(|fenced| (fenced, LeaseState::guarded_what(self.job)));
        let plan = match chunk_plan(self.dialect, self.step.id, chunk, counts, &self.opts, fence)? {
            Some(plan) => plan,
            None => return Ok(ChunkWrite::ByHand),
        };
        let plan = match self.is_last(chunk) {
            true => {
                let end = end_step_statement(self.step, RunStatus::Completed, None);
                plan.followed_by(
                    Step::Sql(rendered(self.dialect, &end)?),
                    Atomicity::Together,
                )
            }
            false => plan,
        };
        Ok(ChunkWrite::Plan(
            self.run.reads.bounded_plan(plan, self.job.lock_lease),
        ))
    }

    /// For a chunk written by hand on a Galera cluster: the statement its transaction begins with, a causal
    /// read of the step's row, so that the INSERTs after it run on a node that has applied everything
    /// certified before (they are sent as the repository sends them). `None` elsewhere.
    pub(crate) fn first(&self) -> Option<impl Render + use<S, T>> {
        use crate::model::batch_step_execution as s;
        use tandem_sql::prelude::*;
        self.run.reads.causal.then(|| {
            (self.run.reads).statement(s::table.select(s::id).filter(s::id.eq(self.step.id)))
        })
    }

    /// The lease guard as a statement, for a chunk written by hand: it must affect one row, or the
    /// transaction is given up with [`Partition::refused`].
    pub(crate) fn guard(&self) -> Option<impl Render + use<S, T>> {
        self.run.lease.guard().map(|g| self.run.reads.statement(g))
    }

    /// The error for a write whose lease guard matched no row.
    pub(crate) fn refused(&self) -> tandem_core::Error {
        tandem_core::Error::Fenced {
            what: LeaseState::guarded_what(self.job),
        }
    }

    /// A chunk's write as the run takes it: refused by the lease guard, the lease is lost.
    pub(crate) fn written<X>(&self, result: Result<X, JobError>) -> Result<X, JobError> {
        self.run.lease.fenced(self.job, result)
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
        (self.run.reads.statement(checkpoint), (inserted, duplicates))
    }

    /// Counts a chunk committed with `written` rows and `duplicates` skipped.
    pub(crate) fn wrote(&mut self, chunk: &ProcessedChunk<T>, (written, duplicates): (u64, u64)) {
        self.run.lease.progressed();
        // A chunk written by hand (`ChunkWrite::ByHand`) does not end the step: the partition then reads
        // on, finds nothing, and ends as usual.
        self.ended |= self.is_last(chunk) && !self.opts.ignore_duplicates;
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

    /// The end of the partition after `result`: the step marked COMPLETED with the range's top as its
    /// checkpoint (a write that must succeed, the partition's report after it), or FAILED with the error
    /// (best effort: the database may be what failed). A run whose lease was taken over writes neither:
    /// its error is logged, not recorded over the run that took the job.
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
            Err(e @ JobError::LockLost { .. }) => {
                tracing::warn!(
                    step = %self.step.step_name,
                    error = %e,
                    "the partition stops: its run's lease was taken over, so it records nothing"
                );
                return Ok(Ending {
                    plan: None,
                    outcome: result.map(|()| self.report),
                });
            }
            Ok(()) => (RunStatus::Completed, None),
            Err(e) => (RunStatus::Failed, Some(e.to_string())),
        };
        let statement = rendered(self.dialect, &end_step_statement(self.step, status, error))?;
        Ok(Ending {
            plan: Some(guarded(self.run, self.dialect, vec![statement])?),
            outcome: result.map(|()| self.report),
        })
    }
}

/// A bookkeeping plan of `statements` run together, read as the run reads, ending with the lease's guard
/// when the run holds one.
pub(crate) fn guarded<S, T>(
    run: RunContext<'_, S, T>,
    dialect: Dialect,
    statements: Vec<tandem_sql::Rendered>,
) -> Result<Plan<()>, JobError> {
    guarded_by(run, dialect, statements, run.lease.guard())
}

/// A bookkeeping plan of `statements` run together, read as the run reads (its lock waits bounded by the
/// lease), ending with `guard` (a statement that must affect a row: the lease's renewal, or at the run's
/// end its release).
pub(crate) fn guarded_by<S, T>(
    run: RunContext<'_, S, T>,
    dialect: Dialect,
    statements: Vec<tandem_sql::Rendered>,
    guard: Option<RawSql>,
) -> Result<Plan<()>, JobError> {
    let mut plan = together(statements);
    if let Some(guard) = guard {
        plan = plan.followed_by(guard_step(dialect, run.job, &guard)?, Atomicity::Together);
    }
    Ok(run.reads.bounded_plan(plan, run.job.lock_lease))
}

/// The lease's guard as a plan step.
pub(crate) fn guard_step<S, T>(
    dialect: Dialect,
    job: &BatchJob<S, T>,
    guard: &RawSql,
) -> Result<Step, JobError> {
    Ok(Step::Guard {
        statement: rendered(dialect, guard)?,
        what: LeaseState::guarded_what(job),
    })
}
