//! Whole runs: the essay's job on both runners and every engine, empty sources and key gaps, processors that
//! skip, fail or panic.

use super::*;

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
pub(crate) fn essay_job_sqlite() {
    runners(Dialect::Sqlite);
}

/// PostgreSQL: both runners, parallelism 1, 4 and 8.
pub(crate) fn essay_job_postgres() {
    runners(Dialect::Postgres);
}

/// MariaDB: both runners, parallelism 1, 4 and 8.
pub(crate) fn essay_job_mysql() {
    runners(Dialect::MySql);
}

/// A processor that panics fails its job with the partition and the message (not a count mismatch), on
/// both runners; the run is recorded as failed and a rerun resumes after the committed chunks.
pub(crate) fn panicking_processor() {
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
        // Resumed with another parallelism: the run keeps its one partition (the checkpoint is its), and
        // the report says what was asked.
        let report = run(&job(armed).parallelism(3)).unwrap();
        assert!(report.resumed);
        assert_eq!(
            (report.parallelism_asked, report.partitions.len()),
            (3, 1),
            "use_async {use_async}: the partitions carried over, the parallelism asked for in the report"
        );
        assert_target(&t.db, &expected(1..=2_000));
        assert_eq!(executions(&t.db), [RunStatus::Failed, RunStatus::Completed]);
    }
}

/// An empty source completes with nothing to do; keys with gaps are all read once.
pub(crate) fn empty_source_and_gaps() {
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
pub(crate) fn processor_errors_and_skips() {
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
