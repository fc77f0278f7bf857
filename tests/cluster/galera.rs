//! The MariaDB Galera cluster: the essay job spread over the nodes, one run across nodes, nodes killed
//! mid-job, cross-node write conflicts retried.

use super::*;

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

/// Fresh job tables with `rows` source rows on `url`, and a pool of each executor there (the async one
/// with its runtime).
fn job_pools(
    url: &str,
    rows: usize,
) -> (
    tandem_blocking::Database,
    tokio::runtime::Runtime,
    tandem_async::Database,
) {
    let db = tandem_blocking::Database::connect_with(url, quick()).unwrap();
    reset(&db, rows);
    tandem_batch::blocking::prepare(&db).unwrap();
    let rt = harness::runtime();
    let adb = rt.block_on(connect_async(url, quick())).unwrap();
    (db, rt, adb)
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
pub(crate) fn galera_essay_job_spread() {
    let _one = GALERA.lock().unwrap_or_else(|e| e.into_inner());
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
    let adb = rt.block_on(connect_async(&url, config)).unwrap();
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
pub(crate) fn galera_one_run_across_nodes() {
    let _one = GALERA.lock().unwrap_or_else(|e| e.into_inner());
    let cdb = ClusterDb::new("onerun");
    let on1 = tandem_blocking::Database::connect_with(&node_url(0, &cdb.name), quick()).unwrap();
    reset(&on1, 3_000);
    tandem_batch::blocking::prepare(&on1).unwrap();
    let rt = harness::runtime();
    let on2 = rt
        .block_on(connect_async(&node_url(1, &cdb.name), quick()))
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
pub(crate) fn galera_node_deaths() {
    let _one = GALERA.lock().unwrap_or_else(|e| e.into_inner());
    /// Whatever happens, the killed nodes are started again for the tests after this one.
    struct Restart;
    impl Drop for Restart {
        fn drop(&mut self) {
            let script = concat!(env!("CARGO_MANIFEST_DIR"), "/.ci/cluster");
            let _ = Command::new(script).arg("galera-up").output();
        }
    }
    let _restart = Restart;
    let cdb = ClusterDb::new("deaths");
    let url = cluster_url(&cdb.name, "");
    let rows = 4_000;
    for use_async in db::runners() {
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
            let (db, rt, adb) = job_pools(&url, rows);
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

/// The node the job runs on freezes mid-job (SIGSTOP), and stays frozen: with `socket_timeout=2s` on the
/// host-list URL, the run's calls on that node fail with `NoAnswer` after two seconds, the run stops
/// (its last writes wait until the other nodes have evicted the frozen one), and a rerun through the same
/// URL skips the silent node at once and completes on another — while the node is still frozen. After the
/// thaw every node holds the exact target: nothing lost, nothing written twice. Both runners.
pub(crate) fn galera_node_freezes() {
    let _one = GALERA.lock().unwrap_or_else(|e| e.into_inner());
    /// Whatever happens, the frozen node is thawed and the cluster made whole for the tests after this one.
    struct Thaw;
    impl Drop for Thaw {
        fn drop(&mut self) {
            let _ = Command::new("kill")
                .args(["-CONT", &node_pid(0).to_string()])
                .status();
            let script = concat!(env!("CARGO_MANIFEST_DIR"), "/.ci/cluster");
            let _ = Command::new(script).arg("galera-up").output();
        }
    }
    let _thaw = Thaw;
    let cdb = ClusterDb::new("freezes");
    let bound = Duration::from_secs(2);
    let url = cluster_url(&cdb.name, "?socket_timeout=2s&host_recheck=60s");
    let rows = 4_000;
    for use_async in db::runners() {
        let what = format!(
            "{} runner, the job's node frozen",
            if use_async { "async" } else { "blocking" }
        );
        let (db, rt, adb) = job_pools(&url, rows);
        let job = slow_job(4);
        let lease = job.lock_lease;
        let frozen_at = Mutex::new(None);
        let ended = Mutex::new(None);
        let (reruns, failure) = std::thread::scope(|s| {
            let running = s.spawn(|| {
                let mut run = || {
                    let r = if use_async {
                        rt.block_on(tandem_batch::asynchronous::run(&adb, &job))
                    } else {
                        tandem_batch::blocking::run(&db, &job)
                    };
                    *ended.lock().unwrap() = Some(Instant::now());
                    r
                };
                run_to_end(&mut run, Some(&frozen_at))
            });
            let watcher =
                tandem_blocking::Database::connect_with(&node_url(1, &cdb.name), quick()).unwrap();
            wait_for_chunks(&watcher, 8);
            *frozen_at.lock().unwrap() = Some(freeze_node(0, true));
            running.join().unwrap()
        });
        let (e, took) = failure.expect("the job's node froze under it");
        let finished = ended.lock().unwrap().unwrap();
        let frozen = frozen_at.lock().unwrap().unwrap();
        let rerun_took = finished.duration_since(frozen).saturating_sub(took);
        eprintln!(
            "{what}: first run stopped {took:?} after the freeze with {e}; the rerun completed \
             {rerun_took:?} later, the node still frozen"
        );
        assert!(
            matches!(&e, JobError::Database(d) if d.is_unreachable())
                || matches!(e, JobError::LockLost { .. }),
            "{what}: {e:?}"
        );
        // The calls on the frozen node give up after `bound`; the run's last writes wait for the cluster
        // to evict the node (evs.suspect_timeout, 5 s by default) — within a lease of it.
        assert!(
            took < bound + lease + Duration::from_secs(8),
            "{what}: the run returned {took:?} after the freeze"
        );
        assert_eq!(reruns, 1, "{what}");
        // Every node was left silent by the run (the live ones held its last writes past the bound while
        // the cluster evicted the frozen one): the walks of the rerun's new connections still try the
        // frozen node — the one a connect failed on — last, so no connect waits for it.
        assert!(
            rerun_took < quick().connect_timeout,
            "{what}: the rerun took {rerun_took:?}: a connect waited for the frozen node"
        );
        freeze_node(0, false);
        drop((db, adb));
        let rejoined = wait_rejoined(0);
        // This process marked the frozen node silent: the tests after this one walk the list in order.
        tandem_core::hosts::forget_silent();
        eprintln!("{what}: the thawed node was a synced member again {rejoined:?} after the thaw");
        check_every_node(&cdb.name, rows, &what);
    }
}

/// Waits until a thawed node is a synced member of the three again: on thawing it still believes it is,
/// then finds itself evicted and rejoins (by IST). Seen from another node the cluster must have three
/// members and the thawed node say Synced and ready, for a second on end.
pub(crate) fn wait_rejoined(node: usize) -> Duration {
    let thawed = Instant::now();
    let other =
        tandem_blocking::Database::connect_with(&node_url(1 - node.min(1), "test"), quick())
            .unwrap();
    let mut steady_since = None;
    loop {
        let whole = status(&other, "wsrep_cluster_size") == "3"
            && tandem_blocking::Database::connect_with(&node_url(node, "test"), quick())
                .map(|db| {
                    status(&db, "wsrep_local_state_comment") == "Synced"
                        && status(&db, "wsrep_ready") == "ON"
                        && status(&db, "wsrep_cluster_status") == "Primary"
                })
                .unwrap_or(false);
        match (whole, steady_since) {
            (true, Some(at)) if thawed.elapsed() - at >= Duration::from_secs(1) => return at,
            (true, None) => steady_since = Some(thawed.elapsed()),
            (true, Some(_)) => {}
            (false, _) => steady_since = None,
        }
        assert!(
            thawed.elapsed() < Duration::from_secs(120),
            "node {} did not rejoin after the thaw",
            node + 1
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Transactions on two nodes incrementing one row: Galera refuses one of each conflicting pair at
/// COMMIT (1213, a certification failure) and the transaction rule runs it again. Every increment lands
/// once, on every node; the retries are counted.
pub(crate) fn galera_conflicts_are_retried() {
    let _one = GALERA.lock().unwrap_or_else(|e| e.into_inner());
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
