//! URLs naming several servers (`host1:port1,host2:port2`), on one machine: both executors connect to the
//! first server that answers and is the kind asked for (`target_session_attrs=`), say which servers they
//! passed over and why when none will do, and a pool whose server vanishes goes on with the next one.
//!
//! A "server" that vanishes is a proxy in front of the real one, cut ([`Proxy::cut`]): its connections
//! break and new ones are refused, as when a node dies. The cluster itself (Galera nodes, a PostgreSQL
//! standby) is exercised by `tests/cluster/`.

use std::net::TcpListener;
use std::time::Duration;

use tandem_core::{ConnectOptions, DbErrorKind, Error};
use tandem_pool::PoolConfig;
use tandem_sql::{Dialect, raw};
use tandem_test_support::proxy::{self, Proxy};
use tandem_test_support::{db, harness, pools};

fn config() -> PoolConfig {
    PoolConfig {
        max_size: 4,
        connect_timeout: Duration::from_secs(5),
        ..PoolConfig::default()
    }
}

/// A loopback port nothing listens on: connecting is refused.
fn dead_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// The test server's URL with its `host:port` replaced by `servers` (a comma-separated list).
fn with_servers(dialect: Dialect, servers: &str) -> String {
    let base = db::server_url(dialect).0;
    let (scheme, rest) = base.split_once("://").unwrap();
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let userinfo = authority
        .rsplit_once('@')
        .map(|(u, _)| format!("{u}@"))
        .unwrap_or_default();
    format!("{scheme}://{userinfo}{servers}{tail}")
}

/// The test server's `host:port`.
fn server_target(dialect: Dialect) -> String {
    ConnectOptions::parse(&db::server_url(dialect).0)
        .unwrap()
        .target()
}

/// Adds `param` to a URL's query.
fn with_param(url: &str, param: &str) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}{param}")
}

/// The server's answer to `sql` (one integer) on both executors, over a fresh pool each.
fn ask_both(url: &str, sql: &str) -> [Result<i64, Error>; 2] {
    use tandem_async::Executor as _;
    use tandem_blocking::Executor as _;
    let stmt = raw(sql, vec![]);
    let blocking = tandem_blocking::Database::connect_with(url, config())
        .and_then(|db| db.fetch_one::<(i64,)>(&stmt).map(|(v,)| v));
    let asynchronous = harness::block_on(async {
        let db = tandem_async::Database::connect_with(&db::with_driver(url), config()).await?;
        db.fetch_one::<(i64,)>(&stmt).await.map(|(v,)| v)
    });
    [blocking, asynchronous]
}

/// Which server a session is on, as a number the test can compare: the server's start time in
/// microseconds (PostgreSQL), a checksum of its unique id (MariaDB). Not its port: a server in a container
/// listens on another port than the one the URL names.
fn identity_sql(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::Postgres => {
            "SELECT CAST(EXTRACT(EPOCH FROM pg_postmaster_start_time()) * 1000000 AS BIGINT)"
        }
        _ => "SELECT CAST(CRC32(@@server_uid) AS SIGNED)",
    }
}

/// A server that does not answer is passed over; the next in the list is connected to.
fn dead_first(dialect: Dialect) {
    let url = with_servers(
        dialect,
        &format!("127.0.0.1:{},{}", dead_port(), server_target(dialect)),
    );
    let [server, _] = ask_both(&db::server_url(dialect).0, identity_sql(dialect));
    let server = server.expect("the server answers at its own URL");
    for (side, r) in ["blocking", "async"]
        .iter()
        .zip(ask_both(&url, identity_sql(dialect)))
    {
        assert_eq!(
            r.unwrap_or_else(|e| panic!("{side}: {e}")),
            server,
            "{side}: the session is not on the server that answers"
        );
    }
}

fn dead_first_postgres() {
    dead_first(Dialect::Postgres);
}

fn dead_first_mysql() {
    dead_first(Dialect::MySql);
}

/// No server answers: one connection-lost error naming every server, on both executors.
fn none_answers() {
    let (a, b) = (dead_port(), dead_port());
    for scheme in ["postgres", "mysql"] {
        let url = format!("{scheme}://u@127.0.0.1:{a},127.0.0.1:{b}/db");
        for (side, r) in ["blocking", "async"].iter().zip(ask_both(&url, "SELECT 1")) {
            match r {
                Err(Error::Database(d)) => {
                    assert_eq!(d.kind, DbErrorKind::ConnectionLost, "{side} {scheme}");
                    assert!(
                        d.message.contains(&format!(
                            "no server of 127.0.0.1:{a},127.0.0.1:{b} answered"
                        )) && d.message.contains(&format!("127.0.0.1:{b} did not answer")),
                        "{side} {scheme}: {}",
                        d.message
                    );
                }
                other => panic!("{side} {scheme}: {other:?}"),
            }
        }
    }
}

/// `target_session_attrs`, against a primary (the test server is one): `read-write`, `primary` and `any`
/// take it, after a server that does not answer; `standby` and `read-only` refuse it with
/// `NodeUnavailable`, saying what it is; `prefer-standby` takes it on its second walk.
fn session_attrs_postgres() {
    let target = server_target(Dialect::Postgres);
    let url = with_servers(
        Dialect::Postgres,
        &format!("127.0.0.1:{},{target}", dead_port()),
    );
    for attrs in ["read-write", "primary", "any", "prefer-standby"] {
        let u = with_param(&url, &format!("target_session_attrs={attrs}"));
        for (side, r) in ["blocking", "async"].iter().zip(ask_both(&u, "SELECT 1")) {
            assert_eq!(r.unwrap_or_else(|e| panic!("{side} {attrs}: {e}")), 1);
        }
    }
    for attrs in ["standby", "read-only"] {
        let u = with_param(&url, &format!("target_session_attrs={attrs}"));
        for (side, r) in ["blocking", "async"].iter().zip(ask_both(&u, "SELECT 1")) {
            match r {
                Err(Error::Database(d)) => {
                    assert_eq!(d.kind, DbErrorKind::NodeUnavailable, "{side} {attrs}");
                    assert!(
                        d.message
                            .contains(&format!("{target} is a primary (read-write)"))
                            && d.message.contains(&format!("target_session_attrs={attrs}")),
                        "{side} {attrs}: {}",
                        d.message
                    );
                }
                other => panic!("{side} {attrs}: {other:?}"),
            }
        }
    }
}

/// How many of `tries` statements fail before one succeeds again, and that one does.
fn failures_until_success(mut run: impl FnMut() -> Result<i64, Error>, tries: usize) -> usize {
    for failed in 0..tries {
        match run() {
            Ok(_) => return failed,
            Err(e) => {
                eprintln!("after the cut, call {failed}: {e}");
                assert!(
                    matches!(
                        &e,
                        Error::Database(d) if d.kind == DbErrorKind::ConnectionLost
                    ),
                    "a vanished server is a lost connection: {e:?}"
                );
            }
        }
    }
    panic!("no statement succeeded in {tries} tries after the server vanished");
}

/// A pool on `a,b` (two proxies in front of one server) works through `a`; `a` is cut (every connection
/// broken, new ones refused): each executor loses at most the statements that were on a broken connection,
/// then goes on through `b` by itself.
fn pool_follows(dialect: Dialect) {
    use tandem_async::Executor as _;
    use tandem_blocking::Executor as _;
    let upstream = server_target(dialect);
    let stmt = raw("SELECT 1", vec![]);
    for side in ["blocking", "async"] {
        let (a, b): (Proxy, Proxy) = (
            proxy::start(&upstream, |_| true),
            proxy::start(&upstream, |_| true),
        );
        let url = with_servers(
            dialect,
            &format!("127.0.0.1:{},127.0.0.1:{}", a.port, b.port),
        );
        let rt = harness::runtime();
        let blocking;
        let asynchronous;
        type Metrics<'a> = Box<dyn Fn() -> tandem_pool::PoolMetrics + 'a>;
        let (mut run, metrics): (Box<dyn FnMut() -> Result<i64, Error>>, Metrics) =
            if side == "blocking" {
                blocking = tandem_blocking::Database::connect_with(&url, config()).unwrap();
                (
                    Box::new(|| blocking.fetch_one::<(i64,)>(&stmt).map(|(v,)| v)),
                    Box::new(|| blocking.pool_metrics()),
                )
            } else {
                asynchronous = rt
                    .block_on(tandem_async::Database::connect_with(
                        &db::with_driver(&url),
                        config(),
                    ))
                    .unwrap();
                (
                    Box::new(|| {
                        rt.block_on(asynchronous.fetch_one::<(i64,)>(&stmt))
                            .map(|(v,)| v)
                    }),
                    Box::new(|| asynchronous.pool_metrics()),
                )
            };
        for _ in 0..8 {
            run().unwrap();
        }
        // Every connection back in the pool before the cut. (sqlx puts a connection back on a task of its
        // own, after the call returned: one still on its way back when the first failure is noted would
        // be handed out later as if it had been idle since after the loss.)
        pools::until("every connection idle before the cut", || {
            let m = metrics();
            m.in_use == 0 && m.idle == m.size
        });
        assert!(
            a.accepted() > 0,
            "{side}: the pool starts on the first server"
        );
        assert_eq!(
            b.accepted(),
            0,
            "{side}: the second is not touched while the first serves"
        );
        a.cut();
        // A statement on a connection that was open on the cut server fails; the pool notes the loss and
        // checks or replaces the others. One failure is the rule; under load (CI) a second connection
        // already checked out at the moment of the loss has been seen to fail too.
        let failed = failures_until_success(&mut run, 10);
        assert!(
            failed <= 2,
            "{side}: {failed} statements failed after the cut"
        );
        for _ in 0..20 {
            run().unwrap_or_else(|e| panic!("{side}: after failing over: {e}"));
        }
        assert!(
            b.accepted() > 0,
            "{side}: the pool went on through the second server"
        );
    }
}

fn pool_follows_failover_postgres() {
    pool_follows(Dialect::Postgres);
}

fn pool_follows_failover_mysql() {
    pool_follows(Dialect::MySql);
}

/// A server that vanishes (its proxy cut) surfaces within the connect timeout as a lost connection on
/// both executors — not as a pool timeout after the (much longer) acquire timeout — and every later call
/// says so at once, until the server is back.
fn dead_server_surfaces(dialect: Dialect) {
    use tandem_async::Executor as _;
    use tandem_blocking::Executor as _;
    let upstream = server_target(dialect);
    let stmt = raw("SELECT 1", vec![]);
    let quick = PoolConfig {
        max_size: 2,
        min_idle: Some(2),
        connect_timeout: Duration::from_millis(800),
        acquire_timeout: Duration::from_secs(30),
        ..PoolConfig::default()
    };
    for side in ["blocking", "async"] {
        let proxy = proxy::start(&upstream, |_| true);
        let url = with_servers(dialect, &format!("127.0.0.1:{}", proxy.port));
        let rt = harness::runtime();
        let blocking;
        let asynchronous;
        let mut run: Box<dyn FnMut() -> Result<i64, Error>> = if side == "blocking" {
            blocking = tandem_blocking::Database::connect_with(&url, quick.clone()).unwrap();
            Box::new(|| blocking.fetch_one::<(i64,)>(&stmt).map(|(v,)| v))
        } else {
            asynchronous = rt
                .block_on(tandem_async::Database::connect_with(
                    &db::with_driver(&url),
                    quick.clone(),
                ))
                .unwrap();
            Box::new(|| {
                rt.block_on(asynchronous.fetch_one::<(i64,)>(&stmt))
                    .map(|(v,)| v)
            })
        };
        run().unwrap();
        proxy.cut();
        // Each call fails within two connect timeouts. One of them — whichever first needs a new
        // connection: the dead idle ones may or may not be drawn before it, as the threads run — waits
        // out a connect attempt and so learns the server is gone; every call after that fails at once.
        let mut learned = false;
        for call in 0..4 {
            let started = std::time::Instant::now();
            let r = run();
            let took = started.elapsed();
            match r {
                Err(Error::Database(d)) if d.kind == DbErrorKind::ConnectionLost => {}
                other => panic!("{side}: call {call} after the cut: {other:?}"),
            }
            assert!(
                took < quick.connect_timeout * 2,
                "{side}: call {call} took {took:?}"
            );
            let waited = took >= Duration::from_millis(300);
            assert!(
                !(waited && learned),
                "{side}: call {call} took {took:?} after an earlier call found the server gone"
            );
            learned |= waited;
        }
    }
}

fn dead_server_surfaces_postgres() {
    dead_server_surfaces(Dialect::Postgres);
}

fn dead_server_surfaces_mysql() {
    dead_server_surfaces(Dialect::MySql);
}

/// A pool on `a,b` works through `a`; `a` falls silent (its proxy passes nothing either way and closes
/// nothing: a frozen server or a partition, as the client sees it). The call waiting on it fails with
/// `NoAnswer` naming `a` once `socket_timeout` has passed — not after the freeze, which never ends here —
/// and the pool goes on through `b` without waiting out a timeout per connection: `a` is tried last by
/// every walk for `host_recheck`, and pooled connections to it are dropped or fail a short ping.
fn silent_server_is_passed_over(dialect: Dialect) {
    use tandem_test_support::pools::{Exec, Side};
    let upstream = server_target(dialect);
    let bound = Duration::from_secs(1);
    let config = PoolConfig {
        max_size: 4,
        min_idle: Some(2),
        connect_timeout: Duration::from_secs(3),
        ..PoolConfig::default()
    };
    for side in [Side::Blocking, Side::Async] {
        let (a, b) = (
            proxy::start(&upstream, |_| true),
            proxy::start(&upstream, |_| true),
        );
        let url = with_param(
            &with_servers(
                dialect,
                &format!("127.0.0.1:{},127.0.0.1:{}", a.port, b.port),
            ),
            "socket_timeout=1s&host_recheck=60s",
        );
        let exec = Exec::connect(side, &url, config.clone()).unwrap();
        let run = || exec.query();
        for _ in 0..8 {
            run().unwrap();
        }
        // The first call after the silence is to find an idle connection, as a call on a busy pool does:
        // sqlx puts each connection back on a task of its own, and a call made before it is back opens a
        // new one (to the silent server: a connect timeout, not the call's own socket timeout).
        pools::until("every connection idle before the silence", || {
            let m = exec.metrics();
            m.in_use == 0 && m.idle == m.size
        });
        assert_eq!(
            b.accepted(),
            0,
            "{side:?}: the pool starts on the first server"
        );
        a.silence();
        let started = std::time::Instant::now();
        let first = run();
        let surfaced = started.elapsed();
        match &first {
            Err(Error::Database(d)) if d.kind == DbErrorKind::NoAnswer => assert!(
                d.message.contains(&format!("127.0.0.1:{}", a.port)),
                "{side:?}: the error names the silent server: {}",
                d.message
            ),
            other => panic!("{side:?}: a call on the silent server gave {other:?}"),
        }
        assert!(
            surfaced >= bound && surfaced < bound + Duration::from_secs(3),
            "{side:?}: socket_timeout is {bound:?}, the call failed after {surfaced:?}"
        );
        // The next calls: on through `b`, with at most one more failure (a connection checked out of a
        // pool that had not yet seen the loss), and without a connect timeout's wait.
        let started = std::time::Instant::now();
        let mut failed = 0;
        while let Err(e) = run() {
            failed += 1;
            assert!(
                e.is_unreachable() && failed <= 1,
                "{side:?}: call {failed} after the silence: {e:?}"
            );
        }
        let recovered = started.elapsed();
        eprintln!(
            "{side:?} {dialect}: no answer surfaced after {surfaced:?}; served again {recovered:?} later"
        );
        assert!(
            recovered < bound * 2 + Duration::from_secs(1),
            "{side:?}: going on through the second server took {recovered:?}"
        );
        for _ in 0..20 {
            run().unwrap_or_else(|e| panic!("{side:?}: after passing the silent server over: {e}"));
        }
        assert!(
            b.accepted() > 0,
            "{side:?}: the pool went on through the second server"
        );
    }
}

fn silent_server_is_passed_over_postgres() {
    silent_server_is_passed_over(Dialect::Postgres);
}

fn silent_server_is_passed_over_mysql() {
    silent_server_is_passed_over(Dialect::MySql);
}

/// Marks the session a statement runs in, and reads the mark back: a session variable, so a mark set in a
/// read-only transaction is seen only on that connection.
fn mark_sql(dialect: Dialect) -> (&'static str, &'static str) {
    match dialect {
        Dialect::Postgres => (
            "SELECT CAST(length(set_config('tandem.route', 'standby', false)) AS BIGINT)",
            "SELECT CAST(COALESCE(length(current_setting('tandem.route', true)), 0) AS BIGINT)",
        ),
        _ => (
            "SELECT CAST(length(@tandem_route := 'standby') AS SIGNED)",
            "SELECT CAST(COALESCE(length(@tandem_route), 0) AS SIGNED)",
        ),
    }
}

/// Runs one statement in a transaction (read-only or not) and returns its integer.
type TxRun<'a> = dyn FnMut(bool, &str) -> Result<i64, Error> + 'a;

/// Read-only transactions go to the standby (here a proxy in front of the same server, with one connection
/// per pool, so a session mark tells the pools apart); other transactions stay on the primary; when the
/// standby is gone, read-only transactions run on the primary after at most one failure.
fn standby_routing(dialect: Dialect) {
    use tandem_core::TxOptions;
    let upstream = server_target(dialect);
    let (mark, read_mark) = mark_sql(dialect);
    let one = PoolConfig {
        max_size: 1,
        min_idle: Some(1),
        connect_timeout: Duration::from_secs(2),
        ..PoolConfig::default()
    };
    let primary_url = db::server_url(dialect).0;
    for side in ["blocking", "async"] {
        let proxy = proxy::start(&upstream, |_| true);
        let standby_url = with_servers(dialect, &format!("127.0.0.1:{}", proxy.port));
        let rt = harness::runtime();
        // (read-only?, sql) → the answer, on this side's Database.
        let blocking;
        let asynchronous;
        let mut run: Box<TxRun> = if side == "blocking" {
            blocking = tandem_blocking::Database::connect_with(&primary_url, one.clone())
                .and_then(|d| d.with_standby(&standby_url))
                .unwrap();
            Box::new(|read_only, sql| {
                use tandem_blocking::Executor as _;
                let opts = if read_only {
                    TxOptions::default().read_only()
                } else {
                    TxOptions::default()
                };
                let stmt = raw(sql, vec![]);
                blocking.transaction_with(opts, |tx| tx.fetch_one::<(i64,)>(&stmt).map(|(v,)| v))
            })
        } else {
            asynchronous = rt
                .block_on(async {
                    let d = tandem_async::Database::connect_with(
                        &db::with_driver(&primary_url),
                        one.clone(),
                    )
                    .await?;
                    d.with_standby(&standby_url).await
                })
                .unwrap();
            Box::new(|read_only, sql| {
                use tandem_async::Executor as _;
                let opts = if read_only {
                    TxOptions::default().read_only()
                } else {
                    TxOptions::default()
                };
                let stmt = raw(sql, vec![]);
                rt.block_on(async {
                    let tx = asynchronous.begin(opts).await?;
                    let (v,) = tx.fetch_one::<(i64,)>(&stmt).await?;
                    tx.commit().await?;
                    Ok(v)
                })
            })
        };
        assert_eq!(run(true, mark).unwrap(), 7, "{side}: marked on the standby");
        assert_eq!(
            run(true, read_mark).unwrap(),
            7,
            "{side}: read-only: the standby's session"
        );
        assert_eq!(
            run(false, read_mark).unwrap(),
            0,
            "{side}: read-write: the primary's session"
        );
        assert!(proxy.accepted() > 0, "{side}");
        proxy.cut();
        let failed = failures_until_success(|| run(true, read_mark), 3);
        assert!(
            failed <= 1,
            "{side}: {failed} read-only transactions failed"
        );
        assert_eq!(
            run(true, read_mark).unwrap(),
            0,
            "{side}: with the standby gone, read-only transactions run on the primary"
        );
    }
}

fn standby_routing_postgres() {
    standby_routing(Dialect::Postgres);
}

fn standby_routing_mysql() {
    standby_routing(Dialect::MySql);
}

fn main() {
    harness::main(vec![
        harness::Case::new("dead_first_postgres", dead_first_postgres).needs(&[Dialect::Postgres]),
        harness::Case::new("dead_first_mysql", dead_first_mysql).needs(&[Dialect::MySql]),
        harness::Case::new("none_answers", none_answers),
        harness::Case::new("session_attrs_postgres", session_attrs_postgres)
            .needs(&[Dialect::Postgres]),
        harness::Case::new(
            "pool_follows_failover_postgres",
            pool_follows_failover_postgres,
        )
        .needs(&[Dialect::Postgres]),
        harness::Case::new("pool_follows_failover_mysql", pool_follows_failover_mysql)
            .needs(&[Dialect::MySql]),
        harness::Case::new("standby_routing_postgres", standby_routing_postgres)
            .needs(&[Dialect::Postgres]),
        harness::Case::new(
            "dead_server_surfaces_postgres",
            dead_server_surfaces_postgres,
        )
        .needs(&[Dialect::Postgres]),
        harness::Case::new("dead_server_surfaces_mysql", dead_server_surfaces_mysql)
            .needs(&[Dialect::MySql]),
        harness::Case::new("standby_routing_mysql", standby_routing_mysql).needs(&[Dialect::MySql]),
        harness::Case::new(
            "silent_server_is_passed_over_postgres",
            silent_server_is_passed_over_postgres,
        )
        .needs(&[Dialect::Postgres]),
        harness::Case::new(
            "silent_server_is_passed_over_mysql",
            silent_server_is_passed_over_mysql,
        )
        .needs(&[Dialect::MySql]),
    ]);
}
