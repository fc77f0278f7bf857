//! Stage 8 — a batch job runner: the reference solution.

use blocking::{Error, Executor, Result};
use dialects::{Insert, OnConflict, Order, Select, Statement, Update};
use expressions::ColumnExt;
use tables::{Dialect, Value};

use crate::job::{
    COMPLETED, Job, Report, STARTED, batch_job_execution, batch_step_execution, benchmark_source,
    benchmark_target, transform,
};

// ANCHOR: split
/// The key range `[lo, hi]` cut into `n` contiguous partitions, in order, each `(first, last)` inclusive:
/// every key in exactly one, sizes differing by at most one; fewer partitions when there are fewer keys;
/// none when `hi < lo`; `n = 0` counts as 1.
pub fn split(lo: i64, hi: i64, n: usize) -> Vec<(i64, i64)> {
    if hi < lo {
        return Vec::new();
    }
    let keys = (i128::from(hi) - i128::from(lo) + 1) as u128;
    let n = (n.max(1) as u128).min(keys);
    let (size, extra) = (keys / n, keys % n);
    let mut first = i128::from(lo);
    (0..n)
        .map(|i| {
            let len = size + u128::from(i < extra);
            let last = first + len as i128 - 1;
            let part = (first as i64, last as i64);
            first = last + 1;
            part
        })
        .collect()
}
// ANCHOR_END: split

// ANCHOR: statements
/// One partition of a run, as its step row says.
#[derive(Clone, Debug)]
struct Step {
    id: i64,
    last_key: i64,
    checkpoint: i64,
}

/// What the runner needs to run, with nothing of either executor in it: each piece of the job as a
/// statement, and what to make of the rows that come back.
struct Plan {
    dialect: Dialect,
    job: Job,
}

impl Plan {
    fn latest_execution(&self) -> Result<Statement> {
        Ok(Select::from(batch_job_execution::table)
            .filter(batch_job_execution::job.eq(self.job.name.clone()))
            .order_by(batch_job_execution::id, Order::Desc)
            .limit(1)
            .render(self.dialect)?)
    }

    fn key_range(&self) -> Statement {
        Statement {
            sql: "SELECT MIN(id), MAX(id) FROM benchmark_source".into(),
            params: vec![],
            key: dialects::GeneratedKey::None,
        }
    }

    fn new_execution(&self) -> Result<Statement> {
        Ok(
            Insert::into(batch_job_execution::table, vec!["job", "status"])
                .row(vec![
                    Value::Text(self.job.name.clone()),
                    Value::Text(STARTED.into()),
                ])
                .returning_key()
                .render(self.dialect)?,
        )
    }

    fn new_steps(&self, execution: i64, parts: &[(i64, i64)]) -> Result<Statement> {
        let mut insert = Insert::into(
            batch_step_execution::table,
            vec![
                "execution_id",
                "part",
                "first_key",
                "last_key",
                "checkpoint",
                "written",
                "status",
            ],
        );
        for (i, (first, last)) in parts.iter().enumerate() {
            insert = insert.row(vec![
                Value::I64(execution),
                Value::I32(i as i32),
                Value::I64(*first),
                Value::I64(*last),
                Value::I64(first - 1),
                Value::I64(0),
                Value::Text(STARTED.into()),
            ]);
        }
        Ok(insert.render(self.dialect)?)
    }

    fn open_steps(&self, execution: i64) -> Result<Statement> {
        Ok(Select::from(batch_step_execution::table)
            .filter(batch_step_execution::execution_id.eq(execution))
            .filter(batch_step_execution::status.eq(STARTED.to_owned()))
            .order_by(batch_step_execution::part, Order::Asc)
            .render(self.dialect)?)
    }

    fn page(&self, step: &Step) -> Result<Statement> {
        Ok(Select::from(benchmark_source::table)
            .filter(benchmark_source::id.gt(step.checkpoint))
            .filter(benchmark_source::id.le(step.last_key))
            .order_by(benchmark_source::id, Order::Asc)
            .limit(self.job.page)
            .render(self.dialect)?)
    }

    /// The chunk's rows, transformed; a row already written (by a run that died after its commit reached
    /// the server but before it heard so) is skipped, never written twice.
    fn write(&self, rows: &[(i64, String, i64)]) -> Result<Vec<Statement>> {
        let mut insert = Insert::into(
            benchmark_target::table,
            vec!["id", "source_name", "transformed_value"],
        )
        .on_conflict(OnConflict::Ignore);
        for (id, name, value) in rows {
            let (id, name, value) = transform(*id, name, *value);
            insert = insert.row(vec![Value::I64(id), Value::Text(name), Value::I64(value)]);
        }
        Ok(insert.render_chunks(self.dialect)?)
    }

    /// The checkpoint after a chunk: in the chunk's own transaction.
    fn checkpoint(&self, step: &Step, last: i64, written: u64) -> Result<Statement> {
        Ok(Update::table(batch_step_execution::table)
            .set(batch_step_execution::checkpoint, last)
            .add(batch_step_execution::written, written as i64)
            .filter(batch_step_execution::id.eq(step.id))
            .render(self.dialect)?)
    }

    fn complete_step(&self, step: &Step) -> Result<Statement> {
        Ok(Update::table(batch_step_execution::table)
            .set(batch_step_execution::status, COMPLETED.to_owned())
            .filter(batch_step_execution::id.eq(step.id))
            .render(self.dialect)?)
    }

    fn complete_execution(&self, execution: i64) -> Result<Statement> {
        Ok(Update::table(batch_job_execution::table)
            .set(batch_job_execution::status, COMPLETED.to_owned())
            .filter(batch_job_execution::id.eq(execution))
            .render(self.dialect)?)
    }
}

/// A step row as a [`Step`].
fn step(row: Vec<Value>) -> Result<Step> {
    type Row = (i64, i64, i32, i64, i64, i64, i64, String);
    let (id, _, _, _, last_key, checkpoint, _, _): Row = blocking::FromRow::from_row(row)?;
    Ok(Step {
        id,
        last_key,
        checkpoint,
    })
}

/// A source row as `(id, name, value)`.
fn source(row: Vec<Value>) -> Result<(i64, String, i64)> {
    blocking::FromRow::from_row(row)
}

/// The key of a new row, however the statement returned it.
fn key_of(rows: Option<Vec<Vec<Value>>>, outcome: Option<blocking::Outcome>) -> Result<i64> {
    let from_rows = rows.and_then(|r| r.into_iter().next()).map(|r| {
        let (id,): (i64,) = blocking::FromRow::from_row(r)?;
        Ok::<_, Error>(id)
    });
    match (from_rows, outcome.and_then(|o| o.last_insert_id)) {
        (Some(id), _) => id,
        (None, Some(id)) => Ok(id),
        (None, None) => Err(Error::Columns {
            expected: 1,
            found: 0,
        }),
    }
}
/// A partition that starts at `i64::MIN` has no checkpoint before its first key (`first_key - 1` would
/// overflow): refused before anything is written.
fn refuse_unreadable(parts: &[(i64, i64)]) -> Result<()> {
    match parts.first() {
        Some((i64::MIN, _)) => Err(Error::Decode(tables::DecodeError {
            expected: "a key above i64::MIN",
            found: Value::I64(i64::MIN),
        })),
        _ => Ok(()),
    }
}
// ANCHOR_END: statements

// ANCHOR: blocking
/// Runs `job` on threads, one per partition. A run of a job whose last run did not complete resumes it,
/// each partition after its checkpoint.
pub fn run_blocking(db: &blocking::Database, job: &Job) -> Result<Report> {
    let plan = Plan {
        dialect: db.dialect(),
        job: job.clone(),
    };
    let latest = db.fetch::<(i64, String, String)>(&plan.latest_execution()?)?;
    let (execution, resumed) = match latest.first() {
        Some((_, _, status)) if status == COMPLETED => {
            return Ok(Report {
                already_completed: true,
                ..Report::default()
            });
        }
        Some((id, _, _)) => (*id, true),
        None => {
            // The run and its partitions appear together, or not at all.
            let range = db.fetch::<(Option<i64>, Option<i64>)>(&plan.key_range())?;
            let (lo, hi) = range.first().cloned().unwrap_or((None, None));
            let parts = split(lo.unwrap_or(1), hi.unwrap_or(0), job.partitions);
            refuse_unreadable(&parts)?;
            let id = db.transaction(|tx| {
                let insert = plan.new_execution()?;
                let id = match insert.key {
                    dialects::GeneratedKey::Returning => {
                        key_of(Some(tx.fetch_values(&insert)?), None)?
                    }
                    _ => key_of(None, Some(tx.execute(&insert)?))?,
                };
                if !parts.is_empty() {
                    tx.execute(&plan.new_steps(id, &parts)?)?;
                }
                Ok::<_, Error>(id)
            })?;
            (id, false)
        }
    };
    let steps: Vec<Step> = db
        .fetch_values(&plan.open_steps(execution)?)?
        .into_iter()
        .map(step)
        .collect::<Result<_>>()?;
    let counts: Vec<Result<(u64, u64)>> = std::thread::scope(|s| {
        let handles: Vec<_> = steps
            .into_iter()
            .map(|st| {
                let plan = &plan;
                s.spawn(move || run_step_blocking(db, plan, st))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    });
    let mut report = Report {
        resumed,
        ..Report::default()
    };
    for c in counts {
        let (read, written) = c?;
        report.read += read;
        report.written += written;
    }
    db.execute(&plan.complete_execution(execution)?)?;
    Ok(report)
}

/// One partition: page after page, each chunk written with its checkpoint in one transaction.
fn run_step_blocking(db: &blocking::Database, plan: &Plan, mut st: Step) -> Result<(u64, u64)> {
    let (mut read, mut written) = (0, 0);
    loop {
        let rows: Vec<(i64, String, i64)> = db
            .fetch_values(&plan.page(&st)?)?
            .into_iter()
            .map(source)
            .collect::<Result<_>>()?;
        let Some(last) = rows.last().map(|r| r.0) else {
            db.execute(&plan.complete_step(&st)?)?;
            return Ok((read, written));
        };
        let chunk = plan.write(&rows)?;
        let n = db.transaction(|tx| {
            let mut n = 0;
            for insert in &chunk {
                n += tx.execute(insert)?.rows_affected;
            }
            tx.execute(&plan.checkpoint(&st, last, n)?)?;
            Ok::<_, Error>(n)
        })?;
        read += rows.len() as u64;
        written += n;
        st.checkpoint = last;
    }
}
// ANCHOR_END: blocking

// ANCHOR: async
/// [`run_blocking`] on the async executor: one task per partition.
pub async fn run_async(db: &asynchronous::Database, job: &Job) -> Result<Report> {
    let plan = std::sync::Arc::new(Plan {
        dialect: db.dialect(),
        job: job.clone(),
    });
    let latest = db
        .fetch::<(i64, String, String)>(&plan.latest_execution()?)
        .await?;
    let (execution, resumed) = match latest.first() {
        Some((_, _, status)) if status == COMPLETED => {
            return Ok(Report {
                already_completed: true,
                ..Report::default()
            });
        }
        Some((id, _, _)) => (*id, true),
        None => {
            let range = db
                .fetch::<(Option<i64>, Option<i64>)>(&plan.key_range())
                .await?;
            let (lo, hi) = range.first().cloned().unwrap_or((None, None));
            let parts = split(lo.unwrap_or(1), hi.unwrap_or(0), job.partitions);
            refuse_unreadable(&parts)?;
            let mut tx = db.begin().await?;
            let insert = plan.new_execution()?;
            let id = match insert.key {
                dialects::GeneratedKey::Returning => {
                    key_of(Some(tx.fetch_values(&insert).await?), None)?
                }
                _ => key_of(None, Some(tx.execute(&insert).await?))?,
            };
            if !parts.is_empty() {
                tx.execute(&plan.new_steps(id, &parts)?).await?;
            }
            tx.commit().await?;
            (id, false)
        }
    };
    let steps: Vec<Step> = db
        .fetch_values(&plan.open_steps(execution)?)
        .await?
        .into_iter()
        .map(step)
        .collect::<Result<_>>()?;
    let tasks: Vec<_> = steps
        .into_iter()
        .map(|st| {
            let (db, plan) = (db.clone(), plan.clone());
            tokio::spawn(async move { run_step_async(&db, &plan, st).await })
        })
        .collect();
    let mut report = Report {
        resumed,
        ..Report::default()
    };
    for t in tasks {
        let (read, written) = t
            .await
            .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()))?;
        report.read += read;
        report.written += written;
    }
    db.execute(&plan.complete_execution(execution)?).await?;
    Ok(report)
}

async fn run_step_async(
    db: &asynchronous::Database,
    plan: &Plan,
    mut st: Step,
) -> Result<(u64, u64)> {
    let (mut read, mut written) = (0, 0);
    loop {
        let rows: Vec<(i64, String, i64)> = db
            .fetch_values(&plan.page(&st)?)
            .await?
            .into_iter()
            .map(source)
            .collect::<Result<_>>()?;
        let Some(last) = rows.last().map(|r| r.0) else {
            db.execute(&plan.complete_step(&st)?).await?;
            return Ok((read, written));
        };
        let chunk = plan.write(&rows)?;
        let checkpoint = |n| plan.checkpoint(&st, last, n);
        let n = write_chunk_async(db, &chunk, checkpoint).await?;
        read += rows.len() as u64;
        written += n;
        st.checkpoint = last;
    }
}

/// A chunk and its checkpoint in one transaction, run again after a deadlock or a serialization failure,
/// after the pause the blocking `transaction` makes (`RETRY_PAUSE`, doubled before each further run; on a
/// timer, holding no thread). By hand (`begin`, `commit`): the partition runs in a spawned task, whose
/// future must be `Send`, which an `AsyncFnMut` transaction's cannot be shown to be on stable Rust.
async fn write_chunk_async(
    db: &asynchronous::Database,
    chunk: &[Statement],
    checkpoint: impl Fn(u64) -> Result<Statement>,
) -> Result<u64> {
    let mut attempt = 1;
    loop {
        let once = async {
            let mut tx = db.begin().await?;
            let mut n = 0;
            for insert in chunk {
                n += tx.execute(insert).await?.rows_affected;
            }
            tx.execute(&checkpoint(n)?).await?;
            tx.commit().await?;
            Ok::<_, Error>(n)
        };
        match once.await {
            Err(e) if e.is_retriable() && attempt < blocking::ATTEMPTS => {
                tokio::time::sleep(blocking::RETRY_PAUSE * 2u32.pow(attempt - 1)).await;
                attempt += 1;
            }
            done => return done,
        }
    }
}
// ANCHOR_END: async
