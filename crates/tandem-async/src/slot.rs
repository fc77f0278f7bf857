//! The slot a [`crate::Transaction`] or a [`crate::PooledConnection`] keeps its connection in: lent to one
//! call at a time (behind a tokio mutex, so a call waits its turn without blocking a thread), or taken out
//! by a stream that sends it back when it ends. Shared by both holders, below them: it knows connections and
//! streams, not who holds the slot.

use tandem_core::plan::Done;
use tandem_core::{Error, Result};
use tandem_sql::Rendered;
use tokio::sync::{Mutex, MutexGuard, oneshot};

use crate::conn::{Conn, Sink};
use crate::stream::RowStream;

/// Where the connection of a transaction (or of a checked-out connection) is.
pub(crate) enum Slot {
    Here(Box<Conn>),
    /// A stream opened in the transaction holds the connection; it comes back when the stream ends.
    Away(oneshot::Receiver<Conn>),
    Gone,
}

/// The slot, with its connection back from a stream that had it (waiting for the stream to end).
pub(crate) async fn lock_slot(slot: &Mutex<Slot>) -> Result<MutexGuard<'_, Slot>> {
    let mut slot = slot.lock().await;
    if let Slot::Away(rx) = &mut *slot {
        match rx.await {
            Ok(conn) => *slot = Slot::Here(Box::new(conn)),
            Err(_) => {
                *slot = Slot::Gone;
                return Err(Error::NoConnection);
            }
        }
    }
    Ok(slot)
}

/// A stream over `r` that takes the slot's connection and gives it back when it ends.
pub(crate) async fn stream_from_slot<T>(slot: &Mutex<Slot>, r: Rendered) -> Result<RowStream<T>> {
    let mut slot = lock_slot(slot).await?;
    let Slot::Here(conn) = std::mem::replace(&mut *slot, Slot::Gone) else {
        return Err(gone());
    };
    let (home, back) = oneshot::channel();
    *slot = Slot::Away(back);
    Ok(RowStream::start(*conn, r, Some(home)))
}

/// How a statement is read: as any statement, or as a repository's key lookup (see `Conn::run_key_read`).
#[derive(Clone, Copy)]
pub(crate) enum Read {
    Any,
    Key,
}

/// Runs one statement on the connection in `slot`, rows to `sink`.
pub(crate) async fn run_in_slot<S: Sink>(
    slot: &Mutex<Slot>,
    r: &Rendered,
    sink: &mut S,
    read: Read,
) -> Result<Done> {
    let mut slot = lock_slot(slot).await?;
    let Slot::Here(c) = &mut *slot else {
        return Err(gone());
    };
    match read {
        Read::Any => c.run(r, sink).await,
        Read::Key => c.run_key_read(r, sink).await,
    }
}

pub(crate) fn gone() -> Error {
    Error::NoConnection
}
