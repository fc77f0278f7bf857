//! Both pools survive a MariaDB restart: every pooled connection dies with the server, each fails at most
//! one call, new ones are opened, and afterwards the server holds exactly what the pools hold.
//!
//! A test binary of its own: it stops the whole server, which no other test may see. It stops and starts
//! the one server it tests — found by the pid file that server names (`@@pid_file`), never "any mariadbd":
//! other MariaDB instances (a Galera cluster's nodes, say) may run beside it — the way the machines here
//! start it (`start-stop-daemon … /usr/sbin/mariadbd`); elsewhere the harness reports it ignored with the
//! reason (a failure under `CI=true`).

use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tandem_blocking::Executor as _;
use tandem_test_support::{db, harness, pools};

use pools::{Exec, Side, connections, until};
use tandem_core::DbErrorKind;
use tandem_pool::PoolConfig;
use tandem_sql::{Dialect, raw};

const MARIADBD: &str = "/usr/sbin/mariadbd";

fn daemon(args: &[&str]) -> Option<i32> {
    Command::new("start-stop-daemon")
        .args(args)
        .status()
        .ok()
        .and_then(|s| s.code())
}

/// The server under test: its pid file (as it reports it) and the process that file names.
struct Server {
    pid_file: String,
    pid: u32,
}

/// Whether this test can stop and start the server; `Err` says why not.
fn can_restart(admin: &tandem_blocking::Database) -> Result<Server, String> {
    let host = admin.options().host.as_str();
    if !matches!(host, "127.0.0.1" | "localhost" | "::1") {
        return Err(format!("the server at {host} is not local"));
    }
    if !std::path::Path::new(MARIADBD).exists() {
        return Err(format!("{MARIADBD} is not here"));
    }
    let rows: Vec<(String,)> = admin
        .fetch_all(&raw("SELECT @@pid_file", vec![]))
        .map_err(|e| e.to_string())?;
    let pid_file = rows.first().map(|r| r.0.clone()).ok_or("no @@pid_file")?;
    let pid = std::fs::read_to_string(&pid_file)
        .map_err(|e| format!("{pid_file}: {e}"))?
        .trim()
        .parse::<u32>()
        .map_err(|e| format!("{pid_file}: {e}"))?;
    if !alive(pid) {
        return Err(format!("{pid_file} names pid {pid}, which is not running"));
    }
    Ok(Server { pid_file, pid })
}

/// The harness's check: the server answers and this test may restart it.
fn restartable() -> Result<(), String> {
    let (url, var) = db::server_url(Dialect::MySql);
    let admin = tandem_blocking::Database::connect(&url)
        .map_err(|e| format!("MariaDB unreachable ({e}); set {var} to a reachable server"))?;
    can_restart(&admin)
        .map(drop)
        .map_err(|why| format!("cannot restart MariaDB here: {why}"))
}

fn alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// Stops the server (SQL `SHUTDOWN`), waits for *its* process to end, starts it again by its pid file and
/// waits until it answers.
fn restart(admin: &tandem_blocking::Database, server: &Server) {
    let _ = admin.execute(&raw("SHUTDOWN", vec![]));
    let deadline = Instant::now() + Duration::from_secs(60);
    while alive(server.pid) {
        assert!(
            Instant::now() < deadline,
            "mariadbd {} did not stop",
            server.pid
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        daemon(&[
            "--start",
            "--oknodo",
            "--background",
            "--pidfile",
            &server.pid_file,
            "--exec",
            MARIADBD,
        ]),
        Some(0),
        "start mariadbd"
    );
    until("the server answers", || {
        admin.execute(&raw("SELECT 1", vec![])).is_ok()
    });
}

/// A MariaDB restart under both executors' pools.
fn pools_recover_after_a_mariadb_restart() {
    let target = db::target(Dialect::MySql, "restart");
    let admin = target
        .admin
        .as_ref()
        .expect("a server target has an admin connection");
    let server = can_restart(admin).expect("the harness checked that it can restart the server");
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

    restart(admin, &server);

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
            .needs(&[Dialect::MySql])
            .requires("a MariaDB this test may restart", restartable),
        ]]
        .into_iter()
        .flatten()
        .collect(),
    );
}
