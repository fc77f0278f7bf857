//! Opening a connection from a URL that names several servers, or asks for a kind of server
//! (`target_session_attrs=`): the walk over the list ([`HostWalk`], in `tandem-core`, shared with the async
//! executor), the first server that answers and will do, in the order written.
//!
//! Where the two executors differ, and why: here **every new connection** walks the list, as libpq's
//! connections do — r2d2 asks its manager for one connection at a time and has no notion of a server to
//! point the whole pool at. The async executor walks it **once per pool** (and again after a connection
//! loss), in its `connect` module, because sqlx's pool connects to one server and tandem points it at the
//! one found.

use std::time::Duration;

use tandem_core::observe::Observer;
use tandem_core::{ConnectOptions, Error, HostWalk, Result, ServerRole, Verdict};

use crate::driver::Conn;

/// Opens a connection; server engines within `timeout` per server, handshake included. A URL with one
/// server (and no kind asked for) is not walked.
pub(crate) fn open(opts: &ConnectOptions, timeout: Duration, observer: &Observer) -> Result<Conn> {
    if !opts.chooses_server() {
        return Conn::open_one(opts, timeout, observer);
    }
    let mut walk = HostWalk::new(opts);
    while let Some(server) = walk.next_server() {
        let mut conn = match Conn::open_one(&server, timeout, observer) {
            Ok(c) => c,
            Err(e) => {
                walk.failed(&server, e);
                continue;
            }
        };
        let role = if walk.needs_probe() {
            match server_role(&mut conn) {
                Ok(role) => Some(role),
                Err(e) => {
                    walk.failed(&server, e);
                    continue;
                }
            }
        } else {
            None
        };
        if walk.judge(&server, role) == Verdict::Take {
            return Ok(conn);
        }
    }
    Err(walk.into_error())
}

/// What the server is (standby, read-only), by [`tandem_core::hosts::probe_statement`].
fn server_role(conn: &mut Conn) -> Result<ServerRole> {
    let mut role = None;
    conn.run(&tandem_core::hosts::probe_statement(), &mut |cells| {
        role = Some(ServerRole::from_row(&cells.row()?)?);
        Ok(true)
    })?;
    role.ok_or_else(|| Error::Internal("the role probe returned no row".into()))
}
