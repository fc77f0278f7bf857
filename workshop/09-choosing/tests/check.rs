//! Stage 9's specification. `just check 09` runs it on your `src/exercise.rs`: the pieces of your benchmark
//! on their own (medians, verification, the table), then every side measuring both workloads for real on
//! SQLite, and on PostgreSQL and MariaDB when they can be reached. The whole benchmark is the program
//! `bench` (`cargo run --release -p workshop-09-choosing --bin bench -- --quick`).

use std::time::Duration;

use bench::workloads::{Cell, Mismatch, Side, Workload, reset, resets, slow_untimed, written};
use bench::{
    measure, median, ops_per_sec, seed_async, seed_blocking, service, spread, table, verify,
};
use tables::Dialect;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// The median is the middle sample, or the mean of the two middle ones (rounded down to the nanosecond);
/// nothing for no samples.
fn the_median_is_the_middle() {
    assert_eq!(median(&[]), Duration::ZERO);
    assert_eq!(median(&[ms(7)]), ms(7));
    assert_eq!(median(&[ms(9), ms(1), ms(5)]), ms(5), "unsorted samples");
    assert_eq!(
        median(&[ms(4), ms(1), ms(100), ms(2)]),
        ms(3),
        "an even count"
    );
    assert_eq!(
        median(&[ms(10), ms(10), ms(10), ms(10_000)]),
        ms(10),
        "one slow outlier does not move it"
    );
    assert_eq!(
        median(&[
            Duration::from_nanos(8),
            Duration::from_nanos(1),
            Duration::from_nanos(4)
        ]),
        Duration::from_nanos(4),
        "an odd count: the middle one itself, not a mean"
    );
    for (pair, mean) in [([2, 1], 1), ([1, 4], 2), ([0, 1], 0), ([7, 8], 7)] {
        assert_eq!(
            median(&pair.map(Duration::from_nanos)),
            Duration::from_nanos(mean),
            "an even count, {pair:?} ns: the mean of the two middle ones, {}.5 ns, rounded down",
            mean
        );
    }
}

/// The spread is (slowest − fastest) ÷ median: how far to trust the median; zero when there is no median to
/// divide by.
fn the_spread_says_how_far_to_trust_the_median() {
    assert_eq!(spread(&[]), 0.0);
    assert_eq!(spread(&[ms(7)]), 0.0, "one sample has no spread");
    assert!((spread(&[ms(10), ms(10), ms(10)])).abs() < 1e-12);
    let s = spread(&[ms(12), ms(8), ms(10)]);
    assert!((s - 0.4).abs() < 1e-9, "(12 - 8) / 10 = 0.4, got {s}");
    let s = spread(&[ms(10), ms(10), ms(10), ms(30)]);
    assert!((s - 2.0).abs() < 1e-9, "(30 - 10) / 10 = 2, got {s}");
    let s = spread(&[Duration::ZERO, Duration::ZERO, ms(5)]);
    assert_eq!(
        s, 0.0,
        "a median of zero: the spread is zero (not infinity or NaN), got {s}"
    );
}

/// Verification catches what the essay's harness never checked: a missing row, a duplicated one, a wrong
/// value — for the seed (values `1..=n`) and for the job (each doubled).
fn verification_catches_what_the_essay_missed() {
    let seed: Vec<(String, i64)> = (1..=100).map(|i| (format!("item-{i}"), i)).collect();
    let w = Workload::Seed { rows: 100 };
    assert_eq!(verify(w, &seed), Ok(()));
    assert_eq!(
        verify(w, &seed[1..]),
        Err(Mismatch::Count {
            expected: 100,
            found: 99
        })
    );
    let mut dup = seed.clone();
    dup[5].0 = dup[6].0.clone();
    assert_eq!(
        verify(w, &dup),
        Err(Mismatch::Duplicates {
            distinct: 99,
            rows: 100
        })
    );
    // Wrong in two ways at once, the first check that fails names it: a row written twice in place of
    // another (its name twice, the sum off) is `Duplicates`; one row too many, a copy, is `Count`.
    let mut twice = seed.clone();
    twice[5] = twice[6].clone();
    assert_eq!(
        verify(w, &twice),
        Err(Mismatch::Duplicates {
            distinct: 99,
            rows: 100
        }),
        "count, then names, then the sum: the first that fails is returned"
    );
    let mut extra = seed.clone();
    extra.push(seed[0].clone());
    assert_eq!(
        verify(w, &extra),
        Err(Mismatch::Count {
            expected: 100,
            found: 101
        }),
        "count, then names, then the sum: the first that fails is returned"
    );
    let mut wrong = seed.clone();
    wrong[0].1 = 2;
    assert_eq!(
        verify(w, &wrong),
        Err(Mismatch::Sum {
            expected: 5_050,
            found: 5_051
        })
    );
    let job: Vec<(String, i64)> = (1..=100).map(|i| (format!("ITEM-{i}"), 2 * i)).collect();
    let e2e = Workload::EndToEnd {
        rows: 100,
        partitions: 4,
    };
    assert_eq!(verify(e2e, &job), Ok(()));
    assert!(
        matches!(verify(e2e, &seed), Err(Mismatch::Sum { .. })),
        "the job doubles every value"
    );
}

/// The table puts your figures beside tandem's and the essay's, with the ratios: blocking ÷ async on each
/// side, yours ÷ tandem's, JDBC ÷ R2DBC.
fn the_table_sets_your_figures_beside_the_essay() {
    let cell = |side, d| Cell {
        engine: Dialect::Sqlite,
        side,
        workload: Workload::Seed { rows: 1_000 },
        samples: vec![ms(d), ms(d), ms(1_000)],
    };
    let cells = [
        cell(Side::MineBlocking, 10),
        cell(Side::MineAsync, 20),
        cell(Side::TandemBlocking, 5),
        cell(Side::TandemAsync, 8),
    ];
    assert!(
        (ops_per_sec(&cells[0]) - 100.0).abs() < 1e-9,
        "one op per median"
    );
    let text = table(&cells);
    let line = text
        .lines()
        .find(|l| l.contains("seed 1000"))
        .unwrap_or_else(|| panic!("a line for the SQLite seed of 1,000 rows:\n{text}"));
    for expected in [
        "100.000", "50.000", "2.00", "200.000", "125.000", "1.60", "0.50", "600.650", "177.344",
        "3.39",
    ] {
        assert!(
            line.split_whitespace().any(|w| w == expected),
            "{expected} in the line: {line}\n(the whole table:\n{text})"
        );
    }
}

/// The same engine, as tandem names it.
fn tandem_dialect(d: Dialect) -> tandem_sql::Dialect {
    d.to_string().parse().expect("tandem knows every engine")
}

/// Your seed on both your executors writes every row once.
fn your_seed_writes_every_row() {
    for d in Dialect::ALL {
        let Some(target) = workshop_support::db::target_or_skip(tandem_dialect(d), "w9seed") else {
            continue;
        };
        let url = target.url();
        let w = Workload::Seed { rows: 2_500 };
        reset(&url, Side::MineBlocking, w).unwrap();
        let db = blocking::Database::open(&url, 2).unwrap();
        seed_blocking(&db, 2_500).unwrap_or_else(|e| panic!("{d}: {e}"));
        assert_eq!(
            verify(w, &written(&url, w).unwrap()),
            Ok(()),
            "{d}, blocking"
        );
        reset(&url, Side::MineAsync, w).unwrap();
        bench::workloads::runtime().unwrap().block_on(async {
            let db = asynchronous::Database::open(&url, 2).await.unwrap();
            seed_async(&db, 2_500)
                .await
                .unwrap_or_else(|e| panic!("{d}: {e}"));
        });
        assert_eq!(verify(w, &written(&url, w).unwrap()), Ok(()), "{d}, async");
    }
}

/// The seed commits each chunk of 1,000 rows in a transaction of its own, on both your executors, as the
/// chapter's seed does: with the insert of row 1,500 made to fail (a trigger on SQLite), the seed fails and
/// leaves exactly the first chunk. A seed run as one transaction leaves nothing — and is another workload,
/// one that a comparison with tandem's seed would not be fair to.
fn each_chunk_of_the_seed_commits_on_its_own() {
    use tandem::blocking::Executor as _;
    let target = workshop_support::db::target_or_skip(tandem_sql::Dialect::Sqlite, "w9chunks")
        .expect("SQLite is always there");
    let url = target.url();
    let w = Workload::Seed { rows: 2_500 };
    for side in [Side::MineBlocking, Side::MineAsync] {
        reset(&url, side, w).unwrap();
        tandem::blocking::Database::connect(&url)
            .unwrap()
            .execute(&tandem::sql::raw(
                "CREATE TRIGGER planted_failure BEFORE INSERT ON benchmark_source \
                 WHEN NEW.value = 1500 BEGIN SELECT RAISE(ABORT, 'a failure planted at row 1,500'); END",
                vec![],
            ))
            .unwrap();
        let seeded = match side {
            Side::MineBlocking => {
                let db = blocking::Database::open(&url, 2).unwrap();
                seed_blocking(&db, 2_500).map_err(|e| e.to_string())
            }
            _ => bench::workloads::runtime().unwrap().block_on(async {
                let db = asynchronous::Database::open(&url, 2).await.unwrap();
                seed_async(&db, 2_500).await.map_err(|e| e.to_string())
            }),
        };
        assert!(
            seeded.is_err(),
            "{side}: the seed returned Ok though the insert of row 1,500 failed: a failed chunk is the \
             seed's error"
        );
        let mut values: Vec<i64> = written(&url, w).unwrap().iter().map(|r| r.1).collect();
        values.sort_unstable();
        assert!(
            values.iter().copied().eq(1..=1_000),
            "{side}: after the second chunk failed, the table holds {} rows (values {:?} … {:?}), not the \
             1,000 of the first chunk: commit each chunk in a transaction of its own (none left means the \
             whole seed ran as one transaction)",
            values.len(),
            values.first(),
            values.last()
        );
    }
}

/// Every side measures both workloads for real: the requested number of samples, every operation
/// verified.
fn every_side_measures_both_workloads() {
    for d in Dialect::ALL {
        let Some(target) = workshop_support::db::target_or_skip(tandem_dialect(d), "w9measure")
        else {
            continue;
        };
        let url = target.url();
        for w in [
            Workload::Seed { rows: 1_000 },
            Workload::EndToEnd {
                rows: 1_000,
                partitions: 2,
            },
        ] {
            for side in Side::ALL {
                let cell = measure(&url, side, w, 2).unwrap_or_else(|e| panic!("{d}: {e}"));
                assert_eq!(cell.samples.len(), 2, "{d} {side} {w:?}: two samples");
                assert_eq!((cell.engine, cell.side, cell.workload), (d, side, w));
                assert!(ops_per_sec(&cell) > 0.0);
            }
        }
    }
}

/// `measure` verifies what it times: on a side whose every operation leaves a wrong result
/// (`Side::Sabotaged`: the seed writes a row twice, the job loses one), it fails, naming the side — never a
/// number.
fn measure_refuses_a_wrong_result() {
    let target = workshop_support::db::target_or_skip(tandem_sql::Dialect::Sqlite, "w9wrong")
        .expect("SQLite is always there");
    let url = target.url();
    for w in [
        Workload::Seed { rows: 200 },
        Workload::EndToEnd {
            rows: 200,
            partitions: 1,
        },
    ] {
        match measure(&url, Side::Sabotaged, w, 2) {
            Err(e) => assert!(
                e.contains("sabotaged"),
                "{w:?}: the failure names the side (\"sabotaged\"): {e}"
            ),
            Ok(cell) => panic!(
                "{w:?}: measure timed a side whose every operation left a wrong result, and gave {:.1} \
                 ops/s: verify each operation (`written`, then `verify`) before keeping its time",
                ops_per_sec(&cell)
            ),
        }
    }
}

/// One warm-up, then the iterations, each on a clean slate: `reset` runs once per operation, and the
/// warm-up's time is not among the samples.
fn measure_warms_up_on_a_clean_slate_each_time() {
    let target = workshop_support::db::target_or_skip(tandem_sql::Dialect::Sqlite, "w9warm")
        .expect("SQLite is always there");
    let url = target.url();
    for side in [Side::MineBlocking, Side::MineAsync] {
        let before = resets(&url);
        let cell = measure(&url, side, Workload::Seed { rows: 200 }, 3)
            .unwrap_or_else(|e| panic!("{side}: {e}"));
        assert_eq!(
            resets(&url) - before,
            4,
            "{side}: one warm-up and three timed operations, each after its own `reset`"
        );
        assert_eq!(
            cell.samples.len(),
            3,
            "{side}: the warm-up's time is not kept"
        );
    }
}

/// The clock runs for the operation only: not while `reset` cleans the slate, not while `written` reads
/// back what the operation left. With every reset made to take 500 ms and every read-back 300 ms, your
/// sides' samples of a 200-row seed on SQLite (a few milliseconds of work) stay under 300 ms; one that does
/// not says which of the two its clock ran through.
fn the_clock_runs_for_the_operation_only() {
    const RESET: Duration = Duration::from_millis(500);
    const READ: Duration = Duration::from_millis(300);
    let target = workshop_support::db::target_or_skip(tandem_sql::Dialect::Sqlite, "w9untimed")
        .expect("SQLite is always there");
    let url = target.url();
    slow_untimed(&url, RESET, READ);
    for side in [Side::MineBlocking, Side::MineAsync] {
        let cell = measure(&url, side, Workload::Seed { rows: 200 }, 2)
            .unwrap_or_else(|e| panic!("{side}: {e}"));
        for sample in &cell.samples {
            let through = match *sample {
                s if s >= RESET + READ => "the reset and the read-back",
                s if s >= RESET => "the reset",
                s if s >= READ => "the read-back (`written`, for `verify`)",
                _ => continue,
            };
            panic!(
                "{side}: a seed of 200 rows took {sample:?} with a `reset` that takes {RESET:?} and a \
                 `written` that takes {READ:?}: the clock ran through {through}. Start it after the reset \
                 (and after opening the database) and read it as soon as the operation returns, before \
                 reading back what it wrote"
            );
        }
    }
}

/// Both of your sides run the job with the partitions the cell names — no more, no fewer — so that the two
/// are compared on the same work: the job's step rows (one per partition) say how many its last run had.
fn each_side_runs_the_partitions_it_is_given() {
    use tandem::blocking::Executor as _;
    let target = workshop_support::db::target_or_skip(tandem_sql::Dialect::Sqlite, "w9parts")
        .expect("SQLite is always there");
    let url = target.url();
    for side in [Side::MineBlocking, Side::MineAsync] {
        for partitions in [1, 3] {
            let w = Workload::EndToEnd {
                rows: 300,
                partitions,
            };
            measure(&url, side, w, 1).unwrap_or_else(|e| panic!("{side} {w:?}: {e}"));
            let db = tandem::blocking::Database::connect(&url).unwrap();
            let steps: Vec<(i64,)> = db
                .fetch_all(&tandem::sql::raw(
                    "SELECT count(*) FROM batch_step_execution",
                    vec![],
                ))
                .unwrap();
            assert_eq!(
                steps[0].0, partitions as i64,
                "{side}, {w:?}: the job's last run had this many partitions (its step rows): run the job \
                 with the cell's partitions, on both sides alike"
            );
        }
    }
}

/// The clock starts once the database is open: with every new connection to the server made to take
/// 400 ms (a proxy in front of it), your sides' samples of a small seed stay well under 400 ms (one over it
/// is taken again once: a stall of the server may slow one sample, a clock started early slows them all). A sample
/// that counts opening the pool measures the network's handshake, not the executor.
fn the_clock_starts_after_the_database_opens() {
    const SLOW: Duration = Duration::from_millis(400);
    for d in [Dialect::Postgres, Dialect::MySql] {
        let Some(target) = workshop_support::db::target_or_skip(tandem_dialect(d), "w9clock")
        else {
            continue;
        };
        let upstream = target.options.target();
        let proxy = workshop_support::proxy::start(&upstream, |_| {
            std::thread::sleep(SLOW);
            true
        });
        let url = target
            .url()
            .replacen(&upstream, &format!("127.0.0.1:{}", proxy.port), 1);
        for side in [Side::MineBlocking, Side::MineAsync] {
            let sample = || {
                let cell = measure(&url, side, Workload::Seed { rows: 200 }, 1)
                    .unwrap_or_else(|e| panic!("{d} {side}: {e}"));
                let first = cell.samples.first().copied();
                first.unwrap_or_else(|| panic!("{d} {side}: one iteration measured gave no sample"))
            };
            // A slow sample is taken again: a clock started before the open puts the slow connect in
            // every sample, while a stall of the server or the machine slows one.
            let mut samples = vec![sample()];
            if samples[0] >= SLOW {
                samples.push(sample());
            }
            let fastest = samples.iter().min().copied().unwrap_or(SLOW);
            assert!(
                fastest < SLOW,
                "{d} {side}: a seed of 200 rows took {samples:?} with connections that take {SLOW:?} to \
                 open: start the clock after opening the database, not before"
            );
        }
    }
}

/// Chapter 9's service on your two executors — your `world_row_blocking` behind a thread per connection,
/// your `world_row_async` behind a tokio task per connection — under eight connections at once of `/db`
/// and `/queries?q=20`: every answer is checked against the table as seeded (each id in range, each number
/// the one stored), so a pool that hands one connection to two requests, a row read from the wrong
/// connection or a lost parameter shows as a wrong answer. Then the same load on a server that answers one
/// row in ten wrongly (tandem's executor with a fault planted), which the load must catch.
fn the_service_answers_right_on_your_executors() {
    const ROWS: i64 = 1_000;
    for d in Dialect::ALL {
        let Some(target) = workshop_support::db::target_or_skip(tandem_dialect(d), "w9service")
        else {
            continue;
        };
        let url = target.url();
        service::seed_world(&url, ROWS).unwrap_or_else(|e| panic!("{d}: seeding world: {e}"));
        for side in [Side::MineBlocking, Side::MineAsync] {
            let server =
                service::serve(&url, side, ROWS).unwrap_or_else(|e| panic!("{d} {side}: {e}"));
            for path in ["/db", "/queries?q=20"] {
                let load = service::drive(server.addr, path, 8, ms(300), ROWS);
                assert!(
                    load.errors == 0,
                    "{d} {side} {path}: {} right answers, {} wrong or failed; the first: {:#?}",
                    load.ok,
                    load.errors,
                    load.problems
                );
                assert!(load.ok > 0, "{d} {side} {path}: no answer in 300 ms");
            }
        }
        if d == Dialect::Sqlite {
            let server = service::serve(&url, Side::Sabotaged, ROWS).unwrap();
            let load = service::drive(server.addr, "/queries?q=20", 2, ms(200), ROWS);
            assert!(
                load.errors > 0 && load.problems.iter().any(|p| p.contains("randomNumber")),
                "a server answering one row in ten wrongly: {} answers taken as right, {} as wrong ({:?}): \
                 the load must check every answer",
                load.ok,
                load.errors,
                load.problems
            );
        }
    }
}

workshop_harness::checks!(
    the_spread_says_how_far_to_trust_the_median,
    measure_refuses_a_wrong_result,
    measure_warms_up_on_a_clean_slate_each_time,
    each_side_runs_the_partitions_it_is_given,
    the_clock_runs_for_the_operation_only,
    the_clock_starts_after_the_database_opens,
    the_median_is_the_middle,
    verification_catches_what_the_essay_missed,
    the_table_sets_your_figures_beside_the_essay,
    your_seed_writes_every_row,
    each_chunk_of_the_seed_commits_on_its_own,
    every_side_measures_both_workloads,
    the_service_answers_right_on_your_executors,
);
