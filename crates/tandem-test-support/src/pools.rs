//! One face over both executors for the pool tests: open, hold a connection, wait in the queue (a thread on
//! the blocking side, a tokio task on the async side), query, read metrics; and the server-side view of a
//! test's connections (count them, kill them).

use std::sync::Arc;
use std::time::{Duration, Instant};
use tandem_async::Executor as _;
use tandem_blocking::Executor as _;

use tandem_blocking::{PoolConfig, PoolMetrics};
use tandem_core::{ConnectOptions, Error, Result, TxOptions};
use tandem_sql::{Dialect, Value, raw};

use crate::db::{self, TestTarget};

/// Which executor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// tandem-blocking, waiting on threads.
    Blocking,
    /// tandem-async, waiting in tasks.
    Async,
}

/// A database on either executor.
#[derive(Debug)]
pub struct Exec {
    /// Which executor.
    pub side: Side,
    db: Db,
}

#[derive(Debug)]
enum Db {
    Blocking(tandem_blocking::Database),
    Async(tandem_async::Database, Arc<tokio::runtime::Runtime>),
}

fn runtime() -> Arc<tokio::runtime::Runtime> {
    Arc::new(
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a runtime"),
    )
}

const SELECT_ONE: &str = "SELECT 1";

/// A connection held until `release`.
pub struct Held(Box<dyn FnOnce() + Send>);

impl Held {
    /// Gives the connection back.
    pub fn release(self) {
        (self.0)()
    }
}

/// A thread or task started by [`Exec::spawn_holding`].
pub struct Joiner(Box<dyn FnOnce() -> Result<()> + Send>);

impl Joiner {
    /// Waits for it to end.
    pub fn join(self) -> Result<()> {
        (self.0)()
    }
}

impl Exec {
    /// A database of its own for one test (see [`db::target`]).
    pub fn open(
        side: Side,
        dialect: Dialect,
        name: &str,
        config: PoolConfig,
    ) -> (Exec, TestTarget) {
        let target = db::target(dialect, name);
        let exec = Exec::open_target(side, &target, config).expect("open the test database");
        (exec, target)
    }

    /// Opens a test target.
    pub fn open_target(side: Side, target: &TestTarget, config: PoolConfig) -> Result<Exec> {
        Exec::open_options(side, target.options.clone(), config)
    }

    /// Opens a URL (on the suite's async driver, [`crate::db::with_driver`], for the async side).
    pub fn connect(side: Side, url: &str, config: PoolConfig) -> Result<Exec> {
        let url = match side {
            Side::Blocking => url.to_owned(),
            Side::Async => crate::db::with_driver(url),
        };
        Exec::open_options(side, ConnectOptions::parse(&url)?, config)
    }

    fn open_options(side: Side, options: ConnectOptions, config: PoolConfig) -> Result<Exec> {
        let db = match side {
            Side::Blocking => Db::Blocking(tandem_blocking::Database::open(options, config)?),
            Side::Async => {
                let rt = runtime();
                let db = rt.block_on(tandem_async::Database::open(options, config))?;
                Db::Async(db, rt)
            }
        };
        Ok(Exec { side, db })
    }

    /// `SELECT 1` through the pool.
    pub fn query(&self) -> Result<i64> {
        match &self.db {
            Db::Blocking(db) => db.fetch_one::<(i64,)>(&raw(SELECT_ONE, vec![])),
            Db::Async(db, rt) => rt.block_on(db.fetch_one::<(i64,)>(&raw(SELECT_ONE, vec![]))),
        }
        .map(|(n,)| n)
    }

    /// `SELECT 1` given up after `limit` (async: the call's future is dropped).
    pub fn query_within(&self, limit: Duration) -> std::result::Result<i64, String> {
        let Db::Async(db, rt) = &self.db else {
            panic!("a blocking call cannot be given up")
        };
        rt.block_on(async {
            tokio::time::timeout(limit, db.fetch_one::<(i64,)>(&raw(SELECT_ONE, vec![]))).await
        })
        .map_err(|_| "gave up".to_owned())?
        .map(|(n,)| n)
        .map_err(|e| e.to_string())
    }

    /// A task waiting in the async pool's queue, to abort.
    pub fn spawn_abortable_query(&self) -> tokio::task::JoinHandle<Result<(i64,)>> {
        let Db::Async(db, rt) = &self.db else {
            panic!("only async acquires can be cancelled")
        };
        let db = db.clone();
        rt.spawn(async move { db.fetch_one::<(i64,)>(&raw(SELECT_ONE, vec![])).await })
    }

    /// The pool's metrics.
    pub fn metrics(&self) -> PoolMetrics {
        match &self.db {
            Db::Blocking(db) => db.pool_metrics(),
            Db::Async(db, _) => db.pool_metrics(),
        }
    }

    /// Holds one connection (in a read-only transaction on the async side) until released.
    pub fn hold(&self) -> Held {
        self.hold_in(TxOptions::default().read_only())
    }

    /// Holds one connection in a write transaction until released: on a SQLite file, also the database's
    /// turn to write.
    pub fn hold_writer(&self) -> Held {
        self.hold_in(TxOptions::default())
    }

    fn hold_in(&self, opts: TxOptions) -> Held {
        match &self.db {
            Db::Blocking(db) if opts.read_only => {
                let conn = db.checkout().expect("a connection to hold");
                Held(Box::new(move || drop(conn)))
            }
            Db::Blocking(db) => {
                let (got, got_rx) = std::sync::mpsc::channel();
                let (release, release_rx) = std::sync::mpsc::channel::<()>();
                let db = db.clone();
                let h = std::thread::spawn(move || {
                    db.transaction_with(opts, |_| {
                        got.send(()).unwrap();
                        let _ = release_rx.recv();
                        Ok(())
                    })
                    .expect("a write transaction to hold")
                });
                got_rx.recv().unwrap();
                Held(Box::new(move || {
                    release.send(()).unwrap();
                    h.join().unwrap();
                }))
            }
            Db::Async(db, rt) => {
                let (got, got_rx) = std::sync::mpsc::channel();
                let (release, release_rx) = tokio::sync::oneshot::channel::<()>();
                let db = db.clone();
                let task = rt.spawn(async move {
                    let tx = db.begin(opts).await.expect("a connection to hold");
                    got.send(()).unwrap();
                    let _ = release_rx.await;
                    tx.commit().await.unwrap();
                });
                got_rx.recv().unwrap();
                let rt = rt.clone();
                Held(Box::new(move || {
                    release.send(()).unwrap();
                    rt.block_on(task).unwrap();
                }))
            }
        }
    }

    /// Runs `sql` in a write transaction on another thread (blocking) or task (async), with these options.
    pub fn spawn_writing(&self, sql: &str, opts: TxOptions) -> Joiner {
        let statement = raw(sql, vec![]);
        match &self.db {
            Db::Blocking(db) => {
                let db = db.clone();
                let h = std::thread::spawn(move || {
                    db.transaction_with(opts, |tx| tx.execute(&statement).map(drop))
                });
                Joiner(Box::new(move || h.join().expect("the writer thread")))
            }
            Db::Async(db, rt) => {
                let db = db.clone();
                let h = rt.spawn(async move {
                    let tx = db.begin(opts).await?;
                    tx.execute(&statement).await?;
                    tx.commit().await
                });
                let rt = rt.clone();
                Joiner(Box::new(move || rt.block_on(h).expect("the writer task")))
            }
        }
    }

    /// Runs `sql` on its own (no transaction).
    pub fn execute(&self, sql: &str) -> Result<u64> {
        match &self.db {
            Db::Blocking(db) => db.execute(&raw(sql, vec![])),
            Db::Async(db, rt) => rt.block_on(db.execute(&raw(sql, vec![]))),
        }
    }

    /// The first column of every row of `sql`, as integers.
    pub fn column(&self, sql: &str) -> Result<Vec<i64>> {
        let rows: Vec<(i64,)> = match &self.db {
            Db::Blocking(db) => db.fetch_all(&raw(sql, vec![]))?,
            Db::Async(db, rt) => rt.block_on(db.fetch_all(&raw(sql, vec![])))?,
        };
        Ok(rows.into_iter().map(|(v,)| v).collect())
    }

    /// Waits for a connection on another thread (blocking) or task (async) and runs `f` while holding it.
    pub fn spawn_holding(&self, f: impl FnOnce() + Send + 'static) -> Joiner {
        match &self.db {
            Db::Blocking(db) => {
                let db = db.clone();
                let h = std::thread::spawn(move || {
                    let mut f = Some(f);
                    db.transaction_with(TxOptions::default().read_only(), |_| {
                        if let Some(f) = f.take() {
                            f();
                        }
                        Ok(())
                    })
                });
                Joiner(Box::new(move || h.join().expect("the waiter thread")))
            }
            Db::Async(db, rt) => {
                let db = db.clone();
                let h = rt.spawn(async move {
                    let tx = db.begin(TxOptions::default().read_only()).await?;
                    f();
                    tx.commit().await
                });
                let rt = rt.clone();
                Joiner(Box::new(move || rt.block_on(h).expect("the waiter task")))
            }
        }
    }
}

/// What a group of workers saw.
pub struct Outcome {
    /// Calls that returned 1.
    pub ok: usize,
    /// Calls that failed.
    pub errors: Vec<Error>,
}

/// Workers started by [`run_workers`].
pub struct Workers(Box<dyn FnOnce() -> Outcome + Send>);

impl Workers {
    /// Waits for every worker and adds up what they saw.
    pub fn join(self) -> Outcome {
        (self.0)()
    }
}

/// `n` workers (threads or tasks) each making `calls` `SELECT 1` calls through the pool.
pub fn run_workers(exec: &Arc<Exec>, n: usize, calls: usize) -> Workers {
    let add = |outcomes: Vec<Vec<Result<i64>>>| {
        let mut o = Outcome {
            ok: 0,
            errors: Vec::new(),
        };
        for r in outcomes.into_iter().flatten() {
            match r {
                Ok(1) => o.ok += 1,
                Ok(other) => panic!("SELECT 1 returned {other}"),
                Err(e) => o.errors.push(e),
            }
        }
        o
    };
    match &exec.db {
        Db::Blocking(db) => {
            let handles: Vec<_> = (0..n)
                .map(|_| {
                    let db = db.clone();
                    std::thread::spawn(move || {
                        (0..calls)
                            .map(|_| {
                                db.fetch_one::<(i64,)>(&raw(SELECT_ONE, vec![]))
                                    .map(|(v,)| v)
                            })
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            Workers(Box::new(move || {
                add(handles.into_iter().map(|h| h.join().unwrap()).collect())
            }))
        }
        Db::Async(db, rt) => {
            let handles: Vec<_> = (0..n)
                .map(|_| {
                    let db = db.clone();
                    rt.spawn(async move {
                        let mut out = Vec::with_capacity(calls);
                        for _ in 0..calls {
                            out.push(
                                db.fetch_one::<(i64,)>(&raw(SELECT_ONE, vec![]))
                                    .await
                                    .map(|(v,)| v),
                            );
                        }
                        out
                    })
                })
                .collect();
            let rt = rt.clone();
            Workers(Box::new(move || {
                add(handles
                    .into_iter()
                    .map(|h| rt.block_on(h).unwrap())
                    .collect())
            }))
        }
    }
}

/// How the server names a test's connections: PostgreSQL by `application_name`, MariaDB by database.
fn own_connections(target: &TestTarget) -> (tandem_blocking::Database, String, Value) {
    let admin = target
        .admin
        .clone()
        .expect("server engines have an admin connection");
    let o = &target.options;
    match o.dialect {
        Dialect::Postgres => (
            admin,
            "FROM pg_stat_activity WHERE application_name = $1 AND pid <> pg_backend_pid()".into(),
            Value::Text(
                o.application_name
                    .clone()
                    .expect("tests name their connections"),
            ),
        ),
        _ => (
            admin,
            "FROM information_schema.PROCESSLIST WHERE DB = ? AND ID <> CONNECTION_ID()".into(),
            Value::Text(o.database.clone()),
        ),
    }
}

/// Connections the server has open for this test's pool.
pub fn connections(target: &TestTarget) -> u64 {
    let (admin, from, name) = own_connections(target);
    let (n,): (i64,) = admin
        .fetch_one(&raw(format!("SELECT COUNT(*) {from}"), vec![name]))
        .expect("count connections");
    n as u64
}

/// Whether the server's session `id` (`pg_backend_pid()` / `CONNECTION_ID()`) is still working: neither
/// idle nor gone. A connection closed while its last statements were still on their way keeps running on
/// the server until it has done them.
pub fn session_working(target: &TestTarget, id: i64) -> bool {
    let (admin, _, _) = own_connections(target);
    let sql = match target.options.dialect {
        Dialect::Postgres => {
            "SELECT COUNT(*) FROM pg_stat_activity WHERE pid = $1 AND state <> 'idle'"
        }
        _ => {
            "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = ? AND COMMAND <> 'Sleep'"
        }
    };
    let (n,): (i64,) = admin
        .fetch_one(&raw(sql, vec![Value::I64(id)]))
        .expect("look the session up");
    n > 0
}

/// Kills every connection of this test's pool on the server; returns how many.
pub fn kill_connections(target: &TestTarget) -> usize {
    let (admin, from, name) = own_connections(target);
    let ids: Vec<(i64,)> = match target.options.dialect {
        Dialect::Postgres => admin.fetch_all(&raw(
            format!("SELECT CAST(pg_terminate_backend(pid) AS INT) {from}"),
            vec![name],
        )),
        _ => admin
            .fetch_all::<(i64,)>(&raw(format!("SELECT ID {from}"), vec![name]))
            .inspect(|ids| {
                for (id,) in ids {
                    // Gone already is fine: it was a connection closing on its own.
                    let _ = admin.execute(&raw(format!("KILL {id}"), vec![]));
                }
            }),
    }
    .expect("kill connections");
    ids.len()
}

/// Waits (up to 10 s) until `cond` holds.
pub fn until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting: {what}");
        std::thread::sleep(Duration::from_millis(2));
    }
}
