//! The PostgreSQL primary and its hot standby, run by pg_auto_failover: read-only transactions served by
//! the standby, and a frozen primary replaced by the standby the monitor promotes, the batch job and the
//! pools following by themselves.

use super::*;

/// The standby serves read-only transactions (it is in recovery there), sees the primary's commits after
/// the replay lag (measured), and refuses writes; writes go to the primary. Both executors.
pub(crate) fn pg_standby_reads() {
    let _one = PG_PAIR.lock().unwrap_or_else(|e| e.into_inner());
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
        let adb = connect_async(PG_PRIMARY, quick())
            .await?
            .with_standby(&db::with_driver(PG_STANDBY))
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

/// A batch run refuses to start on the standby — its reads there would lag the primary's commits, and it
/// could write nothing — with `ReadOnlyServer` naming the server, before it writes anything: both runners.
pub(crate) fn pg_standby_refuses_a_run() {
    let _one = PG_PAIR.lock().unwrap_or_else(|e| e.into_inner());
    let db = tandem_blocking::Database::connect_with(PG_STANDBY, quick()).unwrap();
    let job = essay::job(2);
    let refused = tandem_batch::blocking::run(&db, &job);
    eprintln!("standby, blocking runner: {refused:?}");
    assert!(
        matches!(&refused, Err(JobError::ReadOnlyServer { server, .. }) if server.ends_with(":5434")),
        "{refused:?}"
    );
    let rt = harness::runtime();
    let adb = rt.block_on(connect_async(PG_STANDBY, quick())).unwrap();
    let refused = rt.block_on(tandem_batch::asynchronous::run(&adb, &job));
    assert!(
        matches!(&refused, Err(JobError::ReadOnlyServer { server, .. }) if server.ends_with(":5434")),
        "{refused:?}"
    );
}

/// Every process of the PostgreSQL node on `port` (its pg_auto_failover keeper, which runs the server,
/// and their children), from the keeper's pid file under the cluster directory.
fn pg_node_processes(port: u16) -> Vec<String> {
    let node = port - 5432;
    let dir = cluster_dir();
    let file = format!("{dir}/pg/autoctl/run/pg_autoctl{dir}/pg/node{node}/pg_autoctl.pid");
    let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{file}: {e}"));
    let keeper = text.lines().next().unwrap().trim().to_owned();
    let mut all = vec![keeper];
    let mut i = 0;
    while i < all.len() {
        let out = Command::new("ps")
            .args(["-o", "pid=", "--ppid", &all[i]])
            .output()
            .unwrap();
        all.extend(
            String::from_utf8_lossy(&out.stdout)
                .split_whitespace()
                .map(str::to_owned),
        );
        i += 1;
    }
    all
}

/// SIGSTOP (`freeze`) or SIGCONT to every process of the PostgreSQL node on `port`.
fn freeze_pg_node(port: u16, freeze: bool) -> Instant {
    let signal = if freeze { "-STOP" } else { "-CONT" };
    let pids = pg_node_processes(port);
    // One at a time: a backend listed a moment ago may have exited since (a connection closed), which
    // makes `kill` fail for it alone; a process that is gone needs no signal. Any other failure is one.
    for pid in &pids {
        let ok = Command::new("kill")
            .args([signal, pid])
            .stderr(std::process::Stdio::null())
            .status()
            .unwrap();
        let gone = !std::path::Path::new(&format!("/proc/{pid}")).exists();
        assert!(ok.success() || gone, "kill {signal} {pid} (of {pids:?})");
    }
    Instant::now()
}

/// What pg_auto_failover's monitor says of the node on `port`: its reported state.
fn pg_node_state(port: u16) -> String {
    let monitor = tandem_blocking::Database::connect_with(
        "postgres://autoctl_node@127.0.0.1:5435/pg_auto_failover",
        quick(),
    )
    .unwrap();
    monitor
        .fetch_one::<(String,)>(&raw(
            "SELECT CAST(reportedstate AS TEXT) FROM pgautofailover.node WHERE nodeport = $1",
            vec![i64::from(port).into()],
        ))
        .map(|(s,)| s)
        .unwrap_or_else(|e| format!("unknown ({e})"))
}

/// Waits (at most a minute) until the monitor reports the node on `port` in one of `states`; how long
/// after `since` that was.
fn wait_for_state(port: u16, states: &[&str], since: Instant, failure: &str) -> Duration {
    let deadline = since + Duration::from_secs(60);
    loop {
        let state = pg_node_state(port);
        if states.contains(&state.as_str()) {
            return since.elapsed();
        }
        assert!(Instant::now() < deadline, "{failure}: {state}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Failover by the tool users run: the primary's whole node (pg_auto_failover's keeper and PostgreSQL)
/// freezes mid-job and stays frozen; the monitor finds it unhealthy, and promotes the standby once the
/// old primary must have demoted itself. Meanwhile the essay job runs on a
/// `5433,5434?target_session_attrs=read-write&socket_timeout=2s` URL, once per runner (each in a schema of
/// its own): each run stops with a typed error within the socket bound, reruns are refused while no server
/// is read-write, and a rerun completes on the promoted standby, resuming from the checkpoints. After the
/// thaw the old primary rejoins as the standby, and both servers hold every row exactly once (the pair
/// replicates synchronously: nothing acknowledged is lost). The pair is switched back afterwards.
pub(crate) fn pg_failover() {
    let _one = PG_PAIR.lock().unwrap_or_else(|e| e.into_inner());
    struct Settle;
    impl Drop for Settle {
        fn drop(&mut self) {
            let _ = Command::new("kill")
                .arg("-CONT")
                .args(pg_node_processes(5433))
                .status();
            if let Err(e) = pg_settle() {
                eprintln!("{e}");
            }
        }
    }
    let _settle = Settle;
    let rows = 20_000;
    let bound = Duration::from_secs(2);
    let base = "postgres://postgres@127.0.0.1:5433,127.0.0.1:5434/test?target_session_attrs=read-write\
                &socket_timeout=2s";
    let admin = tandem_blocking::Database::connect_with(base, quick()).unwrap();
    let sides = ["blocking", "async"];
    let urls: Vec<String> = sides
        .iter()
        .map(|side| {
            let schema = format!("failover_{side}");
            admin
                .execute(&raw(
                    format!("DROP SCHEMA IF EXISTS {schema} CASCADE"),
                    vec![],
                ))
                .unwrap();
            admin
                .execute(&raw(format!("CREATE SCHEMA {schema}"), vec![]))
                .unwrap();
            format!("{base}&search_path={schema}")
        })
        .collect();
    for url in &urls {
        let db = tandem_blocking::Database::connect_with(url, quick()).unwrap();
        reset(&db, rows);
        tandem_batch::blocking::prepare(&db).unwrap();
    }
    let job = {
        let mut job = essay::job(4);
        job.chunk_size = 100;
        job.page_size = 100;
        job.chunk_delay = Some(Duration::from_millis(20));
        job
    };
    let frozen_at: Mutex<Option<Instant>> = Mutex::new(None);
    let outcomes = std::thread::scope(|s| {
        let running: Vec<_> = sides
            .iter()
            .zip(&urls)
            .map(|(side, url)| {
                let frozen_at = &frozen_at;
                // A job of its own per runner: PostgreSQL's run lock is the database's, whatever the schema.
                let job = job.clone().param("runner", *side);
                s.spawn(move || {
                    let job = &job;
                    let use_async = *side == "async";
                    let rt = harness::runtime();
                    let db = tandem_blocking::Database::connect_with(url, quick()).unwrap();
                    let adb = rt.block_on(connect_async(url, quick())).unwrap();
                    let deadline = Instant::now() + Duration::from_secs(120);
                    let (mut first, mut refused) = (None, 0);
                    loop {
                        let r = if use_async {
                            rt.block_on(tandem_batch::asynchronous::run(&adb, job))
                        } else {
                            tandem_batch::blocking::run(&db, job)
                        };
                        let since = frozen_at.lock().unwrap().map(|at| at.elapsed());
                        match r {
                            Ok(report) => return (first, refused, since, report),
                            Err(e) => {
                                assert!(
                                    matches!(&e, JobError::Database(d) if d.is_unreachable())
                                        || matches!(e, JobError::AlreadyRunning { .. }),
                                    "{side}: {e:?}"
                                );
                                match &first {
                                    None => first = Some((e.to_string(), since)),
                                    Some(_) => refused += 1,
                                }
                                assert!(Instant::now() < deadline, "{side}: no run completed: {e}");
                                std::thread::sleep(Duration::from_millis(200));
                            }
                        }
                    }
                })
            })
            .collect();
        let watcher = tandem_blocking::Database::connect_with(&urls[0], quick()).unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let (n,): (Option<i64>,) = watcher
                .fetch_one(&raw(
                    "SELECT CAST(SUM(chunk_count) AS BIGINT) FROM batch_step_execution",
                    vec![],
                ))
                .unwrap();
            if n.unwrap_or(0) >= 8 {
                break;
            }
            assert!(Instant::now() < deadline, "the jobs did not get going");
            std::thread::sleep(Duration::from_millis(20));
        }
        let frozen = freeze_pg_node(5433, true);
        *frozen_at.lock().unwrap() = Some(frozen);
        // When pg_auto_failover has promoted the standby (read-write: `wait_primary` until its new
        // standby is back).
        let promoted = wait_for_state(5434, &["wait_primary", "primary"], frozen, "no promotion");
        eprintln!("failover: 5434 promoted {promoted:?} after the freeze");
        running
            .into_iter()
            .map(|r| r.join().unwrap())
            .collect::<Vec<_>>()
    });
    let mut stopped = Vec::new();
    for (side, (first, refused, completed, report)) in sides.iter().zip(outcomes) {
        let (error, at) =
            first.unwrap_or_else(|| panic!("{side}: the run did not notice the freeze"));
        let at = at.expect("the first failure came after the freeze");
        eprintln!(
            "failover, {side} runner: stopped {at:?} after the freeze ({error}); {refused} reruns refused; \
             completed on the promoted standby {:?} after the freeze (resumed: {})",
            completed.unwrap(),
            report.resumed
        );
        assert!(
            report.resumed,
            "{side}: the rerun resumes from the checkpoints"
        );
        stopped.push((side, at));
    }
    // The calls on the frozen primary give up after `bound`; the run's closing writes (its partitions'
    // and its own ends, each retried) then wait for a read-write server: the promotion, which the
    // monitor makes once the old primary must have demoted itself (`.ci/cluster`: 3 s to find the node
    // unhealthy, 8 s for the demotion).
    for (side, at) in stopped {
        assert!(
            at < bound + Duration::from_secs(3 + 8) + 2 * quick().connect_timeout,
            "{side}: the run returned {at:?} after the freeze"
        );
    }
    let thawed = freeze_pg_node(5433, false);
    // This process marked the frozen primary silent: the tests after this one walk the list in order.
    tandem_core::hosts::forget_silent();
    let rejoined = wait_for_state(
        5433,
        &["secondary"],
        thawed,
        "the old primary did not rejoin",
    );
    eprintln!("failover: the old primary rejoined as the standby {rejoined:?} after the thaw");
    for url in &urls {
        let schema = &url[url.rfind('=').unwrap() + 1..];
        for port in [5434, 5433] {
            let one = format!("postgres://postgres@127.0.0.1:{port}/test?search_path={schema}");
            let db = tandem_blocking::Database::connect_with(&one, quick()).unwrap();
            let (all, distinct): (i64, i64) = db
                .fetch_one(&raw(
                    "SELECT COUNT(*), COUNT(DISTINCT source_name) FROM benchmark_target",
                    vec![],
                ))
                .unwrap();
            eprintln!("failover, {schema} on :{port}: {all} rows, {distinct} distinct");
            assert_eq!(
                (all, distinct),
                (rows as i64, rows as i64),
                "{schema} on :{port}"
            );
        }
    }
}
