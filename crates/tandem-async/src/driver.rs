//! The three sqlx drivers behind one trait: binding tandem [`Value`]s, decoding cells, reading what a
//! statement did, and mapping errors to `tandem-core`'s kinds (the same kinds the blocking executor reports).

#[cfg(feature = "sqlite")]
use std::borrow::Cow;

#[cfg(any(feature = "postgres", feature = "mysql"))]
use sqlx::Column;
#[cfg(any(feature = "sqlite", feature = "mysql"))]
use sqlx::ValueRef;
use sqlx::{Database, Row as _, TypeInfo};
use std::sync::Arc;
use tandem_core::{DbError, DbErrorKind, Error, Result};

use tandem_sql::row::Decoded;
use tandem_sql::{Dialect, SqlType, Value};

/// A query with owned arguments.
pub(crate) type Q<DB> = sqlx::query::Query<'static, DB, <DB as Database>::Arguments>;

/// What tandem needs from one sqlx driver.
pub(crate) trait Backend: Database {
    const DIALECT: Dialect;
    fn bind(q: Q<Self>, v: &Value) -> Result<Q<Self>>;
    fn decode(row: &Self::Row, i: usize) -> Result<Value>;
    fn affected(r: &Self::QueryResult) -> u64;
    fn last_insert_id(r: &Self::QueryResult) -> Option<i64>;
}

/// A row sqlx received, each cell decoded ([`Backend::decode`]) when its reader takes it (see
/// [`tandem_sql::Cells`]).
pub(crate) fn cells<'r, B: Backend>(
    columns: &'r Arc<[String]>,
    row: &'r B::Row,
) -> Decoded<'r, B::Row, Error> {
    Decoded::new(columns, row, row.len(), B::decode)
}

fn unsupported(dialect: Dialect, v: &Value) -> Error {
    Error::Unsupported {
        dialect,
        what: format!("{} values", v.kind_name()),
    }
}

/// sqlx could not read a cell as the type asked for: its error is kept as the source.
fn decode_err(dialect: Dialect, ty: &str, e: sqlx::Error) -> Error {
    Error::decode(dialect, ty, e)
}

/// A cell sqlx read that does not fit tandem's value (an unsigned integer past `i64`, a decimal that is
/// not a number): no error underneath, only why.
#[cfg(feature = "mysql")]
fn decode_refused(dialect: Dialect, ty: &str, why: String) -> Error {
    Error::Decode {
        dialect,
        column_type: ty.to_owned(),
        message: why,
        source: None,
    }
}

/// Binds the integer and float widths as they are; PostgreSQL casts between integer widths on assignment
/// and compares across them, so an exact-width bind from the typed DSL always fits.
macro_rules! bind_common {
    ($q:expr, $v:expr, $d:expr) => {
        match $v {
            Value::Bool(b) => $q.bind(*b),
            Value::I16(i) => $q.bind(*i),
            Value::I32(i) => $q.bind(*i),
            Value::I64(i) => $q.bind(*i),
            Value::F32(f) => $q.bind(*f),
            Value::F64(f) => $q.bind(*f),
            Value::Text(s) => $q.bind(s.clone()),
            Value::Bytes(b) => $q.bind(b.clone()),
            #[cfg(feature = "chrono")]
            Value::Date(d) => $q.bind(*d),
            #[cfg(feature = "chrono")]
            Value::Time(t) => $q.bind(*t),
            #[cfg(feature = "chrono")]
            Value::Timestamp(t) => $q.bind(*t),
            #[cfg(feature = "chrono")]
            Value::TimestampTz(t) => $q.bind(*t),
            #[cfg(feature = "uuid")]
            Value::Uuid(u) => $q.bind(*u),
            Value::Null(t) => match t {
                SqlType::Bool => $q.bind(None::<bool>),
                SqlType::SmallInt => $q.bind(None::<i16>),
                SqlType::Int => $q.bind(None::<i32>),
                SqlType::BigInt => $q.bind(None::<i64>),
                SqlType::Real => $q.bind(None::<f32>),
                SqlType::Double => $q.bind(None::<f64>),
                SqlType::Blob => $q.bind(None::<Vec<u8>>),
                #[cfg(feature = "chrono")]
                SqlType::Date => $q.bind(None::<chrono::NaiveDate>),
                #[cfg(feature = "chrono")]
                SqlType::Time => $q.bind(None::<chrono::NaiveTime>),
                #[cfg(feature = "chrono")]
                SqlType::Timestamp => $q.bind(None::<chrono::NaiveDateTime>),
                #[cfg(feature = "chrono")]
                SqlType::TimestampTz => $q.bind(None::<chrono::DateTime<chrono::Utc>>),
                #[cfg(feature = "uuid")]
                SqlType::Uuid => $q.bind(None::<uuid::Uuid>),
                _ => $q.bind(None::<String>),
            },
            other => return Err(unsupported($d, other)),
        }
    };
}

#[cfg(feature = "postgres")]
impl Backend for sqlx::Postgres {
    const DIALECT: Dialect = Dialect::Postgres;

    fn bind(q: Q<Self>, v: &Value) -> Result<Q<Self>> {
        Ok(bind_common!(q, v, Dialect::Postgres))
    }

    fn decode(row: &Self::Row, i: usize) -> Result<Value> {
        let ty = row.column(i).type_info().name().to_owned();
        let err = |e| decode_err(Dialect::Postgres, &ty, e);
        macro_rules! get {
            ($t:ty, $sql:ident) => {
                row.try_get_unchecked::<Option<$t>, _>(i)
                    .map_err(err)?
                    .map_or(Value::Null(SqlType::$sql), Into::into)
            };
        }
        Ok(match ty.as_str() {
            "BOOL" => get!(bool, Bool),
            "INT2" => get!(i16, SmallInt),
            "INT4" => get!(i32, Int),
            "INT8" => get!(i64, BigInt),
            "FLOAT4" => get!(f32, Real),
            "FLOAT8" => get!(f64, Double),
            "TEXT" | "VARCHAR" | "BPCHAR" | "NAME" | "UNKNOWN" => get!(String, Text),
            "BYTEA" => get!(Vec<u8>, Blob),
            #[cfg(feature = "chrono")]
            "DATE" => get!(chrono::NaiveDate, Date),
            #[cfg(feature = "chrono")]
            "TIME" => get!(chrono::NaiveTime, Time),
            #[cfg(feature = "chrono")]
            "TIMESTAMP" => get!(chrono::NaiveDateTime, Timestamp),
            #[cfg(feature = "chrono")]
            "TIMESTAMPTZ" => get!(chrono::DateTime<chrono::Utc>, TimestampTz),
            #[cfg(feature = "uuid")]
            "UUID" => get!(uuid::Uuid, Uuid),
            other => {
                return Err(Error::Unsupported {
                    dialect: Dialect::Postgres,
                    what: format!("the column type {other}"),
                });
            }
        })
    }

    fn affected(r: &Self::QueryResult) -> u64 {
        r.rows_affected()
    }

    fn last_insert_id(_: &Self::QueryResult) -> Option<i64> {
        None
    }
}

#[cfg(feature = "mysql")]
impl Backend for sqlx::MySql {
    const DIALECT: Dialect = Dialect::MySql;

    fn bind(q: Q<Self>, v: &Value) -> Result<Q<Self>> {
        Ok(bind_common!(q, v, Dialect::MySql))
    }

    fn decode(row: &Self::Row, i: usize) -> Result<Value> {
        let raw = row
            .try_get_raw(i)
            .map_err(|e| decode_err(Dialect::MySql, "?", e))?;
        if raw.is_null() {
            return Ok(Value::Null(SqlType::Text));
        }
        let ty = row.column(i).type_info().name().to_owned();
        let err = |e| decode_err(Dialect::MySql, &ty, e);
        Ok(match ty.as_str() {
            "BOOLEAN" | "TINYINT" | "SMALLINT" | "MEDIUMINT" | "INT" | "BIGINT" => {
                Value::I64(row.try_get_unchecked::<i64, _>(i).map_err(err)?)
            }
            "TINYINT UNSIGNED" | "SMALLINT UNSIGNED" | "MEDIUMINT UNSIGNED" | "INT UNSIGNED"
            | "BIGINT UNSIGNED" => {
                let u = row.try_get_unchecked::<u64, _>(i).map_err(err)?;
                Value::I64(i64::try_from(u).map_err(|_| {
                    decode_refused(Dialect::MySql, &ty, format!("{u} does not fit in i64"))
                })?)
            }
            "FLOAT" => Value::F32(row.try_get_unchecked::<f32, _>(i).map_err(err)?),
            "DOUBLE" => Value::F64(row.try_get_unchecked::<f64, _>(i).map_err(err)?),
            // sqlx names a text column with a binary collation (tandem's tables use a binary collation) like a
            // byte column: text that is valid UTF-8 is text, anything else stays bytes.
            "BINARY" | "VARBINARY" | "BLOB" | "TINYBLOB" | "MEDIUMBLOB" | "LONGBLOB" => {
                let bytes = row.try_get_unchecked::<Vec<u8>, _>(i).map_err(err)?;
                match String::from_utf8(bytes) {
                    Ok(s) => Value::Text(s),
                    Err(e) => Value::Bytes(e.into_bytes()),
                }
            }
            #[cfg(feature = "chrono")]
            "DATE" => Value::Date(
                row.try_get_unchecked::<chrono::NaiveDate, _>(i)
                    .map_err(err)?,
            ),
            #[cfg(feature = "chrono")]
            "TIME" => Value::Time(
                row.try_get_unchecked::<chrono::NaiveTime, _>(i)
                    .map_err(err)?,
            ),
            #[cfg(feature = "chrono")]
            "DATETIME" | "TIMESTAMP" => Value::Timestamp(
                row.try_get_unchecked::<chrono::NaiveDateTime, _>(i)
                    .map_err(err)?,
            ),
            "DECIMAL" => {
                let s = row.try_get_unchecked::<String, _>(i).map_err(err)?;
                match s.parse::<i64>() {
                    Ok(n) => Value::I64(n),
                    Err(_) => Value::F64(s.parse().map_err(|_| {
                        decode_refused(Dialect::MySql, &ty, format!("{s:?} is not a number"))
                    })?),
                }
            }
            _ => Value::Text(row.try_get_unchecked::<String, _>(i).map_err(err)?),
        })
    }

    fn affected(r: &Self::QueryResult) -> u64 {
        r.rows_affected()
    }

    fn last_insert_id(r: &Self::QueryResult) -> Option<i64> {
        i64::try_from(r.last_insert_id()).ok().filter(|id| *id != 0)
    }
}

#[cfg(feature = "sqlite")]
impl Backend for sqlx::Sqlite {
    const DIALECT: Dialect = Dialect::Sqlite;

    fn bind(q: Q<Self>, v: &Value) -> Result<Q<Self>> {
        // SQLite has one integer type: widen, so a bool or small integer binds like rusqlite binds it.
        Ok(match v {
            Value::Bool(b) => q.bind(i64::from(*b)),
            Value::I16(i) => q.bind(i64::from(*i)),
            Value::I32(i) => q.bind(i64::from(*i)),
            Value::F32(f) => q.bind(f64::from(*f)),
            // The same storage as the rusqlite driver (see `Value::portable_text`).
            #[cfg(feature = "chrono")]
            v @ (Value::Date(_) | Value::Time(_) | Value::Timestamp(_) | Value::TimestampTz(_)) => {
                q.bind(v.portable_text())
            }
            #[cfg(feature = "uuid")]
            Value::Uuid(u) => q.bind(u.as_bytes().to_vec()),
            other => bind_common!(q, other, Dialect::Sqlite),
        })
    }

    fn decode(row: &Self::Row, i: usize) -> Result<Value> {
        let raw = row
            .try_get_raw(i)
            .map_err(|e| decode_err(Dialect::Sqlite, "?", e))?;
        if raw.is_null() {
            return Ok(Value::Null(SqlType::Text));
        }
        // The storage class of this value, not the declared type: SQLite's types belong to values.
        let class: Cow<'_, sqlx::sqlite::SqliteTypeInfo> = raw.type_info();
        let class = class.name().to_owned();
        let err = |e| decode_err(Dialect::Sqlite, &class, e);
        Ok(match class.as_str() {
            "INTEGER" | "BOOLEAN" | "INT8" | "BIGINT" => {
                Value::I64(row.try_get_unchecked::<i64, _>(i).map_err(err)?)
            }
            "REAL" | "DOUBLE" => Value::F64(row.try_get_unchecked::<f64, _>(i).map_err(err)?),
            "BLOB" => Value::Bytes(row.try_get_unchecked::<Vec<u8>, _>(i).map_err(err)?),
            _ => Value::Text(row.try_get_unchecked::<String, _>(i).map_err(err)?),
        })
    }

    fn affected(r: &Self::QueryResult) -> u64 {
        r.rows_affected()
    }

    fn last_insert_id(r: &Self::QueryResult) -> Option<i64> {
        Some(r.last_insert_rowid())
    }
}

/// Maps an sqlx error to tandem's: database errors by each engine's code (the same mapping the blocking
/// executor uses), I/O and protocol failures as connection lost, pool timeouts as pool timeouts.
pub(crate) fn error(dialect: Dialect, e: sqlx::Error) -> Error {
    match e {
        sqlx::Error::Database(db) => {
            let (kind, code) = match dialect {
                Dialect::Postgres => {
                    let code = db.code().map(|c| c.into_owned()).unwrap_or_default();
                    (tandem_core::error::classify_postgres(&code), Some(code))
                }
                #[cfg(feature = "mysql")]
                Dialect::MySql => match db.try_downcast_ref::<sqlx::mysql::MySqlDatabaseError>() {
                    Some(m) => (
                        tandem_core::error::classify_mysql(m.number()),
                        Some(m.number().to_string()),
                    ),
                    None => (DbErrorKind::Other, None),
                },
                #[cfg(not(feature = "mysql"))]
                Dialect::MySql => (DbErrorKind::Other, None),
                Dialect::Sqlite => {
                    let code = db.code().map(|c| c.into_owned()).unwrap_or_default();
                    (
                        tandem_core::error::classify_sqlite(code.parse().unwrap_or(0)),
                        Some(code),
                    )
                }
            };
            let message = db.message().to_owned();
            let db: std::sync::Arc<dyn sqlx::error::DatabaseError> = std::sync::Arc::from(db);
            let source: tandem_core::error::DriverError = db.clone();
            let constraint = db
                .constraint()
                .map(str::to_owned)
                .or_else(|| match dialect {
                    Dialect::MySql => tandem_core::error::mysql_constraint(&message),
                    Dialect::Sqlite => message
                        .split_once("constraint failed: ")
                        .map(|(_, c)| c.to_owned()),
                    Dialect::Postgres => None,
                });
            Error::Database(DbError {
                dialect,
                kind,
                code,
                message,
                constraint,
                source: Some(source),
            })
        }
        sqlx::Error::Io(_)
        | sqlx::Error::Protocol(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::WorkerCrashed => {
            Error::Database(DbError::connection_lost(dialect, e.to_string()).with_source(e))
        }
        // Only pool acquires time out, and both places that acquire map it themselves with the real figures
        // (`Database::admitted`: the wait and the pool size; warm-up: the connect timeout).
        sqlx::Error::PoolTimedOut => {
            Error::Internal("an sqlx pool timeout reached the generic error mapping".into())
        }
        other => Error::Database(
            DbError {
                dialect,
                kind: DbErrorKind::Other,
                code: None,
                message: other.to_string(),
                constraint: None,
                source: None,
            }
            .with_source(other),
        ),
    }
}
