//! MySQL and MariaDB on mysql_async for the async executor, in tandem's own pool ([`NativePool`]).
//! mysql_async and the blocking executor's `mysql` speak the protocol through the same crate
//! (`mysql_common`), and what both need of it — values, columns, errors, TLS settings — is written once
//! in `tandem-mysql`; what is left here is how a call waits: each step of it on the runtime's timer,
//! bounded by `socket_timeout`.
//!
//! As on PostgreSQL ([`crate::postgres`]), and unlike sqlx's pool: every new connection walks the URL's
//! servers, so each connection knows — and names, when it falls silent — the server it is on; the check
//! of a suspect idle connection is bounded; a connection closed for any reason is closed at once (its
//! socket shut, the server rolling back what it was left in), never drained on a task of its own first.
//!
//! What mysql_async does not let tandem do: set `TCP_USER_TIMEOUT` on its socket (it sets keepalive, and
//! opens the socket itself). Every wait is bounded by tandem's timer all the same; the kernel just does
//! not close a socket whose data goes unacknowledged sooner.

use std::time::Duration;

use futures_util::FutureExt;
use mysql_async::prelude::Queryable;
use tandem_core::hosts::Remote;
use tandem_core::plan::Done;
use tandem_core::{
    ConnectOptions, DbError, DbErrorKind, Error, HostWalk, Result, TlsErrorKind, Verdict,
};
use tandem_mysql::{Kept, Statements, plain_only};
use tandem_pool::WaitTimer;
use tandem_sql::{Dialect, Rendered};

use crate::native::{NativePool, Opener, Pooled};
use crate::sink::Sink;

/// Opens the connections of one MySQL/MariaDB database.
pub(crate) struct MyOpener {
    pub(crate) options: ConnectOptions,
    pub(crate) connect_timeout: Duration,
}

/// One connection, the server it is on, and its prepared statements.
pub(crate) struct MyLink {
    /// `None` once closed.
    conn: Option<mysql_async::Conn>,
    /// The server: a call it left unanswered names it, and marks it silent for the host walks.
    pub(crate) remote: Option<Remote>,
    /// `socket_timeout`: the longest one wait for the server may take.
    bound: Option<Duration>,
    /// Set when a wait outlived `bound`: the connection is out of step and is never used again.
    silent: bool,
    /// The one timer of this connection's waits (see [`WaitTimer`]).
    timer: WaitTimer,
    /// The statements prepared on this connection (mysql_async's own cache is off, see [`Statements`]:
    /// anything run on `conn` goes through [`MyLink::run`] or the text protocol, never `exec*` with text).
    statements: Statements<mysql_async::Statement>,
}

/// The connections of one MySQL/MariaDB database.
pub(crate) type MyPool = NativePool<MyOpener>;

/// A connection checked out of its pool.
pub(crate) type PooledMy = Pooled<MyOpener>;

impl Opener for MyOpener {
    type Conn = MyLink;

    /// The first server of the URL's list that answers within the connect timeout (the walk of
    /// `tandem_core::hosts`, the same as the blocking pool's); a URL with one server is not walked.
    async fn open(&self) -> Result<MyLink> {
        if !self.options.chooses_server() {
            return connect_one(&self.options, self.connect_timeout).await;
        }
        let mut walk = HostWalk::new(&self.options);
        while let Some(server) = walk.next_server() {
            match connect_one(&server, self.connect_timeout).await {
                // `target_session_attrs=` is PostgreSQL's: a MySQL walk takes the first server that answers.
                Ok(link) if walk.judge(&server, None) == Verdict::Take => return Ok(link),
                Ok(_) => {}
                Err(e) => walk.failed(&server, e),
            }
        }
        Err(walk.into_error())
    }

    /// A connection that closed, or whose server fell silent, is not handed out again.
    fn fit(link: &MyLink) -> bool {
        link.conn.is_some() && !link.silent && !link.remote.as_ref().is_some_and(Remote::is_silent)
    }

    async fn answers(link: &mut MyLink) -> bool {
        link.answers().await
    }
}

/// mysql_async's options for the one server `opts` names: TCP always (mysql_async would switch a local
/// address to the Unix socket otherwise, which makes comparisons with other drivers unfair), matched rows
/// counted as affected (as on PostgreSQL and SQLite, and as the blocking driver asks), the URL's session
/// settings, keepalive after `socket_timeout` of silence.
fn options(opts: &ConnectOptions) -> mysql_async::OptsBuilder {
    mysql_async::OptsBuilder::default()
        .ip_or_hostname(opts.host.clone())
        .tcp_port(opts.port)
        .user(Some(opts.user.clone()))
        .pass(opts.password.clone())
        .db_name(Some(opts.database.clone()))
        .prefer_socket(false)
        // Off: `MyLink` keeps its prepared statements itself (see `Statements`).
        .stmt_cache_size(0)
        .init(opts.session_statements())
        .client_found_rows(true)
        .tcp_keepalive(opts.socket_timeout)
}

/// One connection to the one server `opts` names, handshake included within `timeout`. `PREFERRED` TLS
/// falls back to plain TCP on a server without it (and remembers that server, see [`plain_only`]).
async fn connect_one(opts: &ConnectOptions, timeout: Duration) -> Result<MyLink> {
    let plain = options(opts);
    let tls = tandem_mysql::Tls::of(opts)?.map(|tls| {
        mysql_async::SslOpts::default()
            .with_root_certs(tls.root.into_iter().map(Into::into).collect())
            .with_danger_accept_invalid_certs(tls.accept_invalid_certs)
            .with_danger_skip_domain_validation(tls.skip_domain_validation)
    });
    let opened = match tls {
        None => open(plain, timeout).await,
        // `PREFERRED` to a server known to refuse TLS: plain TCP at once, not a refused attempt first.
        Some(_) if !opts.tls.requires_tls() && plain_only::known(opts) => {
            open(plain, timeout).await
        }
        Some(tls) => match open(plain.clone().ssl_opts(tls), timeout).await {
            Err(Opening::Failed(mysql_async::Error::Driver(
                mysql_async::DriverError::NoClientSslFlagFromServer,
            ))) if !opts.tls.requires_tls() => {
                plain_only::remember(opts);
                open(plain, timeout).await
            }
            other => other,
        },
    };
    let conn = opened.map_err(|e| e.into_error(opts))?;
    Ok(MyLink {
        conn: Some(conn),
        remote: Remote::of(opts),
        bound: opts.socket_timeout,
        silent: false,
        timer: WaitTimer::default(),
        statements: Statements::default(),
    })
}

/// A connect that did not succeed: the driver's error, or the time was up.
enum Opening {
    Failed(mysql_async::Error),
    TimedOut(Duration),
}

impl Opening {
    fn into_error(self, opts: &ConnectOptions) -> Error {
        let e = match self {
            Opening::TimedOut(t) => return Error::connect_timeout(opts, t),
            Opening::Failed(e) => e,
        };
        if let Some((kind, cause)) = tandem_core::tls::failure(&e) {
            return Error::tls_caused(opts, kind, cause);
        }
        if let mysql_async::Error::Driver(mysql_async::DriverError::NoClientSslFlagFromServer) = e {
            return Error::tls_caused(opts, TlsErrorKind::NotOffered, e);
        }
        match error(e) {
            // Not the server's refusal (those keep their number): the server was not reached.
            Error::Database(d) if d.code.is_none() => Error::Database(DbError {
                message: format!("cannot connect to {}: {}", opts.display, d.message),
                ..d
            }),
            other => other,
        }
    }
}

/// Connects within `timeout`, handshake and session settings included.
async fn open(
    builder: mysql_async::OptsBuilder,
    timeout: Duration,
) -> std::result::Result<mysql_async::Conn, Opening> {
    match tokio::time::timeout(timeout, mysql_async::Conn::new(builder)).await {
        Ok(Ok(conn)) => Ok(conn),
        Ok(Err(e)) => Err(Opening::Failed(e)),
        Err(_) => Err(Opening::TimedOut(timeout)),
    }
}

/// How long the check of a suspect idle connection may take before the connection is replaced (or the
/// URL's `socket_timeout`, if shorter): see [`crate::postgres::CHECK_BOUND`].
const CHECK_BOUND: Duration = Duration::from_secs(1);

/// Waits at most `bound` for one step of a call: past it the connection is marked silent (never used
/// again) and the error is [`DbErrorKind::NoAnswer`] (the executor names the server).
async fn wait<T>(
    bound: Option<Duration>,
    silent: &mut bool,
    timer: &mut WaitTimer,
    step: impl Future<Output = std::result::Result<T, mysql_async::Error>>,
) -> Result<T> {
    let Some(bound) = bound else {
        return step.await.map_err(error);
    };
    match timer.within(bound, step).await {
        Some(result) => result.map_err(error),
        None => {
            *silent = true;
            Err(Error::Database(DbError::no_answer(
                Dialect::MySql,
                "the server",
                bound,
            )))
        }
    }
}

fn closed() -> Error {
    Error::Database(DbError::connection_lost(
        Dialect::MySql,
        "the connection was closed",
    ))
}

impl MyLink {
    /// Runs one statement (prepared once per connection, see [`MyLink::statements`]), feeding its rows to
    /// `sink` as they are read: one bounded wait per row, none for the consumer.
    pub(crate) async fn run<S: Sink>(&mut self, r: &Rendered, sink: &mut S) -> Result<Done> {
        let params = tandem_mysql::params(&r.params)?;
        let MyLink {
            conn,
            bound,
            silent,
            timer,
            statements,
            ..
        } = self;
        let (conn, bound) = (conn.as_mut().ok_or_else(closed)?, *bound);
        if statements.get(&r.sql).is_none() {
            let statement = wait(bound, silent, timer, conn.prep(r.sql.as_str())).await?;
            if let Some(gone) = statements.keep(&r.sql, Kept::new(statement)) {
                wait(bound, silent, timer, conn.close(gone.statement)).await?;
            }
        }
        let kept = statements.get(&r.sql).expect("prepared just above");
        let exec = conn.exec_iter(&kept.statement, params);
        let mut result = wait(bound, silent, timer, exec).await?;
        let columns = match result.columns() {
            Some(columns) if !columns.is_empty() => columns,
            _ => {
                let done = Done {
                    affected: result.affected_rows(),
                    last_insert_id: (result.last_insert_id())
                        .and_then(|id| i64::try_from(id).ok())
                        .filter(|id| *id != 0),
                    key_step: None,
                };
                drop(result);
                // How far apart the keys of a multi-row INSERT are, read on the connection that ran it.
                let key_step = match tandem_mysql::wants_key_step(r, &done) {
                    true => {
                        let step = conn.query_first::<i64, _>(tandem_mysql::KEY_STEP_SQL);
                        wait(bound, silent, timer, step).await?
                    }
                    false => None,
                };
                return Ok(Done { key_step, ..done });
            }
        };
        let columns = kept.columns(columns);
        while let Some(row) = wait(bound, silent, timer, result.next()).await? {
            if !sink.push(&mut columns.cells(row.unwrap())).await? {
                // The rows left are read now, so that the connection is ready for the next statement.
                wait(bound, silent, timer, result.drop_result()).await?;
                return Ok(Done::default());
            }
        }
        Ok(Done {
            affected: result.affected_rows(),
            ..Done::default()
        })
    }

    /// A statement without parameters or rows (BEGIN, COMMIT, SAVEPOINT, SET), in the text protocol.
    pub(crate) async fn simple(&mut self, sql: &str) -> Result<()> {
        let conn = self.conn.as_mut().ok_or_else(closed)?;
        let (silent, timer) = (&mut self.silent, &mut self.timer);
        wait(self.bound, silent, timer, conn.query_drop(sql)).await
    }

    /// Whether the connection answers a ping within [`CHECK_BOUND`] (or `socket_timeout`, if shorter).
    pub(crate) async fn answers(&mut self) -> bool {
        let bound = self.bound.map_or(CHECK_BOUND, |b| b.min(CHECK_BOUND));
        let Some(conn) = self.conn.as_mut() else {
            return false;
        };
        matches!(tokio::time::timeout(bound, conn.ping()).await, Ok(Ok(())))
    }
}

impl Drop for MyLink {
    /// Closes the socket now. mysql_async would otherwise hand a dropped connection to a task of its own
    /// that first reads whatever the server still has to send — unbounded, and with the server holding the
    /// transaction's locks until it is done. Its `disconnect`, polled once, marks the connection closed and
    /// sends the goodbye if the socket takes it; dropping it then closes the socket.
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take()
            && tokio::runtime::Handle::try_current().is_ok()
        {
            let _ = conn.disconnect().now_or_never();
        }
    }
}

/// Maps a mysql_async error: the server's by number, I/O and a closed connection as connection lost.
pub(crate) fn error(e: mysql_async::Error) -> Error {
    use mysql_async::DriverError as D;
    let db = match &e {
        mysql_async::Error::Server(s) => tandem_mysql::server_error(s.code, s.message.clone()),
        mysql_async::Error::Io(_) => {
            tandem_mysql::driver_error(DbErrorKind::ConnectionLost, e.to_string())
        }
        mysql_async::Error::Driver(d) => {
            let lost = matches!(
                d,
                D::ConnectionClosed | D::PacketOutOfOrder | D::UnexpectedPacket { .. }
            );
            let kind = match lost {
                true => DbErrorKind::ConnectionLost,
                false => DbErrorKind::Other,
            };
            tandem_mysql::driver_error(kind, d.to_string())
        }
        _ => tandem_mysql::driver_error(DbErrorKind::Other, e.to_string()),
    };
    Error::Database(db.with_source(e))
}
