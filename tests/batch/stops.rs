//! Runs that stop without failing — a stopped process, a stopped client — and runs that find an earlier
//! run's bookkeeping wrong: what each leaves, and how the next run mends it.

use super::*;

/// The `essay-job` program on `url` (2 partitions, 100 ms between chunks, a 2 s lease), blocking or async.
fn essay_job(url: &str, use_async: bool, lease_ms: u64) -> std::process::Child {
    let mut args = vec![url.to_owned(), "2".into(), "100".into()];
    args.push(format!("--lease={lease_ms}"));
    if use_async {
        args.push("--async".into());
    }
    std::process::Command::new(env!("CARGO_BIN_EXE_essay-job"))
        .args(&args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

/// Sends `signal` (`-STOP`, `-CONT`) to a process this test started.
fn signal(child: &std::process::Child, signal: &str) {
    let ok = std::process::Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(ok.success(), "kill {signal} {}", child.id());
}

/// Waits until `n` chunks are committed, while `child` runs.
fn until_chunks_of(db: &Database, child: &mut std::process::Child, n: i64) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while committed_chunks(db) < n {
        assert!(
            std::time::Instant::now() < deadline,
            "the job made no progress"
        );
        if let Some(status) = child.try_wait().unwrap() {
            let out = child.stderr.take().map(std::io::read_to_string);
            panic!("the job ended ({status}) before it could be stopped: {out:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A runner process stopped (SIGSTOP) midway loses the job within one lease, on its own server as on any
/// other: its lock session, idle past the lease, is closed by the server (its session lock with it), and
/// its lease runs out. A new run of the job is let in within the lease (and a second), takes the job over
/// and completes it. Continued (SIGCONT), the stopped process is refused at its next write and ends with
/// "lost its run lock", having written nothing more — and its error is not recorded over the new run's
/// record of it. Both runners as the stopped process, both engines.
pub(crate) fn stopped_process_loses_its_lock(dialect: Dialect) {
    let t = db::open(dialect, "sigstop", PoolConfig::default());
    let db = &t.db;
    let lease = Duration::from_secs(2);
    for use_async in [false, true] {
        reset(db, 4_000);
        let mut child = essay_job(&t.target.url(), use_async, lease.as_millis() as u64);
        until_chunks_of(db, &mut child, 2);
        signal(&child, "-STOP");
        let stopped_at = std::time::Instant::now();
        let job = essay::job(2).sizes(500, 500).lock_lease(lease);
        let let_in_after = loop {
            match tandem_batch::blocking::run(db, &job) {
                Err(JobError::AlreadyRunning { .. }) => {
                    assert!(
                        stopped_at.elapsed() < lease + Duration::from_secs(1),
                        "async {use_async}: still refused {:?} after the stop",
                        stopped_at.elapsed()
                    );
                    std::thread::sleep(Duration::from_millis(50));
                }
                Ok(report) => {
                    assert_eq!((report.read, report.written), (4_000, 4_000));
                    assert!(report.resumed, "async {use_async}");
                    break stopped_at.elapsed();
                }
                Err(e) => {
                    signal(&child, "-CONT");
                    panic!("async {use_async}: the new run: {e}")
                }
            }
        };
        eprintln!(
            "{dialect:?} async {use_async}: a new run was let in {let_in_after:?} after the stop"
        );
        let chunks = committed_chunks(db);
        signal(&child, "-CONT");
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && stderr.contains("lost its run lock"),
            "async {use_async}: the continued process: {}{stderr}",
            String::from_utf8_lossy(&out.stdout)
        );
        assert_eq!(committed_chunks(db), chunks, "async {use_async}");
        assert_target(db, &expected(1..=4_000));
        assert_replaced(db, &format!("async {use_async}"));
    }
}

/// A client stopped for longer than its `socket_timeout` (2 s here; stopped 4 s) has not met a silent
/// server: the bound is on the server's silence, measured while the client runs. Continued, the run
/// finishes as if nothing happened (its lease, 20 s, outlasts the stop), every row once. Both runners,
/// both engines.
pub(crate) fn stopped_client_is_not_a_silent_server(dialect: Dialect) {
    let t = db::open(dialect, "stopclient", PoolConfig::default());
    let db = &t.db;
    let url = t.target.url();
    let url = format!(
        "{url}{}socket_timeout=2s",
        if url.contains('?') { '&' } else { '?' }
    );
    for use_async in [false, true] {
        reset(db, 4_000);
        let mut child = essay_job(&url, use_async, 20_000);
        until_chunks_of(db, &mut child, 2);
        signal(&child, "-STOP");
        std::thread::sleep(Duration::from_secs(4));
        signal(&child, "-CONT");
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{dialect:?} async {use_async}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_target(db, &expected(1..=4_000));
        assert_eq!(executions(db), [RunStatus::Completed]);
    }
}

/// The job with a processor that fails once at key `key`, then works.
fn failing_once(key: i64, armed: Arc<AtomicBool>) -> BatchJob<Source, Target> {
    BatchJob::new("mend", move |s: Source| {
        if s.id == key && armed.swap(false, Ordering::SeqCst) {
            return Err(ProcessError::from("injected failure"));
        }
        essay::transform(s)
    })
    .parallelism(4)
    .sizes(100, 100)
}

/// Every step row's range and checkpoint, by step name, of the newest run.
fn checkpoints(db: &Database) -> Vec<(String, i64, Option<i64>, RunStatus)> {
    let steps: Vec<StepExecution> = db
        .fetch_all(
            &batch_step_execution::table
                .select_all()
                .order_by(batch_step_execution::id.asc()),
        )
        .unwrap();
    let newest = steps.iter().map(|s| s.job_execution_id).max().unwrap_or(0);
    steps
        .into_iter()
        .filter(|s| s.job_execution_id == newest)
        .map(|s| (s.step_name, s.partition_hi, s.checkpoint, s.status))
        .collect()
}

/// A partition is complete only when its checkpoint reaches the top of its range, and a rerun reopens one
/// that an earlier run marked COMPLETED short of it — as a run that read a short page on a node that had
/// not applied the source yet used to leave (here planted: the first partition cut after its first chunk,
/// its other rows missing). The rerun reads the missing rows from that checkpoint on, and the job ends
/// exact, every completed step's checkpoint at its range's top. Every engine, both runners.
pub(crate) fn short_partitions_are_reopened(dialect: Dialect) {
    let t = db::open(dialect, "reopen", PoolConfig::default());
    let (rt, adb) = async_twin(&t, PoolConfig::default());
    let db = &t.db;
    for use_async in [false, true] {
        reset(db, 2_000);
        let armed = Arc::new(AtomicBool::new(true));
        // A key in the last partition: the others complete before the failure.
        let (key,): (i64,) = db
            .fetch_one(&raw("SELECT MAX(id) FROM benchmark_source", vec![]))
            .unwrap();
        let failed = run_job(
            use_async,
            (&rt, &adb),
            db,
            &failing_once(key, armed.clone()),
        );
        assert!(
            matches!(failed, Err(JobError::Processor { .. })),
            "{failed:?}"
        );
        let steps = checkpoints(db);
        assert!(
            steps[..3]
                .iter()
                .all(|(_, hi, cp, st)| *st == RunStatus::Completed && *cp == Some(*hi)),
            "async {use_async}: complete partitions end at their range's top: {steps:?}"
        );
        // The first partition as the old rule left it after a short page: COMPLETED after one chunk, at
        // the key of its 100th row (keys are not consecutive on a Galera node), the rows after it missing.
        let first_hi = steps[0].1;
        let (cut,): (i64,) = db
            .fetch_one(&raw(
                "SELECT id FROM benchmark_source ORDER BY id LIMIT 1 OFFSET 99",
                vec![],
            ))
            .unwrap();
        let d = db.dialect();
        db.execute(&raw(
            leases::spelled(
                d,
                "UPDATE batch_step_execution SET checkpoint = ?, read_count = 100, write_count = 100, \
                 chunk_count = 1 WHERE step_name = 'partition-0' AND job_execution_id = \
                 (SELECT MAX(job_execution_id) FROM (SELECT job_execution_id FROM batch_step_execution) s)",
            ),
            vec![cut.into()],
        ))
        .unwrap();
        db.execute(&raw(
            leases::spelled(
                d,
                "DELETE FROM benchmark_target WHERE source_name IN \
                 (SELECT UPPER(name) FROM benchmark_source WHERE id > ? AND id <= ?)",
            ),
            vec![cut.into(), first_hi.into()],
        ))
        .unwrap();
        let report = run_job(use_async, (&rt, &adb), db, &failing_once(key, armed))
            .unwrap_or_else(|e| panic!("async {use_async}: the rerun: {e}"));
        assert!(report.resumed);
        assert_eq!((report.read, report.written), (2_000, 2_000));
        assert_target(db, &expected(1..=2_000));
        assert!(
            checkpoints(db)
                .iter()
                .all(|(_, hi, cp, st)| *st == RunStatus::Completed && *cp == Some(*hi)),
            "async {use_async}: {:?}",
            checkpoints(db)
        );
    }
}

/// When the counts cannot add up any more — every partition's checkpoint at its range's top, but the
/// source holds rows the job did not read (here: a row put back behind a checkpoint between two runs) —
/// the run fails naming the partition, its keys, what it read and what its range holds, and says how to
/// read the source afresh.
pub(crate) fn shortfall_is_explained() {
    let t = db::open(Dialect::Sqlite, "shortfall", PoolConfig::default());
    let db = &t.db;
    reset(db, 1_000);
    db.execute(&raw("DELETE FROM benchmark_source WHERE id = 5", vec![]))
        .unwrap();
    let armed = Arc::new(AtomicBool::new(true));
    let failed = tandem_batch::blocking::run(db, &failing_once(1_000, armed.clone()));
    assert!(
        matches!(failed, Err(JobError::Processor { .. })),
        "{failed:?}"
    );
    db.execute(&raw(
        "INSERT INTO benchmark_source (id, name, value) VALUES (5, 'item-5', 5)",
        vec![],
    ))
    .unwrap();
    match tandem_batch::blocking::run(db, &failing_once(1_000, armed)) {
        Err(JobError::Inconsistent(why)) => {
            assert!(
                why.contains(
                    "partition-0 (keys 1 to 250) read 249 rows, the source holds 250 there"
                ),
                "{why}"
            );
            assert!(why.contains("other parameters"), "{why}");
        }
        other => panic!("{other:?}"),
    }
}

/// The essay job is the same job whatever its parallelism: a run with another parallelism is refused while
/// one runs, told the job is completed after, and resumes a stopped run keeping its partitions — never a
/// second job writing the same target (which failed on its unique key, and then every rerun of either).
pub(crate) fn parallelism_is_not_the_job() {
    let t = db::open(Dialect::Sqlite, "samejob", PoolConfig::default());
    let db = &t.db;
    reset(db, 2_000);
    assert_eq!(essay::job(1).lock_key(), essay::job(8).lock_key());
    let mut slow = essay::job(4).sizes(100, 100);
    slow.chunk_delay = Some(Duration::from_millis(30));
    std::thread::scope(|s| {
        let first = s.spawn(|| tandem_batch::blocking::run(db, &slow));
        super::leases::until_chunks_committed(db, 1);
        let other = tandem_batch::blocking::run(db, &essay::job(2));
        assert!(
            matches!(other, Err(JobError::AlreadyRunning { .. })),
            "{other:?}"
        );
        first.join().unwrap().unwrap();
    });
    assert!(matches!(
        tandem_batch::blocking::run(db, &essay::job(8)),
        Err(JobError::AlreadyCompleted { .. })
    ));
    assert_target(db, &expected(1..=2_000));
}

/// PostgreSQL: a runner process stopped (SIGSTOP) *inside* a chunk's transaction holds that chunk's row
/// locks — but only for a lease: the run's transactions are begun with `idle_in_transaction_session_timeout`
/// set to the lease, so the server ends the stopped session and its locks go. The next run takes the job
/// over and completes it without waiting on them (it used to wait as long as the process stayed stopped,
/// and then report a lock wait past its `socket_timeout` as a silent server).
pub(crate) fn stopped_inside_a_transaction_postgres() {
    let t = db::open(Dialect::Postgres, "stoppedtx", PoolConfig::default());
    let db = &t.db;
    let lease = Duration::from_secs(2);
    reset(db, 20_000);
    let mut child = essay_job(&t.target.url(), false, lease.as_millis() as u64);
    until_chunks_of(db, &mut child, 1);
    // Stopped the moment one of its sessions sits in an open transaction.
    let in_transaction = raw(
        "SELECT COUNT(*) FROM pg_stat_activity WHERE datname = current_database() \
         AND state = 'idle in transaction' AND pid <> pg_backend_pid()",
        vec![],
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let (open,): (i64,) = db.fetch_one(&in_transaction).unwrap();
        if open > 0 {
            signal(&child, "-STOP");
            let (still,): (i64,) = db.fetch_one(&in_transaction).unwrap();
            if still > 0 {
                break;
            }
            signal(&child, "-CONT");
        }
        assert!(
            std::time::Instant::now() < deadline,
            "never caught inside a transaction"
        );
    }
    let stopped_at = std::time::Instant::now();
    let job = essay::job(2).sizes(500, 500).lock_lease(lease);
    let report = loop {
        match tandem_batch::blocking::run(db, &job) {
            Err(JobError::AlreadyRunning { .. }) => std::thread::sleep(Duration::from_millis(50)),
            other => break other,
        }
        if stopped_at.elapsed() > 4 * lease + Duration::from_secs(2) {
            signal(&child, "-CONT");
            panic!("still refused {:?} after the stop", stopped_at.elapsed());
        }
    };
    let took = stopped_at.elapsed();
    signal(&child, "-CONT");
    let out = child.wait_with_output().unwrap();
    let report = report.unwrap_or_else(|e| panic!("the new run, {took:?} after the stop: {e}"));
    eprintln!(
        "stopped inside a transaction: the new run completed {took:?} after the stop; the stopped one, \
         continued: {}",
        String::from_utf8_lossy(&out.stderr).trim()
    );
    assert_eq!(report.written + report.skipped, 20_000);
    assert!(
        took < 3 * lease + Duration::from_secs(2),
        "completed {took:?} after the stop"
    );
    assert!(!out.status.success());
    assert_target(db, &expected(1..=20_000));
}
