//! [`PooledConnection`]: one pooled connection checked out to drive by hand (the batch runner's run lock, a
//! session setting that must stay on one connection).

use tandem_core::Result;
use tandem_core::plan::Done;
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
