//! mysql (the synchronous MySQL/MariaDB client): prepared statements (the client caches them), rows read
//! from the socket as they are consumed, TCP always (the client would silently switch 127.0.0.1 to the Unix
//! socket otherwise, which makes comparisons with other drivers unfair).

use mysql::consts::{ColumnFlags, ColumnType};
use mysql::prelude::Queryable;
use mysql::{Conn, OptsBuilder, Params};
use tandem_core::{ConnectOptions, DbError, DbErrorKind, Error, Result, TlsErrorKind, TlsMode};
use tandem_sql::{Dialect, Rendered, Row, SqlType, Value};

use super::{Done, Sink, names};

pub(crate) fn open(opts: &ConnectOptions, timeout: std::time::Duration) -> Result<Conn> {
    let plain = OptsBuilder::new()
        .ip_or_hostname(Some(opts.host.clone()))
        .tcp_port(opts.port)
        .user(Some(opts.user.clone()))
        .pass(opts.password.clone())
        .db_name(Some(opts.database.clone()))
        .prefer_socket(false)
        .tcp_connect_timeout(Some(timeout))
        // Each read and write waits at most `socket_timeout` (the socket's own timeouts).
        .read_timeout(opts.socket_timeout)
        .write_timeout(opts.socket_timeout)
        .stmt_cache_size(Some(64))
        .init(opts.session_statements())
        // Affected rows count matched rows, as on PostgreSQL and SQLite, and as sqlx always asks for.
        .additional_capabilities(mysql::consts::CapabilityFlags::CLIENT_FOUND_ROWS);
    // Data the kernel cannot get acknowledged for that long (a partition, a host gone) closes the socket.
    #[cfg(target_os = "linux")]
    let plain = plain.tcp_user_timeout_ms(
        opts.socket_timeout
            .map(|t| u32::try_from(t.as_millis()).unwrap_or(u32::MAX)),
    );
    let Some(ssl) = ssl_opts(opts)? else {
        return Conn::new(plain).map_err(error);
    };
    // `PREFERRED` to a server known to refuse TLS: plain TCP at once, not a refused attempt first.
    if !opts.tls.requires_tls() && plain_only::known(opts) {
        return Conn::new(plain).map_err(error);
    }
    match Conn::new(plain.clone().ssl_opts(ssl)) {
        Ok(conn) => Ok(conn),
        // `PREFERRED`: a server without TLS is talked to in plain TCP.
        Err(mysql::Error::DriverError(mysql::DriverError::TlsNotSupported))
            if !opts.tls.requires_tls() =>
        {
            plain_only::remember(opts);
            Conn::new(plain).map_err(error)
        }
        Err(mysql::Error::DriverError(mysql::DriverError::TlsNotSupported)) => Err(Error::tls(
            opts,
            TlsErrorKind::NotOffered,
            mysql::DriverError::TlsNotSupported.to_string(),
        )),
        Err(e) => Err(match tandem_core::tls::failure(&e) {
            Some((kind, cause)) => Error::tls_caused(opts, kind, cause),
            None => error(e),
        }),
    }
}

/// Servers that refused TLS to a `PREFERRED` connection lately: the `mysql` crate learns it only by trying
/// (the server's greeting comes after the TCP connect), so without this every connection to such a
/// server would be made twice. Kept per `host:port` for a while, then tried again (a server may turn TLS
/// on).
mod plain_only {
    use std::collections::HashMap;
    use std::sync::Mutex;
    use std::time::{Duration, Instant};

    use tandem_core::ConnectOptions;

    const FOR: Duration = Duration::from_secs(300);

    static SEEN: Mutex<Option<HashMap<String, Instant>>> = Mutex::new(None);

    pub(super) fn known(opts: &ConnectOptions) -> bool {
        let seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
        seen.as_ref()
            .and_then(|m| m.get(&opts.target()))
            .is_some_and(|at| at.elapsed() < FOR)
    }

    pub(super) fn remember(opts: &ConnectOptions) {
        let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
        seen.get_or_insert_with(HashMap::new)
            .insert(opts.target(), Instant::now());
    }
}

/// The `mysql` crate's TLS settings for the URL's `ssl-mode`: `PREFERRED` and `REQUIRED` take any
/// certificate, `VERIFY_CA` checks the chain only, `VERIFY_IDENTITY` the chain and the host. The root file
/// is read first, so that a bad one is the same typed error on every driver.
fn ssl_opts(opts: &ConnectOptions) -> Result<Option<mysql::SslOpts>> {
    if opts.tls == TlsMode::Disable {
        return Ok(None);
    }
    tandem_core::tls::root_certificates(opts)?;
    let ssl = mysql::SslOpts::default()
        .with_root_cert_path(opts.tls_root_cert.clone())
        .with_danger_accept_invalid_certs(!opts.tls.verifies_chain())
        .with_danger_skip_domain_validation(!opts.tls.verifies_host());
    Ok(Some(ssl))
}

fn bind(v: &Value) -> Result<mysql::Value> {
    Ok(match v {
        Value::Null(_) => mysql::Value::NULL,
        Value::Bool(b) => mysql::Value::Int(i64::from(*b)),
        Value::I16(i) => mysql::Value::Int(i64::from(*i)),
        Value::I32(i) => mysql::Value::Int(i64::from(*i)),
        Value::I64(i) => mysql::Value::Int(*i),
        Value::F32(f) => mysql::Value::Float(*f),
        Value::F64(f) => mysql::Value::Double(*f),
        Value::Text(s) => mysql::Value::Bytes(s.as_bytes().to_vec()),
        Value::Bytes(b) => mysql::Value::Bytes(b.clone()),
        #[cfg(feature = "uuid")]
        Value::Uuid(u) => mysql::Value::Bytes(u.as_bytes().to_vec()),
        #[cfg(feature = "chrono")]
        v @ (Value::Date(_) | Value::Time(_) | Value::Timestamp(_) | Value::TimestampTz(_)) => {
            mysql::Value::Bytes(v.portable_text().unwrap_or_default().into_bytes())
        }
        other => return Err(super::unsupported_value(Dialect::MySql, other)),
    })
}

/// The binary collation's charset number: byte strings, not text.
const BINARY_CHARSET: u16 = 63;

fn decode(v: mysql::Value, col: &mysql::Column) -> Result<Value> {
    let err = |message: String| Error::Decode {
        dialect: Dialect::MySql,
        column_type: format!("{:?}", col.column_type()),
        message,
        source: None,
    };
    Ok(match v {
        mysql::Value::NULL => Value::Null(SqlType::Text),
        mysql::Value::Int(i) => Value::I64(i),
        mysql::Value::UInt(u) => {
            Value::I64(i64::try_from(u).map_err(|_| err(format!("{u} does not fit in i64")))?)
        }
        mysql::Value::Float(f) => Value::F32(f),
        mysql::Value::Double(f) => Value::F64(f),
        mysql::Value::Bytes(b) => match col.column_type() {
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
        mysql::Value::Date(y, mo, d, h, mi, s, us) => Value::Text(match col.column_type() {
            ColumnType::MYSQL_TYPE_DATE => format!("{y:04}-{mo:02}-{d:02}"),
            _ => format!("{y:04}-{mo:02}-{d:02} {h:02}:{mi:02}:{s:02}.{us:06}"),
        }),
        mysql::Value::Time(false, 0, h, mi, s, us) => {
            Value::Text(format!("{h:02}:{mi:02}:{s:02}.{us:06}"))
        }
        other => {
            return Err(Error::Unsupported {
                dialect: Dialect::MySql,
                what: format!("the value {other:?} of a {:?} column", col.column_type()),
            });
        }
    })
}

pub(crate) fn run(conn: &mut Conn, r: &Rendered, sink: &mut Sink<'_>) -> Result<Done> {
    let params = if r.params.is_empty() {
        Params::Empty
    } else {
        Params::Positional(r.params.iter().map(bind).collect::<Result<_>>()?)
    };
    let mut result = conn.exec_iter(r.sql.as_str(), params).map_err(error)?;
    let Some(mut set) = result.iter() else {
        return Ok(Done::default());
    };
    let cols: Vec<mysql::Column> = set.columns().as_ref().to_vec();
    if cols.is_empty() {
        let done = Done {
            affected: set.affected_rows(),
            last_insert_id: set
                .last_insert_id()
                .and_then(|id| i64::try_from(id).ok())
                .filter(|id| *id != 0),
            key_step: None,
        };
        drop(set);
        drop(result);
        return Ok(Done {
            key_step: key_step(conn, r, &done)?,
            ..done
        });
    }
    let names = names(cols.iter().map(|c| c.name_str().into_owned()));
    for row in set.by_ref() {
        let row = row.map_err(error)?;
        let values = row
            .unwrap()
            .into_iter()
            .zip(&cols)
            .map(|(v, c)| decode(v, c))
            .collect::<Result<Vec<_>>>()?;
        if !sink(Row::new(names.clone(), values))? {
            // Dropping the result reads the rows left, so the connection is ready for the next statement.
            return Ok(Done::default());
        }
    }
    Ok(Done {
        affected: set.affected_rows(),
        last_insert_id: None,
        key_step: None,
    })
}

/// The distance between the keys a multi-row INSERT generated, read on the connection that ran it: the
/// session's `auto_increment_increment` (a Galera node sets it to the cluster's size). Only when the
/// statement's keys are wanted and there are several of them: one round trip that most calls never make.
fn key_step(conn: &mut Conn, r: &Rendered, done: &Done) -> Result<Option<i64>> {
    if done.affected < 2
        || done.last_insert_id.is_none()
        || !tandem_core::repo::wants_last_insert_id(r)
    {
        return Ok(None);
    }
    conn.query_first::<i64, _>("SELECT @@SESSION.auto_increment_increment")
        .map_err(error)
}

/// Maps a mysql error: server errors by number, I/O and closed connections as connection lost.
/// Whether an I/O failure is the socket's read or write timeout (`EAGAIN` on Linux), directly or inside
/// the packet codec's error.
fn timed_out(e: &mysql::Error) -> bool {
    let io = match e {
        mysql::Error::IoError(io) => Some(io),
        mysql::Error::CodecError(c) => {
            std::error::Error::source(c).and_then(|s| s.downcast_ref::<std::io::Error>())
        }
        _ => None,
    };
    io.is_some_and(|io| {
        matches!(
            io.kind(),
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
        )
    })
}

pub(crate) fn error(e: mysql::Error) -> Error {
    let (kind, code, message) = match &e {
        mysql::Error::MySqlError(m) => (
            tandem_core::error::classify_mysql(m.code),
            Some(m.code.to_string()),
            m.message.clone(),
        ),
        // A socket timeout: the server sent nothing for `socket_timeout` (`Conn::note` names it).
        mysql::Error::IoError(_) | mysql::Error::CodecError(_) if timed_out(&e) => {
            (DbErrorKind::NoAnswer, None, e.to_string())
        }
        mysql::Error::IoError(_) | mysql::Error::CodecError(_) => {
            (DbErrorKind::ConnectionLost, None, e.to_string())
        }
        mysql::Error::DriverError(d) => {
            let lost = matches!(
                d,
                mysql::DriverError::CouldNotConnect(_)
                    | mysql::DriverError::ConnectTimeout
                    | mysql::DriverError::PacketOutOfSync
                    | mysql::DriverError::UnexpectedPacket
            );
            (
                if lost {
                    DbErrorKind::ConnectionLost
                } else {
                    DbErrorKind::Other
                },
                None,
                // The driver's own words, without `DriverError { … }` around them.
                d.to_string(),
            )
        }
        _ => (DbErrorKind::Other, None, e.to_string()),
    };
    let constraint = tandem_core::error::mysql_constraint(&message);
    Error::Database(
        DbError {
            dialect: Dialect::MySql,
            kind,
            code,
            message,
            constraint,
            source: None,
        }
        .with_source(e),
    )
}
