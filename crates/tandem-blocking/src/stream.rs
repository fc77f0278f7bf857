//! [`RowStream`]: rows pulled from the driver as the iterator is consumed, with bounded memory.
//!
//! A producer thread owns the connection while the stream lives and runs the statement, stepping the driver
//! (SQLite `sqlite3_step`, the PostgreSQL row stream, the MySQL result read off the socket) and sending rows
//! in batches of [`BATCH`] over a channel that holds at most [`BUFFERED`] batches. When the channel is full
//! the producer blocks, so the driver stops reading and the server's socket fills: backpressure all the way
//! down. A slow consumer holds at most `(BUFFERED + 2) × BATCH` rows. Dropping the stream stops the producer,
//! which finishes the statement and hands the connection back (to the pool, or to its transaction).

use std::cell::RefCell;
use std::marker::PhantomData;
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tandem_core::observe::Buffered;

use tandem_core::{Error, Result};
use tandem_sql::{FromRow, Rendered, Row};

use crate::conn::Pooled;

/// Rows sent per message.
pub const BATCH: usize = 256;
/// Messages the channel holds.
pub const BUFFERED: usize = 2;

type Message = Result<Vec<Row>>;

/// A streaming iterator over decoded rows. See the module docs for its memory bound.
pub struct RowStream<'a, T> {
    rx: Option<Receiver<Message>>,
    current: std::vec::IntoIter<Row>,
    producer: Option<JoinHandle<Pooled>>,
    home: Option<&'a RefCell<Option<Pooled>>>,
    /// The rows between producer and consumer, in the metrics.
    buffered: Buffered,
    _rows: PhantomData<fn() -> T>,
}

impl<'a, T> RowStream<'a, T> {
    pub(crate) fn start(
        conn: Pooled,
        r: Rendered,
        home: Option<&'a RefCell<Option<Pooled>>>,
    ) -> Result<Self> {
        let (tx, rx) = sync_channel::<Message>(BUFFERED);
        let buffered = conn.observer.stream();
        let theirs_buffered = buffered.clone();
        // The statement's span is a child of the caller's, on the producer's thread too.
        let parent = tracing::Span::current();
        // The connection travels into the thread and back out of it; if the thread cannot start, it is
        // returned through the slot below rather than lost.
        let slot = std::sync::Arc::new(std::sync::Mutex::new(Some(conn)));
        let theirs = slot.clone();
        let spawned = std::thread::Builder::new()
            .name("tandem-stream".into())
            .spawn(move || {
                let mut conn = theirs
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .take()
                    .expect("the connection is handed over before the thread starts");
                let waited = parent.in_scope(|| produce(&mut conn, &r, &tx, &theirs_buffered));
                theirs_buffered.producer_done(waited);
                conn
            });
        match spawned {
            Ok(producer) => Ok(RowStream {
                rx: Some(rx),
                current: Vec::new().into_iter(),
                producer: Some(producer),
                home,
                buffered,
                _rows: PhantomData,
            }),
            Err(e) => {
                let conn = slot
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .take();
                if let (Some(home), Some(conn)) = (home, conn) {
                    *home.borrow_mut() = Some(conn);
                }
                Err(Error::Thread {
                    what: "a stream's producer thread",
                    source: e,
                })
            }
        }
    }

    /// Stops reading, waits for the producer, and returns the connection to where it came from.
    fn close(&mut self) {
        self.rx = None;
        if let Some(p) = self.producer.take() {
            self.buffered.consumer_done();
            match p.join() {
                Ok(conn) => {
                    if let Some(home) = self.home {
                        *home.borrow_mut() = Some(conn);
                    }
                }
                Err(_) => tracing::error!("stream producer panicked; its connection is dropped"),
            }
        }
    }
}

/// Runs the statement, sending its rows; returns how long it waited for the consumer to make room.
fn produce(
    conn: &mut Pooled,
    r: &Rendered,
    tx: &SyncSender<Message>,
    buffered: &Buffered,
) -> Duration {
    let mut waited = Duration::ZERO;
    // A failed send means the consumer is gone: stop reading.
    tandem_core::plan::run_batched(&mut **conn, r, BATCH, |m| {
        let rows = m.as_ref().map_or(0, |b| b.len() as i64);
        buffered.produced(rows);
        match tx.try_send(m) {
            Ok(()) => true,
            Err(TrySendError::Full(m)) => {
                let full = Instant::now();
                let sent = tx.send(m).is_ok();
                waited += full.elapsed();
                sent
            }
            Err(TrySendError::Disconnected(_)) => false,
        }
    });
    waited
}

impl<T: FromRow> Iterator for RowStream<'_, T> {
    type Item = Result<T>;

    fn next(&mut self) -> Option<Result<T>> {
        loop {
            if let Some(row) = self.current.next() {
                return Some(T::from_row(row).map_err(Error::from));
            }
            let msg = self.rx.as_ref()?.recv();
            match msg {
                Ok(Ok(batch)) => {
                    self.buffered.consumed(batch.len() as i64);
                    self.current = batch.into_iter();
                }
                Ok(Err(e)) => {
                    self.close();
                    return Some(Err(e));
                }
                Err(_) => {
                    self.close();
                    return None;
                }
            }
        }
    }
}

impl<T> Drop for RowStream<'_, T> {
    fn drop(&mut self) {
        self.close();
    }
}
