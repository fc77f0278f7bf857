//! Stage 4 — a blocking executor and transactions. Your code. Read `book/src/04-blocking.md`, then make
//! `just check 04` pass. The order that works: the error classification and `Conn`'s three methods (SQLite
//! first), the tuple `FromRow`s, the pool, `Database` and its `Executor`, transactions, savepoints and
//! retries, and last the transfer that uses all of it.
// When you are done, delete this comment and the `#![allow(…)]` under it: they keep the compiler quiet
// while the bodies are `todo!()`s (unused parameters, imports, helpers); then its warnings are worth reading.
#![allow(
    unused_variables,
    unused_imports,
    unused_mut,
    dead_code,
    unreachable_code
)]

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
        todo!("classify a SQLite error")
    }
}

impl From<postgres::Error> for Error {
    fn from(e: postgres::Error) -> Error {
        todo!("classify a PostgreSQL error")
    }
}

impl From<mysql::Error> for Error {
    fn from(e: mysql::Error) -> Error {
        todo!("classify a MySQL error")
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
        todo!("run a statement on each driver")
    }

    /// Runs a statement that returns rows; every row's values, in column order.
    pub fn query(&mut self, st: &Statement) -> Result<Vec<Vec<Value>>> {
        todo!("run a query on each driver")
    }

    /// Runs SQL without parameters or rows: `BEGIN`, `COMMIT`, `SAVEPOINT sp1`, …
    pub fn batch(&mut self, sql: &str) -> Result<()> {
        todo!("run BEGIN, COMMIT, … on each driver")
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
                // TODO: a row of another width than the tuple is `Error::Columns`; each value becomes its
                // element through `SqlValue::from_value`. (`[$(stringify!($t)),+].len()` counts them.)
                todo!("read a row into a tuple")
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
    // TODO: what the pool's clones and the connections it lends share (an `Arc` of it): the URL, the
    // size, the timeout, the idle connections and the count of open ones behind a `Mutex`, and a `Condvar`
    // to wake a waiting caller when a connection comes back.
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
        todo!("a new pool")
    }

    /// A connection: an idle one, a new one while fewer than `max` are open, or the first to come back
    /// within the timeout — else `Error::PoolTimeout`.
    pub fn get(&self) -> Result<Pooled> {
        todo!("lend a connection")
    }

    /// How many connections are open and idle.
    pub fn status(&self) -> PoolStatus {
        todo!("the pool's status")
    }
}

/// A connection lent by the pool; it goes back when dropped (or is closed, if marked broken).
pub struct Pooled {
    // TODO: the connection (an `Option`, so that `drop` can take it out), what it goes back to, and
    // whether it is broken.
}

impl Pooled {
    /// Closes the connection instead of reusing it: it is in a state nobody else should inherit.
    pub fn mark_broken(&mut self) {
        todo!("mark the connection broken")
    }
}

impl Deref for Pooled {
    type Target = Conn;
    fn deref(&self) -> &Conn {
        todo!("the lent connection")
    }
}

impl DerefMut for Pooled {
    fn deref_mut(&mut self) -> &mut Conn {
        todo!("the lent connection")
    }
}

impl Drop for Pooled {
    fn drop(&mut self) {
        todo!("give the connection back")
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
        todo!("read every row into R")
    }
    /// The first row, if there is one.
    fn fetch_optional<R: FromRow>(&self, st: &Statement) -> Result<Option<R>> {
        todo!("read the first row into R")
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
    // TODO: the pool and the engine.
}

impl Database {
    /// Opens a database of at most `max_connections` connections; one is opened now, so that a bad URL or
    /// a server that does not answer is an error here. Callers wait at most 5 s for a connection.
    pub fn open(url: &str, max_connections: usize) -> Result<Database> {
        Database::open_with(url, max_connections, Duration::from_secs(5))
    }

    /// [`Database::open`] with another acquire timeout.
    pub fn open_with(url: &str, max_connections: usize, timeout: Duration) -> Result<Database> {
        todo!("open a database")
    }

    /// The pool, for its status.
    pub fn pool(&self) -> &Pool {
        todo!("the pool")
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
        todo!("run a transaction, with retries")
    }
}

/// Rolls back; a connection that cannot is closed rather than lent out in the middle of a transaction.
fn rollback(conn: &mut Pooled) {
    todo!("roll back, or mark the connection broken")
}

impl Executor for Database {
    fn dialect(&self) -> Dialect {
        todo!("the engine")
    }

    fn execute(&self, st: &Statement) -> Result<Outcome> {
        todo!("run on a connection of the pool")
    }

    fn fetch_values(&self, st: &Statement) -> Result<Vec<Vec<Value>>> {
        todo!("query on a connection of the pool")
    }
}
// ANCHOR_END: database

// ANCHOR: transaction
/// A transaction: every statement on its one connection, until it commits or rolls back.
pub struct Transaction<'c> {
    // TODO: the connection, shared with nested savepoints (a `&'c RefCell<Pooled>`), the engine, how deep
    // in savepoints this is, and whether a statement failed with a retriable error (a `Cell<bool>`: the
    // closure's own error type may hide it).
    conn: std::marker::PhantomData<&'c ()>,
}

impl Transaction<'_> {
    /// Runs `f` in a savepoint: `Ok` releases it, `Err` (or a panic) rolls back to it — undoing only what
    /// `f` did — and the enclosing transaction goes on.
    pub fn transaction<R, E: From<Error>>(
        &self,
        f: impl FnOnce(&Transaction<'_>) -> Result<R, E>,
    ) -> Result<R, E> {
        todo!("run f in a savepoint")
    }
}

impl Executor for Transaction<'_> {
    fn dialect(&self) -> Dialect {
        todo!("the engine")
    }

    fn execute(&self, st: &Statement) -> Result<Outcome> {
        todo!("run on the transaction's connection")
    }

    fn fetch_values(&self, st: &Statement) -> Result<Vec<Vec<Value>>> {
        todo!("query on the transaction's connection")
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
    todo!("move the money")
}
// ANCHOR_END: transfer
