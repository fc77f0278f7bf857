//! `e2e`: the essay's batch job over `rows` source rows with `parallelism` partitions, on each runner, next to
//! the server doing the same work alone (`INSERT … SELECT`). Target and job tables are recreated before each
//! measured op; every op is verified (row count, distinct names, checksum of the transformed values).

use std::time::{Duration, Instant};

use tandem_batch::essay::{self, benchmark_target};
use tandem_batch::model::{batch_job_execution, batch_step_execution};
use tandem_blocking::{BatchOptions, Database, PoolConfig};
use tandem_sql::prelude::*;
use tandem_sql::raw;

use crate::{Args, Measured, measure, reset, url};

fn reset_target(db: &Database) -> Result<(), String> {
    let e = |e: tandem_core::Error| e.to_string();
    db.execute(&benchmark_target::table.drop_table())
        .map_err(e)?;
    db.execute(&batch_job_execution::table.drop_table())
        .map_err(e)?;
    db.execute(&batch_step_execution::table.drop_table())
        .map_err(e)?;
    db.create_table(&benchmark_target::table.create_table())
        .map_err(e)
}

fn verify(db: &Database, n: usize) -> Result<(), String> {
    let (count, distinct, total): (i64, i64, i64) = db
        .fetch_one(&benchmark_target::table.select((
            count_star(),
            count_distinct(benchmark_target::source_name),
            coalesce(sum(benchmark_target::transformed_value), 0i64),
        )))
        .map_err(|e| e.to_string())?;
    let n = n as i64;
    let expected = (n, n, n * (n + 1));
    if (count, distinct, total) != expected {
        return Err(format!(
            "e2e verification failed: (count, distinct, checksum) = {:?}, expected {expected:?}",
            (count, distinct, total)
        ));
    }
    Ok(())
}

pub(crate) fn run(args: &Args) -> Result<(), String> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let secs = |d: Duration| d.as_secs_f64();
    let mut json = Vec::new();
    println!(
        "e2e: the essay's job over {} rows (page 500, chunk 500, one transaction per chunk with its checkpoint); median of {}\n",
        args.rows, args.iterations
    );
    println!(
        "{:<10} {:>4} {:>12} {:>12} {:>16} {:>10} {:>10}",
        "db", "par", "blocking s", "async s", "INSERT…SELECT s", "blk/ceil", "asy/ceil"
    );
    for &dialect in &args.dbs {
        let url = url(dialect, &args.out);
        let config = PoolConfig {
            max_size: 16,
            ..PoolConfig::default()
        };
        let db = Database::connect_with(&url, config.clone())
            .map_err(|e| format!("{dialect} at {url}: {e}"))?;
        let adb = rt
            .block_on(tandem_async::Database::connect_with(&url, config))
            .map_err(|e| e.to_string())?;
        reset(&db).map_err(|e| e.to_string())?;
        db.repository::<essay::Source>()
            .batch_insert(&essay::seed_rows(args.rows), &BatchOptions::default())
            .map_err(|e| e.to_string())?;
        let ceiling = measure(args.iterations, || {
            reset_target(&db)?;
            let started = Instant::now();
            db.execute(&raw(essay::insert_select_sql(), vec![]))
                .map_err(|e| e.to_string())?;
            let took = started.elapsed();
            verify(&db, args.rows)?;
            Ok(took)
        })?;
        for &parallelism in &args.parallelism {
            let job = essay::job(parallelism);
            let blocking = measure(args.iterations, || {
                reset_target(&db)?;
                let started = Instant::now();
                tandem_batch::blocking::run(&db, &job).map_err(|e| e.to_string())?;
                let took = started.elapsed();
                verify(&db, args.rows)?;
                Ok(took)
            })?;
            let asynchronous = measure(args.iterations, || {
                reset_target(&db)?;
                let started = Instant::now();
                rt.block_on(tandem_batch::asynchronous::run(&adb, &job))
                    .map_err(|e| e.to_string())?;
                let took = started.elapsed();
                verify(&db, args.rows)?;
                Ok(took)
            })?;
            println!(
                "{:<10} {:>4} {:>12.4} {:>12.4} {:>16.4} {:>9.2}x {:>9.2}x",
                dialect.name(),
                parallelism,
                secs(blocking.median),
                secs(asynchronous.median),
                secs(ceiling.median),
                secs(blocking.median) / secs(ceiling.median),
                secs(asynchronous.median) / secs(ceiling.median)
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
                "{{\"scenario\":\"e2e\",\"db\":\"{}\",\"rows\":{},\"parallelism\":{parallelism},\"iterations\":{},\"blocking_s\":{},\"async_s\":{},\"insert_select_s\":{},\"verified\":true}}",
                dialect.name(), args.rows, args.iterations, m(&blocking), m(&asynchronous), m(&ceiling)
            ));
        }
        reset_target(&db)?;
        db.execute(&benchmark_source_drop())
            .map_err(|e| e.to_string())?;
    }
    let path = args.out.join("e2e.json");
    std::fs::write(&path, format!("[\n{}\n]\n", json.join(",\n"))).map_err(|e| e.to_string())?;
    println!("\nresults: {}", path.display());
    Ok(())
}

fn benchmark_source_drop() -> tandem_sql::ast::DropTable {
    essay::benchmark_source::table.drop_table()
}
