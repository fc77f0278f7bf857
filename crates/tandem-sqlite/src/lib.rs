//! `tandem-sqlite`: tandem's SQLite driver on rusqlite, shared by both executors. The blocking executor
//! keeps these connections in its r2d2 pool; the async executor runs each one on a worker thread of its own.
//!
//! Statements are stepped row by row (never the whole result in memory) through cached prepared
//! statements; parameters are bound borrowed (no copy of a text or blob per cell); file databases get WAL
//! mode and a busy timeout.
#![forbid(unsafe_code)]

/// Stops the statement a connection is running, from any thread (see [`Connection::interrupt_handle`]).
pub use rusqlite::InterruptHandle;
use rusqlite::ToSql;
use rusqlite::types::{ToSqlOutput, ValueRef};
use tandem_core::plan::{Done, Runner, Sink};
use tandem_core::{ConnectOptions, DbError, DbErrorKind, Error, Result};
use tandem_sql::batch::BorrowedStatement;
use tandem_sql::row::Decoded;
use tandem_sql::{Dialect, Rendered, SqlType, Value};

/// One SQLite connection, and whether it waits for other connections' locks (a file database's busy timeout).
pub struct Connection(rusqlite::Connection, Columns, bool);

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Connection").field(&self.0.path()).finish()
    }
}

/// Column-name lists this connection's results used lately, shared by their rows. A point read's row
/// carries the names of its columns; building them anew (a `String` per column, the list, its `Arc`) was
/// a third of the allocations of a `find_by_id`. A list is reused only when the statement's names are the
/// same, compared one by one without allocating — so a schema change that renames a column is never
/// hidden — and the least recently added goes when the lists are full.
#[derive(Default)]
struct Columns(std::collections::VecDeque<std::sync::Arc<[String]>>);

/// Column-name lists kept per connection.
const KEPT_COLUMN_LISTS: usize = 16;

impl Columns {
    fn of(&mut self, stmt: &rusqlite::Statement<'_>, width: usize) -> std::sync::Arc<[String]> {
        let same = |names: &[String]| {
            names.len() == width
                && names
                    .iter()
                    .enumerate()
                    .all(|(i, n)| stmt.column_name(i).is_ok_and(|m| m == n))
        };
        if let Some(found) = self.0.iter().find(|names| same(names)) {
            return found.clone();
        }
        let names: std::sync::Arc<[String]> = stmt
            .column_names()
            .into_iter()
            .map(str::to_owned)
            .collect::<Vec<_>>()
            .into();
        if self.0.len() == KEPT_COLUMN_LISTS {
            self.0.pop_front();
        }
        self.0.push_back(names.clone());
        names
    }
}

impl Connection {
    /// Opens the file (created when missing) or a fresh in-memory database, with tandem's settings: foreign
    /// keys on, case-sensitive LIKE (the same on every engine), and for files WAL, `synchronous = NORMAL`
    /// (durable across application crashes in WAL mode) and a 5 s busy timeout.
    pub fn open(opts: &ConnectOptions) -> Result<Connection> {
        let conn = match &opts.path {
            Some(path) => rusqlite::Connection::open(path),
            None => rusqlite::Connection::open_in_memory(),
        }
        .map_err(error)?;
        let pragmas = if opts.path.is_some() {
            format!(
                "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA busy_timeout = {}; PRAGMA foreign_keys = ON; PRAGMA case_sensitive_like = ON;",
                tandem_core::tx::BUSY_TIMEOUT.as_millis()
            )
        } else {
            "PRAGMA foreign_keys = ON; PRAGMA case_sensitive_like = ON;".into()
        };
        conn.execute_batch(&pragmas).map_err(error)?;
        conn.set_prepared_statement_cache_capacity(64);
        Ok(Connection(conn, Columns::default(), opts.path.is_some()))
    }

    /// Runs statements without parameters or rows (BEGIN, COMMIT, SAVEPOINT, pragmas).
    pub fn simple(&mut self, sql: &str) -> Result<()> {
        self.0.execute_batch(sql).map_err(error)
    }

    /// A handle that stops the statement this connection is running, from any thread.
    pub fn interrupt_handle(&self) -> InterruptHandle {
        self.0.get_interrupt_handle()
    }

    /// Ends a transaction its user abandoned (a cancelled future in the async executor): `false` when the
    /// connection is still inside one afterwards and must not be used again. One C call when there is
    /// nothing to do. (`query_only` is only ever on inside a transaction, see `tandem_core::tx::begin`, so
    /// it is reset here too.)
    pub fn end_abandoned_transaction(&mut self) -> bool {
        if self.0.is_autocommit() {
            return true;
        }
        let _ = self.0.execute_batch("PRAGMA query_only = OFF; ROLLBACK");
        self.0.is_autocommit()
    }

    /// Runs `r` without ever waiting for another connection's lock: `Ok(None)` when SQLite answered busy
    /// (the statement did nothing; run it again where waiting is allowed). For the async executor, which
    /// runs a key lookup on the runtime's own thread only when that cannot block it. Rows reach `sink` as
    /// they are read; one that answers busy does so before its first row.
    pub fn run_without_waiting(
        &mut self,
        r: &Rendered,
        sink: &mut Sink<'_>,
    ) -> Result<Option<Done>> {
        let waits = self.2;
        if waits {
            self.0
                .busy_timeout(std::time::Duration::ZERO)
                .map_err(error)?;
        }
        let result = Runner::run(self, r, sink);
        if waits {
            self.0
                .busy_timeout(tandem_core::tx::BUSY_TIMEOUT)
                .map_err(error)?;
        }
        match result {
            Err(Error::Database(e)) if e.kind == DbErrorKind::Busy => Ok(None),
            other => other.map(Some),
        }
    }
}

impl Runner for Connection {
    fn simple(&mut self, sql: &str) -> Result<()> {
        Connection::simple(self, sql)
    }

    fn in_transaction(&mut self) -> Option<bool> {
        Some(!self.0.is_autocommit())
    }

    fn run(&mut self, r: &Rendered, sink: &mut Sink<'_>) -> Result<Done> {
        self.run_bound(
            &r.sql,
            |stmt| {
                for (i, v) in r.params.iter().enumerate() {
                    stmt.raw_bind_parameter(i + 1, Bind(v))?;
                }
                Ok(())
            },
            sink,
        )
    }

    /// Binds the borrowed text and bytes where they are: no copy per cell.
    fn run_borrowed(&mut self, statement: &BorrowedStatement<'_>) -> Result<Done> {
        self.run_bound(
            &statement.sql,
            |stmt| {
                for (i, v) in statement.params.iter().enumerate() {
                    match v {
                        tandem_sql::ValueRef::Text(t) => stmt.raw_bind_parameter(i + 1, *t)?,
                        tandem_sql::ValueRef::Bytes(b) => stmt.raw_bind_parameter(i + 1, *b)?,
                        tandem_sql::ValueRef::Value(v) => {
                            stmt.raw_bind_parameter(i + 1, Bind(v))?
                        }
                    }
                }
                Ok(())
            },
            &mut |_| Ok(true),
        )
    }
}

impl Connection {
    /// Prepares `sql` (cached), binds its parameters with `bind` and steps it, rows to `sink`.
    fn run_bound(
        &mut self,
        sql: &str,
        bind: impl FnOnce(&mut rusqlite::Statement<'_>) -> rusqlite::Result<()>,
        sink: &mut Sink<'_>,
    ) -> Result<Done> {
        let Connection(conn, kept, _) = self;
        let mut stmt = conn.prepare_cached(sql).map_err(error)?;
        bind(&mut stmt).map_err(error)?;
        // `sqlite3_changes` keeps the count of the last INSERT, UPDATE or DELETE: a statement that is none
        // of these (DDL, a SELECT) would report that one's rows. The running total tells whether this
        // statement changed any.
        let before = conn.total_changes();
        let affected = |conn: &rusqlite::Connection| match conn.total_changes() == before {
            true => 0,
            false => conn.changes(),
        };
        let width = stmt.column_count();
        if width == 0 {
            stmt.raw_execute().map_err(error)?;
            drop(stmt);
            return Ok(Done {
                affected: affected(conn),
                last_insert_id: Some(conn.last_insert_rowid()),
                key_step: None,
            });
        }
        let mut rows = stmt.raw_query();
        // The names are read once the first step has run: a cached statement whose table changed since
        // (a renamed or added column under `SELECT *`) is prepared again by that step, not before.
        let mut columns = None;
        while let Some(row) = rows.next().map_err(error)? {
            let columns = columns.get_or_insert_with(|| {
                let stmt: &rusqlite::Statement<'_> = row.as_ref();
                kept.of(stmt, stmt.column_count())
            });
            if !sink(&mut Decoded::new(columns, row, columns.len(), cell))? {
                break;
            }
        }
        drop(rows);
        drop(stmt);
        Ok(Done {
            affected: affected(conn),
            last_insert_id: None,
            key_step: None,
        })
    }
}

/// Cell `i` of a row being stepped, read when its reader takes it (see [`tandem_sql::Cells`]).
fn cell(row: &rusqlite::Row<'_>, i: usize) -> Result<Value> {
    decode(row.get_ref(i).map_err(error)?)
}

/// A value bound as SQLite stores it, borrowed.
struct Bind<'a>(&'a Value);

impl ToSql for Bind<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match self.0 {
            Value::Null(_) => ToSqlOutput::Borrowed(ValueRef::Null),
            Value::Bool(b) => ToSqlOutput::Borrowed(ValueRef::Integer(i64::from(*b))),
            Value::I16(i) => ToSqlOutput::Borrowed(ValueRef::Integer(i64::from(*i))),
            Value::I32(i) => ToSqlOutput::Borrowed(ValueRef::Integer(i64::from(*i))),
            Value::I64(i) => ToSqlOutput::Borrowed(ValueRef::Integer(*i)),
            Value::F32(f) => ToSqlOutput::Borrowed(ValueRef::Real(f64::from(*f))),
            Value::F64(f) => ToSqlOutput::Borrowed(ValueRef::Real(*f)),
            Value::Text(s) => ToSqlOutput::Borrowed(ValueRef::Text(s.as_bytes())),
            Value::Bytes(b) => ToSqlOutput::Borrowed(ValueRef::Blob(b)),
            #[cfg(feature = "uuid")]
            Value::Uuid(u) => ToSqlOutput::Borrowed(ValueRef::Blob(u.as_bytes())),
            #[cfg(feature = "chrono")]
            v @ (Value::Date(_) | Value::Time(_) | Value::Timestamp(_) | Value::TimestampTz(_)) => {
                ToSqlOutput::Owned(rusqlite::types::Value::Text(
                    v.portable_text().unwrap_or_default(),
                ))
            }
            other => {
                return Err(rusqlite::Error::ToSqlConversionFailure(Box::new(
                    unsupported(other),
                )));
            }
        })
    }
}

fn unsupported(v: &Value) -> Error {
    Error::Unsupported {
        dialect: Dialect::Sqlite,
        what: format!("{} values", v.kind_name()),
    }
}

fn decode(v: ValueRef<'_>) -> Result<Value> {
    Ok(match v {
        ValueRef::Null => Value::Null(SqlType::Text),
        ValueRef::Integer(i) => Value::I64(i),
        ValueRef::Real(f) => Value::F64(f),
        ValueRef::Text(t) => Value::Text(
            std::str::from_utf8(t)
                .map_err(|e| Error::decode(Dialect::Sqlite, "TEXT", e))?
                .to_owned(),
        ),
        ValueRef::Blob(b) => Value::Bytes(b.to_vec()),
    })
}

/// Maps a rusqlite error to tandem's, classified by the extended result code.
pub fn error(e: rusqlite::Error) -> Error {
    let (failure, message) = match &e {
        rusqlite::Error::SqliteFailure(f, msg) => (f, msg.clone().unwrap_or_else(|| f.to_string())),
        // A statement that does not prepare (syntax, unknown table or column), with the offending offset.
        rusqlite::Error::SqlInputError { error, msg, .. } => (error, msg.clone()),
        rusqlite::Error::ToSqlConversionFailure(inner) => {
            return match inner.downcast_ref::<Error>() {
                Some(Error::Unsupported { dialect, what }) => Error::Unsupported {
                    dialect: *dialect,
                    what: what.clone(),
                },
                _ => Error::Usage(inner.to_string()),
            };
        }
        _ => {
            let classified = DbError {
                dialect: Dialect::Sqlite,
                kind: DbErrorKind::Other,
                code: None,
                message: e.to_string(),
                constraint: None,
                source: None,
            };
            return Error::Database(classified.with_source(e));
        }
    };
    // "UNIQUE constraint failed: users.name" names the columns; CHECK failures name the constraint.
    let constraint = message
        .split_once("constraint failed: ")
        .map(|(_, c)| c.to_owned());
    let classified = DbError {
        dialect: Dialect::Sqlite,
        kind: tandem_core::error::classify_sqlite(failure.extended_code),
        code: Some(failure.extended_code.to_string()),
        message,
        constraint,
        source: None,
    };
    Error::Database(classified.with_source(e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tandem_sql::Render as _;

    /// The first row's column names, and where that list lives.
    fn names_of(conn: &mut Connection, sql: &str) -> (*const String, Vec<String>) {
        let mut names = None;
        let r = tandem_sql::raw(sql, vec![])
            .render(Dialect::Sqlite)
            .unwrap();
        conn.run(&r, &mut |cells| {
            names = Some((cells.columns().as_ptr(), cells.columns().to_vec()));
            Ok(true)
        })
        .unwrap();
        names.expect("a row")
    }

    /// A file of its own, removed with its WAL files when dropped.
    struct TempFile(std::path::PathBuf);

    impl Drop for TempFile {
        fn drop(&mut self) {
            for suffix in ["", "-wal", "-shm"] {
                let _ = std::fs::remove_file(format!("{}{suffix}", self.0.display()));
            }
        }
    }

    fn first_i64(conn: &mut Connection, sql: &str) -> i64 {
        let r = tandem_sql::raw(sql, vec![])
            .render(Dialect::Sqlite)
            .unwrap();
        let mut got = None;
        conn.run(&r, &mut |cells| {
            got = cells.take(0)?.as_i64();
            Ok(false)
        })
        .unwrap();
        got.expect("one integer")
    }

    /// A read another connection's lock would make wait answers `None` at once instead (a 5 s busy wait
    /// would have ended in a busy error, not `None`), leaves the busy timeout as it was, and reads once the
    /// lock is gone.
    #[test]
    fn run_without_waiting_answers_none_instead_of_waiting_for_a_lock() {
        let file = TempFile(
            std::env::temp_dir().join(format!("tandem-sqlite-nowait-{}.db", std::process::id())),
        );
        let url = format!("sqlite://{}", file.0.display());
        let mut conn = Connection::open(&ConnectOptions::parse(&url).unwrap()).unwrap();
        conn.simple(
            "CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER); INSERT INTO t VALUES (1, 7)",
        )
        .unwrap();
        let read = tandem_sql::raw("SELECT v FROM t WHERE id = 1", vec![])
            .render(Dialect::Sqlite)
            .unwrap();

        // Readers of a WAL file never wait; with a rollback journal, a writer's EXCLUSIVE lock keeps them
        // out until it commits.
        conn.simple("PRAGMA journal_mode = DELETE").unwrap();
        let other = rusqlite::Connection::open(&file.0).unwrap();
        other
            .execute_batch("BEGIN EXCLUSIVE; UPDATE t SET v = 8 WHERE id = 1")
            .unwrap();
        let mut rows = 0;
        let answer = conn
            .run_without_waiting(&read, &mut |_| {
                rows += 1;
                Ok(true)
            })
            .unwrap();
        assert!(answer.is_none(), "busy is None, not a wait: {answer:?}");
        assert_eq!(rows, 0, "no row before the lock was refused");
        assert_eq!(
            first_i64(&mut conn, "PRAGMA busy_timeout"),
            tandem_core::tx::BUSY_TIMEOUT.as_millis() as i64,
            "the busy timeout is back"
        );

        other.execute_batch("COMMIT").unwrap();
        let mut seen = None;
        let done = conn
            .run_without_waiting(&read, &mut |cells| {
                seen = cells.take(0)?.as_i64();
                Ok(true)
            })
            .unwrap();
        assert!(done.is_some(), "no lock, an answer");
        assert_eq!(seen, Some(8), "the other connection's write, read");
    }

    /// A statement that is not an INSERT, UPDATE or DELETE affects no rows, whatever the last write did
    /// (SQLite's own `changes()` keeps that one's count); a write reports its own.
    #[test]
    fn only_writes_report_affected_rows() {
        let mut conn =
            Connection::open(&ConnectOptions::parse("sqlite::memory:").unwrap()).unwrap();
        let mut affected = |sql: &str| {
            let r = tandem_sql::raw(sql, vec![])
                .render(Dialect::Sqlite)
                .unwrap();
            conn.run(&r, &mut |_| Ok(true)).unwrap().affected
        };
        assert_eq!(affected("CREATE TABLE t (a INTEGER)"), 0);
        assert_eq!(affected("INSERT INTO t VALUES (1), (2), (3)"), 3);
        assert_eq!(
            affected("CREATE INDEX t_a ON t (a)"),
            0,
            "DDL after a write"
        );
        assert_eq!(
            affected("SELECT a FROM t WHERE a > 5"),
            0,
            "a read after a write"
        );
        assert_eq!(affected("UPDATE t SET a = a + 1 WHERE a > 1"), 2);
        assert_eq!(affected("UPDATE t SET a = 0 WHERE a > 100"), 0);
        assert_eq!(affected("DELETE FROM t RETURNING a"), 3, "rows and a count");
    }

    /// Rows of statements with the same column names share one list; a renamed column is seen at once.
    #[test]
    fn column_lists_are_reused_only_while_the_names_match() {
        let mut conn =
            Connection::open(&ConnectOptions::parse("sqlite::memory:").unwrap()).unwrap();
        conn.simple("CREATE TABLE t (a INTEGER, b TEXT); INSERT INTO t VALUES (1, 'x')")
            .unwrap();
        let first = names_of(&mut conn, "SELECT * FROM t");
        let again = names_of(&mut conn, "SELECT * FROM t");
        assert_eq!(first, again, "the same list");
        let other_sql = names_of(&mut conn, "SELECT a, b FROM t WHERE a = 1");
        assert_eq!(first.0, other_sql.0, "the same names, the same list");
        conn.simple("ALTER TABLE t RENAME COLUMN b TO c").unwrap();
        let renamed = names_of(&mut conn, "SELECT * FROM t");
        assert_eq!(renamed.1, ["a", "c"]);
        assert_ne!(renamed.0, first.0);
        let aliased = names_of(&mut conn, "SELECT a AS z FROM t");
        assert_eq!(aliased.1, ["z"]);
    }
}
