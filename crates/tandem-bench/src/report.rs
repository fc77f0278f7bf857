//! Results: one [`Record`] per measured cell, printed as tables and written as JSON and CSV with the machine
//! they were measured on.

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
    mut op: impl FnMut() -> anyhow::Result<Duration>,
) -> anyhow::Result<Measured> {
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

/// One record as `results.json` and `results.csv` hold it: every figure in seconds or per second, the
/// scenario's named figures under `details`. Written with borrowed names (`S = &str`), read back owned
/// (`S = String`).
#[derive(serde::Serialize, serde::Deserialize)]
struct Row<S, D> {
    scenario: S,
    db: S,
    variant: S,
    rows: u64,
    pool: u32,
    parallelism: u32,
    median_s: f64,
    min_s: f64,
    max_s: f64,
    /// Non-finite figures (a cell too fast to time) are written as `null` / empty, never `inf`.
    ops_per_s: Option<f64>,
    rows_per_s: Option<f64>,
    extra: Option<f64>,
    details: D,
    verified: bool,
}

impl Record {
    fn row<D>(&self, details: D) -> Row<&str, D> {
        let finite = |v: f64| v.is_finite().then_some(v);
        Row {
            scenario: self.scenario,
            db: &self.db,
            variant: &self.variant,
            rows: self.rows,
            pool: self.pool,
            parallelism: self.parallelism,
            median_s: self.time.median.as_secs_f64(),
            min_s: self.time.min.as_secs_f64(),
            max_s: self.time.max.as_secs_f64(),
            ops_per_s: finite(self.ops_per_s()),
            rows_per_s: finite(self.rows_per_s()),
            extra: self.extra.and_then(finite),
            details,
            // A cell is recorded only after its verification passed (a mismatch aborts the run).
            verified: true,
        }
    }
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

    /// Writes `results.json` (serde_json) and `results.csv` (the csv crate: quoted where a field needs it)
    /// into `dir`.
    pub fn write(
        &self,
        dir: &std::path::Path,
    ) -> anyhow::Result<(std::path::PathBuf, std::path::PathBuf)> {
        use anyhow::Context as _;
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let (jp, cp) = (dir.join("results.json"), dir.join("results.csv"));
        #[derive(serde::Serialize)]
        struct Json<'a> {
            machine: std::collections::BTreeMap<&'a str, &'a str>,
            records: Vec<Row<&'a str, std::collections::BTreeMap<&'a str, f64>>>,
        }
        let json = Json {
            machine: self
                .machine
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect(),
            records: self
                .records
                .iter()
                .map(|r| r.row(r.details.iter().map(|(k, v)| (*k, *v)).collect()))
                .collect(),
        };
        let file =
            std::fs::File::create(&jp).with_context(|| format!("creating {}", jp.display()))?;
        serde_json::to_writer_pretty(std::io::BufWriter::new(file), &json)
            .with_context(|| format!("writing {}", jp.display()))?;
        let mut csv =
            csv::Writer::from_path(&cp).with_context(|| format!("creating {}", cp.display()))?;
        for r in &self.records {
            let details = r
                .details
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(";");
            csv.serialize(r.row(details))
                .with_context(|| format!("writing {}", cp.display()))?;
        }
        csv.flush()
            .with_context(|| format!("writing {}", cp.display()))?;
        Ok((jp, cp))
    }

    /// The seed, e2e and service cells of an earlier run's `results.csv` (what the charts need; other
    /// scenarios are not read back, nor the details of seed and e2e).
    pub fn read_csv(path: &std::path::Path) -> anyhow::Result<Results> {
        use anyhow::Context as _;
        let mut reader =
            csv::Reader::from_path(path).with_context(|| format!("reading {}", path.display()))?;
        let mut results = Results::default();
        for (line, row) in reader.deserialize::<Row<String, String>>().enumerate() {
            let r = row.with_context(|| format!("{}: record {}", path.display(), line + 1))?;
            let scenario = match r.scenario.as_str() {
                "seed" => "seed",
                "e2e" => "e2e",
                s => match crate::service::SCENARIOS.iter().find(|k| **k == s) {
                    Some(k) => k,
                    None => continue,
                },
            };
            // `name=value;…`, the names the service writes.
            let details = (r.details.split(';'))
                .filter_map(|kv| kv.split_once('='))
                .filter_map(|(k, v)| {
                    let name = crate::service::DETAILS.iter().find(|n| **n == k)?;
                    Some((*name, v.parse::<f64>().ok()?))
                })
                .collect();
            let secs = |s: f64| {
                Duration::try_from_secs_f64(s)
                    .with_context(|| format!("{}: record {}: time {s}", path.display(), line + 1))
            };
            results.records.push(Record {
                scenario,
                db: r.db,
                variant: r.variant,
                rows: r.rows,
                pool: r.pool,
                parallelism: r.parallelism,
                time: Measured {
                    median: secs(r.median_s)?,
                    min: secs(r.min_s)?,
                    max: secs(r.max_s)?,
                },
                extra: r.extra,
                details,
            });
        }
        Ok(results)
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
        for b in (self.records.iter())
            .filter(|r| r.scenario == "e2e" && r.rows == 0 && r.variant == "tandem-blocking")
        {
            let a = self.find(b, "tandem-async");
            println!(
                "e2e       {:<9} a run's fixed cost (empty source): blocking {:.2} ms, async {}",
                b.db,
                b.time.secs() * 1e3,
                a.map_or("-".into(), |a| format!(
                    "{:.2} ms ({:+.2} ms)",
                    a.time.secs() * 1e3,
                    (a.time.secs() - b.time.secs()) * 1e3
                )),
            );
        }
        for r in self
            .records
            .iter()
            .filter(|r| r.scenario == "e2e" && r.variant == "raw-driver")
        {
            // Speeds as percentages: `fast` takes `fast_s` where `slow` takes `slow_s`.
            let speed = |fast_s: Option<f64>, slow_s: Option<f64>| match (fast_s, slow_s) {
                (Some(f), Some(s)) => format!("{:.0}%", 100.0 * f / s),
                _ => "-".to_owned(),
            };
            let secs = |v: &str| self.find(r, v).map(|o| o.time.secs());
            let own = Some(r.time.secs());
            println!(
                "e2e       {:<9} {:>7} rows par {:>2}: the job by hand on the raw driver ({}) {:>9.3} ops/s = {} of INSERT…SELECT; blocking at {} of it, async at {}",
                r.db,
                r.rows,
                r.parallelism,
                match (r.db.as_str(), r.parallelism) {
                    ("sqlite", _) | (_, 1) => "one partition".to_owned(),
                    (_, p) => format!("{p} partitions"),
                },
                r.ops_per_s(),
                speed(secs("insert-select"), own),
                speed(own, secs("tandem-blocking")),
                speed(own, secs("tandem-async")),
            );
            if let Some(other) = self.find(r, "raw-async-driver") {
                println!(
                    "e2e       {:<9} {:>7} rows par {:>2}: the job by hand on {} {:>9.3} ops/s = {} of the raw driver's",
                    r.db,
                    r.rows,
                    r.parallelism,
                    if r.db == "postgres" {
                        "tokio-postgres"
                    } else {
                        "mysql_async"
                    },
                    other.ops_per_s(),
                    speed(Some(r.time.secs()), Some(other.time.secs())),
                );
            }
            if let Some(sqlx) = self.find(r, "raw-sqlx") {
                let own = Some(sqlx.time.secs());
                println!(
                    "e2e       {:<9} {:>7} rows par {:>2}: the job by hand on sqlx {:>9.3} ops/s = {} of the raw driver's; async at {} of it",
                    r.db,
                    r.rows,
                    r.parallelism,
                    sqlx.ops_per_s(),
                    speed(Some(r.time.secs()), own),
                    speed(own, secs("tandem-async")),
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
        let points: Vec<&Record> = self
            .records
            .iter()
            .filter(|r| r.scenario == "point")
            .collect();
        let per_s = |r: &Record| r.extra.unwrap_or(0.0) / r.time.secs();
        for r in &points {
            // tandem's variants as a share of the raw driver of the same kind, in the same run.
            let raw = points.iter().find(|b| {
                b.db == r.db
                    && b.variant.starts_with("raw ")
                    && b.variant.ends_with(if r.variant.contains(" tasks") {
                        "tasks"
                    } else {
                        "threads"
                    })
            });
            let share = match raw {
                Some(b) if !r.variant.starts_with("raw ") && per_s(b) > 0.0 => {
                    format!("  {:>5.1} % of {}", 100.0 * per_s(r) / per_s(b), b.variant)
                }
                _ => String::new(),
            };
            println!(
                "point     {:<9} {:<41} {:>3} workers {:>10.0} selects/s{share}",
                r.db,
                r.variant,
                r.parallelism,
                per_s(r)
            );
        }
    }
}

/// Resident set size of this process in bytes, as the OS reports it (`memory-stats`: the real page size,
/// not an assumed one); 0 where it cannot tell.
pub fn rss() -> i64 {
    memory_stats::memory_stats().map_or(0, |m| m.physical_mem as i64)
}

/// Latencies in an HDR histogram: 1 ns to 1 h at three significant digits, so quantiles come from every
/// recorded value in fixed memory, whatever the count.
pub struct Latencies(hdrhistogram::Histogram<u64>);

impl Latencies {
    /// An empty histogram.
    pub fn new() -> Self {
        Latencies(
            hdrhistogram::Histogram::new_with_bounds(1, 3_600_000_000_000, 3)
                .expect("static histogram bounds are valid"),
        )
    }

    /// Records one latency (clamped into the histogram's range).
    pub fn record(&mut self, d: Duration) {
        self.0
            .saturating_record((d.as_nanos().min(u128::from(u64::MAX)) as u64).max(1));
    }

    /// Adds another histogram's counts.
    pub fn add(&mut self, other: &Latencies) {
        self.0
            .add(&other.0)
            .expect("histograms of the same bounds add");
    }

    /// The `q` quantile (0.5, 0.99, 1.0 = max) in milliseconds; 0 when nothing was recorded.
    pub fn quantile_ms(&self, q: f64) -> f64 {
        if self.0.is_empty() {
            return 0.0;
        }
        self.0.value_at_quantile(q) as f64 / 1e6
    }

    /// How many latencies were recorded.
    pub fn len(&self) -> u64 {
        self.0.len()
    }
}

/// A seed cell for the reports' tests: 1,000 rows, pool 10, `median` every time.
#[cfg(test)]
pub(crate) fn seed_cell(db: &str, variant: &str, median: Duration) -> Record {
    Record {
        scenario: "seed",
        db: db.into(),
        variant: variant.into(),
        rows: 1_000,
        pool: 10,
        parallelism: 0,
        time: Measured {
            median,
            min: median,
            max: median,
        },
        extra: None,
        details: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(variant: &str, median: Duration) -> Record {
        Record {
            extra: Some(f64::INFINITY),
            details: vec![("wait_p99_ms", 1.5)],
            ..seed_cell("sqlite", variant, median)
        }
    }

    /// Names with commas, quotes, backslashes and newlines survive both files; a cell too fast to time
    /// writes `null` (JSON) and an empty field (CSV), never `inf`; the CSV reads back for the charts.
    #[test]
    fn results_files_parse_back() {
        let tricky = "peer \"sea-query\", sqlx\\0.8\nsecond line";
        let results = Results {
            records: vec![
                record(tricky, Duration::from_millis(2)),
                record("tandem-blocking", Duration::ZERO),
            ],
            machine: vec![("cpu \"model\"".into(), "x, y".into())],
        };
        let dir = std::env::temp_dir().join(format!("tandem-bench-report-{}", std::process::id()));
        let (jp, cp) = results.write(&dir).unwrap();
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&jp).unwrap()).unwrap();
        assert_eq!(json["machine"]["cpu \"model\""], "x, y");
        assert_eq!(json["records"][0]["variant"], tricky);
        assert_eq!(json["records"][0]["ops_per_s"], 500.0);
        assert_eq!(json["records"][0]["details"]["wait_p99_ms"], 1.5);
        assert!(json["records"][0]["extra"].is_null());
        assert!(json["records"][1]["ops_per_s"].is_null());
        let mut reader = csv::Reader::from_path(&cp).unwrap();
        let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
        assert_eq!(rows.len(), 2);
        assert_eq!(&rows[0][2], tricky);
        assert_eq!(&rows[1][9], "", "an infinite ops/s is an empty field");
        let back = Results::read_csv(&cp).unwrap();
        assert_eq!(back.records.len(), 2);
        assert_eq!(back.records[0].variant, tricky);
        assert_eq!(back.records[0].time.median, Duration::from_millis(2));
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Quantiles come from every recorded latency.
    #[test]
    fn latency_quantiles() {
        let mut a = Latencies::new();
        for ms in 1..=99 {
            a.record(Duration::from_millis(ms));
        }
        let mut b = Latencies::new();
        b.record(Duration::from_secs(2));
        a.add(&b);
        assert_eq!(a.len(), 100);
        assert!(
            (a.quantile_ms(0.5) - 50.0).abs() < 0.1,
            "{}",
            a.quantile_ms(0.5)
        );
        assert!(
            (a.quantile_ms(1.0) - 2000.0).abs() < 2.0,
            "{}",
            a.quantile_ms(1.0)
        );
        assert_eq!(Latencies::new().quantile_ms(0.99), 0.0);
    }
}
