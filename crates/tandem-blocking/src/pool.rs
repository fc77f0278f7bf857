//! The r2d2 manager for tandem connections; `Database` puts `tandem-pool`'s admission control in front of
//! the pool it builds.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

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
    /// The last connect failure since the last connect that worked: what a warm-up or an acquire that
    /// timed out reports (r2d2 itself keeps only a failure's text).
    pub(crate) last_error: LastError,
    /// What its connections report through.
    pub(crate) observer: tandem_core::observe::Observer,
    /// The pool's gauges: each connection counts itself opened here and closed when dropped.
    pub(crate) gauges: Arc<tandem_core::observe::PoolGauges>,
}

/// The connect failure a [`Manager`] saw last, shared with the database that reports it.
#[derive(Clone, Default)]
pub(crate) struct LastError(Arc<Mutex<Option<Error>>>);

impl LastError {
    fn set(&self, e: Option<Error>) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = e;
    }

    /// The failure, if one was seen since the last connect that worked; reported once.
    pub(crate) fn take(&self) -> Option<Error> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).take()
    }
}

/// What r2d2 is told of a failure: its text, for r2d2's log hook. The error itself goes to [`LastError`].
#[derive(Debug)]
pub(crate) struct Reported(String);

impl std::fmt::Display for Reported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Reported {}

impl r2d2::ManageConnection for Manager {
    type Connection = Conn;
    type Error = Reported;

    fn connect(&self) -> Result<Conn, Reported> {
        let mut conn =
            match crate::connect::open(&self.options, self.connect_timeout, &self.observer) {
                Ok(c) => c,
                Err(e) => {
                    if e.is_unreachable() {
                        self.losses.note_reachable(false);
                    }
                    let reported = Reported(e.to_string());
                    self.last_error.set(Some(e));
                    return Err(reported);
                }
            };
        self.last_error.set(None);
        self.losses.note_reachable(true);
        self.created.fetch_add(1, Ordering::Relaxed);
        conn.health = tandem_pool::ConnHealth::new(Some(self.losses.clone()));
        conn.count_in(&self.gauges);
        Ok(conn)
    }

    fn is_valid(&self, conn: &mut Conn) -> Result<(), Reported> {
        conn.ping().map_err(|e| Reported(e.to_string()))
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

impl r2d2::HandleError<Reported> for QuietErrors {
    fn handle_error(&self, error: Reported) {
        tracing::warn!(%error, "connection attempt failed");
    }
}
