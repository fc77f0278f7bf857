//! Given: the job as a program of its own, so that the checks can kill it (SIGKILL) in the middle of a run
//! and start it again. `batch-job <url> <blocking|async> <partitions>` runs the essay's job to its end (or
//! resumes it) and prints its report.

use std::process::ExitCode;

use batch::job::{Job, ensure_tables, ensure_tables_async};
use batch::{run_async, run_blocking};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (url, runner, partitions) = match args.as_slice() {
        [url, runner, partitions] => (url, runner.as_str(), partitions.parse().unwrap_or(1)),
        _ => {
            eprintln!("usage: batch-job <url> <blocking|async> <partitions>");
            return ExitCode::from(2);
        }
    };
    let job = Job {
        partitions,
        ..Job::new("essay")
    };
    let report = match runner {
        "blocking" => blocking::Database::open(url, partitions + 1).and_then(|db| {
            ensure_tables(&db)?;
            run_blocking(&db, &job)
        }),
        _ => tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .map_err(|e| blocking::Error::Connect(e.to_string()))
            .and_then(|rt| {
                rt.block_on(async {
                    let db = asynchronous::Database::open(url, partitions + 1).await?;
                    ensure_tables_async(&db).await?;
                    run_async(&db, &job).await
                })
            }),
    };
    match report {
        Ok(r) => {
            println!("{r:?}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("batch-job: {e}");
            ExitCode::FAILURE
        }
    }
}
