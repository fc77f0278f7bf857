//! `e2e`: the essay's batch job over `data_size` source rows with `parallelism` partitions, on each runner,
//! next to the server doing the same work alone (`INSERT … SELECT`) and the job written by hand on the raw
//! blocking driver (`raw-driver`: on SQLite one partition on rusqlite, on the servers `parallelism`
//! partitions on `postgres` / `mysql`) and, on the servers, on sqlx (`raw-sqlx`: `parallelism` tasks, the
//! async side's own baseline) and on the other async driver a user would pick (`raw-async-driver`:
//! tokio-postgres or mysql_async, `parallelism` tasks and connections). Before each measured op the target
//! table is made afresh and the job tables emptied; every op is verified (row count, distinct names,
//! checksum).

use std::time::{Duration, Instant};
use tandem_blocking::Executor as _;

use tandem_batch::essay::{self, benchmark_target};
use tandem_batch::model::{batch_job_execution, batch_step_execution};
use tandem_blocking::{BatchOptions, Database, PoolConfig};
use tandem_sql::prelude::*;
use tandem_sql::{Dialect, raw};

use crate::report::{Record, measure};
use crate::{Ctx, Executor, seed, url};

/// A fresh target table, and the job repository's tables as a job that runs again and again finds them:
/// there, and empty. They are made before the clock starts, as the checkpoint table of the job by hand is
/// (a runner that had to create them inside the measured op was timed on DDL the job by hand never does:
/// most of the 1,000-row cells' difference).
fn reset_target(db: &Database) -> anyhow::Result<()> {
    db.execute(&benchmark_target::table.drop_table())?;
    db.create_table(&benchmark_target::table.create_table())?;
    tandem_batch::blocking::prepare(db)?;
    for table in ["batch_job_execution", "batch_step_execution"] {
        db.execute(&raw(format!("DELETE FROM {table}"), vec![]))?;
    }
    Ok(())
}

/// Drops the job repository's tables (after a scenario's last op).
fn drop_job_tables(db: &Database) -> anyhow::Result<()> {
    db.execute(&batch_job_execution::table.drop_table())?;
    db.execute(&batch_step_execution::table.drop_table())?;
    Ok(())
}

fn verify(db: &Database, n: usize) -> anyhow::Result<()> {
    let (count, distinct, total): (i64, i64, i64) =
        db.fetch_one(&benchmark_target::table.select((
            count_star(),
            count_distinct(benchmark_target::source_name),
            coalesce(sum(benchmark_target::transformed_value), 0i64),
        )))?;
    let n = n as i64;
    let expected = (n, n, n * (n + 1));
    if (count, distinct, total) != expected {
        return Err(anyhow::anyhow!(
            "e2e verification failed: (count, distinct, checksum) = {:?}, expected {expected:?}",
            (count, distinct, total)
        ));
    }
    Ok(())
}

/// Measures a job written by hand: `timed` runs it once over pages of `page` rows, with its connections
/// opened before its clock starts, and says how long it took; around each run the target table and the
/// checkpoint rows are made afresh and the result is verified.
fn job_by_hand(
    db: &Database,
    n: usize,
    p: usize,
    iterations: usize,
    mut timed: impl FnMut(usize) -> anyhow::Result<Duration>,
) -> anyhow::Result<crate::report::Measured> {
    let page = essay::job(p).page_size as usize;
    let m = measure(iterations, || {
        reset_target(db)?;
        for sql in crate::raw::job_checkpoints(p) {
            db.execute(&raw(sql, vec![]))?;
        }
        let took = timed(page)?;
        verify(db, n)?;
        Ok(took)
    })?;
    db.execute(&raw(crate::raw::END_JOB, vec![]))?;
    Ok(m)
}

/// Which raw drivers a job by hand runs on.
enum ByHand<'a> {
    /// The blocking ones (see [`crate::raw::postgres_job`]): `p` threads and connections.
    Blocking,
    /// sqlx, the async side's (see [`crate::raw::sqlx_postgres_job`]): `p` tasks and pooled connections,
    /// on this runtime.
    Sqlx(&'a tokio::runtime::Runtime),
    /// The other async driver a user would pick (see [`crate::raw::tokio_postgres_job`],
    /// [`crate::raw::mysql_async_job`]): `p` tasks and connections, on this runtime.
    AsyncDriver(&'a tokio::runtime::Runtime),
}

/// The job by hand on a server, `p` partitions, on the drivers `on` names.
fn server_job_by_hand(
    db: &Database,
    url: &str,
    n: usize,
    p: usize,
    iterations: usize,
    on: ByHand<'_>,
) -> anyhow::Result<crate::report::Measured> {
    let opts = tandem_core::ConnectOptions::parse(url)?;
    crate::plain_only(&opts)?;
    job_by_hand(db, n, p, iterations, |page| match (&on, db.dialect()) {
        (ByHand::Blocking, Dialect::Postgres) => {
            let clients = (0..p)
                .map(|_| seed::pg_client(&opts))
                .collect::<anyhow::Result<Vec<_>>>()?;
            let started = Instant::now();
            crate::raw::postgres_job(clients, page)?;
            Ok(started.elapsed())
        }
        (ByHand::Blocking, _) => {
            let conns = (0..p)
                .map(|_| seed::mysql_conn(&opts))
                .collect::<anyhow::Result<Vec<_>>>()?;
            let started = Instant::now();
            crate::raw::mysql_job(conns, page)?;
            Ok(started.elapsed())
        }
        (ByHand::AsyncDriver(rt), Dialect::Postgres) => rt.block_on(async {
            let mut clients = Vec::with_capacity(p);
            for _ in 0..p {
                clients.push(seed::tokio_pg_client(&opts).await?);
            }
            let started = Instant::now();
            crate::raw::tokio_postgres_job(clients, page).await?;
            Ok(started.elapsed())
        }),
        (ByHand::AsyncDriver(rt), _) => rt.block_on(async {
            let mut conns = Vec::with_capacity(p);
            for _ in 0..p {
                conns.push(seed::mysql_async_conn(&opts).await?);
            }
            let started = Instant::now();
            crate::raw::mysql_async_job(conns, page).await?;
            Ok(started.elapsed())
        }),
        (ByHand::Sqlx(rt), dialect) => rt
            .block_on(async {
                macro_rules! timed {
                    ($options:expr, $pool:ty, $job:path) => {{
                        let pool = <$pool>::new()
                            .max_connections(p as u32)
                            .connect_with($options)
                            .await?;
                        let open: Vec<_> =
                            futures_util::future::try_join_all((0..p).map(|_| pool.acquire()))
                                .await?;
                        drop(open);
                        let started = Instant::now();
                        $job(pool, p, page).await?;
                        started.elapsed()
                    }};
                }
                Ok::<_, sqlx::Error>(match dialect {
                    Dialect::Postgres => timed!(
                        seed::sqlx_pg_options(&opts),
                        sqlx::postgres::PgPoolOptions,
                        crate::raw::sqlx_postgres_job
                    ),
                    _ => timed!(
                        seed::sqlx_mysql_options(&opts),
                        sqlx::mysql::MySqlPoolOptions,
                        crate::raw::sqlx_mysql_job
                    ),
                })
            })
            .map_err(anyhow::Error::from),
    })
}

/// A run's fixed cost on each runner: the job over an empty source — its lock, its execution row, its
/// end, and no partition — run `10 × iterations` times on warm pools (the job's tables kept, their rows
/// deleted between runs, as a job that runs again and again finds them), recorded at 0 rows as the
/// runners' variants.
fn fixed_cost(
    ctx: &mut Ctx,
    db: &Database,
    adb: &tandem_async::Database,
    pool: u32,
) -> anyhow::Result<()> {
    seed::reset(db)?;
    reset_target(db)?;
    let job = essay::job(1);
    let fresh = || -> anyhow::Result<()> {
        for table in ["batch_job_execution", "batch_step_execution"] {
            db.execute(&raw(format!("DELETE FROM {table}"), vec![]))?;
        }
        Ok(())
    };
    let it = ctx.iterations * 10;
    for executor in [Executor::Blocking, Executor::Async] {
        let variant = match executor {
            Executor::Blocking => "tandem-blocking",
            Executor::Async => "tandem-async",
        };
        // Measured in full runs, or when `--only fixed-cost` asks (not with `--only tandem-…`: its run
        // count grows with the iterations, and `tandem-bench instructions` counts per-iteration work).
        if !ctx.runs(executor) || !(ctx.only.is_empty() || ctx.wants("fixed-cost")) {
            continue;
        }
        let m = measure(it, || {
            fresh()?;
            let started = Instant::now();
            match executor {
                Executor::Blocking => tandem_batch::blocking::run(db, &job).map(drop)?,
                Executor::Async => ctx
                    .rt
                    .block_on(tandem_batch::asynchronous::run(adb, &job))
                    .map(drop)?,
            }
            let took = started.elapsed();
            verify(db, 0)?;
            Ok(took)
        })?;
        crate::record(
            &ctx.progress,
            &mut ctx.results,
            Record {
                scenario: "e2e",
                db: db.dialect().name().into(),
                variant: variant.into(),
                rows: 0,
                pool,
                parallelism: 1,
                time: m,
                extra: None,
                details: Vec::new(),
            },
        );
    }
    Ok(())
}

/// Runs the scenario for every engine, data size, pool size and parallelism.
pub fn run(
    ctx: &mut Ctx,
    dbs: &[Dialect],
    sizes: &[usize],
    pools: &[u32],
    parallelism: &[usize],
) -> anyhow::Result<()> {
    for &dialect in dbs {
        let url = url(dialect, &ctx.out);
        for &pool in pools {
            // The async runner's partitions keep two connections each where the pool has room for them
            // and two more (the run lock's session, the lease keeper): see `tandem_batch`'s runner.
            let config = PoolConfig {
                max_size: pool.max(2 * parallelism.iter().copied().max().unwrap_or(1) as u32 + 2),
                ..PoolConfig::default()
            };
            let db = Database::connect_with(&url, config.clone())
                .map_err(|e| anyhow::anyhow!("{dialect} at {url}: {e}"))?;
            let adb = ctx
                .rt
                .block_on(tandem_async::Database::connect_with(&url, config))?;
            fixed_cost(ctx, &db, &adb, pool)?;
            for &n in sizes {
                seed::reset(&db)?;
                db.repository::<essay::Source>()
                    .batch_insert(&essay::seed_rows(n), &BatchOptions::default())?;
                let it = ctx.iterations;
                let ceiling = if ctx.wants("insert-select") {
                    Some(measure(it, || {
                        reset_target(&db)?;
                        let started = Instant::now();
                        db.execute(&raw(essay::insert_select_sql(), vec![]))?;
                        let took = started.elapsed();
                        verify(&db, n)?;
                        Ok(took)
                    })?)
                } else {
                    None
                };
                // SQLite: the job by hand on rusqlite (see `raw::sqlite_job`), one partition.
                let by_hand = if dialect == Dialect::Sqlite && ctx.wants("raw-driver") {
                    Some(measure(it, || {
                        reset_target(&db)?;
                        let conn = seed::sqlite_conn(&tandem_core::ConnectOptions::parse(&url)?)?;
                        crate::raw::prepare_sqlite_job(&conn)?;
                        let started = Instant::now();
                        crate::raw::sqlite_job(&conn, essay::job(1).page_size as usize)?;
                        let took = started.elapsed();
                        crate::raw::end_sqlite_job(&conn)?;
                        verify(&db, n)?;
                        Ok(took)
                    })?)
                } else {
                    None
                };
                for &p in parallelism {
                    let mut record = |variant: &str, time| {
                        crate::record(
                            &ctx.progress,
                            &mut ctx.results,
                            Record {
                                scenario: "e2e",
                                db: dialect.name().into(),
                                variant: variant.into(),
                                rows: n as u64,
                                pool,
                                parallelism: p as u32,
                                time,
                                extra: None,
                                details: Vec::new(),
                            },
                        )
                    };
                    if let Some(m) = ceiling {
                        record("insert-select", m);
                    }
                    let wants = |v: &str| ctx.only.is_empty() || ctx.only.iter().any(|o| o == v);
                    if let Some(m) = by_hand {
                        record("raw-driver", m);
                    } else if dialect != Dialect::Sqlite {
                        if wants("raw-driver") {
                            let m = server_job_by_hand(&db, &url, n, p, it, ByHand::Blocking)?;
                            record("raw-driver", m);
                        }
                        if ctx.executors.contains(&Executor::Async) {
                            if wants("raw-sqlx") {
                                let m =
                                    server_job_by_hand(&db, &url, n, p, it, ByHand::Sqlx(&ctx.rt))?;
                                record("raw-sqlx", m);
                            }
                            if wants("raw-async-driver") {
                                let on = ByHand::AsyncDriver(&ctx.rt);
                                let m = server_job_by_hand(&db, &url, n, p, it, on)?;
                                record("raw-async-driver", m);
                            }
                        }
                    }
                    let job = essay::job(p);
                    if ctx.executors.contains(&Executor::Blocking) && wants("tandem-blocking") {
                        let m = measure(it, || {
                            reset_target(&db)?;
                            let started = Instant::now();
                            tandem_batch::blocking::run(&db, &job)?;
                            let took = started.elapsed();
                            verify(&db, n)?;
                            Ok(took)
                        })?;
                        record("tandem-blocking", m);
                    }
                    if ctx.executors.contains(&Executor::Async) && wants("tandem-async") {
                        let rt = &ctx.rt;
                        let m = measure(it, || {
                            reset_target(&db)?;
                            let started = Instant::now();
                            rt.block_on(tandem_batch::asynchronous::run(&adb, &job))?;
                            let took = started.elapsed();
                            verify(&db, n)?;
                            Ok(took)
                        })?;
                        record("tandem-async", m);
                    }
                }
            }
            reset_target(&db)?;
            drop_job_tables(&db)?;
            db.execute(&essay::benchmark_source::table.drop_table())?;
        }
    }
    Ok(())
}
