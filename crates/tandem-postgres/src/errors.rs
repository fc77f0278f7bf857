//! tokio-postgres' errors as tandem's: server errors by SQLSTATE (with the constraint name), a closed
//! connection or an I/O failure as [`DbErrorKind::ConnectionLost`], a failed connect naming the URL.

use std::error::Error as StdError;

use tandem_core::{ConnectOptions, DbError, DbErrorKind, Error};
use tandem_sql::Dialect;

/// A failed connect: TLS failures as [`Error::Tls`], a server that refused the connection with its own code
/// (authentication, unknown database) as that, anything else as [`DbErrorKind::ConnectionLost`] naming the
/// URL and every cause.
pub fn connect_error(opts: &ConnectOptions, e: tokio_postgres::Error) -> Error {
    if let Some((kind, cause)) = tandem_core::tls::failure(&e) {
        return Error::tls_caused(opts, kind, cause);
    }
    // The driver says so only in words (tokio-postgres' `connect_tls`): the server answered the TLS
    // request with "no", and the mode does not allow plain TCP.
    if opts.tls.requires_tls() && e.to_string().contains("server does not support TLS") {
        return Error::tls_caused(opts, tandem_core::TlsErrorKind::NotOffered, e);
    }
    match error(e) {
        // Not the server's refusal (those keep their code): the server was not reached. tokio-postgres
        // says only "error connecting to server"; the URL and the causes under it say which and why.
        Error::Database(d) if d.code.is_none() => {
            let mut message = d.message.clone();
            let mut cause = d.source.as_deref().and_then(StdError::source);
            while let Some(c) = cause {
                message = format!("{message}: {c}");
                cause = c.source();
            }
            Error::Database(DbError {
                source: d.source,
                ..DbError::connection_lost(
                    Dialect::Postgres,
                    format!("cannot connect to {}: {message}", opts.display),
                )
            })
        }
        other => other,
    }
}

/// Maps a postgres error: server errors by SQLSTATE (with the constraint name), a closed connection or an
/// I/O failure as [`DbErrorKind::ConnectionLost`].
pub fn error(e: tokio_postgres::Error) -> Error {
    if let Some(db) = e.as_db_error() {
        let classified = DbError {
            dialect: Dialect::Postgres,
            kind: tandem_core::error::classify_postgres(db.code().code()),
            code: Some(db.code().code().to_owned()),
            message: db.message().to_owned(),
            constraint: db.constraint().map(str::to_owned),
            source: None,
        };
        return Error::Database(classified.with_source(e));
    }
    let io = e.source().is_some_and(|s| s.is::<std::io::Error>());
    let kind = if e.is_closed() || io {
        DbErrorKind::ConnectionLost
    } else {
        DbErrorKind::Other
    };
    Error::Database(
        DbError {
            dialect: Dialect::Postgres,
            kind,
            code: None,
            message: e.to_string(),
            constraint: None,
            source: None,
        }
        .with_source(e),
    )
}
