//! Runners and nodes that stop on a cluster: a runner process stopped (SIGSTOP) loses the job within one
//! lease whichever node the next run starts on; a run whose pool is spread over the nodes returns within
//! its bounds when one node freezes; a twin start is refused at once with a node frozen.

use super::*;

/// The `essay-job` program on `url`: 2 partitions, 100 ms between chunks, lease `lease`.
fn essay_job(url: &str, use_async: bool, lease: Duration) -> std::process::Child {
    let mut args = vec![
        if use_async {
            db::with_driver(url)
        } else {
            url.to_owned()
        },
        "2".into(),
        "100".into(),
        format!("--lease={}", lease.as_millis()),
    ];
    if use_async {
        args.push("--async".into());
    }
    Command::new(env!("CARGO_BIN_EXE_essay-job"))
        .args(&args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

/// Sends `signal` to a process this test started.
fn signal(child: &std::process::Child, signal: &str) {
    let ok = Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(ok.success(), "kill {signal} {}", child.id());
}

/// Chunks committed so far, read causally on node 2.
fn chunks(database: &str) -> i64 {
    let url = format!("{}?wsrep_sync_wait=1", node_url(1, database));
    let Ok(db) = tandem_blocking::Database::connect_with(&url, quick()) else {
        return 0;
    };
    db.fetch_optional::<(Option<i64>,)>(&raw(
        "SELECT CAST(SUM(chunk_count) AS SIGNED) FROM batch_step_execution",
        vec![],
    ))
    .ok()
    .flatten()
    .and_then(|(n,)| n)
    .unwrap_or(0)
}

/// A runner process on node 1 is stopped (SIGSTOP) after two chunks. The next run of the job — started on
/// node 1, then (another time) on node 2 — is let in within one lease (3 s) and a second, the same on both
/// nodes: on node 1 the server closes the stopped process's lock session once it idled a lease, on node
/// 2 the lease has run out. The stopped process, continued, is refused at its next write and ends with
/// "lost its run lock"; every node holds the exact target. Both runners as the stopped process.
pub(crate) fn galera_stopped_runner() {
    let _one = GALERA.lock().unwrap_or_else(|e| e.into_inner());
    let cdb = ClusterDb::new("stopped");
    let on1 = tandem_blocking::Database::connect_with(&node_url(0, &cdb.name), quick()).unwrap();
    let lease = Duration::from_secs(3);
    let rows = 4_000;
    let cases = [(false, 0), (false, 1), (true, 0), (true, 1)]
        .into_iter()
        .filter(|(use_async, _)| db::runners().contains(use_async));
    for (use_async, next_on) in cases {
        let what = format!(
            "{} runner stopped on node 1, next run on node {}",
            if use_async { "async" } else { "blocking" },
            next_on + 1
        );
        reset(&on1, rows);
        tandem_batch::blocking::prepare(&on1).unwrap();
        let mut child = essay_job(&node_url(0, &cdb.name), use_async, lease);
        let deadline = Instant::now() + Duration::from_secs(30);
        while chunks(&cdb.name) < 2 {
            assert!(Instant::now() < deadline, "{what}: no progress");
            assert!(child.try_wait().unwrap().is_none(), "{what}: ended early");
            std::thread::sleep(Duration::from_millis(10));
        }
        signal(&child, "-STOP");
        let stopped_at = Instant::now();
        let next = tandem_blocking::Database::connect_with(&node_url(next_on, &cdb.name), quick())
            .unwrap();
        let job = essay::job(2).sizes(500, 500).lock_lease(lease);
        let let_in_after = loop {
            match tandem_batch::blocking::run(&next, &job) {
                Err(JobError::AlreadyRunning { .. }) => {
                    if stopped_at.elapsed() > lease + Duration::from_secs(1) {
                        signal(&child, "-CONT");
                        panic!(
                            "{what}: still refused {:?} after the stop",
                            stopped_at.elapsed()
                        );
                    }
                    std::thread::sleep(Duration::from_millis(50));
                }
                Ok(report) => {
                    assert_eq!(report.written, rows as u64, "{what}");
                    break stopped_at.elapsed();
                }
                Err(e) => {
                    signal(&child, "-CONT");
                    panic!("{what}: {e}");
                }
            }
        };
        signal(&child, "-CONT");
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        eprintln!(
            "{what}: the next run was let in {let_in_after:?} after the stop; the stopped one, continued: {}",
            stderr.trim()
        );
        assert!(
            !out.status.success() && stderr.contains("lost its run lock"),
            "{what}: {stderr}"
        );
        check_every_node(&cdb.name, rows, &what);
    }
}

/// One node freezes (SIGSTOP) mid-run and stays frozen 15 s; the run's connections are spread over the
/// three nodes at random (`load_balance_hosts=random`), `socket_timeout=3s`, lease 3 s. The run returns
/// within the bound plus a lease and the cluster's eviction of the frozen node (its last writes wait for
/// it: `evs.suspect_timeout`, 5 s) — never at the thaw; the rerun completes on the other two while the node
/// is still frozen; after the thaw every node holds the exact target. Both runners.
pub(crate) fn galera_frozen_node_bounded() {
    let _one = GALERA.lock().unwrap_or_else(|e| e.into_inner());
    /// Whatever happens, the frozen node is thawed and the cluster made whole for the tests after this one.
    struct Thaw;
    impl Drop for Thaw {
        fn drop(&mut self) {
            let _ = Command::new("kill")
                .args(["-CONT", &node_pid(1).to_string()])
                .status();
            let script = concat!(env!("CARGO_MANIFEST_DIR"), "/.ci/cluster");
            let _ = Command::new(script).arg("galera-up").output();
        }
    }
    let _thaw = Thaw;
    let cdb = ClusterDb::new("frozenlb");
    let bound = Duration::from_secs(3);
    let url = cluster_url(
        &cdb.name,
        "?load_balance_hosts=random&socket_timeout=3s&host_recheck=60s",
    );
    let rows = 6_000;
    for use_async in db::runners() {
        let what = format!(
            "{} runner, pool over three nodes, node 2 frozen",
            if use_async { "async" } else { "blocking" }
        );
        let db = tandem_blocking::Database::connect_with(&url, quick()).unwrap();
        reset(&db, rows);
        tandem_batch::blocking::prepare(&db).unwrap();
        let rt = harness::runtime();
        let adb = rt.block_on(connect_async(&url, quick())).unwrap();
        let mut job = essay::job(4).lock_lease(bound);
        job.chunk_size = 100;
        job.page_size = 100;
        job.chunk_delay = Some(Duration::from_millis(30));
        let run = || {
            if use_async {
                rt.block_on(tandem_batch::asynchronous::run(&adb, &job))
            } else {
                tandem_batch::blocking::run(&db, &job)
            }
        };
        let (first, returned_after) = std::thread::scope(|s| {
            let running = s.spawn(|| {
                let r = run();
                (r, Instant::now())
            });
            let deadline = Instant::now() + Duration::from_secs(60);
            while chunks(&cdb.name) < 8 {
                assert!(Instant::now() < deadline, "{what}: no progress");
                std::thread::sleep(Duration::from_millis(20));
            }
            let frozen_at = freeze_node(1, true);
            let (r, at) = running.join().unwrap();
            (r, at.duration_since(frozen_at))
        });
        eprintln!("{what}: the first run returned {returned_after:?} after the freeze: {first:?}");
        // The run may also have finished before any of its calls met the frozen node.
        if first.is_err() {
            assert!(
                returned_after < bound + job.lock_lease + Duration::from_secs(7),
                "{what}: returned {returned_after:?} after the freeze"
            );
            let rerun_at = Instant::now();
            let mut report = run();
            while let Err(JobError::AlreadyRunning { .. }) = report {
                assert!(rerun_at.elapsed() < 2 * job.lock_lease, "{what}: the rerun");
                std::thread::sleep(Duration::from_millis(200));
                report = run();
            }
            let report = report.unwrap_or_else(|e| panic!("{what}: the rerun: {e}"));
            eprintln!(
                "{what}: the rerun completed {:?} later, the node still frozen",
                rerun_at.elapsed()
            );
            assert_eq!(report.read, rows as u64, "{what}");
        }
        freeze_node(1, false);
        drop((db, adb));
        wait_rejoined(1);
        tandem_core::hosts::forget_silent();
        check_every_node(&cdb.name, rows, &what);
    }
}

/// With node 3 frozen, a second start of a job that runs on node 1 (the host list in order) is refused
/// at once: it looks for its target table with a read rather than creating it (DDL would wait for the
/// frozen node), and finds the job's locks taken. Then the frozen node thaws and the first run completes.
pub(crate) fn galera_twin_start_with_a_frozen_node() {
    let _one = GALERA.lock().unwrap_or_else(|e| e.into_inner());
    struct Thaw;
    impl Drop for Thaw {
        fn drop(&mut self) {
            let _ = Command::new("kill")
                .args(["-CONT", &node_pid(2).to_string()])
                .status();
            let script = concat!(env!("CARGO_MANIFEST_DIR"), "/.ci/cluster");
            let _ = Command::new(script).arg("galera-up").output();
        }
    }
    let _thaw = Thaw;
    let cdb = ClusterDb::new("twinfrozen");
    let url = cluster_url(&cdb.name, "");
    let on1 = tandem_blocking::Database::connect_with(&node_url(0, &cdb.name), quick()).unwrap();
    reset(&on1, 4_000);
    tandem_batch::blocking::prepare(&on1).unwrap();
    let first = essay_job(&url, false, Duration::from_secs(30));
    let deadline = Instant::now() + Duration::from_secs(30);
    while chunks(&cdb.name) < 1 {
        assert!(Instant::now() < deadline, "no progress");
        std::thread::sleep(Duration::from_millis(10));
    }
    freeze_node(2, true);
    let at = Instant::now();
    let twin = essay_job(&url, true, Duration::from_secs(30))
        .wait_with_output()
        .unwrap();
    let refused_after = at.elapsed();
    freeze_node(2, false);
    let stderr = String::from_utf8_lossy(&twin.stderr);
    eprintln!(
        "twin start with node 3 frozen: refused after {refused_after:?}: {}",
        stderr.trim()
    );
    assert!(
        !twin.status.success() && stderr.contains("is already running"),
        "{stderr}"
    );
    assert!(
        refused_after < Duration::from_secs(2),
        "refused {refused_after:?} after the start"
    );
    let out = first.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "the first run: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    wait_rejoined(2);
    check_every_node(&cdb.name, 4_000, "twin start with a node frozen");
}
