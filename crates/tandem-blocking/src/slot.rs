//! The slot a [`crate::Transaction`] or a [`crate::PooledConnection`] keeps its connection in: lent to one
//! call at a time, or taken out by a stream that puts it back when it ends. Shared by both holders, below
//! them: it knows connections and streams, not who holds the slot.

use std::cell::RefCell;

use tandem_core::{Error, Holder, Result};
use tandem_sql::Rendered;

use crate::conn::Pooled;
use crate::driver::Conn;
use crate::stream::RowStream;

/// The connection in `slot`, for one call: an error while a stream opened on it is still being read (the
/// stream holds it) or while another call has it.
pub(crate) fn with_slot<R>(
    slot: &RefCell<Option<Pooled>>,
    holder: Holder,
    f: impl FnOnce(&mut Conn) -> Result<R>,
) -> Result<R> {
    let mut slot = slot.try_borrow_mut().map_err(|_| Error::InUse(holder))?;
    let conn = slot.as_mut().ok_or(Error::StreamOpen(holder))?;
    f(conn)
}

/// Takes the connection out of `slot` for a stream, which puts it back when it ends.
pub(crate) fn stream_from_slot<'a, T>(
    slot: &'a RefCell<Option<Pooled>>,
    holder: Holder,
    r: Rendered,
) -> Result<RowStream<'a, T>> {
    let conn = slot
        .try_borrow_mut()
        .map_err(|_| Error::InUse(holder))?
        .take()
        .ok_or(Error::StreamOpen(holder))?;
    RowStream::start(conn, r, Some(slot))
}
