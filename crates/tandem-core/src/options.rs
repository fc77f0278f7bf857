//! Connection options, parsed from the URLs both executors accept:
//! `sqlite::memory:`, `sqlite://path`, `postgres://user:pass@host:port/db`, `mysql://user:pass@host:port/db`.
//!
//! Parsing is done here, once, so both executors agree on what a URL means; each executor turns the result
//! into its driver's own configuration.

use tandem_sql::Dialect;

use crate::error::{Error, Result};

/// Where and how to connect.
#[derive(Clone, Debug, PartialEq)]
pub struct ConnectOptions {
    /// Which engine.
    pub dialect: Dialect,
    /// Host name or address (server engines).
    pub host: String,
    /// TCP port (server engines).
    pub port: u16,
    /// User name.
    pub user: String,
    /// Password, if any.
    pub password: Option<String>,
    /// Database name (server engines).
    pub database: String,
    /// SQLite: the database file; `None` is an in-memory database.
    pub path: Option<String>,
    /// PostgreSQL: the `search_path` to set on every connection (a per-test schema, for instance).
    pub search_path: Option<String>,
    /// PostgreSQL: the `application_name` the server shows for these connections (`pg_stat_activity`).
    pub application_name: Option<String>,
    /// SQLite: which driver the async executor uses (`?driver=rusqlite|sqlx`); the blocking executor always
    /// uses rusqlite.
    pub sqlite_driver: SqliteDriver,
    /// The URL as given, password removed, for error messages.
    pub display: String,
}

/// How the async executor reaches SQLite.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum SqliteDriver {
    /// rusqlite connections, each on a worker thread of its own (`tandem-sqlite`): the default, about twice
    /// as fast as sqlx's SQLite driver on batch work here (see `tandem-bench seed`).
    #[default]
    Rusqlite,
    /// sqlx's own SQLite driver (its worker thread per connection).
    Sqlx,
}

impl ConnectOptions {
    /// Parses a URL.
    pub fn parse(url: &str) -> Result<Self> {
        let bad = |reason: &str| Error::InvalidUrl {
            url: redact(url),
            reason: reason.to_owned(),
        };
        let (scheme, rest) = url
            .split_once(':')
            .ok_or_else(|| bad("no scheme (sqlite:, postgres:, mysql:)"))?;
        let dialect = match scheme {
            "sqlite" => Dialect::Sqlite,
            "postgres" | "postgresql" => Dialect::Postgres,
            "mysql" | "mariadb" => Dialect::MySql,
            _ => return Err(bad("unknown scheme (sqlite, postgres, mysql)")),
        };
        if dialect == Dialect::Sqlite {
            let path = rest.strip_prefix("//").unwrap_or(rest);
            let (path, query) = path.split_once('?').unwrap_or((path, ""));
            let mut sqlite_driver = SqliteDriver::default();
            for pair in query.split('&').filter(|p| !p.is_empty()) {
                match pair.split_once('=').unwrap_or((pair, "")) {
                    ("driver", "sqlx") => sqlite_driver = SqliteDriver::Sqlx,
                    ("driver", "rusqlite") => sqlite_driver = SqliteDriver::Rusqlite,
                    ("driver", _) => return Err(bad("driver must be rusqlite or sqlx")),
                    _ => {}
                }
            }
            let path = match path {
                ":memory:" | "" => None,
                p => Some(p.to_owned()),
            };
            return Ok(ConnectOptions {
                dialect,
                host: String::new(),
                port: 0,
                user: String::new(),
                password: None,
                database: String::new(),
                path,
                search_path: None,
                application_name: None,
                sqlite_driver,
                display: redact(url),
            });
        }
        let rest = rest
            .strip_prefix("//")
            .ok_or_else(|| bad("expected scheme://host"))?;
        let (authority, tail) = rest.split_once('/').unwrap_or((rest, ""));
        let (database, query) = tail.split_once('?').unwrap_or((tail, ""));
        let (userinfo, hostport) = match authority.rsplit_once('@') {
            Some((u, h)) => (Some(u), h),
            None => (None, authority),
        };
        let (user, password) = match userinfo {
            Some(u) => match u.split_once(':') {
                Some((name, pass)) => (decode(name), Some(decode(pass))),
                None => (decode(u), None),
            },
            None => (String::new(), None),
        };
        let default_port = if dialect == Dialect::Postgres {
            5432
        } else {
            3306
        };
        let (host, port) = match hostport.rsplit_once(':') {
            Some((h, p)) => (h.to_owned(), parse_port(p).map_err(bad)?),
            None => (hostport.to_owned(), default_port),
        };
        if host.is_empty() {
            return Err(bad("no host"));
        }
        let mut search_path = None;
        let mut application_name = None;
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            match k {
                "search_path" | "schema" if dialect == Dialect::Postgres => {
                    search_path = Some(decode(v))
                }
                "application_name" if dialect == Dialect::Postgres => {
                    application_name = Some(decode(v))
                }
                // TLS settings are for the async driver's URL; tandem connects without TLS either way.
                "sslmode" | "ssl-mode" | "ssl_mode" => {}
                _ => {}
            }
        }
        let user = if user.is_empty() {
            if dialect == Dialect::Postgres {
                "postgres".into()
            } else {
                "root".into()
            }
        } else {
            user
        };
        Ok(ConnectOptions {
            dialect,
            host,
            port,
            user,
            password,
            database: decode(database),
            path: None,
            search_path,
            application_name,
            sqlite_driver: SqliteDriver::default(),
            display: redact(url),
        })
    }

    /// Whether this is SQLite in memory (every pool connection would see its own database, so the pool
    /// holds one connection).
    pub fn is_memory(&self) -> bool {
        self.dialect == Dialect::Sqlite && self.path.is_none()
    }
}

/// A TCP port: 1 to 65535.
fn parse_port(p: &str) -> std::result::Result<u16, &'static str> {
    if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) {
        return Err("port is not a number");
    }
    match p.parse::<u32>() {
        Ok(n @ 1..=65_535) => Ok(n as u16),
        _ => Err("port out of range (1 to 65535)"),
    }
}

/// The URL with its password replaced by `***`.
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let (authority, tail) = rest
        .split_once('/')
        .map_or((rest, None), |(a, t)| (a, Some(t)));
    let authority = match authority.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _)) => format!("{user}:***@{host}"),
            None => format!("{userinfo}@{host}"),
        },
        None => authority.to_owned(),
    };
    match tail {
        Some(t) => format!("{scheme}://{authority}/{t}"),
        None => format!("{scheme}://{authority}"),
    }
}

fn decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(Ok(b)) = s.get(i + 1..i + 3).map(|hex| u8::from_str_radix(hex, 16))
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each URL form parses into the options the drivers need, and the password never shows.
    #[test]
    fn url_forms() {
        let m = ConnectOptions::parse("sqlite::memory:").unwrap();
        assert!(m.is_memory());
        let f = ConnectOptions::parse("sqlite://data/app.db").unwrap();
        assert_eq!(f.path.as_deref(), Some("data/app.db"));
        let abs = ConnectOptions::parse("sqlite:///tmp/x.db?mode=rwc").unwrap();
        assert_eq!(abs.path.as_deref(), Some("/tmp/x.db"));
        assert_eq!(abs.sqlite_driver, SqliteDriver::Rusqlite);
        let sqlx = ConnectOptions::parse("sqlite://x.db?driver=sqlx").unwrap();
        assert_eq!(
            (sqlx.path.as_deref(), sqlx.sqlite_driver),
            (Some("x.db"), SqliteDriver::Sqlx)
        );
        assert!(ConnectOptions::parse("sqlite://x.db?driver=odbc").is_err());
        let pg = ConnectOptions::parse(
            "postgres://me:p%40ss@db.local:6543/app?search_path=t1&sslmode=disable",
        )
        .unwrap();
        assert_eq!(
            (
                pg.dialect,
                pg.host.as_str(),
                pg.port,
                pg.user.as_str(),
                pg.password.as_deref(),
                pg.database.as_str()
            ),
            (
                Dialect::Postgres,
                "db.local",
                6543,
                "me",
                Some("p@ss"),
                "app"
            )
        );
        assert_eq!(pg.search_path.as_deref(), Some("t1"));
        let named = ConnectOptions::parse("postgres://h/db?application_name=worker%201").unwrap();
        assert_eq!(named.application_name.as_deref(), Some("worker 1"));
        assert!(!pg.display.contains("p%40ss"), "{}", pg.display);
        let my = ConnectOptions::parse("mysql://root@127.0.0.1/test").unwrap();
        assert_eq!(
            (my.dialect, my.port, my.password),
            (Dialect::MySql, 3306, None)
        );
        for bad in [
            "nothing",
            "oracle://x",
            "postgres://",
            "mysql://h:port/db",
            "postgres:x",
        ] {
            assert!(
                matches!(ConnectOptions::parse(bad), Err(Error::InvalidUrl { .. })),
                "{bad}"
            );
        }
        // A port says what is wrong with it.
        for (url, reason) in [
            ("postgres://h:99999/db", "port out of range (1 to 65535)"),
            ("mysql://h:0/db", "port out of range (1 to 65535)"),
            ("mysql://h:port/db", "port is not a number"),
            ("mysql://h:-1/db", "port is not a number"),
            ("postgres://h:/db", "port is not a number"),
        ] {
            match ConnectOptions::parse(url) {
                Err(Error::InvalidUrl { reason: r, .. }) => assert_eq!(r, reason, "{url}"),
                other => panic!("{url}: {other:?}"),
            }
        }
        assert_eq!(
            ConnectOptions::parse("mysql://h:65535/db").unwrap().port,
            65_535
        );
    }
}
