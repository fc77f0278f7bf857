//! Stage 9 — a benchmark of your own: the reference solution.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use blocking::Executor as _;
use dialects::Insert;
use tables::{Dialect, Value};

use crate::workloads::{
    Cell, Mismatch, Side, Workload, essay, reset, runtime, time_tandem, written,
};

// ANCHOR: median
/// The middle of the samples (for an even count the mean of the two middle ones, rounded down to the
/// nanosecond as `Duration`'s `/ 2` does); zero for none. The median, not the mean: one sample slowed by the
/// machine's other work does not move it.
pub fn median(samples: &[Duration]) -> Duration {
    let mut sorted = samples.to_vec();
    sorted.sort();
    match sorted.len() {
        0 => Duration::ZERO,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2,
    }
}

/// How far apart the samples are, as a fraction of their median: (slowest − fastest) ÷ median; zero for
/// fewer than two samples, and zero when the median is zero (nothing to be a fraction of: never infinity or
/// NaN, which would print as a figure). A median means little without it: 0.05 is a steady machine, 0.5 a
/// busy one.
pub fn spread(samples: &[Duration]) -> f64 {
    if samples.len() < 2 {
        return 0.0;
    }
    let (fastest, slowest) = (samples.iter().min(), samples.iter().max());
    let m = median(samples).as_secs_f64();
    match (fastest, slowest) {
        (Some(f), Some(s)) if m > 0.0 => (*s - *f).as_secs_f64() / m,
        _ => 0.0,
    }
}
// ANCHOR_END: median

// ANCHOR: verify
/// Whether an operation left exactly what it should: `workload.rows()` rows, no name twice, and values
/// that add up — `1 + 2 + … + n` for the seed, twice that for the job (it doubles each value). Checked in
/// that order, and the first that fails is the mismatch returned: a missing row is a `Count`, though the
/// sum is off too.
pub fn verify(workload: Workload, rows: &[(String, i64)]) -> Result<(), Mismatch> {
    let n = workload.rows();
    if rows.len() as u64 != n {
        return Err(Mismatch::Count {
            expected: n,
            found: rows.len() as u64,
        });
    }
    let distinct = rows
        .iter()
        .map(|r| r.0.as_str())
        .collect::<HashSet<_>>()
        .len() as u64;
    if distinct != n {
        return Err(Mismatch::Duplicates { distinct, rows: n });
    }
    let triangle = (n as i64) * (n as i64 + 1) / 2;
    let expected = match workload {
        Workload::Seed { .. } => triangle,
        Workload::EndToEnd { .. } => 2 * triangle,
    };
    let found: i64 = rows.iter().map(|r| r.1).sum();
    if found != expected {
        return Err(Mismatch::Sum { expected, found });
    }
    Ok(())
}
// ANCHOR_END: verify

// ANCHOR: seed
/// The seed workload on your blocking executor: rows `1..=n`, chunks of 1,000, one transaction each.
pub fn seed_blocking(db: &blocking::Database, n: u64) -> blocking::Result<()> {
    for chunk in seed_chunks(db.dialect(), n)? {
        db.transaction(|tx| {
            for st in &chunk {
                tx.execute(st)?;
            }
            Ok::<_, blocking::Error>(())
        })?;
    }
    Ok(())
}

/// The seed workload on your async executor.
pub async fn seed_async(db: &asynchronous::Database, n: u64) -> blocking::Result<()> {
    for chunk in seed_chunks(db.dialect(), n)? {
        db.transaction(async |tx| {
            for st in &chunk {
                tx.execute(st).await?;
            }
            Ok::<_, blocking::Error>(())
        })
        .await?;
    }
    Ok(())
}

/// The seed's statements, a chunk of 1,000 rows at a time (each chunk's statements, split at the engine's
/// parameter limit — 1,000 rows of 2 values never are).
fn seed_chunks(d: Dialect, n: u64) -> blocking::Result<Vec<Vec<dialects::Statement>>> {
    let all: Vec<u64> = (1..=n).collect();
    all.chunks(1_000)
        .map(|chunk| {
            let mut insert =
                Insert::into(batch::job::benchmark_source::table, vec!["name", "value"]);
            for i in chunk {
                insert = insert.row(vec![
                    Value::Text(format!("item-{i}")),
                    Value::I64(*i as i64),
                ]);
            }
            Ok(insert.render_chunks(d)?)
        })
        .collect()
}
// ANCHOR_END: seed

// ANCHOR: measure
/// One operation of `workload` on your side, timed without opening the database.
fn time_mine(url: &str, side: Side, workload: Workload) -> Result<Duration, String> {
    let job = |partitions| batch::job::Job {
        partitions,
        ..batch::job::Job::new("essay")
    };
    match side {
        Side::MineBlocking => {
            let db = blocking::Database::open(url, 10).map_err(|e| e.to_string())?;
            let start = Instant::now();
            match workload {
                Workload::Seed { rows } => seed_blocking(&db, rows).map_err(|e| e.to_string())?,
                Workload::EndToEnd { partitions, .. } => batch::run_blocking(&db, &job(partitions))
                    .map(drop)
                    .map_err(|e| e.to_string())?,
            }
            Ok(start.elapsed())
        }
        Side::MineAsync => runtime()?.block_on(async {
            let db = asynchronous::Database::open(url, 10)
                .await
                .map_err(|e| e.to_string())?;
            let start = Instant::now();
            match workload {
                Workload::Seed { rows } => {
                    seed_async(&db, rows).await.map_err(|e| e.to_string())?
                }
                Workload::EndToEnd { partitions, .. } => batch::run_async(&db, &job(partitions))
                    .await
                    .map(drop)
                    .map_err(|e| e.to_string())?,
            }
            Ok(start.elapsed())
        }),
        Side::TandemBlocking | Side::TandemAsync | Side::Sabotaged => {
            time_tandem(url, side, workload)
        }
    }
}

/// Measures `workload` on `side`: one warm-up, then `iterations` operations, each on a clean slate
/// (`reset`), each timed from after its database is open, each verified — an operation that left the wrong
/// rows fails the whole cell, it is not a number. Your sides run your code; the others — tandem's two, and
/// `Side::Sabotaged`, whose every operation leaves a wrong result for `measure` to catch — run
/// `time_tandem`.
pub fn measure(
    url: &str,
    side: Side,
    workload: Workload,
    iterations: usize,
) -> Result<Cell, String> {
    let engine = blocking::drivers::dialect_of(url)?;
    let mut samples = Vec::with_capacity(iterations);
    for i in 0..=iterations {
        reset(url, side, workload)?;
        let took = time_mine(url, side, workload)?;
        let rows = written(url, workload)?;
        verify(workload, &rows).map_err(|m| format!("{side} on {engine}, {workload}: {m}"))?;
        if i > 0 {
            samples.push(took);
        }
    }
    Ok(Cell {
        engine,
        side,
        workload,
        samples,
    })
}
// ANCHOR_END: measure

// ANCHOR: report
/// Operations per second at the median.
pub fn ops_per_sec(cell: &Cell) -> f64 {
    let m = median(&cell.samples).as_secs_f64();
    if m > 0.0 { 1.0 / m } else { 0.0 }
}

/// The results as a table: one line per engine and workload, your two executors and tandem's beside the
/// essay's JDBC and R2DBC figures, and the ratios that matter — blocking ÷ async on each side, yours ÷
/// tandem's.
pub fn table(cells: &[Cell]) -> String {
    let mut lines: BTreeMap<(String, String), HashMap<Side, f64>> = BTreeMap::new();
    let mut keys = BTreeMap::new();
    for c in cells {
        let key = (c.engine.to_string(), c.workload.to_string());
        keys.insert(key.clone(), (c.engine, c.workload));
        lines.entry(key).or_default().insert(c.side, ops_per_sec(c));
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<10} {:<14} {:>11} {:>11} {:>8} {:>11} {:>11} {:>8} {:>9} {:>11} {:>11} {:>8}",
        "engine",
        "workload",
        "mine blk/s",
        "mine asy/s",
        "blk/asy",
        "tandem blk",
        "tandem asy",
        "blk/asy",
        "mine/tdm",
        "essay JDBC",
        "essay R2DBC",
        "JDBC/R2"
    );
    for (key, by_side) in &lines {
        let (engine, workload) = keys[key];
        let get = |s: Side| by_side.get(&s).copied();
        let num = |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |v| format!("{v:.3}"));
        let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) if b > 0.0 => format!("{:.2}", a / b),
            _ => "-".to_owned(),
        };
        let (jdbc, r2dbc) =
            essay(engine, workload).map_or((None, None), |(j, r)| (Some(j), Some(r)));
        let _ = writeln!(
            out,
            "{:<10} {:<14} {:>11} {:>11} {:>8} {:>11} {:>11} {:>8} {:>9} {:>11} {:>11} {:>8}",
            key.0,
            key.1,
            num(get(Side::MineBlocking)),
            num(get(Side::MineAsync)),
            ratio(get(Side::MineBlocking), get(Side::MineAsync)),
            num(get(Side::TandemBlocking)),
            num(get(Side::TandemAsync)),
            ratio(get(Side::TandemBlocking), get(Side::TandemAsync)),
            ratio(get(Side::MineBlocking), get(Side::TandemBlocking)),
            num(jdbc),
            num(r2dbc),
            ratio(jdbc, r2dbc),
        );
    }
    out
}
// ANCHOR_END: report

// ANCHOR: service
/// Row `id` of the service's `world (id, randomnumber)` table on your blocking executor, as `(id,
/// randomnumber)`; `None` when there is no such row. One select by primary key, the id a parameter (in the
/// engine's placeholder).
pub fn world_row_blocking(
    db: &blocking::Database,
    id: i64,
) -> blocking::Result<Option<(i64, i64)>> {
    db.fetch_optional(&world_row(db.dialect(), id))
}

/// The same on your async executor.
pub async fn world_row_async(
    db: &asynchronous::Database,
    id: i64,
) -> blocking::Result<Option<(i64, i64)>> {
    let rows = db.fetch(&world_row(db.dialect(), id)).await?;
    Ok(rows.into_iter().next())
}

/// The select, with the engine's placeholder.
fn world_row(d: Dialect, id: i64) -> dialects::Statement {
    let mark = match d {
        Dialect::Postgres => "$1",
        Dialect::Sqlite | Dialect::MySql => "?",
    };
    dialects::Statement {
        sql: format!("SELECT id, randomnumber FROM world WHERE id = {mark}"),
        params: vec![Value::I64(id)],
        key: dialects::GeneratedKey::None,
    }
}
// ANCHOR_END: service
