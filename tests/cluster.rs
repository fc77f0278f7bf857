//! Past one machine: tandem against a 3-node MariaDB Galera cluster (127.0.0.1:3311-3313) and a PostgreSQL
//! primary (5433) with a hot standby (5434), as `.ci/cluster up` (`just cluster-up`) starts them.
//!
//! What a cluster changes, each checked here with nodes killed for real (SIGKILL by the pid file of the
//! node, never any other server): the essay job spread over the nodes writes the exact target on every
//! node; the same job started on two nodes runs once; a job whose node dies stops within the connect
//! timeout and its rerun, through the same URL, completes on a surviving node with nothing lost or written
//! twice; cross-node write conflicts (1213 at COMMIT) are retried by the transaction rule; the standby
//! serves read-only transactions; a promoted standby takes writes with the pool following by itself.
//!
//! The figures (rows per node, reruns, time to detect a dead node, retries, replay lag) are printed.
//! Without the cluster each test is skipped saying how to start it; under `CI=true` it fails. The tests
//! share the cluster, so they run one at a time whatever `--test-threads` says.

use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Barrier, Mutex};
use std::time::{Duration, Instant};

use tandem_batch::essay::{self, Source, Target, benchmark_source, benchmark_target};
use tandem_batch::{BatchJob, JobError, JobReport};
use tandem_blocking::Executor as _;
use tandem_core::{ConnectOptions, DbErrorKind, Error, PoolConfig, TxOptions};
use tandem_sql::prelude::*;
use tandem_sql::raw;
use tandem_test_support::harness;

const ROWS: usize = 10_000;

/// One cluster test at a time: they kill and restart the nodes the others use.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

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

/// The PostgreSQL pair is up: a primary on 5433 and a standby in recovery on 5434.
fn pg_pair_ready() -> Result<(), String> {
    let why = |e: String| format!("{e}; start it with `just cluster-up` (.ci/cluster up)");
    for (url, standby) in [(PG_PRIMARY, false), (PG_STANDBY, true)] {
        let db = tandem_blocking::Database::connect_with(url, quick())
            .map_err(|e| why(format!("PostgreSQL {url} unreachable ({e})")))?;
        let (in_recovery,): (bool,) = db
            .fetch_one(&raw("SELECT pg_is_in_recovery()", vec![]))
            .map_err(|e| why(e.to_string()))?;
        if in_recovery != standby {
            return Err(why(format!(
                "{url} is not a {}",
                if standby { "standby" } else { "primary" }
            )));
        }
    }
    Ok(())
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

/// Fresh source (`n` rows) and target tables, and no job tables.
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
    db.repository::<Source>()
        .batch_insert(
            &essay::seed_rows(n),
            &tandem_blocking::BatchOptions::default(),
        )
        .unwrap();
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

/// `.ci/cluster up`: starts what is down (a killed node rejoins by IST), waits until every node is synced.
fn cluster_up() {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/.ci/cluster");
    let out = Command::new(script).arg("up").output().unwrap();
    assert!(
        out.status.success(),
        "{script} up: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    galera_ready().unwrap();
}

/// Waits until the run has committed at least `chunks` chunks.
fn wait_for_chunks(db: &tandem_blocking::Database, chunks: i64) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let done: Option<(Option<i64>,)> = db
            .fetch_optional(&raw(
                "SELECT SUM(chunk_count) FROM batch_step_execution",
                vec![],
            ))
            .unwrap_or(None);
        if done.and_then(|(n,)| n).unwrap_or(0) >= chunks {
            return;
        }
        assert!(Instant::now() < deadline, "the job did not get going");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn slow_job(parallelism: usize) -> BatchJob<Source, Target> {
    let mut job = essay::job(parallelism).lock_lease(Duration::from_secs(5));
    job.chunk_size = 100;
    job.page_size = 100;
    job.chunk_delay = Some(Duration::from_millis(30));
    job
}

/// The essay job with 8 partitions, its connections spread over the three nodes
/// (`load_balance_hosts=random`), both runners: the exact target on every node.
fn galera_essay_job_spread() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let cdb = ClusterDb::new("spread");
    // Spread over the nodes, the pool reads its own writes through other nodes: causal reads.
    let url = cluster_url(&cdb.name, "?load_balance_hosts=random&wsrep_sync_wait=1");
    let config = PoolConfig {
        max_size: 24,
        min_idle: Some(24),
        ..quick()
    };
    let db = tandem_blocking::Database::connect_with(&url, config.clone()).unwrap();
    // Where the pool's connections are: each node counts the sessions on this test's database.
    let mut per_node = Vec::new();
    for node in 0..galera_nodes().len() {
        let one =
            tandem_blocking::Database::connect_with(&node_url(node, "test"), quick()).unwrap();
        let (n,): (i64,) = one
            .fetch_one(&raw(
                "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE DB = ?",
                vec![cdb.name.clone().into()],
            ))
            .unwrap();
        per_node.push(n);
    }
    eprintln!("spread: pool connections per node {per_node:?}");
    assert!(
        per_node.iter().all(|&n| n > 0),
        "connections on every node: {per_node:?}"
    );

    let causal = raw("SELECT @@SESSION.wsrep_sync_wait", vec![]);
    let (w,): (i64,) = db.fetch_one(&causal).unwrap();
    assert_eq!(w, 1, "the URL's wsrep_sync_wait, on a blocking connection");

    reset(&db, ROWS);
    let report = tandem_batch::blocking::run(&db, &essay::job(8)).unwrap();
    assert_eq!((report.read, report.written), (ROWS as u64, ROWS as u64));
    check_every_node(&cdb.name, ROWS, "spread, blocking runner");

    reset(&db, ROWS);
    let rt = harness::runtime();
    let adb = rt
        .block_on(tandem_async::Database::connect_with(&url, config))
        .unwrap();
    let (w,): (i64,) = rt
        .block_on(tandem_async::Executor::fetch_one(&adb, &causal))
        .unwrap();
    assert_eq!(w, 1, "the URL's wsrep_sync_wait, on an async connection");
    let report = rt
        .block_on(tandem_batch::asynchronous::run(&adb, &essay::job(8)))
        .unwrap();
    assert_eq!((report.read, report.written), (ROWS as u64, ROWS as u64));
    check_every_node(&cdb.name, ROWS, "spread, async runner");
}

/// The same job started on node 1 (blocking runner) and node 2 (async runner) at once: exactly one runs,
/// the other is refused with `AlreadyRunning` (GET_LOCK alone would have let both run).
fn galera_one_run_across_nodes() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let cdb = ClusterDb::new("onerun");
    let on1 = tandem_blocking::Database::connect_with(&node_url(0, &cdb.name), quick()).unwrap();
    reset(&on1, 3_000);
    tandem_batch::blocking::prepare(&on1).unwrap();
    let rt = harness::runtime();
    let on2 = rt
        .block_on(tandem_async::Database::connect_with(
            &node_url(1, &cdb.name),
            quick(),
        ))
        .unwrap();
    rt.block_on(tandem_batch::asynchronous::prepare(&on2))
        .unwrap();
    let job = slow_job(4);
    let start = Barrier::new(2);
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(|| {
            start.wait();
            tandem_batch::blocking::run(&on1, &job)
        });
        let b = s.spawn(|| {
            start.wait();
            rt.block_on(tandem_batch::asynchronous::run(&on2, &job))
        });
        (a.join().unwrap(), b.join().unwrap())
    });
    let outcomes = [&a, &b].map(|r| match r {
        Ok(_) => "ran",
        Err(JobError::AlreadyRunning { .. }) => "refused",
        Err(e) => panic!("neither ran nor was refused: {e}"),
    });
    eprintln!("one run: node 1 {}, node 2 {}", outcomes[0], outcomes[1]);
    let mut sorted = outcomes;
    sorted.sort();
    assert_eq!(sorted, ["ran", "refused"]);
    check_every_node(&cdb.name, 3_000, "one run across nodes");
}

/// Runs `job` to its end on `db` with the blocking or async runner, rerunning after a failure: the
/// number of reruns and the first failure. A rerun refused because the dead run's lease has not expired
/// yet is waited out (at most the lease), not counted.
fn run_to_end(
    run: &mut dyn FnMut() -> Result<JobReport, JobError>,
    killed_at: Option<&Mutex<Option<Instant>>>,
) -> (u32, Option<(JobError, Duration)>) {
    let mut reruns = 0;
    let mut first_failure = None;
    loop {
        match run() {
            Ok(report) => {
                assert_eq!(report.read, report.written + report.skipped);
                return (reruns, first_failure);
            }
            Err(JobError::AlreadyRunning { .. }) if first_failure.is_some() => {
                std::thread::sleep(Duration::from_millis(200));
            }
            Err(e) => {
                let took = killed_at
                    .and_then(|k| *k.lock().unwrap())
                    .map(|at| at.elapsed())
                    .unwrap_or_default();
                assert!(first_failure.is_none(), "a second failure: {e}");
                first_failure = Some((e, took));
                reruns += 1;
            }
        }
    }
}

/// A node the job does not use dies mid-job: the job does not notice. The node the job is connected to
/// dies mid-job: the job stops within the connect timeout with ConnectionLost, and one rerun through the
/// same URL completes on a surviving node. Every node — the killed ones after they rejoin — holds the exact
/// target: nothing lost, nothing written twice. Both runners.
fn galera_node_deaths() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    /// Whatever happens, the killed nodes are started again for the tests after this one.
    struct Restart;
    impl Drop for Restart {
        fn drop(&mut self) {
            let script = concat!(env!("CARGO_MANIFEST_DIR"), "/.ci/cluster");
            let _ = Command::new(script).arg("up").output();
        }
    }
    let _restart = Restart;
    let cdb = ClusterDb::new("deaths");
    let url = cluster_url(&cdb.name, "");
    let rows = 4_000;
    for use_async in [false, true] {
        let side = if use_async { "async" } else { "blocking" };
        for victim in [2, 0] {
            let what = format!(
                "{side} runner, node {} killed ({})",
                victim + 1,
                if victim == 0 {
                    "the job's node"
                } else {
                    "another node"
                }
            );
            let db = tandem_blocking::Database::connect_with(&url, quick()).unwrap();
            reset(&db, rows);
            tandem_batch::blocking::prepare(&db).unwrap();
            let rt = harness::runtime();
            let adb = rt
                .block_on(tandem_async::Database::connect_with(&url, quick()))
                .unwrap();
            let job = slow_job(4);
            let killed_at = Mutex::new(None);
            let (reruns, failure) = std::thread::scope(|s| {
                let running = s.spawn(|| {
                    let mut run = || {
                        if use_async {
                            rt.block_on(tandem_batch::asynchronous::run(&adb, &job))
                        } else {
                            tandem_batch::blocking::run(&db, &job)
                        }
                    };
                    run_to_end(&mut run, Some(&killed_at))
                });
                let watcher =
                    tandem_blocking::Database::connect_with(&node_url(1, &cdb.name), quick())
                        .unwrap();
                wait_for_chunks(&watcher, 8);
                *killed_at.lock().unwrap() = Some(kill_node(victim));
                running.join().unwrap()
            });
            match &failure {
                None => eprintln!("{what}: completed without a failure, reruns {reruns}"),
                Some((e, took)) => eprintln!(
                    "{what}: first run stopped {took:?} after the kill with {e}; reruns {reruns}"
                ),
            }
            if victim == 0 {
                let (e, took) = failure.as_ref().expect("the job's node died under it");
                assert!(
                    matches!(e, JobError::Database(d) if d.kind() == Some(DbErrorKind::ConnectionLost)),
                    "{what}: {e:?}"
                );
                // The job's statements fail at once (the node's sockets close with it); the run returns
                // when its last writes — marking itself FAILED, giving its lease back — went through on a
                // surviving node, which waits until the cluster has evicted the dead one
                // (evs.suspect_timeout, 5 s by default).
                assert!(
                    *took < quick().connect_timeout + Duration::from_secs(8),
                    "{what}: the run returned {took:?} after the kill"
                );
                assert_eq!(reruns, 1, "{what}");
            } else {
                assert_eq!(reruns, 0, "{what}: the job's own node did not die");
            }
            drop((db, adb));
            cluster_up();
            check_every_node(&cdb.name, rows, &what);
        }
    }
}

/// Transactions on two nodes incrementing one row: Galera refuses one of each conflicting pair at
/// COMMIT (1213, a certification failure) and the transaction rule runs it again. Every increment lands
/// once, on every node; the retries are counted.
fn galera_conflicts_are_retried() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let cdb = ClusterDb::new("conflicts");
    let nodes: Vec<tandem_blocking::Database> = (0..2)
        .map(|n| tandem_blocking::Database::connect_with(&node_url(n, &cdb.name), quick()).unwrap())
        .collect();
    nodes[0]
        .execute(&raw(
            "CREATE TABLE counter (id INT PRIMARY KEY, n INT NOT NULL)",
            vec![],
        ))
        .unwrap();
    nodes[0]
        .execute(&raw("INSERT INTO counter VALUES (1, 0)", vec![]))
        .unwrap();
    let per_node = 150;
    let attempts = AtomicU64::new(0);
    let failed_for_good = AtomicU64::new(0);
    std::thread::scope(|s| {
        for db in &nodes {
            let (attempts, failed_for_good) = (&attempts, &failed_for_good);
            s.spawn(move || {
                for _ in 0..per_node {
                    let r = db.transaction_with(TxOptions::default().max_attempts(20), |tx| {
                        attempts.fetch_add(1, Ordering::Relaxed);
                        tx.execute(&raw("UPDATE counter SET n = n + 1 WHERE id = 1", vec![]))
                    });
                    if let Err(e) = r {
                        eprintln!("conflicts: a transaction failed for good: {e:?}");
                        failed_for_good.fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
        }
    });
    let total = 2 * per_node as u64;
    let retries = attempts.load(Ordering::Relaxed) - total;
    eprintln!("conflicts: {total} transactions on two nodes, {retries} retried after 1213");
    assert_eq!(failed_for_good.load(Ordering::Relaxed), 0);
    assert!(
        retries > 0,
        "two nodes writing one row conflicted at least once"
    );
    for node in 0..galera_nodes().len() {
        let (n,): (i64,) = causal_read(node, &cdb.name, |tx| {
            tx.fetch_one(&raw(
                "SELECT CAST(n AS SIGNED) FROM counter WHERE id = 1",
                vec![],
            ))
        });
        eprintln!("conflicts: node {} counts {n}", node + 1);
        assert_eq!(n, total as i64, "node {}", node + 1);
    }
}

/// The standby serves read-only transactions (it is in recovery there), sees the primary's commits after
/// the replay lag (measured), and refuses writes; writes go to the primary. Both executors.
fn pg_standby_reads() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let db = tandem_blocking::Database::connect_with(PG_PRIMARY, quick())
        .and_then(|d| d.with_standby(PG_STANDBY))
        .unwrap();
    db.execute(&raw("DROP TABLE IF EXISTS standby_reads", vec![]))
        .unwrap();
    db.execute(&raw(
        "CREATE TABLE standby_reads (id BIGINT PRIMARY KEY)",
        vec![],
    ))
    .unwrap();
    let read_only = TxOptions::default().read_only();
    // The table itself reaches the standby after the replay lag.
    let created = Instant::now();
    while !db
        .transaction_with(read_only.clone(), |tx| {
            tx.fetch_one::<(bool,)>(&raw(
                "SELECT to_regclass('standby_reads') IS NOT NULL",
                vec![],
            ))
        })
        .unwrap()
        .0
    {
        assert!(
            created.elapsed() < Duration::from_secs(10),
            "the standby never saw the table"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    let mut lags = Vec::new();
    for i in 1..=20_i64 {
        db.execute(&raw(
            "INSERT INTO standby_reads VALUES ($1)",
            vec![i.into()],
        ))
        .unwrap();
        let written = Instant::now();
        loop {
            let (in_recovery, seen): (bool, i64) = db
                .transaction_with(read_only.clone(), |tx| {
                    tx.fetch_one(&raw(
                        "SELECT pg_is_in_recovery(), (SELECT COUNT(*) FROM standby_reads)",
                        vec![],
                    ))
                })
                .unwrap();
            assert!(in_recovery, "read-only transactions run on the standby");
            if seen == i {
                lags.push(written.elapsed());
                break;
            }
            assert!(
                written.elapsed() < Duration::from_secs(10),
                "the standby never caught up"
            );
        }
    }
    lags.sort();
    eprintln!(
        "standby: replay lag seen by a read-only transaction: median {:?}, max {:?}",
        lags[lags.len() / 2],
        lags[lags.len() - 1]
    );
    let refused = db.transaction_with(read_only, |tx| {
        tx.execute(&raw("INSERT INTO standby_reads VALUES (0)", vec![]))
    });
    assert!(refused.is_err(), "a standby takes no writes");

    let rt = harness::runtime();
    rt.block_on(async {
        use tandem_async::Executor as _;
        let adb = tandem_async::Database::connect_with(PG_PRIMARY, quick())
            .await?
            .with_standby(PG_STANDBY)
            .await?;
        let tx = adb.begin(TxOptions::default().read_only()).await?;
        let (in_recovery,): (bool,) = tx
            .fetch_one(&raw("SELECT pg_is_in_recovery()", vec![]))
            .await?;
        tx.commit().await?;
        assert!(
            in_recovery,
            "async: read-only transactions run on the standby"
        );
        let (primary,): (bool,) = adb
            .fetch_one(&raw("SELECT pg_is_in_recovery()", vec![]))
            .await?;
        assert!(!primary, "async: the rest stays on the primary");
        Ok::<_, Error>(())
    })
    .unwrap();
}

/// Failover: pools on `5433,5434?target_session_attrs=read-write` write to the primary; the primary is
/// killed and the standby promoted; both executors' pools go on writing to it by themselves, after a few
/// refused calls while no server is read-write. The pair is rebuilt afterwards.
fn pg_failover() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    struct Rebuild;
    impl Drop for Rebuild {
        fn drop(&mut self) {
            let script = concat!(env!("CARGO_MANIFEST_DIR"), "/.ci/cluster");
            let _ = Command::new(script).arg("pg-rebuild").status();
        }
    }
    let _rebuild = Rebuild;
    let url =
        "postgres://postgres@127.0.0.1:5433,127.0.0.1:5434/test?target_session_attrs=read-write";
    let db = tandem_blocking::Database::connect_with(url, quick()).unwrap();
    let rt = harness::runtime();
    let adb = rt
        .block_on(tandem_async::Database::connect_with(url, quick()))
        .unwrap();
    db.execute(&raw("DROP TABLE IF EXISTS failover_writes", vec![]))
        .unwrap();
    db.execute(&raw(
        "CREATE TABLE failover_writes (side TEXT, n BIGINT)",
        vec![],
    ))
    .unwrap();
    let write = |side: &str, n: i64| -> Result<u64, Error> {
        let stmt = raw(
            "INSERT INTO failover_writes VALUES ($1, $2)",
            vec![side.into(), n.into()],
        );
        if side == "async" {
            use tandem_async::Executor as _;
            rt.block_on(adb.execute(&stmt))
        } else {
            db.execute(&stmt)
        }
    };
    write("blocking", 0).unwrap();
    write("async", 0).unwrap();

    let dir = cluster_dir();
    let pid_line = std::fs::read_to_string(format!("{dir}/pg-primary/postmaster.pid")).unwrap();
    let pid = pid_line.lines().next().unwrap().trim().to_owned();
    assert!(
        Command::new("kill")
            .args(["-9", &pid])
            .status()
            .unwrap()
            .success()
    );
    let killed = Instant::now();
    let promoted = Command::new("runuser")
        .args(["-u", "postgres", "--"])
        .arg(format!(
            "/usr/lib/postgresql/{}/bin/pg_ctl",
            std::fs::read_to_string(format!("{dir}/pg-standby/PG_VERSION"))
                .unwrap()
                .trim()
        ))
        .args(["promote", "-w", "-D", &format!("{dir}/pg-standby")])
        .status()
        .unwrap();
    assert!(promoted.success(), "pg_ctl promote");
    eprintln!(
        "failover: standby promoted {:?} after the primary died",
        killed.elapsed()
    );
    for side in ["blocking", "async"] {
        let mut refused = 0;
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            match write(side, 1) {
                Ok(1) => break,
                Ok(n) => panic!("{side}: {n} rows"),
                Err(e) => {
                    assert!(e.is_unreachable(), "{side}: {e:?}");
                    refused += 1;
                    assert!(
                        Instant::now() < deadline,
                        "{side}: no write after failover: {e}"
                    );
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
        }
        eprintln!(
            "failover: {side} pool writing to the promoted standby after {refused} refused calls"
        );
        assert!(refused <= 3, "{side}: {refused}");
    }
    let (port,): (i64,) = db
        .fetch_one(&raw(
            "SELECT CAST(current_setting('port') AS BIGINT)",
            vec![],
        ))
        .unwrap();
    assert_eq!(port, 5434, "the pool is on the promoted standby");
}

fn main() {
    let galera = |name: &str, run: fn()| {
        harness::Case::new(name, run).requires("the Galera cluster", galera_ready)
    };
    let pg = |name: &str, run: fn()| {
        harness::Case::new(name, run).requires("the PostgreSQL primary and standby", pg_pair_ready)
    };
    harness::main(vec![
        galera("galera_essay_job_spread", galera_essay_job_spread),
        galera("galera_one_run_across_nodes", galera_one_run_across_nodes),
        galera("galera_conflicts_are_retried", galera_conflicts_are_retried),
        galera("galera_node_deaths", galera_node_deaths),
        pg("pg_standby_reads", pg_standby_reads),
        pg("pg_failover", pg_failover),
    ]);
}
