//! [`RowStream`]: a `Stream` of decoded rows that reads from the server as it is polled.
//!
//! A producer task owns the connection while the stream lives. It reads rows from sqlx's row stream and
//! sends them in batches of [`BATCH`] over a channel holding at most [`BUFFERED`] batches; when the channel
//! is full the producer waits, so it stops reading and the server's socket fills: a slow consumer holds at
//! most `(BUFFERED + 2) × BATCH` rows in memory. Dropping the stream closes the channel; the producer stops,
//! and the connection goes back to the pool (or to its transaction).

use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_core::Stream;
use tandem_core::{Error, Result};
use tandem_sql::{FromRow, Rendered, Row};
use tokio::sync::{mpsc, oneshot};

use crate::conn::{Conn, Sink};

// ANCHOR: backpressure
/// Rows sent per message.
pub const BATCH: usize = 256;
/// Messages the channel holds.
pub const BUFFERED: usize = 2;

type Message = Result<Vec<Row>>;

/// A stream of decoded rows; see the module docs for its memory bound.
pub struct RowStream<T> {
    rx: mpsc::Receiver<Message>,
    current: std::vec::IntoIter<Row>,
    _rows: PhantomData<fn() -> T>,
}

struct ChannelSink {
    batch: Vec<Row>,
    tx: mpsc::Sender<Message>,
}

impl Sink for ChannelSink {
    async fn push(&mut self, row: Row) -> Result<bool> {
        self.batch.push(row);
        if self.batch.len() == BATCH {
            let full = std::mem::replace(&mut self.batch, Vec::with_capacity(BATCH));
            // Waits while BUFFERED batches are unread: a slow consumer holds the producer (and the
            // server's reads) back. The consumer is gone: stop reading.
            return Ok(self.tx.send(Ok(full)).await.is_ok());
        }
        Ok(true)
    }
}
// ANCHOR_END: backpressure

impl<T> RowStream<T> {
    /// Starts the producer; the connection comes back through `home` when the statement ends.
    pub(crate) fn start(mut conn: Conn, r: Rendered, home: Option<oneshot::Sender<Conn>>) -> Self {
        let (tx, rx) = mpsc::channel(BUFFERED);
        #[cfg(feature = "sqlite")]
        if let crate::conn::Link::Rusqlite(worker) = &conn.link {
            // rusqlite steps on the connection's worker thread; `blocking_send` waits for the consumer
            // there. The task holds the connection until the statement is done.
            let call = worker.call(move |c| {
                tandem_core::plan::run_batched(c, &r, BATCH, |m| tx.blocking_send(m).is_ok());
                Ok(())
            });
            tokio::spawn(async move {
                let _ = call.await;
                if let Some(home) = home {
                    let _ = home.send(conn);
                }
            });
            return RowStream {
                rx,
                current: Vec::new().into_iter(),
                _rows: PhantomData,
            };
        }
        tokio::spawn(async move {
            let mut sink = ChannelSink {
                batch: Vec::with_capacity(BATCH),
                tx,
            };
            match conn.run(&r, &mut sink).await {
                Ok(_) if !sink.batch.is_empty() => {
                    let _ = sink.tx.send(Ok(std::mem::take(&mut sink.batch))).await;
                }
                Ok(_) => {}
                Err(e) => {
                    let _ = sink.tx.send(Err(e)).await;
                }
            }
            if let Some(home) = home {
                let _ = home.send(conn);
            }
        });
        RowStream {
            rx,
            current: Vec::new().into_iter(),
            _rows: PhantomData,
        }
    }
}

impl<T: FromRow> Stream for RowStream<T> {
    type Item = Result<T>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<T>>> {
        loop {
            if let Some(row) = self.current.next() {
                return Poll::Ready(Some(T::from_row(row).map_err(Error::from)));
            }
            match self.rx.poll_recv(cx) {
                Poll::Ready(Some(Ok(batch))) => self.current = batch.into_iter(),
                Poll::Ready(Some(Err(e))) => return Poll::Ready(Some(Err(e))),
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

impl<T> Unpin for RowStream<T> {}
