//! The three drivers behind one connection type. Each submodule binds [`Value`]s, runs one statement
//! streaming its rows into a sink, decodes cells into [`Value`]s and classifies errors with `tandem-core`.

#[cfg(any(feature = "postgres", feature = "mysql"))]
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tandem_core::observe::Observer;
use tandem_core::{ConnectOptions, Error, Result};
use tandem_sql::batch::BorrowedStatement;
use tandem_sql::{Dialect, Rendered};

/// Whether this thread is one of tokio's blocking threads running [`crate::Database::run_blocking`]'s
/// closure: there a connection's own runtime may block directly (tokio allows it off its worker threads),
/// where a call from async code must take a thread of its own. Set by `run_blocking` only: tokio has no
/// public way to tell its blocking threads from its workers, which both see a runtime handle.
#[cfg(any(feature = "postgres", feature = "tokio"))]
pub(crate) mod off_runtime {
    use std::cell::Cell;

    thread_local! {
        static OFF_RUNTIME: Cell<bool> = const { Cell::new(false) };
    }

    /// Runs `f` marked as off the runtime's workers (the mark is cleared after, panic or not).
    #[cfg(feature = "tokio")]
    pub(crate) fn run<T>(f: impl FnOnce() -> T) -> T {
        struct Unmark(bool);
        impl Drop for Unmark {
            fn drop(&mut self) {
                OFF_RUNTIME.set(self.0);
            }
        }
        let _unmark = Unmark(OFF_RUNTIME.replace(true));
        f()
    }

    /// Whether the current thread is marked.
    #[cfg(feature = "postgres")]
    pub(crate) fn marked() -> bool {
        OFF_RUNTIME.get()
    }
}

#[cfg(feature = "mysql")]
pub(crate) mod mysql;
#[cfg(feature = "postgres")]
pub(crate) mod postgres;

pub(crate) use tandem_core::plan::{Done, Sink};

/// One open connection of any engine.
pub(crate) enum Driver {
    #[cfg(feature = "sqlite")]
    Sqlite(Box<tandem_sqlite::Connection>),
    #[cfg(feature = "postgres")]
    Postgres(Box<postgres::PgConn>),
    #[cfg(feature = "mysql")]
    MySql(mysql::MyConn),
}

/// A pooled connection: the driver connection and what it knows of its health.
pub struct Conn {
    pub(crate) driver: Driver,
    pub(crate) health: tandem_pool::ConnHealth,
    /// The server (none for SQLite): a call it left unanswered names it, and marks it silent.
    remote: Option<tandem_core::hosts::Remote>,
    /// Where its statements report (spans, metrics; see `tandem_core::observe`).
    pub(crate) observer: Observer,
    /// The gauges of the pool it belongs to, which count it open until it is dropped.
    pooled: Option<std::sync::Arc<tandem_core::observe::PoolGauges>>,
}

impl Drop for Conn {
    fn drop(&mut self) {
        if let Some(g) = &self.pooled {
            g.closed();
        }
    }
}

/// Connect attempts given up on whose thread is still blocked in the driver (see [`bounded`]).
#[cfg(any(feature = "postgres", feature = "mysql"))]
static HANGING: AtomicUsize = AtomicUsize::new(0);

/// At most this many abandoned connect threads at once in the process; past it, connecting fails at once.
#[cfg(any(feature = "postgres", feature = "mysql"))]
const MAX_HANGING: usize = 64;

/// Runs a server driver's connect, which can block without end (a server that accepts the TCP connection
/// and never answers: neither `postgres` nor `mysql` bounds the handshake, only the TCP connect), on a
/// thread of its own, and gives up after `timeout` with [`Error::ConnectTimeout`]. The abandoned thread
/// ends when the driver does (the server answers or closes); while too many are stuck, new attempts fail
/// at once instead of piling up threads.
#[cfg(any(feature = "postgres", feature = "mysql"))]
fn bounded<T: Send + 'static>(
    opts: &ConnectOptions,
    timeout: Duration,
    connect: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T> {
    let timed_out = || Error::connect_timeout(opts, timeout);
    if HANGING.load(Ordering::Relaxed) >= MAX_HANGING {
        return Err(timed_out());
    }
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    HANGING.fetch_add(1, Ordering::Relaxed);
    let spawned = std::thread::Builder::new()
        .name("tandem-connect".into())
        .spawn(move || {
            let result = connect();
            HANGING.fetch_sub(1, Ordering::Relaxed);
            let _ = tx.send(result);
        });
    if let Err(e) = spawned {
        HANGING.fetch_sub(1, Ordering::Relaxed);
        return Err(Error::Internal(format!(
            "cannot start a connect thread: {e}"
        )));
    }
    match rx.recv_timeout(timeout) {
        Ok(result) => result,
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => Err(timed_out()),
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => Err(Error::Panicked {
            message: "the connect thread panicked".into(),
        }),
    }
}

impl Conn {
    /// Opens a connection to the one server `opts` names, within `timeout`, handshake included (a URL
    /// naming several servers is walked by [`crate::connect::open`]).
    #[cfg_attr(
        not(any(feature = "postgres", feature = "mysql")),
        allow(unused_variables)
    )]
    pub(crate) fn open_one(
        opts: &ConnectOptions,
        timeout: Duration,
        observer: &Observer,
    ) -> Result<Conn> {
        let driver = match opts.dialect {
            #[cfg(feature = "sqlite")]
            Dialect::Sqlite => Driver::Sqlite(Box::new(tandem_sqlite::Connection::open(opts)?)),
            #[cfg(feature = "postgres")]
            Dialect::Postgres => {
                let o = opts.clone();
                Driver::Postgres(Box::new(bounded(opts, timeout, move || {
                    postgres::open(&o, timeout)
                })?))
            }
            #[cfg(feature = "mysql")]
            Dialect::MySql => {
                let o = opts.clone();
                Driver::MySql(bounded(opts, timeout, move || mysql::open(&o, timeout))?)
            }
            #[allow(unreachable_patterns)]
            other => return Err(Error::engine_left_out(other, "tandem-blocking")),
        };
        Ok(Conn {
            driver,
            health: tandem_pool::ConnHealth::default(),
            remote: tandem_core::hosts::Remote::of(opts),
            observer: observer.clone(),
            pooled: None,
        })
    }

    /// Counts this connection open in its pool's gauges, until it is dropped.
    pub(crate) fn count_in(&mut self, gauges: &std::sync::Arc<tandem_core::observe::PoolGauges>) {
        gauges.opened();
        self.pooled = Some(gauges.clone());
    }

    pub(crate) fn dialect(&self) -> Dialect {
        match self.driver {
            #[cfg(feature = "sqlite")]
            Driver::Sqlite(_) => Dialect::Sqlite,
            #[cfg(feature = "postgres")]
            Driver::Postgres(_) => Dialect::Postgres,
            #[cfg(feature = "mysql")]
            Driver::MySql(_) => Dialect::MySql,
        }
    }

    /// Runs one statement, handing each row to `sink`, under its span (see `tandem_core::observe`).
    pub(crate) fn run(&mut self, r: &Rendered, sink: &mut Sink<'_>) -> Result<Done> {
        let driver = &mut self.driver;
        let result = tandem_core::observe::observe_run(
            &self.observer,
            &r.sql,
            |sink| match driver {
                #[cfg(feature = "sqlite")]
                Driver::Sqlite(c) => tandem_core::Runner::run(&mut **c, r, sink),
                #[cfg(feature = "postgres")]
                Driver::Postgres(c) => postgres::run(c, r, sink),
                #[cfg(feature = "mysql")]
                Driver::MySql(c) => mysql::run(c, r, sink),
            },
            sink,
        );
        self.note(result)
    }

    /// Runs statements whose values borrow the caller's rows, one after the other; returns the rows they
    /// affected in all. SQLite binds them where they are; the server drivers get owned copies.
    pub(crate) fn run_borrowed<'a>(
        &mut self,
        statements: &mut dyn Iterator<Item = Result<BorrowedStatement<'a>>>,
    ) -> Result<u64> {
        let mut affected = 0;
        for statement in statements {
            let statement = statement?;
            let s = self.observer.statement(&statement.sql);
            let result = s.span().in_scope(|| match &mut self.driver {
                #[cfg(feature = "sqlite")]
                Driver::Sqlite(c) => tandem_core::Runner::run_borrowed(&mut **c, &statement),
                #[cfg(feature = "postgres")]
                Driver::Postgres(c) => {
                    postgres::run(c, &statement.to_rendered(), &mut |_| Ok(true))
                }
                #[cfg(feature = "mysql")]
                Driver::MySql(c) => mysql::run(c, &statement.to_rendered(), &mut |_| Ok(true)),
            });
            s.finish(
                &self.observer,
                &result,
                result.as_ref().map_or(0, |d| d.affected),
            );
            affected += self.note(result)?.affected;
        }
        Ok(affected)
    }

    /// Runs a statement without parameters or rows (BEGIN, COMMIT, SAVEPOINT, pragmas), under its span.
    pub(crate) fn simple(&mut self, sql: &str) -> Result<()> {
        let s = self.observer.statement(sql);
        let result = s.span().in_scope(|| Self::simple_on(&mut self.driver, sql));
        s.finish(&self.observer, &result, 0);
        self.note(result)
    }

    /// A connection check (`SELECT 1` before reuse): not a statement of the application's, so no span.
    pub(crate) fn ping(&mut self) -> Result<()> {
        let result = Self::simple_on(&mut self.driver, "SELECT 1");
        self.note(result)
    }

    fn simple_on(driver: &mut Driver, sql: &str) -> Result<()> {
        match driver {
            #[cfg(feature = "sqlite")]
            Driver::Sqlite(c) => c.simple(sql),
            #[cfg(feature = "postgres")]
            Driver::Postgres(c) => c.batch_execute(sql),
            #[cfg(feature = "mysql")]
            Driver::MySql(c) => {
                ::mysql::prelude::Queryable::query_drop(&mut c.conn, sql).map_err(mysql::error)
            }
        }
    }

    /// PostgreSQL binary COPY of rows into a declared table.
    #[cfg_attr(not(feature = "postgres"), allow(unused_variables))]
    pub(crate) fn copy_in(&mut self, copy: &tandem_core::CopyIn) -> Result<u64> {
        let sql = copy.statement();
        let s = self.observer.statement(&sql);
        let result = s.span().in_scope(|| match &mut self.driver {
            #[cfg(feature = "postgres")]
            Driver::Postgres(c) => postgres::copy_in(c, copy),
            #[allow(unreachable_patterns)]
            _ => Err(Error::Internal(
                "COPY is planned for PostgreSQL only".into(),
            )),
        });
        s.finish(&self.observer, &result, *result.as_ref().unwrap_or(&0));
        self.note(result)
    }

    /// Whether the connection can still be used.
    pub(crate) fn is_usable(&mut self) -> bool {
        if self.health.broken {
            return false;
        }
        #[cfg(feature = "postgres")]
        if let Driver::Postgres(c) = &self.driver
            && c.is_closed()
        {
            return false;
        }
        true
    }

    /// Ends a SQLite transaction its user abandoned (a cancelled future in the async executor, which drives
    /// these connections too): `false` when the connection is still inside one afterwards and must not go
    /// back to the pool. One C call when there is nothing to do. (`query_only` is only ever on inside a
    /// transaction, see `tandem_core::tx::begin`, so it is reset here too.) Server engines' transactions are
    /// ended by their owners.
    pub(crate) fn end_abandoned_transaction(&mut self) -> bool {
        match &mut self.driver {
            #[cfg(feature = "sqlite")]
            Driver::Sqlite(c) => c.end_abandoned_transaction(),
            #[allow(unreachable_patterns)]
            _ => true,
        }
    }

    /// Marks the connection broken when an error says it is, and tells the pool; remembers a retriable
    /// failure (see [`tandem_pool::ConnHealth::note`]). A server that gave no answer is named in the
    /// error and tried last by host walks for a while.
    fn note<T>(&mut self, result: Result<T>) -> Result<T> {
        let result = match &self.remote {
            Some(remote) => remote.name_silence(result),
            None => result,
        };
        self.health.note(&result);
        result
    }

    /// Whether the connection may be handed out: checked with a ping when the pool has seen a connection
    /// die since this one was last known good (see [`tandem_pool::LossClock`]).
    pub(crate) fn fit_for_use(&mut self) -> bool {
        let Some(stamp) = self.health.suspect() else {
            return true;
        };
        if self.remote.as_ref().is_some_and(|r| r.is_silent()) {
            self.health.broken = true;
            return false;
        }
        if self.ping().is_ok() {
            self.health.checked(stamp);
            return true;
        }
        self.health.broken = true;
        false
    }
}

impl tandem_core::Runner for Conn {
    fn run(&mut self, r: &Rendered, sink: &mut Sink<'_>) -> Result<Done> {
        Conn::run(self, r, sink)
    }
    fn simple(&mut self, sql: &str) -> Result<()> {
        Conn::simple(self, sql)
    }
    fn in_transaction(&mut self) -> Option<bool> {
        match &mut self.driver {
            #[cfg(feature = "sqlite")]
            Driver::Sqlite(c) => tandem_core::Runner::in_transaction(&mut **c),
            #[allow(unreachable_patterns)]
            _ => None,
        }
    }
    fn copy_in(&mut self, copy: &tandem_core::CopyIn) -> Result<u64> {
        Conn::copy_in(self, copy)
    }
}
