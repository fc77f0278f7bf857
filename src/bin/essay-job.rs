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
    let parallelism = args.get(1).and_then(|p| p.parse().ok()).unwrap_or(1);
    let delay = args
        .get(2)
        .and_then(|d| d.parse().ok())
        .map(Duration::from_millis);
    let mut job = tandem_batch::essay::job(parallelism).sizes(500, 500);
    job.chunk_delay = delay;
    for flag in &flags {
        match flag.split_once('=') {
            Some(("--lease", ms)) => match ms.parse() {
                Ok(ms) => job = job.lock_lease(Duration::from_millis(ms)),
                Err(_) => {
                    eprintln!("essay-job: --lease={ms} is not a number of milliseconds");
                    std::process::exit(2);
                }
            },
            None if flag == "--async" => {}
            _ => {
                eprintln!("essay-job: unknown flag {flag}");
                std::process::exit(2);
            }
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
