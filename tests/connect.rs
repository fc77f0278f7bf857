//! Connecting: bounded by the connect timeout whatever the server does, and a failure to connect reported
//! with the same kind and code by both executors.

#[path = "support/db.rs"]
mod db;
#[path = "support/harness.rs"]
mod harness;

use std::net::TcpListener;
use std::time::{Duration, Instant};

use tandem_core::{ConnectOptions, DbErrorKind, Error, PoolConfig};
use tandem_sql::Dialect;

const TIMEOUT: Duration = Duration::from_millis(300);

fn config() -> PoolConfig {
    PoolConfig {
        connect_timeout: TIMEOUT,
        ..PoolConfig::default()
    }
}

/// A server that accepts TCP connections and never says a word.
fn silent_server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in listener.incoming().flatten() {
            held.push(s);
        }
    });
    port
}

/// Both executors' errors for `url`, each with how long it took.
fn connect_both(url: &str) -> [(Result<(), Error>, Duration); 2] {
    let started = Instant::now();
    let blocking = tandem_blocking::Database::connect_with(url, config()).map(drop);
    let b = (blocking, started.elapsed());
    let started = Instant::now();
    let asynchronous = harness::runtime()
        .block_on(tandem_async::Database::connect_with(url, config()))
        .map(drop);
    [b, (asynchronous, started.elapsed())]
}

/// A server that accepts and never answers: a typed connect timeout naming host and port, on both
/// executors, for both protocols — not a hang (the blocking drivers bound only the TCP connect).
fn silent_server_is_a_connect_timeout() {
    let port = silent_server();
    for scheme in ["postgres", "mysql"] {
        let url = format!("{scheme}://u@127.0.0.1:{port}/db");
        for (side, (result, took)) in ["blocking", "async"].iter().zip(connect_both(&url)) {
            match result {
                Err(Error::ConnectTimeout { target, timeout }) => {
                    assert_eq!(target, format!("127.0.0.1:{port}"), "{side} {scheme}");
                    assert_eq!(timeout, TIMEOUT, "{side} {scheme}");
                }
                other => panic!("{side} {scheme}: {other:?}"),
            }
            assert!(took < Duration::from_secs(10), "{side} {scheme}: {took:?}");
        }
    }
}

/// The server's address, or `None` (said) when it is unreachable outside CI.
fn server(dialect: Dialect) -> Option<ConnectOptions> {
    let target = db::target(dialect, "connect")?;
    Some(ConnectOptions::parse(&db::server_url(dialect).0).unwrap())
        .filter(|_| target.admin.is_some())
}

/// A MySQL client at PostgreSQL's port waits for a greeting PostgreSQL never sends (each side waits for
/// the other): bounded, typed. A PostgreSQL client at MariaDB's port gets an answer it cannot read: an error
/// at once. Same outcome on both executors.
fn wrong_protocol_is_bounded() {
    let (Some(pg), Some(my)) = (server(Dialect::Postgres), server(Dialect::MySql)) else {
        return;
    };
    let url = format!("mysql://root@{}:{}/test", pg.host, pg.port);
    for (result, took) in connect_both(&url) {
        assert!(
            matches!(result, Err(Error::ConnectTimeout { .. })),
            "{result:?}"
        );
        assert!(took < Duration::from_secs(10), "{took:?}");
    }
    let url = format!("postgres://postgres@{}:{}/test", my.host, my.port);
    let [b, a] = connect_both(&url);
    for (result, took) in [&b, &a] {
        assert!(result.is_err(), "{result:?}");
        assert!(*took < Duration::from_secs(10), "{took:?}");
    }
}

/// The kind and code of a connect failure.
fn kind_and_code(r: &Result<(), Error>) -> (Option<DbErrorKind>, Option<String>) {
    match r {
        Err(Error::Database(d)) => (Some(d.kind), d.code.clone()),
        other => panic!("expected a database error, got {other:?}"),
    }
}

/// Both executors fail to connect to `url` with `kind` and an engine code among `codes`. (The code can
/// differ where the drivers' handshakes differ: for a user without a password, the mysql crate sends none
/// and MariaDB answers 1698, sqlx sends an empty one and gets 1045.)
fn same_failure(url: &str, kind: DbErrorKind, codes: &[&str]) {
    for (side, result) in ["blocking", "async"].iter().zip(connect_both(url)) {
        let (k, code) = kind_and_code(&result.0);
        assert_eq!(k, Some(kind), "{side} {url}: {:?}", result.0);
        assert!(
            codes.contains(&code.as_deref().unwrap_or("")),
            "{side} {url}: {:?}",
            result.0
        );
    }
}

/// PostgreSQL: an unknown role is an authentication failure, an unknown database its own kind, with the
/// server's SQLSTATE — the same from both executors. (The local server trusts 127.0.0.1, so a wrong
/// password is not refused there.)
fn connect_failures_postgres() {
    let Some(pg) = server(Dialect::Postgres) else {
        return;
    };
    let at = format!("{}:{}", pg.host, pg.port);
    same_failure(
        &format!("postgres://no_such_role_tandem@{at}/test"),
        DbErrorKind::AuthenticationFailed,
        &["28000"],
    );
    same_failure(
        &format!("postgres://{}@{at}/no_such_db_tandem", pg.user),
        DbErrorKind::UnknownDatabase,
        &["3D000"],
    );
}

/// MariaDB: wrong password and unknown user are authentication failures (1045 / 1698), an unknown
/// database is 1049 — the same from both executors.
fn connect_failures_mysql() {
    let Some(my) = server(Dialect::MySql) else {
        return;
    };
    let at = format!("{}:{}", my.host, my.port);
    same_failure(
        &format!("mysql://{}:surely-wrong@{at}/test", my.user),
        DbErrorKind::AuthenticationFailed,
        &["1045"],
    );
    same_failure(
        &format!("mysql://no_such_user_tandem@{at}/test"),
        DbErrorKind::AuthenticationFailed,
        &["1045", "1698"],
    );
    let auth = match &my.password {
        Some(p) => format!("{}:{p}", my.user),
        None => my.user.clone(),
    };
    same_failure(
        &format!("mysql://{auth}@{at}/no_such_db_tandem"),
        DbErrorKind::UnknownDatabase,
        &["1049"],
    );
}

fn main() {
    harness::main(
        [
            vec![harness::Case::new(
                "silent_server_is_a_connect_timeout",
                silent_server_is_a_connect_timeout,
            )],
            vec![
                harness::Case::new("wrong_protocol_is_bounded", wrong_protocol_is_bounded)
                    .needs(&[Dialect::Postgres, Dialect::MySql]),
            ],
            vec![harness::Case::new(
                "connect_failures_postgres",
                connect_failures_postgres,
            )],
            vec![harness::Case::new(
                "connect_failures_mysql",
                connect_failures_mysql,
            )],
        ]
        .into_iter()
        .flatten()
        .collect(),
    );
}
