//! rusqlite: statements stepped row by row (never the whole result in memory), cached prepared statements,
//! WAL mode and a busy timeout for file databases.

use rusqlite::types::{ToSqlOutput, ValueRef};
use rusqlite::{Connection, ToSql};
use tandem_core::{ConnectOptions, DbError, DbErrorKind, Error, Result};
use tandem_sql::{Dialect, Rendered, Row, SqlType, Value};

use super::{Done, Sink, names};

pub(crate) fn open(opts: &ConnectOptions) -> Result<Connection> {
    let conn = match &opts.path {
        Some(path) => Connection::open(path),
        None => Connection::open_in_memory(),
    }
    .map_err(error)?;
    // WAL lets readers run beside one writer; NORMAL is durable across application crashes in WAL mode.
    let pragmas = if opts.path.is_some() {
        "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA busy_timeout = 5000; PRAGMA foreign_keys = ON; PRAGMA case_sensitive_like = ON;"
    } else {
        "PRAGMA foreign_keys = ON; PRAGMA case_sensitive_like = ON;"
    };
    conn.execute_batch(pragmas).map_err(error)?;
    conn.set_prepared_statement_cache_capacity(64);
    Ok(conn)
}

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
            other => {
                return Err(rusqlite::Error::ToSqlConversionFailure(Box::new(
                    super::unsupported_value(Dialect::Sqlite, other),
                )));
            }
        })
    }
}

fn decode(v: ValueRef<'_>) -> Result<Value> {
    Ok(match v {
        ValueRef::Null => Value::Null(SqlType::Text),
        ValueRef::Integer(i) => Value::I64(i),
        ValueRef::Real(f) => Value::F64(f),
        ValueRef::Text(t) => Value::Text(
            std::str::from_utf8(t)
                .map_err(|_| Error::Usage("SQLite returned text that is not UTF-8".into()))?
                .to_owned(),
        ),
        ValueRef::Blob(b) => Value::Bytes(b.to_vec()),
    })
}

pub(crate) fn run(conn: &mut Connection, r: &Rendered, sink: &mut Sink<'_>) -> Result<Done> {
    let mut stmt = conn.prepare_cached(&r.sql).map_err(error)?;
    for (i, v) in r.params.iter().enumerate() {
        stmt.raw_bind_parameter(i + 1, Bind(v)).map_err(error)?;
    }
    let width = stmt.column_count();
    if width == 0 {
        let affected = stmt.raw_execute().map_err(error)? as u64;
        drop(stmt);
        return Ok(Done {
            affected,
            last_insert_id: Some(conn.last_insert_rowid()),
        });
    }
    let columns = names(stmt.column_names().into_iter().map(str::to_owned));
    let mut rows = stmt.raw_query();
    while let Some(row) = rows.next().map_err(error)? {
        let mut values = Vec::with_capacity(width);
        for i in 0..width {
            values.push(decode(row.get_ref(i).map_err(error)?)?);
        }
        if !sink(Row::new(columns.clone(), values))? {
            break;
        }
    }
    drop(rows);
    drop(stmt);
    Ok(Done {
        affected: conn.changes(),
        last_insert_id: None,
    })
}

/// Maps a rusqlite error to tandem's, classified by the extended result code.
pub(crate) fn error(e: rusqlite::Error) -> Error {
    let (failure, message) = match &e {
        rusqlite::Error::SqliteFailure(f, msg) => (f, msg.clone().unwrap_or_else(|| f.to_string())),
        // A statement that does not prepare (syntax, unknown table or column), with the offending offset.
        rusqlite::Error::SqlInputError { error, msg, .. } => (error, msg.clone()),
        rusqlite::Error::ToSqlConversionFailure(inner) => return Error::Usage(inner.to_string()),
        _ => {
            return Error::Database(DbError {
                dialect: Dialect::Sqlite,
                kind: DbErrorKind::Other,
                code: None,
                message: e.to_string(),
                constraint: None,
            });
        }
    };
    // "UNIQUE constraint failed: users.name" names the columns; CHECK failures name the constraint.
    let constraint = message
        .split_once("constraint failed: ")
        .map(|(_, c)| c.to_owned());
    Error::Database(DbError {
        dialect: Dialect::Sqlite,
        kind: tandem_core::error::classify_sqlite(failure.extended_code),
        code: Some(failure.extended_code.to_string()),
        message,
        constraint,
    })
}
