//! `tandem-mysql`: what tandem's two MySQL/MariaDB drivers share. The blocking executor talks to the server
//! through `mysql`, the async one through `mysql_async`; both crates speak the protocol through
//! `mysql_common`, so a value sent or received is the same [`mysql_common::Value`] and a result's column
//! the same [`Column`] on either side. What is written here once:
//!
//! - [`bind`] and [`params`]: tandem's values as the protocol's (booleans as integers, dates as portable
//!   text, UUIDs as 16 bytes);
//! - [`decode`], [`Columns`] and [`MyCells`]: a received row as tandem's [`Cells`], column names read once per result;
//! - [`server_error`] and [`driver_error`]: errors classified by the server's number, with the constraint a
//!   violation names;
//! - [`Tls`]: the URL's `ssl-mode` as the settings both crates' TLS options take, and [`plain_only`], the
//!   servers a `PREFERRED` connection found without TLS;
//! - [`wants_key_step`]: when a multi-row INSERT must ask how far apart its keys are;
//! - [`Statements`]: the statements a connection prepared, kept by tandem rather than in the driver's cache
//!   (each driver's cache parses and hashes the SQL text on every call).
//!
//! What stays in each executor is how a call waits: on the socket's own timeouts (blocking), or on the
//! runtime's timer (async).

use std::path::PathBuf;
use std::sync::Arc;

use mysql_common::Value as Wire;
use mysql_common::constants::{ColumnFlags, ColumnType};
pub use mysql_common::packets::Column;
use mysql_common::params::Params;
use tandem_core::plan::Done;
use tandem_core::{ConnectOptions, DbError, DbErrorKind, Error, Result, TlsMode};
use tandem_sql::{Cells, Dialect, Rendered, SqlType, Value};

/// One value as the protocol sends it.
pub fn bind(v: &Value) -> Result<Wire> {
    Ok(match v {
        Value::Null(_) => Wire::NULL,
        Value::Bool(b) => Wire::Int(i64::from(*b)),
        Value::I16(i) => Wire::Int(i64::from(*i)),
        Value::I32(i) => Wire::Int(i64::from(*i)),
        Value::I64(i) => Wire::Int(*i),
        Value::F32(f) => Wire::Float(*f),
        Value::F64(f) => Wire::Double(*f),
        Value::Text(s) => Wire::Bytes(s.as_bytes().to_vec()),
        Value::Bytes(b) => Wire::Bytes(b.clone()),
        #[cfg(feature = "uuid")]
        Value::Uuid(u) => Wire::Bytes(u.as_bytes().to_vec()),
        #[cfg(feature = "chrono")]
        v @ (Value::Date(_) | Value::Time(_) | Value::Timestamp(_) | Value::TimestampTz(_)) => {
            Wire::Bytes(v.portable_text().unwrap_or_default().into_bytes())
        }
        #[allow(unreachable_patterns)]
        other => {
            return Err(Error::Unsupported {
                dialect: Dialect::MySql,
                what: format!("{} values", other.kind_name()),
            });
        }
    })
}

/// A statement's parameters as the protocol sends them.
pub fn params(values: &[Value]) -> Result<Params> {
    if values.is_empty() {
        return Ok(Params::Empty);
    }
    Ok(Params::Positional(
        values.iter().map(bind).collect::<Result<_>>()?,
    ))
}

/// The binary collation's charset number: byte strings, not text.
const BINARY_CHARSET: u16 = 63;

/// One received value as tandem's, read by its column's type: integers as `I64`, `DECIMAL` as an integer
/// when it is one, byte strings as bytes and text as text, dates and times as the portable text tandem-sql
/// reads them from.
pub fn decode(v: Wire, col: &Column) -> Result<Value> {
    let err = |message: String| Error::Decode {
        dialect: Dialect::MySql,
        column_type: format!("{:?}", col.column_type()),
        message,
        source: None,
    };
    Ok(match v {
        Wire::NULL => Value::Null(SqlType::Text),
        Wire::Int(i) => Value::I64(i),
        Wire::UInt(u) => {
            Value::I64(i64::try_from(u).map_err(|_| err(format!("{u} does not fit in i64")))?)
        }
        Wire::Float(f) => Value::F32(f),
        Wire::Double(f) => Value::F64(f),
        Wire::Bytes(b) => match col.column_type() {
            // DECIMAL arrives as text; tandem's SUM/AVG casts avoid it, hand-written SQL may not.
            ColumnType::MYSQL_TYPE_NEWDECIMAL | ColumnType::MYSQL_TYPE_DECIMAL => {
                let s = String::from_utf8_lossy(&b);
                match s.parse::<i64>() {
                    Ok(i) => Value::I64(i),
                    Err(_) => Value::F64(
                        s.parse()
                            .map_err(|_| err(format!("{s:?} is not a number")))?,
                    ),
                }
            }
            _ if col.character_set() == BINARY_CHARSET
                && !col.flags().contains(ColumnFlags::ENUM_FLAG) =>
            {
                Value::Bytes(b)
            }
            _ => Value::Text(String::from_utf8(b).map_err(|e| err(format!("not UTF-8: {e}")))?),
        },
        // Dates and times from the binary protocol, as the portable text tandem-sql reads them from.
        Wire::Date(y, mo, d, h, mi, s, us) => Value::Text(match col.column_type() {
            ColumnType::MYSQL_TYPE_DATE => format!("{y:04}-{mo:02}-{d:02}"),
            _ => format!("{y:04}-{mo:02}-{d:02} {h:02}:{mi:02}:{s:02}.{us:06}"),
        }),
        Wire::Time(false, 0, h, mi, s, us) => Value::Text(format!("{h:02}:{mi:02}:{s:02}.{us:06}")),
        other => {
            return Err(Error::Unsupported {
                dialect: Dialect::MySql,
                what: format!("the value {other:?} of a {:?} column", col.column_type()),
            });
        }
    })
}

/// A result's columns and their names, the names read once for all its rows (the rows share them).
pub struct Columns {
    columns: Arc<[Column]>,
    names: Arc<[String]>,
}

impl Columns {
    /// The columns of one result.
    pub fn new(columns: Arc<[Column]>) -> Columns {
        let names = columns
            .iter()
            .map(|c| c.name_str().into_owned())
            .collect::<Vec<_>>()
            .into();
        Columns { columns, names }
    }

    /// The columns of one result, with the names of an earlier result of the same statement when they
    /// are still its columns' (a table altered since would change a `SELECT *`): no allocation per name.
    pub fn reusing(columns: Arc<[Column]>, earlier: Option<&Arc<[String]>>) -> Columns {
        match earlier {
            Some(names)
                if names.len() == columns.len()
                    && (names.iter().zip(columns.iter()))
                        .all(|(n, c)| n.as_bytes() == c.name_ref()) =>
            {
                Columns {
                    columns,
                    names: names.clone(),
                }
            }
            _ => Columns::new(columns),
        }
    }

    /// The columns' names.
    pub fn names(&self) -> &Arc<[String]> {
        &self.names
    }

    /// Whether the result has no columns (a statement that returns no rows).
    pub fn is_empty(&self) -> bool {
        self.columns.is_empty()
    }

    /// One received row, its values in column order, decoded as its reader takes them.
    pub fn cells(&self, values: Vec<Wire>) -> MyCells<'_> {
        MyCells {
            columns: self,
            values,
        }
    }
}

/// A received row, each value decoded ([`decode`]) when its reader takes it (see [`Cells`]).
pub struct MyCells<'c> {
    columns: &'c Columns,
    values: Vec<Wire>,
}

impl Cells for MyCells<'_> {
    type Error = Error;
    fn columns(&self) -> &Arc<[String]> {
        &self.columns.names
    }
    fn len(&self) -> usize {
        self.values.len().min(self.columns.columns.len())
    }
    fn take(&mut self, i: usize) -> Result<Value> {
        let (Some(wire), Some(column)) = (self.values.get_mut(i), self.columns.columns.get(i))
        else {
            return Err(tandem_sql::row::past_the_end(i, self.len()).into());
        };
        decode(std::mem::replace(wire, Wire::NULL), column)
    }
}

/// The statements one connection prepared (a driver's `Statement`, `S`), by SQL text, with the column names
/// of each one's last result; the least recently used one let go past
/// [`STATEMENTS_KEPT`](tandem_core::statements::STATEMENTS_KEPT). Both drivers' own statement caches are
/// turned off: a statement passed to them as text is parsed for named parameters and hashed into the
/// cache on every call (~3,400 of a point read's ~26,000 instructions on mysql_async); one passed prepared
/// is neither. With their caches off, the drivers close nothing themselves: a statement let go must be
/// closed by the caller ([`Statements::keep`](tandem_core::statements::Statements::keep) hands it back),
/// and a statement run *as text* on such a connection is prepared and never closed — run every statement
/// through here.
pub type Statements<S> = tandem_core::statements::Statements<Kept<S>>;

/// A prepared statement, and the names of its last result's columns.
pub struct Kept<S> {
    /// The driver's statement.
    pub statement: S,
    names: Option<Arc<[String]>>,
}

impl<S> Kept<S> {
    /// A statement just prepared: no result's names yet.
    pub fn new(statement: S) -> Self {
        Kept {
            statement,
            names: None,
        }
    }

    /// The columns of a result of this statement, with the names of its last result when they are still
    /// its columns' (an altered table changes a `SELECT *`'s): no allocation per name.
    pub fn columns(&mut self, columns: Arc<[Column]>) -> Columns {
        let columns = Columns::reusing(columns, self.names.as_ref());
        if !(self.names.as_ref()).is_some_and(|names| Arc::ptr_eq(names, columns.names())) {
            self.names = Some(columns.names().clone());
        }
        columns
    }
}

/// A server's error, by its number (see [`tandem_core::error::classify_mysql`]), with the constraint a
/// violation names. The caller adds the driver's error as its source.
pub fn server_error(code: u16, message: String) -> DbError {
    DbError {
        dialect: Dialect::MySql,
        kind: tandem_core::error::classify_mysql(code),
        code: Some(code.to_string()),
        constraint: tandem_core::error::mysql_constraint(&message),
        message,
        source: None,
    }
}

/// An error of the driver or the connection, not the server's, in the driver's own words.
pub fn driver_error(kind: DbErrorKind, message: String) -> DbError {
    DbError {
        dialect: Dialect::MySql,
        kind,
        code: None,
        message,
        constraint: None,
        source: None,
    }
}

/// The statement that reads how far apart the keys of a multi-row INSERT are: the session's
/// `auto_increment_increment` (a Galera node sets it to the cluster's size).
pub const KEY_STEP_SQL: &str = "SELECT @@SESSION.auto_increment_increment";

/// Whether a statement that did `done` must read [`KEY_STEP_SQL`] on its connection: only when its keys
/// are wanted and there are several of them — one round trip that most calls never make.
pub fn wants_key_step(r: &Rendered, done: &Done) -> bool {
    done.affected >= 2
        && done.last_insert_id.is_some()
        && tandem_core::repo::wants_last_insert_id(r)
}

/// The URL's `ssl-mode` as both drivers' TLS options take it: `PREFERRED` and `REQUIRED` take any
/// certificate, `VERIFY_CA` checks the chain only, `VERIFY_IDENTITY` the chain and the host.
pub struct Tls {
    /// The root certificates to trust (`ssl-ca=`), besides the built-in ones.
    pub root: Option<PathBuf>,
    /// Whether any certificate will do.
    pub accept_invalid_certs: bool,
    /// Whether the certificate may name another host.
    pub skip_domain_validation: bool,
}

impl Tls {
    /// The settings for `opts`, `None` when TLS is off. The root file is read first, so that a bad one is
    /// the same typed error on every driver.
    pub fn of(opts: &ConnectOptions) -> Result<Option<Tls>> {
        if opts.tls == TlsMode::Disable {
            return Ok(None);
        }
        tandem_core::tls::root_certificates(opts)?;
        Ok(Some(Tls {
            root: opts.tls_root_cert.clone(),
            accept_invalid_certs: !opts.tls.verifies_chain(),
            skip_domain_validation: !opts.tls.verifies_host(),
        }))
    }
}

/// Servers that refused TLS to a `PREFERRED` connection lately: the drivers learn it only by trying (the
/// server's greeting comes after the TCP connect), so without this every connection to such a server would
/// be made twice. Kept per `host:port` for a while, then tried again (a server may turn TLS on).
pub mod plain_only {
    use std::collections::HashMap;
    use std::sync::Mutex;
    use std::time::{Duration, Instant};

    use tandem_core::ConnectOptions;

    const FOR: Duration = Duration::from_secs(300);

    static SEEN: Mutex<Option<HashMap<String, Instant>>> = Mutex::new(None);

    /// Whether `opts`' server refused TLS lately.
    pub fn known(opts: &ConnectOptions) -> bool {
        let seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
        seen.as_ref()
            .and_then(|m| m.get(&opts.target()))
            .is_some_and(|at| at.elapsed() < FOR)
    }

    /// Remembers that `opts`' server refused TLS.
    pub fn remember(opts: &ConnectOptions) {
        let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
        seen.get_or_insert_with(HashMap::new)
            .insert(opts.target(), Instant::now());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_bind_as_the_protocol_sends_them() {
        assert_eq!(bind(&Value::Bool(true)).unwrap(), Wire::Int(1));
        assert_eq!(bind(&Value::I16(-3)).unwrap(), Wire::Int(-3));
        assert_eq!(
            bind(&Value::Text("é".into())).unwrap(),
            Wire::Bytes("é".as_bytes().to_vec())
        );
        assert_eq!(bind(&Value::Null(SqlType::BigInt)).unwrap(), Wire::NULL);
        assert!(matches!(params(&[]).unwrap(), Params::Empty));
        match params(&[Value::I64(7), Value::F64(0.5)]).unwrap() {
            Params::Positional(v) => assert_eq!(v, vec![Wire::Int(7), Wire::Double(0.5)]),
            other => panic!("{other:?}"),
        }
    }

    fn column(t: ColumnType, charset: u16) -> Column {
        Column::new(t).with_name(b"c").with_character_set(charset)
    }

    #[test]
    fn values_decode_by_their_column() {
        let text = column(ColumnType::MYSQL_TYPE_VAR_STRING, 45);
        let blob = column(ColumnType::MYSQL_TYPE_BLOB, BINARY_CHARSET);
        let dec = column(ColumnType::MYSQL_TYPE_NEWDECIMAL, BINARY_CHARSET);
        let date = column(ColumnType::MYSQL_TYPE_DATE, BINARY_CHARSET);
        let b = |s: &str| Wire::Bytes(s.as_bytes().to_vec());
        assert_eq!(decode(b("x"), &text).unwrap(), Value::Text("x".into()));
        assert_eq!(decode(b("x"), &blob).unwrap(), Value::Bytes(b"x".to_vec()));
        assert_eq!(decode(b("12"), &dec).unwrap(), Value::I64(12));
        assert_eq!(decode(b("1.5"), &dec).unwrap(), Value::F64(1.5));
        assert_eq!(
            decode(Wire::Date(2026, 12, 6, 0, 0, 0, 0), &date).unwrap(),
            Value::Text("2026-12-06".into())
        );
        // What tandem cannot read is a typed error naming the column's type, not a panic or a guess.
        let e = decode(b("abc"), &dec).unwrap_err();
        assert!(matches!(e, Error::Decode { .. }), "{e}");
        assert!(e.to_string().contains("NEWDECIMAL"), "{e}");
        let e = decode(Wire::UInt(u64::MAX), &text).unwrap_err();
        assert!(e.to_string().contains("does not fit"), "{e}");
        let e = decode(vec![0xff, 0xfe].into(), &text).unwrap_err();
        assert!(e.to_string().contains("UTF-8"), "{e}");
    }

    #[test]
    fn a_result_names_its_columns_once() {
        let cols: Arc<[Column]> = vec![
            Column::new(ColumnType::MYSQL_TYPE_LONGLONG).with_name(b"id"),
            Column::new(ColumnType::MYSQL_TYPE_VAR_STRING)
                .with_name(b"name")
                .with_character_set(45),
        ]
        .into();
        let columns = Columns::new(cols);
        let one = columns.cells(vec![Wire::Int(1), "a".into()]).row().unwrap();
        let two = columns.cells(vec![Wire::Int(2), "b".into()]).row().unwrap();
        assert_eq!(one.get::<i64>("id").unwrap(), 1);
        assert_eq!(two.get::<String>("name").unwrap(), "b");
        assert!(std::ptr::eq(one.columns(), two.columns()));
        // The next result of the statement reuses the names; a result whose columns changed does not.
        let cols = |second: &[u8]| -> Arc<[Column]> {
            vec![
                Column::new(ColumnType::MYSQL_TYPE_LONGLONG).with_name(b"id"),
                Column::new(ColumnType::MYSQL_TYPE_LONGLONG).with_name(second),
            ]
            .into()
        };
        let again = Columns::reusing(cols(b"name"), Some(columns.names()));
        assert!(Arc::ptr_eq(again.names(), columns.names()));
        let altered = Columns::reusing(cols(b"email"), Some(columns.names()));
        assert_eq!(&altered.names()[..], ["id", "email"]);
        let fewer: Arc<[Column]> =
            vec![Column::new(ColumnType::MYSQL_TYPE_LONGLONG).with_name(b"id")].into();
        assert_eq!(
            Columns::reusing(fewer, Some(columns.names())).names().len(),
            1
        );
    }

    #[test]
    fn server_errors_are_classified_by_number() {
        let dup = server_error(1062, "Duplicate entry '1' for key 'users.uq_email'".into());
        assert_eq!(dup.kind, DbErrorKind::UniqueViolation);
        assert_eq!(dup.code.as_deref(), Some("1062"));
        assert_eq!(dup.constraint.as_deref(), Some("uq_email"));
        assert_eq!(
            server_error(1213, "Deadlock".into()).kind,
            DbErrorKind::Deadlock
        );
    }
}
