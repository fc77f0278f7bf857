//! `tandem-bench`: the essay's benchmark, reproduced and verified.
//!
//! Scenario so far: `seed` — insert `rows` rows `("item-$i", i)` into `benchmark_source` in 1,000-row chunks,
//! one transaction per chunk, through tandem's blocking repository and by hand on the raw driver, on each
//! engine. Every measured op is verified (row count, distinct names, sum of values); the schema is recreated
//! before each. The e2e, stream, point and pool scenarios, the async executor, clap options, charts and the
//! full matrix come with their issues.
//!
//! `cargo run --release -p tandem-bench -- seed [--db sqlite,postgres,mysql] [--rows 100000] [--iterations 5]`

mod e2e;
mod raw;

use std::time::{Duration, Instant};

use tandem_batch::essay::{Source, benchmark_source, seed_rows};
use tandem_blocking::{BatchOptions, Database, PoolConfig};
use tandem_sql::prelude::*;
use tandem_sql::{Dialect, raw};

/// Rows per statement and per transaction, as in the essay.
pub(crate) const CHUNK: usize = 1_000;

struct Args {
    scenario: String,
    parallelism: Vec<usize>,
    dbs: Vec<Dialect>,
    rows: usize,
    iterations: usize,
    out: std::path::PathBuf,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        scenario: "seed".into(),
        parallelism: vec![8],
        dbs: vec![Dialect::Sqlite],
        rows: 100_000,
        iterations: 5,
        out: "target/tandem-bench".into(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut value = || it.next().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "seed" | "e2e" => args.scenario = a.clone(),
            "--parallelism" => {
                args.parallelism = value()?
                    .split(',')
                    .map(|p| p.parse().map_err(|e| format!("--parallelism: {e}")))
                    .collect::<Result<_, _>>()?;
            }
            "--db" => {
                args.dbs = value()?
                    .split(',')
                    .map(str::parse)
                    .collect::<Result<_, _>>()?;
            }
            "--rows" => args.rows = value()?.parse().map_err(|e| format!("--rows: {e}"))?,
            "--iterations" => {
                args.iterations = value()?.parse().map_err(|e| format!("--iterations: {e}"))?
            }
            "--out" => args.out = value()?.into(),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(args)
}

pub(crate) fn url(dialect: Dialect, dir: &std::path::Path) -> String {
    match dialect {
        Dialect::Sqlite => format!("sqlite://{}", dir.join("seed.db").display()),
        Dialect::Postgres => std::env::var("TANDEM_POSTGRES_URL")
            .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into()),
        Dialect::MySql => std::env::var("TANDEM_MYSQL_URL")
            .unwrap_or_else(|_| "mysql://root@127.0.0.1:3306/test".into()),
    }
}

/// Recreates the table and checks that it holds exactly rows `1..=n`.
pub(crate) fn reset(db: &Database) -> tandem_blocking::Result<()> {
    db.execute(&benchmark_source::table.drop_table())?;
    db.create_table(&benchmark_source::table.create_table())
}

fn verify(db: &Database, n: usize) -> Result<(), String> {
    let (count, distinct, total): (i64, i64, i64) = db
        .fetch_one(&benchmark_source::table.select((
            count_star(),
            count_distinct(benchmark_source::name),
            coalesce(sum(benchmark_source::value), 0i64),
        )))
        .map_err(|e| e.to_string())?;
    let n = n as i64;
    let expected = (n, n, n * (n + 1) / 2);
    if (count, distinct, total) != expected {
        return Err(format!(
            "verification failed: (count, distinct names, sum) = {:?}, expected {expected:?}",
            (count, distinct, total)
        ));
    }
    Ok(())
}

pub(crate) struct Measured {
    pub(crate) median: Duration,
    pub(crate) min: Duration,
    pub(crate) max: Duration,
}

pub(crate) fn measure(
    iterations: usize,
    mut op: impl FnMut() -> Result<Duration, String>,
) -> Result<Measured, String> {
    op()?; // warm-up
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

fn seed_tandem(db: &Database, rows: &[Source]) -> Result<Duration, String> {
    reset(db).map_err(|e| e.to_string())?;
    let repo = db.repository::<Source>();
    let opts = BatchOptions {
        chunk_rows: Some(CHUNK),
        ..BatchOptions::default()
    };
    let started = Instant::now();
    let inserted = repo
        .batch_insert(rows, &opts)
        .map_err(|e| e.to_string())?
        .inserted;
    let took = started.elapsed();
    if inserted != rows.len() as u64 {
        return Err(format!(
            "batch_insert reported {inserted} rows, expected {}",
            rows.len()
        ));
    }
    verify(db, rows.len())?;
    Ok(took)
}

fn seed_raw(
    dialect: Dialect,
    url: &str,
    db: &Database,
    rows: &[Source],
) -> Result<Duration, String> {
    reset(db).map_err(|e| e.to_string())?;
    let opts = tandem_core::ConnectOptions::parse(url).map_err(|e| e.to_string())?;
    let started;
    match dialect {
        Dialect::Sqlite => {
            let conn = rusqlite::Connection::open(opts.path.as_deref().unwrap_or(":memory:"))
                .map_err(|e| e.to_string())?;
            conn.execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA busy_timeout = 5000;")
                .map_err(|e| e.to_string())?;
            started = Instant::now();
            raw::sqlite(&conn, rows, CHUNK).map_err(|e| e.to_string())?;
        }
        Dialect::Postgres => {
            let mut client = postgres::Config::new()
                .host(&opts.host)
                .port(opts.port)
                .user(&opts.user)
                .dbname(&opts.database)
                .connect(postgres::NoTls)
                .map_err(|e| e.to_string())?;
            started = Instant::now();
            raw::postgres(&mut client, rows, CHUNK).map_err(|e| e.to_string())?;
        }
        Dialect::MySql => {
            let builder = mysql::OptsBuilder::new()
                .ip_or_hostname(Some(opts.host.clone()))
                .tcp_port(opts.port)
                .user(Some(opts.user.clone()))
                .pass(opts.password.clone())
                .db_name(Some(opts.database.clone()))
                .prefer_socket(false);
            let mut conn = mysql::Conn::new(builder).map_err(|e| e.to_string())?;
            started = Instant::now();
            raw::mysql(&mut conn, rows, CHUNK).map_err(|e| e.to_string())?;
        }
    }
    let took = started.elapsed();
    verify(db, rows.len())?;
    Ok(took)
}

fn seed_async(
    rt: &tokio::runtime::Runtime,
    adb: &tandem_async::Database,
    db: &Database,
    rows: &[Source],
) -> Result<Duration, String> {
    reset(db).map_err(|e| e.to_string())?;
    let opts = BatchOptions {
        chunk_rows: Some(CHUNK),
        ..BatchOptions::default()
    };
    let started = Instant::now();
    let inserted = rt
        .block_on(adb.repository::<Source>().batch_insert(rows, &opts))
        .map_err(|e| e.to_string())?
        .inserted;
    let took = started.elapsed();
    if inserted != rows.len() as u64 {
        return Err(format!(
            "async batch_insert reported {inserted} rows, expected {}",
            rows.len()
        ));
    }
    verify(db, rows.len())?;
    Ok(took)
}

fn seed_sqlx(
    rt: &tokio::runtime::Runtime,
    dialect: Dialect,
    url: &str,
    db: &Database,
    rows: &[Source],
) -> Result<Duration, String> {
    reset(db).map_err(|e| e.to_string())?;
    let opts = tandem_core::ConnectOptions::parse(url).map_err(|e| e.to_string())?;
    let e = |e: sqlx::Error| e.to_string();
    let took = rt.block_on(async {
        match dialect {
            Dialect::Sqlite => {
                let o = sqlx::sqlite::SqliteConnectOptions::new()
                    .filename(opts.path.as_deref().unwrap_or(":memory:"))
                    .journal_mode(sqlx::sqlite::SqliteJournalMode::Wal)
                    .synchronous(sqlx::sqlite::SqliteSynchronous::Normal);
                let pool = sqlx::sqlite::SqlitePoolOptions::new()
                    .max_connections(1)
                    .connect_with(o)
                    .await
                    .map_err(e)?;
                let started = Instant::now();
                raw::sqlx_seed(&pool, rows, CHUNK, false).await.map_err(e)?;
                Ok::<_, String>(started.elapsed())
            }
            Dialect::Postgres => {
                let o = sqlx::postgres::PgConnectOptions::new()
                    .host(&opts.host)
                    .port(opts.port)
                    .username(&opts.user)
                    .database(&opts.database)
                    .ssl_mode(sqlx::postgres::PgSslMode::Disable);
                let pool = sqlx::postgres::PgPoolOptions::new()
                    .max_connections(1)
                    .connect_with(o)
                    .await
                    .map_err(e)?;
                let started = Instant::now();
                raw::sqlx_seed(&pool, rows, CHUNK, true).await.map_err(e)?;
                Ok(started.elapsed())
            }
            Dialect::MySql => {
                let mut o = sqlx::mysql::MySqlConnectOptions::new()
                    .host(&opts.host)
                    .port(opts.port)
                    .username(&opts.user)
                    .database(&opts.database)
                    .ssl_mode(sqlx::mysql::MySqlSslMode::Disabled);
                if let Some(p) = &opts.password {
                    o = o.password(p);
                }
                let pool = sqlx::mysql::MySqlPoolOptions::new()
                    .max_connections(1)
                    .connect_with(o)
                    .await
                    .map_err(e)?;
                let started = Instant::now();
                raw::sqlx_seed(&pool, rows, CHUNK, false).await.map_err(e)?;
                Ok(started.elapsed())
            }
        }
    })?;
    verify(db, rows.len())?;
    Ok(took)
}

fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("tandem-bench: {e}");
            std::process::exit(2);
        }
    };
    if let Err(e) = run(&args) {
        eprintln!("tandem-bench: {e}");
        std::process::exit(1);
    }
}

fn run(args: &Args) -> Result<(), String> {
    std::fs::create_dir_all(&args.out).map_err(|e| e.to_string())?;
    if args.scenario == "e2e" {
        return e2e::run(args);
    }
    let rows = seed_rows(args.rows);
    let mut json = Vec::new();
    println!(
        "seed: {} rows in {CHUNK}-row chunks, one transaction per chunk; median of {} (after 1 warm-up)\n",
        args.rows, args.iterations
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    println!(
        "{:<10} {:>10} {:>10} {:>10} {:>10} {:>9} {:>9} {:>10} {:>10}",
        "db",
        "blocking s",
        "raw s",
        "async s",
        "sqlx s",
        "blk/raw",
        "asy/sqlx",
        "asy/blk",
        "blk ops/s"
    );
    for &dialect in &args.dbs {
        let url = url(dialect, &args.out);
        let db = Database::connect_with(&url, PoolConfig::default())
            .map_err(|e| format!("{dialect} at {url}: {e}"))?;
        let _ = db.execute(&raw("SELECT 1", vec![]));
        let adb = rt
            .block_on(tandem_async::Database::connect_with(
                &url,
                PoolConfig::default(),
            ))
            .map_err(|e| format!("{dialect} at {url}: {e}"))?;
        let tandem = measure(args.iterations, || seed_tandem(&db, &rows))?;
        let baseline = measure(args.iterations, || seed_raw(dialect, &url, &db, &rows))?;
        let asynchronous = measure(args.iterations, || seed_async(&rt, &adb, &db, &rows))?;
        let sqlx_raw = measure(args.iterations, || {
            seed_sqlx(&rt, dialect, &url, &db, &rows)
        })?;
        let secs = |d: Duration| d.as_secs_f64();
        let ratio = secs(baseline.median) / secs(tandem.median);
        let async_vs_sqlx = secs(sqlx_raw.median) / secs(asynchronous.median);
        let async_vs_blocking = secs(tandem.median) / secs(asynchronous.median);
        println!(
            "{:<10} {:>10.4} {:>10.4} {:>10.4} {:>10.4} {:>8.1}% {:>8.1}% {:>9.1}% {:>10.2}",
            dialect.name(),
            secs(tandem.median),
            secs(baseline.median),
            secs(asynchronous.median),
            secs(sqlx_raw.median),
            100.0 * ratio,
            100.0 * async_vs_sqlx,
            100.0 * async_vs_blocking,
            1.0 / secs(tandem.median),
        );
        let m = |x: &Measured| {
            format!(
                "{{\"median\":{},\"min\":{},\"max\":{}}}",
                secs(x.median),
                secs(x.min),
                secs(x.max)
            )
        };
        json.push(format!(
            "{{\"scenario\":\"seed\",\"db\":\"{}\",\"rows\":{},\"chunk\":{CHUNK},\"iterations\":{},\"tandem_blocking_s\":{},\"raw_driver_s\":{},\"tandem_async_s\":{},\"raw_sqlx_s\":{},\"blocking_vs_raw\":{ratio:.4},\"async_vs_sqlx\":{async_vs_sqlx:.4},\"async_vs_blocking\":{async_vs_blocking:.4},\"verified\":true}}",
            dialect.name(), args.rows, args.iterations, m(&tandem), m(&baseline), m(&asynchronous), m(&sqlx_raw),
        ));
        if dialect == Dialect::Sqlite {
            // The async executor's other SQLite path, for comparison with the rusqlite one above.
            let mut o = tandem_core::ConnectOptions::parse(&url).map_err(|e| e.to_string())?;
            o.sqlite_driver = tandem_core::SqliteDriver::Sqlx;
            let via_sqlx = rt
                .block_on(tandem_async::Database::open(o, PoolConfig::default()))
                .map_err(|e| e.to_string())?;
            let on_sqlx = measure(args.iterations, || seed_async(&rt, &via_sqlx, &db, &rows))?;
            println!(
                "{:<10} async on sqlx's SQLite driver: {:.4} s ({:.1}% of blocking); on rusqlite: {:.4} s ({:.1}%)",
                "sqlite",
                secs(on_sqlx.median),
                100.0 * secs(tandem.median) / secs(on_sqlx.median),
                secs(asynchronous.median),
                100.0 * async_vs_blocking
            );
            json.push(format!(
                "{{\"scenario\":\"seed-async-sqlite-drivers\",\"db\":\"sqlite\",\"rows\":{},\"async_rusqlite_s\":{},\"async_sqlx_s\":{},\"verified\":true}}",
                args.rows,
                secs(asynchronous.median),
                secs(on_sqlx.median)
            ));
        }
        if dialect == Dialect::Postgres {
            // Why COPY is chosen only for one-transaction batches: per chunk it is no faster.
            let whole = |allow_copy| BatchOptions {
                chunk_rows: Some(CHUNK),
                transaction: tandem_blocking::BatchTransaction::PerCall,
                allow_copy,
                ..BatchOptions::default()
            };
            let one_tx = |opts: BatchOptions| {
                measure(args.iterations, || {
                    reset(&db).map_err(|e| e.to_string())?;
                    let started = Instant::now();
                    db.repository::<Source>()
                        .batch_insert(&rows, &opts)
                        .map_err(|e| e.to_string())?;
                    let took = started.elapsed();
                    verify(&db, rows.len())?;
                    Ok(took)
                })
            };
            let multi = one_tx(whole(false))?;
            let copy = one_tx(whole(true))?;
            println!(
                "{:<10} one transaction: multi-row INSERT {:.4} s, binary COPY {:.4} s ({:.1}x)",
                "postgres",
                secs(multi.median),
                secs(copy.median),
                secs(multi.median) / secs(copy.median)
            );
            json.push(format!(
                "{{\"scenario\":\"seed-one-transaction\",\"db\":\"postgres\",\"rows\":{},\"multi_row_s\":{},\"copy_s\":{},\"verified\":true}}",
                args.rows,
                secs(multi.median),
                secs(copy.median)
            ));
        }
        db.execute(&benchmark_source::table.drop_table())
            .map_err(|e| e.to_string())?;
    }
    let path = args.out.join("seed.json");
    std::fs::write(&path, format!("[\n{}\n]\n", json.join(",\n"))).map_err(|e| e.to_string())?;
    println!(
        "\nresults: {} (cpus: {})",
        path.display(),
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    Ok(())
}
