//! Connecting: bounded by the connect timeout whatever the server does, and a failure to connect reported
//! with the same kind and code by both executors — the async one on each of its drivers (native, sqlx).

use std::net::TcpListener;
use std::time::{Duration, Instant};
use tandem_test_support::{db, harness};

use tandem_core::{ConnectOptions, DbErrorKind, Error, TlsErrorKind};
use tandem_pool::PoolConfig;
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

/// Who connects in these tests: the blocking executor, the async one on its default (native) driver, and
/// the async one on sqlx's driver (`driver=sqlx` added to the URL).
const SIDES: [&str; 3] = ["blocking", "async", "async on sqlx"];

/// `url` with the async executor told to use sqlx's driver.
fn on_sqlx(url: &str) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}driver=sqlx")
}

/// Each side's error for `url` (see [`SIDES`]), each with how long it took.
fn connect_both(url: &str) -> [(Result<(), Error>, Duration); 3] {
    let started = Instant::now();
    let blocking = tandem_blocking::Database::connect_with(url, config()).map(drop);
    let b = (blocking, started.elapsed());
    let on = |url: &str| {
        let started = Instant::now();
        let asynchronous = harness::runtime()
            .block_on(tandem_async::Database::connect_with(url, config()))
            .map(drop);
        (asynchronous, started.elapsed())
    };
    [b, on(url), on(&on_sqlx(url))]
}

/// A server that accepts and never answers: a typed connect timeout naming host and port, on both
/// executors, for both protocols — not a hang (the blocking drivers bound only the TCP connect).
fn silent_server_is_a_connect_timeout() {
    let port = silent_server();
    for scheme in ["postgres", "mysql"] {
        let url = format!("{scheme}://u@127.0.0.1:{port}/db");
        for (side, (result, took)) in SIDES.iter().zip(connect_both(&url)) {
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

/// The server's address (the case declares the server, so the harness has found it there).
fn server(dialect: Dialect) -> ConnectOptions {
    ConnectOptions::parse(&db::server_url(dialect).0).unwrap()
}

/// A MySQL client at PostgreSQL's port waits for a greeting PostgreSQL never sends (each side waits for
/// the other): bounded, typed. A PostgreSQL client at MariaDB's port gets an answer it cannot read: an error
/// at once. Same outcome on both executors.
fn wrong_protocol_is_bounded() {
    let (pg, my) = (server(Dialect::Postgres), server(Dialect::MySql));
    let url = format!("mysql://root@{}:{}/test", pg.host, pg.port);
    for (result, took) in connect_both(&url) {
        assert!(
            matches!(result, Err(Error::ConnectTimeout { .. })),
            "{result:?}"
        );
        assert!(took < Duration::from_secs(10), "{took:?}");
    }
    let url = format!("postgres://postgres@{}:{}/test", my.host, my.port);
    for (result, took) in connect_both(&url) {
        assert!(result.is_err(), "{result:?}");
        assert!(took < Duration::from_secs(10), "{took:?}");
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
    for (side, result) in SIDES.iter().zip(connect_both(url)) {
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
    let pg = server(Dialect::Postgres);
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
    let my = server(Dialect::MySql);
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

/// Each side's answer to `sql` (one text cell) over a connection to `url`, or its error (see [`SIDES`]).
fn ask_both(url: &str, sql: &str) -> [Result<String, Error>; 3] {
    use tandem_async::Executor as _;
    use tandem_blocking::Executor as _;
    let stmt = tandem_sql::raw(sql, vec![]);
    let blocking = tandem_blocking::Database::connect_with(url, config())
        .and_then(|db| db.fetch_one::<(String,)>(&stmt).map(|(v,)| v));
    let on = |url: &str| {
        harness::block_on(async {
            let db = tandem_async::Database::connect_with(url, config()).await?;
            db.fetch_one::<(String,)>(&stmt).await.map(|(v,)| v)
        })
    };
    [blocking, on(url), on(&on_sqlx(url))]
}

/// The TLS failure kind of an error, or a panic naming what came instead.
fn tls_kind(side: &str, url: &str, r: Result<String, Error>) -> TlsErrorKind {
    match r {
        Err(Error::Tls {
            kind,
            target,
            source,
            ..
        }) => {
            assert!(url.contains(&target), "{side} {url}: target {target}");
            if matches!(
                kind,
                TlsErrorKind::UntrustedCertificate | TlsErrorKind::HostMismatch
            ) {
                assert!(
                    source.is_some(),
                    "{side} {url}: rustls' error is the source"
                );
            }
            kind
        }
        other => panic!("{side} {url}: expected a TLS error, got {other:?}"),
    }
}

/// Both executors answer `sql` over a connection to `url` with `expected`.
fn both_answer(url: &str, sql: &str, expected: &str) {
    for (side, r) in SIDES.iter().zip(ask_both(url, sql)) {
        assert_eq!(
            r.unwrap_or_else(|e| panic!("{side} {url}: {e}")),
            expected,
            "{side} {url}"
        );
    }
}

/// Both executors refuse to connect to `url` with TLS failure `kind`.
fn both_refuse(url: &str, sql: &str, kind: TlsErrorKind) {
    for (side, r) in SIDES.iter().zip(ask_both(url, sql)) {
        assert_eq!(tls_kind(side, url, r), kind);
    }
}

/// PostgreSQL with TLS on (the distribution's self-signed certificate, for `localhost`): each `sslmode` is
/// honoured by both executors — the server itself reports whether the session is encrypted — and the
/// verifying modes refuse what they must with a typed error, never falling back to plain TCP.
fn tls_postgres() {
    let pg = server(Dialect::Postgres);
    let auth = match &pg.password {
        Some(p) => format!("{}:{p}", pg.user),
        None => pg.user.clone(),
    };
    let at = |host: &str, query: &str| {
        format!(
            "postgres://{auth}@{host}:{}/{}?{query}",
            pg.port, pg.database
        )
    };
    let settings = ask_both(
        &at(&pg.host, "sslmode=disable"),
        "SELECT current_setting('ssl') || ' ' || current_setting('ssl_cert_file')",
    );
    let settings = settings[0].as_ref().expect("PostgreSQL's TLS settings");
    let (ssl, cert_file) = settings.split_once(' ').unwrap();
    assert_eq!(
        ssl, "on",
        "PostgreSQL at {}:{} has ssl = off: these tests need TLS on (ssl = on in postgresql.conf)",
        pg.host, pg.port
    );
    let encrypted = "SELECT CASE WHEN ssl THEN 'tls' ELSE 'plain' END FROM pg_stat_ssl \
                     WHERE pid = pg_backend_pid()";
    // No sslmode is `prefer`, as with libpq.
    for (query, expected) in [
        ("sslmode=disable", "plain"),
        ("sslmode=prefer", "tls"),
        ("sslmode=require", "tls"),
        ("", "tls"),
    ] {
        let url = at(&pg.host, query);
        both_answer(&url, encrypted, expected);
    }
    // Not signed by a root anyone trusts: refused by both verifying modes.
    for mode in ["verify-ca", "verify-full"] {
        let url = at(&pg.host, &format!("sslmode={mode}"));
        both_refuse(&url, encrypted, TlsErrorKind::UntrustedCertificate);
    }
    // A root file that is not there is its own kind of failure.
    let url = at(
        &pg.host,
        "sslmode=verify-full&sslrootcert=/nonexistent/root.pem",
    );
    both_refuse(&url, encrypted, TlsErrorKind::RootCertificate);
    // Trusting the server's own certificate, as the server reads it (a superuser may), else as this
    // machine has it: verify-ca passes at any address, verify-full refuses an address the certificate is
    // not for (a self-signed server certificate names no IP address).
    let pem = ask_both(
        &at(&pg.host, "sslmode=disable"),
        &format!("SELECT pg_read_file('{cert_file}')"),
    )
    .into_iter()
    .next()
    .unwrap()
    .ok();
    let local = std::fs::read_to_string(cert_file).ok();
    let Some(pem) = pem.or(local.clone()) else {
        eprintln!(
            "tls_postgres: {cert_file} is readable neither by the server's SQL nor here; trusted-root cases not run"
        );
        return;
    };
    let root = std::env::temp_dir().join(format!("tandem-pg-root-{}.pem", std::process::id()));
    std::fs::write(&root, &pem).unwrap();
    let trusted = format!("sslrootcert={}", root.display());
    let url = at(&pg.host, &format!("sslmode=verify-ca&{trusted}"));
    both_answer(&url, encrypted, "tls");
    let url = at("127.0.0.1", &format!("sslmode=verify-full&{trusted}"));
    both_refuse(&url, encrypted, TlsErrorKind::HostMismatch);
    // Debian's packaged server (the machines tandem is tested on) uses the snakeoil certificate made for
    // `localhost`: verify-full passes there. Elsewhere (a container's certificate names its build host)
    // this case is left out, and said.
    if local.as_deref() == Some(pem.as_str()) && pg.host == "127.0.0.1" {
        let url = at("localhost", &format!("sslmode=verify-full&{trusted}"));
        both_answer(&url, encrypted, "tls");
    } else {
        eprintln!(
            "tls_postgres: the server's certificate is not this machine's; verify-full at localhost not run"
        );
    }
    let _ = std::fs::remove_file(&root);
}

/// MariaDB: `ssl-mode=REQUIRED` on a server without TLS is a typed error on both executors, never a
/// silent plain connection; `PREFERRED` (the default) and `DISABLED` connect. Where the server has TLS on,
/// `REQUIRED` must give an encrypted session instead.
fn tls_mysql() {
    let my = server(Dialect::MySql);
    let auth = match &my.password {
        Some(p) => format!("{}:{p}", my.user),
        None => my.user.clone(),
    };
    let at = |query: &str| {
        format!(
            "mysql://{auth}@{}:{}/{}?{query}",
            my.host, my.port, my.database
        )
    };
    let cipher = "SELECT CONCAT(@@have_ssl, ' ', COALESCE((SELECT VARIABLE_VALUE FROM \
                  information_schema.SESSION_STATUS WHERE VARIABLE_NAME = 'SSL_CIPHER'), ''))";
    let [have, ..] = ask_both(&at("ssl-mode=DISABLED"), cipher);
    let have = have.expect("MariaDB's TLS setting");
    let tls_on = have.starts_with("YES");
    for mode in ["DISABLED", "PREFERRED"] {
        for (side, r) in SIDES
            .iter()
            .zip(ask_both(&at(&format!("ssl-mode={mode}")), cipher))
        {
            let answer = r.unwrap_or_else(|e| panic!("{side} {mode}: {e}"));
            let encrypted = answer
                .split_once(' ')
                .is_some_and(|(_, c)| !c.trim().is_empty());
            assert_eq!(
                encrypted,
                tls_on && mode == "PREFERRED",
                "{side} {mode}: {answer}"
            );
        }
    }
    let url = at("ssl-mode=REQUIRED");
    for (side, r) in SIDES.iter().zip(ask_both(&url, cipher)) {
        if tls_on {
            let answer = r.unwrap_or_else(|e| panic!("{side} {url}: {e}"));
            assert!(
                !answer.split_once(' ').unwrap().1.trim().is_empty(),
                "{side}: {answer}"
            );
        } else {
            assert_eq!(tls_kind(side, &url, r), TlsErrorKind::NotOffered);
        }
    }
}

/// MariaDB without TLS, `ssl-mode=PREFERRED`: the `mysql` crate (blocking) and mysql_async (async) learn
/// that the server refuses TLS only by trying, and then connect again in plain TCP. Once learnt, later
/// connections to that server go plain at once: the first pool takes one TCP connection more than a
/// `DISABLED` pool, the second none — on both executors.
fn tls_mysql_preferred_connects_once() {
    let my = server(Dialect::MySql);
    let auth = match &my.password {
        Some(p) => format!("{}:{p}", my.user),
        None => my.user.clone(),
    };
    let [have, ..] = ask_both(
        &format!(
            "mysql://{auth}@{}:{}/{}?ssl-mode=DISABLED",
            my.host, my.port, my.database
        ),
        "SELECT @@have_ssl",
    );
    if have.expect("MariaDB's TLS setting").starts_with("YES") {
        eprintln!("tls_mysql_preferred_connects_once: this MariaDB has TLS on; nothing to learn");
        return;
    }
    let one = PoolConfig {
        max_size: 1,
        min_idle: Some(1),
        ..config()
    };
    let counted =
        || tandem_test_support::proxy::start(&format!("{}:{}", my.host, my.port), |_| true);
    type Open = fn(&str, PoolConfig);
    let sides: [(&str, Open); 2] = [
        ("blocking", |url, config| {
            drop(tandem_blocking::Database::connect_with(url, config).unwrap())
        }),
        ("async", |url, config| {
            let db = harness::block_on(tandem_async::Database::connect_with(url, config));
            drop(db.unwrap())
        }),
    ];
    for (side, open) in sides {
        // How many TCP connections opening such a pool takes in plain TCP.
        let proxy = counted();
        let plain = format!(
            "mysql://{auth}@127.0.0.1:{}/{}?ssl-mode=DISABLED",
            proxy.port, my.database
        );
        open(&plain, one.clone());
        let per_pool = proxy.accepted();
        assert!(per_pool >= 1, "{side}");
        let proxy = counted();
        let url = format!(
            "mysql://{auth}@127.0.0.1:{}/{}?ssl-mode=PREFERRED",
            proxy.port, my.database
        );
        open(&url, one.clone());
        assert_eq!(
            proxy.accepted(),
            per_pool + 1,
            "{side}: one TLS attempt, refused, learnt"
        );
        open(&url, one.clone());
        assert_eq!(
            proxy.accepted(),
            2 * per_pool + 1,
            "{side}: the second pool goes plain at once"
        );
    }
}

/// The error's database kind, or a panic naming what came instead.
fn db_kind(side: &str, r: &Result<(), Error>) -> DbErrorKind {
    match r {
        Err(Error::Database(d)) => d.kind,
        other => panic!("{side}: expected a database error, got {other:?}"),
    }
}

/// Time limits from the URL, on both executors: a statement waiting for a row lock another transaction
/// holds fails with `LockTimeout` once `lock_timeout` has passed (MariaDB counts whole seconds), and a
/// statement running past `statement_timeout` is stopped by the server with `StatementTimeout` — each well
/// before the lock is released or the statement would have ended.
fn time_limits(dialect: Dialect) {
    use tandem_async::Executor as _;
    use tandem_blocking::Executor as _;
    let t = db::open(dialect, "limits", PoolConfig::default());
    for sql in [
        "CREATE TABLE limits_rows (id INT PRIMARY KEY, n INT NOT NULL)",
        "INSERT INTO limits_rows (id, n) VALUES (1, 0)",
    ] {
        t.db.execute(&tandem_sql::raw(sql, vec![])).unwrap();
    }
    let holder = t.db.begin(tandem_core::TxOptions::default()).unwrap();
    let bump = tandem_sql::raw("UPDATE limits_rows SET n = n + 1 WHERE id = 1", vec![]);
    holder.execute(&bump).unwrap();
    let sleep = tandem_sql::raw(
        if dialect == Dialect::Postgres {
            "SELECT pg_sleep(20)"
        } else {
            "SELECT SLEEP(20)"
        },
        vec![],
    );
    let (lock_bound, statement_bound) = match dialect {
        Dialect::Postgres => (Duration::from_millis(300), Duration::from_millis(300)),
        _ => (Duration::from_secs(1), Duration::from_millis(300)),
    };
    for (limit, stmt, kind, bound) in [
        (
            "lock_timeout=300ms",
            &bump,
            DbErrorKind::LockTimeout,
            lock_bound,
        ),
        (
            "statement_timeout=300",
            &sleep,
            DbErrorKind::StatementTimeout,
            statement_bound,
        ),
    ] {
        let url = format!("{}&{limit}", t.target.url());
        let started = Instant::now();
        let blocking = tandem_blocking::Database::connect_with(&url, config())
            .and_then(|db| db.execute(stmt).map(drop));
        let b = (blocking, started.elapsed());
        let on = |url: &str| {
            let started = Instant::now();
            let asynchronous = harness::block_on(async {
                let db = tandem_async::Database::connect_with(url, config()).await?;
                db.execute(stmt).await.map(drop)
            });
            (asynchronous, started.elapsed())
        };
        let sides = [b, on(&url), on(&on_sqlx(&url))];
        for (side, (result, took)) in SIDES.into_iter().zip(sides) {
            assert_eq!(db_kind(side, &result), kind, "{side} {limit}: {result:?}");
            assert!(
                took >= bound && took < bound + Duration::from_secs(5),
                "{side} {limit}: failed after {took:?}, the bound is {bound:?}"
            );
        }
    }
    holder.rollback().unwrap();
}

fn time_limits_postgres() {
    time_limits(Dialect::Postgres);
}

fn time_limits_mysql() {
    time_limits(Dialect::MySql);
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
            vec![
                harness::Case::new("connect_failures_postgres", connect_failures_postgres)
                    .needs(&[Dialect::Postgres]),
            ],
            vec![
                harness::Case::new("connect_failures_mysql", connect_failures_mysql)
                    .needs(&[Dialect::MySql]),
            ],
            vec![
                harness::Case::new("time_limits_postgres", time_limits_postgres)
                    .needs(&[Dialect::Postgres]),
            ],
            vec![
                harness::Case::new("time_limits_mysql", time_limits_mysql).needs(&[Dialect::MySql]),
            ],
            vec![harness::Case::new("tls_postgres", tls_postgres).needs(&[Dialect::Postgres])],
            vec![harness::Case::new("tls_mysql", tls_mysql).needs(&[Dialect::MySql])],
            vec![
                harness::Case::new(
                    "tls_mysql_preferred_connects_once",
                    tls_mysql_preferred_connects_once,
                )
                .needs(&[Dialect::MySql]),
            ],
        ]
        .into_iter()
        .flatten()
        .collect(),
    );
}
