//! `point`: select one row by id out of 10,000, as many times as possible for `seconds`, with `workers`
//! threads (blocking) or tasks (async) — the essay's companion figure (platform threads vs virtual threads
//! vs R2DBC). Every answer is checked against the id asked for; each select's latency goes into an HDR
//! histogram (p50, p99, max in the results' details).
//!
//! In the same run, the raw drivers do the same selects with no tandem layer, as their users would write
//! them: the blocking driver with one connection per thread and a prepared statement it keeps (rusqlite,
//! `postgres`, `mysql`), and sqlx with a pool of `workers` connections and `query_as(..).fetch_optional`.
//! On the servers, the other async drivers a user would weigh (tokio-postgres, mysql_async) run too, one
//! connection per task, so the tables show where the async limit is the driver's.
//! tandem's figures are printed as a share of them. tandem-blocking runs twice: through the pool (a
//! checkout per select, as `Database` does) and on one connection per worker checked out beforehand —
//! what the pool costs is the difference.

use std::time::{Duration, Instant};
use tandem_async::Executor as _;
use tandem_blocking::Executor as _;

use sqlx::{mysql::MySqlPoolOptions, postgres::PgPoolOptions, sqlite::SqlitePoolOptions};
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

/// The select the raw drivers run (`?` or `$1`).
fn select_sql(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::Postgres => "SELECT id, name, value FROM benchmark_source WHERE id = $1",
        _ => "SELECT id, name, value FROM benchmark_source WHERE id = ?",
    }
}

fn source((id, name, value): (i64, String, i32)) -> Source {
    Source { id, name, value }
}

/// `workers` threads, each with its own `conn`, selecting for `window`; the latencies of all.
fn on_threads<C: Send>(
    conns: Vec<C>,
    window: Duration,
    select: impl Fn(&mut C, i64) -> anyhow::Result<Option<Source>> + Sync,
) -> anyhow::Result<(Duration, Latencies)> {
    let started = Instant::now();
    let mut all = Latencies::new();
    std::thread::scope(|s| -> anyhow::Result<()> {
        let select = &select;
        let handles: Vec<_> = conns
            .into_iter()
            .enumerate()
            .map(|(w, mut conn)| {
                s.spawn(move || -> anyhow::Result<Latencies> {
                    let mut state = 0x9e37_79b9_7f4a_7c15 ^ (w as u64 + 1);
                    let mut seen = Latencies::new();
                    while started.elapsed() < window {
                        let id = pick(&mut state);
                        let op = Instant::now();
                        check(id, select(&mut conn, id)?)?;
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
    Ok((started.elapsed(), all))
}

/// The raw blocking driver: one connection per thread, its statement prepared once.
fn raw_threads(
    dialect: Dialect,
    url: &str,
    workers: usize,
    window: Duration,
) -> anyhow::Result<(&'static str, Duration, Latencies)> {
    let opts = tandem_core::ConnectOptions::parse(url)?;
    let sql = select_sql(dialect);
    Ok(match dialect {
        Dialect::Sqlite => {
            let conns = (0..workers)
                .map(|_| crate::seed::sqlite_conn(&opts))
                .collect::<anyhow::Result<Vec<_>>>()?;
            let (took, l) = on_threads(conns, window, |c, id| {
                use rusqlite::OptionalExtension;
                let mut stmt = c.prepare_cached(sql)?;
                Ok(stmt
                    .query_row([id], |r| Ok(source((r.get(0)?, r.get(1)?, r.get(2)?))))
                    .optional()?)
            })?;
            ("raw rusqlite threads", took, l)
        }
        Dialect::Postgres => {
            let conns = (0..workers)
                .map(|_| {
                    let mut c = crate::seed::pg_client(&opts)?;
                    let stmt = c.prepare(sql)?;
                    Ok((c, stmt))
                })
                .collect::<anyhow::Result<Vec<_>>>()?;
            let (took, l) = on_threads(conns, window, |(c, stmt), id| {
                Ok(c.query_opt(&*stmt, &[&id])?
                    .map(|r| source((r.get(0), r.get(1), r.get(2)))))
            })?;
            ("raw postgres threads", took, l)
        }
        Dialect::MySql => {
            let conns = (0..workers)
                .map(|_| crate::seed::mysql_conn(&opts))
                .collect::<anyhow::Result<Vec<_>>>()?;
            let (took, l) = on_threads(conns, window, |c, id| {
                use mysql::prelude::Queryable;
                Ok(c.exec_first::<(i64, String, i32), _, _>(sql, (id,))?
                    .map(source))
            })?;
            ("raw mysql threads", took, l)
        }
    })
}

/// One task's selects: ids from worker `w`'s sequence, each looked up by `select` and checked, until
/// `window` has passed since `started`; their latencies.
async fn select_until<F: Future<Output = anyhow::Result<Option<Source>>>>(
    w: usize,
    started: Instant,
    window: Duration,
    select: impl Fn(i64) -> F,
) -> anyhow::Result<Latencies> {
    let mut state = 0x9e37_79b9_7f4a_7c15 ^ (w as u64 + 1);
    let mut seen = Latencies::new();
    while started.elapsed() < window {
        let id = pick(&mut state);
        let op = Instant::now();
        check(id, select(id).await?)?;
        seen.record(op.elapsed());
    }
    Ok(seen)
}

/// The latencies of every task, together.
async fn gather(
    tasks: Vec<tokio::task::JoinHandle<anyhow::Result<Latencies>>>,
) -> anyhow::Result<Latencies> {
    let mut all = Latencies::new();
    for t in tasks {
        all.add(&t.await??);
    }
    Ok(all)
}

/// sqlx with a pool of `workers` connections: `query_as(..).fetch_optional(&pool)` in `workers` tasks.
macro_rules! sqlx_tasks {
    ($pool_options:ty, $connect:expr, $run:expr) => {{
        let (sql, workers, window) = $run;
        let n = workers as u32;
        let pool = <$pool_options>::new()
            .max_connections(n)
            .min_connections(n)
            .connect_with($connect)
            .await?;
        let started = Instant::now();
        let tasks = (0..workers).map(|w| {
            let pool = pool.clone();
            tokio::spawn(async move {
                let pool = &pool;
                select_until(w, started, window, move |id| async move {
                    let row = sqlx::query_as::<_, (i64, String, i32)>(sql)
                        .bind(id)
                        .fetch_optional(pool)
                        .await?;
                    Ok(row.map(source))
                })
                .await
            })
        });
        let all = gather(tasks.collect()).await?;
        Ok::<_, anyhow::Error>((started.elapsed(), all))
    }};
}

/// Raw sqlx on `dialect`.
fn raw_sqlx(
    rt: &tokio::runtime::Runtime,
    dialect: Dialect,
    url: &str,
    workers: usize,
    window: Duration,
) -> anyhow::Result<(Duration, Latencies)> {
    let opts = tandem_core::ConnectOptions::parse(url)?;
    crate::plain_only(&opts)?;
    let run = (select_sql(dialect), workers, window);
    rt.block_on(async {
        match dialect {
            Dialect::Sqlite => {
                sqlx_tasks!(SqlitePoolOptions, seed::sqlx_sqlite_options(&opts), run)
            }
            Dialect::Postgres => sqlx_tasks!(PgPoolOptions, seed::sqlx_pg_options(&opts), run),
            Dialect::MySql => sqlx_tasks!(MySqlPoolOptions, seed::sqlx_mysql_options(&opts), run),
        }
    })
}

/// The other async drivers a user would pick on a server — tokio-postgres, mysql_async — with one
/// connection per task and its statement prepared once (as a pool such as deadpool would hand them out
/// held): the async side's counterpart of the raw blocking driver's threads. None on SQLite.
fn raw_async_driver(
    rt: &tokio::runtime::Runtime,
    dialect: Dialect,
    url: &str,
    workers: usize,
    window: Duration,
) -> anyhow::Result<Option<(&'static str, Duration, Latencies)>> {
    let opts = tandem_core::ConnectOptions::parse(url)?;
    let sql = select_sql(dialect);
    rt.block_on(async {
        let (variant, tasks): (_, Vec<_>) = match dialect {
            Dialect::Sqlite => return Ok(None),
            Dialect::Postgres => {
                let mut clients = Vec::with_capacity(workers);
                for _ in 0..workers {
                    let c = seed::tokio_pg_client(&opts).await?;
                    let stmt = c.prepare(sql).await?;
                    clients.push((c, stmt));
                }
                let started = Instant::now();
                let tasks = clients.into_iter().enumerate().map(|(w, (c, stmt))| {
                    tokio::spawn(async move {
                        let (c, stmt) = (&c, &stmt);
                        select_until(w, started, window, move |id| async move {
                            Ok(c.query_opt(stmt, &[&id])
                                .await?
                                .map(|r| source((r.get(0), r.get(1), r.get(2)))))
                        })
                        .await
                    })
                });
                (("raw tokio-postgres tasks", started), tasks.collect())
            }
            Dialect::MySql => {
                let mut conns = Vec::with_capacity(workers);
                for _ in 0..workers {
                    conns.push(seed::mysql_async_conn(&opts).await?);
                }
                let started = Instant::now();
                let tasks = conns.into_iter().enumerate().map(|(w, conn)| {
                    tokio::spawn(async move {
                        use mysql_async::prelude::Queryable;
                        let conn = &tokio::sync::Mutex::new(conn);
                        select_until(w, started, window, move |id| async move {
                            let row: Option<(i64, String, i32)> =
                                conn.lock().await.exec_first(sql, (id,)).await?;
                            Ok(row.map(source))
                        })
                        .await
                    })
                });
                (("raw mysql_async tasks", started), tasks.collect())
            }
        };
        let (variant, started) = variant;
        let all = gather(tasks).await?;
        Ok(Some((variant, started.elapsed(), all)))
    })
}

fn check(id: i64, got: Option<Source>) -> anyhow::Result<()> {
    match got {
        Some(s) if s.id == id && s.value as i64 == id => Ok(()),
        other => Err(anyhow::anyhow!(
            "point verification failed for id {id}: {other:?}"
        )),
    }
}

/// One variant's rounds: how long each ran and the latencies of its selects.
#[derive(Default)]
struct Rounds(Vec<(Duration, Latencies)>);

impl Rounds {
    fn push(&mut self, took: Duration, latencies: Latencies) {
        self.0.push((took, latencies));
    }

    /// The record: the median round's rate (as its ops over its time), the slowest and fastest rounds'
    /// rates and the latencies of every round in the details.
    fn record(&self, dialect: Dialect, variant: &str, workers: usize) -> Option<Record> {
        let rate = |(took, l): &(Duration, Latencies)| l.len() as f64 / took.as_secs_f64();
        let mut by_rate: Vec<&(Duration, Latencies)> = self.0.iter().collect();
        by_rate.sort_by(|a, b| rate(a).total_cmp(&rate(b)));
        let median = *by_rate.get(by_rate.len() / 2)?;
        let mut all = Latencies::new();
        for (_, l) in &self.0 {
            all.add(l);
        }
        Some(Record {
            scenario: "point",
            db: dialect.name().into(),
            variant: variant.into(),
            rows: 1,
            pool: workers as u32,
            parallelism: workers as u32,
            time: Measured {
                median: median.0,
                min: median.0,
                max: median.0,
            },
            extra: Some(median.1.len() as f64),
            details: vec![
                ("rounds", self.0.len() as f64),
                ("selects_per_s_min", rate(by_rate[0])),
                ("selects_per_s_max", rate(by_rate[by_rate.len() - 1])),
                ("latency_p50_ms", all.quantile_ms(0.5)),
                ("latency_p99_ms", all.quantile_ms(0.99)),
                ("latency_max_ms", all.quantile_ms(1.0)),
            ],
        })
    }
}

/// Runs the scenario for every engine: `rounds` rounds of `seconds` per variant, tandem and the raw
/// driver taking turns within each round (so a slow spell of the machine falls on both), the median
/// round kept.
pub fn run(
    ctx: &mut Ctx,
    dbs: &[Dialect],
    seconds: u64,
    workers: usize,
    rounds: usize,
) -> anyhow::Result<()> {
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
        let adb = if ctx.runs(Executor::Async) {
            Some(
                ctx.rt
                    .block_on(tandem_async::Database::connect_with(&url, config.clone()))?,
            )
        } else {
            None
        };
        // SQLite's async workers once more, parking at once instead of polling for their next call
        // (`?worker_wait=park`): what the default's polling buys. `find_by_id` skips the worker when SQLite
        // can answer at once, so both worker variants read through `fetch_optional` of the same SELECT,
        // which goes to the worker like any statement of the caller's.
        let parked = match &adb {
            Some(_) if dialect == Dialect::Sqlite => {
                Some(ctx.rt.block_on(tandem_async::Database::connect_with(
                    &format!("{url}?worker_wait=park"),
                    config.clone(),
                ))?)
            }
            _ => None,
        };
        // The server engines' async executor once more on sqlx's driver (`?driver=sqlx`): beside the default
        // (tokio-postgres, mysql_async) it shows what the driver weighs, apart from the execution model.
        let on_sqlx = match &adb {
            Some(_) if dialect != Dialect::Sqlite && ctx.wants(SQLX_VARIANT) => {
                let sep = if url.contains('?') { '&' } else { '?' };
                Some(ctx.rt.block_on(tandem_async::Database::connect_with(
                    &format!("{url}{sep}driver=sqlx"),
                    config.clone(),
                ))?)
            }
            _ => None,
        };
        let (mut tandem_threads, mut tandem_held, mut raw_threads_seen) =
            (Rounds::default(), Rounds::default(), Rounds::default());
        let mut tandem_on_sqlx = Rounds::default();
        let (mut tandem_tasks, mut worker_tasks, mut parked_tasks, mut sqlx_seen) = (
            Rounds::default(),
            Rounds::default(),
            Rounds::default(),
            Rounds::default(),
        );
        let mut raw_variant = "raw threads";
        let (mut raw_async_seen, mut raw_async_variant) = (Rounds::default(), "raw async driver");
        // `--only` names the raw drivers by kind: `raw threads`, `raw async driver`.
        let wants = |v: &str| ctx.wants(v);
        for _ in 0..rounds.max(1) {
            if ctx.runs(Executor::Blocking) {
                if wants("tandem-blocking threads") {
                    let repos = (0..workers).map(|_| db.repository::<Source>()).collect();
                    let (took, all) =
                        on_threads(repos, window, |repo, id| Ok(repo.find_by_id(id)?))?;
                    tandem_threads.push(took, all);
                }
                // The same calls on a connection each worker checked out once: the executor without the
                // pool, so the two figures apart are what checkout and check-in cost.
                if wants("tandem-blocking threads, connection held") {
                    let conns = (0..workers)
                        .map(|_| db.checkout())
                        .collect::<tandem_blocking::Result<Vec<_>>>()?;
                    let (took, all) = on_threads(conns, window, |conn, id| {
                        Ok(conn.repository::<Source>().find_by_id(id)?)
                    })?;
                    tandem_held.push(took, all);
                }
                if wants("raw threads") {
                    let (variant, took, all) = raw_threads(dialect, &url, workers, window)?;
                    raw_variant = variant;
                    raw_threads_seen.push(took, all);
                }
            }
            if let Some(adb) = &adb {
                if wants("tandem-async tasks") {
                    let (took, all) =
                        tandem_tasks_round(&ctx.rt, adb, workers, window, Lookup::Key)?;
                    tandem_tasks.push(took, all);
                }
                if let Some(parked) = parked.as_ref().filter(|_| ctx.only.is_empty()) {
                    let (took, all) =
                        tandem_tasks_round(&ctx.rt, adb, workers, window, Lookup::Statement)?;
                    worker_tasks.push(took, all);
                    let (took, all) =
                        tandem_tasks_round(&ctx.rt, parked, workers, window, Lookup::Statement)?;
                    parked_tasks.push(took, all);
                }
                if let Some(on_sqlx) = &on_sqlx {
                    let (took, all) =
                        tandem_tasks_round(&ctx.rt, on_sqlx, workers, window, Lookup::Key)?;
                    tandem_on_sqlx.push(took, all);
                }
                if wants("raw sqlx tasks") {
                    let (took, all) = raw_sqlx(&ctx.rt, dialect, &url, workers, window)?;
                    sqlx_seen.push(took, all);
                }
                if wants("raw async driver")
                    && let Some((variant, took, all)) =
                        raw_async_driver(&ctx.rt, dialect, &url, workers, window)?
                {
                    raw_async_variant = variant;
                    raw_async_seen.push(took, all);
                }
            }
        }
        for (rounds, variant) in [
            (&tandem_threads, "tandem-blocking threads"),
            (&tandem_held, "tandem-blocking threads, connection held"),
            (&raw_threads_seen, raw_variant),
            (&tandem_tasks, "tandem-async tasks"),
            (&worker_tasks, "tandem-async tasks, statement via worker"),
            (&parked_tasks, "tandem-async tasks, via workers that park"),
            (&tandem_on_sqlx, SQLX_VARIANT),
            (&sqlx_seen, "raw sqlx tasks"),
            (&raw_async_seen, raw_async_variant),
        ] {
            if let Some(r) = rounds.record(dialect, variant, workers) {
                crate::record(&ctx.progress, &mut ctx.results, r);
            }
        }
        db.execute(&tandem_sql::prelude::TableMethods::drop_table(
            benchmark_source::table,
        ))?;
    }
    Ok(())
}

/// tandem-async on sqlx's driver.
const SQLX_VARIANT: &str = "tandem-async tasks on sqlx";

/// How tandem-async's tasks read a row.
#[derive(Clone, Copy)]
enum Lookup {
    /// `repository().find_by_id`.
    Key,
    /// `fetch_optional` of `SELECT … WHERE id = ?` built with the DSL: a statement of the caller's.
    Statement,
}

/// tandem-async's round: `workers` tasks, each reading rows as `how` says.
fn tandem_tasks_round(
    rt: &tokio::runtime::Runtime,
    adb: &tandem_async::Database,
    workers: usize,
    window: Duration,
    how: Lookup,
) -> anyhow::Result<(Duration, Latencies)> {
    use tandem_sql::prelude::*;
    let started = Instant::now();
    let all = rt.block_on(async {
        let tasks = (0..workers).map(|w| {
            let db = adb.clone();
            tokio::spawn(async move {
                let repo = db.repository::<Source>();
                let (db, repo) = (&db, &repo);
                select_until(w, started, window, move |id| async move {
                    Ok(match how {
                        Lookup::Key => repo.find_by_id(id).await?,
                        Lookup::Statement => {
                            let by_id = benchmark_source::table
                                .select_all()
                                .filter(benchmark_source::id.eq(id));
                            db.fetch_optional::<Source>(&by_id).await?
                        }
                    })
                })
                .await
            })
        });
        gather(tasks.collect()).await
    })?;
    Ok((started.elapsed(), all))
}
