//! The r2d2 manager for tandem connections. `tandem-pool` will put admission control in front of it.

use tandem_core::{ConnectOptions, Error};

use crate::driver::Conn;

/// Opens and checks connections for r2d2.
pub(crate) struct Manager {
    pub(crate) options: ConnectOptions,
}

impl r2d2::ManageConnection for Manager {
    type Connection = Conn;
    type Error = Error;

    fn connect(&self) -> Result<Conn, Error> {
        Conn::open(&self.options)
    }

    fn is_valid(&self, conn: &mut Conn) -> Result<(), Error> {
        conn.simple("SELECT 1")
    }

    fn has_broken(&self, conn: &mut Conn) -> bool {
        !conn.is_usable()
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
