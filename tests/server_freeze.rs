//! A server that freezes — every process stopped, its sockets open, nothing answering: what a client sees
//! of a stalled server or of a network partition that drops packets — under both executors, on
//! PostgreSQL and MariaDB. What a user is promised today:
//!
//! - a new connection to the frozen server fails with the typed `ConnectTimeout` within the pool's
//!   `connect_timeout` (the TCP connection is accepted by the kernel; the handshake never comes);
//! - a statement already sent waits through a freeze shorter than `socket_timeout` and then completes:
//!   nothing is lost or done twice, and the pool serves again at once after the thaw;
//! - a freeze longer than `socket_timeout` fails the waiting call with the typed `NoAnswer` once that
//!   bound has passed, and the pool serves again as soon as the server thaws.
//!
//! Each case freezes a server it started for itself, in a container (`containers::Server`, the engine's
//! pause): never the machine's servers on 5432/3306. Without a container engine the harness reports the
//! cases ignored with what to do (a failure under `CI=true`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use tandem_core::Error;
use tandem_pool::PoolConfig;
use tandem_sql::Dialect;
use tandem_test_support::containers::Server;
use tandem_test_support::harness;
use tandem_test_support::pools::{Exec, Side};

/// The connect timeout the cases set: short, so the bound is seen quickly.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// How long a case keeps its server frozen while a statement waits.
const FREEZE: Duration = Duration::from_secs(3);
/// Slack for a busy two-core machine on top of a bound.
const SLACK: Duration = Duration::from_secs(3);

fn config() -> PoolConfig {
    PoolConfig {
        max_size: 2,
        min_idle: Some(1),
        connect_timeout: CONNECT_TIMEOUT,
        acquire_timeout: CONNECT_TIMEOUT * 2,
        ..PoolConfig::default()
    }
}

fn started(dialect: Dialect) -> Server {
    Server::start(dialect).unwrap_or_else(|e| panic!("{e}"))
}

/// Opening a pool on a frozen server fails within the connect timeout with `ConnectTimeout`, on both
/// executors; after the thaw the same URL opens at once.
fn new_connections_to_a_frozen_server_time_out(dialect: Dialect) {
    let server = started(dialect);
    let url = server.url();
    server.pause().unwrap_or_else(|e| panic!("{e}"));
    for side in [Side::Blocking, Side::Async] {
        let began = Instant::now();
        let outcome = Exec::connect(side, &url, config()).and_then(|exec| exec.query());
        let took = began.elapsed();
        match outcome {
            Err(Error::ConnectTimeout { timeout, .. }) => assert_eq!(timeout, CONNECT_TIMEOUT),
            other => panic!("{side:?} {dialect}: a frozen server gave {other:?} after {took:?}"),
        }
        assert!(
            took < CONNECT_TIMEOUT + SLACK,
            "{side:?} {dialect}: the connect timeout is {CONNECT_TIMEOUT:?}, the failure took {took:?}"
        );
    }
    server.unpause().unwrap_or_else(|e| panic!("{e}"));
    for side in [Side::Blocking, Side::Async] {
        let exec = Exec::connect(side, &url, config())
            .unwrap_or_else(|e| panic!("{side:?} {dialect}: after the thaw: {e}"));
        assert_eq!(exec.query().unwrap(), 1);
    }
}

/// Both executors' pools on `url`, each answering once before the freeze; then the server is paused and
/// each sends `SELECT 1` from a thread of its own. Returns the pools and the threads, whose results carry
/// how long after the pause each call ended.
#[allow(clippy::type_complexity)]
fn query_into_a_freeze(
    server: &Server,
    url: &str,
) -> (
    Vec<Arc<Exec>>,
    Vec<std::thread::JoinHandle<(Side, tandem_core::Result<i64>, Duration)>>,
) {
    let execs: Vec<Arc<Exec>> = [Side::Blocking, Side::Async]
        .into_iter()
        .map(|side| Arc::new(Exec::connect(side, url, config()).unwrap()))
        .collect();
    for exec in &execs {
        assert_eq!(exec.query().unwrap(), 1, "{:?}: warm", exec.side);
    }
    server.pause().unwrap_or_else(|e| panic!("{e}"));
    let frozen_at = Instant::now();
    let waiting = execs
        .iter()
        .map(|exec| {
            let exec = Arc::clone(exec);
            std::thread::spawn(move || {
                let r = exec.query();
                (exec.side, r, frozen_at.elapsed())
            })
        })
        .collect();
    (execs, waiting)
}

/// After the thaw each pool answers ten calls at once.
fn serve_at_once(execs: &[Arc<Exec>], dialect: Dialect) {
    for exec in execs {
        let began = Instant::now();
        for _ in 0..10 {
            assert_eq!(
                exec.query().unwrap(),
                1,
                "{:?} {dialect}: after the thaw",
                exec.side
            );
        }
        assert!(
            began.elapsed() < SLACK,
            "{:?} {dialect}: ten calls after the thaw took {:?}",
            exec.side,
            began.elapsed()
        );
    }
}

/// A statement sent just before the freeze waits for the thaw and then completes; the pool then serves
/// every call at once.
fn a_statement_waits_out_the_freeze(dialect: Dialect) {
    let server = started(dialect);
    let (execs, waiting) = query_into_a_freeze(&server, &server.url());
    std::thread::sleep(FREEZE);
    server.unpause().unwrap_or_else(|e| panic!("{e}"));
    for w in waiting {
        let (side, r, took) = w.join().expect("the querying thread");
        assert_eq!(r.ok(), Some(1), "{side:?} {dialect}: after the thaw");
        assert!(
            took >= FREEZE,
            "{side:?} {dialect}: answered after {took:?}, while the server was frozen for {FREEZE:?}"
        );
    }
    serve_at_once(&execs, dialect);
}

/// With `socket_timeout=1s`, a statement on a frozen server fails with `NoAnswer` naming the server once
/// the second has passed, on both executors — however long the freeze lasts; after the thaw the same pool
/// serves at once.
fn a_statement_gives_up_on_a_frozen_server(dialect: Dialect) {
    let server = started(dialect);
    let bound = Duration::from_secs(1);
    let url = format!("{}?socket_timeout=1s", server.url());
    let (execs, waiting) = query_into_a_freeze(&server, &url);
    for w in waiting {
        let (side, r, took) = w.join().expect("the querying thread");
        // The call's statement went to the frozen server on a pooled connection: NoAnswer once the
        // bound has passed. (Now and then the pool had no idle connection at that moment and made a new
        // one, which the frozen server never completes: then the call fails as a connect timeout, within
        // the pool's two connect attempts.)
        let limit = match r {
            Err(Error::Database(d)) if d.kind == tandem_core::DbErrorKind::NoAnswer => {
                assert!(
                    d.message.contains("socket_timeout"),
                    "{side:?}: {}",
                    d.message
                );
                eprintln!("{side:?} {dialect}: no answer surfaced {took:?} into the freeze");
                assert!(
                    took >= bound,
                    "{side:?} {dialect}: failed before the bound: {took:?}"
                );
                bound
            }
            Err(Error::ConnectTimeout { .. }) => {
                eprintln!(
                    "{side:?} {dialect}: a new connection timed out {took:?} into the freeze"
                );
                2 * CONNECT_TIMEOUT
            }
            other => panic!("{side:?} {dialect}: a frozen server gave {other:?} after {took:?}"),
        };
        assert!(
            took < limit + SLACK,
            "{side:?} {dialect}: the bound is {limit:?}, the call failed after {took:?}"
        );
    }
    server.unpause().unwrap_or_else(|e| panic!("{e}"));
    serve_at_once(&execs, dialect);
}

fn main() {
    let mut cases = Vec::new();
    for (engine, dialect) in [("postgres", Dialect::Postgres), ("mysql", Dialect::MySql)] {
        cases.push(
            harness::Case::new(
                format!("new_connections_to_a_frozen_server_time_out::{engine}"),
                move || new_connections_to_a_frozen_server_time_out(dialect),
            )
            .requires("a container engine", harness::container_engine),
        );
        cases.push(
            harness::Case::new(
                format!("a_statement_waits_out_the_freeze::{engine}"),
                move || a_statement_waits_out_the_freeze(dialect),
            )
            .requires("a container engine", harness::container_engine),
        );
        cases.push(
            harness::Case::new(
                format!("a_statement_gives_up_on_a_frozen_server::{engine}"),
                move || a_statement_gives_up_on_a_frozen_server(dialect),
            )
            .requires("a container engine", harness::container_engine),
        );
    }
    harness::main(cases);
}
