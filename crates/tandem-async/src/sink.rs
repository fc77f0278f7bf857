//! Where a statement's rows go: the one trait every driver's statement loop feeds.

use tandem_core::{Error, Result};
use tandem_sql::Cells;

/// Receives a statement's rows, as the driver holds them (decoded into the caller's type cell by cell, or
/// kept with [`Cells::row`]); `push` returns `false` to stop reading. Async so that a stream's sink can
/// wait for its consumer: that wait is the backpressure.
pub trait Sink: Send {
    /// Takes one row.
    fn push<C: Cells + Send + ?Sized>(
        &mut self,
        row: &mut C,
    ) -> impl std::future::Future<Output = Result<bool>> + Send
    where
        Error: From<C::Error>;
    /// How many rows a driver that cannot call back into async code should hand over (rusqlite on its
    /// worker thread, which returns them in one reply): all of them, only the first, or none.
    fn keep(&self) -> usize {
        usize::MAX
    }
}
