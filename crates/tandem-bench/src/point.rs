//! `point`: select one row by id out of 10,000, as many times as possible for `seconds`, with `workers`
//! threads (blocking) or tasks (async) — the essay's companion figure (platform threads vs virtual threads
//! vs R2DBC). Every answer is checked against the id asked for; each select's latency goes into an HDR
//! histogram (p50, p99, max in the results' details).

use std::time::{Duration, Instant};
use tandem_async::Executor as _;
use tandem_blocking::Executor as _;

use tandem_batch::essay::{Source, benchmark_source, seed_rows};
use tandem_blocking::{BatchOptions, Database, PoolConfig};
use tandem_sql::Dialect;

use crate::report::{Latencies, Measured, Record};
use crate::{Ctx, Executor, seed, url};

const ROWS: i64 = 10_000;

fn pick(state: &mut u64) -> i64 {
    // xorshift: cheap, deterministic per worker.
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    (*state % ROWS as u64) as i64 + 1
}

fn check(id: i64, got: Option<Source>) -> anyhow::Result<()> {
    match got {
        Some(s) if s.id == id && s.value as i64 == id => Ok(()),
        other => Err(anyhow::anyhow!(
            "point verification failed for id {id}: {other:?}"
        )),
    }
}

/// Runs the scenario for every engine.
pub fn run(ctx: &mut Ctx, dbs: &[Dialect], seconds: u64, workers: usize) -> anyhow::Result<()> {
    let window = Duration::from_secs(seconds.max(1));
    for &dialect in dbs {
        let url = url(dialect, &ctx.out);
        let config = PoolConfig {
            max_size: workers as u32,
            ..PoolConfig::default()
        };
        let db = Database::connect_with(&url, config.clone())
            .map_err(|e| anyhow::anyhow!("{dialect} at {url}: {e}"))?;
        seed::reset(&db)?;
        db.repository::<Source>()
            .batch_insert(&seed_rows(ROWS as usize), &BatchOptions::default())?;
        let push = |ctx: &mut Ctx, variant: &str, took: Duration, latencies: &Latencies| {
            let ops = latencies.len();
            crate::record(
                &ctx.progress,
                &mut ctx.results,
                Record {
                    scenario: "point",
                    db: dialect.name().into(),
                    variant: variant.into(),
                    rows: 1,
                    pool: workers as u32,
                    parallelism: workers as u32,
                    time: Measured {
                        median: took,
                        min: took,
                        max: took,
                    },
                    extra: Some(ops as f64),
                    details: vec![
                        ("latency_p50_ms", latencies.quantile_ms(0.5)),
                        ("latency_p99_ms", latencies.quantile_ms(0.99)),
                        ("latency_max_ms", latencies.quantile_ms(1.0)),
                    ],
                },
            )
        };
        if ctx.runs(Executor::Blocking) {
            let started = Instant::now();
            let mut all = Latencies::new();
            std::thread::scope(|s| -> anyhow::Result<()> {
                let handles: Vec<_> = (0..workers)
                    .map(|w| {
                        let db = &db;
                        s.spawn(move || -> anyhow::Result<Latencies> {
                            let repo = db.repository::<Source>();
                            let mut state = 0x9e37_79b9_7f4a_7c15 ^ (w as u64 + 1);
                            let mut seen = Latencies::new();
                            while started.elapsed() < window {
                                let id = pick(&mut state);
                                let op = Instant::now();
                                check(id, repo.find_by_id(id)?)?;
                                seen.record(op.elapsed());
                            }
                            Ok(seen)
                        })
                    })
                    .collect();
                for h in handles {
                    all.add(
                        &h.join()
                            .map_err(|_| anyhow::anyhow!("a point worker panicked"))??,
                    );
                }
                Ok(())
            })?;
            push(ctx, "tandem-blocking threads", started.elapsed(), &all);
        }
        if ctx.runs(Executor::Async) {
            let adb = ctx
                .rt
                .block_on(tandem_async::Database::connect_with(&url, config))?;
            let started = Instant::now();
            let all = ctx.rt.block_on(async {
                let tasks: Vec<_> = (0..workers)
                    .map(|w| {
                        let db = adb.clone();
                        tokio::spawn(async move {
                            let repo = db.repository::<Source>();
                            let mut state = 0x9e37_79b9_7f4a_7c15 ^ (w as u64 + 1);
                            let mut seen = Latencies::new();
                            while started.elapsed() < window {
                                let id = pick(&mut state);
                                let op = Instant::now();
                                check(id, repo.find_by_id(id).await?)?;
                                seen.record(op.elapsed());
                            }
                            Ok::<_, anyhow::Error>(seen)
                        })
                    })
                    .collect();
                let mut all = Latencies::new();
                for t in tasks {
                    all.add(&t.await??);
                }
                Ok::<_, anyhow::Error>(all)
            })?;
            push(ctx, "tandem-async tasks", started.elapsed(), &all);
        }
        db.execute(&tandem_sql::prelude::TableMethods::drop_table(
            benchmark_source::table,
        ))?;
    }
    Ok(())
}
