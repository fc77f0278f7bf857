//! Plans: what a repository method does, as data. A plan is a list of steps (statements, or a PostgreSQL COPY)
//! plus a pure function from their outcomes to the method's result. The blocking and the async executor each
//! run plans with their own I/O; the statements and the interpretation of results are written once, here.

use tandem_sql::ast::TableSchema;
use tandem_sql::{Ident, Rendered, Row, Value};

use crate::error::Result;

/// One thing for the executor to do.
#[derive(Clone, Debug)]
pub enum Step {
    /// Run a statement.
    Sql(Rendered),
    /// PostgreSQL `COPY table (columns) FROM STDIN (FORMAT binary)` of these rows; only planned for
    /// PostgreSQL, and only where no keys are needed back.
    Copy {
        /// Target table (its schema gives the column types).
        schema: &'static TableSchema,
        /// Columns written, in row order.
        columns: Vec<Ident>,
        /// The rows.
        rows: Vec<Vec<Value>>,
    },
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

    /// A single statement.
    pub fn one(step: Rendered, finish: impl FnOnce(Outcome) -> Result<T> + Send + 'static) -> Self {
        Plan::new(
            vec![Step::Sql(step)],
            Atomicity::Together,
            move |mut outcomes| finish(outcomes.pop().unwrap_or_default()),
        )
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
