//! Given: connecting to PostgreSQL and MySQL with sqlx from a URL, moving [`Value`]s in and out of sqlx,
//! and naming sqlx's errors with stage 4's kinds — the driver trivia of the async side. You do not edit
//! this file; your executor in `exercise.rs` calls it. (SQLite needs nothing new here: your worker thread
//! runs stage 4's blocking `Conn`.)

use blocking::{DbErrorKind, Error};
use sqlx::{Column, Connection, Row, TypeInfo, ValueRef};
use tables::{DecodeError, Value};

/// A sqlx query with its arguments, owning them.
pub type PgQuery<'q> = sqlx::query::Query<'q, sqlx::Postgres, sqlx::postgres::PgArguments>;
/// A sqlx query with its arguments, owning them.
pub type MySqlQuery<'q> = sqlx::query::Query<'q, sqlx::MySql, sqlx::mysql::MySqlArguments>;

/// The parts of a server URL (the same forms stage 4 reads).
struct ServerUrl {
    user: String,
    password: Option<String>,
    host: String,
    port: u16,
    database: String,
    search_path: Option<String>,
}

fn parse(url: &str, default_port: u16) -> Result<ServerUrl, Error> {
    let bad = |why: &str| Error::Connect(format!("{url:?}: {why}"));
    let rest = url.split_once("://").ok_or_else(|| bad("no ://"))?.1;
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    let (auth, rest) = rest.rsplit_once('@').unwrap_or(("", rest));
    let (host_port, database) = rest.split_once('/').unwrap_or((rest, ""));
    let (user, password) = match auth.split_once(':') {
        Some((u, p)) => (u, Some(p.to_owned())),
        None => (auth, None),
    };
    let (host, port) = match host_port.rsplit_once(':') {
        Some((h, p)) => (h, p.parse().map_err(|_| bad("the port is not a number"))?),
        None => (host_port, default_port),
    };
    let mut search_path = None;
    for kv in query.split('&').filter(|kv| !kv.is_empty()) {
        let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
        let plain = ["disable", "disabled", "prefer", "preferred"];
        match k {
            "search_path" => search_path = Some(v.to_owned()),
            "sslmode" | "ssl-mode" if !plain.iter().any(|p| v.eq_ignore_ascii_case(p)) => {
                return Err(bad("TLS is not offered by the workshop's executor"));
            }
            _ => {}
        }
    }
    Ok(ServerUrl {
        user: if user.is_empty() { "root" } else { user }.to_owned(),
        password,
        host: if host.is_empty() { "127.0.0.1" } else { host }.to_owned(),
        port,
        database: database.to_owned(),
        search_path,
    })
}

/// Opens one PostgreSQL connection (`search_path=` on the URL becomes the session's schema).
pub async fn connect_postgres(url: &str) -> Result<sqlx::PgConnection, Error> {
    let u = parse(url, 5432)?;
    let mut opts = sqlx::postgres::PgConnectOptions::new()
        .host(&u.host)
        .port(u.port)
        .username(&u.user)
        .database(&u.database)
        .ssl_mode(sqlx::postgres::PgSslMode::Disable);
    if let Some(p) = &u.password {
        opts = opts.password(p);
    }
    if let Some(schema) = &u.search_path {
        opts = opts.options([("search_path", schema.as_str())]);
    }
    sqlx::PgConnection::connect_with(&opts)
        .await
        .map_err(|e| Error::Connect(format!("{}:{}/{}: {e}", u.host, u.port, u.database)))
}

/// Opens one MySQL or MariaDB connection.
pub async fn connect_mysql(url: &str) -> Result<sqlx::MySqlConnection, Error> {
    let u = parse(url, 3306)?;
    let mut opts = sqlx::mysql::MySqlConnectOptions::new()
        .host(&u.host)
        .port(u.port)
        .username(&u.user)
        .database(&u.database)
        .ssl_mode(sqlx::mysql::MySqlSslMode::Disabled);
    if let Some(p) = &u.password {
        opts = opts.password(p);
    }
    sqlx::MySqlConnection::connect_with(&opts)
        .await
        .map_err(|e| Error::Connect(format!("{}:{}/{}: {e}", u.host, u.port, u.database)))
}

/// A NULL PostgreSQL types itself from where it stands: sqlx declares every parameter's type, and a NULL
/// declared `text` cannot go into an `integer` column. Type OID 0 means "unspecified": the server infers it,
/// as it does for the blocking `postgres` crate, which asks the server first.
struct UntypedNull;

impl sqlx::Type<sqlx::Postgres> for UntypedNull {
    fn type_info() -> sqlx::postgres::PgTypeInfo {
        sqlx::postgres::PgTypeInfo::with_oid(sqlx::postgres::types::Oid(0))
    }
}

impl sqlx::Encode<'_, sqlx::Postgres> for UntypedNull {
    fn encode_by_ref(
        &self,
        _: &mut sqlx::postgres::PgArgumentBuffer,
    ) -> Result<sqlx::encode::IsNull, sqlx::error::BoxDynError> {
        Ok(sqlx::encode::IsNull::Yes)
    }
}

/// `q` with `v` bound as its next PostgreSQL parameter.
pub fn bind_pg<'q>(q: PgQuery<'q>, v: &Value) -> PgQuery<'q> {
    match v {
        Value::Null => q.bind(UntypedNull),
        Value::Bool(b) => q.bind(*b),
        Value::I32(i) => q.bind(*i),
        Value::I64(i) => q.bind(*i),
        Value::F64(f) => q.bind(*f),
        Value::Text(s) => q.bind(s.clone()),
    }
}

/// `q` with `v` bound as its next MySQL parameter.
pub fn bind_mysql<'q>(q: MySqlQuery<'q>, v: &Value) -> MySqlQuery<'q> {
    match v {
        Value::Null => q.bind(None::<String>),
        Value::Bool(b) => q.bind(*b),
        Value::I32(i) => q.bind(*i),
        Value::I64(i) => q.bind(*i),
        Value::F64(f) => q.bind(*f),
        Value::Text(s) => q.bind(s.clone()),
    }
}

fn wrong(what: String) -> DecodeError {
    DecodeError {
        expected: "a column of a type this workshop reads",
        found: Value::Text(what),
    }
}

/// A PostgreSQL row's values, in column order.
pub fn pg_values(row: &sqlx::postgres::PgRow) -> Result<Vec<Value>, DecodeError> {
    (0..row.len())
        .map(|i| {
            let ty = row.column(i).type_info().name().to_owned();
            let err = |e: sqlx::Error| wrong(format!("{ty}: {e}"));
            macro_rules! get {
                ($t:ty, $f:expr) => {
                    row.try_get_unchecked::<Option<$t>, _>(i)
                        .map_err(err)?
                        .map_or(Value::Null, $f)
                };
            }
            Ok(match ty.as_str() {
                "BOOL" => get!(bool, Value::Bool),
                "INT2" => get!(i16, |x| Value::I32(i32::from(x))),
                "INT4" => get!(i32, Value::I32),
                "INT8" => get!(i64, Value::I64),
                "FLOAT4" => get!(f32, |x| Value::F64(f64::from(x))),
                "FLOAT8" => get!(f64, Value::F64),
                "TEXT" | "VARCHAR" | "BPCHAR" | "NAME" | "UNKNOWN" => get!(String, Value::Text),
                other => return Err(wrong(format!("PostgreSQL type {other}"))),
            })
        })
        .collect()
}

/// A MySQL row's values, in column order: integers as `I64`, text as text.
pub fn mysql_values(row: &sqlx::mysql::MySqlRow) -> Result<Vec<Value>, DecodeError> {
    (0..row.len())
        .map(|i| {
            let raw = row.try_get_raw(i).map_err(|e| wrong(e.to_string()))?;
            if raw.is_null() {
                return Ok(Value::Null);
            }
            let ty = row.column(i).type_info().name().to_owned();
            let err = |e: sqlx::Error| wrong(format!("{ty}: {e}"));
            Ok(match ty.as_str() {
                "BOOLEAN" | "TINYINT" | "SMALLINT" | "MEDIUMINT" | "INT" | "BIGINT" => {
                    Value::I64(row.try_get_unchecked::<i64, _>(i).map_err(err)?)
                }
                "FLOAT" => Value::F64(f64::from(row.try_get_unchecked::<f32, _>(i).map_err(err)?)),
                "DOUBLE" => Value::F64(row.try_get_unchecked::<f64, _>(i).map_err(err)?),
                // A text column with a binary collation (stage 1's tables) is named like bytes.
                "BINARY" | "VARBINARY" | "BLOB" | "TINYBLOB" | "MEDIUMBLOB" | "LONGBLOB" => {
                    let bytes = row.try_get_unchecked::<Vec<u8>, _>(i).map_err(err)?;
                    Value::Text(
                        String::from_utf8(bytes)
                            .map_err(|_| wrong("bytes that are not UTF-8".into()))?,
                    )
                }
                _ => Value::Text(row.try_get_unchecked::<String, _>(i).map_err(err)?),
            })
        })
        .collect()
}

/// A sqlx error as stage 4's [`Error`], with the same kinds: the codes of the blocking drivers, read
/// from sqlx's database error.
pub fn error(e: sqlx::Error) -> Error {
    let kind = match &e {
        sqlx::Error::Database(db) => {
            match db.try_downcast_ref::<sqlx::mysql::MySqlDatabaseError>() {
                Some(m) => match m.number() {
                    1213 => DbErrorKind::Deadlock,
                    1205 => DbErrorKind::Busy,
                    1062 => DbErrorKind::UniqueViolation,
                    _ => DbErrorKind::Other,
                },
                None => match db.code().as_deref() {
                    Some("40P01") => DbErrorKind::Deadlock,
                    Some("40001") => DbErrorKind::Serialization,
                    Some("23505") => DbErrorKind::UniqueViolation,
                    _ => DbErrorKind::Other,
                },
            }
        }
        _ => DbErrorKind::Other,
    };
    Error::Db {
        kind,
        message: e.to_string(),
    }
}
