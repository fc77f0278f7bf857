//! [`Transaction`]: one connection inside BEGIN … COMMIT. Commit on `Ok`, rollback on `Err` and on panic,
//! savepoints for nested calls.

use std::cell::{Cell, RefCell};
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};

use tandem_core::observe::TxSpan;
use tandem_core::plan::{Done, Outcome, Plan, Step};
use tandem_core::{Error, Holder, Result, TxOptions, tx};
use tandem_pool::Permit;
use tandem_sql::Dialect;
use tandem_sql::batch::BorrowedStatement;

use crate::conn::{Pooled, run_steps};
use crate::driver::Conn;
use crate::stream::RowStream;

/// An open transaction. Its methods take `&self`, so a closure can hand it to several repositories.
pub struct Transaction {
    pub(crate) slot: RefCell<Option<Pooled>>,
    dialect: Dialect,
    depth: Cell<u32>,
    opts: TxOptions,
    /// Set once COMMIT or ROLLBACK ran; a transaction dropped before that is rolled back.
    ended: Cell<bool>,
    /// Its span (see `tandem_core::observe`): entered while its statements run, ended with its outcome.
    span: RefCell<TxSpan>,
    /// A hand-begun writer's turn at the database's writer gate (a SQLite file), kept to the end.
    _turn: Option<Permit>,
}

impl Transaction {
    /// BEGIN on `conn` with `opts`, as attempt `attempt` (1-based) of a transaction a retry loop runs; `turn`
    /// is the writer gate's, kept until the transaction ends.
    pub(crate) fn begin(
        mut conn: Pooled,
        opts: &TxOptions,
        turn: Option<Permit>,
        attempt: u32,
    ) -> Result<Self> {
        conn.health.retriable_seen = false;
        let span = TxSpan::begin(&conn.observer, opts, attempt);
        let tx = Transaction {
            span: RefCell::new(span),
            dialect: conn.dialect(),
            slot: RefCell::new(Some(conn)),
            depth: Cell::new(0),
            opts: opts.clone(),
            ended: Cell::new(false),
            _turn: turn,
        };
        for sql in tx::begin(tx.dialect, opts) {
            if let Err(e) = tx.simple(&sql) {
                // Nothing to roll back (the pool ends a SQLite transaction left open as it takes the
                // connection back).
                tx.ended.set(true);
                tx.span.borrow_mut().failed();
                return Err(e);
            }
        }
        Ok(tx)
    }

    /// Runs one attempt; the flag says whether a statement failed with a retriable error meanwhile.
    pub(crate) fn run_closure<T, E: From<Error>>(
        conn: Pooled,
        opts: &TxOptions,
        attempt: u32,
        f: &mut dyn FnMut(&Transaction) -> Result<T, E>,
    ) -> (Result<T, E>, bool) {
        let tx = match Transaction::begin(conn, opts, None, attempt) {
            Ok(tx) => tx,
            Err(e) => {
                let retriable = e.is_retriable();
                return (Err(e.into()), retriable);
            }
        };
        // The closure's own work (its logs, its spans) is inside the transaction's span too.
        let span = tx.span.borrow().span().clone();
        let result = match catch_unwind(AssertUnwindSafe(|| span.in_scope(|| f(&tx)))) {
            Ok(Ok(value)) => tx.end(true).map(|()| value).map_err(E::from),
            Ok(Err(e)) => {
                let _ = tx.end(false);
                Err(e)
            }
            Err(panic) => {
                let _ = tx.end(false);
                resume_unwind(panic)
            }
        };
        let seen = tx
            .slot
            .borrow()
            .as_ref()
            .is_some_and(|c| c.health.retriable_seen);
        (result, seen)
    }

    /// Commits the transaction (see [`crate::Database::begin`]). A COMMIT that fails is followed by a
    /// ROLLBACK; if that fails too, the error keeps both ([`Error::RollbackAfterCommit`]).
    pub fn commit(self) -> Result<()> {
        self.end(true)
    }

    /// Rolls the transaction back (see [`crate::Database::begin`]).
    pub fn rollback(self) -> Result<()> {
        self.end(false)
    }

    /// COMMIT or ROLLBACK, once, by the rule of [`tx::Closing`] (a failed COMMIT is rolled back). A
    /// connection whose transaction may still be open afterwards is not pooled again. (Whatever stays open
    /// on SQLite, the pool ends as it takes the connection back.)
    fn end(&self, commit: bool) -> Result<()> {
        self.ended.set(true);
        let open = || {
            self.with_conn(|c| Ok(tandem_core::Runner::in_transaction(c)))
                .ok()
                .flatten()
        };
        let mut closing = tx::Closing::new(self.dialect, &self.opts, commit);
        while let Some(sql) = closing.next(open) {
            closing.record(self.simple(&sql));
        }
        let (result, over) = closing.finish(open);
        self.span.borrow_mut().end(commit, &result);
        if !over {
            let _ = self.with_conn(|c| {
                c.health.broken = true;
                Ok(())
            });
        }
        result
    }

    /// Runs `f` on the connection, inside the transaction's span.
    pub(crate) fn with_conn<R>(&self, f: impl FnOnce(&mut Conn) -> Result<R>) -> Result<R> {
        let span = self.span.borrow();
        let _in = span.span().enter();
        crate::slot::with_slot(&self.slot, Holder::Transaction, f)
    }

    fn simple(&self, sql: &str) -> Result<()> {
        self.with_conn(|c| c.simple(sql))
    }

    /// The engine.
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// A stream on the transaction's connection; its producer's statement is a child of the transaction's
    /// span.
    pub(crate) fn stream<T>(&self, r: tandem_sql::Rendered) -> Result<RowStream<'_, T>> {
        let span = self.span.borrow();
        let _in = span.span().enter();
        crate::slot::stream_from_slot(&self.slot, Holder::Transaction, r)
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
        let mut closing = tx::Closing::savepoint(depth, ok);
        while let Some(sql) = closing.next(|| None) {
            closing.record(self.simple(&sql));
        }
        // After failed work, the work's error (or panic) is the one reported.
        let (ended, _) = closing.finish(|| None);
        if ok {
            ended?;
        }
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
}

impl crate::executor::sealed::Run for Transaction {
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

impl Drop for Transaction {
    /// A hand-begun transaction dropped unfinished is rolled back (a closure's always ends first).
    fn drop(&mut self) {
        if !self.ended.get() && self.slot.get_mut().is_some() {
            let _ = self.end(false);
        }
    }
}
