//! mysql (the synchronous MySQL/MariaDB client): statements prepared once per connection (kept by tandem,
//! see [`tandem_mysql::Statements`]), rows read from the socket as they are consumed, TCP always (the client would silently switch 127.0.0.1 to the Unix
//! socket otherwise, which makes comparisons with other drivers unfair).

use mysql::prelude::Queryable;
use mysql::{Conn, OptsBuilder};
use tandem_core::{ConnectOptions, DbErrorKind, Error, Result, TlsErrorKind};
use tandem_mysql::{Kept, Statements};
use tandem_sql::Rendered;

use super::{Done, Sink};

/// One connection and the statements prepared on it.
pub(crate) struct MyConn {
    /// Its statement cache is off: run statements with [`run`] (prepared and kept) or in the text protocol
    /// (`query_*`); one passed as text to `exec*` would be prepared and never closed.
    pub(crate) conn: Conn,
    statements: Statements<mysql::Statement>,
}

pub(crate) fn open(opts: &ConnectOptions, timeout: std::time::Duration) -> Result<MyConn> {
    let conn = connect(opts, timeout)?;
    Ok(MyConn {
        conn,
        statements: Statements::default(),
    })
}

fn connect(opts: &ConnectOptions, timeout: std::time::Duration) -> Result<Conn> {
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
        // Off: `MyConn` keeps its prepared statements itself (see `tandem_mysql::Statements`).
        .stmt_cache_size(Some(0))
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
    if !opts.tls.requires_tls() && tandem_mysql::plain_only::known(opts) {
        return Conn::new(plain).map_err(error);
    }
    match Conn::new(plain.clone().ssl_opts(ssl)) {
        Ok(conn) => Ok(conn),
        // `PREFERRED`: a server without TLS is talked to in plain TCP.
        Err(mysql::Error::DriverError(mysql::DriverError::TlsNotSupported))
            if !opts.tls.requires_tls() =>
        {
            tandem_mysql::plain_only::remember(opts);
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

/// The `mysql` crate's TLS settings for the URL's `ssl-mode` (see [`tandem_mysql::Tls`]).
fn ssl_opts(opts: &ConnectOptions) -> Result<Option<mysql::SslOpts>> {
    Ok(tandem_mysql::Tls::of(opts)?.map(|tls| {
        mysql::SslOpts::default()
            .with_root_cert_path(tls.root)
            .with_danger_accept_invalid_certs(tls.accept_invalid_certs)
            .with_danger_skip_domain_validation(tls.skip_domain_validation)
    }))
}

pub(crate) fn run(c: &mut MyConn, r: &Rendered, sink: &mut Sink<'_>) -> Result<Done> {
    let params = tandem_mysql::params(&r.params)?;
    let MyConn { conn, statements } = c;
    if statements.get(&r.sql).is_none() {
        let statement = conn.prep(r.sql.as_str()).map_err(error)?;
        if let Some(gone) = statements.keep(&r.sql, Kept::new(statement)) {
            conn.close(gone.statement).map_err(error)?;
        }
    }
    let kept = statements.get(&r.sql).expect("prepared just above");
    let mut result = conn.exec_iter(&kept.statement, params).map_err(error)?;
    let Some(mut set) = result.iter() else {
        return Ok(Done::default());
    };
    let columns = kept.columns(set.columns().as_ref().into());
    if columns.is_empty() {
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
    for row in set.by_ref() {
        let row = row.map_err(error)?;
        if !sink(&mut columns.cells(row.unwrap()))? {
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

/// The distance between the keys a multi-row INSERT generated, read on the connection that ran it (see
/// [`tandem_mysql::wants_key_step`]).
fn key_step(conn: &mut Conn, r: &Rendered, done: &Done) -> Result<Option<i64>> {
    if !tandem_mysql::wants_key_step(r, done) {
        return Ok(None);
    }
    conn.query_first::<i64, _>(tandem_mysql::KEY_STEP_SQL)
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
    let db = match &e {
        mysql::Error::MySqlError(m) => tandem_mysql::server_error(m.code, m.message.clone()),
        // A socket timeout: the server sent nothing for `socket_timeout` (`Conn::note` names it).
        mysql::Error::IoError(_) | mysql::Error::CodecError(_) if timed_out(&e) => {
            tandem_mysql::driver_error(DbErrorKind::NoAnswer, e.to_string())
        }
        mysql::Error::IoError(_) | mysql::Error::CodecError(_) => {
            tandem_mysql::driver_error(DbErrorKind::ConnectionLost, e.to_string())
        }
        mysql::Error::DriverError(d) => {
            let lost = matches!(
                d,
                mysql::DriverError::CouldNotConnect(_)
                    | mysql::DriverError::ConnectTimeout
                    | mysql::DriverError::PacketOutOfSync
                    | mysql::DriverError::UnexpectedPacket
            );
            let kind = match lost {
                true => DbErrorKind::ConnectionLost,
                false => DbErrorKind::Other,
            };
            // The driver's own words, without `DriverError { … }` around them.
            tandem_mysql::driver_error(kind, d.to_string())
        }
        _ => tandem_mysql::driver_error(DbErrorKind::Other, e.to_string()),
    };
    Error::Database(db.with_source(e))
}
