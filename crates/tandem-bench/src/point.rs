//! `point`: select one row by id out of 10,000, as many times as possible for `seconds`, with `workers`
//! threads (blocking) or tasks (async) — the essay's companion figure (platform threads vs virtual threads
//! vs R2DBC). Every answer is checked against the id asked for.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tandem_async::Executor as _;
use tandem_blocking::Executor as _;

use tandem_batch::essay::{Source, benchmark_source, seed_rows};
use tandem_blocking::{BatchOptions, Database, PoolConfig};
use tandem_sql::Dialect;

use crate::report::{Measured, Record};
use crate::{Ctx, Executor, seed, url};

const ROWS: i64 = 10_000;

fn pick(state: &mut u64) -> i64 {
    // xorshift: cheap, deterministic per worker.
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    (*state % ROWS as u64) as i64 + 1
}

fn check(id: i64, got: Option<Source>) -> Result<(), String> {
    match got {
        Some(s) if s.id == id && s.value as i64 == id => Ok(()),
        other => Err(format!("point verification failed for id {id}: {other:?}")),
    }
}

/// Runs the scenario for every engine.
pub fn run(ctx: &mut Ctx, dbs: &[Dialect], seconds: u64, workers: usize) -> Result<(), String> {
    let window = Duration::from_secs(seconds.max(1));
    for &dialect in dbs {
        let url = url(dialect, &ctx.out);
        let config = PoolConfig {
            max_size: workers as u32,
            ..PoolConfig::default()
        };
        let db = Database::connect_with(&url, config.clone())
            .map_err(|e| format!("{dialect} at {url}: {e}"))?;
        seed::reset(&db)?;
        db.repository::<Source>()
            .batch_insert(&seed_rows(ROWS as usize), &BatchOptions::default())
            .map_err(|e| e.to_string())?;
        let push = |ctx: &mut Ctx, variant: &str, took: Duration, ops: u64| {
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
                    details: Vec::new(),
                },
            )
        };
        if ctx.runs(Executor::Blocking) {
            let done = AtomicU64::new(0);
            let started = Instant::now();
            std::thread::scope(|s| -> Result<(), String> {
                let handles: Vec<_> = (0..workers)
                    .map(|w| {
                        let (db, done) = (&db, &done);
                        s.spawn(move || -> Result<(), String> {
                            let repo = db.repository::<Source>();
                            let mut state = 0x9e37_79b9_7f4a_7c15 ^ (w as u64 + 1);
                            while started.elapsed() < window {
                                let id = pick(&mut state);
                                check(id, repo.find_by_id(id).map_err(|e| e.to_string())?)?;
                                done.fetch_add(1, Ordering::Relaxed);
                            }
                            Ok(())
                        })
                    })
                    .collect();
                for h in handles {
                    h.join()
                        .map_err(|_| "a point worker panicked".to_string())??;
                }
                Ok(())
            })?;
            push(
                ctx,
                "tandem-blocking threads",
                started.elapsed(),
                done.load(Ordering::Relaxed),
            );
        }
        if ctx.runs(Executor::Async) {
            let adb = ctx
                .rt
                .block_on(tandem_async::Database::connect_with(&url, config))
                .map_err(|e| e.to_string())?;
            let done = Arc::new(AtomicU64::new(0));
            let started = Instant::now();
            ctx.rt.block_on(async {
                let tasks: Vec<_> = (0..workers)
                    .map(|w| {
                        let (db, done) = (adb.clone(), done.clone());
                        tokio::spawn(async move {
                            let repo = db.repository::<Source>();
                            let mut state = 0x9e37_79b9_7f4a_7c15 ^ (w as u64 + 1);
                            while started.elapsed() < window {
                                let id = pick(&mut state);
                                check(id, repo.find_by_id(id).await.map_err(|e| e.to_string())?)?;
                                done.fetch_add(1, Ordering::Relaxed);
                            }
                            Ok::<_, String>(())
                        })
                    })
                    .collect();
                for t in tasks {
                    t.await.map_err(|e| e.to_string())??;
                }
                Ok::<_, String>(())
            })?;
            push(
                ctx,
                "tandem-async tasks",
                started.elapsed(),
                done.load(Ordering::Relaxed),
            );
        }
        db.execute(&tandem_sql::prelude::TableMethods::drop_table(
            benchmark_source::table,
        ))
        .map_err(|e| e.to_string())?;
    }
    Ok(())
}
