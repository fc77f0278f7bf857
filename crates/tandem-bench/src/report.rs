//! Results: one [`Record`] per measured cell, printed as tables and written as JSON and CSV with the machine
//! they were measured on.

use std::fmt::Write as _;
use std::time::Duration;

/// Median and spread of a cell's measured iterations.
#[derive(Clone, Copy, Debug)]
pub struct Measured {
    /// Median.
    pub median: Duration,
    /// Fastest.
    pub min: Duration,
    /// Slowest.
    pub max: Duration,
}

impl Measured {
    /// Median in seconds.
    pub fn secs(&self) -> f64 {
        self.median.as_secs_f64()
    }
}

/// Runs `op` once to warm up, then `iterations` times; each call returns the time of its measured part.
pub fn measure(
    iterations: usize,
    mut op: impl FnMut() -> Result<Duration, String>,
) -> Result<Measured, String> {
    op()?;
    let mut times: Vec<Duration> = (0..iterations.max(1))
        .map(|_| op())
        .collect::<Result<_, _>>()?;
    times.sort();
    Ok(Measured {
        median: times[times.len() / 2],
        min: times[0],
        max: times[times.len() - 1],
    })
}

/// One measured cell.
#[derive(Clone, Debug)]
pub struct Record {
    /// `seed`, `e2e`, `stream`, `point`.
    pub scenario: &'static str,
    /// Engine.
    pub db: String,
    /// What ran: `tandem-blocking`, `tandem-async`, `raw-driver`, `raw-sqlx`, `bulk-limit`, …
    pub variant: String,
    /// Rows per op (data size).
    pub rows: u64,
    /// Pool size.
    pub pool: u32,
    /// Partitions (e2e) or concurrent workers (point); 0 where it does not apply.
    pub parallelism: u32,
    /// Time per op.
    pub time: Measured,
    /// Extra figure (peak RSS growth in bytes for `stream`, ops counted for `point` and `pool`).
    pub extra: Option<f64>,
    /// Named figures of scenarios that measure more than a time (`pool`: acquired, rejected, waits, …).
    pub details: Vec<(&'static str, f64)>,
}

impl Record {
    /// A named figure of [`Record::details`].
    pub fn detail(&self, name: &str) -> Option<f64> {
        self.details
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| *v)
    }

    /// Ops per second at the median.
    pub fn ops_per_s(&self) -> f64 {
        1.0 / self.time.secs()
    }

    /// Rows per second at the median.
    pub fn rows_per_s(&self) -> f64 {
        self.rows as f64 / self.time.secs()
    }
}

/// The records of a run and where they were measured.
#[derive(Default)]
pub struct Results {
    /// Every cell.
    pub records: Vec<Record>,
    /// `key = value` lines describing the machine and engines.
    pub machine: Vec<(String, String)>,
}

fn json_str(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

impl Results {
    /// The figure of another variant in the same cell, for ratios.
    pub fn find(&self, r: &Record, variant: &str) -> Option<&Record> {
        self.records.iter().find(|o| {
            o.scenario == r.scenario
                && o.db == r.db
                && o.rows == r.rows
                && o.pool == r.pool
                && o.parallelism == r.parallelism
                && o.variant == variant
        })
    }

    /// Writes `results.json` and `results.csv` into `dir`.
    pub fn write(
        &self,
        dir: &std::path::Path,
    ) -> std::io::Result<(std::path::PathBuf, std::path::PathBuf)> {
        std::fs::create_dir_all(dir)?;
        let mut json = String::from("{\n  \"machine\": {");
        for (i, (k, v)) in self.machine.iter().enumerate() {
            let _ = write!(
                json,
                "{}{}: {}",
                if i > 0 { ", " } else { "" },
                json_str(k),
                json_str(v)
            );
        }
        json.push_str("},\n  \"records\": [\n");
        let mut csv = String::from(
            "scenario,db,variant,rows,pool,parallelism,median_s,min_s,max_s,ops_per_s,rows_per_s,extra,details,verified\n",
        );
        for (i, r) in self.records.iter().enumerate() {
            let extra = r.extra.map_or("null".to_owned(), |e| format!("{e}"));
            let details: Vec<String> = r
                .details
                .iter()
                .map(|(k, v)| format!("{}: {v}", json_str(k)))
                .collect();
            let details = details.join(", ");
            let _ = writeln!(
                json,
                "    {{\"scenario\": {}, \"db\": {}, \"variant\": {}, \"rows\": {}, \"pool\": {}, \"parallelism\": {}, \"median_s\": {}, \"min_s\": {}, \"max_s\": {}, \"ops_per_s\": {:.4}, \"rows_per_s\": {:.1}, \"extra\": {extra}, \"details\": {{{details}}}, \"verified\": true}}{}",
                json_str(r.scenario),
                json_str(&r.db),
                json_str(&r.variant),
                r.rows,
                r.pool,
                r.parallelism,
                r.time.median.as_secs_f64(),
                r.time.min.as_secs_f64(),
                r.time.max.as_secs_f64(),
                r.ops_per_s(),
                r.rows_per_s(),
                if i + 1 < self.records.len() { "," } else { "" }
            );
            let _ = writeln!(
                csv,
                "{},{},{},{},{},{},{},{},{},{:.4},{:.1},{},{},true",
                r.scenario,
                r.db,
                r.variant,
                r.rows,
                r.pool,
                r.parallelism,
                r.time.median.as_secs_f64(),
                r.time.min.as_secs_f64(),
                r.time.max.as_secs_f64(),
                r.ops_per_s(),
                r.rows_per_s(),
                r.extra.map_or(String::new(), |e| format!("{e}")),
                r.details
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(";")
            );
        }
        json.push_str("  ]\n}\n");
        let (jp, cp) = (dir.join("results.json"), dir.join("results.csv"));
        std::fs::write(&jp, json)?;
        std::fs::write(&cp, csv)?;
        Ok((jp, cp))
    }

    /// The seed and e2e tables in the essay's shape (DB, pool, blocking ops/s, async ops/s, ratio) with rows/s
    /// and the ratios to the baselines.
    pub fn print(&self) {
        for scenario in ["seed", "e2e"] {
            let cells: Vec<&Record> = self
                .records
                .iter()
                .filter(|r| r.scenario == scenario && r.variant == "tandem-blocking")
                .collect();
            if cells.is_empty() {
                continue;
            }
            let (base, limit) = if scenario == "seed" {
                ("raw-driver", "bulk-limit")
            } else {
                ("insert-select", "insert-select")
            };
            println!("\n{scenario}: ops/s (one op = all rows); ratios at the median");
            println!(
                "{:<9} {:>7} {:>4} {:>4} {:>12} {:>12} {:>9} {:>13} {:>10} {:>10} {:>10}",
                "db",
                "rows",
                "pool",
                "par",
                "blocking/s",
                "async/s",
                "blk/async",
                "blk rows/s",
                "blk/base",
                "asy/base",
                "blk/limit"
            );
            for b in cells {
                let a = self.find(b, "tandem-async");
                let r = |v: &str| self.find(b, v).map(|x| x.time.secs());
                let ratio = |other: Option<f64>| {
                    other.map_or("-".to_owned(), |o| {
                        format!("{:.0}%", 100.0 * o / b.time.secs())
                    })
                };
                let aratio = |other: Option<f64>| match (other, a) {
                    (Some(o), Some(a)) => format!("{:.0}%", 100.0 * o / a.time.secs()),
                    _ => "-".to_owned(),
                };
                let base_s = r(base);
                let async_base = if scenario == "seed" {
                    r("raw-sqlx")
                } else {
                    r(base)
                };
                println!(
                    "{:<9} {:>7} {:>4} {:>4} {:>12.3} {:>12} {:>9} {:>13.0} {:>10} {:>10} {:>10}",
                    b.db,
                    b.rows,
                    b.pool,
                    b.parallelism,
                    b.ops_per_s(),
                    a.map_or("-".to_owned(), |a| format!("{:.3}", a.ops_per_s())),
                    a.map_or("-".to_owned(), |a| format!(
                        "{:.2}",
                        b.ops_per_s() / a.ops_per_s()
                    )),
                    b.rows_per_s(),
                    ratio(base_s),
                    aratio(async_base),
                    ratio(r(limit)),
                );
            }
        }
        for r in self
            .records
            .iter()
            .filter(|r| r.scenario == "seed" && r.variant.starts_with("peer "))
        {
            let vs = self.find(r, "tandem-blocking").map_or("-".to_owned(), |b| {
                format!("{:.0}%", 100.0 * r.time.secs() / b.time.secs())
            });
            println!(
                "seed      {:<9} {:>7} rows {:<26} {:>10.3} ops/s  (its time is {vs} of tandem-blocking's)",
                r.db,
                r.rows,
                r.variant,
                r.ops_per_s()
            );
        }
        for r in self.records.iter().filter(|r| r.scenario == "stream") {
            println!(
                "stream    {:<9} {:<22} {:>9} rows {:>10.0} rows/s  peak RSS growth {:>8.1} MiB",
                r.db,
                r.variant,
                r.rows,
                r.rows_per_s(),
                r.extra.unwrap_or(0.0) / (1024.0 * 1024.0)
            );
        }
        crate::pool::print(self);
        for r in self.records.iter().filter(|r| r.scenario == "point") {
            println!(
                "point     {:<9} {:<22} {:>3} workers {:>10.0} selects/s",
                r.db,
                r.variant,
                r.parallelism,
                r.extra.unwrap_or(0.0) / r.time.secs()
            );
        }
    }
}

/// Resident set size of this process in bytes (Linux; 0 elsewhere).
pub fn rss() -> i64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| {
            s.split_whitespace()
                .nth(1)
                .and_then(|p| p.parse::<i64>().ok())
        })
        .map_or(0, |pages| pages * 4096)
}
