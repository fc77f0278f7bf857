//! Databases for the executor tests: SQLite always, PostgreSQL and MariaDB when reachable.
//!
//! Each test gets its own database: a temporary SQLite file, a fresh PostgreSQL schema (through
//! `search_path`), a fresh MariaDB database; all dropped when the test ends. URLs come from
//! `TANDEM_POSTGRES_URL` and `TANDEM_MYSQL_URL`. Whether a server is there is the harness's question: a case
//! declares the servers it needs ([`crate::harness::Case::needs`]) and is reported ignored, with the reason,
//! when one is missing (failed under `CI=true`). A test that gets here without its server fails: it never
//! passes without having run.

use std::sync::atomic::{AtomicU32, Ordering};
use tandem_blocking::Executor as _;

use tandem_blocking::{ConnectOptions, Database, PoolConfig};
use tandem_sql::{Dialect, raw};

static COUNTER: AtomicU32 = AtomicU32::new(0);

pub use crate::servers::{MYSQL_DEFAULT, POSTGRES_DEFAULT, server_url};

/// The async driver the suites run on: `TANDEM_ASYNC_DRIVER=sqlx` reruns every suite on sqlx's drivers
/// (CI does, `just sqlx-suites`), unset or `native` on the engines' own clients (tandem's default). Applied
/// to every [`TestTarget`] and by [`with_driver`] to the URLs a suite builds itself; the blocking executor
/// reads `?driver=` and ignores it (it has one driver per engine). Panics on any other value.
pub fn async_driver() -> tandem_core::AsyncDriver {
    match std::env::var("TANDEM_ASYNC_DRIVER").as_deref() {
        Err(_) | Ok("" | "native") => tandem_core::AsyncDriver::Native,
        Ok("sqlx") => tandem_core::AsyncDriver::Sqlx,
        Ok(other) => panic!("TANDEM_ASYNC_DRIVER={other}: use native (the default) or sqlx"),
    }
}

/// Which runners a suite that runs both drives, as `use_async` flags: both, except in the rerun on sqlx
/// (`TANDEM_ASYNC_DRIVER=sqlx`), where only the async side's driver changed and the blocking side's cases
/// would run a second time for nothing.
pub fn runners() -> Vec<bool> {
    match async_driver() {
        tandem_core::AsyncDriver::Native => vec![false, true],
        tandem_core::AsyncDriver::Sqlx => vec![true],
    }
}

/// `url` with `driver=sqlx` added when [`async_driver`] says so; unchanged otherwise.
pub fn with_driver(url: &str) -> String {
    spelled_with(url.to_owned(), async_driver())
}

/// `url` naming `driver` when it is not the default.
fn spelled_with(url: String, driver: tandem_core::AsyncDriver) -> String {
    match driver {
        tandem_core::AsyncDriver::Native => url,
        tandem_core::AsyncDriver::Sqlx => {
            let sep = if url.contains('?') { '&' } else { '?' };
            format!("{url}{sep}driver=sqlx")
        }
    }
}

/// Where one test's database lives: options pointing at a fresh schema (or file), removed on drop.
pub struct TestTarget {
    /// Options for the test's own schema or file.
    pub options: ConnectOptions,
    /// A connection to the server outside the test's schema (to kill backends, drop the schema).
    pub admin: Option<Database>,
    cleanup: Option<String>,
    file: Option<std::path::PathBuf>,
}

impl Drop for TestTarget {
    fn drop(&mut self) {
        if let Some(admin) = self.admin.take() {
            // On a plain thread, which also drops the client: the blocking PostgreSQL client cannot run (or
            // close) on an async test's runtime threads.
            let sql = self.cleanup.take();
            let _ =
                std::thread::spawn(move || sql.map(|sql| admin.execute(&raw(sql, vec![])))).join();
        }
        if let Some(f) = &self.file {
            for suffix in ["", "-wal", "-shm"] {
                let _ = std::fs::remove_file(format!("{}{suffix}", f.display()));
            }
        }
    }
}

impl TestTarget {
    /// A URL for the test's own schema, database or file, for child processes.
    pub fn url(&self) -> String {
        let o = &self.options;
        let auth = match &o.password {
            Some(p) => format!("{}:{p}", o.user),
            None => o.user.clone(),
        };
        let tls = o.tls.spelling(o.dialect);
        let url = match o.dialect {
            Dialect::Sqlite => format!("sqlite://{}", o.path.as_deref().unwrap_or(":memory:")),
            Dialect::Postgres => format!(
                "postgres://{auth}@{}/{}?search_path={}&sslmode={tls}",
                o.target(),
                o.database,
                o.search_path.as_deref().unwrap_or("public")
            ),
            Dialect::MySql => format!(
                "mysql://{auth}@{}/{}?ssl-mode={tls}",
                o.target(),
                o.database
            ),
        };
        spelled_with(url, o.async_driver)
    }
}

/// A blocking database of its own for one test.
pub struct TestDb {
    /// The database under test.
    pub db: Database,
    /// The schema it lives in; dropped after `db`.
    pub target: TestTarget,
}

impl TestDb {
    /// The admin connection of server engines.
    pub fn admin(&self) -> Option<&Database> {
        self.target.admin.as_ref()
    }

    /// A runtime and an async pool on the same database, for work run on both executors.
    pub fn async_twin(
        &self,
        config: PoolConfig,
    ) -> (tokio::runtime::Runtime, tandem_async::Database) {
        let rt = crate::harness::runtime();
        let adb = rt
            .block_on(tandem_async::Database::open(
                self.target.options.clone(),
                config,
            ))
            .expect("open the async twin");
        (rt, adb)
    }
}

/// A fresh schema (PostgreSQL), database (MariaDB) or file (SQLite) for test `name`. Panics, saying which
/// URL and which variable sets it, when the server is unreachable.
pub fn target(dialect: Dialect, name: &str) -> TestTarget {
    match dialect {
        Dialect::Sqlite => target_at(dialect, "", "", name),
        server => {
            let (base, var) = server_url(server);
            target_at(dialect, &base, var, name)
        }
    }
}

/// [`target`] on the server at `base` (a server a test started for itself, say); `var` is the variable a
/// failure message tells the user to set (empty: none).
pub fn target_at(dialect: Dialect, base: &str, var: &str, name: &str) -> TestTarget {
    let mut target = target_on_default_driver(dialect, base, var, name);
    // A base URL naming its driver keeps it; the variable moves the default.
    if async_driver() == tandem_core::AsyncDriver::Sqlx {
        target.options.async_driver = tandem_core::AsyncDriver::Sqlx;
    }
    target
}

fn target_on_default_driver(dialect: Dialect, base: &str, var: &str, name: &str) -> TestTarget {
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let unique = format!("t_{}_{}_{}", name, std::process::id(), n);
    match dialect {
        Dialect::Sqlite => {
            let file = std::env::temp_dir().join(format!("tandem-{unique}.db"));
            let options =
                ConnectOptions::parse(&format!("sqlite://{}", file.display())).expect("valid URL");
            TestTarget {
                options,
                admin: None,
                cleanup: None,
                file: Some(file),
            }
        }
        Dialect::Postgres | Dialect::MySql => {
            let admin = match Database::connect_with(
                base,
                PoolConfig {
                    max_size: 2,
                    // The admin connection outlives killed backends and server restarts in some tests.
                    validate_on_checkout: true,
                    ..PoolConfig::default()
                },
            ) {
                Ok(a) => a,
                Err(e) => {
                    let at = ConnectOptions::parse(base)
                        .map(|o| o.display)
                        .unwrap_or(base.to_owned());
                    let msg = if var.is_empty() {
                        format!("cannot reach {dialect} at {at} ({e})")
                    } else {
                        format!(
                            "cannot reach {dialect} at {at} ({e}); set {var} to a reachable server"
                        )
                    };
                    panic!(
                        "{msg} (a case that needs {dialect} declares it with `Case::needs`, and is then \
                         reported ignored when the server is missing)"
                    );
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
            let mut options = ConnectOptions::parse(base).expect("valid URL");
            if dialect == Dialect::Postgres {
                options.search_path = Some(unique.clone());
                // So a test can find (and kill) exactly its own backends in pg_stat_activity.
                options.application_name = Some(unique.clone());
            } else {
                options.database = unique.clone();
            }
            TestTarget {
                options,
                admin: Some(admin),
                cleanup: Some(drop_sql),
                file: None,
            }
        }
    }
}

/// A blocking database on a fresh target.
pub fn open(dialect: Dialect, name: &str, config: PoolConfig) -> TestDb {
    let target = target(dialect, name);
    let db = Database::open(target.options.clone(), config).expect("open the test database");
    TestDb { db, target }
}

/// Declares one test per engine: `engine_test!(name, |t: &TestDb| { .. })` makes `name::run(dialect)`,
/// which the file's `main` lists with [`crate::harness::engines`] as `name::sqlite`, `name::postgres` and
/// `name::mysql` (each declaring its server).
#[macro_export]
macro_rules! engine_test {
    ($(#[$doc:meta])* $name:ident, $body:expr) => {
        $(#[$doc])*
        pub(crate) mod $name {
            use super::*;
            pub(crate) fn run(dialect: tandem_sql::Dialect) {
                let t = $crate::db::open(dialect, stringify!($name), $crate::tandem_blocking::PoolConfig::default());
                let body: fn(&$crate::db::TestDb) = $body;
                body(&t);
            }
        }
    };
}
