//! The job repository's statements, shared by both runners: a chunk and its checkpoint, the ends of steps
//! and runs, what a resumed run reads back, and the consistency check of the report.

use super::*;

/// The UPDATE that records a committed chunk on its step (run in the chunk's transaction): its last key as
/// the checkpoint, and its counts.
pub(crate) fn checkpoint_statement(
    step_id: i64,
    chunk: ChunkCounts,
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

/// What a chunk's checkpoint records of it: its last source key, the rows it read and skipped.
#[derive(Clone, Copy)]
pub(crate) struct ChunkCounts {
    pub last_key: i64,
    pub read: u64,
    pub skipped: u64,
}

impl<T> ProcessedChunk<T> {
    /// The chunk's counts, for its checkpoint.
    pub(crate) fn counts(&self) -> ChunkCounts {
        ChunkCounts {
            last_key: self.last_key,
            read: self.read,
            skipped: self.skipped,
        }
    }
}

/// A chunk's write as one plan — its rows' INSERTs and the checkpoint that counts them written, in one
/// transaction — for a job that fails on duplicates (then every row of a chunk that commits was inserted,
/// so the checkpoint is known before the INSERTs run). `None` for a job that skips duplicates: its
/// checkpoint needs the count the INSERTs report. An executor can then send the whole transaction at once
/// (the async executor's SQLite worker: one call instead of four).
///
/// A run that holds a lease ends the transaction with its guard: `fence` is the checkpoint and the guard in
/// one statement (see [`crate::lock::LeaseState::guarded_checkpoint`]), with what it guards for the error.
/// `counts` is what the checkpoint records (the partition's last chunk records its range's top).
pub(crate) fn chunk_plan<T: Entity>(
    dialect: tandem_sql::Dialect,
    step_id: i64,
    chunk: &ProcessedChunk<T>,
    counts: ChunkCounts,
    opts: &tandem_core::BatchOptions,
    fence: Option<(tandem_sql::RawSql, String)>,
) -> Result<Option<tandem_core::Plan<u64>>, JobError> {
    if opts.ignore_duplicates {
        return Ok(None);
    }
    let rows = chunk.rows.len() as u64;
    let checkpoint = match fence {
        Some((fenced, what)) => tandem_core::Step::Guard {
            statement: fenced.render(dialect).map_err(tandem_core::Error::from)?,
            what,
        },
        None => tandem_core::Step::Sql(
            checkpoint_statement(step_id, counts, rows, 0)
                .render(dialect)
                .map_err(tandem_core::Error::from)?,
        ),
    };
    let together = tandem_core::Atomicity::Together;
    if chunk.rows.is_empty() {
        return Ok(Some(tandem_core::Plan::new(
            vec![checkpoint],
            together,
            |_| Ok(0),
        )));
    }
    let insert = tandem_core::repo::batch_insert::<T>(dialect, &chunk.rows, opts)?.map(move |r| {
        if r.inserted != rows {
            return Err(tandem_core::Error::Internal(format!(
                "a chunk of {rows} rows inserted {}",
                r.inserted
            )));
        }
        Ok(r.inserted)
    });
    Ok(Some(insert.followed_by(checkpoint, together)))
}

/// The UPDATE that ends a step. A completed step's checkpoint is the top of its range: the partition read
/// everything up to there (see `partition`).
pub(crate) fn end_step_statement(
    step: &StepExecution,
    st: RunStatus,
    error: Option<String>,
) -> impl Render + use<> {
    use crate::model::batch_step_execution as s;
    use tandem_sql::prelude::*;
    let update = s::table
        .update()
        .set(s::status, st)
        .set(s::ended_at, Some(crate::model::now_ms()))
        .set(s::error_text, error);
    let update = match st {
        RunStatus::Completed => update.set(s::checkpoint, Some(step.partition_hi)),
        _ => update,
    };
    update.filter(s::id.eq(step.id))
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
                // Complete only when its checkpoint reached its range's top (see `partition`).
                status: if step_complete(&s) {
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
        parallelism_asked: 0,
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

/// The steps of the run a new run resumes from, in one query: those of the newest run of this job (same
/// name and parameters) that has steps. A run row without steps (written by an older version that created
/// steps separately, or by hand) is passed over, so its predecessor's checkpoints still count.
pub(crate) fn resumed_steps_query<S, T>(
    job: &BatchJob<S, T>,
) -> tandem_core::Find<crate::model::batch_step_execution::table> {
    use crate::model::{batch_job_execution as jx, batch_step_execution as sx};
    use tandem_sql::prelude::*;
    let has_steps = sx::table
        .select(sx::id)
        .correlated_with(jx::table)
        .filter(sx::job_execution_id.eq(jx::id));
    // MAX rather than ORDER BY … LIMIT 1: MySQL and MariaDB take no LIMIT in an IN subquery.
    let latest = jx::table.select(max(jx::id)).filter(
        jx::job_name
            .eq(job.name.clone())
            .and(jx::job_params.eq(job.params_text()))
            .and(exists(has_steps)),
    );
    tandem_core::Find::all()
        .filter(sx::job_execution_id.in_subquery(latest))
        .order_by(sx::id.asc())
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

/// Marks the unfinished steps (still STARTED) of every run [`abandon_statement`] marks as FAILED, with the
/// reason; run just before it, in the same transaction. Their checkpoints stay: the run that resumes from
/// them reads them as they are.
pub(crate) fn abandon_steps_statement<S, T>(job: &BatchJob<S, T>) -> impl Render + use<S, T> {
    use crate::model::{batch_job_execution as j, batch_step_execution as s};
    use tandem_sql::prelude::*;
    let abandoned_runs = j::table.select(j::id).filter(
        j::job_name
            .eq(job.name.clone())
            .and(j::job_params.eq(job.params_text()))
            .and(j::status.eq(RunStatus::Started)),
    );
    s::table
        .update()
        .set(s::status, RunStatus::Failed)
        .set(s::ended_at, Some(crate::model::now_ms()))
        .set(
            s::error_text,
            Some("abandoned: its run stopped without finishing".to_owned()),
        )
        .filter(
            s::status
                .eq(RunStatus::Started)
                .and(s::job_execution_id.in_subquery(abandoned_runs)),
        )
}

/// A run as its start created it: its execution row and its steps, both committed together.
pub(crate) struct Start {
    pub execution: i64,
    pub steps: Vec<StepExecution>,
    pub resumed: bool,
    pub source_rows: i64,
    /// The job's `parallelism`: a resumed run keeps its partitions, whatever this says.
    pub parallelism_asked: usize,
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

/// One row, one BIGINT: how many of the tables `names` exist where the connection looks (PostgreSQL: its
/// `search_path`; MySQL/MariaDB: its database; SQLite: its file). Asked before creating tables, and nothing
/// is created when all are there: `CREATE INDEX IF NOT EXISTS` on a table that exists still waits for its
/// lock (PostgreSQL), a run must not wait without end on a session that holds one, and on a Galera
/// cluster every DDL statement waits for the whole cluster — a frozen node included — where a read
/// answers at once. (It also spares every run four DDL round trips.)
pub(crate) fn tables_present_statement(
    dialect: tandem_sql::Dialect,
    names: &[&str],
) -> tandem_sql::RawSql {
    use tandem_sql::{Dialect, Value};
    let values: Vec<Value> = names.iter().map(|n| Value::Text((*n).to_owned())).collect();
    let list = |first: usize| {
        (0..names.len())
            .map(|i| match dialect {
                Dialect::Postgres => format!("${}", first + i),
                _ => "?".to_owned(),
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let sql = match dialect {
        Dialect::Postgres => format!(
            "SELECT CAST(COUNT(*) AS BIGINT) FROM unnest(ARRAY[{}]::text[]) AS t(name) \
             WHERE to_regclass(quote_ident(t.name)) IS NOT NULL",
            list(1)
        ),
        Dialect::MySql => format!(
            "SELECT CAST(COUNT(*) AS SIGNED) FROM information_schema.tables \
             WHERE table_schema = DATABASE() AND table_name IN ({})",
            list(1)
        ),
        Dialect::Sqlite => format!(
            "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name IN ({})",
            list(1)
        ),
    };
    tandem_sql::raw(sql, values)
}

/// The job repository's two tables, for [`tables_present_statement`].
pub(crate) const REPOSITORY_TABLES: [&str; 2] = ["batch_job_execution", "batch_step_execution"];
