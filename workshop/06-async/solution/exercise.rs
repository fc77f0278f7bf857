//! Stage 6 — an async executor: the reference solution.

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
        let (jobs, calls) = std::sync::mpsc::channel::<Job>();
        let (opened, is_open) = oneshot::channel();
        let url = url.to_owned();
        std::thread::Builder::new()
            .name("sqlite-worker".into())
            .spawn(move || {
                let mut conn = match blocking::drivers::connect(&url) {
                    Ok(c) => {
                        let _ = opened.send(Ok(()));
                        c
                    }
                    Err(e) => {
                        let _ = opened.send(Err(Error::Connect(e)));
                        return;
                    }
                };
                // Ends when every `Sender` is gone: the worker was dropped and its calls have run.
                while let Ok(job) = calls.recv() {
                    job(&mut conn);
                }
            })
            .map_err(|e| Error::Connect(format!("cannot start a SQLite worker: {e}")))?;
        is_open.await.map_err(|_| stopped())??;
        Ok(Worker { jobs })
    }

    /// Runs `f` on the connection's thread and awaits what it returns.
    pub async fn call<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Conn) -> T + Send + 'static,
    ) -> Result<T> {
        let (answer, answered) = oneshot::channel();
        let job: Job = Box::new(move |conn| {
            // Nobody may be waiting any more (a dropped future): the call has run all the same.
            let _ = answer.send(f(conn));
        });
        self.jobs.send(job).map_err(|_| stopped())?;
        answered.await.map_err(|_| stopped())
    }

    /// Runs a query on the connection's thread, sending each row into `rows` as it is read; the thread
    /// waits while the channel is full (backpressure) and stops when the receiver is gone.
    fn stream(&self, st: Statement, rows: mpsc::Sender<Result<Vec<Value>>>) -> Result<()> {
        let job: Job = Box::new(move |conn| {
            let Conn::Sqlite(c) = conn else {
                return;
            };
            let send = |row: Result<Vec<Value>>| rows.blocking_send(row).is_ok();
            let mut stmt = match c.prepare_cached(&st.sql) {
                Ok(s) => s,
                Err(e) => {
                    send(Err(e.into()));
                    return;
                }
            };
            let width = stmt.column_count();
            let mut cursor = match stmt.query(rusqlite::params_from_iter(sqlite_params(&st.params)))
            {
                Ok(r) => r,
                Err(e) => {
                    send(Err(e.into()));
                    return;
                }
            };
            loop {
                let row = match cursor.next() {
                    Ok(Some(row)) => (0..width)
                        .map(|i| {
                            row.get_ref(i)
                                .map_err(Error::from)
                                .and_then(|v| sqlite_value(v).map_err(Error::from))
                        })
                        .collect::<Result<Vec<Value>>>(),
                    Ok(None) => return,
                    Err(e) => Err(e.into()),
                };
                let failed = row.is_err();
                if !send(row) || failed {
                    return;
                }
            }
        });
        self.jobs.send(job).map_err(|_| stopped())
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
        match blocking::drivers::dialect_of(url).map_err(Error::Connect)? {
            Dialect::Sqlite => Worker::start(url).await.map(Link::Sqlite),
            Dialect::Postgres => drivers::connect_postgres(url).await.map(Link::Postgres),
            Dialect::MySql => drivers::connect_mysql(url).await.map(Link::MySql),
        }
    }

    /// Runs a statement that returns no rows.
    pub async fn execute(&mut self, st: &Statement) -> Result<Outcome> {
        match self {
            Link::Sqlite(w) => {
                let st = st.clone();
                w.call(move |c| c.execute(&st)).await?
            }
            Link::Postgres(c) => {
                let r = pg_query(st)
                    .execute(&mut *c)
                    .await
                    .map_err(drivers::error)?;
                Ok(Outcome {
                    rows_affected: r.rows_affected(),
                    last_insert_id: None,
                })
            }
            Link::MySql(c) => {
                let r = mysql_query(st)
                    .execute(&mut *c)
                    .await
                    .map_err(drivers::error)?;
                Ok(Outcome {
                    rows_affected: r.rows_affected(),
                    // 0: this statement generated no key.
                    last_insert_id: i64::try_from(r.last_insert_id()).ok().filter(|&id| id != 0),
                })
            }
        }
    }

    /// Runs a statement that returns rows; all of them.
    pub async fn query(&mut self, st: &Statement) -> Result<Vec<Vec<Value>>> {
        match self {
            Link::Sqlite(w) => {
                let st = st.clone();
                w.call(move |c| c.query(&st)).await?
            }
            Link::Postgres(c) => pg_query(st)
                .fetch_all(&mut *c)
                .await
                .map_err(drivers::error)?
                .iter()
                .map(|r| drivers::pg_values(r).map_err(Error::from))
                .collect(),
            Link::MySql(c) => mysql_query(st)
                .fetch_all(&mut *c)
                .await
                .map_err(drivers::error)?
                .iter()
                .map(|r| drivers::mysql_values(r).map_err(Error::from))
                .collect(),
        }
    }

    /// Runs SQL without parameters or rows (`BEGIN`, `COMMIT`, …).
    pub async fn batch(&mut self, sql: &str) -> Result<()> {
        match self {
            Link::Sqlite(w) => {
                let sql = sql.to_owned();
                w.call(move |c| c.batch(&sql)).await?
            }
            Link::Postgres(c) => sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_owned()))
                .execute(&mut *c)
                .await
                .map(|_| ())
                .map_err(drivers::error),
            Link::MySql(c) => sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_owned()))
                .execute(&mut *c)
                .await
                .map(|_| ())
                .map_err(drivers::error),
        }
    }

    /// Ends a transaction a dropped future left open. SQLite says whether one is open; the servers take a
    /// ROLLBACK outside a transaction as a no-op (PostgreSQL with a warning).
    async fn clean(&mut self) -> Result<()> {
        match self {
            Link::Sqlite(w) => {
                w.call(|c| match c {
                    Conn::Sqlite(s) if !s.is_autocommit() => c.batch("ROLLBACK"),
                    _ => Ok(()),
                })
                .await?
            }
            _ => self.batch("ROLLBACK").await,
        }
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
        let shared = &self.shared;
        let slot = tokio::time::timeout(shared.timeout, shared.slots.clone().acquire_owned())
            .await
            .map_err(|_| Error::PoolTimeout {
                waited: shared.timeout,
                max: shared.max,
            })?
            .map_err(|_| Error::Connect("the pool is closed".into()))?;
        loop {
            let idle = shared.lock().pop();
            let link = match idle {
                Some(Idle { link, dirty: false }) => link,
                Some(Idle {
                    mut link,
                    dirty: true,
                }) => match link.clean().await {
                    Ok(()) => link,
                    // Closed: try the next idle one, or open a fresh one.
                    Err(_) => continue,
                },
                None => Link::open(&shared.url).await?,
            };
            return Ok(Pooled {
                link: Some(link),
                in_transaction: false,
                shared: shared.clone(),
                slot: Some(slot),
            });
        }
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
        let Some(mut link) = self.link.take() else {
            return;
        };
        let shared = self.shared.clone();
        let slot = self.slot.take();
        match tokio::runtime::Handle::try_current() {
            Ok(rt) if self.in_transaction => {
                rt.spawn(async move {
                    if link.clean().await.is_ok() {
                        shared.lock().push(Idle { link, dirty: false });
                    }
                    drop(slot);
                });
            }
            _ => {
                shared.lock().push(Idle {
                    link,
                    dirty: self.in_transaction,
                });
                drop(slot);
            }
        }
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
        let dialect = blocking::drivers::dialect_of(url).map_err(Error::Connect)?;
        let pool = Pool::new(url, max_connections, timeout);
        drop(pool.get().await?);
        Ok(Database { pool, dialect })
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
        self.pool.get().await?.link().execute(st).await
    }

    /// Runs a statement that returns rows; all of them.
    pub async fn fetch_values(&self, st: &Statement) -> Result<Vec<Vec<Value>>> {
        self.pool.get().await?.link().query(st).await
    }

    /// Runs a statement and reads every row into `R`.
    pub async fn fetch<R: FromRow>(&self, st: &Statement) -> Result<Vec<R>> {
        self.fetch_values(st)
            .await?
            .into_iter()
            .map(R::from_row)
            .collect()
    }

    /// The rows of a statement as a stream that reads only as fast as it is consumed: at most
    /// [`STREAM_BUFFER`] rows wait between the database and the consumer. The stream holds its connection
    /// until it ends or is dropped.
    pub async fn stream(&self, st: Statement) -> Result<RowStream> {
        let mut conn = self.pool.get().await?;
        let (tx, rx) = mpsc::channel(STREAM_BUFFER);
        match conn.link() {
            Link::Sqlite(w) => {
                w.stream(st, tx)?;
                Ok(RowStream {
                    rows: rx,
                    _conn: Some(conn),
                })
            }
            _ => {
                // A sqlx stream borrows its connection: a task owns both and forwards the rows.
                tokio::spawn(async move {
                    use futures_util::StreamExt;
                    macro_rules! forward {
                        ($q:expr, $c:expr, $values:path) => {{
                            let mut rows = $q.fetch(&mut *$c);
                            while let Some(row) = rows.next().await {
                                let row = row
                                    .map_err(drivers::error)
                                    .and_then(|r| $values(&r).map_err(Error::from));
                                let failed = row.is_err();
                                if tx.send(row).await.is_err() || failed {
                                    break;
                                }
                            }
                        }};
                    }
                    match conn.link() {
                        Link::Postgres(c) => forward!(pg_query(&st), c, drivers::pg_values),
                        Link::MySql(c) => forward!(mysql_query(&st), c, drivers::mysql_values),
                        Link::Sqlite(_) => {}
                    }
                });
                Ok(RowStream {
                    rows: rx,
                    _conn: None,
                })
            }
        }
    }

    /// A transaction on a connection of its own: `commit` it, or drop it to roll it back.
    pub async fn begin(&self) -> Result<Transaction> {
        let mut conn = self.pool.get().await?;
        // Marked before BEGIN is sent: a future dropped while BEGIN runs leaves a connection to clean.
        conn.in_transaction = true;
        let begin = match self.dialect {
            Dialect::Sqlite => "BEGIN IMMEDIATE",
            Dialect::Postgres | Dialect::MySql => "BEGIN",
        };
        conn.link().batch(begin).await?;
        Ok(Transaction {
            conn,
            dialect: self.dialect,
            retriable: false,
        })
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
        let mut attempt = 1;
        loop {
            let mut tx = match self.begin().await {
                Ok(tx) => tx,
                Err(e) if e.is_retriable() && attempt < ATTEMPTS => {
                    pause(attempt).await;
                    attempt += 1;
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
            let result = f(&mut tx).await;
            let retriable = tx.retriable;
            let ended = match result {
                Ok(value) => match tx.commit().await {
                    Ok(()) => return Ok(value),
                    Err(e) => (e.is_retriable(), E::from(e)),
                },
                Err(e) => {
                    let _ = tx.rollback().await;
                    (retriable, e)
                }
            };
            match ended {
                (true, _) if attempt < ATTEMPTS => {
                    pause(attempt).await;
                    attempt += 1;
                }
                (_, e) => return Err(e),
            }
        }
    }
}
// ANCHOR_END: database

/// The pause before run `attempt + 1` of a transaction: stage 4's rule, on a timer instead of a thread.
async fn pause(attempt: u32) {
    tokio::time::sleep(RETRY_PAUSE * 2u32.pow(attempt - 1)).await;
}

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
        let r = self.conn.link().execute(st).await;
        self.note(&r);
        r
    }

    /// Runs a statement that returns rows; all of them.
    pub async fn fetch_values(&mut self, st: &Statement) -> Result<Vec<Vec<Value>>> {
        let r = self.conn.link().query(st).await;
        self.note(&r);
        r
    }

    /// Runs a statement and reads every row into `R`.
    pub async fn fetch<R: FromRow>(&mut self, st: &Statement) -> Result<Vec<R>> {
        self.fetch_values(st)
            .await?
            .into_iter()
            .map(R::from_row)
            .collect()
    }

    /// Commits.
    pub async fn commit(mut self) -> Result<()> {
        self.conn.link().batch("COMMIT").await?;
        self.conn.in_transaction = false;
        Ok(())
    }

    /// Rolls back, and says whether that worked (dropping the transaction rolls back too, in a task of
    /// its own that nobody awaits).
    pub async fn rollback(mut self) -> Result<()> {
        self.conn.link().batch("ROLLBACK").await?;
        self.conn.in_transaction = false;
        Ok(())
    }

    fn note<T>(&mut self, r: &Result<T>) {
        if r.as_ref().is_err_and(Error::is_retriable) {
            self.retriable = true;
        }
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
        self.rows.poll_recv(cx)
    }
}
// ANCHOR_END: stream

pub use blocking::{TransferError, accounts};

// ANCHOR: transfer
/// Stage 4's transfer, from async code: the same statements in key order, in a transaction that runs again
/// after a deadlock, after the same pause. Written with `begin` and `commit` rather than
/// [`Database::transaction`]: the future of an `AsyncFnMut` transaction cannot be proven `Send` on stable
/// Rust, and a transfer must be able to run in a spawned task.
pub async fn transfer(db: &Database, from: i64, to: i64, amount: i64) -> Result<(), TransferError> {
    let mut attempt = 1;
    loop {
        match transfer_once(db, from, to, amount).await {
            Err(TransferError::Db(e)) if e.is_retriable() && attempt < ATTEMPTS => {
                pause(attempt).await;
                attempt += 1;
            }
            done => return done,
        }
    }
}

/// One attempt: an `Err` drops the transaction, which rolls it back.
async fn transfer_once(
    db: &Database,
    from: i64,
    to: i64,
    amount: i64,
) -> Result<(), TransferError> {
    let mut tx = db.begin().await?;
    let d = tx.dialect();
    let debit = Update::table(accounts::table)
        .add(accounts::balance, -amount)
        .filter(accounts::id.eq(from).and(accounts::balance.ge(amount)))
        .render(d)?;
    let credit = Update::table(accounts::table)
        .add(accounts::balance, amount)
        .filter(accounts::id.eq(to))
        .render(d)?;
    let steps = if from < to {
        [(&debit, true), (&credit, false)]
    } else {
        [(&credit, false), (&debit, true)]
    };
    for (st, is_debit) in steps {
        if tx.execute(st).await?.rows_affected > 0 {
            continue;
        }
        if !is_debit {
            return Err(TransferError::NoAccount);
        }
        let exists = Select::from(accounts::table)
            .filter(accounts::id.eq(from))
            .render(d)?;
        return Err(if tx.fetch_values(&exists).await?.is_empty() {
            TransferError::NoAccount
        } else {
            TransferError::Insufficient
        });
    }
    tx.commit().await?;
    Ok(())
}
// ANCHOR_END: transfer
