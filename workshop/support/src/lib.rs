//! What the workshop's tests share with tandem's own: a fresh SQLite file, PostgreSQL schema or MariaDB
//! database per test (`db::target`), URLs from `TANDEM_POSTGRES_URL` / `TANDEM_MYSQL_URL`, and a server that
//! cannot be reached reported and skipped — except under `CI=true`, where it fails.

pub use tandem_test_support::db;

use tandem_sql::Dialect;

/// The engines a stage's tests run on: SQLite always, the servers when reachable.
pub const ENGINES: [Dialect; 3] = [Dialect::Sqlite, Dialect::Postgres, Dialect::MySql];

/// The value a worker thread returned, from its `join()`; when it panicked, this test panics with the
/// worker's own message (which engine, which error) instead of `unwrap`'s "Any { .. }".
pub fn joined<T>(result: std::thread::Result<T>) -> T {
    result.unwrap_or_else(|payload| {
        let message = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or("(a panic without a message)");
        panic!("a worker thread panicked: {message}")
    })
}
