//! `service`: an HTTP service on loopback serving TechEmpower's database tests over its `World` table —
//! `/db`, `/queries?q=N`, `/updates?q=N` — with `/wait?ms=D` (one select, then D ms waiting on "another
//! service") and `/ping` (no database), in each of the variants [`server::Variant`] names, each in a process
//! of its own, under load from this one (closed loops over connection counts, open loops at fixed rates).
//! Every answer is checked; after `/updates` the table is read back and checked against what the answers
//! said they wrote, then seeded again.

pub mod app;
pub mod chart;
mod load;
pub mod server;
mod stores;

use std::fmt::Write as _;
use std::io::BufRead as _;
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context as _;
use tandem_blocking::{BatchOptions, Database};
use tandem_sql::Dialect;
use tandem_sql::prelude::*;

use crate::report::{Measured, Record, Results};
use crate::{Ctx, Executor, url};
use app::{World, world};
use load::{Load, Outcome};
use server::Variant;
use tandem_blocking::Executor as _;

/// The results' scenarios of the service (what `results.csv` is read back as).
pub const SCENARIOS: [&str; 7] = [
    "service /ping",
    "service /db",
    "service /queries?q=20",
    "service /wait?ms=20",
    "service open /wait?ms=500",
    "service open /wait?ms=100",
    "service /updates?q=5",
];

/// The named figures of a service cell.
pub const DETAILS: [&str; 18] = [
    "req_per_s",
    "req_per_s_min",
    "req_per_s_max",
    "latency_p50_ms",
    "latency_p99_ms",
    "latency_p999_ms",
    "latency_max_ms",
    "errors",
    "server_rss_mib",
    "server_threads",
    "server_cores",
    "generator_cores",
    "in_flight",
    "rounds",
    "offered_per_s",
    "probes",
    "probe_p50_ms",
    "probe_p99_ms",
];

/// Database connections of every variant's pool.
pub const POOL: u32 = 16;

/// One measured load.
#[derive(Clone, Debug)]
pub struct Cell {
    /// The results' scenario: `service <target>`, `service open <target>`.
    pub scenario: &'static str,
    /// Path and query.
    pub target: &'static str,
    /// Connections.
    pub conns: usize,
    /// Requests per second per connection (open loop), or a closed loop.
    pub rate: Option<f64>,
    /// `/ping` probes beside the load.
    pub probes: usize,
    /// How long it runs.
    pub window: Duration,
}

/// What a run measures.
pub struct Plan {
    /// The loads, in order (`/updates` last: it changes the table, which is seeded again after it).
    pub cells: Vec<Cell>,
    /// Rounds: every variant runs every cell once a round, the median round kept.
    pub rounds: usize,
    /// The variants.
    pub variants: Vec<Variant>,
}

impl Plan {
    /// Every test type, closed loops at 16 to 4,096 connections and open loops with 256 to 4,096 requests
    /// waiting, `seconds` a cell.
    pub fn full(seconds: u64, rounds: usize) -> Plan {
        let w = Duration::from_secs(seconds.max(1));
        let closed = |scenario, target, conns: &'static [usize], probes| {
            conns.iter().map(move |&conns| Cell {
                scenario,
                target,
                conns,
                rate: None,
                probes,
                window: w,
            })
        };
        let mut cells: Vec<Cell> = Vec::new();
        cells.extend(closed("service /ping", "/ping", &[16, 256, 4_096], 0));
        cells.extend(closed("service /db", "/db", &[16, 256, 4_096], 4));
        cells.extend(closed(
            "service /queries?q=20",
            "/queries?q=20",
            &[16, 256],
            0,
        ));
        cells.extend(closed(
            "service /wait?ms=20",
            "/wait?ms=20",
            &[256, 4_096],
            0,
        ));
        // One request a second per connection, each waiting half a second: about half the connections'
        // requests in flight at once.
        cells.extend([256, 1_024, 4_096].map(|conns| Cell {
            scenario: "service open /wait?ms=500",
            target: "/wait?ms=500",
            conns,
            rate: Some(1.0),
            probes: 0,
            window: w.max(Duration::from_secs(4)),
        }));
        cells.extend(closed(
            "service /updates?q=5",
            "/updates?q=5",
            &[16, 256],
            0,
        ));
        Plan {
            cells,
            rounds: rounds.max(1),
            variants: Variant::ALL.to_vec(),
        }
    }

    /// The cells of these paths only (all when `paths` is empty); a path no cell serves is an error that
    /// lists the ones there are.
    pub fn only_paths(mut self, paths: &[String]) -> anyhow::Result<Plan> {
        if paths.is_empty() {
            return Ok(self);
        }
        let known: Vec<&str> = self.cells.iter().map(|c| c.target).collect();
        if let Some(unknown) = paths.iter().find(|p| !known.contains(&p.as_str())) {
            let mut names = known.clone();
            names.dedup();
            anyhow::bail!(
                "--paths: no cell serves {unknown:?}; the paths are {}",
                names.join(", ")
            );
        }
        self.cells.retain(|c| paths.iter().any(|p| p == c.target));
        Ok(self)
    }

    /// The main job's: a second each of `/db`, `/queries`, `/updates` and a short open loop on 16 to 64
    /// connections, four variants.
    pub fn short() -> Plan {
        let w = Duration::from_secs(1);
        let cell = |scenario, target, conns, rate, probes| Cell {
            scenario,
            target,
            conns,
            rate,
            probes,
            window: w,
        };
        Plan {
            cells: vec![
                cell("service /db", "/db", 16, None, 2),
                cell("service /queries?q=20", "/queries?q=20", 16, None, 0),
                cell(
                    "service open /wait?ms=100",
                    "/wait?ms=100",
                    64,
                    Some(5.0),
                    0,
                ),
                cell("service /updates?q=5", "/updates?q=5", 16, None, 0),
            ],
            rounds: 1,
            variants: vec![
                Variant::TandemAsync,
                Variant::RawSqlx,
                Variant::TandemBlockingThreads,
                Variant::RawThreads,
            ],
        }
    }
}

/// A server process of one variant; stopped when dropped.
struct Server {
    child: Child,
    addr: SocketAddr,
}

impl Server {
    fn start(variant: Variant, url: &str) -> anyhow::Result<Server> {
        let exe = std::env::current_exe().context("finding tandem-bench's own program")?;
        let mut child = Command::new(exe)
            .args(["serve-world", "--variant", &variant.arg(), "--url", url])
            .args(["--pool", &POOL.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .context("starting the service")?;
        let mut line = String::new();
        let stdout = child.stdout.take().expect("piped");
        std::io::BufReader::new(stdout).read_line(&mut line)?;
        let Some(addr) = line.trim().strip_prefix("listening ") else {
            let status = child.wait()?;
            anyhow::bail!("{} on {url} did not start ({status})", variant.name());
        };
        let addr = addr
            .parse()
            .with_context(|| format!("the service's address {line:?}"))?;
        Ok(Server { child, addr })
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Resident memory (MiB) and threads of process `pid`, from `/proc`; zeros where it cannot tell.
fn proc_sample(pid: u32) -> (f64, f64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (field("VmRSS:") / 1024.0, field("Threads:"))
}

/// CPU time (user and system, in seconds) process `pid` has used so far ("self" for this one), from
/// `/proc/<pid>/stat` at Linux's 100 ticks a second; 0 where it cannot tell.
fn cpu_seconds(pid: &str) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // After the command name (in brackets, which may hold spaces): state is field 3, utime 14, stime 15.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let tick = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (tick(11) + tick(12)) / 100.0
}

/// Drops, creates and seeds `world`.
fn seed_world(db: &Database) -> anyhow::Result<()> {
    db.execute(&world::table.drop_table())?;
    db.create_table(&world::table.create_table())?;
    db.repository::<World>()
        .batch_insert(&app::rows(), &BatchOptions::default())?;
    Ok(())
}

/// Every row of `world` as `(id, number)`.
fn read_world(db: &Database) -> anyhow::Result<Vec<(i32, i32)>> {
    Ok(db
        .fetch_all::<(i32, i32)>(&world::table.select((world::id, world::randomnumber)))?
        .into_iter()
        .collect())
}

/// One cell's measured rounds.
struct Seen {
    outcomes: Vec<(Outcome, Sample)>,
}

/// What was read off the processes during a load.
#[derive(Clone, Copy, Default)]
struct Sample {
    /// The server's resident memory (MiB) at three quarters of the window.
    rss_mib: f64,
    /// Its threads then.
    threads: f64,
    /// Cores the server kept busy over the load (CPU seconds ÷ wall seconds).
    server_cores: f64,
    /// Cores the load generator (this process) kept busy.
    generator_cores: f64,
}

impl Seen {
    /// The median round (by requests per second; by p99 for an open loop) as a record.
    fn record(&self, dialect: Dialect, variant: Variant, cell: &Cell) -> Option<Record> {
        let per_s = |o: &Outcome| o.ok as f64 / o.took.as_secs_f64();
        let mut order: Vec<&(Outcome, Sample)> = self.outcomes.iter().collect();
        if cell.rate.is_some() {
            order.sort_by(|a, b| {
                a.0.latencies
                    .quantile_ms(0.99)
                    .total_cmp(&b.0.latencies.quantile_ms(0.99))
            });
        } else {
            order.sort_by(|a, b| per_s(&a.0).total_cmp(&per_s(&b.0)));
        }
        let (o, sample) = *order.get(order.len() / 2)?;
        let per_request = o.took.checked_div(o.ok.max(1) as u32).unwrap_or(o.took);
        let q = app::Request::parse(cell.target).map_or(1, |r| match r {
            app::Request::Queries(n) | app::Request::Updates(n) => n as u64,
            _ => 1,
        });
        let mut details = vec![
            ("req_per_s", per_s(o)),
            ("req_per_s_min", per_s(&order[0].0)),
            ("req_per_s_max", per_s(&order[order.len() - 1].0)),
            ("latency_p50_ms", o.latencies.quantile_ms(0.5)),
            ("latency_p99_ms", o.latencies.quantile_ms(0.99)),
            ("latency_p999_ms", o.latencies.quantile_ms(0.999)),
            ("latency_max_ms", o.latencies.quantile_ms(1.0)),
            ("errors", o.errors as f64),
            ("server_rss_mib", sample.rss_mib),
            ("server_threads", sample.threads),
            ("server_cores", sample.server_cores),
            ("generator_cores", sample.generator_cores),
            ("in_flight", o.in_flight as f64),
            ("rounds", self.outcomes.len() as f64),
        ];
        if let Some(rate) = cell.rate {
            details.push(("offered_per_s", rate * cell.conns as f64));
        }
        if cell.probes > 0 {
            details.push(("probes", cell.probes as f64));
            details.push(("probe_p50_ms", o.probe.quantile_ms(0.5)));
            details.push(("probe_p99_ms", o.probe.quantile_ms(0.99)));
        }
        Some(Record {
            scenario: cell.scenario,
            db: dialect.name().into(),
            variant: variant.name().into(),
            rows: q,
            pool: POOL,
            parallelism: cell.conns as u32,
            time: Measured {
                median: per_request,
                min: per_request,
                max: per_request,
            },
            extra: Some(o.ok as f64),
            details,
        })
    }
}

/// This process's limit on open files (the soft one, which the server it starts inherits), from
/// `/proc/self/limits`; `None` where it cannot tell.
fn open_files_limit() -> Option<u64> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line.trim_start_matches("Max open files")
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Runs `plan` on every engine.
pub fn run(ctx: &mut Ctx, dbs: &[Dialect], plan: &Plan) -> anyhow::Result<()> {
    // Each connection is a file in the generator and another in the server: a limit below the largest
    // load would fail it minutes in, as an unrelated connect error.
    let needed = plan
        .cells
        .iter()
        .map(|c| c.conns + c.probes)
        .max()
        .unwrap_or(0) as u64
        + 256;
    if let Some(limit) = open_files_limit().filter(|l| *l < needed) {
        anyhow::bail!(
            "the service's largest load needs about {needed} open files per process and the limit is {limit}: raise it (`ulimit -n {needed}`) and run again"
        );
    }
    for &dialect in dbs {
        let url = url(dialect, &ctx.out);
        let db = Database::connect(&url).map_err(|e| anyhow::anyhow!("{dialect} at {url}: {e}"))?;
        seed_world(&db)?;
        let variants: Vec<Variant> = (plan.variants.iter().copied())
            .filter(|&v| !(dialect == Dialect::Sqlite && v == Variant::RawAsync))
            .filter(|&v| ctx.wants(v.name()))
            .filter(|&v| {
                let tandem_async = v == Variant::TandemAsync;
                let tandem_blocking = v.name().starts_with("tandem-blocking");
                (!tandem_async || ctx.runs(Executor::Async))
                    && (!tandem_blocking || ctx.runs(Executor::Blocking))
            })
            .collect();
        let mut seen: Vec<Vec<Seen>> = variants
            .iter()
            .map(|_| {
                plan.cells
                    .iter()
                    .map(|_| Seen {
                        outcomes: Vec::new(),
                    })
                    .collect()
            })
            .collect();
        for _ in 0..plan.rounds {
            for (vi, &variant) in variants.iter().enumerate() {
                for (ci, cell) in plan.cells.iter().enumerate() {
                    // A new server for each load: its memory and threads are this load's alone.
                    let server = Server::start(variant, &url)?;
                    let pid = server.child.id();
                    ctx.progress.set_message(format!(
                        "{} {} {} on {} connections",
                        cell.scenario,
                        dialect.name(),
                        variant.name(),
                        cell.conns
                    ));
                    let load = Load {
                        target: cell.target,
                        conns: cell.conns,
                        window: cell.window,
                        rate: cell.rate,
                        probes: cell.probes,
                    };
                    let sampled = Arc::new(Mutex::new((0.0, 0.0)));
                    let into = sampled.clone();
                    let (server_cpu, own_cpu) =
                        (cpu_seconds(&pid.to_string()), cpu_seconds("self"));
                    let outcome = ctx
                        .rt
                        .block_on(load::run(server.addr, &load, move || {
                            *into.lock().expect("no panics under the lock") = proc_sample(pid);
                        }))
                        .with_context(|| {
                            format!(
                                "{} on {} ({})",
                                variant.name(),
                                dialect.name(),
                                cell.scenario
                            )
                        })?;
                    let took = outcome.took.as_secs_f64();
                    let (rss_mib, threads) = *sampled.lock().expect("no panics under the lock");
                    let sample = Sample {
                        rss_mib,
                        threads,
                        server_cores: (cpu_seconds(&pid.to_string()) - server_cpu) / took,
                        generator_cores: (cpu_seconds("self") - own_cpu) / took,
                    };
                    if cell.target.starts_with("/updates") {
                        // Written rows are checked only when every request was answered: a request cut
                        // off may have written a number no answer reported.
                        if outcome.errors == 0 {
                            load::check_updates(&read_world(&db)?, &outcome.written).with_context(
                                || format!("{} on {}", variant.name(), dialect.name()),
                            )?;
                        }
                        seed_world(&db)?;
                    }
                    seen[vi][ci].outcomes.push((outcome, sample));
                }
            }
        }
        for (vi, &variant) in variants.iter().enumerate() {
            for (ci, cell) in plan.cells.iter().enumerate() {
                if let Some(r) = seen[vi][ci].record(dialect, variant, cell) {
                    crate::record(&ctx.progress, &mut ctx.results, r);
                }
            }
        }
        db.execute(&world::table.drop_table())?;
    }
    Ok(())
}

/// The service's cells, printed: requests per second and latencies per variant.
pub fn print(results: &Results) {
    let cells: Vec<&Record> = (results.records.iter())
        .filter(|r| r.scenario.starts_with("service"))
        .collect();
    if cells.is_empty() {
        return;
    }
    println!(
        "\nservice: requests/s and latency (ms) per variant; the server's memory and threads at 3/4 of the run; cores kept busy by the server / the load generator"
    );
    println!(
        "{:<27} {:<9} {:>5} {:<42} {:>9} {:>8} {:>8} {:>8} {:>6} {:>8} {:>7} {:>10}",
        "test",
        "db",
        "conns",
        "variant",
        "req/s",
        "p50",
        "p99",
        "p99.9",
        "errors",
        "RSS MiB",
        "threads",
        "cores s/g"
    );
    for r in cells {
        let d = |k: &str| r.detail(k).unwrap_or(0.0);
        println!(
            "{:<27} {:<9} {:>5} {:<42} {:>9.0} {:>8.2} {:>8.2} {:>8.2} {:>6} {:>8.1} {:>7} {:>4.1}/{:<4.1}",
            r.scenario.trim_start_matches("service "),
            r.db,
            r.parallelism,
            r.variant,
            d("req_per_s"),
            d("latency_p50_ms"),
            d("latency_p99_ms"),
            d("latency_p999_ms"),
            d("errors"),
            d("server_rss_mib"),
            d("server_threads"),
            d("server_cores"),
            d("generator_cores"),
        );
    }
}

/// Each distinct item once, in the order first met.
fn first_met<T: PartialEq>(items: impl Iterator<Item = T>) -> Vec<T> {
    let mut out = Vec::new();
    for i in items {
        if !out.contains(&i) {
            out.push(i);
        }
    }
    out
}

/// The service's tables for `results.md`: one per test type, each variant's requests per second (closed
/// loops) or p99 latency (open loops), tandem beside the same service by hand on its own driver.
pub fn markdown(results: &Results, md: &mut String) {
    let cells: Vec<&Record> = (results.records.iter())
        .filter(|r| r.scenario.starts_with("service"))
        .collect();
    if cells.is_empty() {
        return;
    }
    md.push_str("\n## service: TechEmpower's database tests over HTTP (axum on tokio, or a thread per connection)\n\nEach variant is a server process of its own on loopback, 16 database connections, under load from the benchmark's process (which shares the cores); every answer checked. Closed loops: requests per second, p99 in ms in brackets. Open loops (a fixed rate, latency counted from when each request was due): p99 and p99.9 in ms, the server's resident memory and threads. Variants: (a) tandem-async; raw async driver (tokio-postgres / mysql_async, a semaphore and a stack of connections); raw sqlx (its pool); (b) tandem-blocking via `run_blocking`; (c) tandem-blocking called in the async handler; (d) tandem-blocking on a thread-per-connection server; the raw blocking driver on the same server.\n");
    // In the order first met (the cells come engine by engine, variant by variant).
    let mut scenarios: Vec<&str> = Vec::new();
    for r in &cells {
        if !scenarios.contains(&r.scenario) {
            scenarios.push(r.scenario);
        }
    }
    for scenario in scenarios {
        let here: Vec<&&Record> = cells.iter().filter(|r| r.scenario == scenario).collect();
        let open = scenario.contains(" open ");
        let variants: Vec<&str> = Variant::ALL
            .iter()
            .map(|v| v.name())
            .filter(|v| here.iter().any(|r| r.variant == *v))
            .collect();
        let _ = write!(
            md,
            "\n### {}\n\n| engine | connections |",
            scenario.trim_start_matches("service ")
        );
        for v in &variants {
            let _ = write!(md, " {v} |");
        }
        md.push_str(" tandem-async ÷ raw async driver | tandem threads ÷ raw threads |\n|---|--:|");
        for _ in &variants {
            md.push_str("--:|");
        }
        md.push_str("--:|--:|\n");
        for (db, conns) in first_met(here.iter().map(|r| (r.db.as_str(), r.parallelism))) {
            let find = |v: &str| {
                here.iter()
                    .find(|r| r.db == db && r.parallelism == conns && r.variant == v)
            };
            let _ = write!(md, "| {db} | {conns} |");
            for v in &variants {
                let text = find(v).map_or("–".to_owned(), |r| {
                    let d = |k: &str| r.detail(k).unwrap_or(0.0);
                    let errors = if d("errors") > 0.0 {
                        format!(", {} errors", d("errors"))
                    } else {
                        String::new()
                    };
                    if open {
                        format!(
                            "{:.1} / {:.1} ms, {:.0} MiB, {:.0} threads{errors}",
                            d("latency_p99_ms"),
                            d("latency_p999_ms"),
                            d("server_rss_mib"),
                            d("server_threads")
                        )
                    } else {
                        format!("{:.0} ({:.1}){errors}", d("req_per_s"), d("latency_p99_ms"))
                    }
                });
                let _ = write!(md, " {text} |");
            }
            let per_s = |v: &str| find(v).and_then(|r| r.detail("req_per_s"));
            let share = |a: Option<f64>, b: Option<f64>| match (a, b) {
                (Some(a), Some(b)) if b > 0.0 && !open => format!("{:.2}", a / b),
                _ => "–".to_owned(),
            };
            let _ = writeln!(
                md,
                " {} | {} |",
                share(per_s("tandem-async"), per_s("raw async driver")),
                share(
                    per_s("tandem-blocking, thread per connection"),
                    per_s("raw blocking driver, thread per connection")
                )
            );
        }
        // The probes: how long a request with no database work waits beside the load, per variant.
        let probed: Vec<&&&Record> = here
            .iter()
            .filter(|r| r.detail("probes").is_some())
            .collect();
        if let Some(first) = probed.first() {
            let _ = writeln!(
                md,
                "\n`/ping` beside this load ({} connections at 50 requests/s each, open loop), p99 in ms:\n",
                first.detail("probes").unwrap_or(0.0)
            );
            for (db, conns) in first_met(probed.iter().map(|r| (r.db.as_str(), r.parallelism))) {
                let line: Vec<String> = (probed.iter())
                    .filter(|r| r.db == db && r.parallelism == conns)
                    .map(|r| {
                        format!(
                            "{} {:.2}",
                            r.variant,
                            r.detail("probe_p99_ms").unwrap_or(0.0)
                        )
                    })
                    .collect();
                let _ = writeln!(md, "- {db}, {conns} connections: {}", line.join("; "));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every load a plan runs is a scenario `results.csv` is read back as, and `/updates` runs last (it
    /// changes the table the loads after it would check against).
    #[test]
    fn plans_name_known_scenarios_and_update_last() {
        for plan in [Plan::full(1, 1), Plan::short()] {
            for c in &plan.cells {
                assert!(SCENARIOS.contains(&c.scenario), "{} unknown", c.scenario);
                assert_eq!(
                    c.scenario
                        .trim_start_matches("service ")
                        .trim_start_matches("open "),
                    c.target
                );
            }
            let first_update = plan
                .cells
                .iter()
                .position(|c| c.target.starts_with("/updates"))
                .unwrap();
            assert!(
                plan.cells[first_update..]
                    .iter()
                    .all(|c| c.target.starts_with("/updates"))
            );
        }
    }

    /// `--paths` keeps the cells of the paths named, in the plan's order, and names the paths there are
    /// when one is not.
    #[test]
    fn only_paths_keeps_the_cells_named() {
        let names = |p: &Plan| {
            p.cells
                .iter()
                .map(|c| (c.target, c.conns))
                .collect::<Vec<_>>()
        };
        let paths = ["/queries?q=20".to_string(), "/db".to_string()];
        let plan = Plan::full(1, 1).only_paths(&paths).unwrap();
        assert_eq!(
            names(&plan),
            [
                ("/db", 16),
                ("/db", 256),
                ("/db", 4_096),
                ("/queries?q=20", 16),
                ("/queries?q=20", 256)
            ]
        );
        assert_eq!(
            names(&Plan::full(1, 1).only_paths(&[]).unwrap()),
            names(&Plan::full(1, 1))
        );
        let err = Plan::full(1, 1)
            .only_paths(&["/dbs".to_string()])
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.contains("\"/dbs\"") && err.contains("/queries?q=20, "),
            "{err}"
        );
    }

    /// One table per test type, one row per engine and connection count, whatever order the cells came in.
    #[test]
    fn tables_have_a_row_per_engine_and_load() {
        let t = Duration::from_micros(50);
        let mut records = Vec::new();
        for db in ["sqlite", "postgres"] {
            for v in [Variant::TandemAsync, Variant::TandemBlockingThreads] {
                for conns in [16, 256] {
                    records.push(Record {
                        scenario: "service /db",
                        db: db.into(),
                        variant: v.name().into(),
                        rows: 1,
                        pool: POOL,
                        parallelism: conns,
                        time: Measured {
                            median: t,
                            min: t,
                            max: t,
                        },
                        extra: Some(1.0),
                        details: vec![("req_per_s", 1_000.0), ("latency_p99_ms", 2.0)],
                    });
                }
            }
        }
        let mut md = String::new();
        markdown(
            &Results {
                records,
                machine: Vec::new(),
            },
            &mut md,
        );
        assert_eq!(md.matches("### /db").count(), 1, "{md}");
        for row in [
            "| sqlite | 16 |",
            "| sqlite | 256 |",
            "| postgres | 16 |",
            "| postgres | 256 |",
        ] {
            assert_eq!(md.matches(row).count(), 1, "{row} in {md}");
        }
        assert!(md.contains("| 1000 (2.0) | 1000 (2.0) |"), "{md}");
    }

    /// A service cell's figures come back from `results.csv`, so `tandem-bench chart` redraws
    /// `service.svg` from a committed run.
    #[test]
    fn service_cells_read_back_with_their_figures() {
        let t = Duration::from_micros(50);
        let record = Record {
            scenario: "service /db",
            db: "postgres".into(),
            variant: Variant::TandemAsync.name().into(),
            rows: 1,
            pool: POOL,
            parallelism: 256,
            time: Measured {
                median: t,
                min: t,
                max: t,
            },
            extra: Some(20_000.0),
            details: DETAILS
                .iter()
                .enumerate()
                .map(|(i, k)| (*k, i as f64 + 0.5))
                .collect(),
        };
        let results = Results {
            records: vec![record],
            machine: Vec::new(),
        };
        let dir = std::env::temp_dir().join(format!("tandem-service-csv-{}", std::process::id()));
        let (_, csv) = results.write(&dir).unwrap();
        let back = Results::read_csv(&csv).unwrap();
        assert_eq!(back.records.len(), 1);
        let r = &back.records[0];
        assert_eq!(
            (r.scenario, r.parallelism, r.extra),
            ("service /db", 256, Some(20_000.0))
        );
        for (i, k) in DETAILS.iter().enumerate() {
            assert_eq!(r.detail(k), Some(i as f64 + 0.5), "{k}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
