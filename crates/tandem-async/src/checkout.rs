//! [`PooledConnection`]: one pooled connection checked out to drive by hand (the batch runner's run lock, a
//! session setting that must stay on one connection).

use tandem_core::plan::Done;
use tandem_core::{Plan, Result, TxOptions};
use tandem_pool::WriterGate;
use tandem_sql::{Dialect, Rendered};

use crate::conn::{Conn, Sink};
use crate::slot::{Read, Slot, gone, lock_slot, run_in_slot, stream_from_slot};

/// A connection checked out of the pool by hand ([`crate::Database::checkout`]): it goes back to the pool
/// (and admits the next waiter) when dropped. It is an [`crate::Executor`]: statements, typed loads,
/// streams and repositories run on this one connection (a plan whose steps belong together runs in a
/// transaction of its own on it).
pub struct PooledConnection {
    slot: tokio::sync::Mutex<Slot>,
    dialect: Dialect,
    /// The database's queue of write transactions, for the plans this connection runs in one.
    writers: Option<WriterGate>,
}

impl std::fmt::Debug for PooledConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("PooledConnection")
            .field(&self.dialect)
            .finish()
    }
}

impl PooledConnection {
    pub(crate) fn new(conn: Conn, writers: Option<WriterGate>) -> Self {
        PooledConnection {
            dialect: conn.dialect(),
            slot: tokio::sync::Mutex::new(Slot::Here(Box::new(conn))),
            writers,
        }
    }

    /// The engine.
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// Runs a plan's steps in one transaction on this connection with these options, whatever the plan's
    /// own atomicity; a retriable failure (a deadlock, a serialization failure) runs the transaction again
    /// here, up to `opts.max_attempts`. A lost connection is not replaced: the error says so, and the caller
    /// takes another. [`crate::Database::run_atomically`] takes a connection from the pool for each attempt
    /// instead; this is for a caller that keeps one connection for a series of transactions (the batch
    /// runner's partitions: one checkout, and each statement prepared once, for all their chunks).
    pub async fn run_atomically<T>(&self, opts: &TxOptions, plan: Plan<T>) -> Result<T> {
        let outcomes = crate::transaction::retry(opts, || async {
            let _turn = WriterGate::enter(self.writers.as_ref(), opts).await?;
            let mut slot = lock_slot(&self.slot).await?;
            let Slot::Here(c) = &mut *slot else {
                return Err(gone());
            };
            c.run_steps_atomically(&plan.steps, opts).await
        })
        .await?;
        plan.finish(outcomes)
    }

    /// Closes this connection when it is dropped instead of giving it back to the pool: for session state
    /// that must not outlive its user (an advisory lock, a changed setting).
    pub fn close_on_drop(&mut self) {
        if let Slot::Here(c) = self.slot.get_mut() {
            c.close_on_drop();
        }
    }
}

impl crate::Executor for PooledConnection {
    fn dialect(&self) -> Dialect {
        self.dialect
    }
}

impl crate::executor::sealed::Run for PooledConnection {
    async fn run_statement<S: Sink>(&self, r: Rendered, sink: &mut S) -> Result<Done> {
        run_in_slot(&self.slot, &r, sink, Read::Any).await
    }

    async fn run_key_read<S: Sink>(&self, r: Rendered, sink: &mut S) -> Result<Done> {
        run_in_slot(&self.slot, &r, sink, Read::Key).await
    }

    async fn run<T: Send>(&self, plan: tandem_core::Plan<T>) -> Result<T> {
        let mut slot = lock_slot(&self.slot).await?;
        let Slot::Here(c) = &mut *slot else {
            return Err(gone());
        };
        if !plan.needs_transaction() {
            let outcomes = c.run_steps(&plan.steps).await?;
            return plan.finish(outcomes);
        }
        let opts = tandem_core::TxOptions::default();
        let _turn = WriterGate::enter(self.writers.as_ref(), &opts).await?;
        let outcomes = c.run_steps_atomically(&plan.steps, &opts).await?;
        plan.finish(outcomes)
    }

    async fn stream_rendered<T: Send>(&self, r: Rendered) -> Result<crate::RowStream<T>> {
        stream_from_slot(&self.slot, r).await
    }
}
