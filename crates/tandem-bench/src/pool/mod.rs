//! `pool`: the essay's pool measurements, on both executors (threads for blocking, tokio tasks for async).
//!
//! - throughput: 8 workers against a pool of 16, each op = check a connection out, `SELECT 1` (checked),
//!   hold it 0, 1 or 5 ms, give it back; the bare driver pool (no bound on waiters) beside the `default`
//!   and `high_throughput` presets, so the cost of the gate is measured in the same run.
//! - contention: 64 workers against max size 4, 8 and 16, holding 10 or 50 ms, `default` vs
//!   `high_throughput`: acquired, rejected and timed-out counts, waits of completed acquires (p50, p99,
//!   max) and how long a rejection takes (p99). A rejected worker yields and tries again at once, as the
//!   essay's harness did.
//!
//! Every cell is checked: each `SELECT 1` must return 1, and the pool's own counters must agree with what
//! the workers saw (rejections and timeouts exactly, acquires at least).
//!
//! The hold models work the caller does elsewhere while it keeps the connection — waiting for another
//! service's answer — that answers after exactly `hold`. It is timed the same way on both sides: a thread
//! sleeps `hold` (a blocking worker in its own thread, an async worker in one of tokio's blocking threads,
//! which then wakes the task as an I/O answer would). tokio's timer is not used for it: it rounds every
//! sleep up to its next millisecond tick, so a 1 ms hold would last 1–2 ms on the async side only and
//! measure the timer, not the executor. Each cell records the holds it measured (`hold_p50_ms`).

use std::time::{Duration, Instant};
use tandem_async::Executor as _;

use tandem_blocking::Executor as _;
use tandem_blocking::{Error, PoolConfig, PoolMetrics};
use tandem_sql::{Dialect, raw};

use crate::report::{Latencies, Measured, Record, Results};
use crate::{Ctx, Executor, url};

mod tables;

pub use tables::{find, print};

/// The pool presets a cell runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Preset {
    /// `PoolConfig::default()` with no bound on waiters: r2d2's and sqlx's own unbounded queue; on the async
    /// executor's own pools (no queue of their own), its gate with no limit on waiters.
    Bare,
    /// `PoolConfig::default()`.
    Default,
    /// `PoolConfig::high_throughput(max_size)`.
    HighThroughput,
}

impl Preset {
    fn name(self) -> &'static str {
        match self {
            Preset::Bare => "bare",
            Preset::Default => "default",
            Preset::HighThroughput => "high-throughput",
        }
    }

    fn config(self, max_size: u32) -> PoolConfig {
        match self {
            Preset::Bare => PoolConfig {
                max_size,
                max_pending: None,
                ..PoolConfig::default()
            },
            Preset::Default => PoolConfig {
                max_size,
                ..PoolConfig::default()
            },
            Preset::HighThroughput => PoolConfig::high_throughput(max_size),
        }
    }
}

/// Which cells a run measures.
pub struct Plan {
    /// How long each cell runs.
    pub cell: Duration,
    /// Rounds of the hold-0 cells, where the gate's cost shows most (median kept).
    pub rounds: usize,
    /// Holds (ms) of the throughput cells.
    pub holds: Vec<u64>,
    /// (max size, hold ms) of the contention cells.
    pub contention: Vec<(u32, u64)>,
}

impl Plan {
    /// The essay's full set.
    pub fn full(cell: Duration, rounds: usize) -> Plan {
        Plan {
            cell,
            rounds,
            holds: vec![0, 1, 5],
            contention: [4, 8, 16]
                .into_iter()
                .flat_map(|m| [(m, 10), (m, 50)])
                .collect(),
        }
    }

    /// The main job's short set: the gate's cost and the overload cell.
    pub fn short() -> Plan {
        Plan {
            cell: Duration::from_millis(300),
            rounds: 5,
            holds: vec![0],
            contention: vec![(4, 10)],
        }
    }
}

/// Workers and pool size of the throughput cells (the essay's 8 JMH threads).
const WORKERS: usize = 8;
const THROUGHPUT_POOL: u32 = 16;
/// Workers of the contention cells.
const CROWD: usize = 64;

/// What the workers of one cell saw.
struct Seen {
    acquired: u64,
    rejected: u64,
    timed_out: u64,
    /// Waits of completed acquires.
    waits: Latencies,
    /// How long each rejection took.
    rejections: Latencies,
    /// How long each hold lasted, as the worker saw it.
    holds: Latencies,
}

impl Default for Seen {
    fn default() -> Self {
        Seen {
            acquired: 0,
            rejected: 0,
            timed_out: 0,
            waits: Latencies::new(),
            rejections: Latencies::new(),
            holds: Latencies::new(),
        }
    }
}

impl Seen {
    fn add(&mut self, other: Seen) {
        self.acquired += other.acquired;
        self.rejected += other.rejected;
        self.timed_out += other.timed_out;
        self.waits.add(&other.waits);
        self.rejections.add(&other.rejections);
        self.holds.add(&other.holds);
    }

    /// Counts one op: a connection (with how long its acquire waited, the hold excluded), a rejection or a
    /// timeout; `Err` for anything else.
    fn note(&mut self, started: Instant, outcome: Result<Duration, Error>) -> anyhow::Result<()> {
        match outcome {
            Ok(waited) => {
                self.acquired += 1;
                self.waits.record(waited);
            }
            Err(Error::PoolSaturated { .. }) => {
                self.rejected += 1;
                self.rejections.record(started.elapsed());
            }
            Err(Error::PoolTimeout { .. }) => self.timed_out += 1,
            Err(e) => return Err(anyhow::anyhow!("pool: {e}")),
        }
        Ok(())
    }
}

fn check_one(one: (i64,)) -> Result<(), Error> {
    if one.0 == 1 {
        Ok(())
    } else {
        Err(Error::Usage(format!("SELECT 1 returned {}", one.0)))
    }
}

/// One cell on the blocking executor: `workers` threads until `cell` has passed.
fn blocking_cell(
    db: &tandem_blocking::Database,
    workers: usize,
    hold: Duration,
    cell: Duration,
) -> anyhow::Result<(Seen, Duration)> {
    let started = Instant::now();
    let until = started + cell;
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                s.spawn(move || -> anyhow::Result<Seen> {
                    let mut seen = Seen::default();
                    let select = raw("SELECT 1", vec![]);
                    while Instant::now() < until {
                        let started = Instant::now();
                        let outcome = db.checkout().and_then(|c| {
                            let waited = started.elapsed();
                            check_one(c.fetch_one(&select)?)?;
                            if !hold.is_zero() {
                                let held = Instant::now();
                                std::thread::sleep(hold);
                                seen.holds.record(held.elapsed());
                            }
                            Ok(waited)
                        });
                        let rejected = matches!(outcome, Err(Error::PoolSaturated { .. }));
                        seen.note(started, outcome)?;
                        if rejected {
                            std::thread::yield_now();
                        }
                    }
                    Ok(seen)
                })
            })
            .collect();
        let mut all = Seen::default();
        for h in handles {
            all.add(
                h.join()
                    .map_err(|_| anyhow::anyhow!("a pool worker panicked"))??,
            );
        }
        Ok((all, started.elapsed()))
    })
}

/// One cell on the async executor: `workers` tasks until `cell` has passed.
fn async_cell(
    rt: &tokio::runtime::Runtime,
    db: &tandem_async::Database,
    workers: usize,
    hold: Duration,
    cell: Duration,
) -> anyhow::Result<(Seen, Duration)> {
    let started = Instant::now();
    let until = started + cell;
    rt.block_on(async {
        let tasks: Vec<_> = (0..workers)
            .map(|_| {
                let db = db.clone();
                tokio::spawn(async move {
                    let mut seen = Seen::default();
                    let select = raw("SELECT 1", vec![]);
                    while Instant::now() < until {
                        let started = Instant::now();
                        let outcome = async {
                            let c = db.checkout().await?;
                            let waited = started.elapsed();
                            check_one(c.fetch_one(&select).await?)?;
                            if !hold.is_zero() {
                                let held = Instant::now();
                                tokio::task::spawn_blocking(move || std::thread::sleep(hold))
                                    .await
                                    .map_err(|e| Error::Usage(format!("the hold failed: {e}")))?;
                                seen.holds.record(held.elapsed());
                            }
                            Ok(waited)
                        }
                        .await;
                        let rejected = matches!(outcome, Err(Error::PoolSaturated { .. }));
                        seen.note(started, outcome)?;
                        if rejected {
                            // A refusal returns without a suspension point: let the holders run.
                            tokio::task::yield_now().await;
                        }
                    }
                    Ok::<_, anyhow::Error>(seen)
                })
            })
            .collect();
        let mut all = Seen::default();
        for t in tasks {
            all.add(t.await??);
        }
        Ok((all, started.elapsed()))
    })
}

/// The pool's own counters must agree with what the workers saw.
fn verify(
    what: &str,
    preset: Preset,
    before: &PoolMetrics,
    after: &PoolMetrics,
    seen: &Seen,
) -> anyhow::Result<()> {
    let fail = |m: String| Err(anyhow::anyhow!("pool verification failed ({what}): {m}"));
    if seen.acquired == 0 {
        return fail("no acquire completed".into());
    }
    if after.in_use != 0 || after.waiting != 0 || after.size > after.max_size {
        return fail(format!("the pool did not settle: {after:?}"));
    }
    if preset != Preset::Bare {
        let d = |a: u64, b: u64| a - b;
        if d(after.rejected, before.rejected) != seen.rejected
            || d(after.timed_out, before.timed_out) != seen.timed_out
            || d(after.acquired, before.acquired) < seen.acquired
        {
            return fail(format!(
                "workers saw {} acquired / {} rejected / {} timed out, the pool counted {} / {} / {}",
                seen.acquired,
                seen.rejected,
                seen.timed_out,
                d(after.acquired, before.acquired),
                d(after.rejected, before.rejected),
                d(after.timed_out, before.timed_out)
            ));
        }
    } else if seen.rejected > 0 {
        return fail("a pool without admission control rejected".into());
    }
    Ok(())
}

struct Cell {
    executor: Executor,
    preset: Preset,
    max_size: u32,
    workers: usize,
    hold_ms: u64,
}

fn measure(ctx: &Ctx, url: &str, c: &Cell, cell: Duration) -> anyhow::Result<(Seen, Duration)> {
    let config = c.preset.config(c.max_size);
    let hold = Duration::from_millis(c.hold_ms);
    let what = format!(
        "{} {} max {} hold {} ms",
        c.executor,
        c.preset.name(),
        c.max_size,
        c.hold_ms
    );
    let (seen, elapsed, before, after) = match c.executor {
        Executor::Blocking => {
            let db = tandem_blocking::Database::connect_with(url, config)
                .map_err(|e| anyhow::anyhow!("{url}: {e}"))?;
            let before = db.pool_metrics();
            let (seen, elapsed) = blocking_cell(&db, c.workers, hold, cell)?;
            (seen, elapsed, before, db.pool_metrics())
        }
        Executor::Async => {
            let db = ctx
                .rt
                .block_on(tandem_async::Database::connect_with(url, config))
                .map_err(|e| anyhow::anyhow!("{url}: {e}"))?;
            let before = db.pool_metrics();
            let (seen, elapsed) = async_cell(&ctx.rt, &db, c.workers, hold, cell)?;
            // sqlx hands connections back on a task of its own: let the last ones land.
            let settle = Instant::now();
            let mut after = db.pool_metrics();
            while after.in_use != 0 && settle.elapsed() < Duration::from_secs(1) {
                std::thread::sleep(Duration::from_millis(1));
                after = db.pool_metrics();
            }
            (seen, elapsed, before, after)
        }
    };
    verify(&what, c.preset, &before, &after, &seen)?;
    Ok((seen, elapsed))
}

fn record(
    ctx: &mut Ctx,
    dialect: Dialect,
    scenario: &'static str,
    c: &Cell,
    seen: &Seen,
    took: Duration,
) {
    let secs = took.as_secs_f64();
    let details = vec![
        ("hold_ms", c.hold_ms as f64),
        ("acquired", seen.acquired as f64),
        ("rejected", seen.rejected as f64),
        ("timed_out", seen.timed_out as f64),
        ("acquired_per_s", seen.acquired as f64 / secs),
        ("rejected_per_s", seen.rejected as f64 / secs),
        ("wait_p50_ms", seen.waits.quantile_ms(0.5)),
        ("wait_p99_ms", seen.waits.quantile_ms(0.99)),
        ("wait_max_ms", seen.waits.quantile_ms(1.0)),
        ("reject_p99_ms", seen.rejections.quantile_ms(0.99)),
        ("hold_p50_ms", seen.holds.quantile_ms(0.5)),
        ("hold_p99_ms", seen.holds.quantile_ms(0.99)),
    ];
    crate::record(
        &ctx.progress,
        &mut ctx.results,
        Record {
            scenario,
            db: dialect.name().into(),
            variant: variant(c.executor, c.preset, c.hold_ms),
            rows: 0,
            pool: c.max_size,
            parallelism: c.workers as u32,
            time: Measured {
                median: took,
                min: took,
                max: took,
            },
            extra: Some(seen.acquired as f64),
            details,
        },
    );
}

/// The variant name of a pool cell.
pub fn variant(executor: Executor, preset: Preset, hold_ms: u64) -> String {
    format!("{executor} {} hold {hold_ms}ms", preset.name())
}

/// Runs the scenario for every engine.
pub fn run(ctx: &mut Ctx, dbs: &[Dialect], plan: &Plan) -> anyhow::Result<()> {
    let executors: Vec<Executor> = [Executor::Blocking, Executor::Async]
        .into_iter()
        .filter(|e| ctx.runs(*e))
        .collect();
    for &dialect in dbs {
        let url = url(dialect, &ctx.out);
        for &executor in &executors {
            for &hold_ms in &plan.holds {
                // The three presets of a hold run in turn, `plan.rounds` times at hold 0 (where the gate's
                // cost shows most), and the median throughput of each is kept.
                let rounds = if hold_ms == 0 { plan.rounds.max(1) } else { 1 };
                let presets = [Preset::Bare, Preset::Default, Preset::HighThroughput];
                let mut runs: Vec<Vec<(Seen, Duration)>> =
                    presets.iter().map(|_| Vec::new()).collect();
                for round in 0..rounds {
                    // Each round starts with another preset, so no preset always runs first or last.
                    for k in 0..presets.len() {
                        let i = (k + round) % presets.len();
                        let preset = presets[i];
                        let c = Cell {
                            executor,
                            preset,
                            max_size: THROUGHPUT_POOL,
                            workers: WORKERS,
                            hold_ms,
                        };
                        runs[i].push(measure(ctx, &url, &c, plan.cell)?);
                    }
                }
                for (i, mut cells) in runs.into_iter().enumerate() {
                    cells.sort_by(|a, b| {
                        let rate = |x: &(Seen, Duration)| x.0.acquired as f64 / x.1.as_secs_f64();
                        rate(a).total_cmp(&rate(b))
                    });
                    let (seen, took) = &cells[cells.len() / 2];
                    let c = Cell {
                        executor,
                        preset: presets[i],
                        max_size: THROUGHPUT_POOL,
                        workers: WORKERS,
                        hold_ms,
                    };
                    record(ctx, dialect, "pool", &c, seen, *took);
                }
            }
            for &(max_size, hold_ms) in &plan.contention {
                for preset in [Preset::Default, Preset::HighThroughput] {
                    let c = Cell {
                        executor,
                        preset,
                        max_size,
                        workers: CROWD,
                        hold_ms,
                    };
                    let (seen, took) = measure(ctx, &url, &c, plan.cell)?;
                    record(ctx, dialect, "pool-contention", &c, &seen, took);
                }
            }
        }
    }
    Ok(())
}
