//! The async executor and repository against SQLite, PostgreSQL and MariaDB: the blocking side's test list
//! on each async driver (the native ones and sqlx), plus cancellation — dropped streams, dropped query futures and dropped transactions.

use tandem_test_support::schema as support;
use tandem_test_support::{db, events, harness};

use std::time::Duration;
use tandem_async::Executor;
use tandem_blocking::Executor as _;

use futures_util::{StreamExt, TryStreamExt};
use support::{AppError, Order, User, check_unique_violation_source, orders, user, users};
use tandem_async::{
    BatchOptions, BatchTransaction, Database, DbErrorKind, Error, Find, Isolation, PoolConfig,
    TxOptions,
};
use tandem_sql::prelude::*;
use tandem_sql::{Dialect, raw};

/// An async database on a fresh target.
struct ADb {
    db: Database,
    target: db::TestTarget,
}

async fn adb(dialect: Dialect, name: &str, config: PoolConfig) -> ADb {
    adb_with(dialect, |_| {}, name, config).await
}

/// How a case changes the target's options: which SQLite driver, how its workers wait.
type Tweak = fn(&mut tandem_core::ConnectOptions);

async fn adb_with(dialect: Dialect, tweak: Tweak, name: &str, config: PoolConfig) -> ADb {
    let name = name.to_owned();
    // The blocking admin client cannot run on the runtime's threads.
    let mut target = tokio::task::spawn_blocking(move || db::target(dialect, &name))
        .await
        .unwrap();
    tweak(&mut target.options);
    let db = Database::open(target.options.clone(), config)
        .await
        .expect("open the test database");
    ADb { db, target }
}

macro_rules! async_engine_test {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        pub(crate) mod $name {
            use super::*;
            async fn run_with(dialect: Dialect, tweak: crate::Tweak) {
                let t = adb_with(dialect, tweak, stringify!($name), PoolConfig::default()).await;
                super::$name(&t).await;
            }
            /// The engine's cases: SQLite through rusqlite (the default), with its workers parking
            /// instead of polling, and through sqlx's driver; PostgreSQL through tokio-postgres and
            /// MariaDB through mysql_async (the defaults), each also through sqlx's driver.
            pub(crate) fn cases() -> Vec<crate::harness::Case> {
                let name = stringify!($name);
                let case = |engine: &str, dialect: Dialect, tweak: crate::Tweak| {
                    crate::harness::Case::new(format!("{name}::{engine}"), move || {
                        crate::harness::block_on(run_with(dialect, tweak))
                    })
                    .on(dialect)
                };
                vec![
                    case("sqlite", Dialect::Sqlite, |_| {}),
                    case("sqlite_parked", Dialect::Sqlite, |o| {
                        o.sqlite_worker_wait = tandem_core::WorkerWait::Park
                    }),
                    case("sqlite_sqlx", Dialect::Sqlite, |o| {
                        o.async_driver = tandem_core::AsyncDriver::Sqlx
                    }),
                    case("postgres", Dialect::Postgres, |_| {}),
                    case("postgres_sqlx", Dialect::Postgres, |o| {
                        o.async_driver = tandem_core::AsyncDriver::Sqlx
                    }),
                    case("mysql", Dialect::MySql, |_| {}),
                    case("mysql_sqlx", Dialect::MySql, |o| {
                        o.async_driver = tandem_core::AsyncDriver::Sqlx
                    }),
                ]
            }
        }
    };
}

async fn setup(db: &Database) {
    db.create_table(&users::table.create_table()).await.unwrap();
    db.create_table(&orders::table.create_table())
        .await
        .unwrap();
}

async fn names(db: &Database) -> Vec<String> {
    db.fetch_all::<(String,)>(&users::table.select(users::name).order_by(users::id.asc()))
        .await
        .unwrap()
        .into_iter()
        .map(|(n,)| n)
        .collect()
}

mod interruptions;
mod repository;
mod transactions;
mod types;

use interruptions::*;
use repository::*;
use transactions::*;
use types::*;

/// A service holds one future per request in flight, waiting on the pool or on anything after its
/// statements ran: each call's future stays a few KiB, whatever the pool kinds and connect paths behind it
/// (the acquire inline put 33 KiB into every repository call). The same types on every engine: SQLite runs it.
async fn futures_stay_small() {
    const LIMIT: usize = 8 * 1024;
    let t = adb(Dialect::Sqlite, "futures_stay_small", PoolConfig::default()).await;
    setup(&t.db).await;
    let repo = t.db.repository::<User>();
    let ada = user("ada", 36);
    let insert = repo.insert(&ada);
    assert!(
        size_of_val(&insert) <= LIMIT,
        "insert: {} bytes",
        size_of_val(&insert)
    );
    let id = insert.await.unwrap();
    let find = repo.find_by_id(id);
    assert!(
        size_of_val(&find) <= LIMIT,
        "find_by_id: {} bytes",
        size_of_val(&find)
    );
    assert_eq!(find.await.unwrap().map(|u| u.name), Some("ada".to_owned()));
    let query = users::table.select(users::name);
    let fetch = t.db.fetch_all::<(String,)>(&query);
    assert!(
        size_of_val(&fetch) <= LIMIT,
        "fetch_all: {} bytes",
        size_of_val(&fetch)
    );
    assert_eq!(fetch.await.unwrap(), vec![("ada".to_owned(),)]);
    let mut changed = user("ada", 37);
    changed.id = id;
    let update = repo.update_by_id(&changed);
    assert!(
        size_of_val(&update) <= LIMIT,
        "update_by_id: {} bytes",
        size_of_val(&update)
    );
    assert_eq!(update.await.unwrap(), 1);
}

fn main() {
    harness::main(
        [
            crud::cases(),
            atomic_plans_are_all_or_nothing::cases(),
            finders_and_pages::cases(),
            key_lookups_in_tx_and_checkout::cases(),
            batches_and_bulk_changes::cases(),
            ids_of_kept_rows_when_duplicates_are_skipped::cases(),
            batch_beyond_parameter_limit::cases(),
            transaction_rules::cases(),
            transaction_options_and_retry::cases(),
            own_error_type::cases(),
            typed_loads::cases(),
            one_function_for_both::cases(),
            temporal_and_uuid_values::cases(),
            bad_input::cases(),
            cancellation::cases(),
            cancelled_transactions::cases(),
            text_semantics::cases(),
            streams_in_transactions::cases(),
            vec![
                harness::Case::new("futures_stay_small", || {
                    harness::block_on(futures_stay_small())
                })
                .on(Dialect::Sqlite),
                harness::Case::new("killed_mid_transaction_postgres", move || {
                    harness::block_on(killed_mid_transaction_postgres())
                })
                .needs(&[Dialect::Postgres]),
            ],
            vec![
                harness::Case::new("killed_mid_transaction_mysql", move || {
                    harness::block_on(killed_mid_transaction_mysql())
                })
                .needs(&[Dialect::MySql]),
                harness::Case::new("statements_kept_and_closed_mysql", move || {
                    harness::block_on(statements_kept_and_closed_mysql())
                })
                .needs(&[Dialect::MySql]),
                harness::Case::new("hot_statements_stay_prepared_postgres", move || {
                    harness::block_on(hot_statements_stay_prepared_postgres())
                })
                .needs(&[Dialect::Postgres]),
            ],
            vec![
                harness::Case::new("keys_follow_auto_increment_increment_mysql", move || {
                    harness::block_on(keys_follow_auto_increment_increment_mysql())
                })
                .needs(&[Dialect::MySql]),
            ],
            vec![
                harness::Case::new("copy_path_postgres", move || {
                    harness::block_on(copy_path_postgres())
                })
                .needs(&[Dialect::Postgres]),
            ],
            vec![
                harness::Case::new("key_lookup_waits_for_a_lock_off_the_runtime_sqlite", || {
                    key_lookup_waits_for_a_lock_off_the_runtime_sqlite()
                })
                .on(Dialect::Sqlite),
            ],
            vec![harness::Case::new("unreachable_server", move || {
                harness::block_on(unreachable_server())
            })],
            vec![harness::Case::new("futures_are_send", move || {
                harness::block_on(futures_are_send())
            })],
            vec![
                harness::Case::new("real_conflict_is_retried_postgres", move || {
                    harness::block_on(real_conflict_is_retried_postgres())
                })
                .needs(&[Dialect::Postgres]),
            ],
            vec![
                harness::Case::new("real_conflict_is_retried_mysql", move || {
                    harness::block_on(real_conflict_is_retried_mysql())
                })
                .needs(&[Dialect::MySql]),
            ],
            vec![
                harness::Case::new("spawned_conflict_is_retried_postgres", move || {
                    harness::block_on(spawned_conflict_is_retried_postgres())
                })
                .needs(&[Dialect::Postgres]),
            ],
            vec![
                harness::Case::new("spawned_conflict_is_retried_mysql", move || {
                    harness::block_on(spawned_conflict_is_retried_mysql())
                })
                .needs(&[Dialect::MySql]),
            ],
        ]
        .into_iter()
        .flatten()
        .collect(),
    );
}
