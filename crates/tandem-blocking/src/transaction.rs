//! [`Transaction`]: one connection inside BEGIN … COMMIT. Commit on `Ok`, rollback on `Err` and on panic,
//! savepoints for nested calls.

use std::cell::{Cell, RefCell};
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};

use tandem_core::plan::{Done, Outcome, Plan, Step};
use tandem_core::{Error, Holder, Result, TxOptions, tx};
use tandem_sql::Dialect;
use tandem_sql::batch::BorrowedStatement;

use crate::database::{Pooled, run_steps};
use crate::driver::Conn;
use crate::stream::RowStream;

/// An open transaction. Its methods take `&self`, so a closure can hand it to several repositories.
pub struct Transaction {
    pub(crate) slot: RefCell<Option<Pooled>>,
    dialect: Dialect,
    depth: Cell<u32>,
}

impl Transaction {
    /// Runs one attempt; the flag says whether a statement failed with a retriable error meanwhile.
    pub(crate) fn run_closure<T, E: From<Error>>(
        mut conn: Pooled,
        opts: &TxOptions,
        f: &mut dyn FnMut(&Transaction) -> Result<T, E>,
    ) -> (Result<T, E>, bool) {
        conn.retriable_seen = false;
        let dialect = conn.dialect();
        let tx = Transaction {
            slot: RefCell::new(Some(conn)),
            dialect,
            depth: Cell::new(0),
        };
        let span = tracing::debug_span!("transaction", %dialect);
        let _enter = span.enter();
        for sql in tx::begin(dialect, opts) {
            if let Err(e) = tx.simple(&sql) {
                let retriable = e.is_retriable();
                return (Err(e.into()), retriable);
            }
        }
        let result = match catch_unwind(AssertUnwindSafe(|| f(&tx))) {
            Ok(Ok(value)) => match tx.finish(opts, true) {
                Ok(()) => Ok(value),
                Err(e) => {
                    // A failed COMMIT can leave the transaction open (SQLite busy): end it before the
                    // connection goes back to the pool. If that fails too, both errors are reported and the
                    // connection is not reused.
                    let rollback = tx.finish(opts, false);
                    if rollback.is_err() {
                        tx.discard();
                    }
                    Err(Error::commit_failed(e, rollback).into())
                }
            },
            Ok(Err(e)) => {
                let _ = tx.finish(opts, false);
                Err(e)
            }
            Err(panic) => {
                let _ = tx.finish(opts, false);
                resume_unwind(panic)
            }
        };
        let seen = tx.slot.borrow().as_ref().is_some_and(|c| c.retriable_seen);
        (result, seen)
    }

    fn finish(&self, opts: &TxOptions, commit: bool) -> Result<()> {
        for sql in tx::end(self.dialect, opts, commit) {
            self.simple(&sql)?;
        }
        Ok(())
    }

    /// Marks the connection broken, so it is closed instead of pooled.
    fn discard(&self) {
        if let Ok(mut slot) = self.slot.try_borrow_mut()
            && let Some(c) = slot.as_mut()
        {
            c.broken = true;
        }
    }

    pub(crate) fn with_conn<R>(&self, f: impl FnOnce(&mut Conn) -> Result<R>) -> Result<R> {
        crate::engine::with_slot(&self.slot, Holder::Transaction, f)
    }

    fn simple(&self, sql: &str) -> Result<()> {
        self.with_conn(|c| c.simple(sql))
    }

    /// The engine.
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    pub(crate) fn stream<T>(&self, r: tandem_sql::Rendered) -> Result<RowStream<'_, T>> {
        crate::engine::stream_from_slot(&self.slot, Holder::Transaction, r)
    }

    /// A nested transaction: a savepoint, released on `Ok`, rolled back to on `Err` or panic; the outer
    /// transaction goes on either way. [`Transaction::try_transaction`] takes a closure with an error type
    /// of the caller's own.
    pub fn transaction<T>(&self, f: impl FnMut(&Transaction) -> Result<T>) -> Result<T> {
        self.try_transaction(f)
    }

    /// [`Transaction::transaction`] for a closure that returns an error type of the caller's own.
    pub fn try_transaction<T, E: From<Error>>(
        &self,
        mut f: impl FnMut(&Transaction) -> Result<T, E>,
    ) -> Result<T, E> {
        let depth = self.depth.get() + 1;
        self.simple(&tx::savepoint(depth))?;
        self.depth.set(depth);
        let result = catch_unwind(AssertUnwindSafe(|| f(self)));
        self.depth.set(depth - 1);
        let ok = matches!(result, Ok(Ok(_)));
        let mut ending = tx::Ending::new(ok);
        for sql in tx::end_savepoint(depth, ok) {
            ending.record(self.simple(&sql));
        }
        ending.finish()?;
        match result {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(e),
            Err(panic) => resume_unwind(panic),
        }
    }

    pub(crate) fn run_steps(&self, steps: &[Step]) -> Result<Vec<Outcome>> {
        self.with_conn(|c| run_steps(c, steps))
    }
}

impl crate::Executor for Transaction {
    fn dialect(&self) -> Dialect {
        self.dialect
    }

    fn run_statement(
        &self,
        r: &tandem_sql::Rendered,
        sink: &mut tandem_core::plan::Sink<'_>,
    ) -> Result<Done> {
        self.with_conn(|c| c.run(r, sink))
    }

    /// Runs a plan inside this transaction (several steps under a savepoint, so a failure undoes them all).
    fn run<T>(&self, plan: Plan<T>) -> Result<T> {
        let outcomes = if plan.needs_transaction() {
            self.transaction(|tx| tx.run_steps(&plan.steps))?
        } else {
            self.run_steps(&plan.steps)?
        };
        plan.finish(outcomes)
    }

    fn run_borrowed<'a>(
        &self,
        statements: &mut dyn Iterator<Item = Result<BorrowedStatement<'a>>>,
    ) -> Result<u64> {
        self.with_conn(|c| c.run_borrowed(statements))
    }

    fn stream_rendered<T: Send + 'static>(
        &self,
        r: tandem_sql::Rendered,
    ) -> Result<RowStream<'_, T>> {
        self.stream(r)
    }
}
