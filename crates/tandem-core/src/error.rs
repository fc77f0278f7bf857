//! The executors' one error type, shared so that both sides fail the same way: a unique violation is
//! [`DbErrorKind::UniqueViolation`] whether it came from rusqlite, postgres, mysql or sqlx.
//!
//! Each engine reports errors in its own codes; the `classify_*` functions map them once, here.

use std::time::Duration;

use tandem_sql::Dialect;

/// `Result` with [`Error`] as the default error.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong in an executor.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Building, rendering or decoding a statement (from `tandem-sql`).
    #[error(transparent)]
    Sql(#[from] tandem_sql::Error),
    /// The database refused a statement or the connection failed.
    #[error(transparent)]
    Database(#[from] DbError),
    /// A plan's guard ([`crate::Step::Guard`]) matched no row: what it checks no longer holds, and the
    /// transaction was rolled back instead of committed.
    #[error("{what} no longer holds: the transaction was rolled back")]
    Fenced {
        /// What the guard checks (a batch run's lease, say).
        what: String,
    },
    /// No connection became free within the acquire timeout.
    #[error("no connection within {waited:?} (pool of {max_size})")]
    PoolTimeout {
        /// How long the acquire waited.
        waited: Duration,
        /// The pool's maximum size.
        max_size: u32,
    },
    /// The pool's queue of waiting acquires was full: refused at once, without waiting.
    #[error("pool saturated: {pending} acquires already waiting for {max_size} connections")]
    PoolSaturated {
        /// Acquires waiting when this one came.
        pending: u32,
        /// The pool's maximum size.
        max_size: u32,
    },
    /// A connection was not established within the connect timeout: the server did not complete the
    /// handshake (it accepted the TCP connection but never answered, or it speaks another protocol).
    #[error("no connection to {target} within {timeout:?} (connect timeout)")]
    ConnectTimeout {
        /// `host:port`.
        target: String,
        /// The connect timeout that passed.
        timeout: Duration,
    },
    /// TLS could not be set up as the URL asks. A mode that requires TLS never falls back to plain TCP:
    /// this error comes instead.
    #[error("TLS with {target}: {kind}: {message}")]
    Tls {
        /// `host:port`.
        target: String,
        /// What failed.
        kind: TlsErrorKind,
        /// The driver's or TLS library's own words.
        message: String,
        /// The TLS library's or driver's error, when there is one.
        #[source]
        source: Option<DriverError>,
    },
    /// Warm-up did not open `min_idle` connections within the connect timeout.
    #[error("pool warm-up opened {opened} of {wanted} connections within {waited:?}{}", last_error.as_ref().map(|e| format!(": {e}")).unwrap_or_default())]
    PoolWarmUp {
        /// Connections open when the timeout passed.
        opened: u32,
        /// Connections asked for (`min_idle`).
        wanted: u32,
        /// How long warm-up waited.
        waited: Duration,
        /// The last connect failure, if one was seen; also the error's [`source`](std::error::Error::source).
        #[source]
        last_error: Option<Box<Error>>,
    },
    /// `get` by key found no row.
    #[error("no row in {table:?} with key {key}")]
    NotFound {
        /// The table.
        table: String,
        /// The key, as text.
        key: String,
    },
    /// `fetch_one` got no row.
    #[error("the query returned no row")]
    RowNotFound,
    /// A connection URL that cannot be used.
    #[error("invalid database URL {url:?}: {reason}")]
    InvalidUrl {
        /// The URL, password removed.
        url: String,
        /// What is wrong.
        reason: String,
    },
    /// The closure of a transaction panicked; the transaction was rolled back.
    #[error("the transaction's closure panicked: {message}")]
    Panicked {
        /// The panic message, when it was a string.
        message: String,
    },
    /// A value kind this driver cannot bind, or a column type it cannot decode.
    #[error("{dialect}: {what} is not supported by this executor")]
    Unsupported {
        /// The engine.
        dialect: Dialect,
        /// What was asked for (`"uuid values"`, `"the column type INTERVAL"`).
        what: String,
    },
    /// A cell that could not be read as the value its column declares.
    #[error("{dialect}: decoding a {column_type} column: {message}")]
    Decode {
        /// The engine.
        dialect: Dialect,
        /// The column's type, as the driver names it.
        column_type: String,
        /// What went wrong.
        message: String,
        /// The driver's error, when there is one.
        #[source]
        source: Option<DriverError>,
    },
    /// The call was given up before it finished (its future was dropped, or the connection's worker
    /// stopped); what it did may or may not have taken effect.
    #[error("the call was cancelled: {0}")]
    Cancelled(String),
    /// An internal invariant did not hold: a bug in tandem, please report it.
    #[error("internal error: {0}")]
    Internal(String),
    /// A statement was started on a connection or transaction while another call on it was still running
    /// (a repository call made from inside a row callback of the same connection, say).
    #[error("the {0} is busy with another statement")]
    InUse(Holder),
    /// A statement was started on a connection or transaction whose connection a stream opened on it still
    /// holds: finish reading the stream, or drop it, first.
    #[error("a stream opened on this {0} is still being read: finish or drop it first")]
    StreamOpen(Holder),
    /// The transaction's connection is gone: a stream that held it was dropped where it could not give it
    /// back, or the transaction already ended.
    #[error("the transaction has no connection any more")]
    NoConnection,
    /// `with_standby` was given a server of another engine, or called on a SQLite database.
    #[error(
        "a standby for a {dialect} database must be another server of the same engine, not {standby}"
    )]
    StandbyEngine {
        /// The primary's engine.
        dialect: Dialect,
        /// The standby's URL, password removed.
        standby: String,
    },
    /// `with_standby` was called on a database that has one already.
    #[error("this database already has a standby")]
    StandbyAlreadySet,
    /// A thread tandem needs (a stream's producer, a SQLite worker, a job's lease keeper) could not be started.
    #[error("cannot start {what}")]
    Thread {
        /// The thread's job.
        what: &'static str,
        /// The operating system's refusal.
        #[source]
        source: std::io::Error,
    },
    /// COMMIT failed, and so did the ROLLBACK run after it to end the transaction (a connection that may
    /// still be inside it is not pooled). The COMMIT's error decides what the failure is ([`Error::kind`],
    /// [`Error::is_retriable`]).
    #[error("COMMIT failed ({commit}), and the ROLLBACK after it failed too ({rollback})")]
    RollbackAfterCommit {
        /// Why COMMIT failed; also the error's [`source`](std::error::Error::source).
        #[source]
        commit: Box<Error>,
        /// Why the ROLLBACK after it failed.
        rollback: Box<Error>,
    },
    /// A misuse the executor detects (a statement that needs rows used where none come back, …).
    #[error("{0}")]
    Usage(String),
}

/// What a connection is held by, in [`Error::InUse`] and [`Error::StreamOpen`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Holder {
    /// A connection checked out by hand (`checkout`).
    Connection,
    /// A transaction.
    Transaction,
}

impl std::fmt::Display for Holder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Holder::Connection => "connection",
            Holder::Transaction => "transaction",
        })
    }
}

/// Why TLS could not be set up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TlsErrorKind {
    /// The server does not offer TLS, and the URL requires it.
    #[error("the server does not offer TLS")]
    NotOffered,
    /// The server's certificate does not chain to a trusted root (`verify-ca`, `verify-full`).
    #[error("the server's certificate is not trusted")]
    UntrustedCertificate,
    /// The server's certificate is trusted but not for the host connected to (`verify-full`).
    #[error("the server's certificate is for another host")]
    HostMismatch,
    /// The root certificate file (`sslrootcert=`, `ssl-ca=`) cannot be read or holds no certificate.
    #[error("the root certificate file cannot be used")]
    RootCertificate,
    /// Any other failure of the TLS handshake.
    #[error("the TLS handshake failed")]
    Handshake,
}

impl Error {
    /// [`Error::Tls`] for a connection to `options`' server.
    pub fn tls(
        options: &crate::ConnectOptions,
        kind: TlsErrorKind,
        message: impl Into<String>,
    ) -> Error {
        Error::Tls {
            target: options.target(),
            kind,
            message: message.into(),
            source: None,
        }
    }

    /// [`Error::Tls`] caused by `source` (its words are the message; the error itself is the source).
    pub fn tls_caused(
        options: &crate::ConnectOptions,
        kind: TlsErrorKind,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Error {
        Error::Tls {
            target: options.target(),
            kind,
            message: source.to_string(),
            source: Some(std::sync::Arc::new(source)),
        }
    }

    /// [`Error::Decode`] of a `column_type` cell on `dialect`, caused by the driver's `source`.
    pub fn decode(
        dialect: Dialect,
        column_type: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Error {
        Error::Decode {
            dialect,
            column_type: column_type.into(),
            message: source.to_string(),
            source: Some(std::sync::Arc::new(source)),
        }
    }
}

impl Error {
    /// [`Error::ConnectTimeout`] for a connection to `options`' host and port.
    pub fn connect_timeout(options: &crate::ConnectOptions, timeout: Duration) -> Error {
        Error::ConnectTimeout {
            target: options.target(),
            timeout,
        }
    }

    /// [`Error::Unsupported`] for a URL whose engine the executor `krate` was built without (its engine
    /// features: `sqlite`, `postgres`, `mysql`).
    pub fn engine_left_out(dialect: Dialect, krate: &str) -> Error {
        Error::Unsupported {
            dialect,
            what: format!(
                "this engine ({krate} was built without its `{}` feature)",
                dialect.name()
            ),
        }
    }

    /// The variant in snake case (`pool_timeout`, `decode`, `fenced`, …), for errors that are not the
    /// database's (those have [`DbErrorKind::name`]).
    pub fn variant_name(&self) -> &'static str {
        match self {
            Error::Sql(_) => "sql",
            Error::Database(_) => "database",
            Error::Fenced { .. } => "fenced",
            Error::PoolTimeout { .. } => "pool_timeout",
            Error::PoolSaturated { .. } => "pool_saturated",
            Error::ConnectTimeout { .. } => "connect_timeout",
            Error::Tls { .. } => "tls",
            Error::PoolWarmUp { .. } => "pool_warm_up",
            Error::NotFound { .. } => "not_found",
            Error::RowNotFound => "row_not_found",
            Error::InvalidUrl { .. } => "invalid_url",
            Error::Panicked { .. } => "panicked",
            Error::Unsupported { .. } => "unsupported",
            Error::Decode { .. } => "decode",
            Error::Cancelled(_) => "cancelled",
            Error::Internal(_) => "internal",
            Error::InUse(_) => "in_use",
            Error::StreamOpen(_) => "stream_open",
            Error::NoConnection => "no_connection",
            Error::StandbyEngine { .. } => "standby_engine",
            Error::StandbyAlreadySet => "standby_already_set",
            Error::Thread { .. } => "thread",
            Error::RollbackAfterCommit { .. } => "rollback_after_commit",
            Error::Usage(_) => "usage",
        }
    }

    /// The database error kind, if this is a database error.
    pub fn kind(&self) -> Option<DbErrorKind> {
        match self {
            Error::Database(e) => Some(e.kind),
            Error::RollbackAfterCommit { commit, .. } => commit.kind(),
            _ => None,
        }
    }

    /// The error of a transaction whose COMMIT failed with `commit`, given how the ROLLBACK run after it to
    /// end the transaction went: the COMMIT's error, or [`Error::RollbackAfterCommit`] keeping both.
    pub fn commit_failed(commit: Error, rollback: Result<()>) -> Error {
        match rollback {
            Ok(()) => commit,
            Err(rollback) => Error::RollbackAfterCommit {
                commit: Box::new(commit),
                rollback: Box::new(rollback),
            },
        }
    }

    /// Whether rerunning the whole transaction may succeed (serialization failure, deadlock, lock timeout,
    /// SQLite busy).
    pub fn is_retriable(&self) -> bool {
        self.kind().is_some_and(DbErrorKind::is_retriable)
    }

    /// Whether the server could not be reached or cannot serve (a lost or refused connection, a connect
    /// timeout, a pool that could not get a connection, a cluster node out of its cluster): another server
    /// may do what this one could not.
    pub fn is_unreachable(&self) -> bool {
        matches!(
            self.kind(),
            Some(
                DbErrorKind::ConnectionLost | DbErrorKind::NoAnswer | DbErrorKind::NodeUnavailable
            )
        ) || matches!(
            self,
            Error::ConnectTimeout { .. } | Error::PoolTimeout { .. } | Error::PoolWarmUp { .. }
        )
    }
}

/// The driver's own error behind a [`DbError`], shared so that `DbError` stays `Clone`.
pub type DriverError = std::sync::Arc<dyn std::error::Error + Send + Sync + 'static>;

/// A classified error from the database or its connection. Its [`source`](std::error::Error::source) is the
/// driver's own error, when there is one: downcast it (to `postgres::error::DbError`,
/// `sqlx::postgres::PgDatabaseError`, …) for what tandem does not classify, such as PostgreSQL's detail and
/// hint. Two `DbError`s are equal when everything but the source is.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{dialect} {kind:?}{}: {message}", code.as_ref().map(|c| format!(" [{c}]")).unwrap_or_default())]
pub struct DbError {
    /// Which engine.
    pub dialect: Dialect,
    /// What kind of failure.
    pub kind: DbErrorKind,
    /// The engine's own code (SQLSTATE on PostgreSQL, the error number on MySQL, the extended result code
    /// on SQLite), when there is one.
    pub code: Option<String>,
    /// The engine's message.
    pub message: String,
    /// The violated constraint or index, when the engine names it.
    pub constraint: Option<String>,
    /// The driver's error.
    #[source]
    pub source: Option<DriverError>,
}

impl PartialEq for DbError {
    fn eq(&self, other: &Self) -> bool {
        self.dialect == other.dialect
            && self.kind == other.kind
            && self.code == other.code
            && self.message == other.message
            && self.constraint == other.constraint
    }
}

impl DbError {
    /// This error with the driver's error as its source.
    pub fn with_source(mut self, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.source = Some(std::sync::Arc::new(source));
        self
    }

    /// `server` (`host:port`, or the URL) did not answer a call within `limit` (`socket_timeout`).
    pub fn no_answer(dialect: Dialect, server: &str, limit: std::time::Duration) -> Self {
        DbError {
            dialect,
            kind: DbErrorKind::NoAnswer,
            code: None,
            message: format!(
                "{server} sent no answer for {limit:?} (socket_timeout); the connection was closed"
            ),
            constraint: None,
            source: None,
        }
    }

    /// Whether a wait whose bound ran out after `waited` measured the client rather than the server: its
    /// timer fired more than a second past `bound`, so this process (or its machine) was not running for
    /// part of the wait — stopped, suspended, starved of CPU — and may not even have sent its request
    /// before the bound passed. Such a wait gets its bound again, counted from now, before the server is
    /// called silent ([`DbErrorKind::NoAnswer`]): the bound is on the server's silence, not on the
    /// client's own absence.
    pub fn waited_late(waited: std::time::Duration, bound: std::time::Duration) -> bool {
        waited > bound + std::time::Duration::from_secs(1)
    }

    /// A connection-level failure (I/O error, closed socket).
    pub fn connection_lost(dialect: Dialect, message: impl Into<String>) -> Self {
        DbError {
            dialect,
            kind: DbErrorKind::ConnectionLost,
            code: None,
            message: message.into(),
            constraint: None,
            source: None,
        }
    }
}

/// Kinds of database failure callers match on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DbErrorKind {
    /// A unique key or primary key would be duplicated.
    UniqueViolation,
    /// A foreign key has no parent (or still has children).
    ForeignKeyViolation,
    /// NULL into a NOT NULL column.
    NotNullViolation,
    /// A CHECK constraint failed.
    CheckViolation,
    /// A value too long or out of range for its column.
    DataTooLong,
    /// A value the column's type cannot hold (a NUL byte in PostgreSQL text, an invalid date, …).
    InvalidValue,
    /// The transaction could not be serialized; rerun it.
    SerializationFailure,
    /// A deadlock was detected; rerun the transaction.
    Deadlock,
    /// A lock wait timed out (MySQL/MariaDB 1205 past `innodb_lock_wait_timeout`, PostgreSQL 55P03 past
    /// `lock_timeout`); rerun the transaction.
    LockTimeout,
    /// The server stopped a statement that ran past its time limit (PostgreSQL 57014 past
    /// `statement_timeout` — also what a cancel request reads as —, MariaDB 1969 past
    /// `max_statement_time`, MySQL 3024). Not retried: the same statement would run as long again.
    StatementTimeout,
    /// SQLite: the database is locked by another connection.
    Busy,
    /// The connection was closed, killed or broke, or could not be made (refused, unreachable).
    ConnectionLost,
    /// The server sent nothing for a whole `socket_timeout` while a call waited for it (a frozen process,
    /// a network partition, a stalled disk): tandem closed the connection, and whether a statement in
    /// flight took effect is unknown, as after [`DbErrorKind::ConnectionLost`]. The server is tried last by
    /// host walks for `host_recheck` (see [`crate::hosts::mark_silent`]).
    NoAnswer,
    /// The server refused the credentials: unknown user, wrong password, or no access (PostgreSQL class
    /// 28, MySQL 1045 / 1044 / 1698).
    AuthenticationFailed,
    /// The database named in the URL does not exist (PostgreSQL 3D000, MySQL 1049).
    UnknownDatabase,
    /// The statement is invalid (syntax, unknown table or column).
    InvalidStatement,
    /// This server answers but cannot serve: a Galera node that is not (or no longer) a synced member of
    /// its cluster (MariaDB 1047, "WSREP has not yet prepared node for application use"). Another node
    /// can; the same one may again once it has rejoined. Not retriable on the same connection.
    NodeUnavailable,
    /// Anything else.
    Other,
}

impl DbErrorKind {
    /// The kind in snake case (`unique_violation`, `deadlock`, `no_answer`, …): the `error.kind` of a span
    /// and the `error_kind` label of a metric.
    pub fn name(self) -> &'static str {
        match self {
            DbErrorKind::UniqueViolation => "unique_violation",
            DbErrorKind::ForeignKeyViolation => "foreign_key_violation",
            DbErrorKind::NotNullViolation => "not_null_violation",
            DbErrorKind::CheckViolation => "check_violation",
            DbErrorKind::DataTooLong => "data_too_long",
            DbErrorKind::InvalidValue => "invalid_value",
            DbErrorKind::SerializationFailure => "serialization_failure",
            DbErrorKind::Deadlock => "deadlock",
            DbErrorKind::LockTimeout => "lock_timeout",
            DbErrorKind::StatementTimeout => "statement_timeout",
            DbErrorKind::Busy => "busy",
            DbErrorKind::ConnectionLost => "connection_lost",
            DbErrorKind::NoAnswer => "no_answer",
            DbErrorKind::AuthenticationFailed => "authentication_failed",
            DbErrorKind::UnknownDatabase => "unknown_database",
            DbErrorKind::InvalidStatement => "invalid_statement",
            DbErrorKind::NodeUnavailable => "node_unavailable",
            DbErrorKind::Other => "other",
        }
    }

    /// Whether a whole-transaction retry may succeed.
    pub fn is_retriable(self) -> bool {
        matches!(
            self,
            DbErrorKind::SerializationFailure
                | DbErrorKind::Deadlock
                | DbErrorKind::LockTimeout
                | DbErrorKind::Busy
        )
    }
}

/// PostgreSQL SQLSTATE codes (<https://www.postgresql.org/docs/current/errcodes-appendix.html>).
pub fn classify_postgres(sqlstate: &str) -> DbErrorKind {
    match sqlstate {
        "23505" => DbErrorKind::UniqueViolation,
        "23503" => DbErrorKind::ForeignKeyViolation,
        "23502" => DbErrorKind::NotNullViolation,
        "23514" => DbErrorKind::CheckViolation,
        "22001" | "22003" => DbErrorKind::DataTooLong,
        s if s.starts_with("22") => DbErrorKind::InvalidValue,
        "40001" => DbErrorKind::SerializationFailure,
        "40P01" => DbErrorKind::Deadlock,
        "55P03" => DbErrorKind::LockTimeout,
        "57014" => DbErrorKind::StatementTimeout,
        // admin_shutdown, crash_shutdown, cannot_connect_now, and class 08 (connection exception).
        "57P01" | "57P02" | "57P03" => DbErrorKind::ConnectionLost,
        s if s.starts_with("08") => DbErrorKind::ConnectionLost,
        s if s.starts_with("28") => DbErrorKind::AuthenticationFailed,
        "3D000" => DbErrorKind::UnknownDatabase,
        s if s.starts_with("42") => DbErrorKind::InvalidStatement,
        _ => DbErrorKind::Other,
    }
}

/// MySQL / MariaDB error numbers (<https://mariadb.com/kb/en/mariadb-error-code-reference/>).
pub fn classify_mysql(number: u16) -> DbErrorKind {
    match number {
        1062 | 1586 => DbErrorKind::UniqueViolation,
        1451 | 1452 | 1216 | 1217 => DbErrorKind::ForeignKeyViolation,
        1048 | 1364 => DbErrorKind::NotNullViolation,
        3819 | 4025 => DbErrorKind::CheckViolation,
        1406 | 1264 => DbErrorKind::DataTooLong,
        1366 | 1292 => DbErrorKind::InvalidValue,
        1213 => DbErrorKind::Deadlock,
        1205 => DbErrorKind::LockTimeout,
        1969 | 3024 => DbErrorKind::StatementTimeout,
        // 1927: MariaDB "Connection was killed"; 2006/2013: server gone / lost during query; 1053 shutdown.
        1927 | 2006 | 2013 | 1053 | 1317 => DbErrorKind::ConnectionLost,
        1045 | 1044 | 1698 => DbErrorKind::AuthenticationFailed,
        1049 => DbErrorKind::UnknownDatabase,
        1064 | 1146 | 1054 | 1050 => DbErrorKind::InvalidStatement,
        // ER_UNKNOWN_COM_ERROR, which Galera answers every statement with while the node is not synced.
        1047 => DbErrorKind::NodeUnavailable,
        _ => DbErrorKind::Other,
    }
}

/// SQLite extended result codes (<https://www.sqlite.org/rescode.html>).
pub fn classify_sqlite(extended_code: i32) -> DbErrorKind {
    match extended_code {
        2067 | 1555 => DbErrorKind::UniqueViolation, // SQLITE_CONSTRAINT_UNIQUE, _PRIMARYKEY
        787 => DbErrorKind::ForeignKeyViolation,     // SQLITE_CONSTRAINT_FOREIGNKEY
        1299 => DbErrorKind::NotNullViolation,       // SQLITE_CONSTRAINT_NOTNULL
        275 => DbErrorKind::CheckViolation,          // SQLITE_CONSTRAINT_CHECK
        18 => DbErrorKind::DataTooLong,              // SQLITE_TOOBIG
        c if c & 0xff == 5 || c & 0xff == 6 => DbErrorKind::Busy, // SQLITE_BUSY, SQLITE_LOCKED
        c if c & 0xff == 1 => DbErrorKind::InvalidStatement, // SQLITE_ERROR (syntax, no such table)
        _ => DbErrorKind::Other,
    }
}

/// The key or constraint a MySQL error names, which MySQL gives only inside its message:
/// "Duplicate entry 'x' for key 'users_name_key'" (MySQL 8 writes `'table.key'`) or
/// "… CONSTRAINT `name` …" for foreign keys.
pub fn mysql_constraint(message: &str) -> Option<String> {
    if let Some((_, rest)) = message.rsplit_once("for key '") {
        let key = rest.trim_end_matches('\'');
        return Some(key.rsplit('.').next().unwrap_or(key).to_owned());
    }
    let rest = message.split_once("CONSTRAINT `")?.1;
    Some(rest.split('`').next()?.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The codes each engine uses for the kinds callers match map to those kinds, and only retriable ones
    /// are retried.
    #[test]
    fn classification() {
        assert_eq!(classify_postgres("23505"), DbErrorKind::UniqueViolation);
        assert_eq!(
            classify_postgres("40001"),
            DbErrorKind::SerializationFailure
        );
        assert_eq!(classify_postgres("57P01"), DbErrorKind::ConnectionLost);
        assert_eq!(classify_postgres("42P01"), DbErrorKind::InvalidStatement);
        assert_eq!(
            classify_postgres("28P01"),
            DbErrorKind::AuthenticationFailed
        );
        assert_eq!(
            classify_postgres("28000"),
            DbErrorKind::AuthenticationFailed
        );
        assert_eq!(classify_postgres("3D000"), DbErrorKind::UnknownDatabase);
        assert_eq!(classify_mysql(1045), DbErrorKind::AuthenticationFailed);
        assert_eq!(classify_mysql(1049), DbErrorKind::UnknownDatabase);
        assert_eq!(classify_mysql(1062), DbErrorKind::UniqueViolation);
        assert_eq!(classify_mysql(1047), DbErrorKind::NodeUnavailable);
        assert!(!DbErrorKind::NodeUnavailable.is_retriable());
        assert_eq!(classify_mysql(1213), DbErrorKind::Deadlock);
        assert_eq!(classify_mysql(1406), DbErrorKind::DataTooLong);
        assert_eq!(classify_sqlite(2067), DbErrorKind::UniqueViolation);
        assert_eq!(classify_sqlite(5), DbErrorKind::Busy);
        assert_eq!(classify_sqlite(517), DbErrorKind::Busy);
        assert!(DbErrorKind::Deadlock.is_retriable());
        assert!(!DbErrorKind::UniqueViolation.is_retriable());
        assert_eq!(
            mysql_constraint("Duplicate entry 'a' for key 'users.users_name_key'").as_deref(),
            Some("users_name_key")
        );
    }
}
