//! The batch job on SQLite, PostgreSQL and MariaDB with both runners: exact output at parallelism 1, 4 and 8,
//! restarts after a failing processor, a killed connection and a killed process, and bad input.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tandem_blocking::Executor as _;
use tandem_test_support::{db, harness};

use tandem_batch::essay::{self, Source, Target, benchmark_source, benchmark_target};
use tandem_batch::model::{
    JobExecution, RunStatus, StepExecution, batch_job_execution, batch_step_execution,
};
use tandem_batch::{BatchJob, JobError, ProcessError, Processed, SkipPolicy};
use tandem_blocking::{BatchOptions, Database, PoolConfig};
use tandem_sql::prelude::*;
use tandem_sql::{Dialect, raw};

mod failures;
mod leases;
mod round_trips;
mod runs;
mod stops;

use failures::*;
use leases::*;
use round_trips::*;
use runs::*;
use stops::*;

const ROWS: usize = 10_000;

/// Fresh source (rows `1..=n`, ids `1..=n`), target and job tables.
fn reset(db: &Database, n: usize) {
    for t in [
        benchmark_target::table.drop_table(),
        benchmark_source::table.drop_table(),
    ] {
        db.execute(&t).unwrap();
    }
    db.execute(&batch_job_execution::table.drop_table())
        .unwrap();
    db.execute(&batch_step_execution::table.drop_table())
        .unwrap();
    db.execute(&raw("DROP TABLE IF EXISTS batch_job_lock", vec![]))
        .unwrap();
    db.create_table(&benchmark_source::table.create_table())
        .unwrap();
    db.create_table(&benchmark_target::table.create_table())
        .unwrap();
    if n > 0 {
        db.repository::<Source>()
            .batch_insert(&essay::seed_rows(n), &BatchOptions::default())
            .unwrap();
    }
}

/// The target holds exactly the transformed source rows, each once.
fn assert_target(db: &Database, expected: &[(String, i32)]) {
    let mut got: Vec<(String, i32)> = db
        .fetch_all(&benchmark_target::table.select((
            benchmark_target::source_name,
            benchmark_target::transformed_value,
        )))
        .unwrap();
    got.sort();
    let mut want = expected.to_vec();
    want.sort();
    assert_eq!(got.len(), want.len(), "target row count");
    assert_eq!(got, want);
}

fn expected(ids: impl Iterator<Item = usize>) -> Vec<(String, i32)> {
    ids.map(|i| (format!("ITEM-{i}"), 2 * i as i32)).collect()
}

/// Runs `job` on the async runner (on `rt`, over `adb`) or the blocking one (over `db`).
fn run_job(
    use_async: bool,
    (rt, adb): (&tokio::runtime::Runtime, &tandem_async::Database),
    db: &Database,
    job: &BatchJob<Source, Target>,
) -> Result<tandem_batch::JobReport, JobError> {
    if use_async {
        rt.block_on(tandem_batch::asynchronous::run(adb, job))
    } else {
        tandem_batch::blocking::run(db, job)
    }
}

/// A runtime and an async pool on the same database as `t`, for the async runner.
fn async_twin(
    t: &db::TestDb,
    config: PoolConfig,
) -> (tokio::runtime::Runtime, tandem_async::Database) {
    t.async_twin(config)
}

fn executions(db: &Database) -> Vec<RunStatus> {
    db.fetch_all::<JobExecution>(
        &batch_job_execution::table
            .select_all()
            .order_by(batch_job_execution::id.asc()),
    )
    .unwrap()
    .into_iter()
    .map(|e| e.status)
    .collect()
}

/// The job's runs as a run that replaced another leaves them: the replaced run FAILED with the words of the
/// run that took over ("abandoned: …"), never overwritten by the replaced run's own error; then the new run
/// COMPLETED.
fn assert_replaced(db: &Database, what: &str) {
    let runs: Vec<JobExecution> = db
        .fetch_all(
            &batch_job_execution::table
                .select_all()
                .order_by(batch_job_execution::id.asc()),
        )
        .unwrap();
    let seen: Vec<_> = (runs.iter())
        .map(|r| (r.status, r.error_text.clone()))
        .collect();
    assert_eq!(
        seen,
        [
            (
                RunStatus::Failed,
                Some("abandoned: the run stopped without finishing".into())
            ),
            (RunStatus::Completed, None)
        ],
        "{what}"
    );
}

/// Every step row's status and error text, oldest first.
fn step_statuses(db: &Database) -> Vec<(RunStatus, Option<String>)> {
    db.fetch_all::<StepExecution>(
        &batch_step_execution::table
            .select_all()
            .order_by(batch_step_execution::id.asc()),
    )
    .unwrap()
    .into_iter()
    .map(|s| (s.status, s.error_text))
    .collect()
}

/// One case per server engine (PostgreSQL, MariaDB), named `name::postgres` and `name::mysql`.
fn server_engines(name: &str, test: fn(Dialect)) -> Vec<harness::Case> {
    [("postgres", Dialect::Postgres), ("mysql", Dialect::MySql)]
        .into_iter()
        .map(|(engine, d)| harness::Case::new(format!("{name}::{engine}"), move || test(d)).on(d))
        .collect()
}

fn main() {
    harness::main(
        [
            vec![harness::Case::new("essay_job_sqlite", essay_job_sqlite)],
            server_engines("lease_across_nodes", lease_across_nodes),
            server_engines("lease_lost", lease_lost),
            vec![harness::Case::new(
                "completed_is_not_hidden_by_a_later_failure",
                completed_is_not_hidden_by_a_later_failure,
            )],
            server_engines("stalled_run_goes_on", stalled_run_goes_on),
            server_engines("stalled_run_is_replaced", stalled_run_is_replaced),
            server_engines(
                "stopped_process_loses_its_lock",
                stopped_process_loses_its_lock,
            ),
            server_engines(
                "stopped_client_is_not_a_silent_server",
                stopped_client_is_not_a_silent_server,
            ),
            harness::engines(
                "short_partitions_are_reopened",
                short_partitions_are_reopened,
            ),
            vec![harness::Case::new(
                "shortfall_is_explained",
                shortfall_is_explained,
            )],
            vec![harness::Case::new(
                "parallelism_is_not_the_job",
                parallelism_is_not_the_job,
            )],
            vec![
                harness::Case::new(
                    "stopped_inside_a_transaction_postgres",
                    stopped_inside_a_transaction_postgres,
                )
                .needs(&[Dialect::Postgres]),
            ],
            vec![
                harness::Case::new(
                    "start_transaction_is_retried_postgres",
                    start_transaction_is_retried_postgres,
                )
                .needs(&[Dialect::Postgres]),
            ],
            vec![
                harness::Case::new(
                    "lost_lease_commits_nothing_mysql",
                    lost_lease_commits_nothing_mysql,
                )
                .needs(&[Dialect::MySql]),
            ],
            vec![
                harness::Case::new(
                    "start_lock_waits_are_bounded_postgres",
                    start_lock_waits_are_bounded_postgres,
                )
                .needs(&[Dialect::Postgres]),
            ],
            vec![
                harness::Case::new("round_trips_per_run_postgres", round_trips_per_run_postgres)
                    .needs(&[Dialect::Postgres]),
                harness::Case::new("round_trips_per_run_mysql", round_trips_per_run_mysql)
                    .needs(&[Dialect::MySql]),
            ],
            vec![
                harness::Case::new("essay_job_postgres", essay_job_postgres)
                    .needs(&[Dialect::Postgres]),
            ],
            vec![harness::Case::new("essay_job_mysql", essay_job_mysql).needs(&[Dialect::MySql])],
            vec![harness::Case::new(
                "restart_after_failure_sqlite",
                restart_after_failure_sqlite,
            )],
            vec![
                harness::Case::new(
                    "restart_after_failure_postgres",
                    restart_after_failure_postgres,
                )
                .needs(&[Dialect::Postgres]),
            ],
            vec![
                harness::Case::new("restart_after_failure_mysql", restart_after_failure_mysql)
                    .needs(&[Dialect::MySql]),
            ],
            vec![
                harness::Case::new("killed_connections_postgres", killed_connections_postgres)
                    .needs(&[Dialect::Postgres]),
            ],
            vec![
                harness::Case::new(
                    "killed_connections_postgres_async",
                    killed_connections_postgres_async,
                )
                .needs(&[Dialect::Postgres]),
            ],
            vec![
                harness::Case::new("killed_connections_mysql", killed_connections_mysql)
                    .needs(&[Dialect::MySql]),
            ],
            vec![
                harness::Case::new(
                    "killed_connections_mysql_async",
                    killed_connections_mysql_async,
                )
                .needs(&[Dialect::MySql]),
            ],
            vec![harness::Case::new(
                "killed_process_resumes",
                killed_process_resumes,
            )],
            harness::engines("concurrent_processes", concurrent_processes),
            vec![harness::Case::new(
                "concurrent_runs_in_process",
                concurrent_runs_in_process,
            )],
            vec![harness::Case::new(
                "empty_source_and_gaps",
                empty_source_and_gaps,
            )],
            vec![harness::Case::new(
                "panicking_processor",
                panicking_processor,
            )],
            vec![harness::Case::new(
                "processor_errors_and_skips",
                processor_errors_and_skips,
            )],
        ]
        .into_iter()
        .flatten()
        .collect(),
    );
}
