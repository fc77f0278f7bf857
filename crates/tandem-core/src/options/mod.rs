//! Connection options, parsed from the URLs both executors accept:
//! `sqlite::memory:`, `sqlite://path`, `postgres://user:pass@host:port/db`, `mysql://user:pass@host:port/db`.
//!
//! Parsing is done here, once, so both executors agree on what a URL means; each executor turns the result
//! into its driver's own configuration. Server URLs take `sslmode=` (PostgreSQL) or `ssl-mode=` (MySQL), see
//! [`TlsMode`]; any other parameter tandem does not know is an [`Error::InvalidUrl`].
//!
//! A server URL may name several servers, `host1:port1,host2:port2`, as libpq and MySQL Connector/J spell
//! it: they are tried in order (see [`crate::hosts`]), and PostgreSQL URLs choose among them with
//! `target_session_attrs=` ([`SessionAttrs`]).

use std::path::PathBuf;
use std::time::Duration;

use tandem_sql::Dialect;

use crate::error::{Error, Result};
pub use crate::hosts::SessionAttrs;

/// Where and how to connect.
#[derive(Clone, Debug, PartialEq)]
pub struct ConnectOptions {
    /// Which engine.
    pub dialect: Dialect,
    /// Host name or address (server engines): the first of [`ConnectOptions::hosts`], or the one these
    /// options were narrowed to ([`ConnectOptions::on_host`]).
    pub host: String,
    /// TCP port (server engines), with [`ConnectOptions::host`].
    pub port: u16,
    /// Every server the URL names, in order (`host1:5432,host2:5433`): one for most URLs.
    pub hosts: Vec<(String, u16)>,
    /// PostgreSQL: which kind of server a connection wants (`target_session_attrs=`, libpq's rules);
    /// MySQL takes the first server that answers.
    pub target_session_attrs: SessionAttrs,
    /// `load_balance_hosts=random` (libpq's word, on both engines' URLs): each connection walks the
    /// servers in a random order instead of the order written, spreading connections over them.
    pub load_balance: bool,
    /// User name.
    pub user: String,
    /// Password, if any.
    pub password: Option<String>,
    /// Database name (server engines).
    pub database: String,
    /// SQLite: the database file; `None` is an in-memory database.
    pub path: Option<String>,
    /// PostgreSQL: the `search_path` to set on every connection (a per-test schema, for instance).
    pub search_path: Option<String>,
    /// PostgreSQL: the `application_name` the server shows for these connections (`pg_stat_activity`).
    pub application_name: Option<String>,
    /// MySQL/MariaDB: `wsrep_sync_wait=` (0 to 15), set on every connection. On a Galera cluster, `1` makes
    /// each read wait until its node has applied every write the cluster certified before it (a *causal
    /// read*): what a pool spread over several nodes needs to read its own writes. A server without
    /// Galera's variables refuses the connection with its own error.
    pub wsrep_sync_wait: Option<u8>,
    /// PostgreSQL and MariaDB: the server stops any statement that runs longer, with a
    /// [`crate::DbErrorKind::StatementTimeout`] error (`statement_timeout=` in milliseconds, or with `ms`,
    /// `s` or `min`; PostgreSQL's `statement_timeout`, MariaDB's `max_statement_time`). None: no limit.
    pub statement_timeout: Option<Duration>,
    /// PostgreSQL and MariaDB: a statement waits at most this long for a row or table lock, then fails with
    /// [`crate::DbErrorKind::LockTimeout`] (`lock_timeout=`, same spelling; PostgreSQL's `lock_timeout`,
    /// MariaDB's `innodb_lock_wait_timeout`, which counts whole seconds: rounded up). None: the server's
    /// default (PostgreSQL: no limit; MariaDB: 50 s).
    pub lock_timeout: Option<Duration>,
    /// Server engines: the longest a call waits for the server's next answer (`socket_timeout=`, as
    /// pgjdbc and Connector/J name it; same spelling as `statement_timeout`, `0` for none). Past it the
    /// connection is closed and the call fails with [`crate::DbErrorKind::NoAnswer`]: what a frozen
    /// server, a network partition or a stalled disk look like to a client, which no server-side limit
    /// can catch (the server is not running). Default [`DEFAULT_SOCKET_TIMEOUT`], or `statement_timeout`
    /// or `lock_timeout` plus five seconds when that is longer, so that the server's own limit answers
    /// first. (MariaDB's own lock wait default is 50 s: a lock wait past 30 s without `lock_timeout=` reads
    /// as no answer.)
    pub socket_timeout: Option<Duration>,
    /// Server engines: how long a server that gave no answer (a connect or a call that timed out) is
    /// tried last by every host walk of the process (`host_recheck=`, like pgjdbc's `hostRecheckSeconds`;
    /// `0` to always walk in the written order). Default [`DEFAULT_HOST_RECHECK`].
    pub host_recheck: Duration,
    /// Every engine: a statement that takes at least this long is logged at WARN with its text (never its
    /// values) and counted in `tandem_statement_slow_total` (`slow_statement=`, same spelling as
    /// `statement_timeout`; like sqlx's slow-statement log). None, the default: no such log.
    pub slow_statement: Option<Duration>,
    /// Which driver the async executor uses (`?driver=`, see [`AsyncDriver`]); the blocking executor has
    /// one per engine.
    pub async_driver: AsyncDriver,
    /// SQLite: how the async executor's worker threads wait for their next call (`?worker_wait=poll|park`).
    pub sqlite_worker_wait: WorkerWait,
    /// How server connections use TLS (`sslmode=` / `ssl-mode=`); SQLite: [`TlsMode::Disable`].
    pub tls: TlsMode,
    /// A PEM file of root certificates to trust for [`TlsMode::VerifyCa`] and [`TlsMode::VerifyFull`]
    /// (`sslrootcert=` / `ssl-ca=`), besides the Mozilla roots of `webpki-roots` (every driver trusts
    /// both, as sqlx and the `mysql` crate do).
    pub tls_root_cert: Option<PathBuf>,
    /// The URL as given, password removed, for error messages.
    pub display: String,
}

/// The default [`ConnectOptions::socket_timeout`]: a frozen server surfaces within it.
pub const DEFAULT_SOCKET_TIMEOUT: Duration = Duration::from_secs(30);

/// The longest [`ConnectOptions::socket_timeout`]: the bound is also the sockets' `TCP_USER_TIMEOUT`, which
/// the kernel takes in milliseconds as a C `int` (a longer one fails every connect with `EINVAL`). A URL
/// asking for more is refused; one derived from long server limits is cut to it.
pub const MAX_SOCKET_TIMEOUT: Duration = Duration::from_millis(i32::MAX as u64);

/// The default [`ConnectOptions::host_recheck`] (pgjdbc's `hostRecheckSeconds` default).
pub const DEFAULT_HOST_RECHECK: Duration = Duration::from_secs(10);

/// Which driver the async executor speaks to the engine with (`?driver=` on the URL; the blocking executor
/// has one driver per engine).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum AsyncDriver {
    /// The engine's own client, the same one (or, for MySQL, the same protocol crate) the blocking executor
    /// drives: rusqlite connections on worker threads of their own (`tandem-sqlite`), tokio-postgres
    /// (`tandem-postgres`), mysql_async (over `mysql_common`, as the blocking `mysql` is; `tandem-mysql`).
    /// The default. Spelled `native`, or the driver's name: `rusqlite`, `tokio-postgres`, `mysql_async`.
    #[default]
    Native,
    /// sqlx's driver for the engine (`?driver=sqlx`): the design's async driver, kept selectable so that the
    /// benchmark can show what the driver weighs.
    Sqlx,
}

impl AsyncDriver {
    /// The driver `?driver=word` names on a URL for `dialect`, if any.
    pub fn parse(dialect: Dialect, word: &str) -> Option<AsyncDriver> {
        match (dialect, word) {
            (_, "sqlx") => Some(AsyncDriver::Sqlx),
            (Dialect::Sqlite, "native" | "rusqlite") => Some(AsyncDriver::Native),
            (Dialect::Postgres, "native" | "tokio-postgres") => Some(AsyncDriver::Native),
            (Dialect::MySql, "native" | "mysql_async") => Some(AsyncDriver::Native),
            _ => None,
        }
    }

    /// The words `?driver=` takes for `dialect`, for errors.
    pub fn words(dialect: Dialect) -> &'static str {
        match dialect {
            Dialect::Sqlite => "rusqlite (or native), sqlx",
            Dialect::Postgres => "tokio-postgres (or native), sqlx",
            Dialect::MySql => "mysql_async (or native), sqlx",
        }
    }
}

/// How an async SQLite worker thread (one per connection, see [`AsyncDriver::Native`]) waits for its
/// next call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum WorkerWait {
    /// Poll for a while before parking, longer after a call arrived while polling, shorter after parking:
    /// a connection in a tight request loop answers without a wake-up (two context switches), an idle one
    /// soon stops using its core. The default: the faster on a busy machine (`tandem-bench point`: the
    /// `statement via worker` variant beside `via workers that park`).
    #[default]
    Poll,
    /// Park at once: every call wakes the thread. For a machine whose cores are better spent elsewhere
    /// than on a worker waiting for work.
    Park,
}

impl ConnectOptions {
    /// Parses a URL. Server URLs are read by the `url` crate (so `[::1]` hosts and percent-encoded names and
    /// passwords work as everywhere else); a parameter tandem does not know is an error, never ignored.
    pub fn parse(url: &str) -> Result<Self> {
        let original = url;
        let bad = |reason: &str| Error::InvalidUrl {
            url: redact(url),
            reason: reason.to_owned(),
        };
        let (scheme, rest) = url
            .split_once(':')
            .ok_or_else(|| bad("no scheme (sqlite:, postgres:, mysql:)"))?;
        let dialect = match scheme {
            "sqlite" => Dialect::Sqlite,
            "postgres" | "postgresql" => Dialect::Postgres,
            "mysql" | "mariadb" => Dialect::MySql,
            _ => return Err(bad("unknown scheme (sqlite, postgres, mysql)")),
        };
        if dialect == Dialect::Sqlite {
            return Self::parse_sqlite(rest, url).map_err(|r| bad(&r));
        }
        // `host1:p1,host2:p2`: the url crate reads one host, so the URL is parsed with the first one and
        // the others each as `scheme://host:port`.
        let (first_url, others) = split_hosts(url, scheme, rest);
        let url = first_url.as_str();
        let rest = &url[scheme.len() + 1..];
        let parsed = url::Url::parse(url).map_err(|e| match e {
            url::ParseError::InvalidPort
                if authority(rest).rsplit_once(':').is_some_and(|(_, p)| {
                    !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit())
                }) =>
            {
                bad("port out of range (1 to 65535)")
            }
            url::ParseError::InvalidPort => bad("port is not a number"),
            url::ParseError::EmptyHost => bad("no host"),
            e => bad(&e.to_string()),
        })?;
        if parsed.cannot_be_a_base() || !rest.starts_with("//") {
            return Err(bad("expected scheme://host"));
        }
        let host = match parsed.host() {
            Some(url::Host::Domain(d)) => decode(d),
            Some(url::Host::Ipv4(ip)) => ip.to_string(),
            Some(url::Host::Ipv6(ip)) => ip.to_string(),
            None => return Err(bad("no host")),
        };
        if host.is_empty() {
            return Err(bad("no host"));
        }
        // The url crate knows no default port for these schemes; an empty port (`host:/db`) is an error.
        let port = match parsed.port() {
            Some(0) => return Err(bad("port out of range (1 to 65535)")),
            Some(p) => p,
            None if authority(rest).ends_with(':') => return Err(bad("port is not a number")),
            None if dialect == Dialect::Postgres => 5432,
            None => 3306,
        };
        let database = decode(parsed.path().trim_start_matches('/'));
        if database.contains('/') {
            return Err(bad("the database name is one path segment"));
        }
        let mut hosts = vec![(host.clone(), port)];
        for other in others {
            hosts.push(other_host(dialect, scheme, &other).map_err(|r| bad(&r))?);
        }
        let mut options = ConnectOptions {
            dialect,
            host,
            port,
            hosts,
            target_session_attrs: SessionAttrs::Any,
            load_balance: false,
            user: match decode(parsed.username()) {
                u if u.is_empty() && dialect == Dialect::Postgres => "postgres".into(),
                u if u.is_empty() => "root".into(),
                u => u,
            },
            password: parsed.password().map(decode),
            database,
            path: None,
            search_path: None,
            application_name: None,
            wsrep_sync_wait: None,
            statement_timeout: None,
            lock_timeout: None,
            socket_timeout: Some(DEFAULT_SOCKET_TIMEOUT),
            host_recheck: DEFAULT_HOST_RECHECK,
            slow_statement: None,
            async_driver: AsyncDriver::default(),
            sqlite_worker_wait: WorkerWait::default(),
            tls: TlsMode::default(),
            tls_root_cert: None,
            display: redact(original),
        };
        let mut socket_timeout_given = false;
        for (key, value) in parsed.query_pairs() {
            let value = value.into_owned();
            match (dialect, &*key) {
                (Dialect::Postgres, "search_path" | "schema") => options.search_path = Some(value),
                (Dialect::Postgres, "application_name") => options.application_name = Some(value),
                (Dialect::MySql, "wsrep_sync_wait") => {
                    options.wsrep_sync_wait =
                        Some(value.parse().ok().filter(|n| *n <= 15).ok_or_else(|| {
                            bad(&format!("wsrep_sync_wait={value} is not a number from 0 to 15"))
                        })?)
                }
                (
                    _,
                    "statement_timeout" | "lock_timeout" | "socket_timeout" | "host_recheck"
                    | "slow_statement",
                ) => {
                    let limit = time_limit(&value).ok_or_else(|| {
                        bad(&format!(
                            "{key}={value} is not a time limit (milliseconds, or a number with ms, s \
                             or min; 0 for none)"
                        ))
                    })?;
                    match &*key {
                        "lock_timeout" => options.lock_timeout = limit,
                        "statement_timeout" => options.statement_timeout = limit,
                        "slow_statement" => options.slow_statement = limit,
                        "socket_timeout" => {
                            if limit.is_some_and(|t| t > MAX_SOCKET_TIMEOUT) {
                                return Err(bad(&format!(
                                    "socket_timeout={value} is longer than the kernel's TCP_USER_TIMEOUT \
                                     takes ({} ms, about 24 days; 0 for none)",
                                    MAX_SOCKET_TIMEOUT.as_millis()
                                )));
                            }
                            options.socket_timeout = limit;
                            socket_timeout_given = true;
                        }
                        _ => options.host_recheck = limit.unwrap_or_default(),
                    }
                }
                (_, "driver") => {
                    options.async_driver = AsyncDriver::parse(dialect, &value).ok_or_else(|| {
                        bad(&format!(
                            "driver={value} is not one of {}",
                            AsyncDriver::words(dialect)
                        ))
                    })?
                }
                (_, "load_balance_hosts") => {
                    options.load_balance = match value.as_str() {
                        "disable" => false,
                        "random" => true,
                        _ => {
                            return Err(bad(&format!(
                                "load_balance_hosts={value} is not one of disable, random"
                            )));
                        }
                    }
                }
                (Dialect::Postgres, "target_session_attrs") => {
                    options.target_session_attrs = SessionAttrs::parse(&value).ok_or_else(|| {
                        bad(&format!(
                            "target_session_attrs={value} is not one of any, read-write, read-only, \
                             primary, standby, prefer-standby"
                        ))
                    })?
                }
                (Dialect::Postgres, "sslmode") => {
                    options.tls = TlsMode::parse(dialect, &value).ok_or_else(|| {
                        bad(&format!(
                            "sslmode={value} is not one of disable, prefer, require, verify-ca, verify-full"
                        ))
                    })?
                }
                (Dialect::Postgres, "sslrootcert") | (Dialect::MySql, "ssl-ca") => {
                    options.tls_root_cert = Some(PathBuf::from(value))
                }
                (Dialect::MySql, "ssl-mode") => {
                    options.tls = TlsMode::parse(dialect, &value).ok_or_else(|| {
                        bad(&format!(
                            "ssl-mode={value} is not one of DISABLED, PREFERRED, REQUIRED, VERIFY_CA, VERIFY_IDENTITY"
                        ))
                    })?
                }
                (Dialect::Postgres, "ssl-mode" | "ssl-ca") => {
                    return Err(bad(&format!(
                        "{key} is MySQL's spelling; PostgreSQL's is sslmode / sslrootcert"
                    )));
                }
                (Dialect::MySql, "sslmode" | "sslrootcert") => {
                    return Err(bad(&format!(
                        "{key} is PostgreSQL's spelling; MySQL's is ssl-mode / ssl-ca"
                    )));
                }
                _ => {
                    return Err(bad(&format!(
                        "unknown parameter {key:?} (known: {})",
                        if dialect == Dialect::Postgres {
                            "search_path, application_name, sslmode, sslrootcert, target_session_attrs, \
                             load_balance_hosts, statement_timeout, lock_timeout, socket_timeout, \
                             host_recheck, slow_statement, driver"
                        } else {
                            "ssl-mode, ssl-ca, load_balance_hosts, wsrep_sync_wait, statement_timeout, \
                             lock_timeout, socket_timeout, host_recheck, slow_statement, driver"
                        }
                    )));
                }
            }
        }
        if !socket_timeout_given {
            // The server's own limits answer first: a statement or lock wait it allows is no silence.
            let longest = [options.statement_timeout, options.lock_timeout]
                .into_iter()
                .flatten()
                .map(|t| t + Duration::from_secs(5))
                .fold(DEFAULT_SOCKET_TIMEOUT, Duration::max);
            options.socket_timeout = Some(longest.min(MAX_SOCKET_TIMEOUT));
        }
        Ok(options)
    }

    /// `sqlite::memory:`, `sqlite:path`, `sqlite://path`, `sqlite:///absolute/path`, with `?driver=`,
    /// `?worker_wait=`, `?slow_statement=` and
    /// sqlx's `?mode=rwc` (tandem always creates a missing file). A file path is not a network URL: the path
    /// is kept as written (percent-decoded), only the query goes through the url crate's form decoder.
    fn parse_sqlite(rest: &str, url: &str) -> std::result::Result<Self, String> {
        let path = rest.strip_prefix("//").unwrap_or(rest);
        let (path, query) = path.split_once('?').unwrap_or((path, ""));
        let mut async_driver = AsyncDriver::default();
        let mut sqlite_worker_wait = WorkerWait::default();
        let mut slow_statement = None;
        for (key, value) in url::form_urlencoded::parse(query.as_bytes()) {
            match (&*key, &*value) {
                ("driver", word) => {
                    async_driver = AsyncDriver::parse(Dialect::Sqlite, word).ok_or_else(|| {
                        format!(
                            "driver={word} is not one of {}",
                            AsyncDriver::words(Dialect::Sqlite)
                        )
                    })?
                }
                ("worker_wait", "poll") => sqlite_worker_wait = WorkerWait::Poll,
                ("worker_wait", "park") => sqlite_worker_wait = WorkerWait::Park,
                ("worker_wait", _) => return Err("worker_wait must be poll or park".into()),
                ("slow_statement", value) => {
                    slow_statement = time_limit(value).ok_or_else(|| {
                        format!(
                            "slow_statement={value} is not a time limit (milliseconds, or a number with ms, \
                             s or min; 0 for none)"
                        )
                    })?
                }
                ("mode", "rwc") => {}
                ("mode", other) => {
                    return Err(format!(
                        "mode={other}: tandem opens SQLite files read-write-create (rwc)"
                    ));
                }
                (other, _) => {
                    return Err(format!(
                        "unknown parameter {other:?} (known: driver, worker_wait, mode, slow_statement)"
                    ));
                }
            }
        }
        let path = match path {
            ":memory:" | "" => None,
            p => Some(decode(p)),
        };
        Ok(ConnectOptions {
            dialect: Dialect::Sqlite,
            host: String::new(),
            port: 0,
            hosts: Vec::new(),
            target_session_attrs: SessionAttrs::Any,
            load_balance: false,
            user: String::new(),
            password: None,
            database: String::new(),
            path,
            search_path: None,
            application_name: None,
            wsrep_sync_wait: None,
            statement_timeout: None,
            lock_timeout: None,
            socket_timeout: None,
            host_recheck: Duration::ZERO,
            slow_statement,
            async_driver,
            sqlite_worker_wait,
            tls: TlsMode::Disable,
            tls_root_cert: None,
            display: redact(url),
        })
    }

    /// Whether this is SQLite in memory (every pool connection would see its own database, so the pool
    /// holds one connection).
    pub fn is_memory(&self) -> bool {
        self.dialect == Dialect::Sqlite && self.path.is_none()
    }

    /// The statements every new connection runs before it is used (session settings the URL asked for that
    /// the drivers have no option of their own for).
    pub fn session_statements(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.dialect != Dialect::MySql {
            return out;
        }
        if let Some(n) = self.wsrep_sync_wait {
            out.push(format!("SET SESSION wsrep_sync_wait = {n}"));
        }
        if let Some(t) = self.statement_timeout {
            out.push(format!(
                "SET SESSION max_statement_time = {:.3}",
                t.as_secs_f64()
            ));
        }
        if let Some(t) = self.lock_timeout {
            // Whole seconds, at least one (0 is not "no limit" there).
            let secs = t.as_millis().div_ceil(1000).max(1);
            out.push(format!("SET SESSION innodb_lock_wait_timeout = {secs}"));
        }
        out
    }

    /// PostgreSQL: the run-time parameters every connection starts with (libpq's `options`, `-c name=value`
    /// each): the URL's `search_path` and time limits, in milliseconds.
    pub fn pg_startup_settings(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        if self.dialect != Dialect::Postgres {
            return out;
        }
        if let Some(sp) = &self.search_path {
            out.push(("search_path", sp.clone()));
        }
        for (name, limit) in [
            ("statement_timeout", self.statement_timeout),
            ("lock_timeout", self.lock_timeout),
        ] {
            if let Some(t) = limit {
                out.push((name, t.as_millis().to_string()));
            }
        }
        out
    }

    /// `host:port`, as errors name the server.
    pub fn target(&self) -> String {
        host_port(&self.host, self.port)
    }

    /// Every server of the URL as `host:port`, comma-separated, as errors about the whole list name them.
    pub fn targets(&self) -> String {
        let all: Vec<String> = self.hosts.iter().map(|(h, p)| host_port(h, *p)).collect();
        all.join(",")
    }

    /// These options narrowed to the `i`-th server of [`ConnectOptions::hosts`] (what a driver connects
    /// to); the list itself is kept.
    pub fn on_host(&self, i: usize) -> ConnectOptions {
        let mut one = self.clone();
        if let Some((h, p)) = self.hosts.get(i) {
            one.host = h.clone();
            one.port = *p;
        }
        one
    }

    /// Whether connecting may have to choose among servers: several hosts, or a PostgreSQL
    /// `target_session_attrs` that asks the server what it is.
    pub fn chooses_server(&self) -> bool {
        self.hosts.len() > 1 || self.target_session_attrs != SessionAttrs::Any
    }
}

/// A time limit as the URL spells it: milliseconds, or a number with `ms`, `s` or `min`; `0` is none.
fn time_limit(value: &str) -> Option<Option<Duration>> {
    let (digits, unit_ms) = if let Some(d) = value.strip_suffix("ms") {
        (d, 1)
    } else if let Some(d) = value.strip_suffix("min") {
        (d, 60_000)
    } else if let Some(d) = value.strip_suffix('s') {
        (d, 1_000)
    } else {
        (value, 1)
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let ms = digits.parse::<u64>().ok()?.checked_mul(unit_ms)?;
    Some((ms > 0).then(|| Duration::from_millis(ms)))
}

pub(crate) fn host_port(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// The URL with only the first server of a `host1:p1,host2:p2` list, and the other servers' text.
fn split_hosts(url: &str, scheme: &str, rest: &str) -> (String, Vec<String>) {
    let auth = authority(rest);
    let (userinfo, list) = match auth.rsplit_once('@') {
        Some((u, l)) => (Some(u), l),
        None => (None, auth),
    };
    if !list.contains(',') {
        return (url.to_owned(), Vec::new());
    }
    let mut servers = list.split(',').map(str::to_owned);
    let first = servers.next().unwrap_or_default();
    let after = &rest.strip_prefix("//").unwrap_or(rest)[auth.len()..];
    let userinfo = userinfo.map(|u| format!("{u}@")).unwrap_or_default();
    (
        format!("{scheme}://{userinfo}{first}{after}"),
        servers.collect(),
    )
}

/// One more server of a host list, `host[:port]`, read by the url crate as the first one is.
fn other_host(
    dialect: Dialect,
    scheme: &str,
    text: &str,
) -> std::result::Result<(String, u16), String> {
    if text.is_empty() {
        return Err("an empty host in the host list".into());
    }
    let parsed = url::Url::parse(&format!("{scheme}://{text}"))
        .map_err(|e| format!("host list entry {text:?}: {e}"))?;
    let host = match parsed.host() {
        Some(url::Host::Domain(d)) => decode(d),
        Some(url::Host::Ipv4(ip)) => ip.to_string(),
        Some(url::Host::Ipv6(ip)) => ip.to_string(),
        None => return Err(format!("host list entry {text:?}: no host")),
    };
    if !parsed.path().trim_start_matches('/').is_empty() || parsed.username() != "" {
        return Err(format!(
            "host list entry {text:?}: only host[:port] (user and database come once, around the list)"
        ));
    }
    let port = match parsed.port() {
        Some(0) => return Err("port out of range (1 to 65535)".into()),
        Some(p) => p,
        None if text.ends_with(':') => return Err("port is not a number".into()),
        None if dialect == Dialect::Postgres => 5432,
        None => 3306,
    };
    Ok((host, port))
}

/// How a server connection uses TLS: `sslmode=` on PostgreSQL URLs, `ssl-mode=` on MySQL ones, spelled as
/// each engine's own client spells it. Every mode is honoured by both executors and all server drivers
/// (rustls underneath); a mode that asks for TLS never falls back to plain TCP.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum TlsMode {
    /// Plain TCP (`disable`, `DISABLED`).
    Disable,
    /// TLS when the server offers it, plain TCP otherwise; the certificate is not checked (`prefer`,
    /// `PREFERRED`: both clients' default).
    #[default]
    Prefer,
    /// TLS or no connection; the certificate is not checked (`require`, `REQUIRED`).
    Require,
    /// TLS with a certificate chain that ends at a trusted root, whatever name it is for (`verify-ca`,
    /// `VERIFY_CA`).
    VerifyCa,
    /// TLS with a trusted certificate for the host connected to (`verify-full`, `VERIFY_IDENTITY`).
    VerifyFull,
}

impl TlsMode {
    /// The mode a URL names, in `dialect`'s spelling (MySQL's is case-insensitive, as its client's).
    /// PostgreSQL's `allow` (plain first, TLS if the server insists) is not offered: `None`, like any
    /// other unknown word.
    pub fn parse(dialect: Dialect, word: &str) -> Option<TlsMode> {
        match dialect {
            Dialect::Postgres => match word {
                "disable" => Some(TlsMode::Disable),
                "prefer" => Some(TlsMode::Prefer),
                "require" => Some(TlsMode::Require),
                "verify-ca" => Some(TlsMode::VerifyCa),
                "verify-full" => Some(TlsMode::VerifyFull),
                _ => None,
            },
            _ => match word.to_ascii_uppercase().as_str() {
                "DISABLED" => Some(TlsMode::Disable),
                "PREFERRED" => Some(TlsMode::Prefer),
                "REQUIRED" => Some(TlsMode::Require),
                "VERIFY_CA" => Some(TlsMode::VerifyCa),
                "VERIFY_IDENTITY" => Some(TlsMode::VerifyFull),
                _ => None,
            },
        }
    }

    /// The URL word for this mode in `dialect`'s spelling.
    pub fn spelling(self, dialect: Dialect) -> &'static str {
        match (dialect, self) {
            (Dialect::Postgres, TlsMode::Disable) => "disable",
            (Dialect::Postgres, TlsMode::Prefer) => "prefer",
            (Dialect::Postgres, TlsMode::Require) => "require",
            (Dialect::Postgres, TlsMode::VerifyCa) => "verify-ca",
            (Dialect::Postgres, TlsMode::VerifyFull) => "verify-full",
            (_, TlsMode::Disable) => "DISABLED",
            (_, TlsMode::Prefer) => "PREFERRED",
            (_, TlsMode::Require) => "REQUIRED",
            (_, TlsMode::VerifyCa) => "VERIFY_CA",
            (_, TlsMode::VerifyFull) => "VERIFY_IDENTITY",
        }
    }

    /// Whether a connection without TLS is refused.
    pub fn requires_tls(self) -> bool {
        matches!(
            self,
            TlsMode::Require | TlsMode::VerifyCa | TlsMode::VerifyFull
        )
    }

    /// Whether the certificate chain must end at a trusted root.
    pub fn verifies_chain(self) -> bool {
        matches!(self, TlsMode::VerifyCa | TlsMode::VerifyFull)
    }

    /// Whether the certificate must be for the host connected to.
    pub fn verifies_host(self) -> bool {
        self == TlsMode::VerifyFull
    }
}

/// The authority part of `//authority/rest`.
fn authority(rest: &str) -> &str {
    let rest = rest.strip_prefix("//").unwrap_or(rest);
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    &rest[..end]
}

/// The URL with its password replaced by `***`: by the url crate when it can parse it, otherwise (an invalid
/// URL still goes into the error message) by cutting the password out of the authority.
pub fn redact(url: &str) -> String {
    if let Ok(mut parsed) = url::Url::parse(url)
        && parsed.password().is_some()
        && parsed.set_password(Some("***")).is_ok()
    {
        return parsed.to_string();
    }
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let auth = authority(rest);
    match auth.rsplit_once('@') {
        Some((userinfo, host)) => {
            let user = userinfo.split_once(':').map_or(userinfo, |(u, _)| u);
            let stars = if userinfo.contains(':') { ":***" } else { "" };
            format!("{scheme}://{user}{stars}@{host}{}", &rest[auth.len()..])
        }
        None => url.to_owned(),
    }
}

/// Percent-decoding, by the url crate's own decoder.
fn decode(s: &str) -> String {
    percent_encoding::percent_decode_str(s)
        .decode_utf8_lossy()
        .into_owned()
}

#[cfg(test)]
mod tests;
