//! `stream`: read `rows` rows through `find_all` on each executor, reporting rows/s and the peak growth of the
//! process's resident memory, next to `fetch_all` into a `Vec` (which must hold everything).

use std::time::{Duration, Instant};
use tandem_async::Executor as _;
use tandem_blocking::Executor as _;

use futures_util::StreamExt;
use tandem_batch::essay::{Source, benchmark_source, seed_rows};
use tandem_blocking::{BatchOptions, Database, Find, PoolConfig};
use tandem_sql::Dialect;
use tandem_sql::prelude::*;

use crate::report::{Measured, Record, rss};
use crate::{Ctx, Executor, seed, url};

fn once(d: Duration) -> Measured {
    Measured {
        median: d,
        min: d,
        max: d,
    }
}

fn check(n: usize, rows: usize) -> anyhow::Result<()> {
    if n != rows {
        return Err(anyhow::anyhow!(
            "stream verification failed: read {n} rows, expected {rows}"
        ));
    }
    Ok(())
}

/// Runs the scenario for every engine.
pub fn run(ctx: &mut Ctx, dbs: &[Dialect], rows: usize) -> anyhow::Result<()> {
    for &dialect in dbs {
        let url = url(dialect, &ctx.out);
        let db = Database::connect_with(&url, PoolConfig::default())
            .map_err(|e| anyhow::anyhow!("{dialect} at {url}: {e}"))?;
        seed::reset(&db)?;
        for part in seed_rows(rows).chunks(100_000) {
            db.repository::<Source>()
                .batch_insert(part, &BatchOptions::default())?;
        }
        let push = |ctx: &mut Ctx, variant: &str, took: Duration, growth: i64| {
            crate::record(
                &ctx.progress,
                &mut ctx.results,
                Record {
                    scenario: "stream",
                    db: dialect.name().into(),
                    variant: variant.into(),
                    rows: rows as u64,
                    pool: 10,
                    parallelism: 0,
                    time: once(took),
                    extra: Some(growth.max(0) as f64),
                    details: Vec::new(),
                },
            )
        };
        let find = || Find::<benchmark_source::table>::all();
        if ctx.runs(Executor::Blocking) {
            let (base, started) = (rss(), Instant::now());
            let mut peak = 0;
            let mut n = 0;
            for s in db.repository::<Source>().find_all(find())? {
                s?;
                n += 1;
                if n % 10_000 == 0 {
                    peak = peak.max(rss() - base);
                }
            }
            check(n, rows)?;
            push(ctx, "tandem-blocking find_all", started.elapsed(), peak);
            let (base, started) = (rss(), Instant::now());
            let all: Vec<Source> = db.fetch_all(&benchmark_source::table.select_all())?;
            let (took, growth) = (started.elapsed(), rss() - base);
            check(all.len(), rows)?;
            drop(all);
            push(ctx, "tandem-blocking fetch_all", took, growth);
        }
        if ctx.runs(Executor::Async) {
            let adb = ctx.rt.block_on(tandem_async::Database::connect_with(
                &url,
                PoolConfig::default(),
            ))?;
            let (took, peak, n) = ctx.rt.block_on(async {
                let (base, started) = (rss(), Instant::now());
                let mut peak = 0;
                let mut n = 0;
                let mut s = adb.repository::<Source>().find_all(find()).await?;
                while let Some(u) = s.next().await {
                    u?;
                    n += 1;
                    if n % 10_000 == 0 {
                        peak = peak.max(rss() - base);
                    }
                }
                Ok::<_, anyhow::Error>((started.elapsed(), peak, n))
            })?;
            check(n, rows)?;
            push(ctx, "tandem-async find_all", took, peak);
            let (base, started) = (rss(), Instant::now());
            let all: Vec<Source> = ctx
                .rt
                .block_on(adb.fetch_all(&benchmark_source::table.select_all()))?;
            let (took, growth) = (started.elapsed(), rss() - base);
            check(all.len(), rows)?;
            drop(all);
            push(ctx, "tandem-async fetch_all", took, growth);
        }
        db.execute(&benchmark_source::table.drop_table())?;
    }
    Ok(())
}
