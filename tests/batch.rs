//! The batch job on SQLite, PostgreSQL and MariaDB with both runners: exact output at parallelism 1, 4 and 8,
//! restarts after a failing processor, a killed connection and a killed process, and bad input.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tandem_blocking::Executor as _;
use tandem_test_support::{db, harness};

use tandem_batch::essay::{self, Source, Target, benchmark_source, benchmark_target};
use tandem_batch::model::{JobExecution, RunStatus, batch_job_execution, batch_step_execution};
use tandem_batch::{BatchJob, JobError, ProcessError, Processed, SkipPolicy};
use tandem_blocking::{BatchOptions, Database, PoolConfig};
use tandem_sql::prelude::*;
use tandem_sql::{Dialect, raw};

const ROWS: usize = 10_000;

/// Fresh source (rows `1..=n`, ids `1..=n`), target and job tables.
fn reset(db: &Database, n: usize) {
    for t in [
        benchmark_target::table.drop_table(),
        benchmark_source::table.drop_table(),
    ] {
        db.execute(&t).unwrap();
    }
    db.execute(&batch_job_execution::table.drop_table())
        .unwrap();
    db.execute(&batch_step_execution::table.drop_table())
        .unwrap();
    db.execute(&raw("DROP TABLE IF EXISTS batch_job_lock", vec![]))
        .unwrap();
    db.create_table(&benchmark_source::table.create_table())
        .unwrap();
    db.create_table(&benchmark_target::table.create_table())
        .unwrap();
    if n > 0 {
        db.repository::<Source>()
            .batch_insert(&essay::seed_rows(n), &BatchOptions::default())
            .unwrap();
    }
}

/// The target holds exactly the transformed source rows, each once.
fn assert_target(db: &Database, expected: &[(String, i32)]) {
    let mut got: Vec<(String, i32)> = db
        .fetch_all(&benchmark_target::table.select((
            benchmark_target::source_name,
            benchmark_target::transformed_value,
        )))
        .unwrap();
    got.sort();
    let mut want = expected.to_vec();
    want.sort();
    assert_eq!(got.len(), want.len(), "target row count");
    assert_eq!(got, want);
}

fn expected(ids: impl Iterator<Item = usize>) -> Vec<(String, i32)> {
    ids.map(|i| (format!("ITEM-{i}"), 2 * i as i32)).collect()
}

/// A runtime and an async pool on the same database as `t`, for the async runner.
fn async_twin(
    t: &db::TestDb,
    config: PoolConfig,
) -> (tokio::runtime::Runtime, tandem_async::Database) {
    let rt = harness::runtime();
    let adb = rt
        .block_on(tandem_async::Database::open(
            t.target.options.clone(),
            config,
        ))
        .unwrap();
    (rt, adb)
}

fn executions(db: &Database) -> Vec<RunStatus> {
    db.fetch_all::<JobExecution>(
        &batch_job_execution::table
            .select_all()
            .order_by(batch_job_execution::id.asc()),
    )
    .unwrap()
    .into_iter()
    .map(|e| e.status)
    .collect()
}

fn runners(dialect: Dialect) {
    let t = db::open(
        dialect,
        "job",
        PoolConfig {
            max_size: 12,
            ..PoolConfig::default()
        },
    );
    let (rt, adb) = async_twin(
        &t,
        PoolConfig {
            max_size: 12,
            ..PoolConfig::default()
        },
    );
    for parallelism in [1, 4, 8] {
        reset(&t.db, ROWS);
        let report = tandem_batch::blocking::run(&t.db, &essay::job(parallelism)).unwrap();
        assert_eq!(
            (report.read, report.written, report.skipped),
            (ROWS as u64, ROWS as u64, 0)
        );
        assert_eq!(report.partitions.len(), parallelism);
        assert_eq!(
            report.chunks,
            report.partitions.iter().map(|p| p.chunks).sum::<u64>()
        );
        assert_target(&t.db, &expected(1..=ROWS));
        assert_eq!(executions(&t.db), [RunStatus::Completed]);
        assert!(matches!(
            tandem_batch::blocking::run(&t.db, &essay::job(parallelism)),
            Err(JobError::AlreadyCompleted { .. })
        ));

        reset(&t.db, ROWS);
        let report = rt
            .block_on(tandem_batch::asynchronous::run(
                &adb,
                &essay::job(parallelism),
            ))
            .unwrap();
        assert_eq!(
            (report.read, report.written, report.skipped),
            (ROWS as u64, ROWS as u64, 0)
        );
        assert_eq!(report.partitions.len(), parallelism);
        assert_target(&t.db, &expected(1..=ROWS));
    }
    drop(adb);
}

/// SQLite: both runners, parallelism 1, 4 and 8, exactly 10,000 right rows.
fn essay_job_sqlite() {
    runners(Dialect::Sqlite);
}

/// PostgreSQL: both runners, parallelism 1, 4 and 8.
fn essay_job_postgres() {
    runners(Dialect::Postgres);
}

/// MariaDB: both runners, parallelism 1, 4 and 8.
fn essay_job_mysql() {
    runners(Dialect::MySql);
}

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
fn restart_after_failure_sqlite() {
    restart_after_failure(Dialect::Sqlite);
}

/// The same on PostgreSQL.
fn restart_after_failure_postgres() {
    restart_after_failure(Dialect::Postgres);
}

/// The same on MariaDB.
fn restart_after_failure_mysql() {
    restart_after_failure(Dialect::MySql);
}

/// Kills every connection of the test database while the job runs (in its chunks' transactions), then reruns.
fn killed_connections(dialect: Dialect, use_async: bool) {
    let t = db::open(
        dialect,
        if use_async { "akill" } else { "kill" },
        PoolConfig::default(),
    );
    reset(&t.db, ROWS);
    let admin = t.admin().unwrap().clone();
    let mut job = essay::job(4).sizes(250, 250);
    job.chunk_delay = Some(Duration::from_millis(100));
    let (rt, adb) = async_twin(&t, PoolConfig::default());
    let killer = {
        let (admin, opts) = (admin.clone(), t.target.options.clone());
        std::thread::spawn(move || {
            // Kill once the run has committed chunks (not at a fixed time: on a loaded machine the run may
            // still be starting, and then there is nothing to resume).
            {
                let watcher = Database::open(opts.clone(), PoolConfig::default()).unwrap();
                let deadline = std::time::Instant::now() + Duration::from_secs(60);
                while committed_chunks(&watcher) < 2 {
                    assert!(
                        std::time::Instant::now() < deadline,
                        "the job made no progress"
                    );
                    std::thread::sleep(Duration::from_millis(10));
                }
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
    killer.join().unwrap();
    let err = first.expect_err("the job lost its connections");
    assert!(
        matches!(err, JobError::Database(ref e) if e.kind() == Some(tandem_core::DbErrorKind::ConnectionLost)),
        "{err}"
    );
    // One rerun on the same pool: once it has seen a connection die, the pool checks the idle connections
    // that were open before that, instead of handing out the dead ones one failure at a time.
    job.chunk_delay = None;
    let report = run(&job).unwrap();
    // (The test's own blocking pool lost its idle connections too, unknown to it: check on a fresh one.)
    let fresh = Database::open(t.target.options.clone(), PoolConfig::default()).unwrap();
    let db = &fresh;
    assert!(report.resumed);
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
fn committed_chunks(db: &Database) -> i64 {
    db.fetch_optional::<(Option<i64>,)>(
        &batch_step_execution::table.select(sum(batch_step_execution::chunk_count)),
    )
    .ok()
    .flatten()
    .and_then(|(n,)| n)
    .unwrap_or(0)
}

/// PostgreSQL: `pg_terminate_backend` of the job's connections; the rerun completes exactly once.
fn killed_connections_postgres() {
    killed_connections(Dialect::Postgres, false);
}

/// PostgreSQL, async runner.
fn killed_connections_postgres_async() {
    killed_connections(Dialect::Postgres, true);
}

/// MariaDB: `KILL` of the job's connections; the rerun completes exactly once.
fn killed_connections_mysql() {
    killed_connections(Dialect::MySql, false);
}

/// MariaDB, async runner.
fn killed_connections_mysql_async() {
    killed_connections(Dialect::MySql, true);
}

/// The example job as a child process, SIGKILLed midway, then run again: every row exactly once, and the job
/// repository shows the abandoned run as failed and the rerun as completed.
fn killed_process_resumes() {
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
    }
}

/// Two processes start the same job at once (one blocking, one async): exactly one runs it, the other is
/// refused with "already running" before it writes anything; every row is written once. The lock is a file
/// beside a SQLite database, an advisory lock on PostgreSQL, a named lock on MariaDB.
fn concurrent_processes(dialect: Dialect) {
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
fn concurrent_runs_in_process() {
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

/// A processor that panics fails its job with the partition and the message (not a count mismatch), on
/// both runners; the run is recorded as failed and a rerun resumes after the committed chunks.
fn panicking_processor() {
    let t = db::open(Dialect::Sqlite, "panics", PoolConfig::default());
    let (rt, adb) = async_twin(&t, PoolConfig::default());
    for use_async in [false, true] {
        reset(&t.db, 2_000);
        let armed = Arc::new(AtomicBool::new(true));
        let job = |armed: Arc<AtomicBool>| {
            BatchJob::new("panics", move |s: Source| {
                if s.id == 1_500 && armed.swap(false, Ordering::SeqCst) {
                    panic!("processor bug at {}", s.id);
                }
                essay::transform(s)
            })
            .sizes(100, 100)
        };
        let run = |job: &BatchJob<Source, Target>| {
            if use_async {
                rt.block_on(tandem_batch::asynchronous::run(&adb, job))
            } else {
                tandem_batch::blocking::run(&t.db, job)
            }
        };
        let err = run(&job(armed.clone())).unwrap_err();
        assert!(
            matches!(&err, JobError::Panicked { partition, message }
                if partition == "partition-0" && message == "processor bug at 1500"),
            "{err}"
        );
        let report = run(&job(armed)).unwrap();
        assert!(report.resumed);
        assert_target(&t.db, &expected(1..=2_000));
        assert_eq!(executions(&t.db), [RunStatus::Failed, RunStatus::Completed]);
    }
}

/// An empty source completes with nothing to do; keys with gaps are all read once.
fn empty_source_and_gaps() {
    let t = db::open(Dialect::Sqlite, "gaps", PoolConfig::default());
    reset(&t.db, 0);
    let r = tandem_batch::blocking::run(&t.db, &essay::job(4)).unwrap();
    assert_eq!((r.read, r.written, r.partitions.len()), (0, 0, 0));
    reset(&t.db, 3_000);
    t.db.execute(
        &benchmark_source::table
            .delete()
            .filter((benchmark_source::id % 3i64).eq(0i64)),
    )
    .unwrap();
    t.db.execute(
        &benchmark_source::table
            .delete()
            .filter(benchmark_source::id.between(1_000i64, 1_999i64)),
    )
    .unwrap();
    let r = tandem_batch::blocking::run(&t.db, &essay::job(8)).unwrap();
    let kept: Vec<usize> = (1..=3_000)
        .filter(|i| i % 3 != 0 && !(1_000..=1_999).contains(i))
        .collect();
    assert_eq!(r.read as usize, kept.len());
    assert_target(&t.db, &expected(kept.into_iter()));
}

/// A processor error fails the job naming the row's key; with a skip policy the row is skipped and counted.
fn processor_errors_and_skips() {
    let t = db::open(Dialect::Sqlite, "skips", PoolConfig::default());
    let bad = |s: Source| -> Result<Processed<Target>, ProcessError> {
        if s.id == 777 {
            Err(ProcessError::from("cannot transform"))
        } else {
            essay::transform(s)
        }
    };
    reset(&t.db, 2_000);
    let err = tandem_batch::blocking::run(&t.db, &BatchJob::new("bad", bad)).unwrap_err();
    assert!(matches!(err, JobError::Processor { key: 777, .. }));
    assert!(err.to_string().contains("777"));
    reset(&t.db, 2_000);
    let r = tandem_batch::blocking::run(
        &t.db,
        &BatchJob::new("bad", bad)
            .skip_policy(SkipPolicy::SkipUpTo(1))
            .parallelism(3),
    )
    .unwrap();
    assert_eq!((r.read, r.written, r.skipped), (2_000, 1_999, 1));
    assert_target(&t.db, &expected((1..=2_000).filter(|i| *i != 777)));
    let job: JobExecution =
        t.db.fetch_one(&batch_job_execution::table.select_all())
            .unwrap();
    assert_eq!(
        (job.status, job.read_count, job.write_count, job.skip_count),
        (RunStatus::Completed, 2_000, 1_999, 1)
    );
    // Skipping more than the policy allows fails the job.
    let two_bad = |s: Source| -> Result<Processed<Target>, ProcessError> {
        if s.id == 5 || s.id == 9 {
            Err(ProcessError::from("no"))
        } else {
            essay::transform(s)
        }
    };
    reset(&t.db, 100);
    assert!(matches!(
        tandem_batch::blocking::run(
            &t.db,
            &BatchJob::new("two", two_bad).skip_policy(SkipPolicy::SkipUpTo(1))
        ),
        Err(JobError::Processor { key: 9, .. })
    ));
    // Ignored duplicates are counted as skipped, so the counts still add up.
    reset(&t.db, 100);
    let dup = |s: Source| -> Result<Processed<Target>, ProcessError> {
        Ok(Processed::Write(Target {
            id: 0,
            source_name: format!("N{}", s.id % 10),
            transformed_value: s.value,
        }))
    };
    let r = tandem_batch::blocking::run(&t.db, &BatchJob::new("dups", dup).ignore_duplicates())
        .unwrap();
    assert_eq!((r.read, r.written, r.skipped), (100, 10, 90));
}

/// A deadlock or serialization failure in the transaction that starts a run (on a Galera cluster: a
/// certification failure at COMMIT) runs that transaction again, on both runners: here a trigger on
/// PostgreSQL fails the first insert of each run's execution row with SQLSTATE 40001, once per run.
fn start_transaction_is_retried_postgres() {
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
fn lease_across_nodes_mysql() {
    let t = db::open(Dialect::MySql, "lease", PoolConfig::default());
    let (rt, adb) = async_twin(&t, PoolConfig::default());
    let db = &t.db;
    let (this_node,): (String,) = db
        .fetch_one(&raw("SELECT CONCAT(@@hostname, ':', @@port)", vec![]))
        .unwrap();
    for use_async in [false, true] {
        let run = |job: &BatchJob<Source, Target>| {
            if use_async {
                rt.block_on(tandem_batch::asynchronous::run(&adb, job))
            } else {
                tandem_batch::blocking::run(db, job)
            }
        };
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
fn lease_lost_mysql() {
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
fn completed_is_not_hidden_by_a_later_failure() {
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

fn main() {
    harness::main(
        [
            vec![harness::Case::new("essay_job_sqlite", essay_job_sqlite)],
            vec![
                harness::Case::new("lease_across_nodes_mysql", lease_across_nodes_mysql)
                    .needs(&[Dialect::MySql]),
                harness::Case::new("lease_lost_mysql", lease_lost_mysql).needs(&[Dialect::MySql]),
                harness::Case::new(
                    "completed_is_not_hidden_by_a_later_failure",
                    completed_is_not_hidden_by_a_later_failure,
                ),
            ],
            vec![
                harness::Case::new(
                    "start_transaction_is_retried_postgres",
                    start_transaction_is_retried_postgres,
                )
                .needs(&[Dialect::Postgres]),
            ],
            vec![
                harness::Case::new("essay_job_postgres", essay_job_postgres)
                    .needs(&[Dialect::Postgres]),
            ],
            vec![harness::Case::new("essay_job_mysql", essay_job_mysql).needs(&[Dialect::MySql])],
            vec![harness::Case::new(
                "restart_after_failure_sqlite",
                restart_after_failure_sqlite,
            )],
            vec![
                harness::Case::new(
                    "restart_after_failure_postgres",
                    restart_after_failure_postgres,
                )
                .needs(&[Dialect::Postgres]),
            ],
            vec![
                harness::Case::new("restart_after_failure_mysql", restart_after_failure_mysql)
                    .needs(&[Dialect::MySql]),
            ],
            vec![
                harness::Case::new("killed_connections_postgres", killed_connections_postgres)
                    .needs(&[Dialect::Postgres]),
            ],
            vec![
                harness::Case::new(
                    "killed_connections_postgres_async",
                    killed_connections_postgres_async,
                )
                .needs(&[Dialect::Postgres]),
            ],
            vec![
                harness::Case::new("killed_connections_mysql", killed_connections_mysql)
                    .needs(&[Dialect::MySql]),
            ],
            vec![
                harness::Case::new(
                    "killed_connections_mysql_async",
                    killed_connections_mysql_async,
                )
                .needs(&[Dialect::MySql]),
            ],
            vec![harness::Case::new(
                "killed_process_resumes",
                killed_process_resumes,
            )],
            harness::engines("concurrent_processes", concurrent_processes),
            vec![harness::Case::new(
                "concurrent_runs_in_process",
                concurrent_runs_in_process,
            )],
            vec![harness::Case::new(
                "empty_source_and_gaps",
                empty_source_and_gaps,
            )],
            vec![harness::Case::new(
                "panicking_processor",
                panicking_processor,
            )],
            vec![harness::Case::new(
                "processor_errors_and_skips",
                processor_errors_and_skips,
            )],
        ]
        .into_iter()
        .flatten()
        .collect(),
    );
}
