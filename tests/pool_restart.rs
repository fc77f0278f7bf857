//! Both pools survive a MariaDB restart: every pooled connection dies with the server, each fails at most
//! one call, new ones are opened, and afterwards the server holds exactly what the pools hold.
//!
//! The server is one this test starts for itself, in a container (`containers::Server`): a test stops only
//! what it started, never the machine's server on 3306. Without a container engine the harness reports the
//! case ignored with what to do (a failure under `CI=true`).

use std::sync::Arc;
use std::time::Duration;
use tandem_blocking::Executor as _;
use tandem_test_support::containers::Server;
use tandem_test_support::{db, harness, pools};

use pools::{Exec, Side, connections, until};
use tandem_core::DbErrorKind;
use tandem_pool::PoolConfig;
use tandem_sql::{Dialect, raw};

/// A MariaDB restart under both executors' pools.
fn pools_recover_after_a_mariadb_restart() {
    let server = Server::start(Dialect::MySql).unwrap_or_else(|e| panic!("{e}"));
    let target = db::target_at(Dialect::MySql, &server.url(), "", "restart");
    let admin = target
        .admin
        .as_ref()
        .expect("a server target has an admin connection");
    let config = PoolConfig {
        max_size: 4,
        min_idle: Some(4),
        ..PoolConfig::default()
    };
    let execs: Vec<Arc<Exec>> = [Side::Blocking, Side::Async]
        .into_iter()
        .map(|side| Arc::new(Exec::open_target(side, &target, config.clone()).unwrap()))
        .collect();
    for exec in &execs {
        assert!(pools::run_workers(exec, 8, 10).join().errors.is_empty());
    }
    assert_eq!(connections(&target), 8, "two warm pools of four");

    // The engine's stop: SIGTERM, a clean shutdown; every connection is closed by the server.
    server
        .stop(Duration::from_secs(30))
        .unwrap_or_else(|e| panic!("{e}"));
    server.restart().unwrap_or_else(|e| panic!("{e}"));
    until("the server answers", || {
        admin.execute(&raw("SELECT 1", vec![])).is_ok()
    });

    for exec in &execs {
        // Each connection died with the server: it fails one call at most, then is replaced.
        let mut lost = 0;
        while let Err(e) = exec.query() {
            assert_eq!(
                e.kind(),
                Some(DbErrorKind::ConnectionLost),
                "{:?}: {e}",
                exec.side
            );
            lost += 1;
            assert!(
                lost <= 4,
                "{:?}: more failures than dead connections",
                exec.side
            );
        }
        let after = pools::run_workers(exec, 8, 20).join();
        assert!(
            after.errors.is_empty(),
            "{:?}: {:?}",
            exec.side,
            after.errors
        );
    }
    until("the server holds what the pools hold", || {
        let held: u32 = execs.iter().map(|e| e.metrics().size).sum();
        execs.iter().all(|e| e.metrics().size <= 4) && connections(&target) == u64::from(held)
    });
    for exec in &execs {
        let m = exec.metrics();
        assert!(m.closed >= 4 && m.created >= 8, "{:?}: {m:?}", exec.side);
    }
}

fn main() {
    harness::main(
        [vec![
            harness::Case::new(
                "pools_recover_after_a_mariadb_restart",
                pools_recover_after_a_mariadb_restart,
            )
            .requires("a container engine", harness::container_engine),
        ]]
        .into_iter()
        .flatten()
        .collect(),
    );
}
