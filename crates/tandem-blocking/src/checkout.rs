//! [`PooledConnection`]: one pooled connection checked out to drive by hand (the batch runner's run lock, a
//! session setting that must stay on one connection).

use std::cell::RefCell;

use tandem_core::plan::{Done, Plan, Sink};
use tandem_core::{Holder, Result, TxOptions, tx};
use tandem_pool::WriterGate;
use tandem_sql::batch::BorrowedStatement;
use tandem_sql::{Dialect, Rendered};

use crate::conn::{Pooled, run_steps};
use crate::driver::Conn;
use crate::slot::{stream_from_slot, with_slot};
use crate::stream::RowStream;

/// A connection checked out of a blocking [`crate::Database`]; it goes back to the pool when dropped. It is an
/// [`crate::Executor`]: statements, typed loads, streams and repositories run on this one connection (a
/// plan whose steps belong together runs in a transaction of its own on it).
pub struct PooledConnection {
    slot: RefCell<Option<Pooled>>,
    dialect: Dialect,
    /// The database's queue of write transactions, for the plans this connection runs in one.
    writers: Option<WriterGate>,
}

impl PooledConnection {
    pub(crate) fn new(conn: Pooled, writers: Option<WriterGate>) -> Self {
        PooledConnection {
            dialect: conn.dialect(),
            slot: RefCell::new(Some(conn)),
            writers,
        }
    }

    /// The engine.
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    fn with_conn<R>(&self, f: impl FnOnce(&mut Conn) -> Result<R>) -> Result<R> {
        with_slot(&self.slot, Holder::Connection, f)
    }

    /// A statement without parameters or rows.
    pub fn simple(&self, sql: &str) -> Result<()> {
        self.with_conn(|c| c.simple(sql))
    }

    /// Closes this connection when it is dropped instead of giving it back to the pool: for session state
    /// that must not outlive its user (an advisory lock, a changed setting).
    pub fn close_on_drop(&mut self) {
        if let Some(c) = self.slot.get_mut() {
            c.health.broken = true;
        }
    }
}

impl crate::Executor for PooledConnection {
    fn dialect(&self) -> Dialect {
        self.dialect
    }
}

impl crate::executor::sealed::Run for PooledConnection {
    fn run_statement(&self, r: &Rendered, sink: &mut Sink<'_>) -> Result<Done> {
        self.with_conn(|c| c.run(r, sink))
    }

    fn run<T>(&self, plan: Plan<T>) -> Result<T> {
        let outcomes = self.with_conn(|c| {
            if !plan.needs_transaction() {
                return run_steps(c, &plan.steps);
            }
            let opts = TxOptions::default();
            let _turn = WriterGate::enter_blocking(self.writers.as_ref(), &opts)?;
            let mut span = tandem_core::observe::TxSpan::begin(&c.observer, &opts, 1);
            let (outcomes, over) = tx::run_atomically(c, self.dialect, &opts, &mut span, |c| {
                run_steps(c, &plan.steps)
            });
            if !over {
                c.health.broken = true;
            }
            outcomes
        })?;
        plan.finish(outcomes)
    }

    fn stream_rendered<T: Send + 'static>(&self, r: Rendered) -> Result<RowStream<'_, T>> {
        stream_from_slot(&self.slot, Holder::Connection, r)
    }

    fn run_borrowed<'a>(
        &self,
        statements: &mut dyn Iterator<Item = Result<BorrowedStatement<'a>>>,
    ) -> Result<u64> {
        self.with_conn(|c| c.run_borrowed(statements))
    }
}
