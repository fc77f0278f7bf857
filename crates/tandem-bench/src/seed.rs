//! `seed`: insert `data_size` rows `("item-$i", i)` into `benchmark_source` in 1,000-row chunks, one
//! transaction per chunk, through both repositories, by hand on the raw drivers (rusqlite / postgres / mysql,
//! and sqlx for the async side), and at the engine's bulk limit (PostgreSQL binary COPY, MySQL
//! `LOAD DATA LOCAL INFILE`, SQLite one prepared statement in one transaction). The table is recreated before
//! every op and checked after it.
//!
//! Every comparison runs in plain TCP (see [`crate::url`]); where the server also offers TLS, both
//! repositories are measured over it too (`tandem-blocking tls`, `tandem-async tls`): the transport
//! tandem's default `sslmode=prefer` picks on such a server. A driver that leaves Nagle's algorithm on
//! shows there at once — sqlx 0.9.0 did, and each message longer than one TLS record waited ~40 ms.

use std::time::{Duration, Instant};
use tandem_async::Executor as _;
use tandem_blocking::Executor as _;

use tandem_batch::essay::{Source, benchmark_source, seed_rows};
use tandem_blocking::{BatchOptions, Database, PoolConfig};
use tandem_sql::prelude::*;
use tandem_sql::{Dialect, raw};

use crate::report::{Record, measure};
use crate::{Ctx, Executor, raw as rawdrv, tls_key, url};

/// Rows per statement and per transaction, as in the essay.
pub const CHUNK: usize = 1_000;

/// The engine's version string.
pub fn engine_version(dialect: Dialect, url: &str) -> anyhow::Result<String> {
    let db = Database::connect_with(
        url,
        PoolConfig {
            max_size: 1,
            ..PoolConfig::default()
        },
    )?;
    let sql = match dialect {
        Dialect::Sqlite => "SELECT 'SQLite ' || sqlite_version()",
        _ => "SELECT version()",
    };
    db.fetch_one::<(String,)>(&raw(sql, vec![]))
        .map(|(v,)| v)
        .map_err(anyhow::Error::from)
}

/// Recreates `benchmark_source`.
pub fn reset(db: &Database) -> anyhow::Result<()> {
    db.execute(&benchmark_source::table.drop_table())?;
    db.create_table(&benchmark_source::table.create_table())
        .map_err(anyhow::Error::from)
}

/// Checks that the table holds exactly rows `1..=n`: count, distinct names and the sum of values.
pub fn verify(db: &Database, n: usize) -> anyhow::Result<()> {
    let (count, distinct, total): (i64, i64, i64) =
        db.fetch_one(&benchmark_source::table.select((
            count_star(),
            count_distinct(benchmark_source::name),
            coalesce(sum(benchmark_source::value), 0i64),
        )))?;
    let n = n as i64;
    let expected = (n, n, n * (n + 1) / 2);
    if (count, distinct, total) != expected {
        return Err(anyhow::anyhow!(
            "seed verification failed: (count, distinct names, sum) = {:?}, expected {expected:?}",
            (count, distinct, total)
        ));
    }
    Ok(())
}

fn timed(
    db: &Database,
    n: usize,
    op: impl FnOnce() -> anyhow::Result<()>,
) -> anyhow::Result<Duration> {
    reset(db)?;
    let started = Instant::now();
    op()?;
    let took = started.elapsed();
    verify(db, n)?;
    Ok(took)
}

fn per_chunk() -> BatchOptions {
    BatchOptions {
        chunk_rows: Some(CHUNK),
        ..BatchOptions::default()
    }
}

/// Runs the scenario for every engine, data size and pool size.
pub fn run(ctx: &mut Ctx, dbs: &[Dialect], sizes: &[usize], pools: &[u32]) -> anyhow::Result<()> {
    for &dialect in dbs {
        let url = url(dialect, &ctx.out);
        for &pool in pools {
            let config = PoolConfig {
                max_size: pool,
                ..PoolConfig::default()
            };
            let db = Database::connect_with(&url, config.clone())
                .map_err(|e| anyhow::anyhow!("{dialect} at {url}: {e}"))?;
            let adb = ctx
                .rt
                .block_on(tandem_async::Database::connect_with(&url, config.clone()))
                .map_err(|e| anyhow::anyhow!("{dialect} at {url}: {e}"))?;
            let tls = over_tls(ctx, dialect, &url, &config);
            for &n in sizes {
                let rows = seed_rows(n);
                let mut record = |variant: &str, time| {
                    crate::record(
                        &ctx.progress,
                        &mut ctx.results,
                        Record {
                            scenario: "seed",
                            db: dialect.name().into(),
                            variant: variant.into(),
                            rows: n as u64,
                            pool,
                            parallelism: 0,
                            time,
                            extra: None,
                            details: Vec::new(),
                        },
                    )
                };
                let it = ctx.iterations;
                let rt = &ctx.rt;
                // One op of each repository, through `via` (plain TCP, or TLS); checked on `db`.
                let blocking = |via: &Database| {
                    measure(it, || {
                        timed(&db, n, || {
                            let r = via
                                .repository::<Source>()
                                .batch_insert(&rows, &per_chunk())?;
                            check_inserted(r.inserted, n)
                        })
                    })
                };
                let asynchronous = |via: &tandem_async::Database| {
                    measure(it, || {
                        timed(&db, n, || {
                            let r = rt.block_on(
                                via.repository::<Source>().batch_insert(&rows, &per_chunk()),
                            )?;
                            check_inserted(r.inserted, n)
                        })
                    })
                };
                if ctx.executors.contains(&Executor::Blocking) {
                    record("tandem-blocking", blocking(&db)?);
                    let m = measure(it, || timed(&db, n, || raw_driver(dialect, &url, &rows)))?;
                    record("raw-driver", m);
                }
                if ctx.executors.contains(&Executor::Async) {
                    record("tandem-async", asynchronous(&adb)?);
                    let m = measure(it, || timed(&db, n, || raw_sqlx(rt, dialect, &url, &rows)))?;
                    record("raw-sqlx", m);
                }
                let m = measure(it, || timed(&db, n, || bulk_limit(dialect, &url, &rows)))?;
                record("bulk-limit", m);
                if let Some((tdb, tadb)) = &tls {
                    if ctx.executors.contains(&Executor::Blocking) {
                        record("tandem-blocking tls", blocking(tdb)?);
                    }
                    if ctx.executors.contains(&Executor::Async) {
                        record("tandem-async tls", asynchronous(tadb)?);
                    }
                }
                if let Some(peers) = &ctx.peers {
                    for (name, m) in run_peers(peers, dialect, &url, n, it)? {
                        record(&format!("peer {name}"), m);
                    }
                }
            }
            db.execute(&benchmark_source::table.drop_table())?;
        }
    }
    Ok(())
}

/// Both repositories over TLS (`require`: encrypted, the certificate not checked), when `url` is a server's
/// in plain TCP and the server offers TLS; otherwise `None`, said once on stderr when the server refused.
fn over_tls(
    ctx: &Ctx,
    dialect: Dialect,
    url: &str,
    config: &PoolConfig,
) -> Option<(Database, tandem_async::Database)> {
    let plain = format!(
        "{}={}",
        tls_key(dialect)?,
        tandem_core::TlsMode::Disable.spelling(dialect)
    );
    if !url.contains(&plain) {
        return None;
    }
    let tls = url.replace(
        &plain,
        &format!(
            "{}={}",
            tls_key(dialect)?,
            tandem_core::TlsMode::Require.spelling(dialect)
        ),
    );
    let open = || -> Result<_, tandem_core::Error> {
        let db = Database::connect_with(&tls, config.clone())?;
        let adb = ctx
            .rt
            .block_on(tandem_async::Database::connect_with(&tls, config.clone()))?;
        Ok((db, adb))
    };
    match open() {
        Ok(dbs) => Some(dbs),
        Err(e) => {
            eprintln!("seed: {dialect} over TLS left out: {e}");
            None
        }
    }
}

fn check_inserted(inserted: u64, n: usize) -> anyhow::Result<()> {
    if inserted != n as u64 {
        return Err(anyhow::anyhow!(
            "batch_insert reported {inserted} rows, expected {n}"
        ));
    }
    Ok(())
}

/// The raw PostgreSQL drivers' settings for the server `opts` names (plain TCP only).
fn pg_config(opts: &tandem_core::ConnectOptions) -> anyhow::Result<tokio_postgres::Config> {
    crate::plain_only(opts)?;
    let mut c = tokio_postgres::Config::new();
    c.host(&opts.host)
        .port(opts.port)
        .user(&opts.user)
        .dbname(&opts.database);
    if let Some(p) = &opts.password {
        c.password(p);
    }
    Ok(c)
}

pub(crate) fn pg_client(opts: &tandem_core::ConnectOptions) -> anyhow::Result<postgres::Client> {
    postgres::Config::from(pg_config(opts)?)
        .connect(postgres::NoTls)
        .map_err(anyhow::Error::from)
}

pub(crate) fn mysql_conn(opts: &tandem_core::ConnectOptions) -> anyhow::Result<mysql::Conn> {
    crate::plain_only(opts)?;
    let builder = mysql::OptsBuilder::new()
        .ip_or_hostname(Some(opts.host.clone()))
        .tcp_port(opts.port)
        .user(Some(opts.user.clone()))
        .pass(opts.password.clone())
        .db_name(Some(opts.database.clone()))
        .prefer_socket(false);
    mysql::Conn::new(builder).map_err(anyhow::Error::from)
}

/// A tokio-postgres client to the server `opts` names, its connection driven by a task of its own on the
/// current runtime (as tokio-postgres's users run it).
pub(crate) async fn tokio_pg_client(
    opts: &tandem_core::ConnectOptions,
) -> anyhow::Result<tokio_postgres::Client> {
    let (client, connection) = pg_config(opts)?.connect(tokio_postgres::NoTls).await?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(client)
}

/// A mysql_async connection to the server `opts` names.
pub(crate) async fn mysql_async_conn(
    opts: &tandem_core::ConnectOptions,
) -> anyhow::Result<mysql_async::Conn> {
    crate::plain_only(opts)?;
    let builder = mysql_async::OptsBuilder::default()
        .ip_or_hostname(opts.host.clone())
        .tcp_port(opts.port)
        .user(Some(opts.user.clone()))
        .pass(opts.password.clone())
        .db_name(Some(opts.database.clone()))
        .prefer_socket(false);
    Ok(mysql_async::Conn::new(builder).await?)
}

pub(crate) fn sqlite_conn(
    opts: &tandem_core::ConnectOptions,
) -> anyhow::Result<rusqlite::Connection> {
    let conn = rusqlite::Connection::open(opts.path.as_deref().unwrap_or(":memory:"))?;
    conn.execute_batch(
        "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA busy_timeout = 5000;",
    )?;
    Ok(conn)
}

/// The same work by hand: multi-row INSERTs of `CHUNK` rows, each statement its own transaction. Only the
/// statements are timed (connecting is not).
fn raw_driver(dialect: Dialect, url: &str, rows: &[Source]) -> anyhow::Result<()> {
    let opts = tandem_core::ConnectOptions::parse(url)?;
    match dialect {
        Dialect::Sqlite => {
            rawdrv::sqlite(&sqlite_conn(&opts)?, rows, CHUNK).map_err(anyhow::Error::from)
        }
        Dialect::Postgres => {
            rawdrv::postgres(&mut pg_client(&opts)?, rows, CHUNK).map_err(anyhow::Error::from)
        }
        Dialect::MySql => {
            rawdrv::mysql(&mut mysql_conn(&opts)?, rows, CHUNK).map_err(anyhow::Error::from)
        }
    }
}

/// sqlx's options for the file or server `opts` names, as the raw sqlx baselines connect: plain TCP,
/// SQLite in WAL mode with `synchronous = NORMAL` (as tandem's connections run it).
pub(crate) fn sqlx_sqlite_options(
    opts: &tandem_core::ConnectOptions,
) -> sqlx::sqlite::SqliteConnectOptions {
    sqlx::sqlite::SqliteConnectOptions::new()
        .filename(opts.path.as_deref().unwrap_or(":memory:"))
        .journal_mode(sqlx::sqlite::SqliteJournalMode::Wal)
        .synchronous(sqlx::sqlite::SqliteSynchronous::Normal)
}

/// See [`sqlx_sqlite_options`].
pub(crate) fn sqlx_pg_options(
    opts: &tandem_core::ConnectOptions,
) -> sqlx::postgres::PgConnectOptions {
    let mut o = sqlx::postgres::PgConnectOptions::new()
        .host(&opts.host)
        .port(opts.port)
        .username(&opts.user)
        .database(&opts.database)
        .ssl_mode(sqlx::postgres::PgSslMode::Disable);
    if let Some(p) = &opts.password {
        o = o.password(p);
    }
    o
}

/// See [`sqlx_sqlite_options`].
pub(crate) fn sqlx_mysql_options(
    opts: &tandem_core::ConnectOptions,
) -> sqlx::mysql::MySqlConnectOptions {
    let mut o = sqlx::mysql::MySqlConnectOptions::new()
        .host(&opts.host)
        .port(opts.port)
        .username(&opts.user)
        .database(&opts.database)
        .ssl_mode(sqlx::mysql::MySqlSslMode::Disabled);
    if let Some(p) = &opts.password {
        o = o.password(p);
    }
    o
}

fn raw_sqlx(
    rt: &tokio::runtime::Runtime,
    dialect: Dialect,
    url: &str,
    rows: &[Source],
) -> anyhow::Result<()> {
    let opts = tandem_core::ConnectOptions::parse(url)?;
    crate::plain_only(&opts)?;
    let e = |e: sqlx::Error| anyhow::Error::from(e);
    rt.block_on(async {
        match dialect {
            Dialect::Sqlite => {
                let pool = sqlx::sqlite::SqlitePoolOptions::new()
                    .max_connections(1)
                    .connect_with(sqlx_sqlite_options(&opts))
                    .await
                    .map_err(e)?;
                rawdrv::sqlx_seed(&pool, rows, CHUNK, false)
                    .await
                    .map_err(e)
            }
            Dialect::Postgres => {
                let pool = sqlx::postgres::PgPoolOptions::new()
                    .max_connections(1)
                    .connect_with(sqlx_pg_options(&opts))
                    .await
                    .map_err(e)?;
                rawdrv::sqlx_seed(&pool, rows, CHUNK, true).await.map_err(e)
            }
            Dialect::MySql => {
                let pool = sqlx::mysql::MySqlPoolOptions::new()
                    .max_connections(1)
                    .connect_with(sqlx_mysql_options(&opts))
                    .await
                    .map_err(e)?;
                rawdrv::sqlx_seed(&pool, rows, CHUNK, false)
                    .await
                    .map_err(e)
            }
        }
    })
}

/// The engine's bulk path, all rows in one go: the floor for this workload.
fn bulk_limit(dialect: Dialect, url: &str, rows: &[Source]) -> anyhow::Result<()> {
    let opts = tandem_core::ConnectOptions::parse(url)?;
    match dialect {
        Dialect::Sqlite => {
            rawdrv::sqlite_one_statement(&sqlite_conn(&opts)?, rows).map_err(anyhow::Error::from)
        }
        Dialect::Postgres => {
            rawdrv::postgres_copy(&mut pg_client(&opts)?, rows).map_err(anyhow::Error::from)
        }
        Dialect::MySql => {
            rawdrv::mysql_load_data(&mut mysql_conn(&opts)?, rows).map_err(anyhow::Error::from)
        }
    }
}

/// Runs the peers program for one cell; it checks its own writes and prints `<name> <median> <min> <max>`.
fn run_peers(
    program: &std::path::Path,
    dialect: Dialect,
    url: &str,
    n: usize,
    iterations: usize,
) -> anyhow::Result<Vec<(String, crate::report::Measured)>> {
    let out = std::process::Command::new(program)
        .args([
            "seed",
            dialect.name(),
            url,
            &n.to_string(),
            &iterations.to_string(),
        ])
        .output()
        .map_err(|e| anyhow::anyhow!("running {}: {e}", program.display()))?;
    if !out.status.success() {
        return Err(anyhow::anyhow!(
            "peers failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let secs = |s: &str| {
        s.parse::<f64>()
            .map(Duration::from_secs_f64)
            .map_err(|e| anyhow::anyhow!("peers output: {e}"))
    };
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let [name, median, min, max] = f.as_slice() else {
                return Err(anyhow::anyhow!("peers output: {line:?}"));
            };
            Ok((
                (*name).to_owned(),
                crate::report::Measured {
                    median: secs(median)?,
                    min: secs(min)?,
                    max: secs(max)?,
                },
            ))
        })
        .collect()
}
