//! One run at a time: concurrent processes and runs in one process, the lease across nodes, a lost lease,
//! and a completed run that a later failure must not hide.

use super::*;

/// Two processes start the same job at once (one blocking, one async): exactly one runs it, the other is
/// refused with "already running" before it writes anything; every row is written once. The lock is a file
/// beside a SQLite database, an advisory lock on PostgreSQL, a named lock on MariaDB.
pub(crate) fn concurrent_processes(dialect: Dialect) {
    let t = db::open(dialect, "twoproc", PoolConfig::default());
    reset(&t.db, ROWS);
    let url = t.target.url();
    // 4 partitions × 5 chunks × 200 ms: the winner holds the job for a second or more, far longer than the
    // other process takes to start and ask for the lock.
    let spawn = |extra: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_essay-job"))
            .args([url.as_str(), "4", "200"])
            .args(extra)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let children = [spawn(&[]), spawn(&["--async"])];
    let outputs: Vec<_> = children
        .into_iter()
        .map(|c| c.wait_with_output().unwrap())
        .collect();
    let ok: Vec<_> = outputs.iter().filter(|o| o.status.success()).collect();
    let refused: Vec<_> = outputs.iter().filter(|o| !o.status.success()).collect();
    let text = |o: &std::process::Output| {
        format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    };
    assert_eq!(
        (ok.len(), refused.len()),
        (1, 1),
        "{:?}",
        outputs.iter().map(text).collect::<Vec<_>>()
    );
    assert!(
        text(refused[0]).contains("is already running"),
        "{}",
        text(refused[0])
    );
    assert_target(&t.db, &expected(1..=ROWS));
    assert_eq!(executions(&t.db), [RunStatus::Completed]);
}

/// In one process, two runs of the same job on one pool: the second is refused while the first runs, and
/// runs once the first is done (then finding it completed). Also in memory.
pub(crate) fn concurrent_runs_in_process() {
    for url in ["sqlite::memory:".to_owned(), String::new()] {
        let target = db::target(Dialect::Sqlite, "inproc");
        let db = if url.is_empty() {
            Database::open(target.options.clone(), PoolConfig::default()).unwrap()
        } else {
            Database::connect(&url).unwrap()
        };
        reset(&db, 2_000);
        let mut slow = essay::job(2).sizes(100, 100);
        slow.chunk_delay = Some(Duration::from_millis(30));
        std::thread::scope(|s| {
            let first = s.spawn(|| tandem_batch::blocking::run(&db, &slow));
            // Wait until the first run has committed a chunk, so it holds the lock.
            let deadline = std::time::Instant::now() + Duration::from_secs(20);
            while db
                .fetch_one::<(i64,)>(&benchmark_target::table.select(count_star()))
                .unwrap()
                .0
                == 0
            {
                assert!(std::time::Instant::now() < deadline, "no progress");
                std::thread::sleep(Duration::from_millis(5));
            }
            let second = tandem_batch::blocking::run(&db, &essay::job(2));
            assert!(
                matches!(second, Err(JobError::AlreadyRunning { .. })),
                "{second:?}"
            );
            first.join().unwrap().unwrap();
        });
        assert!(matches!(
            tandem_batch::blocking::run(&db, &essay::job(2)),
            Err(JobError::AlreadyCompleted { .. })
        ));
        assert_target(&db, &expected(1..=2_000));
    }
}

/// Sets the job's lease row as another run would have left it: `owner` on `node`, expiring `in_ms` from now
/// (negative: expired).
fn plant_lease(db: &Database, job: &BatchJob<Source, Target>, node: &str, in_ms: i64) {
    db.execute(&raw(
        "CREATE TABLE IF NOT EXISTS batch_job_lock (job_key VARCHAR(64) NOT NULL PRIMARY KEY, \
         owner VARCHAR(64) NOT NULL, node VARCHAR(200) NOT NULL, expires_at BIGINT NOT NULL)",
        vec![],
    ))
    .unwrap();
    db.execute(&raw(
        "REPLACE INTO batch_job_lock (job_key, owner, node, expires_at) \
         VALUES (?, 'another-run', ?, CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED) + ?)",
        vec![job.lock_key().into(), node.into(), in_ms.into()],
    ))
    .unwrap();
}

fn leases(db: &Database) -> Vec<(String, String)> {
    db.fetch_all(&raw("SELECT owner, node FROM batch_job_lock", vec![]))
        .unwrap()
}

/// MySQL/MariaDB's run lock holds across a cluster: a live lease left by a run on another node refuses a
/// run here, on both runners, though this node's GET_LOCK is free; once expired, it is taken over. A lease
/// left on this node belongs to a dead session and is taken over at once. A run gives its lease back.
pub(crate) fn lease_across_nodes_mysql() {
    let t = db::open(Dialect::MySql, "lease", PoolConfig::default());
    let (rt, adb) = async_twin(&t, PoolConfig::default());
    let db = &t.db;
    let (this_node,): (String,) = db
        .fetch_one(&raw("SELECT CONCAT(@@hostname, ':', @@port)", vec![]))
        .unwrap();
    for use_async in [false, true] {
        let run = |job: &BatchJob<Source, Target>| run_job(use_async, (&rt, &adb), db, job);
        reset(db, 1_000);
        tandem_batch::blocking::prepare(db).unwrap();
        let job = essay::job(4);
        plant_lease(db, &job, "elsewhere:3312", 60_000);
        assert!(
            matches!(run(&job), Err(JobError::AlreadyRunning { .. })),
            "async: {use_async}"
        );
        assert_eq!(
            executions(db),
            [],
            "async: {use_async}: refused before starting"
        );
        plant_lease(db, &job, "elsewhere:3312", -1);
        let report = run(&job).unwrap_or_else(|e| panic!("async: {use_async}: {e}"));
        assert_eq!(report.written, 1_000);
        assert_eq!(leases(db), [], "async: {use_async}: given back");

        reset(db, 1_000);
        plant_lease(db, &job, &this_node, 60_000);
        let report = run(&job).unwrap_or_else(|e| panic!("async: {use_async}: {e}"));
        assert_eq!(report.written, 1_000, "async: {use_async}");
        assert_target(db, &expected(1..=1_000));
    }
}

/// A run whose lease is taken over (here: rewritten by the test, as a run on another node would after
/// the lease expired) stops before its next chunk with `LockLost`, on both runners; what it committed stays,
/// and a rerun completes with every row once.
pub(crate) fn lease_lost_mysql() {
    let t = db::open(Dialect::MySql, "leaselost", PoolConfig::default());
    let (rt, adb) = async_twin(&t, PoolConfig::default());
    let db = &t.db;
    for use_async in [false, true] {
        reset(db, 2_000);
        let mut job = essay::job(2).lock_lease(Duration::from_secs(1));
        job.chunk_size = 50;
        job.page_size = 50;
        job.chunk_delay = Some(Duration::from_millis(100));
        let stolen = std::thread::scope(|scope| {
            let running = scope.spawn(|| {
                if use_async {
                    rt.block_on(tandem_batch::asynchronous::run(&adb, &job))
                } else {
                    tandem_batch::blocking::run(db, &job)
                }
            });
            while committed_chunks(db) < 4 {
                std::thread::sleep(Duration::from_millis(10));
            }
            db.execute(&raw("UPDATE batch_job_lock SET owner = 'intruder'", vec![]))
                .unwrap();
            running.join().unwrap()
        });
        assert!(
            matches!(stolen, Err(JobError::LockLost { .. })),
            "async: {use_async}: {stolen:?}"
        );
        let done = committed_chunks(db);
        assert!(
            done < 40,
            "async: {use_async}: stopped midway ({done} chunks)"
        );
        db.execute(&raw("DELETE FROM batch_job_lock", vec![]))
            .unwrap();
        let report = if use_async {
            rt.block_on(tandem_batch::asynchronous::run(
                &adb,
                &job.clone().lock_lease(Duration::from_secs(30)),
            ))
        } else {
            tandem_batch::blocking::run(db, &job)
        }
        .unwrap_or_else(|e| panic!("async: {use_async}: rerun: {e}"));
        assert!(report.resumed, "async: {use_async}");
        assert_eq!((report.read, report.written), (2_000, 2_000));
        assert_target(db, &expected(1..=2_000));
    }
}

/// A completed run is found whatever came after it: a failed run of the same job recorded later (a twin
/// run on another node, before leases) does not make the job runnable again.
pub(crate) fn completed_is_not_hidden_by_a_later_failure() {
    let t = db::open(Dialect::Sqlite, "completed", PoolConfig::default());
    let db = &t.db;
    reset(db, 100);
    let job = essay::job(2);
    let first = tandem_batch::blocking::run(db, &job).unwrap();
    db.repository::<JobExecution>()
        .insert(&JobExecution {
            id: 0,
            job_name: job.name.clone(),
            job_params: job.params_text(),
            status: RunStatus::Failed,
            started_at: 0,
            ended_at: None,
            read_count: 0,
            write_count: 0,
            skip_count: 0,
            error_text: Some("a twin run that failed".into()),
        })
        .unwrap();
    match tandem_batch::blocking::run(db, &job) {
        Err(JobError::AlreadyCompleted { execution, .. }) => {
            assert_eq!(execution, first.execution_id)
        }
        other => panic!("{other:?}"),
    }
    assert_target(db, &expected(1..=100));
}

/// A run that stops making progress — its processor stalls for five leases, as a partition stuck on a
/// frozen server would — stops renewing its lease, on both runners: the lease row expires (by the server's
/// clock) within two leases of the stall, so a run on another node could take the job over, and the stalled
/// run, once it wakes, stops with `LockLost` without writing anything more. A rerun completes every row once.
pub(crate) fn stalled_run_gives_up_its_lease_mysql() {
    let t = db::open(Dialect::MySql, "stalled", PoolConfig::default());
    let (rt, adb) = async_twin(&t, PoolConfig::default());
    let db = &t.db;
    let lease = Duration::from_secs(1);
    let job = |stall: bool| {
        // The 301st row processed, whatever its key (a Galera cluster hands out keys three apart): the
        // first of the fourth page, after three chunks were written.
        let processed = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        BatchJob::new("stalls", move |s: Source| {
            if stall && processed.fetch_add(1, Ordering::SeqCst) == 300 {
                std::thread::sleep(5 * lease);
            }
            essay::transform(s)
        })
        .sizes(100, 100)
        .lock_lease(lease)
    };
    let left_ms = raw(
        "SELECT expires_at - CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED) FROM batch_job_lock",
        vec![],
    );
    for use_async in [false, true] {
        let run = |job: &BatchJob<Source, Target>| run_job(use_async, (&rt, &adb), db, job);
        reset(db, 1_000);
        let stalling = job(true);
        let (result, expired_after) = std::thread::scope(|scope| {
            let running = scope.spawn(|| run(&stalling));
            until_chunks(db, 3, &format!("async {use_async}"));
            // The fourth page is being processed: the stall has begun.
            let stalled_at = std::time::Instant::now();
            let expired_after = loop {
                let (left,): (i64,) = db.fetch_one(&left_ms).unwrap();
                if left < 0 {
                    break stalled_at.elapsed();
                }
                assert!(
                    stalled_at.elapsed() < 2 * lease + Duration::from_millis(1_000),
                    "async {use_async}: the lease is still renewed {:?} into the stall",
                    stalled_at.elapsed()
                );
                std::thread::sleep(Duration::from_millis(50));
            };
            (running.join().unwrap(), expired_after)
        });
        eprintln!(
            "async {use_async}: the stalled run's lease expired {expired_after:?} into the stall"
        );
        assert!(
            matches!(result, Err(JobError::LockLost { .. })),
            "async {use_async}: {result:?}"
        );
        assert_eq!(
            committed_chunks(db),
            3,
            "async {use_async}: nothing written after the stall (lease expired after {expired_after:?})"
        );
        let report = run(&job(false)).unwrap_or_else(|e| panic!("async {use_async}: rerun: {e}"));
        assert!(report.resumed, "async {use_async}");
        assert_target(db, &expected(1..=1_000));
    }
}

/// Waits (at most 30 s) until `n` chunks are committed.
fn until_chunks(db: &Database, n: i64, what: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while committed_chunks(db) < n {
        assert!(std::time::Instant::now() < deadline, "{what}: no progress");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Fencing: a chunk whose transaction is under way when its run loses the lease is not committed. The
/// test holds the step rows locked so that the fourth chunk's checkpoint waits, inside its transaction,
/// with its rows inserted; meanwhile another owner takes the lease; then the lock is let go. The chunk's
/// lease guard matches no row, its transaction is rolled back, the run ends with `LockLost`: three chunks
/// committed, not four. A rerun resumes and writes every row once.
pub(crate) fn lost_lease_commits_nothing_mysql() {
    let t = db::open(Dialect::MySql, "fenced", PoolConfig::default());
    let (rt, adb) = async_twin(&t, PoolConfig::default());
    let db = &t.db;
    let job = |pause: bool| {
        let processed = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        BatchJob::new("fenced", move |s: Source| {
            // A pause before the fourth chunk, while the test takes its lock.
            if pause && processed.fetch_add(1, Ordering::SeqCst) == 300 {
                std::thread::sleep(Duration::from_millis(500));
            }
            essay::transform(s)
        })
        .sizes(100, 100)
        .lock_lease(Duration::from_secs(10))
    };
    let waiting = raw(
        "SELECT COUNT(*) FROM information_schema.PROCESSLIST \
         WHERE (info LIKE 'UPDATE `batch_step_execution`%' OR info LIKE 'UPDATE batch_step_execution%') \
         AND time_ms > 50",
        vec![],
    );
    for use_async in [false, true] {
        let run = |job: &BatchJob<Source, Target>| run_job(use_async, (&rt, &adb), db, job);
        reset(db, 1_000);
        let paused = job(true);
        let result = std::thread::scope(|scope| {
            let running = scope.spawn(|| run(&paused));
            until_chunks(db, 3, &format!("async {use_async}"));
            // A pool of its own: the run's may be all in use.
            let other = Database::open(t.target.options.clone(), PoolConfig::default()).unwrap();
            let holder = other.begin(tandem_core::TxOptions::default()).unwrap();
            holder
                .fetch_all::<(i64,)>(&raw(
                    "SELECT id FROM batch_step_execution FOR UPDATE",
                    vec![],
                ))
                .unwrap();
            // The fourth chunk's checkpoint now waits for the step row, its rows inserted.
            let deadline = std::time::Instant::now() + Duration::from_secs(30);
            loop {
                let (n,): (i64,) = other.fetch_one(&waiting).unwrap();
                if n > 0 {
                    break;
                }
                if running.is_finished() {
                    panic!("async {use_async}: the run ended: {:?}", running.join());
                }
                assert!(
                    std::time::Instant::now() < deadline,
                    "async {use_async}: no wait"
                );
                std::thread::sleep(Duration::from_millis(5));
            }
            let taken = other
                .execute(&raw(
                    "UPDATE batch_job_lock SET owner = 'another-run', \
                     expires_at = CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED) + 60000",
                    vec![],
                ))
                .unwrap();
            assert_eq!(taken, 1, "async {use_async}: the lease row");
            holder.rollback().unwrap();
            running.join().unwrap()
        });
        assert!(
            matches!(result, Err(JobError::LockLost { .. })),
            "async {use_async}: {result:?}"
        );
        assert_eq!(
            committed_chunks(db),
            3,
            "async {use_async}: the fourth chunk was committed"
        );
        let (rows,): (i64,) = db
            .fetch_one(&raw("SELECT COUNT(*) FROM benchmark_target", vec![]))
            .unwrap();
        assert_eq!(
            rows, 300,
            "async {use_async}: rows of a fenced chunk stayed"
        );
        db.execute(&raw("DELETE FROM batch_job_lock", vec![]))
            .unwrap();
        let report = run(&job(false)).unwrap_or_else(|e| panic!("async {use_async}: rerun: {e}"));
        assert!(report.resumed, "async {use_async}");
        assert_target(db, &expected(1..=1_000));
    }
}
