//! The essay's published figures (bluetape4k-exposed's JMH runs, pool 10; see `shared/SEED-RESULTS.md` in
//! the project's planning material), and `results.md`, which puts ours beside them.
//!
//! Their conditions are not ours: unknown hardware, JDK and database versions, H2 where we run SQLite, and
//! a harness that never checked its writes. Ours: this machine, every op verified, one op = all rows.

use std::fmt::Write as _;

use crate::report::Results;

/// `seedBenchmark` ops/s at pool 10: (engine, data size, JDBC, R2DBC).
const SEED: [(&str, u64, f64, f64); 9] = [
    ("sqlite", 1_000, 600.650, 177.344),
    ("sqlite", 10_000, 58.248, 18.671),
    ("sqlite", 100_000, 5.921, 1.885),
    ("mysql", 1_000, 141.603, 5.047),
    ("mysql", 10_000, 13.419, 0.521),
    ("mysql", 100_000, 1.455, 0.050),
    ("postgres", 1_000, 138.105, 4.059),
    ("postgres", 10_000, 14.396, 0.418),
    ("postgres", 100_000, 1.393, 0.034),
];

/// `endToEndBatchJobBenchmark` ops/s at pool 10: (engine, data size, parallelism, JDBC, R2DBC).
const E2E: [(&str, u64, u32, f64, f64); 27] = [
    ("sqlite", 1_000, 1, 1867.5, 185.5),
    ("sqlite", 1_000, 4, 975.7, 84.7),
    ("sqlite", 1_000, 8, 816.5, 62.1),
    ("sqlite", 10_000, 1, 2112.7, 176.5),
    ("sqlite", 10_000, 4, 864.0, 43.3),
    ("sqlite", 10_000, 8, 654.3, 22.6),
    ("sqlite", 100_000, 1, 2033.8, 9.905),
    ("sqlite", 100_000, 4, 942.3, 2.936),
    ("sqlite", 100_000, 8, 639.2, 2.643),
    ("mysql", 1_000, 1, 33.457, 5.387),
    ("mysql", 1_000, 4, 30.578, 20.926),
    ("mysql", 1_000, 8, 23.575, 18.024),
    ("mysql", 10_000, 1, 4.339, 0.469),
    ("mysql", 10_000, 4, 7.910, 2.724),
    ("mysql", 10_000, 8, 6.512, 5.857),
    ("mysql", 100_000, 1, 0.550, 0.046),
    ("mysql", 100_000, 4, 1.281, 0.125),
    ("mysql", 100_000, 8, 1.596, 0.181),
    ("postgres", 1_000, 1, 38.641, 39.759),
    ("postgres", 1_000, 4, 55.259, 37.564),
    ("postgres", 1_000, 8, 46.617, 33.728),
    ("postgres", 10_000, 1, 5.056, 0.411),
    ("postgres", 10_000, 4, 10.379, 5.085),
    ("postgres", 10_000, 8, 10.480, 9.717),
    ("postgres", 100_000, 1, 0.480, 0.032),
    ("postgres", 100_000, 4, 0.939, 0.121),
    ("postgres", 100_000, 8, 0.972, 0.192),
];

/// Acquire/close ops/s with 8 threads: (engine, hold ms, default, high-throughput).
const POOL: [(&str, u64, f64, f64); 9] = [
    ("sqlite", 0, 101_184.0, 86_400.0),
    ("sqlite", 1, 6_911.0, 6_895.0),
    ("sqlite", 5, 1_430.0, 1_428.0),
    ("postgres", 0, 16_970.0, 16_780.0),
    ("postgres", 1, 3_981.0, 4_229.0),
    ("postgres", 5, 1_048.0, 1_052.0),
    ("mysql", 0, 8_385.0, 8_010.0),
    ("mysql", 1, 4_075.0, 3_899.0),
    ("mysql", 5, 913.0, 925.0),
];

/// Contention, 64 threads on H2: (hold ms, max size, default ops/s, acquired, failed, high-throughput
/// ops/s, acquired, failed).
#[allow(clippy::type_complexity)]
const CONTENTION: [(u64, u32, f64, u64, u64, f64, u64, u64); 4] = [
    (10, 4, 360.0, 1_885, 0, 38_342.0, 1_508, 150_669),
    (10, 16, 1_476.0, 6_173, 0, 1_477.0, 6_195, 0),
    (50, 4, 76.0, 796, 0, 37_763.0, 386, 150_891),
    (50, 16, 313.0, 1_676, 0, 310.0, 1_676, 0),
];

fn pool_detail(
    results: &Results,
    scenario: &str,
    db: &str,
    pool: u32,
    variant: &str,
    detail: &str,
) -> Option<f64> {
    crate::pool::find(results, scenario, db, pool, variant).and_then(|r| r.detail(detail))
}

fn pool_tables(results: &Results, md: &mut String) {
    use crate::Executor::{Async, Blocking};
    use crate::pool::{Preset, variant};
    if !results
        .records
        .iter()
        .any(|r| r.scenario.starts_with("pool"))
    {
        return;
    }
    md.push_str("\n## pool: acquire, `SELECT 1`, hold, release (ops/s)\n\nThe essay: 8 JMH threads, R2DBC pool, default / high-throughput. tandem: 8 workers, max 16, the bare driver pool (no bound on waiters: r2d2's own queue on the blocking side; on the async side, whose own pools have no queue, the gate with no limit on waiters) beside both presets, so the gate's cost shows in the same run. The hold models work done elsewhere while the connection is kept (another service's answer, arriving after exactly the hold): a thread sleeps it on both sides, so the async side's hold is not rounded up to tokio's millisecond timer tick; each cell's measured holds are in results.csv (`hold_p50_ms`).\n\n| engine | hold | essay default | essay high-throughput | blocking bare | blocking default | blocking high-throughput | async bare | async default | async high-throughput |\n|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n");
    for (db, hold, d, ht) in POOL {
        let rate = |e, p| {
            pool_detail(
                results,
                "pool",
                db,
                16,
                &variant(e, p, hold),
                "acquired_per_s",
            )
        };
        let cells = [
            rate(Blocking, Preset::Bare),
            rate(Blocking, Preset::Default),
            rate(Blocking, Preset::HighThroughput),
            rate(Async, Preset::Bare),
            rate(Async, Preset::Default),
            rate(Async, Preset::HighThroughput),
        ];
        if cells.iter().all(Option::is_none) {
            continue;
        }
        let essay_db = if db == "sqlite" {
            "SQLite (essay: H2)"
        } else {
            db
        };
        let cells: Vec<String> = cells
            .iter()
            .map(|c| c.map_or("–".into(), |v| format!("{v:.0}")))
            .collect();
        let _ = writeln!(
            md,
            "| {essay_db} | {hold} ms | {d:.0} | {ht:.0} | {} |",
            cells.join(" | ")
        );
    }
    md.push_str("\n## pool under contention: 64 workers (acquired/s · rejected/s)\n\nThe essay (H2 only): ops/s with acquired / failed counts; default = unbounded pending, 5 s timeout; high-throughput = 250 ms timeout, pending bounded at 4 × maxSize. tandem: default = pending bounded at 1,000, 30 s timeout; high-throughput = pending bounded at 4 × max, 3 s timeout; acquired and rejected per second, apart, as the essay advises; `p99` = 99th percentile wait of completed acquires.\n\n| engine | hold | max | essay default | essay high-throughput | tandem blocking default | tandem blocking high-throughput | tandem async default | tandem async high-throughput |\n|---|--:|--:|--:|--:|--:|--:|--:|--:|\n");
    let dbs: Vec<String> = {
        let mut v: Vec<String> = results
            .records
            .iter()
            .filter(|r| r.scenario == "pool-contention")
            .map(|r| r.db.clone())
            .collect();
        v.dedup();
        v
    };
    for db in &dbs {
        for (hold, max, d, da, df, ht, hta, htf) in CONTENTION {
            let ours = |e, p| {
                let v = variant(e, p, hold);
                let get = |k| pool_detail(results, "pool-contention", db, max, &v, k);
                match (
                    get("acquired_per_s"),
                    get("rejected_per_s"),
                    get("wait_p99_ms"),
                ) {
                    (Some(a), Some(r), Some(p99)) => {
                        format!("{a:.0} · {r:.0} (p99 {p99:.0} ms)")
                    }
                    _ => "–".into(),
                }
            };
            let essay = |ops: f64, a: u64, f: u64| {
                if db == "sqlite" {
                    format!("{ops:.0} ({a} / {f})")
                } else {
                    "–".into()
                }
            };
            let _ = writeln!(
                md,
                "| {db} | {hold} ms | {max} | {} | {} | {} | {} | {} | {} |",
                essay(d, da, df),
                essay(ht, hta, htf),
                ours(Blocking, Preset::Default),
                ours(Blocking, Preset::HighThroughput),
                ours(Async, Preset::Default),
                ours(Async, Preset::HighThroughput),
            );
        }
    }
    md.push_str("\nRejections return at once (their p99 is in `results.csv`); completed acquires under the high-throughput preset wait at most the queue ahead of them, never the timeout.\n");
}

fn ops(
    results: &Results,
    scenario: &str,
    db: &str,
    rows: u64,
    par: u32,
    variant: &str,
) -> Option<f64> {
    results
        .records
        .iter()
        .find(|r| {
            r.scenario == scenario
                && r.db == db
                && r.rows == rows
                && r.parallelism == par
                && r.pool == 10
                && r.variant == variant
        })
        .map(|r| r.ops_per_s())
}

fn cell(v: Option<f64>) -> String {
    v.map_or("–".into(), |v| format!("{v:.3}"))
}

fn ratio(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) => format!("{:.2}", a / b),
        _ => "–".into(),
    }
}

/// The seed over TLS beside plain TCP, where the run measured it (a server that offers TLS).
fn seed_over_tls(results: &Results, md: &mut String) {
    let mut rows_md = String::new();
    for (db, rows, _, _) in SEED {
        let b = ops(results, "seed", db, rows, 0, "tandem-blocking tls");
        let a = ops(results, "seed", db, rows, 0, "tandem-async tls");
        if b.is_none() && a.is_none() {
            continue;
        }
        let plain_b = ops(results, "seed", db, rows, 0, "tandem-blocking");
        let plain_a = ops(results, "seed", db, rows, 0, "tandem-async");
        let _ = writeln!(
            rows_md,
            "| {db} | {rows} | {} | {} | {} | {} |",
            cell(b),
            cell(a),
            ratio(b, plain_b),
            ratio(a, plain_a)
        );
    }
    if rows_md.is_empty() {
        return;
    }
    md.push_str("\nThe same seed over TLS (`sslmode=require` / `ssl-mode=REQUIRED`, on servers that offer it; the columns above are plain TCP, as every raw-driver baseline is):\n\n| engine | rows | blocking over TLS | async over TLS | TLS ÷ plain, blocking | TLS ÷ plain, async |\n|---|--:|--:|--:|--:|--:|\n");
    md.push_str(&rows_md);
}

/// `results.md`: the essay's tables with ours beside them.
pub fn markdown(results: &Results) -> String {
    let mut md = String::from("# Results: the essay's benchmark beside tandem's\n\n");
    md.push_str("Generated by `tandem-bench` from the run it describes. Essay figures: bluetape4k-exposed's published JMH runs (H2 in place of SQLite; hardware, JDK and database versions unrecorded; writes never checked). Ours: every op verified; one op = all rows; pool 10; machine: ");
    let machine: Vec<String> = results
        .machine
        .iter()
        .map(|(k, v)| format!("{k} = {v}"))
        .collect();
    md.push_str(&machine.join("; "));
    md.push_str(".\n\n## seed (ops/s)\n\n| engine | rows | essay JDBC | essay R2DBC | essay JDBC/R2DBC | tandem blocking | tandem async | blocking/async |\n|---|--:|--:|--:|--:|--:|--:|--:|\n");
    for (db, rows, jdbc, r2dbc) in SEED {
        let b = ops(results, "seed", db, rows, 0, "tandem-blocking");
        let a = ops(results, "seed", db, rows, 0, "tandem-async");
        if b.is_none() && a.is_none() {
            continue;
        }
        let essay_db = if db == "sqlite" {
            "SQLite (essay: H2)"
        } else {
            db
        };
        let _ = writeln!(
            md,
            "| {essay_db} | {rows} | {jdbc:.3} | {r2dbc:.3} | {:.1} | {} | {} | {} |",
            jdbc / r2dbc,
            cell(b),
            cell(a),
            ratio(b, a)
        );
    }
    seed_over_tls(results, &mut md);
    md.push_str("\n## end-to-end batch job (ops/s)\n\n| engine | rows | parallelism | essay JDBC | essay R2DBC | tandem blocking | tandem async | blocking/async | by hand | by hand, sqlx | by hand, other async driver | INSERT…SELECT | blocking ÷ by hand | async ÷ by hand on its driver |\n|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n");
    for (db, rows, par, jdbc, r2dbc) in E2E {
        let b = ops(results, "e2e", db, rows, par, "tandem-blocking");
        let a = ops(results, "e2e", db, rows, par, "tandem-async");
        if b.is_none() && a.is_none() {
            continue;
        }
        let essay_db = if db == "sqlite" {
            "SQLite (essay: H2)"
        } else {
            db
        };
        let ceiling = ops(results, "e2e", db, rows, par, "insert-select");
        let by_hand = ops(results, "e2e", db, rows, par, "raw-driver");
        let by_hand_sqlx = ops(results, "e2e", db, rows, par, "raw-sqlx");
        let by_hand_async = ops(results, "e2e", db, rows, par, "raw-async-driver");
        let _ = writeln!(
            md,
            "| {essay_db} | {rows} | {par} | {jdbc:.3} | {r2dbc:.3} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            cell(b),
            cell(a),
            ratio(b, a),
            cell(by_hand),
            cell(by_hand_sqlx),
            cell(by_hand_async),
            cell(ceiling),
            ratio(b, by_hand),
            // The async runner's own driver: tokio-postgres or mysql_async; on SQLite, rusqlite.
            ratio(
                a,
                if db == "sqlite" {
                    by_hand
                } else {
                    by_hand_async
                }
            ),
        );
    }
    md.push_str("\n\"By hand\": the same job written directly on the raw blocking driver (rusqlite with one partition; `postgres` / `mysql` with one thread and connection per partition): what the job's shape costs before any library code — 200 page reads, INSERTs and checkpointed commits per 100,000 rows, where `INSERT … SELECT` is one statement. \"By hand, other async driver\": the same job on the async driver tandem's async executor runs on by default (tokio-postgres, which deadpool-postgres and diesel-async build on; mysql_async), one task and connection per partition (the servers only): the async side's own baseline. \"By hand, sqlx\": the same job on sqlx, one task and pooled connection per partition: what the same job costs on the driver `?driver=sqlx` selects, so a gap between the async columns is the driver's, not the model's. The last two columns are tandem's runners as a share of the job by hand on their own driver (1.00 = no overhead).\n");
    let fixed: Vec<String> = ["sqlite", "postgres", "mysql"]
        .iter()
        .filter_map(|db| {
            let b = ops(results, "e2e", db, 0, 1, "tandem-blocking")?;
            let a = ops(results, "e2e", db, 0, 1, "tandem-async")?;
            Some(format!(
                "{db} {:.2} ms blocking, {:.2} ms async ({:+.2} ms)",
                1e3 / b,
                1e3 / a,
                1e3 / a - 1e3 / b
            ))
        })
        .collect();
    if !fixed.is_empty() {
        let _ = writeln!(
            md,
            "\nA run's fixed cost (the job over an empty source: its lock, its execution row, its end; median of many runs on warm pools): {}.",
            fixed.join("; ")
        );
    }
    md.push_str("\nThe essay's H2 end-to-end figures (~2,000 ops/s at every size) cannot have read and written every row: seeding 100,000 rows alone took them 169 ms. tandem's figures are checked after every op.\n");
    point_table(results, &mut md);
    pool_tables(results, &mut md);
    crate::service::markdown(results, &mut md);
    md
}

/// The point reads: each executor beside the raw driver it drives, async ÷ blocking, and the async executor
/// on sqlx beside raw sqlx (what the driver weighs).
fn point_table(results: &Results, md: &mut String) {
    let points: Vec<&crate::report::Record> = (results.records.iter())
        .filter(|r| r.scenario == "point")
        .collect();
    if points.is_empty() {
        return;
    }
    let per_s = |db: &str, variant: &dyn Fn(&str) -> bool| {
        (points.iter())
            .find(|r| r.db == db && variant(&r.variant))
            .map(|r| r.extra.unwrap_or(0.0) / r.time.secs())
    };
    md.push_str("\n## point reads: one row by id out of 10,000 (selects/s)\n\nEach variant's workers select for a few seconds a round, the variants taking turns in each round, the median round kept (workers and rounds below the table). Each executor beside the raw driver it drives: the blocking one beside rusqlite, `postgres` or `mysql`, one connection per thread and its statement prepared once; the async one (its default drivers: rusqlite on worker threads, tokio-postgres, mysql_async) beside tokio-postgres or mysql_async, one connection per task and its statement prepared once. Then the async executor on sqlx's driver (`?driver=sqlx`, the servers only) beside raw sqlx (a pool of eight and `query_as(..).fetch_optional`): the two async columns apart are what the driver weighs, async ÷ blocking what the model does.\n\n| engine | tandem blocking | raw blocking driver | tandem blocking ÷ raw | tandem async | raw async driver | tandem async ÷ raw | async ÷ blocking | tandem async, driver=sqlx | raw sqlx | driver=sqlx ÷ raw sqlx |\n|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n");
    let workers = points[0].parallelism;
    for db in ["sqlite", "postgres", "mysql"] {
        let tb = per_s(db, &|v| v == "tandem-blocking threads");
        let rb = per_s(db, &|v| v.starts_with("raw ") && v.ends_with(" threads"));
        let ta = per_s(db, &|v| v == "tandem-async tasks");
        let on_sqlx = per_s(db, &|v| v == "tandem-async tasks on sqlx");
        let sqlx = per_s(db, &|v| v == "raw sqlx tasks");
        let other = per_s(db, &|v| {
            v.starts_with("raw ") && v.ends_with(" tasks") && v != "raw sqlx tasks"
        });
        if tb.is_none() && ta.is_none() {
            continue;
        }
        let n = |v: Option<f64>| v.map_or("–".into(), |v| format!("{v:.0}"));
        let _ = writeln!(
            md,
            "| {db} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            n(tb),
            n(rb),
            ratio(tb, rb),
            n(ta),
            n(other),
            ratio(ta, other),
            ratio(ta, tb),
            n(on_sqlx),
            n(sqlx),
            ratio(on_sqlx, sqlx),
        );
    }
    let rounds = (points[0].details.iter())
        .find(|(k, _)| *k == "rounds")
        .map_or(0.0, |(_, v)| *v);
    let _ = writeln!(md, "\n{workers} workers, {rounds} rounds.");
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::report::{Record, seed_cell};

    fn seed(variant: &str, ms: u64) -> Record {
        seed_cell("postgres", variant, Duration::from_millis(ms))
    }

    /// The TLS table appears only when the run measured TLS, with each side's TLS ÷ plain ratio: a
    /// transport that stalls (async ten times slower over TLS here) is in plain sight.
    #[test]
    fn seed_over_tls_beside_plain() {
        let plain = vec![seed("tandem-blocking", 4), seed("tandem-async", 4)];
        let md = markdown(&Results {
            records: plain.clone(),
            machine: Vec::new(),
        });
        assert!(!md.contains("over TLS"), "{md}");
        let mut records = plain;
        records.push(seed("tandem-blocking tls", 5));
        records.push(seed("tandem-async tls", 40));
        let md = markdown(&Results {
            records,
            machine: Vec::new(),
        });
        assert!(
            md.contains("| postgres | 1000 | 200.000 | 25.000 | 0.80 | 0.10 |"),
            "{md}"
        );
    }
}
