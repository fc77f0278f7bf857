//! Databases for the executor tests: SQLite always, PostgreSQL and MariaDB when reachable.
//!
//! Each test gets its own database: a temporary SQLite file, a fresh PostgreSQL schema (through
//! `search_path`), a fresh MariaDB database; all dropped when the test ends. URLs come from
//! `TANDEM_POSTGRES_URL` and `TANDEM_MYSQL_URL`. An unreachable server is reported and the test skipped —
//! except under `CI=true`, where it fails.
#![allow(dead_code)]

use std::sync::atomic::{AtomicU32, Ordering};

use tandem_blocking::{ConnectOptions, Database, PoolConfig};
use tandem_sql::{Dialect, raw};

/// Default PostgreSQL URL (DESIGN.md).
pub const POSTGRES_DEFAULT: &str = "postgres://postgres@127.0.0.1:5432/test";
/// Default MariaDB URL (DESIGN.md).
pub const MYSQL_DEFAULT: &str = "mysql://root@127.0.0.1:3306/test";

static COUNTER: AtomicU32 = AtomicU32::new(0);

/// The URL of a server engine, from its environment variable or the default.
pub fn server_url(dialect: Dialect) -> (String, &'static str) {
    match dialect {
        Dialect::Postgres => (
            std::env::var("TANDEM_POSTGRES_URL").unwrap_or_else(|_| POSTGRES_DEFAULT.into()),
            "TANDEM_POSTGRES_URL",
        ),
        Dialect::MySql => (
            std::env::var("TANDEM_MYSQL_URL").unwrap_or_else(|_| MYSQL_DEFAULT.into()),
            "TANDEM_MYSQL_URL",
        ),
        Dialect::Sqlite => (String::new(), ""),
    }
}

/// A database of its own for one test, removed on drop.
pub struct TestDb {
    /// The database under test.
    pub db: Database,
    /// A connection to the server outside the test's schema (to kill backends, drop the schema).
    pub admin: Option<Database>,
    /// The URL the test database was opened with.
    pub url: String,
    cleanup: Option<String>,
    file: Option<std::path::PathBuf>,
}

impl Drop for TestDb {
    fn drop(&mut self) {
        if let (Some(admin), Some(sql)) = (&self.admin, &self.cleanup) {
            let _ = admin.execute(&raw(sql.clone(), vec![]));
        }
        if let Some(f) = &self.file {
            for suffix in ["", "-wal", "-shm"] {
                let _ = std::fs::remove_file(format!("{}{suffix}", f.display()));
            }
        }
    }
}

/// Opens a fresh database on `dialect` for test `name`; `None` (after saying why) when the server is
/// unreachable outside CI.
pub fn open(dialect: Dialect, name: &str, config: PoolConfig) -> Option<TestDb> {
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let unique = format!("t_{}_{}_{}", name, std::process::id(), n);
    match dialect {
        Dialect::Sqlite => {
            let file = std::env::temp_dir().join(format!("tandem-{unique}.db"));
            let url = format!("sqlite://{}", file.display());
            let db = Database::connect_with(&url, config).expect("SQLite opens");
            Some(TestDb {
                db,
                admin: None,
                url,
                cleanup: None,
                file: Some(file),
            })
        }
        Dialect::Postgres | Dialect::MySql => {
            let (base, var) = server_url(dialect);
            let admin = match Database::connect_with(
                &base,
                PoolConfig {
                    max_size: 2,
                    ..PoolConfig::default()
                },
            ) {
                Ok(a) => a,
                Err(e) => {
                    let msg = format!(
                        "cannot reach {dialect} at {} ({e}); set {var} to a reachable server",
                        ConnectOptions::parse(&base)
                            .map(|o| o.display)
                            .unwrap_or(base.clone())
                    );
                    if std::env::var("CI").is_ok_and(|v| v == "true") {
                        panic!("{msg} (CI=true: a missing server is a failure)");
                    }
                    eprintln!("SKIPPED {name} on {dialect}: {msg}");
                    return None;
                }
            };
            let (create, drop_sql) = if dialect == Dialect::Postgres {
                (
                    format!("CREATE SCHEMA {unique}"),
                    format!("DROP SCHEMA IF EXISTS {unique} CASCADE"),
                )
            } else {
                (
                    format!("CREATE DATABASE {unique}"),
                    format!("DROP DATABASE IF EXISTS {unique}"),
                )
            };
            admin
                .execute(&raw(create, vec![]))
                .expect("create the test schema");
            let mut opts = ConnectOptions::parse(&base).expect("valid URL");
            if dialect == Dialect::Postgres {
                opts.search_path = Some(unique.clone());
            } else {
                opts.database = unique.clone();
            }
            let db = Database::open(opts, config).expect("open the test schema");
            Some(TestDb {
                db,
                admin: Some(admin),
                url: base,
                cleanup: Some(drop_sql),
                file: None,
            })
        }
    }
}

/// Declares one test per engine: `engine_test!(name, |t: &TestDb| { .. })` makes `name::sqlite`,
/// `name::postgres` and `name::mysql`.
#[macro_export]
macro_rules! engine_test {
    ($(#[$doc:meta])* $name:ident, $body:expr) => {
        $(#[$doc])*
        mod $name {
            use super::*;
            fn run(dialect: tandem_sql::Dialect) {
                if let Some(t) = $crate::db::open(dialect, stringify!($name), tandem_blocking::PoolConfig::default()) {
                    let body: fn(&$crate::db::TestDb) = $body;
                    body(&t);
                }
            }
            #[test]
            fn sqlite() {
                run(tandem_sql::Dialect::Sqlite)
            }
            #[test]
            fn postgres() {
                run(tandem_sql::Dialect::Postgres)
            }
            #[test]
            fn mysql() {
                run(tandem_sql::Dialect::MySql)
            }
        }
    };
}
