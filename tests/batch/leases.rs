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

/// `sql` written with `?` placeholders, in `dialect`'s spelling (`$1`, `$2`, … on PostgreSQL).
pub(crate) fn spelled(dialect: Dialect, sql: &str) -> String {
    if dialect != Dialect::Postgres {
        return sql.to_owned();
    }
    let mut n = 0;
    sql.chars()
        .map(|c| match c {
            '?' => {
                n += 1;
                format!("${n}")
            }
            c => c.to_string(),
        })
        .collect()
}

/// The server's clock in milliseconds, as the lease statements read it.
pub(crate) fn now_ms(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::Postgres => "CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)",
        _ => "CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)",
    }
}

/// The node a run's lease names for this server: `host:port` as the server knows itself.
pub(crate) fn this_node(db: &Database) -> String {
    let sql = match db.dialect() {
        Dialect::Postgres => {
            "SELECT COALESCE(host(inet_server_addr()) || ':' || inet_server_port(), '')"
        }
        _ => "SELECT CONCAT(@@hostname, ':', @@port)",
    };
    let (node,): (String,) = db.fetch_one(&raw(sql, vec![])).unwrap();
    node
}

/// Sets the job's lease row as another run would have left it: `owner` on `node`, expiring `in_ms` from now
/// (negative: expired).
fn plant_lease(db: &Database, job: &BatchJob<Source, Target>, node: &str, in_ms: i64) {
    let d = db.dialect();
    db.execute(&raw(
        "CREATE TABLE IF NOT EXISTS batch_job_lock (job_key VARCHAR(64) NOT NULL PRIMARY KEY, \
         owner VARCHAR(64) NOT NULL, node VARCHAR(200) NOT NULL, expires_at BIGINT NOT NULL)",
        vec![],
    ))
    .unwrap();
    db.execute(&raw(
        spelled(d, "DELETE FROM batch_job_lock WHERE job_key = ?"),
        vec![job.lock_key().into()],
    ))
    .unwrap();
    db.execute(&raw(
        spelled(
            d,
            &format!(
                "INSERT INTO batch_job_lock (job_key, owner, node, expires_at) \
                 VALUES (?, 'another-run', ?, {} + ?)",
                now_ms(d)
            ),
        ),
        vec![job.lock_key().into(), node.into(), in_ms.into()],
    ))
    .unwrap();
}

fn leases(db: &Database) -> Vec<(String, String)> {
    db.fetch_all(&raw("SELECT owner, node FROM batch_job_lock", vec![]))
        .unwrap()
}

/// The run lock holds across a cluster, the same on PostgreSQL and MariaDB: a live lease left by a run on
/// another node refuses a run here, on both runners, though this server's session lock is free; once
/// expired, it is taken over. A lease left on this node belongs to a session that is gone and is taken
/// over at once. A run gives its lease back.
pub(crate) fn lease_across_nodes(dialect: Dialect) {
    let t = db::open(dialect, "lease", PoolConfig::default());
    let (rt, adb) = async_twin(&t, PoolConfig::default());
    let db = &t.db;
    let this_node = this_node(db);
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

/// A run whose lease is taken over (here: rewritten by the test, as a run elsewhere would once the lease
/// expired) stops at its next write with `LockLost`, on both runners and both engines, and records
/// nothing after the takeover — its chunks, its steps' ends and its own end included: its execution row
/// stays as the takeover found it. What it committed before stays, and a rerun completes with every row
/// once.
pub(crate) fn lease_lost(dialect: Dialect) {
    let t = db::open(dialect, "leaselost", PoolConfig::default());
    let (rt, adb) = async_twin(&t, PoolConfig::default());
    let db = &t.db;
    for use_async in [false, true] {
        reset(db, 2_000);
        let mut job = essay::job(2).lock_lease(Duration::from_secs(1));
        job.chunk_size = 50;
        job.page_size = 50;
        job.chunk_delay = Some(Duration::from_millis(100));
        let (stolen, done) = std::thread::scope(|scope| {
            let running = scope.spawn(|| run_job(use_async, (&rt, &adb), db, &job));
            while committed_chunks(db) < 4 {
                std::thread::sleep(Duration::from_millis(10));
            }
            db.execute(&raw("UPDATE batch_job_lock SET owner = 'intruder'", vec![]))
                .unwrap();
            // What the run committed up to the takeover (a chunk under way may still commit: it is
            // checked at COMMIT, after the takeover's write, which waits for it).
            let done = committed_chunks(db);
            (running.join().unwrap(), done)
        });
        assert!(
            matches!(stolen, Err(JobError::LockLost { .. })),
            "async: {use_async}: {stolen:?}"
        );
        let after = committed_chunks(db);
        assert!(
            after <= done + 2,
            "async: {use_async}: {after} chunks after the takeover at {done} (one per partition may have \
             been under way)"
        );
        assert!(
            after < 40,
            "async: {use_async}: stopped midway ({after} chunks)"
        );
        assert_eq!(
            executions(db),
            [RunStatus::Started],
            "async: {use_async}: the run that lost its lease records no end"
        );
        assert!(
            step_statuses(db)
                .iter()
                .all(|(s, e)| *s == RunStatus::Started && e.is_none()),
            "async: {use_async}: nor its steps' ends: {:?}",
            step_statuses(db)
        );
        db.execute(&raw("DELETE FROM batch_job_lock", vec![]))
            .unwrap();
        let report = run_job(
            use_async,
            (&rt, &adb),
            db,
            &job.clone().lock_lease(Duration::from_secs(30)),
        )
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

/// The essay job with a processor that stalls for `stall` at the 301st row it processes (whatever its key:
/// a Galera cluster hands out keys three apart) — the first of the fourth page, after three chunks were
/// written — as a partition stuck on a frozen server would.
fn stalling(stall: Option<Duration>, lease: Duration) -> BatchJob<Source, Target> {
    let processed = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    BatchJob::new("stalls", move |s: Source| {
        if let Some(stall) = stall
            && processed.fetch_add(1, Ordering::SeqCst) == 300
        {
            std::thread::sleep(stall);
        }
        essay::transform(s)
    })
    .sizes(100, 100)
    .lock_lease(lease)
}

/// A run that stops making progress — its processor stalls for three leases — stops renewing its lease,
/// on both runners and both engines: the lease row expires (by the server's clock) within one lease of
/// the run's last progress, so another run could take the job over. Nobody does: the run, once it wakes,
/// goes on — the lease's guard in its next chunk finds it still its own — and completes every row once.
/// (One rule for a run that wakes: the lease row decides, in the write's own transaction.)
pub(crate) fn stalled_run_goes_on(dialect: Dialect) {
    let t = db::open(dialect, "stalled", PoolConfig::default());
    let (rt, adb) = async_twin(&t, PoolConfig::default());
    let db = &t.db;
    let lease = Duration::from_secs(1);
    let left_ms = raw(
        format!(
            "SELECT expires_at - {} FROM batch_job_lock",
            now_ms(dialect)
        ),
        vec![],
    );
    for use_async in [false, true] {
        reset(db, 1_000);
        let job = stalling(Some(3 * lease), lease);
        let (report, expired_after) = std::thread::scope(|scope| {
            let running = scope.spawn(|| run_job(use_async, (&rt, &adb), db, &job));
            until_chunks(db, 3, &format!("async {use_async}"));
            // The fourth page is being processed: the stall has begun.
            let stalled_at = std::time::Instant::now();
            let expired_after = loop {
                let (left,): (i64,) = db.fetch_one(&left_ms).unwrap();
                if left < 0 {
                    break stalled_at.elapsed();
                }
                assert!(
                    stalled_at.elapsed() < lease + Duration::from_millis(700),
                    "async {use_async}: the lease is still renewed {:?} into the stall",
                    stalled_at.elapsed()
                );
                std::thread::sleep(Duration::from_millis(20));
            };
            (running.join().unwrap(), expired_after)
        });
        eprintln!(
            "{dialect:?} async {use_async}: the stalled run's lease expired {expired_after:?} into the stall"
        );
        let report = report.unwrap_or_else(|e| panic!("async {use_async}: {e}"));
        assert_eq!((report.read, report.written), (1_000, 1_000));
        assert_eq!(executions(db), [RunStatus::Completed]);
        assert_target(db, &expected(1..=1_000));
    }
}

/// A stalled run is replaced within one lease, wherever the next run starts: here on the same server,
/// whose session lock the stalled run gave back once its lease ran out. The new run takes the lease over,
/// marks the stalled run abandoned and completes the job; the stalled run, once it wakes, is refused at
/// its next write (`LockLost`), writes nothing more, and overwrites nothing the new run recorded — the
/// abandoned run keeps the new run's words. Both runners, both engines.
pub(crate) fn stalled_run_is_replaced(dialect: Dialect) {
    let t = db::open(dialect, "replaced", PoolConfig::default());
    let (rt, adb) = async_twin(&t, PoolConfig::default());
    let db = &t.db;
    let lease = Duration::from_secs(1);
    for use_async in [false, true] {
        reset(db, 1_000);
        let job = stalling(Some(4 * lease), lease);
        let (stale, replaced_after) = std::thread::scope(|scope| {
            let running = scope.spawn(|| run_job(use_async, (&rt, &adb), db, &job));
            until_chunks(db, 3, &format!("async {use_async}"));
            let stalled_at = std::time::Instant::now();
            // The other runner starts the same job, again and again, until it is let in.
            let twin = stalling(None, lease);
            let replaced_after = loop {
                match run_job(!use_async, (&rt, &adb), db, &twin) {
                    Err(JobError::AlreadyRunning { .. }) => {
                        assert!(
                            stalled_at.elapsed() < lease + Duration::from_millis(1_500),
                            "async {use_async}: still refused {:?} into the stall",
                            stalled_at.elapsed()
                        );
                        std::thread::sleep(Duration::from_millis(50));
                    }
                    Ok(report) => {
                        assert_eq!((report.read, report.written), (1_000, 1_000));
                        break stalled_at.elapsed();
                    }
                    Err(e) => panic!("async {use_async}: the new run: {e}"),
                }
            };
            (running.join().unwrap(), replaced_after)
        });
        eprintln!("{dialect:?} async {use_async}: replaced {replaced_after:?} into the stall");
        assert!(
            matches!(stale, Err(JobError::LockLost { .. })),
            "async {use_async}: the stalled run, once awake: {stale:?}"
        );
        assert_target(db, &expected(1..=1_000));
        assert_replaced(db, &format!("async {use_async}"));
    }
}

/// Waits (at most 30 s) until `n` chunks are committed.
pub(crate) fn until_chunks_committed(db: &Database, n: i64) {
    until_chunks(db, n, "the run");
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
         WHERE (info LIKE '%UPDATE `batch_step_execution`%' OR info LIKE '%UPDATE batch_step_execution%') \
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
