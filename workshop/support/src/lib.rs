//! What the workshop's tests share with tandem's own: a fresh SQLite file, PostgreSQL schema or MariaDB
//! database per test (`db::target`), URLs from `TANDEM_POSTGRES_URL` / `TANDEM_MYSQL_URL`, and a server that
//! cannot be reached reported and skipped — except under `CI=true`, where it fails.

pub use tandem_test_support::db;

use tandem_sql::Dialect;

/// The engines a stage's tests run on: SQLite always, the servers when reachable.
pub const ENGINES: [Dialect; 3] = [Dialect::Sqlite, Dialect::Postgres, Dialect::MySql];
