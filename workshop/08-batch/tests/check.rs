//! Stage 8's specification: the processor and the partitions on their own, then the whole job with them on
//! SQLite, and on PostgreSQL and MariaDB when they can be reached — including a run that dies midway.

use tandem_blocking::Executor as _;
use workshop_08_batch as stage;

use proptest::prelude::*;
use stage::{process, split};
use tandem_batch::essay::{Source, Target, benchmark_source, benchmark_target};
use tandem_batch::{BatchJob, ProcessError, Processed};
use tandem_blocking::{BatchOptions, Database, PoolConfig};
use tandem_sql::prelude::*;
use workshop_support::{ENGINES, db};

fn source(name: &str, value: i32) -> Source {
    Source {
        id: 1,
        name: name.into(),
        value,
    }
}

/// The processor's three cases.
fn processor_rules() {
    match process(source("item-7", 21)).unwrap() {
        Processed::Write(t) => assert_eq!(
            (t.source_name.as_str(), t.transformed_value),
            ("ITEM-7", 42)
        ),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        process(source("neg", -1)).unwrap(),
        Processed::Skip
    ));
    let err = process(source("big", i32::MAX / 2 + 1)).unwrap_err();
    assert!(
        err.to_string().contains(&(i32::MAX / 2 + 1).to_string()),
        "{err}"
    );
}

proptest! {
    /// Partitions cover every key once, in order, with sizes that differ by at most one.
    fn partitions_cover_the_range(lo in -1_000i64..1_000, len in 0i64..5_000, n in 0usize..40) {
        let hi = lo + len - 1;
        let parts = split(lo, hi, n);
        if len == 0 {
            prop_assert!(parts.is_empty());
            return Ok(());
        }
        prop_assert_eq!(parts.len() as i64, (n.max(1) as i64).min(len));
        prop_assert_eq!(parts[0].0, lo);
        prop_assert_eq!(parts[parts.len() - 1].1, hi);
        for w in parts.windows(2) {
            prop_assert_eq!(w[0].1 + 1, w[1].0, "contiguous");
        }
        let sizes: Vec<i64> = parts.iter().map(|(a, b)| b - a + 1).collect();
        prop_assert!(sizes.iter().max().unwrap() - sizes.iter().min().unwrap() <= 1);
    }
}

/// The widest range does not overflow.
fn the_widest_range() {
    let parts = split(i64::MIN, i64::MAX, 4);
    assert_eq!(parts.len(), 4);
    assert_eq!((parts[0].0, parts[3].1), (i64::MIN, i64::MAX));
}

/// 2,000 source rows, every tenth negative.
fn seed(db: &Database) -> Vec<Source> {
    db.create_table(&benchmark_source::table.create_table())
        .unwrap();
    db.create_table(&benchmark_target::table.create_table())
        .unwrap();
    let rows: Vec<Source> = (1..=2_000)
        .map(|i| Source {
            id: 0,
            name: format!("item-{i}"),
            value: if i % 10 == 0 { -i } else { i },
        })
        .collect();
    db.repository::<Source>()
        .batch_insert(&rows, &BatchOptions::default())
        .unwrap();
    rows
}

fn check_target(db: &Database, rows: &[Source]) {
    let written: Vec<Target> = db
        .repository::<Target>()
        .find_all(tandem_blocking::Find::all().order_by(benchmark_target::transformed_value.asc()))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let expected: Vec<(String, i32)> = rows
        .iter()
        .filter(|s| s.value >= 0)
        .map(|s| (s.name.to_uppercase(), s.value * 2))
        .collect();
    let got: Vec<(String, i32)> = written
        .into_iter()
        .map(|t| (t.source_name, t.transformed_value))
        .collect();
    assert_eq!(
        got,
        expected,
        "{}: every row written exactly once",
        db.dialect()
    );
}

/// The job with your processor and your partitions (via the job's parallelism: the runner splits the same
/// way) writes every non-negative row once, skips the rest, and survives a processor that dies midway: the
/// rerun resumes after the last committed chunk.
fn the_job_runs_and_restarts() {
    for dialect in ENGINES {
        let Some(target) = db::target(dialect, "w8job") else {
            continue;
        };
        let pool = PoolConfig {
            max_size: 8,
            ..PoolConfig::default()
        };
        let db = Database::open(target.options.clone(), pool).unwrap();
        let rows = seed(&db);
        // Your split must agree with the runner's own partitions for this job to be the one you reason about.
        assert_eq!(split(1, 2_000, 4), tandem_batch::partitions(1, 2_000, 4));

        // First run: the processor fails on item-1234.
        let failing = BatchJob::new("w8", |s: Source| {
            if s.name == "item-1234" {
                return Err(ProcessError::from("the machine died"));
            }
            process(s)
        })
        .sizes(100, 100)
        .parallelism(4);
        assert!(
            tandem_batch::blocking::run(&db, &failing).is_err(),
            "{dialect}"
        );
        let partial = db.repository::<Target>().count().unwrap();
        assert!(
            partial > 0 && partial < 1_800,
            "{dialect}: some chunks committed ({partial})"
        );

        // Rerun with the same name and parameters: it resumes and finishes.
        let job = BatchJob::new("w8", process).sizes(100, 100).parallelism(4);
        let report = tandem_batch::blocking::run(&db, &job).unwrap();
        assert!(report.resumed, "{dialect}: the rerun resumed");
        assert_eq!(
            (report.read, report.written, report.skipped),
            (2_000, 1_800, 200),
            "{dialect}"
        );
        check_target(&db, &rows);
    }
}

workshop_harness::checks!(
    processor_rules,
    partitions_cover_the_range,
    the_widest_range,
    the_job_runs_and_restarts,
);
