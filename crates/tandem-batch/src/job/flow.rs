//! A run as both runners carry it out, written once: what the start of a run reads and decides, how a
//! run ends (and, when its counts do not add up, which partitions are short), and what the lease's
//! answers mean. A partition's own progress is in `partition`. Each runner is the I/O around these —
//! threads and blocking calls, or tasks and awaits — so the two behave alike by construction.

use std::time::Instant;

use tandem_core::plan::{Atomicity, Plan, Step};
use tandem_sql::typed::Entity;
use tandem_sql::{Dialect, FromRow, RawSql, Render, Rendered};

use super::*;
use crate::lock::{LeaseStep, lease_insert, lease_step, lease_take_over};
use crate::model::{JobExecution, RunStatus, StepExecution};

pub(crate) fn rendered(dialect: Dialect, statement: &impl Render) -> Result<Rendered, JobError> {
    Ok(statement
        .render(dialect)
        .map_err(tandem_core::Error::from)?)
}

/// A plan of statements run together, whose result is nothing.
pub(crate) fn together(statements: Vec<Rendered>) -> Plan<()> {
    Plan::new(
        statements.into_iter().map(Step::Sql).collect(),
        Atomicity::Together,
        |_| Ok(()),
    )
}

/// What a new run reads before it writes anything, in one plan (one transaction, run again after a
/// deadlock or a serialization failure): the job's last completed run, the steps of the run to resume from,
/// and the source's key range and size. It also marks earlier runs still recorded as STARTED, and their
/// unfinished steps, as FAILED: under the job's lease such a run is known to have stopped (its own writes
/// are fenced from now on). Read as the run reads, and ended by the lease's guard.
pub(crate) struct StartReads {
    completed: Option<JobExecution>,
    previous: Vec<StepExecution>,
    bounds: (Option<i64>, Option<i64>),
    source_rows: i64,
}

/// The plan of [`StartReads`] for the run `run`.
pub(crate) fn start_reads<S: Entity, T>(
    dialect: Dialect,
    run: RunContext<'_, S, T>,
) -> Result<Plan<StartReads>, JobError> {
    let job = run.job;
    let completed = tandem_core::repo::find_all::<JobExecution>(dialect, completed_run_query(job))?;
    let abandon_steps = rendered(dialect, &abandon_steps_statement(job))?;
    let abandon = rendered(dialect, &abandon_statement(job))?;
    let previous = tandem_core::repo::find_all::<StepExecution>(dialect, resumed_steps_query(job))?;
    let bounds = rendered(dialect, &bounds_statement::<S>())?;
    let steps = [completed, abandon_steps, abandon, previous, bounds]
        .map(Step::Sql)
        .to_vec();
    let mut plan = Plan::new(steps, Atomicity::Together, |outcomes| {
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
    });
    if let Some(guard) = run.lease.guard() {
        plan = plan.followed_by(guard_step(dialect, job, &guard)?, Atomicity::Together);
    }
    Ok(run.reads.bounded_plan(plan, job.lock_lease))
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
        let reopened: Vec<&str> = (steps.iter())
            .zip(&self.previous)
            .filter(|(_, before)| before.status == RunStatus::Completed && !step_complete(before))
            .map(|(s, _)| s.step_name.as_str())
            .collect();
        if !reopened.is_empty() {
            tracing::warn!(
                ?reopened,
                "partitions recorded COMPLETED whose checkpoints stop short of their ranges' tops are read \
                 again from their checkpoints"
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

/// How a partition or a run ends: the statement that records it, as a plan (run again after a deadlock),
/// and what the runner returns once it ran.
pub(crate) struct Ending<R> {
    /// The recording statement; none when it was written already (a partition's last chunk ended it), or
    /// when the run's lease was taken over (nothing more is recorded).
    pub plan: Option<Plan<()>>,
    pub(crate) outcome: Result<R, JobError>,
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
    /// The outcome, after the recording statement gave `recorded`: a success must have been recorded (a
    /// record refused by the lease's guard is [`JobError::LockLost`]); a failure is returned whatever its
    /// recording did.
    pub(crate) fn after<S, T>(
        self,
        run: RunContext<'_, S, T>,
        recorded: tandem_core::Result<()>,
    ) -> Result<R, JobError> {
        let recorded = run.lease.fenced(run.job, recorded.map_err(JobError::from));
        match (self.0, recorded) {
            (Ok(r), recorded) => recorded.map(|()| r),
            (Err(e), Err(JobError::LockLost { .. })) => {
                tracing::warn!(error = %e, "the run's lease was taken over: its failure is not recorded");
                Err(e)
            }
            (Err(e), _) => Err(e),
        }
    }
}

/// The end of a run whose partitions returned `results`: the report, checked, and the run marked
/// COMPLETED, or FAILED with the first error, and its lease given back — unless its lease was taken over,
/// whose run records nothing (its error goes to the log). When the counts do not add up, `short` (see [`shortfall_plan`]) names
/// the partitions whose reads fall short of the source.
pub(crate) fn end_run<S, T>(
    dialect: Dialect,
    run: RunContext<'_, S, T>,
    start: &Start,
    started: Instant,
    results: Vec<Result<PartitionReport, JobError>>,
    short: Option<&[i64]>,
) -> Result<Ending<JobReport>, JobError> {
    let (mut report, outcome) = assemble(
        start.execution,
        start.resumed,
        started,
        start.source_rows,
        results,
    );
    let outcome = match (outcome, short) {
        (Err(JobError::Inconsistent(what)), Some(counts)) => Err(JobError::Inconsistent(
            explain_shortfall(what, &start.steps, &report, counts),
        )),
        (outcome, _) => outcome,
    };
    report.duration = started.elapsed();
    report.parallelism_asked = start.parallelism_asked;
    let totals = (report.read, report.written, report.skipped);
    let (status, error) = match &outcome {
        Ok(()) => (RunStatus::Completed, None),
        Err(e @ JobError::LockLost { .. }) => {
            tracing::warn!(error = %e, "the run's lease was taken over: its end is not recorded");
            return Ok(Ending {
                plan: None,
                outcome: outcome.map(|()| report),
            });
        }
        Err(e) => (RunStatus::Failed, Some(e.to_string())),
    };
    let statement = rendered(
        dialect,
        &end_job_statement(start.execution, status, totals, error),
    )?;
    // The lease goes back in the same transaction, whose guard it is: the run's end is recorded only
    // while the lease is this run's, and the next run finds the job free the moment it is.
    Ok(Ending {
        plan: Some(guarded_by(
            run,
            dialect,
            vec![statement],
            run.lease.release(),
        )?),
        outcome: outcome.map(|()| report),
    })
}

/// Whether a run's counts will not add up, before it is recorded: then the runner asks
/// [`shortfall_plan`] where the rows are.
pub(crate) fn counts_fall_short(
    start: &Start,
    results: &[Result<PartitionReport, JobError>],
) -> bool {
    if results.iter().any(Result::is_err) {
        return false;
    }
    let read: u64 = results.iter().flatten().map(|p| p.read).sum();
    read != start.source_rows.max(0) as u64
}

/// How many source rows each partition's key range holds now, in the steps' order: one COUNT per range,
/// in one transaction. Asked only when a run's counts do not add up, to say which partitions are short.
pub(crate) fn shortfall_plan<S: Entity, T>(
    dialect: Dialect,
    run: RunContext<'_, S, T>,
    steps: &[StepExecution],
) -> Result<Plan<Vec<i64>>, JobError> {
    use tandem_sql::ast::{BinaryOp, Expr, SelectItem};
    let counts = steps
        .iter()
        .map(|step| {
            let mut s = tandem_sql::ast::Select::from(<S::Table as tandem_sql::typed::Table>::NAME);
            s.items = vec![SelectItem::Expr {
                expr: Expr::CountStar,
                alias: None,
            }];
            s.and_where(key_col::<S>().binary(BinaryOp::GtEq, Expr::value(step.partition_lo)));
            s.and_where(key_col::<S>().binary(BinaryOp::LtEq, Expr::value(step.partition_hi)));
            rendered(dialect, &s).map(Step::Sql)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let plan = Plan::new(counts, Atomicity::Together, |outcomes| {
        (outcomes.into_iter())
            .map(|o| {
                let row = o.rows.into_iter().next();
                let (n,): (i64,) = row
                    .map(FromRow::from_row)
                    .transpose()?
                    .ok_or_else(|| tandem_core::Error::Internal("COUNT returned no row".into()))?;
                Ok(n)
            })
            .collect()
    });
    Ok(run.reads.plan(plan))
}

/// The message of a run whose counts do not add up, with the partitions whose reads fall short of (or
/// exceed) what their ranges hold now, and what to do.
fn explain_shortfall(
    what: String,
    steps: &[StepExecution],
    report: &JobReport,
    holds: &[i64],
) -> String {
    let mut off = Vec::new();
    for ((step, part), holds) in steps.iter().zip(&report.partitions).zip(holds) {
        if part.read as i64 != *holds {
            off.push(format!(
                "{} (keys {} to {}) read {} rows, the source holds {holds} there",
                step.step_name, step.partition_lo, step.partition_hi, part.read
            ));
        }
    }
    if off.is_empty() {
        return what;
    }
    format!(
        "{what}: {}. Every partition's checkpoint reached the top of its range, so a rerun reads none of \
         these rows again: rows were added to the source behind a checkpoint after it passed (or read \
         where they were not yet applied). Run the job again under other parameters to read the whole \
         source afresh (with `ignore_duplicates`, rows written already are counted as skipped)",
        off.join("; ")
    )
}

/// A partition's thread or task that did not return: it panicked (with this message), or was cancelled.
pub(crate) fn panicked(step: &StepExecution, message: String) -> JobError {
    JobError::Panicked {
        partition: step.step_name.clone(),
        message,
    }
}

/// A run's claim on its job's lease: the engine, the job's key, a fresh owner name, the node the run's lock
/// session is on, and the lease's length.
pub(crate) struct LeaseClaim {
    pub dialect: Dialect,
    pub key: u64,
    pub owner: String,
    pub node: String,
    pub length: std::time::Duration,
    /// The job's name and parameters, for the refusal when another run holds the lease.
    job: (String, String),
}

impl LeaseClaim {
    /// The claim of a run of `job` on `dialect` whose lock session is on `node`.
    pub(crate) fn new<S, T>(dialect: Dialect, job: &BatchJob<S, T>, node: String) -> Self {
        LeaseClaim {
            dialect,
            key: crate::lock::job_key(job),
            owner: crate::lock::new_owner(),
            node,
            length: job.lock_lease,
            job: (job.name.clone(), job.params_text()),
        }
    }

    /// What the lease transaction writes for the row it read.
    pub(crate) fn write(&self, row: Option<(String, String, i64, i64)>) -> LeaseWrite {
        match lease_step(row, &self.node) {
            LeaseStep::Insert => LeaseWrite::Write(lease_insert(
                self.dialect,
                self.key,
                &self.owner,
                &self.node,
                self.length,
            )),
            LeaseStep::TakeOver(from) => LeaseWrite::Write(lease_take_over(
                self.dialect,
                self.key,
                &from,
                &self.owner,
                &self.node,
                self.length,
            )),
            LeaseStep::Held { node, ms_left } => LeaseWrite::Held(node, ms_left),
        }
    }
}

/// What the lease transaction writes, from the lease row it read.
pub(crate) enum LeaseWrite {
    /// A new lease, or one taken over (expired, or this node's, whose session is known to be gone).
    Write(RawSql),
    /// Nothing: a run elsewhere holds it, for this many more milliseconds.
    Held(String, i64),
}

/// What the lease transaction's result (the holder when another run held it) means for the run of
/// `claim`: go on, or another run has the job (held elsewhere, or inserted by another run first).
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
            tracing::info!(%node, ms_left, "the job's lease is held by a run elsewhere");
            Err(refused())
        }
        Err(e) if e.kind() == Some(tandem_core::DbErrorKind::UniqueViolation) => Err(refused()),
        Err(e) => Err(e.into()),
    }
}
