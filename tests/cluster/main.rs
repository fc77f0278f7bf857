//! Past one machine: tandem against a 3-node MariaDB Galera cluster (127.0.0.1:3311-3313) and a PostgreSQL
//! primary (5433) with a hot standby (5434), as `.ci/cluster up` (`just cluster-up`) starts them.
//!
//! What a cluster changes, each checked here with nodes killed for real (SIGKILL by the pid file of the
//! node, never any other server): the essay job spread over the nodes writes the exact target on every
//! node; the same job started on two nodes runs once; a job whose node dies stops within the connect
//! timeout and its rerun, through the same URL, completes on a surviving node with nothing lost or written
//! twice; a job whose node freezes (SIGSTOP) stops within `socket_timeout` and its rerun completes on
//! another node while the frozen one is still frozen; cross-node write conflicts (1213 at COMMIT) are
//! retried by the transaction rule; the standby serves read-only transactions and refuses a batch run; a
//! frozen PostgreSQL primary is replaced by the standby pg_auto_failover promotes, the job resuming there
//! by itself. And what a batch run promises on a cluster (`lag`, `stops`): started right after its source
//! was loaded through another node, with a node held back, it decides on what the cluster committed; a
//! runner stopped with SIGSTOP loses the job within one lease on any node; a frozen node under a spread
//! pool ends the run within its bounds; a twin start is refused at once with a node frozen.
//!
//! The figures (rows per node, reruns, time to detect a dead node, retries, replay lag) are printed.
//! Without the cluster each test is skipped saying how to start it; under `CI=true` it fails. The tests of
//! one cluster share its nodes, so they run one at a time whatever `--test-threads` says; a Galera test and
//! a PostgreSQL test share nothing and run side by side (with two test threads or more).

use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Barrier, Mutex};
use std::time::{Duration, Instant};

use tandem_batch::essay::{self, Source, Target, benchmark_source, benchmark_target};
use tandem_batch::{BatchJob, JobError, JobReport};
use tandem_blocking::Executor as _;
use tandem_core::{ConnectOptions, DbErrorKind, Error, TxOptions};
use tandem_pool::PoolConfig;
use tandem_sql::prelude::*;
use tandem_sql::raw;
use tandem_test_support::{db, harness};

const ROWS: usize = 10_000;

/// One Galera test at a time: they kill, freeze and restart the nodes the others use.
static GALERA: Mutex<()> = Mutex::new(());

/// One test of the PostgreSQL pair at a time: a failover swaps the roles the others rely on.
static PG_PAIR: Mutex<()> = Mutex::new(());

fn cluster_dir() -> String {
    std::env::var("TANDEM_CLUSTER_DIR").unwrap_or_else(|_| "/var/tmp/tandem-cluster".into())
}

/// The Galera nodes' URLs (`TANDEM_GALERA_URL`, a host list), database `test`.
fn galera_nodes() -> Vec<(String, u16)> {
    let url = std::env::var("TANDEM_GALERA_URL").unwrap_or_else(|_| {
        "mysql://root@127.0.0.1:3311,127.0.0.1:3312,127.0.0.1:3313/test".into()
    });
    ConnectOptions::parse(&url)
        .expect("TANDEM_GALERA_URL is a MySQL URL")
        .hosts
}

fn node_url(node: usize, database: &str) -> String {
    let (host, port) = &galera_nodes()[node];
    format!("mysql://root@{host}:{port}/{database}")
}

/// Every node, in order, as one URL; `extra` is appended as the query.
fn cluster_url(database: &str, extra: &str) -> String {
    let list: Vec<String> = galera_nodes()
        .iter()
        .map(|(h, p)| format!("{h}:{p}"))
        .collect();
    format!("mysql://root@{}/{database}{extra}", list.join(","))
}

/// An async database at `url` on the suite's async driver (`TANDEM_ASYNC_DRIVER`, see `db::async_driver`).
async fn connect_async(url: &str, config: PoolConfig) -> Result<tandem_async::Database, Error> {
    tandem_async::Database::connect_with(&db::with_driver(url), config).await
}

const PG_PRIMARY: &str = "postgres://postgres@127.0.0.1:5433/test";
const PG_STANDBY: &str = "postgres://postgres@127.0.0.1:5434/test";

fn quick() -> PoolConfig {
    PoolConfig {
        max_size: 12,
        connect_timeout: Duration::from_secs(3),
        ..PoolConfig::default()
    }
}

fn status(db: &tandem_blocking::Database, name: &str) -> String {
    db.fetch_one::<(String,)>(&raw(
        "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = ?",
        vec![name.to_uppercase().into()],
    ))
    .map(|(v,)| v)
    .unwrap_or_default()
}

/// The Galera cluster is up: three nodes, each synced.
fn galera_ready() -> Result<(), String> {
    let why = |e: String| {
        format!(
            "{e}; start the cluster with `just cluster-up` (.ci/cluster up), or set TANDEM_GALERA_URL"
        )
    };
    for node in 0..galera_nodes().len() {
        let url = node_url(node, "test");
        let db = tandem_blocking::Database::connect_with(&url, quick())
            .map_err(|e| why(format!("Galera node {url} unreachable ({e})")))?;
        let state = status(&db, "wsrep_local_state_comment");
        if state != "Synced" {
            return Err(why(format!("Galera node {url} is {state:?}, not Synced")));
        }
    }
    Ok(())
}

/// The PostgreSQL pair is up: a primary on 5433 and a standby in recovery on 5434. Found the other way
/// round (pg_auto_failover failed over: a failover test cut short, a node that stalled), the pair is
/// switched back by `.ci/cluster pg-settle` first, once, saying so.
fn pg_pair_ready() -> Result<(), String> {
    match pg_roles() {
        Err(e) if e.swapped => {
            eprintln!("{}; switching back with `.ci/cluster pg-settle`", e.why);
            pg_settle().map_err(|settle| format!("{}; {settle}", e.why))?;
            pg_roles().map_err(|e| e.why)
        }
        other => other.map_err(|e| e.why),
    }
}

struct PairNotReady {
    why: String,
    /// 5433 is a standby and 5434 the primary.
    swapped: bool,
}

fn pg_roles() -> Result<(), PairNotReady> {
    let down = |e: String| PairNotReady {
        why: format!("{e}; start it with `just cluster-up` (.ci/cluster up)"),
        swapped: false,
    };
    let mut in_recovery = [false; 2];
    for (url, standby) in [PG_PRIMARY, PG_STANDBY].into_iter().zip(&mut in_recovery) {
        let db = tandem_blocking::Database::connect_with(url, quick())
            .map_err(|e| down(format!("PostgreSQL {url} unreachable ({e})")))?;
        (*standby,) = db
            .fetch_one(&raw("SELECT pg_is_in_recovery()", vec![]))
            .map_err(|e| down(e.to_string()))?;
    }
    match in_recovery {
        [false, true] => Ok(()),
        [true, false] => Err(PairNotReady {
            why: format!("{PG_PRIMARY} is the standby and {PG_STANDBY} the primary"),
            swapped: true,
        }),
        [primary, standby] => Err(down(format!(
            "{PG_PRIMARY} in recovery: {primary}, {PG_STANDBY} in recovery: {standby}"
        ))),
    }
}

/// `.ci/cluster pg-settle`: the pair whole again with 5433 the primary.
fn pg_settle() -> Result<(), String> {
    cluster_script("pg-settle")
}

/// `.ci/cluster <command>`; what it printed when it fails.
fn cluster_script(command: &str) -> Result<(), String> {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/.ci/cluster");
    let out = Command::new(script)
        .arg(command)
        .output()
        .map_err(|e| format!("{script} {command}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{script} {command}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

/// A database of its own on the cluster for one test, dropped when done.
struct ClusterDb {
    name: String,
}

impl ClusterDb {
    fn new(test: &str) -> ClusterDb {
        let name = format!("t_{test}_{}", std::process::id());
        let admin =
            tandem_blocking::Database::connect_with(&cluster_url("test", ""), quick()).unwrap();
        admin
            .execute(&raw(format!("DROP DATABASE IF EXISTS {name}"), vec![]))
            .unwrap();
        admin
            .execute(&raw(format!("CREATE DATABASE {name}"), vec![]))
            .unwrap();
        // The CREATE returns once the node that ran it has it; the others apply it a moment later, and a
        // test that connects to another node at once can be told the database is unknown (seen in CI).
        // Each node that answers is waited for (10 s at most); one that is down is left to the test.
        let seen =
            format!("SELECT 1 FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = '{name}'");
        for node in 0..galera_nodes().len() {
            let Ok(db) = tandem_blocking::Database::connect_with(&node_url(node, "test"), quick())
            else {
                continue;
            };
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline
                && !db
                    .fetch_all::<(i64,)>(&raw(seen.clone(), vec![]))
                    .is_ok_and(|rows| !rows.is_empty())
            {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        ClusterDb { name }
    }
}

impl Drop for ClusterDb {
    fn drop(&mut self) {
        if let Ok(admin) =
            tandem_blocking::Database::connect_with(&cluster_url("test", ""), quick())
        {
            let _ = admin.execute(&raw(
                format!("DROP DATABASE IF EXISTS {}", self.name),
                vec![],
            ));
        }
    }
}

/// Fresh source (`n` rows, none for 0) and target tables, and no job tables.
fn reset(db: &tandem_blocking::Database, n: usize) {
    for sql in [
        "DROP TABLE IF EXISTS benchmark_target",
        "DROP TABLE IF EXISTS benchmark_source",
        "DROP TABLE IF EXISTS batch_step_execution",
        "DROP TABLE IF EXISTS batch_job_execution",
        "DROP TABLE IF EXISTS batch_job_lock",
    ] {
        db.execute(&raw(sql, vec![])).unwrap();
    }
    db.create_table(&benchmark_source::table.create_table())
        .unwrap();
    db.create_table(&benchmark_target::table.create_table())
        .unwrap();
    if n > 0 {
        db.repository::<Source>()
            .batch_insert(
                &essay::seed_rows(n),
                &tandem_blocking::BatchOptions::default(),
            )
            .unwrap();
    }
}

/// Runs `f` on `node` after the node has applied every write the cluster certified before now: Galera
/// certifies a commit on every node at once but applies it on the others a moment later, so a read right
/// after a write elsewhere needs `wsrep_sync_wait` (a causal read, asked for in the URL) to see it.
fn causal_read<T>(
    node: usize,
    database: &str,
    f: impl FnMut(&tandem_blocking::Transaction) -> Result<T, Error>,
) -> T {
    let url = format!("{}?wsrep_sync_wait=1", node_url(node, database));
    let db = tandem_blocking::Database::connect_with(&url, quick()).unwrap();
    db.transaction(f).unwrap()
}

/// Rows expected, found and duplicated (rows beyond the distinct right ones), node by node; asserts that
/// every node holds exactly the transformed source.
fn check_every_node(database: &str, n: usize, what: &str) {
    let mut want: Vec<(String, i32)> = (1..=n)
        .map(|i| (format!("ITEM-{i}"), 2 * i as i32))
        .collect();
    want.sort();
    for node in 0..galera_nodes().len() {
        let mut got: Vec<(String, i32)> = causal_read(node, database, |tx| {
            tx.fetch_all(&benchmark_target::table.select((
                benchmark_target::source_name,
                benchmark_target::transformed_value,
            )))
        });
        got.sort();
        let found = got.len();
        got.dedup();
        let duplicated = found - got.len();
        let lost = want
            .iter()
            .filter(|w| got.binary_search(w).is_err())
            .count();
        eprintln!(
            "{what}: node {} expected {n}, found {found}, duplicated {duplicated}, lost {lost}",
            node + 1
        );
        assert_eq!(
            (found, duplicated, lost),
            (n, 0, 0),
            "{what}: node {}",
            node + 1
        );
        assert_eq!(got, want, "{what}: node {}", node + 1);
    }
}

/// The pid of a Galera node, from its own pid file.
fn node_pid(node: usize) -> u32 {
    let file = format!("{}/galera-{}/mysqld.pid", cluster_dir(), node + 1);
    std::fs::read_to_string(&file)
        .unwrap_or_else(|e| panic!("{file}: {e}"))
        .trim()
        .parse()
        .unwrap()
}

/// SIGKILL to one node, by its pid file.
fn kill_node(node: usize) -> Instant {
    let pid = node_pid(node);
    let ok = Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    assert!(ok.success(), "kill -9 {pid}");
    Instant::now()
}

/// SIGSTOP (`freeze`) or SIGCONT to one node, by its pid file: a frozen node keeps its sockets open and
/// answers nothing, as a stalled disk or a partition looks to its clients.
fn freeze_node(node: usize, freeze: bool) -> Instant {
    let pid = node_pid(node);
    let signal = if freeze { "-STOP" } else { "-CONT" };
    let ok = Command::new("kill")
        .args([signal, &pid.to_string()])
        .status()
        .unwrap();
    assert!(ok.success(), "kill {signal} {pid}");
    Instant::now()
}

/// `.ci/cluster galera-up`: starts the Galera nodes that are down (a killed node rejoins by IST), waits
/// until every node is synced; the PostgreSQL pair, which a case beside may be failing over, is left alone.
fn cluster_up() {
    cluster_script("galera-up").unwrap();
    galera_ready().unwrap();
}

mod galera;
mod lag;
mod postgres;
mod stops;

use galera::*;
use lag::*;
use postgres::*;
use stops::*;

fn main() {
    let galera = |name: &str, run: fn()| {
        harness::Case::new(name, run).requires("the Galera cluster", galera_ready)
    };
    let pg = |name: &str, run: fn()| {
        harness::Case::new(name, run).requires("the PostgreSQL primary and standby", pg_pair_ready)
    };
    // The test threads take the cases in this order, and a thread that takes a case whose cluster is busy
    // waits for it: the long failover goes right after the first Galera case, the two short PostgreSQL
    // cases before the last one, so that each runs beside a Galera case.
    harness::main(vec![
        galera("galera_essay_job_spread", galera_essay_job_spread),
        pg("pg_failover", pg_failover),
        galera("galera_one_run_across_nodes", galera_one_run_across_nodes),
        galera("galera_conflicts_are_retried", galera_conflicts_are_retried),
        galera("galera_node_deaths", galera_node_deaths),
        galera("galera_node_freezes", galera_node_freezes),
        galera("galera_lagging_nodes", galera_lagging_nodes),
        galera("galera_causal_read_cost", galera_causal_read_cost),
        galera("galera_stopped_runner", galera_stopped_runner),
        galera("galera_frozen_node_bounded", galera_frozen_node_bounded),
        pg("pg_standby_reads", pg_standby_reads),
        pg("pg_standby_refuses_a_run", pg_standby_refuses_a_run),
        galera(
            "galera_twin_start_with_a_frozen_node",
            galera_twin_start_with_a_frozen_node,
        ),
    ]);
}
