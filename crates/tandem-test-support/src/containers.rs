//! PostgreSQL and MariaDB in containers, started once per test process through `testcontainers-modules`
//! (feature `testcontainers`; see [`crate::servers`] for when). The images match the versions tandem is
//! tested against on its own machines (PostgreSQL 15, MariaDB 10.11); containers are removed when the
//! process ends (testcontainers' reaper).

use std::sync::{Mutex, OnceLock};

use tandem_sql::Dialect;
use testcontainers_modules::mariadb::Mariadb;
use testcontainers_modules::postgres::Postgres;
use testcontainers_modules::testcontainers::runners::SyncRunner;
use testcontainers_modules::testcontainers::{Container, ImageExt};

/// The containers of this process, kept alive until it ends.
struct Started {
    _postgres: Mutex<Container<Postgres>>,
    _mariadb: Mutex<Container<Mariadb>>,
    postgres_url: String,
    mysql_url: String,
}

/// The URL of `dialect`'s container, starting both on first use; the reason when they cannot start.
pub(crate) fn url(dialect: Dialect) -> Result<String, String> {
    static STARTED: OnceLock<Result<Started, String>> = OnceLock::new();
    let started = STARTED.get_or_init(start).as_ref().map_err(Clone::clone)?;
    Ok(match dialect {
        Dialect::MySql => started.mysql_url.clone(),
        _ => started.postgres_url.clone(),
    })
}

fn start() -> Result<Started, String> {
    let failed =
        |what: &str, e: &dyn std::fmt::Display| format!("cannot start {what} in a container: {e}");
    let postgres = Postgres::default()
        .with_db_name("test")
        .with_host_auth()
        .with_tag("15-alpine")
        .start()
        .map_err(|e| failed("PostgreSQL", &e))?;
    let pg_host = postgres.get_host().map_err(|e| failed("PostgreSQL", &e))?;
    let pg_port = postgres
        .get_host_port_ipv4(5432)
        .map_err(|e| failed("PostgreSQL", &e))?;
    let mariadb = Mariadb::default()
        .with_tag("10.11")
        .start()
        .map_err(|e| failed("MariaDB", &e))?;
    let my_host = mariadb.get_host().map_err(|e| failed("MariaDB", &e))?;
    let my_port = mariadb
        .get_host_port_ipv4(3306)
        .map_err(|e| failed("MariaDB", &e))?;
    eprintln!(
        "tandem-test-support: PostgreSQL at {pg_host}:{pg_port}, MariaDB at {my_host}:{my_port} (containers)"
    );
    Ok(Started {
        postgres_url: format!("postgres://postgres@{pg_host}:{pg_port}/test"),
        mysql_url: format!("mysql://root@{my_host}:{my_port}/test"),
        _postgres: Mutex::new(postgres),
        _mariadb: Mutex::new(mariadb),
    })
}
