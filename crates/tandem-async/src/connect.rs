//! Opening a pool: sqlx connect options from tandem's, the walk over a URL's servers, and a failed connect
//! as tandem's error (TLS failures classified).
//!
//! Where the two executors differ, and why: here a URL's list of servers is walked **once per pool** (and
//! again after a connection loss) — sqlx's pool connects to one server, and tandem points it at the one
//! found. The blocking executor walks it for **every new connection**, in its `connect` module, as r2d2
//! asks for one connection at a time. The walk itself ([`HostWalk`]) is `tandem-core`'s, the same on both
//! sides.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use sqlx::pool::PoolOptions;
use tandem_core::{ConnectOptions, Error, Result};
#[cfg(any(feature = "postgres", feature = "mysql"))]
use tandem_core::{HostWalk, ServerRole, TlsMode, Verdict};
use tandem_pool::{LossClock, PoolConfig};
use tandem_sql::Dialect;

use crate::driver::error;

/// The longest a suspect idle connection's ping may take before the connection is replaced.
const PING_BOUND: Duration = Duration::from_secs(1);

/// How much earlier than sqlx's idle time a connection is taken to have been last known good. sqlx puts a
/// connection back on a task of its own, after tandem let go of it: one whose server vanished while it was
/// on its way back enters the pool *after* the loss was noted, and by its idle time alone would be handed
/// out unchecked. Only connections put back within this long after a loss pay a ping for it.
const RETURN_SLACK: Duration = Duration::from_secs(1);

pub(crate) fn pool_options<DB: sqlx::Database>(
    config: &PoolConfig,
    created: Arc<AtomicU64>,
    losses: Arc<LossClock>,
    init: Arc<[String]>,
    bound: Option<Duration>,
) -> PoolOptions<DB>
where
    for<'c> &'c mut DB::Connection: sqlx::Executor<'c, Database = DB>,
{
    PoolOptions::<DB>::new()
        .max_connections(config.effective_max_size())
        .min_connections(config.effective_min_idle())
        .acquire_timeout(config.acquire_timeout.max(Duration::from_millis(1)))
        .idle_timeout(config.idle_timeout)
        .max_lifetime(config.max_lifetime)
        .test_before_acquire(config.validate_on_checkout)
        .after_connect(move |conn, _| {
            created.fetch_add(1, Ordering::Relaxed);
            let init = init.clone();
            Box::pin(async move { init_session::<DB>(conn, &init).await })
        })
        // Once a connection was found dead, one idle since before that is pinged before it is handed out
        // (and replaced when the ping fails, or is not answered within `socket_timeout`): see `LossClock`.
        .before_acquire(move |conn, meta| {
            let suspect = losses.suspect_idle(meta.idle_for + RETURN_SLACK);
            Box::pin(async move {
                if !suspect {
                    return Ok(true);
                }
                // A live server answers a ping in milliseconds; one that does not within a second (or
                // `socket_timeout`, if shorter) costs this connection a reconnect, not its caller an error.
                let ping = sqlx::Connection::ping(conn);
                let bound = bound.map_or(PING_BOUND, |b| b.min(PING_BOUND));
                Ok(matches!(
                    tokio::time::timeout(bound, ping).await,
                    Ok(Ok(()))
                ))
            })
        })
}

/// Runs the URL's session statements ([`ConnectOptions::session_statements`]) on a new connection.
pub(crate) async fn init_session<DB: sqlx::Database>(
    conn: &mut DB::Connection,
    init: &[String],
) -> std::result::Result<(), sqlx::Error>
where
    for<'c> &'c mut DB::Connection: sqlx::Executor<'c, Database = DB>,
{
    for sql in init {
        sqlx::Executor::execute(&mut *conn, sqlx::raw_sql(sqlx::AssertSqlSafe(sql.clone())))
            .await?;
    }
    Ok(())
}

/// sqlx's options for the one PostgreSQL server `options` names.
#[cfg(feature = "postgres")]
pub(crate) fn pg_connect_options(
    options: &ConnectOptions,
) -> Result<sqlx::postgres::PgConnectOptions> {
    let mut o = sqlx::postgres::PgConnectOptions::new()
        .host(&options.host)
        .port(options.port)
        .username(&options.user)
        .database(&options.database)
        .ssl_mode(match options.tls {
            TlsMode::Disable => sqlx::postgres::PgSslMode::Disable,
            TlsMode::Prefer => sqlx::postgres::PgSslMode::Prefer,
            TlsMode::Require => sqlx::postgres::PgSslMode::Require,
            TlsMode::VerifyCa => sqlx::postgres::PgSslMode::VerifyCa,
            _ => sqlx::postgres::PgSslMode::VerifyFull,
        })
        .statement_cache_capacity(64);
    if tandem_core::tls::root_certificates(options)?.is_some()
        && let Some(root) = &options.tls_root_cert
    {
        o = o.ssl_root_cert(root);
    }
    if let Some(p) = &options.password {
        o = o.password(p);
    }
    if let Some(name) = &options.application_name {
        o = o.application_name(name);
    }
    let settings = options.pg_startup_settings();
    if !settings.is_empty() {
        o = o.options(settings.iter().map(|(k, v)| (*k, v.as_str())));
    }
    Ok(o)
}

/// What a PostgreSQL server is (standby, read-only), by the probe both executors use.
#[cfg(feature = "postgres")]
pub(crate) fn pg_role(
    conn: &mut sqlx::PgConnection,
) -> futures_util::future::BoxFuture<'_, std::result::Result<ServerRole, sqlx::Error>> {
    Box::pin(async move {
        let (in_recovery, read_only): (String, String) =
            sqlx::query_as(tandem_core::SessionAttrs::probe_sql())
                .fetch_one(conn)
                .await?;
        Ok(ServerRole::from_flags(&in_recovery, &read_only))
    })
}

/// sqlx's options for the one MySQL server `options` names.
#[cfg(feature = "mysql")]
pub(crate) fn mysql_connect_options(
    options: &ConnectOptions,
) -> Result<sqlx::mysql::MySqlConnectOptions> {
    let mut o = sqlx::mysql::MySqlConnectOptions::new()
        .host(&options.host)
        .port(options.port)
        .username(&options.user)
        .database(&options.database)
        .ssl_mode(match options.tls {
            TlsMode::Disable => sqlx::mysql::MySqlSslMode::Disabled,
            TlsMode::Prefer => sqlx::mysql::MySqlSslMode::Preferred,
            TlsMode::Require => sqlx::mysql::MySqlSslMode::Required,
            TlsMode::VerifyCa => sqlx::mysql::MySqlSslMode::VerifyCa,
            _ => sqlx::mysql::MySqlSslMode::VerifyIdentity,
        })
        .statement_cache_capacity(64);
    if tandem_core::tls::root_certificates(options)?.is_some()
        && let Some(root) = &options.tls_root_cert
    {
        o = o.ssl_ca(root);
    }
    if let Some(p) = &options.password {
        o = o.password(p);
    }
    Ok(o)
}

/// A probe asking a fresh connection what its server is.
#[cfg(any(feature = "postgres", feature = "mysql"))]
pub(crate) type Probe<C> =
    for<'c> fn(
        &'c mut C,
    )
        -> futures_util::future::BoxFuture<'c, std::result::Result<ServerRole, sqlx::Error>>;

/// The server a pool connects to, chosen from a URL's list ([`HostWalk`], the same walk the blocking
/// executor makes for every connection): the first that answers within `connect_timeout` and, on
/// PostgreSQL, is the kind `target_session_attrs=` asks for. sqlx's pool connects to one server; tandem
/// walks the list when the pool opens and again after a connection loss, and points the pool at the
/// server found ([`sqlx::Pool::set_connect_options`]). A URL with one server is not walked.
#[cfg(any(feature = "postgres", feature = "mysql"))]
pub(crate) async fn choose_server<C: sqlx::Connection>(
    options: &ConnectOptions,
    config: &PoolConfig,
    make: fn(&ConnectOptions) -> Result<<C as sqlx::Connection>::Options>,
    probe: Option<Probe<C>>,
) -> Result<ConnectOptions> {
    if !options.chooses_server() {
        return Ok(options.clone());
    }
    let mut walk = HostWalk::new(options);
    while let Some(server) = walk.next_server() {
        let server_options = make(&server)?;
        let connect = C::connect_with(&server_options);
        let mut conn = match tokio::time::timeout(config.connect_timeout, connect).await {
            Ok(Ok(c)) => c,
            Ok(Err(e)) => {
                let e = connect_error(options.dialect, &server, e);
                walk.failed(&server, e);
                continue;
            }
            Err(_) => {
                walk.failed(
                    &server,
                    Error::connect_timeout(&server, config.connect_timeout),
                );
                continue;
            }
        };
        let role = match probe.filter(|_| walk.needs_probe()) {
            Some(probe) => match probe(&mut conn).await {
                Ok(role) => Some(role),
                Err(e) => {
                    walk.failed(&server, error(options.dialect, e));
                    let _ = conn.close().await;
                    continue;
                }
            },
            None => None,
        };
        let _ = conn.close().await;
        if walk.judge(&server, role) == Verdict::Take {
            return Ok(server);
        }
    }
    Err(walk.into_error())
}

/// One connect with `connect` (a pool's current server), bounded by the connect timeout.
#[cfg(any(feature = "postgres", feature = "mysql"))]
pub(crate) async fn reach_with<C: sqlx::Connection>(
    connect: &<C as sqlx::Connection>::Options,
    options: &ConnectOptions,
    config: &PoolConfig,
) -> Result<()> {
    match tokio::time::timeout(config.connect_timeout, C::connect_with(connect)).await {
        Ok(Ok(conn)) => {
            let _ = conn.close().await;
            Ok(())
        }
        Ok(Err(e)) => Err(connect_error(options.dialect, options, e)),
        Err(_) => Err(Error::connect_timeout(options, config.connect_timeout)),
    }
}

/// Builds one sqlx pool. One connection is made first, in one attempt (sqlx's pool would retry a refused
/// connection until the acquire timeout): an unreachable database is a typed connection error at once, with
/// the driver's reason. Then warm-up opens `min_idle` connections together and gives them back. Both
/// together get `connect_timeout`; past it the error is [`Error::PoolWarmUp`].
pub(crate) async fn open_pool<DB: sqlx::Database>(
    connect: <DB::Connection as sqlx::Connection>::Options,
    config: &PoolConfig,
    created: Arc<AtomicU64>,
    losses: Arc<LossClock>,
    options: &ConnectOptions,
) -> Result<sqlx::Pool<DB>>
where
    for<'c> &'c mut DB::Connection: sqlx::Executor<'c, Database = DB>,
{
    let dialect = options.dialect;
    let wanted = config.effective_min_idle();
    let started = Instant::now();
    let timed_out = || Error::connect_timeout(options, config.connect_timeout);
    let failed = |opened: u32, last_error: Error| Error::PoolWarmUp {
        opened,
        wanted: wanted.max(1),
        waited: started.elapsed(),
        last_error: Some(Box::new(last_error)),
    };
    let first = tokio::time::timeout(
        config.connect_timeout,
        <DB::Connection as sqlx::Connection>::connect_with(&connect),
    )
    .await
    .map_err(|_| timed_out())?
    .map_err(|e| connect_error(dialect, options, e))?;
    // The session statements once here too: a server that refuses one says so now, as a database error.
    let init: Arc<[String]> = options.session_statements().into();
    let mut first = first;
    let checked = init_session::<DB>(&mut first, &init).await;
    let _ = sqlx::Connection::close(first).await;
    checked.map_err(|e| connect_error(dialect, options, e))?;
    let pool = pool_options(config, created, losses, init, options.socket_timeout)
        .connect_lazy_with(connect);

    let acquires = futures_util::future::join_all((0..wanted).map(|_| pool.acquire()));
    let left = config.connect_timeout.saturating_sub(started.elapsed());
    let conns = tokio::time::timeout(left, acquires)
        .await
        .map_err(|_| failed(pool.size(), timed_out()))?;
    for c in conns {
        c.map_err(|e| {
            let cause = match e {
                // The pool gave up on its connect attempts: that is the connect timeout passing.
                sqlx::Error::PoolTimedOut => timed_out(),
                e => connect_error(dialect, options, e),
            };
            failed(pool.size(), cause)
        })?;
    }
    Ok(pool)
}

/// A failed connect: the server's own refusal keeps its kind and code (authentication, unknown database),
/// exactly as the blocking executor reports it; anything else means the server could not be reached.
pub(crate) fn connect_error(dialect: Dialect, options: &ConnectOptions, e: sqlx::Error) -> Error {
    #[cfg(any(feature = "postgres", feature = "mysql"))]
    if let Some(tls) = tls_error(options, &e) {
        return tls;
    }
    match error(dialect, e) {
        Error::Database(d) if d.code.is_none() => {
            let lost = tandem_core::DbError::connection_lost(
                dialect,
                format!("cannot connect to {}: {}", options.display, d.message),
            );
            // The driver's error stays reachable as the source.
            Error::Database(tandem_core::DbError {
                source: d.source,
                ..lost
            })
        }
        other => other,
    }
}

/// A TLS failure as [`Error::Tls`]: rustls' own error inside sqlx's, or sqlx's words for a server that
/// does not offer TLS to a mode that requires it.
#[cfg(any(feature = "postgres", feature = "mysql"))]
pub(crate) fn tls_error(options: &ConnectOptions, e: &sqlx::Error) -> Option<Error> {
    if let Some((kind, cause)) = tandem_core::tls::failure(e) {
        return Some(Error::tls_caused(options, kind, cause));
    }
    match e {
        sqlx::Error::Tls(inner) => {
            let message = inner.to_string();
            let kind = if message.contains("does not support TLS") {
                tandem_core::TlsErrorKind::NotOffered
            } else {
                tandem_core::TlsErrorKind::Handshake
            };
            Some(Error::tls(options, kind, message))
        }
        _ => None,
    }
}
