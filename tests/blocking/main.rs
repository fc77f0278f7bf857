//! The blocking executor and repository against SQLite, PostgreSQL and MariaDB: every repository method,
//! the transaction rules, killed connections, large batches and bad input.

use tandem_test_support::schema as support;
use tandem_test_support::{db, engine_test, events, harness};

use std::panic::{AssertUnwindSafe, catch_unwind};
use tandem_blocking::Executor;

use db::TestDb;
use support::{AppError, Order, User, check_unique_violation_source, orders, user, users};
use tandem_blocking::{
    BatchOptions, BatchTransaction, Database, DbErrorKind, Error, Find, Isolation, PoolConfig,
    TxOptions,
};
use tandem_sql::prelude::*;
use tandem_sql::{Dialect, Value, raw};

mod repository;
mod transactions;
mod types;

use repository::*;
use transactions::*;
use types::*;

fn setup(db: &Database) {
    db.create_table(&users::table.create_table()).unwrap();
    db.create_table(&orders::table.create_table()).unwrap();
}

fn names(db: &Database) -> Vec<String> {
    db.fetch_all::<(String,)>(&users::table.select(users::name).order_by(users::id.asc()))
        .unwrap()
        .into_iter()
        .map(|(n,)| n)
        .collect()
}

fn main() {
    harness::main(
        [
            harness::engines("crud", crud::run),
            harness::engines("plans_run_atomically", plans_run_atomically::run),
            harness::engines("finders_and_pages", finders_and_pages::run),
            harness::engines("batches_and_bulk_changes", batches_and_bulk_changes::run),
            harness::engines(
                "ids_of_kept_rows_when_duplicates_are_skipped",
                ids_of_kept_rows_when_duplicates_are_skipped::run,
            ),
            harness::engines(
                "batch_beyond_parameter_limit",
                batch_beyond_parameter_limit::run,
            ),
            harness::engines("transaction_rules", transaction_rules::run),
            harness::engines("hand_begun_transactions", hand_begun_transactions::run),
            harness::engines(
                "transaction_options_and_retry",
                transaction_options_and_retry::run,
            ),
            harness::engines("own_error_type", own_error_type::run),
            harness::engines("typed_loads", typed_loads::run),
            harness::engines("one_function_for_both", one_function_for_both::run),
            harness::engines("temporal_and_uuid_values", temporal_and_uuid_values::run),
            harness::engines("bad_input", bad_input::run),
            harness::engines("streams", streams::run),
            vec![
                harness::Case::new(
                    "killed_mid_transaction_postgres",
                    killed_mid_transaction_postgres,
                )
                .needs(&[Dialect::Postgres]),
            ],
            vec![
                harness::Case::new("killed_mid_transaction_mysql", killed_mid_transaction_mysql)
                    .needs(&[Dialect::MySql]),
            ],
            vec![
                harness::Case::new(
                    "keys_follow_auto_increment_increment_mysql",
                    keys_follow_auto_increment_increment_mysql,
                )
                .needs(&[Dialect::MySql]),
            ],
            vec![
                harness::Case::new(
                    "statements_kept_and_closed_mysql",
                    statements_kept_and_closed_mysql,
                )
                .needs(&[Dialect::MySql]),
                harness::Case::new(
                    "hot_statements_stay_prepared_postgres",
                    hot_statements_stay_prepared_postgres,
                )
                .needs(&[Dialect::Postgres]),
            ],
            harness::engines("bridge_from_async", bridge_from_async),
            vec![harness::Case::new("unreachable_server", unreachable_server)],
            harness::engines(
                "blocking_calls_inside_async_code",
                blocking_calls_inside_async_code,
            ),
            vec![harness::Case::new("schema_helpers", schema_helpers)],
            vec![
                harness::Case::new("copy_path_postgres", copy_path_postgres)
                    .needs(&[Dialect::Postgres]),
            ],
            vec![
                harness::Case::new(
                    "real_conflict_is_retried_postgres",
                    real_conflict_is_retried_postgres,
                )
                .needs(&[Dialect::Postgres]),
            ],
            vec![
                harness::Case::new(
                    "real_conflict_is_retried_mysql",
                    real_conflict_is_retried_mysql,
                )
                .needs(&[Dialect::MySql]),
            ],
            harness::engines("text_and_float_semantics", text_and_float_semantics::run),
        ]
        .into_iter()
        .flatten()
        .collect(),
    );
}
