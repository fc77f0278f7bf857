//! Plans: what a repository method does, as data. A plan is a list of steps (statements, or a PostgreSQL COPY)
//! plus a pure function from their outcomes to the method's result. The blocking and the async executor each
//! run plans with their own I/O; the statements and the interpretation of results are written once, here.

use tandem_sql::ast::TableSchema;
use tandem_sql::{Cells, Ident, Rendered, Row, Value};

use crate::error::{Error, Result};

/// One thing for the executor to do.
#[derive(Clone, Debug)]
pub enum Step {
    /// Run a statement.
    Sql(Rendered),
    /// A PostgreSQL binary COPY; only planned for PostgreSQL, and only where no keys are needed back.
    Copy(CopyIn),
    /// A statement that must match at least one row, or the steps stop there with [`crate::Error::Fenced`]
    /// (`what` it checks) and a transaction around them is rolled back: how a plan makes its writes
    /// conditional on a fact checked, and held, in the same transaction (a batch run's lease).
    Guard {
        /// The statement (an UPDATE whose WHERE is the condition, so its row stays locked to COMMIT).
        statement: Rendered,
        /// What it checks, for the error.
        what: String,
    },
}

impl Step {
    /// A statement step's outcome as the plan takes it: a guard that matched no row is
    /// [`crate::Error::Fenced`].
    pub fn judge(&self, outcome: Outcome) -> Result<Outcome> {
        match self {
            Step::Guard { what, .. } if outcome.affected == 0 => {
                Err(crate::Error::Fenced { what: what.clone() })
            }
            _ => Ok(outcome),
        }
    }
}

/// PostgreSQL `COPY table (columns) FROM STDIN (FORMAT binary)` of these rows: no SQL of its own, the
/// statement and the payload are derived from the table's schema.
#[derive(Clone, Debug)]
pub struct CopyIn {
    /// Target table (its schema gives the column types).
    pub schema: &'static TableSchema,
    /// Columns written, in row order.
    pub columns: Vec<Ident>,
    /// The rows.
    pub rows: Vec<Vec<Value>>,
}

impl CopyIn {
    /// The `COPY … FROM STDIN (FORMAT binary)` statement.
    pub fn statement(&self) -> String {
        crate::copy::copy_statement(self.schema, &self.columns)
    }

    /// The binary payload: header, rows, trailer.
    pub fn payload(&self) -> Result<Vec<u8>> {
        crate::copy::encode_binary(self.schema, &self.columns, &self.rows)
    }
}

/// What one step produced.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Outcome {
    /// Rows returned (by a query or by RETURNING).
    pub rows: Vec<Row>,
    /// Rows affected (for statements that change data).
    pub affected: u64,
    /// The connection's last insert id after the step (MySQL), when the statement generated one.
    pub last_insert_id: Option<i64>,
    /// How far apart the keys of a multi-row MySQL insert are (`auto_increment_increment`, above 1 on a
    /// Galera cluster or any multi-primary setup); `None` when not read, meaning 1.
    pub key_step: Option<i64>,
}

impl Outcome {
    /// The outcome of statement `r`: its rows and what it did. The last insert id is kept only for a
    /// statement that generates one (see [`crate::repo::wants_last_insert_id`]).
    pub fn of(r: &Rendered, rows: Vec<Row>, done: Done) -> Outcome {
        Outcome {
            rows,
            affected: done.affected,
            last_insert_id: if crate::repo::wants_last_insert_id(r) {
                done.last_insert_id
            } else {
                None
            },
            key_step: done.key_step,
        }
    }
}

/// What a statement did, besides its rows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Done {
    /// Rows affected.
    pub affected: u64,
    /// The connection's last insert id, where the engine reports one.
    pub last_insert_id: Option<i64>,
    /// The connection's `auto_increment_increment` when a statement generated several keys (MySQL: they are
    /// that far apart, not consecutive, on a cluster); `None` when it was not read.
    pub key_step: Option<i64>,
}

/// A driver's row as a blocking sink reads it (see [`Cells`]).
pub type RowCells<'r> = dyn Cells<Error = Error> + 'r;

/// Receives rows one at a time, as the driver holds them (decoded by the sink, or kept with
/// [`Cells::row`]); returns `false` to stop reading.
pub type Sink<'s> = dyn FnMut(&mut RowCells<'_>) -> Result<bool> + 's;

/// A blocking connection that runs statements (the blocking executor's drivers, and the async executor's
/// SQLite worker threads): enough to run a plan's steps with [`run_steps`].
pub trait Runner {
    /// Runs one statement, handing each row to `sink`.
    fn run(&mut self, r: &Rendered, sink: &mut Sink<'_>) -> Result<Done>;
    /// Runs statements without parameters or rows (BEGIN, COMMIT, SAVEPOINT, pragmas).
    fn simple(&mut self, sql: &str) -> Result<()>;
    /// Whether the connection is inside a transaction, when the driver can tell (SQLite's autocommit flag):
    /// after a failed COMMIT, [`crate::tx::run_atomically`] ends a transaction only if one is still open.
    fn in_transaction(&mut self) -> Option<bool> {
        None
    }
    /// Runs a statement whose values borrow the caller's rows (see
    /// [`crate::repo::borrowed_batch_insert`]). By default its values are copied into an owned statement;
    /// a driver that can bind borrowed values does so instead.
    fn run_borrowed(
        &mut self,
        statement: &tandem_sql::batch::BorrowedStatement<'_>,
    ) -> Result<Done> {
        self.run(&statement.to_rendered(), &mut |_| Ok(true))
    }
    /// A PostgreSQL binary COPY step; other engines never get one planned.
    fn copy_in(&mut self, copy: &CopyIn) -> Result<u64> {
        let _ = copy;
        Err(crate::Error::Internal(
            "COPY is planned for PostgreSQL only".into(),
        ))
    }
}

/// Runs `r` on a blocking connection for a stream: rows go to `send` in batches of `size` (it returns
/// `false` once the consumer is gone, which stops reading); the last, shorter batch follows, or the error
/// as the last message.
pub fn run_batched(
    conn: &mut impl Runner,
    r: &Rendered,
    size: usize,
    mut send: impl FnMut(Result<Vec<Row>>) -> bool,
) {
    let mut batch = Vec::with_capacity(size);
    let result = conn.run(r, &mut |cells| {
        batch.push(cells.row()?);
        if batch.len() == size {
            let full = std::mem::replace(&mut batch, Vec::with_capacity(size));
            return Ok(send(Ok(full)));
        }
        Ok(true)
    });
    match result {
        Ok(_) if !batch.is_empty() => {
            send(Ok(batch));
        }
        Ok(_) => {}
        Err(e) => {
            send(Err(e));
        }
    }
}

/// Runs steps on one blocking connection, collecting each outcome.
pub fn run_steps(conn: &mut impl Runner, steps: &[Step]) -> Result<Vec<Outcome>> {
    let mut outcomes = Vec::with_capacity(steps.len());
    for step in steps {
        outcomes.push(match step {
            Step::Sql(r) | Step::Guard { statement: r, .. } => {
                let mut rows = Vec::new();
                let done = conn.run(r, &mut |cells| {
                    rows.push(cells.row()?);
                    Ok(true)
                })?;
                step.judge(Outcome::of(r, rows, done))?
            }
            Step::Copy(copy) => Outcome {
                affected: conn.copy_in(copy)?,
                ..Outcome::default()
            },
        });
    }
    Ok(outcomes)
}

/// A plan's steps, built one at a time: each [`Steps::push`] gives back a handle to that step's outcome,
/// and the finishing function reads outcomes by handle ([`Outcomes::take`]) instead of by position.
#[derive(Debug, Default)]
pub struct Steps(Vec<Step>);

/// The handle of one pushed step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StepId(usize);

/// The outcomes of a plan's steps, taken by their handles.
#[derive(Debug)]
pub struct Outcomes(Vec<Option<Outcome>>);

impl Steps {
    /// No steps yet.
    pub fn new() -> Self {
        Steps(Vec::new())
    }

    /// Adds a step; its outcome will be under the returned handle.
    pub fn push(&mut self, step: Step) -> StepId {
        self.0.push(step);
        StepId(self.0.len() - 1)
    }

    /// Adds a statement.
    pub fn sql(&mut self, r: Rendered) -> StepId {
        self.push(Step::Sql(r))
    }

    /// The plan: these steps, committed as `atomicity` says, and `finish` over their outcomes.
    pub fn finish<T>(
        self,
        atomicity: Atomicity,
        finish: impl FnOnce(Outcomes) -> Result<T> + Send + 'static,
    ) -> Plan<T> {
        Plan::new(self.0, atomicity, move |outcomes| {
            finish(Outcomes(outcomes.into_iter().map(Some).collect()))
        })
    }
}

impl Outcomes {
    /// The outcome of step `id`. An executor that returned fewer outcomes than steps, or a second take of
    /// the same step, is an internal error.
    pub fn take(&mut self, id: StepId) -> Result<Outcome> {
        self.0
            .get_mut(id.0)
            .and_then(Option::take)
            .ok_or_else(|| crate::Error::Internal(format!("no outcome for plan step {}", id.0)))
    }
}

/// How the steps of a plan commit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Atomicity {
    /// All steps in one transaction (a savepoint when already inside one).
    Together,
    /// Each step commits on its own (a batch written one transaction per chunk).
    EachStep,
}

type Finish<T> = Box<dyn FnOnce(Vec<Outcome>) -> Result<T> + Send>;

/// Steps and the function that turns their outcomes into the result.
pub struct Plan<T> {
    /// The steps, in order; executors may run them again when a transaction is retried. Shared, so an
    /// executor can hand them to another thread without copying every bound value.
    pub steps: std::sync::Arc<[Step]>,
    /// How they commit.
    pub atomicity: Atomicity,
    finish: Finish<T>,
}

impl<T> Plan<T> {
    /// A plan.
    pub fn new(
        steps: Vec<Step>,
        atomicity: Atomicity,
        finish: impl FnOnce(Vec<Outcome>) -> Result<T> + Send + 'static,
    ) -> Self {
        Plan {
            steps: steps.into(),
            atomicity,
            finish: Box::new(finish),
        }
    }

    /// A single statement. (Built directly rather than through [`Steps`]: this is every point read's plan,
    /// and this way it costs one allocation for its step and none for `finish` when that captures
    /// nothing — where the general path took four.)
    pub fn one(step: Rendered, finish: impl FnOnce(Outcome) -> Result<T> + Send + 'static) -> Self {
        Plan {
            steps: std::sync::Arc::from([Step::Sql(step)]),
            atomicity: Atomicity::Together,
            finish: Box::new(move |outcomes| {
                let outcome = outcomes.into_iter().next().ok_or_else(|| {
                    crate::Error::Internal("no outcome for the plan's one step".into())
                })?;
                finish(outcome)
            }),
        }
    }

    /// This plan with its result passed through `f`: the same steps, one more step of interpretation.
    pub fn map<U>(self, f: impl FnOnce(T) -> Result<U> + Send + 'static) -> Plan<U>
    where
        T: 'static,
    {
        let finish = self.finish;
        Plan {
            steps: self.steps,
            atomicity: self.atomicity,
            finish: Box::new(move |outcomes| f(finish(outcomes)?)),
        }
    }

    /// This plan followed by `step`, all committed as `atomicity` says; `step`'s outcome is not read (a
    /// bookkeeping write that belongs with the plan's own, such as a batch job's checkpoint).
    pub fn followed_by(self, step: Step, atomicity: Atomicity) -> Plan<T>
    where
        T: 'static,
    {
        let own = self.steps.len();
        let mut this = self;
        // The steps are moved, not copied, when this plan is their only holder (as a plan just built is):
        // copying a chunk's INSERT — its text and every value — was a twentieth of a batch job's work.
        let mut steps: Vec<Step> = match std::sync::Arc::get_mut(&mut this.steps) {
            Some(only) => (only.iter_mut())
                .map(|s| std::mem::replace(s, Step::Sql(Rendered::default())))
                .collect(),
            None => this.steps.to_vec(),
        };
        steps.push(step);
        let finish = this.finish;
        Plan {
            steps: steps.into(),
            atomicity,
            finish: Box::new(move |mut outcomes| {
                outcomes.truncate(own);
                finish(outcomes)
            }),
        }
    }

    /// This plan with every statement (guards included) passed through `f`: the same steps and result,
    /// each statement rewritten in place (a batch run on a Galera cluster makes each one a causal read this
    /// way). The steps are moved when this plan is their only holder, copied otherwise.
    pub fn map_statements(mut self, mut f: impl FnMut(&mut Rendered)) -> Plan<T> {
        let mut steps: Vec<Step> = match std::sync::Arc::get_mut(&mut self.steps) {
            Some(only) => (only.iter_mut())
                .map(|s| std::mem::replace(s, Step::Sql(Rendered::default())))
                .collect(),
            None => self.steps.to_vec(),
        };
        for step in &mut steps {
            match step {
                Step::Sql(r) | Step::Guard { statement: r, .. } => f(r),
                Step::Copy(_) => {}
            }
        }
        self.steps = steps.into();
        self
    }

    /// Turns the outcomes of the steps (one per step, in order) into the result.
    pub fn finish(self, outcomes: Vec<Outcome>) -> Result<T> {
        (self.finish)(outcomes)
    }

    /// Whether the steps need a transaction around them.
    pub fn needs_transaction(&self) -> bool {
        self.atomicity == Atomicity::Together && self.steps.len() > 1
    }
}

impl<T> std::fmt::Debug for Plan<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plan")
            .field("steps", &self.steps)
            .field("atomicity", &self.atomicity)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tandem_sql::{Dialect, Render, raw};

    fn stmt(sql: &str) -> Rendered {
        raw(sql, vec![]).render(Dialect::Sqlite).unwrap()
    }

    #[test]
    fn outcomes_are_read_by_handle_once() {
        let mut steps = Steps::new();
        let a = steps.sql(stmt("SELECT 1"));
        let b = steps.sql(stmt("SELECT 2"));
        let plan = steps.finish(Atomicity::Together, move |mut o| {
            let second = o.take(b)?.affected;
            let first = o.take(a)?.affected;
            assert!(
                matches!(o.take(a), Err(crate::Error::Internal(_))),
                "taken twice"
            );
            Ok((first, second))
        });
        assert_eq!(plan.steps.len(), 2);
        let outcome = |affected| Outcome {
            affected,
            ..Outcome::default()
        };
        assert_eq!(plan.finish(vec![outcome(1), outcome(2)]).unwrap(), (1, 2));
    }

    /// Every statement is rewritten, guards included, and the result is read as before.
    #[test]
    fn statements_are_rewritten_in_place() {
        let plan = Plan::new(
            vec![
                Step::Sql(stmt("SELECT 1")),
                Step::Guard {
                    statement: stmt("UPDATE t SET a = 1"),
                    what: "t".into(),
                },
            ],
            Atomicity::Together,
            |outcomes| Ok(outcomes.len()),
        )
        .map_statements(|r| r.sql.insert_str(0, "/* x */ "));
        let sql: Vec<&str> = (plan.steps.iter())
            .map(|s| match s {
                Step::Sql(r) | Step::Guard { statement: r, .. } => r.sql.as_str(),
                Step::Copy(_) => "",
            })
            .collect();
        assert_eq!(sql, ["/* x */ SELECT 1", "/* x */ UPDATE t SET a = 1"]);
        assert!(matches!(plan.steps[1], Step::Guard { .. }));
        assert_eq!(plan.finish(vec![Outcome::default(); 2]).unwrap(), 2);
    }

    #[test]
    fn a_missing_outcome_is_an_internal_error() {
        let mut steps = Steps::new();
        steps.sql(stmt("SELECT 1"));
        let b = steps.sql(stmt("SELECT 2"));
        let plan = steps.finish(Atomicity::Together, move |mut o| o.take(b).map(|_| ()));
        assert!(matches!(
            plan.finish(vec![Outcome::default()]),
            Err(crate::Error::Internal(_))
        ));
    }
}
