//! What the workshop's tests share with tandem's own: a fresh SQLite file, PostgreSQL schema or MariaDB
//! database per test (`db::target`), URLs from `TANDEM_POSTGRES_URL` / `TANDEM_MYSQL_URL`, and a server that
//! cannot be reached reported and skipped — except under `CI=true`, where it fails.

pub use tandem_test_support::proxy;

/// A database of its own per check: tandem's test databases, and the workshop's way to skip a server.
pub mod db {
    pub use tandem_test_support::db::*;

    use tandem_sql::Dialect;
    use tandem_test_support::harness;
    use workshop_harness::Engines;

    /// [`target`] for checks that run every engine that answers within one test (a learner runs them
    /// with or without the servers): `None` when the server is unreachable, after telling the runner
    /// which check skipped it, with the URL and the variable that sets it; a failure under `CI=true`. An
    /// engine that answers is told to the runner too, so that `just check` can say which engines ran.
    pub fn target_or_skip(dialect: Dialect, name: &str) -> Option<TestTarget> {
        if dialect != Dialect::Sqlite
            && let Err(why) = harness::probe(dialect)
        {
            if std::env::var("CI").is_ok_and(|v| v == "true") {
                panic!("{why} (CI=true: a missing server is a failure)");
            }
            Engines::say_skipped(name, &why);
            return None;
        }
        Engines::say_reached(harness::server_name(dialect));
        Some(target(dialect, name))
    }
}

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

/// Asks, from a connection of its own, whether some transaction still holds write locks a test's
/// transaction took: to check that a cancelled transaction was rolled back at once, not when its
/// connection is next lent. Each question opens its connection on a thread of its own (so it can be asked
/// from async code, through `spawn_blocking`) and closes it.
#[derive(Clone, Debug)]
pub struct LockProbe {
    url: String,
}

impl LockProbe {
    /// A probe of the database at `url` (a test target's URL).
    pub fn new(url: &str) -> LockProbe {
        LockProbe {
            url: url.to_owned(),
        }
    }

    /// Whether no other transaction holds a write lock on rows `ids` of `table` — on SQLite, which locks the
    /// whole database for a writer, whether any transaction holds the write lock. Answers at once, never
    /// waiting for a lock.
    pub fn free(&self, table: &str, ids: &[i64]) -> bool {
        let (url, table) = (self.url.clone(), table.to_owned());
        let list = ids
            .iter()
            .map(i64::to_string)
            .collect::<Vec<_>>()
            .join(", ");
        std::thread::spawn(move || {
            if let Some(path) = url.strip_prefix("sqlite://") {
                let c = rusqlite::Connection::open(path).expect("a second connection to the file");
                // Busy at once when another connection writes (rusqlite's default waits 5 s).
                c.busy_timeout(std::time::Duration::ZERO)
                    .expect("a busy timeout of zero");
                return c.execute_batch("BEGIN IMMEDIATE; ROLLBACK").is_ok();
            }
            use tandem_blocking::Executor as _;
            let config = tandem_blocking::PoolConfig {
                max_size: 1,
                min_idle: Some(1),
                ..tandem_blocking::PoolConfig::default()
            };
            let db = tandem_blocking::Database::connect_with(&url, config)
                .expect("the probe's own connection");
            let sql = format!("SELECT id FROM {table} WHERE id IN ({list}) FOR UPDATE NOWAIT");
            db.execute(&tandem_sql::raw(sql, vec![])).is_ok()
        })
        .join()
        .expect("the lock probe's thread")
    }
}

/// A server on loopback that accepts every connection, holds it for a while without a word, then closes
/// it: every login fails, slowly — and it counts how many connections it held at once. For checks of a
/// pool's count of open connections that need no database: connecting takes as long as the hold, so
/// callers that arrive together are all connecting at the same time.
pub struct NoLogin {
    port: u16,
    accepted: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    peak: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl NoLogin {
    /// Starts listening on a free port of 127.0.0.1; each connection is closed `hold` after it was
    /// accepted.
    pub fn start(hold: std::time::Duration) -> NoLogin {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a local port");
        let port = listener.local_addr().expect("its address").port();
        let (accepted, peak, stop) = (
            Arc::new(AtomicUsize::new(0)),
            Arc::new(AtomicUsize::new(0)),
            Arc::new(AtomicBool::new(false)),
        );
        let held = Arc::new(AtomicUsize::new(0));
        let (counted, highest, stopped) = (accepted.clone(), peak.clone(), stop.clone());
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                if stopped.load(Ordering::SeqCst) {
                    break;
                }
                counted.fetch_add(1, Ordering::SeqCst);
                let now = held.fetch_add(1, Ordering::SeqCst) + 1;
                highest.fetch_max(now, Ordering::SeqCst);
                let held = held.clone();
                std::thread::spawn(move || {
                    std::thread::sleep(hold);
                    // Counted out before the client can see the close, and so before it can try again.
                    held.fetch_sub(1, Ordering::SeqCst);
                    drop(client);
                });
            }
        });
        NoLogin {
            port,
            accepted,
            peak,
            stop,
        }
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Connections accepted so far.
    pub fn accepted(&self) -> usize {
        self.accepted.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// The most connections it held at one time.
    pub fn peak(&self) -> usize {
        self.peak.load(std::sync::atomic::Ordering::SeqCst)
    }
}

impl Drop for NoLogin {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        // Wakes the accept loop, which then sees `stop` and drops the listener.
        let _ = std::net::TcpStream::connect(("127.0.0.1", self.port));
    }
}
