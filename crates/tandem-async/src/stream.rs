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
use std::time::{Duration, Instant};

use futures_core::Stream;
use tandem_core::observe::Buffered;
use tandem_core::{Error, Result};
use tandem_sql::{Cells, FromRow, Rendered, Row};
use tokio::sync::{mpsc, oneshot};
use tracing::Instrument;

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
    /// The rows between producer and consumer, in the metrics.
    buffered: Buffered,
    current: std::vec::IntoIter<Row>,
    _rows: PhantomData<fn() -> T>,
}

struct ChannelSink {
    batch: Vec<Row>,
    tx: mpsc::Sender<Message>,
    buffered: Buffered,
    /// How long the producer waited for the consumer to make room.
    waited: Duration,
}

impl ChannelSink {
    /// Sends a message, waiting while BUFFERED batches are unread: a slow consumer holds the producer (and
    /// the server's reads) back. `false`: the consumer is gone.
    async fn send(&mut self, m: Message) -> bool {
        self.buffered
            .produced(m.as_ref().map_or(0, |b| b.len() as i64));
        match self.tx.try_send(m) {
            Ok(()) => true,
            Err(mpsc::error::TrySendError::Full(m)) => {
                let full = Instant::now();
                let sent = self.tx.send(m).await.is_ok();
                self.waited += full.elapsed();
                sent
            }
            Err(mpsc::error::TrySendError::Closed(_)) => false,
        }
    }
}

impl Sink for ChannelSink {
    async fn push<C: Cells + Send + ?Sized>(&mut self, row: &mut C) -> Result<bool>
    where
        Error: From<C::Error>,
    {
        self.batch.push(row.row()?);
        if self.batch.len() == BATCH {
            let full = std::mem::replace(&mut self.batch, Vec::with_capacity(BATCH));
            // The consumer is gone: stop reading.
            return Ok(self.send(Ok(full)).await);
        }
        Ok(true)
    }
}
// ANCHOR_END: backpressure

impl<T> RowStream<T> {
    /// Starts the producer; the connection comes back through `home` when the statement ends.
    pub(crate) fn start(mut conn: Conn, r: Rendered, home: Option<oneshot::Sender<Conn>>) -> Self {
        let (tx, rx) = mpsc::channel(BUFFERED);
        let buffered = conn.observer.stream();
        let theirs = buffered.clone();
        #[cfg(feature = "sqlite")]
        if let crate::conn::Link::Rusqlite(worker) = &conn.link {
            // rusqlite steps on the connection's worker thread; `blocking_send` waits for the consumer
            // there. The task holds the connection until the statement is done. The statement reports
            // like every other (its span a child of the caller's).
            let (observer, parent) = (conn.observer.clone(), tracing::Span::current());
            let call = worker.call(move |c| {
                let mut c = tandem_core::observe::Observed {
                    runner: c,
                    observer: &observer,
                };
                let mut waited = Duration::ZERO;
                parent.in_scope(|| {
                    tandem_core::plan::run_batched(&mut c, &r, BATCH, |m| {
                        theirs.produced(m.as_ref().map_or(0, |b| b.len() as i64));
                        match tx.try_send(m) {
                            Ok(()) => true,
                            Err(mpsc::error::TrySendError::Full(m)) => {
                                let full = Instant::now();
                                let sent = tx.blocking_send(m).is_ok();
                                waited += full.elapsed();
                                sent
                            }
                            Err(mpsc::error::TrySendError::Closed(_)) => false,
                        }
                    })
                });
                theirs.producer_done(waited);
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
                buffered,
                current: Vec::new().into_iter(),
                _rows: PhantomData,
            };
        }
        let produce = async move {
            let mut sink = ChannelSink {
                batch: Vec::with_capacity(BATCH),
                tx,
                buffered: theirs,
                waited: Duration::ZERO,
            };
            match conn.run(&r, &mut sink).await {
                Ok(_) if !sink.batch.is_empty() => {
                    let last = std::mem::take(&mut sink.batch);
                    sink.send(Ok(last)).await;
                }
                Ok(_) => {}
                Err(e) => {
                    sink.send(Err(e)).await;
                }
            }
            sink.buffered.producer_done(sink.waited);
            if let Some(home) = home {
                let _ = home.send(conn);
            }
        };
        // The statement's span is a child of the caller's, in the producer's task too.
        tokio::spawn(produce.instrument(tracing::Span::current()));
        RowStream {
            rx,
            buffered,
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
                Poll::Ready(Some(Ok(batch))) => {
                    self.buffered.consumed(batch.len() as i64);
                    self.current = batch.into_iter();
                }
                Poll::Ready(Some(Err(e))) => return Poll::Ready(Some(Err(e))),
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

impl<T> Unpin for RowStream<T> {}

impl<T> Drop for RowStream<T> {
    fn drop(&mut self) {
        self.buffered.consumer_done();
    }
}
