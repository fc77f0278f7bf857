//! Stage 4 — a blocking executor and transactions: the reference solution.

use std::cell::{Cell, RefCell};
use std::fmt;
use std::ops::{Deref, DerefMut};
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use dialects::{Select, Statement, Update};
use expressions::ColumnExt;
use tables::{DecodeError, Dialect, SqlValue, Value, table};

use crate::drivers::{self, Conn};

// ANCHOR: error
/// What went wrong.
#[derive(Debug)]
pub enum Error {
    /// No connection could be opened (a bad URL, a server that does not answer).
    Connect(String),
    /// The statement could not be rendered.
    Render(dialects::Error),
    /// The database refused the statement.
    Db {
        /// What kind of failure, as far as the executor cares.
        kind: DbErrorKind,
        /// The driver's words.
        message: String,
    },
    /// A value is not of the type it was read as.
    Decode(DecodeError),
    /// A row has another number of columns than the type it is read into.
    Columns {
        /// Columns of the type.
        expected: usize,
        /// Columns of the row.
        found: usize,
    },
    /// Every connection stayed busy for the whole acquire timeout.
    PoolTimeout {
        /// How long the caller waited.
        waited: Duration,
        /// The pool's size.
        max: usize,
    },
}

/// The database failures an executor treats differently.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DbErrorKind {
    /// SQLite: another connection holds the write lock (and kept it past the busy timeout).
    Busy,
    /// Two transactions waited for each other; the server chose this one to fail.
    Deadlock,
    /// A serializable transaction could not be ordered with a concurrent one.
    Serialization,
    /// A unique key (or primary key) already holds the value.
    UniqueViolation,
    /// Anything else.
    Other,
}

impl Error {
    /// The database's kind of failure, if the database failed.
    pub fn kind(&self) -> Option<DbErrorKind> {
        match self {
            Error::Db { kind, .. } => Some(*kind),
            _ => None,
        }
    }

    /// Whether running the whole transaction again may succeed.
    pub fn is_retriable(&self) -> bool {
        matches!(
            self.kind(),
            Some(DbErrorKind::Busy | DbErrorKind::Deadlock | DbErrorKind::Serialization)
        )
    }

    fn db(kind: DbErrorKind, message: impl fmt::Display) -> Error {
        Error::Db {
            kind,
            message: message.to_string(),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Connect(e) => write!(f, "cannot connect: {e}"),
            Error::Render(e) => write!(f, "cannot render the statement: {e}"),
            Error::Db { kind, message } => write!(f, "the database refused ({kind:?}): {message}"),
            Error::Decode(e) => e.fmt(f),
            Error::Columns { expected, found } => {
                write!(f, "a row of {found} columns read as {expected}")
            }
            Error::PoolTimeout { waited, max } => {
                write!(f, "all {max} connections stayed busy for {waited:?}")
            }
        }
    }
}

impl std::error::Error for Error {}

impl From<dialects::Error> for Error {
    fn from(e: dialects::Error) -> Error {
        Error::Render(e)
    }
}

impl From<DecodeError> for Error {
    fn from(e: DecodeError) -> Error {
        Error::Decode(e)
    }
}

/// Results of this executor.
pub type Result<T, E = Error> = std::result::Result<T, E>;
// ANCHOR_END: error

// ANCHOR: classify
impl From<rusqlite::Error> for Error {
    fn from(e: rusqlite::Error) -> Error {
        use rusqlite::ErrorCode;
        let kind = match &e {
            rusqlite::Error::SqliteFailure(f, _) => match f.code {
                ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked => DbErrorKind::Busy,
                // SQLITE_CONSTRAINT_PRIMARYKEY (1555) and SQLITE_CONSTRAINT_UNIQUE (2067).
                ErrorCode::ConstraintViolation if matches!(f.extended_code, 1555 | 2067) => {
                    DbErrorKind::UniqueViolation
                }
                _ => DbErrorKind::Other,
            },
            _ => DbErrorKind::Other,
        };
        Error::db(kind, e)
    }
}

impl From<postgres::Error> for Error {
    fn from(e: postgres::Error) -> Error {
        use postgres::error::SqlState;
        let kind = match e.code() {
            Some(c) if *c == SqlState::T_R_DEADLOCK_DETECTED => DbErrorKind::Deadlock,
            Some(c) if *c == SqlState::T_R_SERIALIZATION_FAILURE => DbErrorKind::Serialization,
            Some(c) if *c == SqlState::UNIQUE_VIOLATION => DbErrorKind::UniqueViolation,
            _ => DbErrorKind::Other,
        };
        Error::db(kind, e)
    }
}

impl From<mysql::Error> for Error {
    fn from(e: mysql::Error) -> Error {
        let kind = match &e {
            mysql::Error::MySqlError(m) => match m.code {
                1213 => DbErrorKind::Deadlock,
                // Lock wait timeout exceeded: the other transaction held the row too long.
                1205 => DbErrorKind::Busy,
                1062 => DbErrorKind::UniqueViolation,
                _ => DbErrorKind::Other,
            },
            _ => DbErrorKind::Other,
        };
        Error::db(kind, e)
    }
}
// ANCHOR_END: classify

// ANCHOR: conn
/// What a statement that returns no rows did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// The rows it inserted, changed or deleted.
    pub rows_affected: u64,
    /// The key the connection generated last (SQLite and MySQL report one; PostgreSQL does not). Both
    /// report 0 for "none" — SQLite before the connection's first insert, MySQL for a statement that
    /// generated no key (an UPDATE, an INSERT IGNORE that inserted nothing) — and 0 is never a generated
    /// key: that is `None`. SQLite's is the connection's last INSERT's, whatever ran since (an UPDATE
    /// after an INSERT reports the INSERT's key): read it after an INSERT only.
    pub last_insert_id: Option<i64>,
}

impl Conn {
    /// Runs a statement that returns no rows.
    pub fn execute(&mut self, st: &Statement) -> Result<Outcome> {
        match self {
            Conn::Sqlite(c) => {
                let n = c
                    .prepare_cached(&st.sql)?
                    .execute(rusqlite::params_from_iter(drivers::sqlite_params(
                        &st.params,
                    )))?;
                Ok(Outcome {
                    rows_affected: n as u64,
                    // 0: no row was ever inserted on this connection.
                    last_insert_id: Some(c.last_insert_rowid()).filter(|&id| id != 0),
                })
            }
            Conn::Postgres(c) => {
                let params: Vec<drivers::PgParam<'_>> =
                    st.params.iter().map(drivers::PgParam).collect();
                let refs: Vec<&(dyn postgres::types::ToSql + Sync)> = params
                    .iter()
                    .map(|p| p as &(dyn postgres::types::ToSql + Sync))
                    .collect();
                let prepared = c.prepared(&st.sql)?;
                let n = c.execute(&prepared, &refs)?;
                Ok(Outcome {
                    rows_affected: n,
                    last_insert_id: None,
                })
            }
            Conn::MySql(c) => {
                use mysql::prelude::Queryable;
                c.exec_drop(&st.sql, drivers::mysql_params(&st.params))?;
                Ok(Outcome {
                    rows_affected: c.affected_rows(),
                    // 0: this statement generated no key.
                    last_insert_id: i64::try_from(c.last_insert_id()).ok().filter(|&id| id != 0),
                })
            }
        }
    }

    /// Runs a statement that returns rows; every row's values, in column order.
    pub fn query(&mut self, st: &Statement) -> Result<Vec<Vec<Value>>> {
        match self {
            Conn::Sqlite(c) => {
                let mut stmt = c.prepare_cached(&st.sql)?;
                let width = stmt.column_count();
                let mut rows = stmt.query(rusqlite::params_from_iter(drivers::sqlite_params(
                    &st.params,
                )))?;
                let mut out = Vec::new();
                while let Some(row) = rows.next()? {
                    let mut values = Vec::with_capacity(width);
                    for i in 0..width {
                        values.push(drivers::sqlite_value(row.get_ref(i)?)?);
                    }
                    out.push(values);
                }
                Ok(out)
            }
            Conn::Postgres(c) => {
                let params: Vec<drivers::PgParam<'_>> =
                    st.params.iter().map(drivers::PgParam).collect();
                let refs: Vec<&(dyn postgres::types::ToSql + Sync)> = params
                    .iter()
                    .map(|p| p as &(dyn postgres::types::ToSql + Sync))
                    .collect();
                let prepared = c.prepared(&st.sql)?;
                let rows = c.query(&prepared, &refs)?;
                rows.iter()
                    .map(|row| {
                        (0..row.len())
                            .map(|i| drivers::pg_value(row, i).map_err(Error::from))
                            .collect()
                    })
                    .collect()
            }
            Conn::MySql(c) => {
                use mysql::prelude::Queryable;
                let rows: Vec<mysql::Row> = c.exec(&st.sql, drivers::mysql_params(&st.params))?;
                rows.into_iter()
                    .map(|row| {
                        row.unwrap()
                            .into_iter()
                            .map(|v| drivers::mysql_value(v).map_err(Error::from))
                            .collect()
                    })
                    .collect()
            }
        }
    }

    /// Runs SQL without parameters or rows: `BEGIN`, `COMMIT`, `SAVEPOINT sp1`, …
    pub fn batch(&mut self, sql: &str) -> Result<()> {
        match self {
            Conn::Sqlite(c) => Ok(c.execute_batch(sql)?),
            Conn::Postgres(c) => Ok(c.batch_execute(sql)?),
            Conn::MySql(c) => {
                use mysql::prelude::Queryable;
                Ok(c.query_drop(sql)?)
            }
        }
    }
}
// ANCHOR_END: conn

// ANCHOR: from_row
/// A type a row can be read into.
pub trait FromRow: Sized {
    /// Reads one row (its values in column order).
    fn from_row(row: Vec<Value>) -> Result<Self>;
}

/// `FromRow` for a tuple of column types: `(i64, String)` reads a two-column row.
macro_rules! tuple_from_row {
    ($($t:ident),+) => {
        impl<$($t: SqlValue),+> FromRow for ($($t,)+) {
            fn from_row(row: Vec<Value>) -> Result<Self> {
                let expected = [$(stringify!($t)),+].len();
                if row.len() != expected {
                    return Err(Error::Columns { expected, found: row.len() });
                }
                let mut values = row.into_iter();
                Ok(($($t::from_value(values.next().unwrap_or(Value::Null))?,)+))
            }
        }
    };
}

tuple_from_row!(A);
tuple_from_row!(A, B);
tuple_from_row!(A, B, C);
tuple_from_row!(A, B, C, D);
tuple_from_row!(A, B, C, D, E);
tuple_from_row!(A, B, C, D, E, F);
tuple_from_row!(A, B, C, D, E, F, G);
tuple_from_row!(A, B, C, D, E, F, G, H);
// ANCHOR_END: from_row

// ANCHOR: pool
/// A bounded pool: at most `max` connections open, idle ones reused, callers waiting at most `timeout`
/// for one to come back.
#[derive(Clone)]
pub struct Pool {
    shared: Arc<Shared>,
}

struct Shared {
    url: String,
    max: usize,
    timeout: Duration,
    state: Mutex<State>,
    /// Signalled whenever a connection comes back or a slot frees up.
    freed: Condvar,
}

struct State {
    idle: Vec<Conn>,
    /// Connections open: idle, lent out, or being opened.
    open: usize,
}

/// How many connections a pool has, now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoolStatus {
    /// Open: idle or in use.
    pub open: usize,
    /// Open and waiting to be used.
    pub idle: usize,
}

impl Pool {
    /// A pool of at most `max` connections to `url`; none is opened until asked for.
    pub fn new(url: &str, max: usize, timeout: Duration) -> Pool {
        Pool {
            shared: Arc::new(Shared {
                url: url.to_owned(),
                max: max.max(1),
                timeout,
                state: Mutex::new(State {
                    idle: Vec::new(),
                    open: 0,
                }),
                freed: Condvar::new(),
            }),
        }
    }

    /// A connection: an idle one, a new one while fewer than `max` are open, or the first to come back
    /// within the timeout — else `Error::PoolTimeout`.
    pub fn get(&self) -> Result<Pooled> {
        let shared = &self.shared;
        let deadline = Instant::now() + shared.timeout;
        let mut state = shared.lock();
        loop {
            if let Some(conn) = state.idle.pop() {
                return Ok(self.lend(conn));
            }
            if state.open < shared.max {
                state.open += 1;
                // Connecting takes a round trip or more: not while holding the lock.
                drop(state);
                return match drivers::connect(&shared.url) {
                    Ok(conn) => Ok(self.lend(conn)),
                    Err(e) => {
                        shared.lock().open -= 1;
                        shared.freed.notify_one();
                        Err(Error::Connect(e))
                    }
                };
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(Error::PoolTimeout {
                    waited: shared.timeout,
                    max: shared.max,
                });
            }
            // Woken when a connection comes back — or spuriously, or at the deadline: the loop looks again.
            state = shared
                .freed
                .wait_timeout(state, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// How many connections are open and idle.
    pub fn status(&self) -> PoolStatus {
        let state = self.shared.lock();
        PoolStatus {
            open: state.open,
            idle: state.idle.len(),
        }
    }

    fn lend(&self, conn: Conn) -> Pooled {
        Pooled {
            conn: Some(conn),
            shared: self.shared.clone(),
            broken: false,
        }
    }
}

impl Shared {
    /// The state, even after a panic elsewhere poisoned the lock: every change to it is one statement, so
    /// it is never half-done.
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A connection lent by the pool; it goes back when dropped (or is closed, if marked broken).
pub struct Pooled {
    conn: Option<Conn>,
    shared: Arc<Shared>,
    broken: bool,
}

impl Pooled {
    /// Closes the connection instead of reusing it: it is in a state nobody else should inherit.
    pub fn mark_broken(&mut self) {
        self.broken = true;
    }
}

impl Deref for Pooled {
    type Target = Conn;
    fn deref(&self) -> &Conn {
        self.conn
            .as_ref()
            .expect("a lent connection until it is dropped")
    }
}

impl DerefMut for Pooled {
    fn deref_mut(&mut self) -> &mut Conn {
        self.conn
            .as_mut()
            .expect("a lent connection until it is dropped")
    }
}

impl Drop for Pooled {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take() {
            let mut state = self.shared.lock();
            if self.broken {
                state.open -= 1;
                drop(conn);
            } else {
                state.idle.push(conn);
            }
            drop(state);
            self.shared.freed.notify_one();
        }
    }
}
// ANCHOR_END: pool

// ANCHOR: executor
/// Runs statements: a [`Database`] (each call on a connection of its own) and a [`Transaction`] (every call
/// on the transaction's connection) alike, so that one function can run inside a transaction or not.
pub trait Executor {
    /// The engine.
    fn dialect(&self) -> Dialect;
    /// Runs a statement that returns no rows.
    fn execute(&self, st: &Statement) -> Result<Outcome>;
    /// Runs a statement that returns rows.
    fn fetch_values(&self, st: &Statement) -> Result<Vec<Vec<Value>>>;
    /// Runs a statement and reads each row into `R`.
    fn fetch<R: FromRow>(&self, st: &Statement) -> Result<Vec<R>> {
        self.fetch_values(st)?
            .into_iter()
            .map(R::from_row)
            .collect()
    }
    /// The first row, if there is one.
    fn fetch_optional<R: FromRow>(&self, st: &Statement) -> Result<Option<R>> {
        Ok(self.fetch(st)?.into_iter().next())
    }
}
// ANCHOR_END: executor

// ANCHOR: database
/// How many times a transaction runs before a retriable error is given up on.
pub const ATTEMPTS: u32 = 3;

/// The pause before a transaction's second run, doubled before each further one. Without it the
/// transaction that lost a deadlock runs again at once, retakes its first row before the winner has
/// finished, and the two deadlock again, every time.
pub const RETRY_PAUSE: Duration = Duration::from_millis(10);

/// A database: a pool of connections to one URL.
#[derive(Clone)]
pub struct Database {
    pool: Pool,
    dialect: Dialect,
}

impl Database {
    /// Opens a database of at most `max_connections` connections; one is opened now, so that a bad URL or
    /// a server that does not answer is an error here. Callers wait at most 5 s for a connection.
    pub fn open(url: &str, max_connections: usize) -> Result<Database> {
        Database::open_with(url, max_connections, Duration::from_secs(5))
    }

    /// [`Database::open`] with another acquire timeout.
    pub fn open_with(url: &str, max_connections: usize, timeout: Duration) -> Result<Database> {
        let dialect = drivers::dialect_of(url).map_err(Error::Connect)?;
        let pool = Pool::new(url, max_connections, timeout);
        drop(pool.get()?);
        Ok(Database { pool, dialect })
    }

    /// The pool, for its status.
    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    /// Runs `f` in a transaction on one connection: `Ok` commits, `Err` rolls back, a panic rolls back and
    /// goes on unwinding. When a statement in it failed with a retriable error (busy, deadlock,
    /// serialization), the whole of `f` runs again on a fresh transaction, up to [`ATTEMPTS`] times, after
    /// a pause of [`RETRY_PAUSE`] (doubled before each further run) — so `f` must do nothing outside the
    /// database that it cannot do twice.
    pub fn transaction<R, E: From<Error>>(
        &self,
        mut f: impl FnMut(&Transaction<'_>) -> Result<R, E>,
    ) -> Result<R, E> {
        let mut attempt = 1;
        loop {
            match self.attempt(&mut f) {
                (Err(_), true) if attempt < ATTEMPTS => {
                    // Let the transaction that won finish before this one takes its locks again.
                    std::thread::sleep(RETRY_PAUSE * 2u32.pow(attempt - 1));
                    attempt += 1;
                }
                (result, _) => return result,
            }
        }
    }

    /// One run of a transaction, and whether a failure is worth another run.
    fn attempt<R, E: From<Error>>(
        &self,
        f: &mut impl FnMut(&Transaction<'_>) -> Result<R, E>,
    ) -> (Result<R, E>, bool) {
        let mut conn = match self.pool.get() {
            Ok(c) => c,
            Err(e) => return (Err(e.into()), false),
        };
        // SQLite: take the write lock now. A transaction that reads first and writes later would find the
        // lock taken by another, and SQLite cannot wait for it then (it would deadlock): it answers busy.
        let begin = match self.dialect {
            Dialect::Sqlite => "BEGIN IMMEDIATE",
            Dialect::Postgres | Dialect::MySql => "BEGIN",
        };
        if let Err(e) = conn.batch(begin) {
            let retry = e.is_retriable();
            return (Err(e.into()), retry);
        }
        let cell = RefCell::new(conn);
        let tx = Transaction {
            conn: &cell,
            dialect: self.dialect,
            depth: 0,
            retriable: Cell::new(false),
        };
        let result = catch_unwind(AssertUnwindSafe(|| f(&tx)));
        let retriable = tx.retriable.get();
        let mut conn = cell.into_inner();
        match result {
            Ok(Ok(value)) => match conn.batch("COMMIT") {
                Ok(()) => (Ok(value), false),
                Err(e) => {
                    let retry = e.is_retriable();
                    rollback(&mut conn);
                    (Err(e.into()), retry)
                }
            },
            Ok(Err(e)) => {
                rollback(&mut conn);
                (Err(e), retriable)
            }
            Err(panic) => {
                rollback(&mut conn);
                drop(conn);
                resume_unwind(panic)
            }
        }
    }
}

/// Rolls back; a connection that cannot is closed rather than lent out in the middle of a transaction.
fn rollback(conn: &mut Pooled) {
    if conn.batch("ROLLBACK").is_err() {
        conn.mark_broken();
    }
}

impl Executor for Database {
    fn dialect(&self) -> Dialect {
        self.dialect
    }

    fn execute(&self, st: &Statement) -> Result<Outcome> {
        self.pool.get()?.execute(st)
    }

    fn fetch_values(&self, st: &Statement) -> Result<Vec<Vec<Value>>> {
        self.pool.get()?.query(st)
    }
}
// ANCHOR_END: database

// ANCHOR: transaction
/// A transaction: every statement on its one connection, until it commits or rolls back.
pub struct Transaction<'c> {
    conn: &'c RefCell<Pooled>,
    dialect: Dialect,
    depth: usize,
    /// Whether a statement failed with a retriable error: the closure's own error type may hide it.
    retriable: Cell<bool>,
}

impl Transaction<'_> {
    /// Runs `f` in a savepoint: `Ok` releases it, `Err` (or a panic) rolls back to it — undoing only what
    /// `f` did — and the enclosing transaction goes on.
    pub fn transaction<R, E: From<Error>>(
        &self,
        f: impl FnOnce(&Transaction<'_>) -> Result<R, E>,
    ) -> Result<R, E> {
        let name = format!("sp{}", self.depth + 1);
        self.batch(&format!("SAVEPOINT {name}"))?;
        let inner = Transaction {
            conn: self.conn,
            dialect: self.dialect,
            depth: self.depth + 1,
            retriable: Cell::new(false),
        };
        let result = catch_unwind(AssertUnwindSafe(|| f(&inner)));
        if inner.retriable.get() {
            self.retriable.set(true);
        }
        match result {
            Ok(Ok(value)) => {
                self.batch(&format!("RELEASE SAVEPOINT {name}"))?;
                Ok(value)
            }
            Ok(Err(e)) => {
                self.batch(&format!("ROLLBACK TO SAVEPOINT {name}"))?;
                self.batch(&format!("RELEASE SAVEPOINT {name}"))?;
                Err(e)
            }
            Err(panic) => {
                let _ = self.batch(&format!("ROLLBACK TO SAVEPOINT {name}"));
                resume_unwind(panic)
            }
        }
    }

    fn batch(&self, sql: &str) -> Result<()> {
        let r = self.conn.borrow_mut().batch(sql);
        self.note(&r);
        r
    }

    fn note<T>(&self, r: &Result<T>) {
        if r.as_ref().is_err_and(Error::is_retriable) {
            self.retriable.set(true);
        }
    }
}

impl Executor for Transaction<'_> {
    fn dialect(&self) -> Dialect {
        self.dialect
    }

    fn execute(&self, st: &Statement) -> Result<Outcome> {
        let r = self.conn.borrow_mut().execute(st);
        self.note(&r);
        r
    }

    fn fetch_values(&self, st: &Statement) -> Result<Vec<Vec<Value>>> {
        let r = self.conn.borrow_mut().query(st);
        self.note(&r);
        r
    }
}
// ANCHOR_END: transaction

table! {
    /// Bank accounts (given).
    accounts (id) {
        id: i64,
        owner: String,
        balance: i64,
    }
}

/// Why a transfer did not happen (given).
#[derive(Debug)]
pub enum TransferError {
    /// `from` holds less than the amount.
    Insufficient,
    /// `from` or `to` does not exist.
    NoAccount,
    /// The database failed.
    Db(Error),
}

impl From<Error> for TransferError {
    fn from(e: Error) -> TransferError {
        TransferError::Db(e)
    }
}

impl From<dialects::Error> for TransferError {
    fn from(e: dialects::Error) -> TransferError {
        TransferError::Db(Error::Render(e))
    }
}

// ANCHOR: transfer
/// Moves `amount` from account `from` to account `to`, in one transaction: both balances change, or
/// neither does. An overdraft is `Insufficient`, a missing account `NoAccount`; eight threads at once stay
/// right, because the balance is checked and changed by one statement that locks the row. The two rows
/// are changed in key order, so that two transfers between the same accounts never wait for each other
/// in a circle (a deadlock, which PostgreSQL only notices after a second).
pub fn transfer(db: &Database, from: i64, to: i64, amount: i64) -> Result<(), TransferError> {
    db.transaction(|tx| {
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
            if tx.execute(st)?.rows_affected > 0 {
                continue;
            }
            if !is_debit {
                return Err(TransferError::NoAccount);
            }
            let exists = Select::from(accounts::table)
                .filter(accounts::id.eq(from))
                .render(d)?;
            return Err(if tx.fetch_values(&exists)?.is_empty() {
                TransferError::NoAccount
            } else {
                TransferError::Insufficient
            });
        }
        Ok(())
    })
}
// ANCHOR_END: transfer
