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
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread::JoinHandle;

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
    _rows: PhantomData<fn() -> T>,
}

impl<'a, T> RowStream<'a, T> {
    pub(crate) fn start(
        conn: Pooled,
        r: Rendered,
        home: Option<&'a RefCell<Option<Pooled>>>,
    ) -> Result<Self> {
        let (tx, rx) = sync_channel::<Message>(BUFFERED);
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
                produce(&mut conn, &r, &tx);
                conn
            });
        match spawned {
            Ok(producer) => Ok(RowStream {
                rx: Some(rx),
                current: Vec::new().into_iter(),
                producer: Some(producer),
                home,
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

fn produce(conn: &mut Pooled, r: &Rendered, tx: &SyncSender<Message>) {
    // A failed send means the consumer is gone: stop reading.
    tandem_core::plan::run_batched(&mut **conn, r, BATCH, |m| tx.send(m).is_ok());
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
                Ok(Ok(batch)) => self.current = batch.into_iter(),
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
