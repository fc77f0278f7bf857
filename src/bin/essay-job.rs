//! The essay's batch job as a program: `essay-job <url> [parallelism] [chunk-delay-ms] [--async]
//! [--lease=<ms>]`.
//!
//! Runs (or resumes) `benchmark_source` → `benchmark_target` on the database at `url` and prints the report.
//! The target table is created when it is missing (a read first: no DDL once it is there, which on a
//! Galera cluster would wait for every node). Used by the process-level tests, which run it twice at once,
//! kill it midway, stop it, and run it again.

use std::time::Duration;

fn main() {
    let (flags, args): (Vec<String>, Vec<String>) =
        std::env::args().skip(1).partition(|a| a.starts_with("--"));
    let Some(url) = args.first() else {
        eprintln!("usage: essay-job <url> [parallelism] [chunk-delay-ms] [--async] [--lease=<ms>]");
        std::process::exit(2);
    };
    let usage = |what: String| -> ! {
        eprintln!("essay-job: {what}");
        std::process::exit(2);
    };
    let parallelism = match args.get(1).map(|p| p.parse::<usize>()) {
        None => 1,
        Some(Ok(p @ 1..=1_000)) => p,
        Some(_) => usage(format!(
            "parallelism {:?} is not a number of partitions from 1 to 1000",
            args[1]
        )),
    };
    let delay = match args.get(2).map(|d| d.parse::<u64>()) {
        None => None,
        Some(Ok(ms)) => Some(Duration::from_millis(ms)),
        Some(Err(_)) => usage(format!(
            "chunk delay {:?} is not a number of milliseconds",
            args[2]
        )),
    };
    let mut job = tandem_batch::essay::job(parallelism).sizes(500, 500);
    job.chunk_delay = delay;
    for flag in &flags {
        match flag.split_once('=') {
            Some(("--lease", ms)) => match ms.parse::<u64>().map(Duration::from_millis) {
                Ok(lease)
                    if (Duration::from_secs(1)..=tandem_batch::MAX_LEASE).contains(&lease) =>
                {
                    job = job.lock_lease(lease)
                }
                _ => usage(format!(
                    "--lease={ms} is not a lease from 1000 ms to {} ms",
                    tandem_batch::MAX_LEASE.as_millis()
                )),
            },
            None if flag == "--async" => {}
            _ => usage(format!("unknown flag {flag}")),
        }
    }
    let result = if flags.iter().any(|a| a == "--async") {
        let rt = tokio::runtime::Runtime::new().expect("a tokio runtime");
        rt.block_on(async {
            let db = tandem_async::Database::connect(url)
                .await
                .map_err(|e| e.to_string())?;
            tandem_batch::asynchronous::create_missing(&db, &target_table())
                .await
                .map_err(|e| e.to_string())?;
            tandem_batch::asynchronous::run(&db, &job)
                .await
                .map_err(|e| e.to_string())
        })
    } else {
        tandem_blocking::Database::connect(url)
            .map_err(|e| e.to_string())
            .and_then(|db| {
                tandem_batch::blocking::create_missing(&db, &target_table())
                    .map_err(|e| e.to_string())?;
                tandem_batch::blocking::run(&db, &job).map_err(|e| e.to_string())
            })
    };
    match result {
        Ok(report) => println!(
            "execution {}: read {}, written {}, skipped {}, chunks {}, {:?}{}",
            report.execution_id,
            report.read,
            report.written,
            report.skipped,
            report.chunks,
            report.duration,
            if report.resumed { " (resumed)" } else { "" }
        ),
        Err(e) => {
            eprintln!("essay-job: {e}");
            std::process::exit(1);
        }
    }
}

fn target_table() -> tandem_sql::ast::CreateTable {
    use tandem_sql::prelude::TableMethods;
    tandem_batch::essay::benchmark_target::table.create_table()
}
