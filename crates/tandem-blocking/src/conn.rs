//! A pooled connection: a driver connection checked out of the pool with its admission permit, and what
//! runs on one connection. The lowest layer of the executor: the stream, the slots, the transaction, the
//! checked-out connection and the database all hold a [`Pooled`].

use std::sync::Arc;

use tandem_core::Result;
use tandem_core::plan::{Outcome, Step};
use tandem_pool::{InUse, Permit};

use crate::driver::Conn;
use crate::homes::Homes;
use crate::pool::Manager;

/// A connection checked out of the pool, with its admission permit. The connection goes back (home, or
/// to r2d2) before the permit admits the next waiter, who then finds it idle.
pub(crate) struct Pooled {
    /// `None` only while it is being given back.
    conn: Option<r2d2::PooledConnection<Manager>>,
    /// Where it goes back to on a SQLite database (see [`Homes`]); r2d2 otherwise.
    homes: Option<Arc<Homes>>,
    _permit: Option<Permit>,
    /// Counts it in use in the pool's metrics until it is back (dropped last).
    _in_use: InUse,
}

impl Pooled {
    /// A connection r2d2 lent, going back to `homes` (a SQLite database's) or to r2d2 when dropped.
    pub(crate) fn new(
        conn: r2d2::PooledConnection<Manager>,
        homes: Option<Arc<Homes>>,
        permit: Option<Permit>,
        in_use: InUse,
    ) -> Pooled {
        Pooled {
            conn: Some(conn),
            homes,
            _permit: permit,
            _in_use: in_use,
        }
    }
}

impl std::ops::Deref for Pooled {
    type Target = Conn;
    fn deref(&self) -> &Conn {
        self.conn.as_ref().expect("checked out")
    }
}

impl std::ops::DerefMut for Pooled {
    fn deref_mut(&mut self) -> &mut Conn {
        self.conn.as_mut().expect("checked out")
    }
}

impl Drop for Pooled {
    fn drop(&mut self) {
        if let (Some(homes), Some(mut conn)) = (&self.homes, self.conn.take())
            // What r2d2 checks when a connection comes back (`Manager::has_broken`); a connection that
            // fails goes to r2d2, which closes it.
            && conn.is_usable()
            && conn.end_abandoned_transaction()
        {
            homes.keep(conn);
        }
    }
}

/// Runs steps on one connection, collecting each outcome.
pub(crate) fn run_steps(conn: &mut Conn, steps: &[Step]) -> Result<Vec<Outcome>> {
    tandem_core::plan::run_steps(conn, steps)
}
