//! Stage 9 — a benchmark of your own. Your code. Read `book/src/09-choosing.md`, then make `just check 09`
//! pass: the median, the verification, your seed on both executors, `measure`, the table, and the service's
//! one row on both executors. Then run the benchmark (and `--service`) and fill in the chapter's selection
//! guide with your numbers.
// When you are done, delete this comment and the `#![allow(…)]` under it: they keep the compiler quiet
// while the bodies are `todo!()`s (unused parameters, imports, helpers); then its warnings are worth reading.
#![allow(unused_variables, unused_imports, dead_code)]

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write as _;
use std::time::{Duration, Instant};

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
    todo!("the median")
}

/// How far apart the samples are, as a fraction of their median: (slowest − fastest) ÷ median; zero for
/// fewer than two samples, and zero when the median is zero (nothing to be a fraction of: never infinity or
/// NaN, which would print as a figure). A median means little without it: 0.05 is a steady machine, 0.5 a
/// busy one.
pub fn spread(samples: &[Duration]) -> f64 {
    todo!("the spread of the samples")
}
// ANCHOR_END: median

// ANCHOR: verify
/// Whether an operation left exactly what it should: `workload.rows()` rows, no name twice, and values
/// that add up — `1 + 2 + … + n` for the seed, twice that for the job (it doubles each value). Checked in
/// that order, and the first that fails is the mismatch returned: a missing row is a `Count`, though the
/// sum is off too.
pub fn verify(workload: Workload, rows: &[(String, i64)]) -> Result<(), Mismatch> {
    todo!("verify what an operation left")
}
// ANCHOR_END: verify

// ANCHOR: seed
/// The seed workload on your blocking executor: rows `1..=n`, chunks of 1,000, one transaction each.
pub fn seed_blocking(db: &blocking::Database, n: u64) -> blocking::Result<()> {
    todo!("the seed on your blocking executor")
}

/// The seed workload on your async executor.
pub async fn seed_async(db: &asynchronous::Database, n: u64) -> blocking::Result<()> {
    todo!("the seed on your async executor")
}

// ANCHOR_END: seed

// ANCHOR: measure
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
    todo!("measure a cell")
}
// ANCHOR_END: measure

// ANCHOR: report
/// Operations per second at the median.
pub fn ops_per_sec(cell: &Cell) -> f64 {
    todo!("operations per second at the median")
}

/// The results as a table: one line per engine and workload, your two executors and tandem's beside the
/// essay's JDBC and R2DBC figures, and the ratios that matter — blocking ÷ async on each side, yours ÷
/// tandem's.
pub fn table(cells: &[Cell]) -> String {
    todo!("the table")
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
    todo!("one world row on your blocking executor")
}

/// The same on your async executor.
pub async fn world_row_async(
    db: &asynchronous::Database,
    id: i64,
) -> blocking::Result<Option<(i64, i64)>> {
    todo!("one world row on your async executor")
}
// ANCHOR_END: service
