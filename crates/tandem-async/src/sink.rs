//! Where a statement's rows go: the one trait every driver's statement loop feeds.

use tandem_core::Result;
use tandem_sql::Row;

/// Receives a statement's rows; `push` returns `false` to stop reading. Async so that a stream's sink can
/// wait for its consumer: that wait is the backpressure.
pub trait Sink: Send {
    /// Takes one row.
    fn push(&mut self, row: Row) -> impl std::future::Future<Output = Result<bool>> + Send;
    /// How many rows a driver that cannot call back into async code should hand over (rusqlite on its
    /// worker thread, which returns them in one reply): all of them, only the first, or none.
    fn keep(&self) -> usize {
        usize::MAX
    }
}
