//! The r2d2 manager for tandem connections; `Database` puts `tandem-pool`'s admission control in front of
//! the pool it builds.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tandem_core::{ConnectOptions, Error};

use crate::driver::Conn;

/// Opens and checks connections for r2d2.
pub(crate) struct Manager {
    pub(crate) options: ConnectOptions,
    /// Bumped for every connection opened (the pool's `created` metric).
    pub(crate) created: Arc<AtomicU64>,
    /// Connection losses seen by the pool.
    pub(crate) losses: Arc<tandem_pool::LossClock>,
    /// Bound on opening one connection.
    pub(crate) connect_timeout: std::time::Duration,
    /// The last connect failure, for the warm-up error.
    pub(crate) last_error: Arc<std::sync::Mutex<Option<Error>>>,
}

impl r2d2::ManageConnection for Manager {
    type Connection = Conn;
    type Error = Error;

    fn connect(&self) -> Result<Conn, Error> {
        let mut conn = match Conn::open(&self.options, self.connect_timeout) {
            Ok(c) => c,
            Err(e) => {
                if e.is_unreachable() {
                    self.losses.note_reachable(false);
                }
                *self.last_error.lock().unwrap_or_else(|p| p.into_inner()) = Some(copy_of(&e));
                return Err(e);
            }
        };
        self.losses.note_reachable(true);
        self.created.fetch_add(1, Ordering::Relaxed);
        conn.known_good = self.losses.stamp();
        conn.losses = Some(self.losses.clone());
        Ok(conn)
    }

    fn is_valid(&self, conn: &mut Conn) -> Result<(), Error> {
        conn.simple("SELECT 1")
    }

    /// Called as a connection comes back: broken ones, and SQLite ones still inside a transaction that
    /// cannot be rolled back, are dropped instead of pooled.
    fn has_broken(&self, conn: &mut Conn) -> bool {
        !conn.is_usable() || !conn.end_abandoned_transaction()
    }
}

/// Keeps r2d2 from logging every failed connect attempt on its own; the error reaches the caller instead.
#[derive(Debug)]
pub(crate) struct QuietErrors;

impl r2d2::HandleError<Error> for QuietErrors {
    fn handle_error(&self, error: Error) {
        tracing::warn!(%error, "connection attempt failed");
    }
}

/// A copy of a connect failure to keep for the warm-up error (`Error` holds boxed causes and is not
/// `Clone`; the kinds connecting produces are copied exactly, anything else as its text).
fn copy_of(e: &Error) -> Error {
    match e {
        Error::Database(d) => Error::Database(d.clone()),
        Error::ConnectTimeout { target, timeout } => Error::ConnectTimeout {
            target: target.clone(),
            timeout: *timeout,
        },
        other => Error::Usage(other.to_string()),
    }
}
