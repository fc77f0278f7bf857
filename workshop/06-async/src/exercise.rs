//! Stage 6 — an async executor, streams and cancellation. Your code. Read `book/src/06-async.md`, then make
//! `just check 06` pass. The order that works: the SQLite worker, `Link` (SQLite first), the pool and its
//! `Drop`, `Database` and `Transaction`, the stream, and last the transfer.
// When you are done, delete this comment and the `#![allow(…)]` under it: they keep the compiler quiet
// while the bodies are `todo!()`s (unused parameters, imports, helpers); then its warnings are worth reading.
#![allow(
    unused_variables,
    unused_imports,
    unused_mut,
    dead_code,
    unreachable_code
)]

use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::Duration;

use blocking::drivers::{Conn, sqlite_params, sqlite_value};
use blocking::{ATTEMPTS, Error, FromRow, Outcome, RETRY_PAUSE, Result};
use dialects::{Select, Statement, Update};
use expressions::ColumnExt;
use futures_core::Stream;
use tables::{Dialect, Value};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, oneshot};

use crate::drivers;

// ANCHOR: worker
/// A call for a SQLite worker thread: a closure that gets the connection.
type Job = Box<dyn FnOnce(&mut Conn) + Send>;

/// One SQLite connection on a thread of its own, fed calls over a channel. The runtime's threads never
/// wait for SQLite: they send a call and await the answer.
pub struct Worker {
    jobs: std::sync::mpsc::Sender<Job>,
}

impl Worker {
    /// Starts a thread that opens `url` (stage 4's `drivers::connect`) and then runs the calls it is sent,
    /// in order, until the `Worker` is dropped.
    pub async fn start(url: &str) -> Result<Worker> {
        todo!("start the worker thread")
    }

    /// Runs `f` on the connection's thread and awaits what it returns.
    pub async fn call<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Conn) -> T + Send + 'static,
    ) -> Result<T> {
        todo!("call the worker")
    }

    /// Runs a query on the connection's thread, sending each row into `rows` as it is read; the thread
    /// waits while the channel is full (backpressure) and stops when the receiver is gone.
    fn stream(&self, st: Statement, rows: mpsc::Sender<Result<Vec<Value>>>) -> Result<()> {
        todo!("stream rows from the worker")
    }
}

fn stopped() -> Error {
    Error::Connect("the SQLite worker thread stopped".into())
}
// ANCHOR_END: worker

// ANCHOR: link
/// One connection of the async executor: a SQLite worker, or a sqlx connection to a server.
pub enum Link {
    /// SQLite, on its worker thread.
    Sqlite(Worker),
    /// PostgreSQL through sqlx.
    Postgres(sqlx::PgConnection),
    /// MySQL or MariaDB through sqlx.
    MySql(sqlx::MySqlConnection),
}

impl Link {
    /// Opens a connection to `url`.
    pub async fn open(url: &str) -> Result<Link> {
        todo!("open a link")
    }

    /// Runs a statement that returns no rows.
    pub async fn execute(&mut self, st: &Statement) -> Result<Outcome> {
        todo!("execute on each engine")
    }

    /// Runs a statement that returns rows; all of them.
    pub async fn query(&mut self, st: &Statement) -> Result<Vec<Vec<Value>>> {
        todo!("query on each engine")
    }

    /// Runs SQL without parameters or rows (`BEGIN`, `COMMIT`, …).
    pub async fn batch(&mut self, sql: &str) -> Result<()> {
        todo!("batch on each engine")
    }

    /// Ends a transaction a dropped future left open. SQLite says whether one is open; the servers take a
    /// ROLLBACK outside a transaction as a no-op (PostgreSQL with a warning).
    async fn clean(&mut self) -> Result<()> {
        todo!("roll back what a dropped future left open")
    }
}

fn pg_query(st: &Statement) -> drivers::PgQuery<'static> {
    let mut q = sqlx::query(sqlx::AssertSqlSafe(st.sql.clone()));
    for v in &st.params {
        q = drivers::bind_pg(q, v);
    }
    q
}

fn mysql_query(st: &Statement) -> drivers::MySqlQuery<'static> {
    let mut q = sqlx::query(sqlx::AssertSqlSafe(st.sql.clone()));
    for v in &st.params {
        q = drivers::bind_mysql(q, v);
    }
    q
}
// ANCHOR_END: link

// ANCHOR: pool
/// How many rows a stream reads ahead of its consumer: the bound of the channel between them.
pub const STREAM_BUFFER: usize = 64;

/// At most `max` connections; a caller waits at most `timeout` for one.
#[derive(Clone)]
pub struct Pool {
    shared: Arc<Shared>,
}

struct Shared {
    url: String,
    max: usize,
    timeout: Duration,
    /// One permit per connection that may be lent: held by every `Pooled`.
    slots: Arc<Semaphore>,
    idle: Mutex<Vec<Idle>>,
}

/// A connection waiting in the pool.
struct Idle {
    link: Link,
    /// A dropped future left it in a transaction: roll back before lending it again.
    dirty: bool,
}

/// How many connections a pool holds now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoolStatus {
    /// Lent out.
    pub in_use: usize,
    /// Waiting in the pool.
    pub idle: usize,
}

impl Pool {
    /// A pool of at most `max` connections to `url`, none opened yet.
    pub fn new(url: &str, max: usize, timeout: Duration) -> Pool {
        let max = max.max(1);
        Pool {
            shared: Arc::new(Shared {
                url: url.to_owned(),
                max,
                timeout,
                slots: Arc::new(Semaphore::new(max)),
                idle: Mutex::new(Vec::new()),
            }),
        }
    }

    /// A connection: a slot within the timeout (else `PoolTimeout`), then an idle connection — rolled back
    /// first if a dropped future left it in a transaction, closed if even that fails — or a new one.
    pub async fn get(&self) -> Result<Pooled> {
        todo!("lend a connection")
    }

    /// Connections lent out and waiting.
    pub fn status(&self) -> PoolStatus {
        PoolStatus {
            in_use: self.shared.max - self.shared.slots.available_permits(),
            idle: self.shared.lock().len(),
        }
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Vec<Idle>> {
        self.idle.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A lent connection. Dropped — by its owner, or with a future that was cancelled — it goes back to the
/// pool. Inside a transaction it must be rolled back first, at once: its locks block everyone else until
/// then. `Drop` cannot await, so it spawns a task — on the runtime `tokio::runtime::Handle::try_current()`
/// finds — that rolls back and then puts the connection back (still holding its slot, so the pool never
/// has more than `max`). Without a runtime to spawn on, the connection goes back marked, and the next `get`
/// rolls back.
pub struct Pooled {
    link: Option<Link>,
    in_transaction: bool,
    shared: Arc<Shared>,
    slot: Option<OwnedSemaphorePermit>,
}

impl Pooled {
    fn link(&mut self) -> &mut Link {
        self.link
            .as_mut()
            .expect("a lent connection until it is dropped")
    }
}

impl Drop for Pooled {
    fn drop(&mut self) {
        todo!("give the connection back, rolled back if it is in a transaction")
    }
}
// ANCHOR_END: pool

// ANCHOR: database
/// An async database: a pool of connections to one URL.
#[derive(Clone)]
pub struct Database {
    pool: Pool,
    dialect: Dialect,
}

impl Database {
    /// Opens a database of at most `max_connections`, one opened now; callers wait at most 5 s.
    pub async fn open(url: &str, max_connections: usize) -> Result<Database> {
        Database::open_with(url, max_connections, Duration::from_secs(5)).await
    }

    /// [`Database::open`] with another acquire timeout.
    pub async fn open_with(
        url: &str,
        max_connections: usize,
        timeout: Duration,
    ) -> Result<Database> {
        todo!("open a database")
    }

    /// The engine.
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// The pool, for its status.
    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    /// Runs a statement that returns no rows.
    pub async fn execute(&self, st: &Statement) -> Result<Outcome> {
        todo!("execute on a pooled connection")
    }

    /// Runs a statement that returns rows; all of them.
    pub async fn fetch_values(&self, st: &Statement) -> Result<Vec<Vec<Value>>> {
        todo!("query on a pooled connection")
    }

    /// Runs a statement and reads every row into `R`.
    pub async fn fetch<R: FromRow>(&self, st: &Statement) -> Result<Vec<R>> {
        todo!("read every row into R")
    }

    /// The rows of a statement as a stream that reads only as fast as it is consumed: at most
    /// [`STREAM_BUFFER`] rows wait between the database and the consumer. The stream holds its connection
    /// until it ends or is dropped.
    pub async fn stream(&self, st: Statement) -> Result<RowStream> {
        todo!("stream the rows")
    }

    /// A transaction on a connection of its own: `commit` it, or drop it to roll it back.
    pub async fn begin(&self) -> Result<Transaction> {
        todo!("begin a transaction")
    }

    /// Runs `f` in a transaction: `Ok` commits, `Err` rolls back, and a retriable failure of one of its
    /// statements runs all of `f` again, up to [`ATTEMPTS`] times, after a pause of [`RETRY_PAUSE`]
    /// (doubled before each further run; `tokio::time::sleep`, which holds no thread). A future dropped
    /// mid-way (or a panic) rolls back too: at once, in the task `Pooled`'s `Drop` spawns (or at the
    /// connection's next checkout, when there is no runtime to spawn on).
    pub async fn transaction<R, E: From<Error>>(
        &self,
        mut f: impl AsyncFnMut(&mut Transaction) -> Result<R, E>,
    ) -> Result<R, E> {
        todo!("run a transaction, with retries")
    }
}
// ANCHOR_END: database

// ANCHOR: transaction
/// A transaction: every statement on its one connection until `commit` or `rollback` — or until it is
/// dropped, which rolls it back (in the task `Pooled`'s `Drop` spawns; without a runtime, at the
/// connection's next checkout).
pub struct Transaction {
    conn: Pooled,
    dialect: Dialect,
    retriable: bool,
}

impl Transaction {
    /// The engine.
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// Runs a statement that returns no rows.
    pub async fn execute(&mut self, st: &Statement) -> Result<Outcome> {
        todo!("execute in the transaction")
    }

    /// Runs a statement that returns rows; all of them.
    pub async fn fetch_values(&mut self, st: &Statement) -> Result<Vec<Vec<Value>>> {
        todo!("query in the transaction")
    }

    /// Runs a statement and reads every row into `R`.
    pub async fn fetch<R: FromRow>(&mut self, st: &Statement) -> Result<Vec<R>> {
        todo!("read every row into R")
    }

    /// Commits.
    pub async fn commit(mut self) -> Result<()> {
        todo!("commit")
    }

    /// Rolls back, and says whether that worked (dropping the transaction rolls back too, in a task of
    /// its own that nobody awaits).
    pub async fn rollback(mut self) -> Result<()> {
        todo!("roll back")
    }
}
// ANCHOR_END: transaction

// ANCHOR: stream
/// Rows as they arrive: a `Stream` of each row's values.
pub struct RowStream {
    rows: mpsc::Receiver<Result<Vec<Value>>>,
    /// A SQLite worker's connection, kept until the stream is done (a server's is kept by its task).
    _conn: Option<Pooled>,
}

impl Stream for RowStream {
    type Item = Result<Vec<Value>>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        todo!("the next row")
    }
}
// ANCHOR_END: stream

pub use blocking::{TransferError, accounts};

// ANCHOR: transfer
/// Stage 4's transfer, from async code: the same statements in key order, in a transaction that runs again
/// after a deadlock, after the same pause. Write it with `begin` and `commit` rather than
/// [`Database::transaction`]: the future of an `AsyncFnMut` transaction cannot be proven `Send` on stable
/// Rust, and a transfer must be able to run in a spawned task.
pub async fn transfer(db: &Database, from: i64, to: i64, amount: i64) -> Result<(), TransferError> {
    todo!("move the money")
}
// ANCHOR_END: transfer
