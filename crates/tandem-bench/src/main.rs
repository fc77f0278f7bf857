//! `tandem-bench`: the essay's benchmark, reproduced and verified, with raw-driver and bulk-limit baselines
//! measured in the same run.
//!
//! With no arguments it runs a short matrix on embedded SQLite (a few minutes); `matrix --db
//! sqlite,postgres,mysql` runs the full one. Scenarios: `seed`, `e2e`, `stream`, `point`, `pool`, `service`. Every measured op is
//! verified (row counts and a checksum); a mismatch aborts the run. Results go to `target/tandem-bench/`
//! as `results.json` and `results.csv`, with the machine they were measured on, `results.md` (the essay's
//! tables beside tandem's) and one chart per workload (`seed.svg`, `e2e.svg`).

mod chart;
mod e2e;
mod essay;
mod instructions;
mod page;
mod point;
mod pool;
mod raw;
mod report;
mod seed;
mod service;
mod stream;

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use clap::{Args, Parser, Subcommand};
use report::Results;
use tandem_sql::Dialect;

/// The essay's benchmark, reproduced and verified.
#[derive(Parser, Debug)]
#[command(name = "tandem-bench", version, about)]
struct Cli {
    #[command(subcommand)]
    scenario: Option<Scenario>,
    #[command(flatten)]
    common: Common,
}

#[derive(Subcommand, Debug)]
enum Scenario {
    /// Insert `data_size` rows ("item-$i", i) in 1,000-row chunks, one transaction each.
    Seed(Sizes),
    /// The batch job over `data_size` source rows with `parallelism` partitions.
    E2e(Sizes),
    /// Read `rows` rows through `find_all` on each executor, next to `fetch_all` into a Vec.
    Stream {
        /// Rows to stream.
        #[arg(long, default_value_t = 1_000_000)]
        rows: usize,
    },
    /// Select one row by id out of 10,000 for `seconds`, with `workers` threads / tasks.
    Point {
        /// How long each variant runs in a round.
        #[arg(long, default_value_t = 2)]
        seconds: u64,
        /// Concurrent workers.
        #[arg(long, default_value_t = 8)]
        workers: usize,
        /// Rounds: tandem and the raw drivers take turns in each, the median round is kept.
        #[arg(long, default_value_t = 3)]
        rounds: usize,
    },
    /// Pool acquire/release throughput (hold 0, 1, 5 ms; bare pool vs the presets) and 64 workers
    /// contending for max 4, 8 and 16 connections (hold 10, 50 ms; default vs high_throughput).
    Pool {
        /// How long each cell runs, in milliseconds.
        #[arg(long, default_value_t = 1_000)]
        cell_ms: u64,
    },
    /// An HTTP service on loopback serving TechEmpower's database tests (`/db`, `/queries`, `/updates`) with
    /// `/wait` and `/ping`, in seven variants (tandem-async, tandem-blocking via `run_blocking`, on the event
    /// loop and on a thread-per-connection server, and by hand on the raw drivers), each in a process of its
    /// own, under closed loops of 16 to 4,096 connections and open loops with up to 2,048 waiting requests.
    Service {
        /// How long each load runs (open loops at least 4 s).
        #[arg(long, default_value_t = 1)]
        seconds: u64,
        /// Rounds: the variants take turns in each, the median round is kept.
        #[arg(long, default_value_t = 3)]
        rounds: usize,
        /// Measure only these paths (as the cells name them: `/db`, `/queries?q=20`, `/wait?ms=500`, …),
        /// comma-separated; every cell when absent.
        #[arg(long, value_delimiter = ',')]
        paths: Vec<String>,
    },
    /// The service's server for one variant (started by `service`; prints `listening <addr>`, serves until
    /// its stdin closes).
    #[command(hide = true)]
    ServeWorld(service::server::ServeArgs),
    /// Every scenario over the chosen sizes.
    Matrix(Sizes),
    /// Instructions per op of each variant, client side, counted by callgrind (valgrind must be installed):
    /// the same count for the same binary and input whatever else the machine is doing, so a 1.1x from
    /// the wall clock can be told from noise. Each variant runs twice under callgrind, and the difference
    /// over the ops between the two runs is its count per op (setup, seeding and connecting cancel out).
    /// Writes `instructions.md` and `instructions.csv` into `--out`.
    Instructions {
        /// Rows of the e2e job (one partition).
        #[arg(long, default_value_t = 10_000)]
        rows: usize,
    },
    /// Draw the charts (`seed.svg`, `e2e.svg`, `service.svg`, with the service's tables in `service.md`) of
    /// an earlier run's `results.csv` into `--out`, measuring
    /// nothing.
    Chart {
        /// The `results.csv` to read.
        from: PathBuf,
    },
}

#[derive(Args, Debug, Clone)]
struct Sizes {
    /// Rows per op.
    #[arg(long, value_delimiter = ',', default_values_t = [1_000usize, 10_000, 100_000])]
    data_size: Vec<usize>,
    /// Pool sizes.
    #[arg(long, value_delimiter = ',', default_values_t = [10u32])]
    pool_size: Vec<u32>,
    /// Partitions (e2e).
    #[arg(long, value_delimiter = ',', default_values_t = [1usize, 4, 8])]
    parallelism: Vec<usize>,
}

#[derive(Args, Debug, Clone)]
struct Common {
    /// Engines: sqlite, postgres, mysql.
    #[arg(long, global = true, value_delimiter = ',', default_values_t = [Db::Sqlite])]
    db: Vec<Db>,
    /// Executors: blocking, async.
    #[arg(long, global = true, value_delimiter = ',', default_values_t = [Executor::Blocking, Executor::Async])]
    executor: Vec<Executor>,
    /// Measured iterations per cell (after one warm-up).
    #[arg(long, global = true, default_value_t = 5)]
    iterations: usize,
    /// Where results go.
    #[arg(long, global = true, default_value = "target/tandem-bench")]
    out: PathBuf,
    /// The `tandem-peers` program (built from `peers/`): runs `seed` with sea-query + sqlx and diesel in the
    /// same run, beside tandem.
    #[arg(long, global = true)]
    peers: Option<PathBuf>,
    /// Measure only these variants of `e2e` and `point` (as the results name them: `tandem-async`,
    /// `raw-sqlx`, `raw sqlx tasks`, …); all when empty.
    #[arg(long, global = true, value_delimiter = ',')]
    only: Vec<String>,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum Db {
    Sqlite,
    Postgres,
    Mysql,
}

impl std::fmt::Display for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Db::Sqlite => "sqlite",
            Db::Postgres => "postgres",
            Db::Mysql => "mysql",
        })
    }
}

impl Db {
    fn dialect(self) -> Dialect {
        match self {
            Db::Sqlite => Dialect::Sqlite,
            Db::Postgres => Dialect::Postgres,
            Db::Mysql => Dialect::MySql,
        }
    }
}

/// Which executors a run measures.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Executor {
    /// tandem-blocking.
    Blocking,
    /// tandem-async.
    Async,
}

impl std::fmt::Display for Executor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Executor::Blocking => "blocking",
            Executor::Async => "async",
        })
    }
}

/// What every scenario needs.
pub struct Ctx {
    /// The runtime for async variants.
    pub rt: tokio::runtime::Runtime,
    /// Measured iterations.
    pub iterations: usize,
    /// Executors to measure.
    pub executors: Vec<Executor>,
    /// Where SQLite files and results go.
    pub out: PathBuf,
    /// Everything measured so far.
    pub results: Results,
    /// The peers program, if given.
    pub peers: Option<PathBuf>,
    /// The progress line while cells run.
    pub progress: indicatif::ProgressBar,
    /// The variants to measure (all when empty).
    pub only: Vec<String>,
}

impl Ctx {
    /// Keeps a measured cell and moves the progress line on.
    pub fn record(&mut self, r: report::Record) {
        self.progress.inc(1);
        self.progress
            .set_message(format!("{} {} {}", r.scenario, r.db, r.variant));
        self.results.records.push(r);
    }

    /// Whether `e` is measured.
    pub fn runs(&self, e: Executor) -> bool {
        self.executors.contains(&e)
    }

    /// Whether the variant named `variant` is measured (`--only`).
    pub fn wants(&self, variant: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|v| v == variant)
    }
}

/// Keeps a measured cell and moves the progress line on. Takes the two fields, not the whole context, so
/// the scenarios' recording closures borrow only these.
pub fn record(progress: &indicatif::ProgressBar, results: &mut Results, r: report::Record) {
    progress.inc(1);
    progress.set_message(format!("{} {} {}", r.scenario, r.db, r.variant));
    results.records.push(r);
}

/// The URL of an engine: a SQLite file under `out`, or the server from the environment. A server URL
/// without a TLS setting gets plain TCP (`sslmode=disable`, `ssl-mode=DISABLED`), as the raw-driver
/// baselines use: every driver in a comparison then speaks the same transport.
pub fn url(dialect: Dialect, out: &std::path::Path) -> String {
    let url = match dialect {
        Dialect::Sqlite => return format!("sqlite://{}", out.join("bench.db").display()),
        Dialect::Postgres => std::env::var("TANDEM_POSTGRES_URL")
            .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into()),
        Dialect::MySql => std::env::var("TANDEM_MYSQL_URL")
            .unwrap_or_else(|_| "mysql://root@127.0.0.1:3306/test".into()),
    };
    let Some(key) = tls_key(dialect) else {
        return url;
    };
    if url.contains(&format!("{key}=")) {
        return url;
    }
    let plain = tandem_core::TlsMode::Disable.spelling(dialect);
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}{key}={plain}")
}

/// The URL parameter that sets TLS on a server; none for SQLite.
pub fn tls_key(dialect: Dialect) -> Option<&'static str> {
    match dialect {
        Dialect::Postgres => Some("sslmode"),
        Dialect::MySql => Some("ssl-mode"),
        Dialect::Sqlite => None,
    }
}

/// The raw-driver baselines connect in plain TCP only: a URL that asks for TLS would compare unequal
/// transports, so it is refused with the reason.
pub fn plain_only(opts: &tandem_core::ConnectOptions) -> anyhow::Result<()> {
    if opts.tls == tandem_core::TlsMode::Disable {
        return Ok(());
    }
    Err(anyhow::anyhow!(
        "{}: the raw-driver baselines run in plain TCP; give the URL {}",
        opts.display,
        if opts.dialect == Dialect::Postgres {
            "sslmode=disable"
        } else {
            "ssl-mode=DISABLED"
        }
    ))
}

fn main() {
    let cli = Cli::parse();
    if let Err(e) = run(cli) {
        // The whole chain of causes, one after the other.
        eprintln!("tandem-bench: {e:#}");
        std::process::exit(1);
    }
}

fn run(cli: Cli) -> anyhow::Result<()> {
    if let Some(Scenario::ServeWorld(args)) = cli.scenario {
        return service::server::serve(args);
    }
    std::fs::create_dir_all(&cli.common.out)
        .with_context(|| format!("creating {}", cli.common.out.display()))?;
    if let Some(Scenario::Instructions { rows }) = &cli.scenario {
        let dbs: Vec<Dialect> = cli.common.db.iter().map(|d| d.dialect()).collect();
        return instructions::run(&dbs, *rows, &cli.common.out);
    }
    if let Some(Scenario::Chart { from }) = &cli.scenario {
        let results = Results::read_csv(from)?;
        let mut charts = chart::write(&results, &cli.common.out)?;
        for chart in &charts {
            println!("{}", chart.display());
        }
        let service_chart = service::chart::write(&results, &cli.common.out)?;
        charts.extend(service_chart.clone());
        let report = page::write(
            &cli.common.out,
            &essay::markdown(&results),
            &charts,
            &results.machine,
            &command_line(),
        )?;
        println!("{}", report.display());
        if let Some(chart) = service_chart {
            println!("{}", chart.display());
            // The service's tables too: they are drawn from the same figures.
            let mut md = String::new();
            service::markdown(&results, &mut md);
            let page = cli.common.out.join("service.md");
            std::fs::write(&page, md).with_context(|| format!("writing {}", page.display()))?;
            println!("{}", page.display());
        }
        return Ok(());
    }
    let mut ctx = Ctx {
        rt: tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()?,
        iterations: cli.common.iterations,
        executors: cli.common.executor.clone(),
        out: cli.common.out.clone(),
        results: Results::default(),
        peers: cli.common.peers.clone(),
        progress: indicatif::ProgressBar::new_spinner(),
        only: cli.common.only.clone(),
    };
    ctx.progress
        .set_style(indicatif::ProgressStyle::with_template(
            "{spinner} {elapsed_precise} {pos} cells measured · {msg}",
        )?);
    ctx.progress
        .enable_steady_tick(std::time::Duration::from_millis(120));
    let dbs: Vec<Dialect> = cli.common.db.iter().map(|d| d.dialect()).collect();
    ctx.results.machine.push((
        "cpus".into(),
        std::thread::available_parallelism()
            .map_or(0, |n| n.get())
            .to_string(),
    ));
    ctx.results
        .machine
        .push(("os".into(), std::env::consts::OS.into()));
    for &d in &dbs {
        let version = seed::engine_version(d, &url(d, &ctx.out))
            .unwrap_or_else(|e| format!("unavailable: {e}"));
        ctx.results.machine.push((d.name().into(), version));
    }
    match cli.scenario {
        Some(Scenario::Seed(s)) => seed::run(&mut ctx, &dbs, &s.data_size, &s.pool_size)?,
        Some(Scenario::E2e(s)) => {
            e2e::run(&mut ctx, &dbs, &s.data_size, &s.pool_size, &s.parallelism)?
        }
        Some(Scenario::Stream { rows }) => stream::run(&mut ctx, &dbs, rows)?,
        Some(Scenario::Point {
            seconds,
            workers,
            rounds,
        }) => point::run(&mut ctx, &dbs, seconds, workers, rounds)?,
        Some(Scenario::Pool { cell_ms }) => pool::run(
            &mut ctx,
            &dbs,
            &pool::Plan::full(Duration::from_millis(cell_ms), cli.common.iterations),
        )?,
        Some(Scenario::Service {
            seconds,
            rounds,
            paths,
        }) => {
            let plan = service::Plan::full(seconds, rounds).only_paths(&paths)?;
            service::run(&mut ctx, &dbs, &plan)?
        }
        Some(Scenario::Chart { .. } | Scenario::Instructions { .. } | Scenario::ServeWorld(_)) => {
            unreachable!("handled above")
        }
        Some(Scenario::Matrix(s)) => {
            seed::run(&mut ctx, &dbs, &s.data_size, &s.pool_size)?;
            e2e::run(&mut ctx, &dbs, &s.data_size, &s.pool_size, &s.parallelism)?;
            stream::run(&mut ctx, &dbs, 1_000_000)?;
            point::run(&mut ctx, &dbs, 2, 8, 3)?;
            pool::run(
                &mut ctx,
                &dbs,
                &pool::Plan::full(Duration::from_secs(1), cli.common.iterations),
            )?;
            service::run(&mut ctx, &dbs, &service::Plan::full(1, 3))?;
        }
        None => {
            // The newcomer's run: a short matrix on embedded SQLite.
            println!(
                "tandem-bench: a short matrix on embedded SQLite (`tandem-bench --help` for the full one)"
            );
            ctx.iterations = ctx.iterations.min(3);
            seed::run(&mut ctx, &dbs, &[1_000, 10_000, 100_000], &[10])?;
            e2e::run(&mut ctx, &dbs, &[10_000], &[10], &[1, 4])?;
            stream::run(&mut ctx, &dbs, 200_000)?;
            point::run(&mut ctx, &dbs, 1, 4, 1)?;
            pool::run(&mut ctx, &dbs, &pool::Plan::short())?;
            service::run(&mut ctx, &dbs, &service::Plan::short())?;
        }
    }
    ctx.progress.finish_and_clear();
    ctx.results.print();
    service::print(&ctx.results);
    let (json, csv) = ctx.results.write(&ctx.out)?;
    let mut charts = chart::write(&ctx.results, &ctx.out)?;
    charts.extend(service::chart::write(&ctx.results, &ctx.out)?);
    let results_md = ctx.out.join("results.md");
    let markdown = essay::markdown(&ctx.results);
    std::fs::write(&results_md, &markdown)
        .with_context(|| format!("writing {}", results_md.display()))?;
    println!(
        "\nresults: {}, {}, {}",
        json.display(),
        csv.display(),
        results_md.display()
    );
    for c in &charts {
        println!("charts:  {}", c.display());
    }
    for (k, v) in &ctx.results.machine {
        println!("  {k}: {v}");
    }
    let report = page::write(
        &ctx.out,
        &markdown,
        &charts,
        &ctx.results.machine,
        &command_line(),
    )?;
    println!("\nthe whole run on one page: {}", report.display());
    Ok(())
}

/// The command that made this run, as a user would type it (`tandem-bench` for the program's path).
fn command_line() -> String {
    let mut words: Vec<String> = std::env::args().collect();
    if let Some(first) = words.first_mut() {
        *first = "tandem-bench".to_owned();
    }
    words.join(" ")
}
