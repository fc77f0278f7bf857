//! Runs that fail part-way: a processor error, killed connections, a killed process; each restart resumes
//! from the last committed chunk and the target ends exact.

use super::*;

/// A processor that fails once at `key` (the writer never gets that chunk), then works.
fn flaky(key: i64, armed: Arc<AtomicBool>) -> BatchJob<Source, Target> {
    BatchJob::new("flaky", move |s: Source| {
        if s.id == key && armed.swap(false, Ordering::SeqCst) {
            return Err(ProcessError::from("injected failure"));
        }
        essay::transform(s)
    })
    .parallelism(4)
    .sizes(200, 100)
}

/// The key of the `n`-th source row (from 1): keys are not `1..=n` on a server that spaces them (a Galera
/// node, `auto_increment_increment` > 1).
fn nth_key(db: &Database, n: i64) -> i64 {
    let (key,): (i64,) = db
        .fetch_one(&raw(
            format!(
                "SELECT id FROM benchmark_source ORDER BY id LIMIT 1 OFFSET {}",
                n - 1
            ),
            vec![],
        ))
        .unwrap();
    key
}

fn restart_after_failure(dialect: Dialect) {
    let t = db::open(dialect, "restart", PoolConfig::default());
    // Blocking runner.
    reset(&t.db, ROWS);
    let armed = Arc::new(AtomicBool::new(true));
    let key = nth_key(&t.db, 6_543);
    let err = tandem_batch::blocking::run(&t.db, &flaky(key, armed.clone())).unwrap_err();
    assert!(
        matches!(err, JobError::Processor { key: k, .. } if k == key),
        "{err}"
    );
    let partial: (i64,) =
        t.db.fetch_one(&benchmark_target::table.select(count_star()))
            .unwrap();
    assert!(
        partial.0 > 0 && (partial.0 as usize) < ROWS,
        "some chunks were committed before the failure: {}",
        partial.0
    );
    bare_started_row(&t.db, "flaky");
    let report = tandem_batch::blocking::run(&t.db, &flaky(key, armed)).unwrap();
    assert!(report.resumed, "resumed from the run that has steps");
    assert_eq!((report.read, report.written), (ROWS as u64, ROWS as u64));
    assert_target(&t.db, &expected(1..=ROWS));
    assert_eq!(
        executions(&t.db),
        [RunStatus::Failed, RunStatus::Failed, RunStatus::Completed]
    );

    // Async runner.
    reset(&t.db, ROWS);
    let (rt, adb) = async_twin(&t, PoolConfig::default());
    let armed = Arc::new(AtomicBool::new(true));
    let key = nth_key(&t.db, 2_345);
    let err = rt
        .block_on(tandem_batch::asynchronous::run(
            &adb,
            &flaky(key, armed.clone()),
        ))
        .unwrap_err();
    assert!(
        matches!(err, JobError::Processor { key: k, .. } if k == key),
        "{err}"
    );
    bare_started_row(&t.db, "flaky");
    let report = rt
        .block_on(tandem_batch::asynchronous::run(&adb, &flaky(key, armed)))
        .unwrap();
    assert!(report.resumed, "resumed from the run that has steps");
    assert_target(&t.db, &expected(1..=ROWS));
    assert_eq!(
        executions(&t.db),
        [RunStatus::Failed, RunStatus::Failed, RunStatus::Completed]
    );
}

/// What a run that stopped between its execution row and its steps used to leave (older versions wrote
/// them separately): a STARTED execution without steps. A rerun must pass over it to the checkpoints of the
/// run before, not start from scratch (duplicates, or a unique violation for good).
fn bare_started_row(db: &Database, name: &str) {
    db.repository::<JobExecution>()
        .insert(&JobExecution {
            id: 0,
            job_name: name.into(),
            job_params: String::new(),
            status: RunStatus::Started,
            started_at: 0,
            ended_at: None,
            read_count: 0,
            write_count: 0,
            skip_count: 0,
            error_text: None,
        })
        .unwrap();
}

/// A run stopped by an error resumes after its last committed chunk and writes every row once, also past a
/// run row left without steps (SQLite).
pub(crate) fn restart_after_failure_sqlite() {
    restart_after_failure(Dialect::Sqlite);
}

/// The same on PostgreSQL.
pub(crate) fn restart_after_failure_postgres() {
    restart_after_failure(Dialect::Postgres);
}

/// The same on MariaDB.
pub(crate) fn restart_after_failure_mysql() {
    restart_after_failure(Dialect::MySql);
}

/// Kills every connection of the test database while the job runs (in its chunks' transactions, or
/// between them), then reruns if the run failed: every row once.
fn killed_connections(dialect: Dialect, use_async: bool) {
    let t = db::open(
        dialect,
        if use_async { "akill" } else { "kill" },
        PoolConfig::default(),
    );
    reset(&t.db, ROWS);
    let admin = t.admin().unwrap().clone();
    let mut job = essay::job(4).sizes(250, 250);
    // Ten chunks per partition, 300 ms apart: the run lasts ~3 s, so the kill lands mid-run even on a
    // loaded machine (at 100 ms a CI run finished in 1.15 s, before its killer got going).
    job.chunk_delay = Some(Duration::from_millis(300));
    let (rt, adb) = async_twin(&t, PoolConfig::default());
    let killer = {
        let (admin, opts) = (admin.clone(), t.target.options.clone());
        std::thread::spawn(move || {
            // Kill once the run has committed chunks (not at a fixed time: on a loaded machine the run may
            // still be starting, and then there is nothing to resume).
            let watcher = Database::open(opts.clone(), PoolConfig::default()).unwrap();
            let deadline = std::time::Instant::now() + Duration::from_secs(60);
            while committed_chunks(&watcher) < 2 {
                assert!(
                    std::time::Instant::now() < deadline,
                    "the job made no progress"
                );
                std::thread::sleep(Duration::from_millis(10));
            }
            let sql = match dialect {
                Dialect::Postgres => format!(
                    "SELECT CAST(COUNT(pg_terminate_backend(pid)) AS BIGINT) FROM pg_stat_activity WHERE application_name = '{}'",
                    opts.application_name.as_deref().unwrap_or_default()
                ),
                _ => format!(
                    "SELECT CAST(ID AS SIGNED) FROM information_schema.PROCESSLIST WHERE DB = '{}' AND ID <> CONNECTION_ID()",
                    opts.database
                ),
            };
            if dialect == Dialect::Postgres {
                let (n,): (i64,) = admin.fetch_one(&raw(sql, vec![])).unwrap();
                assert!(n > 0, "the job's backends were found");
            } else {
                let ids: Vec<(i64,)> = admin.fetch_all(&raw(sql, vec![])).unwrap();
                for (id,) in ids {
                    let _ = admin.execute(&raw(format!("KILL {id}"), vec![]));
                }
            }
            // Chunks committed once the kill was done: fewer than all, or it did not land mid-run.
            committed_chunks(&watcher)
        })
    };
    let run = |job: &BatchJob<Source, Target>| {
        if use_async {
            rt.block_on(tandem_batch::asynchronous::run(&adb, job))
        } else {
            tandem_batch::blocking::run(&t.db, job)
        }
    };
    let first = run(&job);
    let at_kill = killer.join().unwrap();
    assert!(at_kill < 40, "the kill came after the run's 40 chunks");
    // The kill lands between two of a partition's statements or inside one. A statement under way, or a
    // page read on a dead connection, fails the run with ConnectionLost; a chunk whose BEGIN found its
    // connection dead is begun again on another (nothing of it ran), so a run whose partitions were all
    // between chunks goes on. Either way every row is written once.
    let (report, resumed) = match first {
        Err(err) => {
            assert!(
                matches!(err, JobError::Database(ref e) if e.kind() == Some(tandem_core::DbErrorKind::ConnectionLost)),
                "{err}"
            );
            // One rerun on the same pool: once it has seen a connection die, the pool checks the idle
            // connections that were open before that, instead of handing out the dead ones one failure
            // at a time.
            job.chunk_delay = None;
            (run(&job).unwrap(), true)
        }
        Ok(report) => (report, false),
    };
    // (The test's own blocking pool lost its idle connections too, unknown to it: check on a fresh one.)
    let fresh = Database::open(t.target.options.clone(), PoolConfig::default()).unwrap();
    let db = &fresh;
    assert_eq!(report.resumed, resumed);
    assert_target(db, &expected(1..=ROWS));
    let statuses = executions(db);
    assert_eq!(statuses.last().copied(), Some(RunStatus::Completed));
    assert!(
        statuses[..statuses.len() - 1]
            .iter()
            .all(|s| *s == RunStatus::Failed),
        "{statuses:?}"
    );
}

/// Chunks committed so far by the job's steps (0 before the job tables exist).
pub(crate) fn committed_chunks(db: &Database) -> i64 {
    db.fetch_optional::<(Option<i64>,)>(
        &batch_step_execution::table.select(sum(batch_step_execution::chunk_count)),
    )
    .ok()
    .flatten()
    .and_then(|(n,)| n)
    .unwrap_or(0)
}

/// PostgreSQL: `pg_terminate_backend` of the job's connections; the rerun completes exactly once.
pub(crate) fn killed_connections_postgres() {
    killed_connections(Dialect::Postgres, false);
}

/// PostgreSQL, async runner.
pub(crate) fn killed_connections_postgres_async() {
    killed_connections(Dialect::Postgres, true);
}

/// MariaDB: `KILL` of the job's connections; the rerun completes exactly once.
pub(crate) fn killed_connections_mysql() {
    killed_connections(Dialect::MySql, false);
}

/// MariaDB, async runner.
pub(crate) fn killed_connections_mysql_async() {
    killed_connections(Dialect::MySql, true);
}

/// The example job as a child process, SIGKILLed midway, then run again: every row exactly once, and the job
/// repository shows the abandoned run and its unfinished steps as failed and the rerun as completed.
pub(crate) fn killed_process_resumes() {
    for use_async in [false, true] {
        let t = db::open(Dialect::Sqlite, "process", PoolConfig::default());
        reset(&t.db, ROWS);
        let url = format!("sqlite://{}", t.target.options.path.as_deref().unwrap());
        let mut args = vec![url.clone(), "4".into(), "20".into()];
        if use_async {
            args.push("--async".into());
        }
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_essay-job"))
            .args(&args)
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while committed_chunks(&t.db) < 6 {
            assert!(
                std::time::Instant::now() < deadline,
                "the job made no progress"
            );
            assert!(
                child.try_wait().unwrap().is_none(),
                "the job ended before it could be killed"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        let written: (i64,) =
            t.db.fetch_one(&benchmark_target::table.select(count_star()))
                .unwrap();
        assert!((written.0 as usize) < ROWS, "killed before the end");
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_essay-job"))
            .args(&args[..1])
            .arg("4")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(String::from_utf8_lossy(&out.stdout).contains("(resumed)"));
        assert_target(&t.db, &expected(1..=ROWS));
        assert_eq!(executions(&t.db), [RunStatus::Failed, RunStatus::Completed]);
        // The killed run's unfinished steps are marked with it, not left STARTED for ever.
        let steps = step_statuses(&t.db);
        assert!(
            steps.iter().all(|(s, _)| *s != RunStatus::Started),
            "use_async {use_async}: no step left STARTED: {steps:?}"
        );
        assert!(
            steps.iter().any(|(s, e)| *s == RunStatus::Failed
                && e.as_deref().is_some_and(|e| e.starts_with("abandoned"))),
            "use_async {use_async}: the killed run's unfinished steps marked abandoned: {steps:?}"
        );
    }
}

/// A deadlock or serialization failure in the transaction that starts a run (on a Galera cluster: a
/// certification failure at COMMIT) runs that transaction again, on both runners: here a trigger on
/// PostgreSQL fails the first insert of each run's execution row with SQLSTATE 40001, once per run.
pub(crate) fn start_transaction_is_retried_postgres() {
    let t = db::open(Dialect::Postgres, "startretry", PoolConfig::default());
    let (rt, adb) = async_twin(&t, PoolConfig::default());
    for use_async in [false, true] {
        let db = &t.db;
        reset(db, 1_000);
        tandem_batch::blocking::prepare(db).unwrap();
        for sql in [
            "DROP SEQUENCE IF EXISTS start_failures",
            "CREATE SEQUENCE start_failures",
            "CREATE OR REPLACE FUNCTION fail_first_start() RETURNS trigger AS $$ BEGIN \
             IF nextval('start_failures') = 1 THEN \
             RAISE EXCEPTION 'a certification failure, as a Galera node would report it' USING ERRCODE = '40001'; \
             END IF; RETURN NEW; END $$ LANGUAGE plpgsql",
            "DROP TRIGGER IF EXISTS fail_first_start ON batch_job_execution",
            "CREATE TRIGGER fail_first_start BEFORE INSERT ON batch_job_execution \
             FOR EACH ROW EXECUTE FUNCTION fail_first_start()",
        ] {
            db.execute(&raw(sql, vec![])).unwrap();
        }
        let job = essay::job(4);
        let report = if use_async {
            rt.block_on(tandem_batch::asynchronous::run(&adb, &job))
        } else {
            tandem_batch::blocking::run(db, &job)
        }
        .unwrap_or_else(|e| panic!("async: {use_async}: {e}"));
        assert_eq!(report.written, 1_000, "async: {use_async}");
        assert_target(db, &expected(1..=1_000));
        let failures: Vec<(i64,)> = db
            .fetch_all(&raw("SELECT last_value FROM start_failures", vec![]))
            .unwrap();
        assert_eq!(
            failures,
            [(2,)],
            "async: {use_async}: one failed attempt, one that went through"
        );
    }
}

/// A run's start waiting on a lock another session holds (here the whole job repository table, locked by a
/// transaction left open) fails with `LockTimeout` after the lease, on each attempt, instead of waiting as
/// long as the lock is held; once the lock is gone the job runs, with nothing left behind by the attempts.
pub(crate) fn start_lock_waits_are_bounded_postgres() {
    let t = db::open(Dialect::Postgres, "startbound", PoolConfig::default());
    let (rt, adb) = async_twin(&t, PoolConfig::default());
    let lease = Duration::from_secs(1);
    for use_async in [false, true] {
        let db = &t.db;
        reset(db, 1_000);
        tandem_batch::blocking::prepare(db).unwrap();
        let holder = db.begin(tandem_core::TxOptions::default()).unwrap();
        holder
            .execute(&raw(
                "LOCK TABLE batch_job_execution IN ACCESS EXCLUSIVE MODE",
                vec![],
            ))
            .unwrap();
        let job = essay::job(2).lock_lease(lease).write_attempts(2);
        let started = std::time::Instant::now();
        let (done, finished) = std::sync::mpsc::channel();
        std::thread::scope(|s| {
            s.spawn(|| {
                let _ = done.send(run_job(use_async, (&rt, &adb), db, &job));
            });
            let result = finished.recv_timeout(Duration::from_secs(30));
            let took = started.elapsed();
            // Released whatever happened, so that a run still waiting ends.
            holder.rollback().unwrap();
            let err = match result {
                Ok(Err(e)) => e,
                Ok(Ok(report)) => panic!("async {use_async}: ran under the lock: {report:?}"),
                Err(_) => panic!("async {use_async}: still waiting on the lock after 30 s"),
            };
            assert!(
                matches!(&err, JobError::Database(tandem_core::Error::Database(d))
                    if d.kind == tandem_core::DbErrorKind::LockTimeout),
                "async {use_async}: {err}"
            );
            assert!(
                took >= lease && took < Duration::from_secs(10),
                "async {use_async}: failed after {took:?}; two attempts of a {lease:?} bound"
            );
        });
        assert!(
            executions(db).is_empty(),
            "async {use_async}: no run row left"
        );
        let report = run_job(use_async, (&rt, &adb), db, &job)
            .unwrap_or_else(|e| panic!("async {use_async}: {e}"));
        assert_eq!(report.written, 1_000, "async {use_async}");
        assert_target(db, &expected(1..=1_000));
    }
}
