use super::*;

/// Each URL form parses into the options the drivers need, and the password never shows.
#[test]
fn url_forms() {
    let m = ConnectOptions::parse("sqlite::memory:").unwrap();
    assert!(m.is_memory());
    let f = ConnectOptions::parse("sqlite://data/app.db").unwrap();
    assert_eq!(f.path.as_deref(), Some("data/app.db"));
    let abs = ConnectOptions::parse("sqlite:///tmp/x.db?mode=rwc").unwrap();
    assert_eq!(abs.path.as_deref(), Some("/tmp/x.db"));
    assert_eq!(abs.async_driver, AsyncDriver::Native);
    let sqlx = ConnectOptions::parse("sqlite://x.db?driver=sqlx").unwrap();
    assert_eq!(
        (sqlx.path.as_deref(), sqlx.async_driver),
        (Some("x.db"), AsyncDriver::Sqlx)
    );
    assert!(ConnectOptions::parse("sqlite://x.db?driver=odbc").is_err());
    // Each engine takes its own driver's name, `native`, or `sqlx`; the default is the native driver
    // where tandem has one.
    for (url, driver) in [
        ("sqlite://x.db?driver=rusqlite", AsyncDriver::Native),
        ("postgres://u@h/d", AsyncDriver::Native),
        (
            "postgres://u@h/d?driver=tokio-postgres",
            AsyncDriver::Native,
        ),
        ("postgres://u@h/d?driver=sqlx", AsyncDriver::Sqlx),
        ("mysql://u@h/d?driver=sqlx", AsyncDriver::Sqlx),
        ("mysql://u@h/d", AsyncDriver::Native),
        ("mysql://u@h/d?driver=mysql_async", AsyncDriver::Native),
        ("mysql://u@h/d?driver=native", AsyncDriver::Native),
    ] {
        assert_eq!(
            ConnectOptions::parse(url).unwrap().async_driver,
            driver,
            "{url}"
        );
    }
    match ConnectOptions::parse("postgres://u@h/d?driver=rusqlite") {
        Err(Error::InvalidUrl { reason, .. }) => assert_eq!(
            reason,
            "driver=rusqlite is not one of tokio-postgres (or native), sqlx"
        ),
        other => panic!("{other:?}"),
    }
    match ConnectOptions::parse("mysql://u@h/d?driver=tokio-postgres") {
        Err(Error::InvalidUrl { reason, .. }) => assert_eq!(
            reason,
            "driver=tokio-postgres is not one of mysql_async (or native), sqlx"
        ),
        other => panic!("{other:?}"),
    }
    assert_eq!(sqlx.sqlite_worker_wait, WorkerWait::Poll);
    let park = ConnectOptions::parse("sqlite://x.db?worker_wait=park").unwrap();
    assert_eq!(park.sqlite_worker_wait, WorkerWait::Park);
    let bad = ConnectOptions::parse("sqlite://x.db?worker_wait=sleep").unwrap_err();
    assert!(
        bad.to_string().contains("worker_wait must be poll or park"),
        "{bad}"
    );
    let pg = ConnectOptions::parse(
        "postgres://me:p%40ss@db.local:6543/app?search_path=t1&sslmode=disable",
    )
    .unwrap();
    assert_eq!(
        (
            pg.dialect,
            pg.host.as_str(),
            pg.port,
            pg.user.as_str(),
            pg.password.as_deref(),
            pg.database.as_str()
        ),
        (
            Dialect::Postgres,
            "db.local",
            6543,
            "me",
            Some("p@ss"),
            "app"
        )
    );
    assert_eq!(pg.search_path.as_deref(), Some("t1"));
    let named = ConnectOptions::parse("postgres://h/db?application_name=worker%201").unwrap();
    assert_eq!(named.application_name.as_deref(), Some("worker 1"));
    assert!(!pg.display.contains("p%40ss"), "{}", pg.display);
    let my = ConnectOptions::parse("mysql://root@127.0.0.1/test").unwrap();
    assert_eq!(
        (my.dialect, my.port, my.password),
        (Dialect::MySql, 3306, None)
    );
    for bad in [
        "nothing",
        "oracle://x",
        "postgres://",
        "mysql://h:port/db",
        "postgres:x",
    ] {
        assert!(
            matches!(ConnectOptions::parse(bad), Err(Error::InvalidUrl { .. })),
            "{bad}"
        );
    }
    // A port says what is wrong with it.
    for (url, reason) in [
        ("postgres://h:99999/db", "port out of range (1 to 65535)"),
        ("mysql://h:0/db", "port out of range (1 to 65535)"),
        ("mysql://h:port/db", "port is not a number"),
        ("mysql://h:-1/db", "port is not a number"),
        ("postgres://h:/db", "port is not a number"),
    ] {
        match ConnectOptions::parse(url) {
            Err(Error::InvalidUrl { reason: r, .. }) => assert_eq!(r, reason, "{url}"),
            other => panic!("{url}: {other:?}"),
        }
    }
    assert_eq!(
        ConnectOptions::parse("mysql://h:65535/db").unwrap().port,
        65_535
    );

    // IPv6 hosts, percent-encoded user names and passwords, form-decoded parameters.
    let v6 = ConnectOptions::parse("postgres://a%20b:p%2Fw%3A@[::1]:5433/d%C3%A9j%C3%A0").unwrap();
    assert_eq!(
        (
            v6.host.as_str(),
            v6.port,
            v6.user.as_str(),
            v6.password.as_deref(),
            v6.database.as_str(),
            v6.target()
        ),
        (
            "::1",
            5433,
            "a b",
            Some("p/w:"),
            "déjà",
            "[::1]:5433".to_owned()
        )
    );
    assert_eq!(
        ConnectOptions::parse("mysql://[::1]/test").unwrap().port,
        3306
    );
    assert!(!v6.display.contains("p%2Fw"), "{}", v6.display);
    assert!(v6.display.contains("***"), "{}", v6.display);
    // The password is cut out of a URL that does not parse, too.
    match ConnectOptions::parse("postgres://me:secret@h:99999/db") {
        Err(Error::InvalidUrl { url, .. }) => {
            assert!(!url.contains("secret") && url.contains("me:***@h"), "{url}")
        }
        other => panic!("{other:?}"),
    }
}

/// `host1:p1,host2:p2` in both engines' URLs: every server kept in order with its own default port,
/// the first one in `host`/`port`; bad entries and bad `target_session_attrs` are errors.
#[test]
fn host_lists() {
    let pg = ConnectOptions::parse(
        "postgres://me:pw@10.0.0.1:5433,[::1],db2:6000/app?target_session_attrs=read-write",
    )
    .unwrap();
    assert_eq!(
        pg.hosts,
        [
            ("10.0.0.1".to_owned(), 5433),
            ("::1".to_owned(), 5432),
            ("db2".to_owned(), 6000)
        ]
    );
    assert_eq!((pg.host.as_str(), pg.port), ("10.0.0.1", 5433));
    assert_eq!(pg.target_session_attrs, SessionAttrs::ReadWrite);
    assert_eq!((pg.user.as_str(), pg.database.as_str()), ("me", "app"));
    assert_eq!(pg.targets(), "10.0.0.1:5433,[::1]:5432,db2:6000");
    assert_eq!(pg.on_host(2).target(), "db2:6000");
    assert!(pg.chooses_server());
    assert!(!pg.display.contains("pw"), "{}", pg.display);
    let my = ConnectOptions::parse("mysql://root@127.0.0.1:3311,127.0.0.1:3312,h3/test").unwrap();
    assert_eq!(my.hosts.len(), 3);
    assert_eq!(my.hosts[2], ("h3".to_owned(), 3306));
    let one = ConnectOptions::parse("mysql://root@h/test").unwrap();
    assert_eq!(one.hosts, [("h".to_owned(), 3306)]);
    assert!(!one.chooses_server());
    for (url, reason) in [
        ("mysql://r@a:1,,b:2/t", "an empty host in the host list"),
        ("mysql://r@a:1,b:0/t", "port out of range (1 to 65535)"),
        ("postgres://u@a,b:/d", "port is not a number"),
        (
            "postgres://u@a/d?target_session_attrs=primary-ish",
            "target_session_attrs=primary-ish is not one of any, read-write, read-only, primary, standby, prefer-standby",
        ),
    ] {
        match ConnectOptions::parse(url) {
            Err(Error::InvalidUrl { reason: r, .. }) => assert_eq!(r, reason, "{url}"),
            other => panic!("{url}: {other:?}"),
        }
    }
    assert!(matches!(
        ConnectOptions::parse("mysql://r@a/t?target_session_attrs=any"),
        Err(Error::InvalidUrl { .. })
    ));
    let causal = ConnectOptions::parse("mysql://r@a,b/t?wsrep_sync_wait=1").unwrap();
    assert_eq!(causal.wsrep_sync_wait, Some(1));
    assert_eq!(
        causal.session_statements(),
        ["SET SESSION wsrep_sync_wait = 1"]
    );
    assert!(
        ConnectOptions::parse("mysql://r@a/t")
            .unwrap()
            .session_statements()
            .is_empty()
    );
    for bad in ["16", "-1", "yes"] {
        match ConnectOptions::parse(&format!("mysql://r@a/t?wsrep_sync_wait={bad}")) {
            Err(Error::InvalidUrl { reason, .. }) => assert_eq!(
                reason,
                format!("wsrep_sync_wait={bad} is not a number from 0 to 15")
            ),
            other => panic!("{bad}: {other:?}"),
        }
    }
    assert!(matches!(
        ConnectOptions::parse("postgres://u@a/d?wsrep_sync_wait=1"),
        Err(Error::InvalidUrl { .. })
    ));
    assert!(
        ConnectOptions::parse("mysql://r@a,b/t?load_balance_hosts=random")
            .unwrap()
            .load_balance
    );
    assert!(
        !ConnectOptions::parse("postgres://u@a,b/d?load_balance_hosts=disable")
            .unwrap()
            .load_balance
    );
    assert!(matches!(
        ConnectOptions::parse("postgres://u@a/d?load_balance_hosts=round"),
        Err(Error::InvalidUrl { .. })
    ));
}

/// TLS modes in each engine's own spelling; the other engine's spelling, `allow`, unknown words and
/// unknown parameters are errors, not ignored.
#[test]
fn tls_modes() {
    let pg = |q: &str| ConnectOptions::parse(&format!("postgres://h/db?{q}"));
    let my = |q: &str| ConnectOptions::parse(&format!("mysql://h/db?{q}"));
    assert_eq!(pg("").unwrap().tls, TlsMode::Prefer);
    assert_eq!(my("").unwrap().tls, TlsMode::Prefer);
    for (word, mode) in [
        ("disable", TlsMode::Disable),
        ("prefer", TlsMode::Prefer),
        ("require", TlsMode::Require),
        ("verify-ca", TlsMode::VerifyCa),
        ("verify-full", TlsMode::VerifyFull),
    ] {
        assert_eq!(pg(&format!("sslmode={word}")).unwrap().tls, mode);
        assert_eq!(mode.spelling(Dialect::Postgres), word);
    }
    for (word, mode) in [
        ("DISABLED", TlsMode::Disable),
        ("preferred", TlsMode::Prefer),
        ("REQUIRED", TlsMode::Require),
        ("VERIFY_CA", TlsMode::VerifyCa),
        ("Verify_Identity", TlsMode::VerifyFull),
    ] {
        assert_eq!(my(&format!("ssl-mode={word}")).unwrap().tls, mode);
        assert_eq!(
            TlsMode::parse(Dialect::MySql, mode.spelling(Dialect::MySql)),
            Some(mode)
        );
    }
    let root = pg("sslmode=verify-full&sslrootcert=/etc/ssl/root%20ca.pem").unwrap();
    assert_eq!(
        root.tls_root_cert.as_deref(),
        Some(std::path::Path::new("/etc/ssl/root ca.pem"))
    );
    assert!(my("ssl-ca=ca.pem").unwrap().tls_root_cert.is_some());
    for (url, reason) in [
        (pg("sslmode=allow"), "sslmode=allow is not one of"),
        (pg("sslmode=REQUIRED"), "sslmode=REQUIRED is not one of"),
        (
            my("ssl-mode=require-ish"),
            "ssl-mode=require-ish is not one of",
        ),
        (pg("ssl-mode=REQUIRED"), "MySQL's spelling"),
        (my("sslmode=require"), "PostgreSQL's spelling"),
        (pg("sslcert=client.pem"), "unknown parameter \"sslcert\""),
        (my("search_path=x"), "unknown parameter \"search_path\""),
        (
            ConnectOptions::parse("sqlite://x.db?cache=shared"),
            "unknown parameter \"cache\"",
        ),
        (ConnectOptions::parse("sqlite://x.db?mode=ro"), "mode=ro"),
    ] {
        match url {
            Err(Error::InvalidUrl { reason: r, .. }) => {
                assert!(r.contains(reason), "{r:?} should say {reason:?}")
            }
            other => panic!("{reason}: {other:?}"),
        }
    }
    assert_eq!(
        ConnectOptions::parse("sqlite://x.db").unwrap().tls,
        TlsMode::Disable
    );
}

/// Time limits: milliseconds or a unit, 0 for none, anything else refused with the spelling; each engine
/// gets them in its own words (PostgreSQL startup parameters in ms, MariaDB session variables in seconds,
/// its lock wait rounded up to a whole second).
#[test]
fn time_limits() {
    let ms = Duration::from_millis;
    for (spelled, limit) in [
        ("250", Some(ms(250))),
        ("250ms", Some(ms(250))),
        ("3s", Some(ms(3_000))),
        ("2min", Some(ms(120_000))),
        ("0", None),
        ("0s", None),
    ] {
        let o = ConnectOptions::parse(&format!(
            "postgres://u@a/d?statement_timeout={spelled}&lock_timeout={spelled}"
        ))
        .unwrap();
        assert_eq!(
            (o.statement_timeout, o.lock_timeout),
            (limit, limit),
            "{spelled}"
        );
    }
    for bad in ["", "-1", "1.5s", "3h", "s", "99999999999999999999"] {
        match ConnectOptions::parse(&format!("mysql://r@a/t?lock_timeout={bad}")) {
            Err(Error::InvalidUrl { reason, .. }) => assert!(
                reason.starts_with(&format!("lock_timeout={bad} is not a time limit")),
                "{reason}"
            ),
            other => panic!("{bad:?}: {other:?}"),
        }
    }
    let pg = ConnectOptions::parse(
        "postgres://u@a/d?search_path=s1&statement_timeout=1500ms&lock_timeout=2s",
    )
    .unwrap();
    assert_eq!(
        pg.pg_startup_settings(),
        [
            ("search_path", "s1".to_owned()),
            ("statement_timeout", "1500".to_owned()),
            ("lock_timeout", "2000".to_owned())
        ]
    );
    assert!(pg.session_statements().is_empty());
    let my =
        ConnectOptions::parse("mysql://r@a/t?statement_timeout=1500&lock_timeout=1200").unwrap();
    assert_eq!(
        my.session_statements(),
        [
            "SET SESSION max_statement_time = 1.500",
            "SET SESSION innodb_lock_wait_timeout = 2"
        ]
    );
    assert!(my.pg_startup_settings().is_empty());
    let short = ConnectOptions::parse("mysql://r@a/t?lock_timeout=10ms").unwrap();
    assert_eq!(
        short.session_statements(),
        ["SET SESSION innodb_lock_wait_timeout = 1"]
    );
}

#[test]
fn socket_timeout_and_host_recheck() {
    use crate::options::{DEFAULT_HOST_RECHECK, DEFAULT_SOCKET_TIMEOUT};
    let secs = Duration::from_secs;
    let parse = |url: &str| ConnectOptions::parse(url).unwrap();
    // Defaults: every server URL has a bound; SQLite has no socket.
    let plain = parse("postgres://u@a/d");
    assert_eq!(
        (plain.socket_timeout, plain.host_recheck),
        (Some(DEFAULT_SOCKET_TIMEOUT), DEFAULT_HOST_RECHECK)
    );
    assert_eq!(parse("sqlite::memory:").socket_timeout, None);
    // Given: any time-limit spelling; 0 turns it off.
    let given = parse("mysql://r@a/t?socket_timeout=1500ms&host_recheck=2s");
    assert_eq!(
        (given.socket_timeout, given.host_recheck),
        (Some(Duration::from_millis(1500)), secs(2))
    );
    let off = parse("postgres://u@a/d?socket_timeout=0&host_recheck=0");
    assert_eq!(
        (off.socket_timeout, off.host_recheck),
        (None, Duration::ZERO)
    );
    // Not given: the server's own limits answer first, five seconds ahead of the bound.
    assert_eq!(
        parse("postgres://u@a/d?statement_timeout=2min").socket_timeout,
        Some(secs(125))
    );
    assert_eq!(
        parse("mysql://r@a/t?lock_timeout=60s&statement_timeout=1s").socket_timeout,
        Some(secs(65))
    );
    assert_eq!(
        parse("mysql://r@a/t?statement_timeout=1s").socket_timeout,
        Some(DEFAULT_SOCKET_TIMEOUT)
    );
    // The kernel's TCP_USER_TIMEOUT is an int of milliseconds: 2^31 ms or more is refused when asked
    // for, and cut to the largest when derived from a server limit.
    let max = crate::options::MAX_SOCKET_TIMEOUT;
    assert_eq!(
        parse(&format!("mysql://r@a/t?socket_timeout={}", max.as_millis())).socket_timeout,
        Some(max)
    );
    for too_long in [format!("{}", max.as_millis() + 1), "2147484s".into()] {
        match ConnectOptions::parse(&format!("postgres://u@a/d?socket_timeout={too_long}")) {
            Err(Error::InvalidUrl { reason, .. }) => assert!(
                reason.starts_with(&format!("socket_timeout={too_long} is longer than")),
                "{reason}"
            ),
            other => panic!("{too_long}: {other:?}"),
        }
    }
    assert_eq!(
        parse("postgres://u@a/d?statement_timeout=40000min").socket_timeout,
        Some(max)
    );
    // Given, it is taken as it is, even below the statement limit.
    assert_eq!(
        parse("postgres://u@a/d?statement_timeout=2min&socket_timeout=3s").socket_timeout,
        Some(secs(3))
    );
    match ConnectOptions::parse("postgres://u@a/d?socket_timeout=soon") {
        Err(Error::InvalidUrl { reason, .. }) => {
            assert!(
                reason.starts_with("socket_timeout=soon is not a time limit"),
                "{reason}"
            )
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn slow_statement_threshold() {
    let sqlite = ConnectOptions::parse("sqlite::memory:?slow_statement=250ms").unwrap();
    assert_eq!(sqlite.slow_statement, Some(Duration::from_millis(250)));
    let pg = ConnectOptions::parse("postgres://u@127.0.0.1/db?slow_statement=2s").unwrap();
    assert_eq!(pg.slow_statement, Some(Duration::from_secs(2)));
    let off = ConnectOptions::parse("mysql://u@127.0.0.1/db").unwrap();
    assert_eq!(off.slow_statement, None, "off by default");
    for bad in [
        "sqlite::memory:?slow_statement=fast",
        "postgres://u@127.0.0.1/db?slow_statement=-1",
    ] {
        let e = ConnectOptions::parse(bad).unwrap_err().to_string();
        assert!(e.contains("slow_statement"), "{bad}: {e}");
    }
}
