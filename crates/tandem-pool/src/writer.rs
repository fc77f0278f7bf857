//! The writer gate: SQLite lets one connection write at a time. Left to itself, a connection that finds the
//! write lock taken sleeps in SQLite's busy handler (1, 2, 5, 10 … 100 ms) and tries again, so writers of one
//! database that take turns lose most of their time asleep, and the longest waiter is not served first. The
//! gate queues a database's write transactions in front of `BEGIN IMMEDIATE`, in arrival order: the
//! next writer starts the moment the previous one ends, and a writer waits without holding a connection.
//!
//! It lines up the transactions of one database handle (one pool, and its clones) only. Other
//! pools and other processes on the same file, and single statements outside a transaction, still meet
//! SQLite's own lock and its busy timeout, as before. A wait is bounded by the same `BUSY_TIMEOUT`, and ends
//! in the same error SQLite gives (`DbErrorKind::Busy`, retriable): nothing new to handle for the caller.

use std::time::Duration;

use tandem_core::tx::BUSY_TIMEOUT;
use tandem_core::{ConnectOptions, DbError, DbErrorKind, Error, Result, TxOptions};
use tandem_sql::Dialect;

use crate::{AdmissionError, Gate, GateConfig, Permit};

/// The queue of one database's write transactions; cheap to clone (clones share it).
#[derive(Clone)]
pub struct WriterGate(Gate);

impl std::fmt::Debug for WriterGate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriterGate")
            .field("waiting", &self.0.metrics().waiting)
            .finish()
    }
}

impl WriterGate {
    // ANCHOR: enter
    /// The gate for a database with these options: one for a SQLite file, none otherwise (an in-memory
    /// database belongs to one connection; the servers lock rows, not the database).
    pub fn for_database(options: &ConnectOptions) -> Option<WriterGate> {
        (options.dialect == Dialect::Sqlite && options.path.is_some()).then(|| {
            WriterGate(Gate::new(GateConfig {
                max_size: 1,
                max_pending: usize::MAX,
                timeout: BUSY_TIMEOUT,
            }))
        })
    }

    /// Waits (blocking the thread) for the turn of a transaction with these options, when there is a gate
    /// and the transaction writes (all but read-only ones, which SQLite begins DEFERRED). The turn ends when
    /// the permit is dropped.
    pub fn enter_blocking(gate: Option<&WriterGate>, opts: &TxOptions) -> Result<Option<Permit>> {
        match gate {
            Some(g) if !opts.read_only => g.0.acquire_blocking().map(Some).map_err(busy),
            _ => Ok(None),
        }
    }
    // ANCHOR_END: enter

    /// [`WriterGate::enter_blocking`] for async code: dropping the future gives the place in the queue up.
    pub async fn enter(gate: Option<&WriterGate>, opts: &TxOptions) -> Result<Option<Permit>> {
        match gate {
            Some(g) if !opts.read_only => g.0.acquire().await.map(Some).map_err(busy),
            _ => Ok(None),
        }
    }

    /// Write transactions waiting for their turn now.
    pub fn waiting(gate: Option<&WriterGate>) -> u32 {
        gate.map_or(0, |g| g.0.metrics().waiting as u32)
    }
}

/// A turn that did not come: the same kind of error as SQLite's own "database is locked".
fn busy(e: AdmissionError) -> Error {
    let waited = match e {
        AdmissionError::Timeout { waited, .. } => waited,
        _ => Duration::ZERO,
    };
    Error::Database(DbError {
        dialect: Dialect::Sqlite,
        kind: DbErrorKind::Busy,
        code: None,
        message: format!(
            "database is locked: another write transaction of this database held it for {waited:?}"
        ),
        constraint: None,
        source: None,
    })
}
