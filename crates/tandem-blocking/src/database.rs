//! [`Database`]: a pool of connections opened from a URL, with statement execution, streaming reads,
//! transactions and plan execution.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tandem_core::observe::{self, Observer, PoolGauges, Side};
use tandem_core::plan::{Done, Plan};
use tandem_core::{ConnectOptions, Error, Result, TxOptions};
use tandem_pool::{Admission, Permit};
use tandem_pool::{PoolConfig, PoolMetrics, WriterGate};
use tandem_sql::ast::CreateTable;
use tandem_sql::batch::BorrowedStatement;
use tandem_sql::{Dialect, Rendered};

use crate::Executor;
use crate::checkout::PooledConnection;
use crate::conn::{Pooled, run_steps};
use crate::homes::Homes;
use crate::pool::{LastError, Manager, QuietErrors};
use crate::stream::RowStream;
use crate::transaction::Transaction;

/// A database: a bounded pool of blocking connections to one SQLite file (or memory), PostgreSQL or MySQL
/// database, with admission control in front of it (see `tandem-pool`). Cheap to clone; clones share the
/// pool.
#[derive(Clone)]
pub struct Database {
    inner: Arc<Inner>,
}

struct Inner {
    pool: r2d2::Pool<Manager>,
    /// Where a SQLite database's connections wait between uses (see [`Homes`]).
    homes: Option<Arc<Homes>>,
    admission: Admission,
    options: ConnectOptions,
    config: PoolConfig,
    /// The queue of write transactions (a SQLite file only).
    writers: Option<WriterGate>,
    /// The pool's last connect failure, shared with its manager.
    last_error: LastError,
    /// The byte-wise collation MySQL tables are made with, asked of the server once.
    mysql_collation: std::sync::OnceLock<tandem_sql::ast::MySqlCollation>,
    /// Where read-only transactions go ([`Database::with_standby`]).
    standby: std::sync::OnceLock<Database>,
    /// What its connections report through (spans, metrics).
    observer: Observer,
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Database")
            .field("url", &self.inner.options.display)
            .field("config", &self.inner.config)
            .finish()
    }
}

impl Database {
    /// Opens `url` with the default pool settings and checks that one connection can be made.
    pub fn connect(url: &str) -> Result<Database> {
        Database::connect_with(url, PoolConfig::default())
    }

    /// Opens `url` with these pool settings; see [`Database::open`].
    pub fn connect_with(url: &str, config: PoolConfig) -> Result<Database> {
        let options = ConnectOptions::parse(url)?;
        Database::open(options, config)
    }

    /// Opens parsed options. One connection is made first, so an unreachable database is a typed
    /// connection error here rather than at first use; then the pool warms up: it opens `min_idle`
    /// connections before returning, or fails with [`Error::PoolWarmUp`] after `connect_timeout`.
    pub fn open(options: ConnectOptions, mut config: PoolConfig) -> Result<Database> {
        if options.is_memory() {
            // Every connection to `:memory:` is a database of its own: one connection keeps one database.
            config.max_size = 1;
            config.min_idle = Some(1);
            // …and closing it would lose the data.
            config.idle_timeout = None;
            config.max_lifetime = None;
        }
        let observer = Observer::new(Side::Blocking, &options);
        let admission =
            Admission::observed(&config, PoolGauges::new(Side::Blocking, options.dialect));
        let created = admission.created_counter();
        // One connection up front: the URL works, or the caller learns why not now.
        drop(crate::connect::open(
            &options,
            config.connect_timeout,
            &observer,
        )?);
        let last_error = LastError::default();
        let pool = r2d2::Pool::builder()
            .max_size(config.effective_max_size())
            .min_idle(Some(config.effective_min_idle()))
            .connection_timeout(config.acquire_timeout.max(Duration::from_millis(1)))
            .idle_timeout(config.idle_timeout)
            .max_lifetime(config.max_lifetime)
            .test_on_check_out(config.validate_on_checkout)
            .error_handler(Box::new(QuietErrors))
            .build_unchecked(Manager {
                options: options.clone(),
                created,
                losses: admission.losses().clone(),
                connect_timeout: config.connect_timeout,
                last_error: last_error.clone(),
                observer: observer.clone(),
                gauges: admission.gauges().clone(),
            });
        let db = Database {
            inner: Arc::new(Inner {
                pool,
                homes: (options.dialect == Dialect::Sqlite)
                    .then(|| Arc::new(Homes::new(config.effective_max_size()))),
                admission,
                writers: WriterGate::for_database(&options),
                options,
                config,
                last_error,
                mysql_collation: std::sync::OnceLock::new(),
                standby: std::sync::OnceLock::new(),
                observer,
            }),
        };
        db.warm_up()?;
        Ok(db)
    }

    /// Waits until r2d2 (which starts opening `min_idle` connections when the pool is built, on its own
    /// threads) has them all, within `connect_timeout`.
    ///
    /// It looks every 2 ms. Nothing r2d2 offers wakes it exactly: its acquire hook runs before the new
    /// connection joins the pool, and checking `min_idle` connections out to wait on r2d2's own wake-ups
    /// (faster, measured) makes r2d2 open more — every checkout tops the idle connections back up to
    /// `min_idle`.
    /// The error carries the last connect failure r2d2 reported, or, when none finished failing, the
    /// connect timeout that the attempts still under way ran into.
    fn warm_up(&self) -> Result<()> {
        let wanted = self.inner.config.effective_min_idle();
        let started = Instant::now();
        while self.inner.pool.state().connections < wanted {
            if started.elapsed() >= self.inner.config.connect_timeout {
                let cause = self.inner.last_error.take().unwrap_or_else(|| {
                    Error::connect_timeout(&self.inner.options, self.inner.config.connect_timeout)
                });
                return Err(Error::PoolWarmUp {
                    opened: self.inner.pool.state().connections,
                    wanted,
                    waited: started.elapsed(),
                    last_error: Some(Box::new(cause)),
                });
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        Ok(())
    }

    /// The engine.
    pub fn dialect(&self) -> Dialect {
        self.inner.options.dialect
    }

    /// The pool settings in force.
    pub fn config(&self) -> &PoolConfig {
        &self.inner.config
    }

    /// The parsed connection options (`display` is the URL with its password hidden).
    pub fn options(&self) -> &ConnectOptions {
        &self.inner.options
    }

    /// An identifier of this pool, unique among the pools alive in this process; clones share it. (Two
    /// pools on `sqlite::memory:` are two databases: this tells them apart.)
    pub fn pool_id(&self) -> u64 {
        Arc::as_ptr(&self.inner) as usize as u64
    }

    /// Connections open and idle right now.
    pub fn pool_state(&self) -> (u32, u32) {
        let s = self.inner.pool.state();
        let kept = self.inner.homes.as_ref().map_or(0, |h| h.kept());
        (s.connections, s.idle_connections + kept)
    }

    /// The pool's status and counters (see [`PoolMetrics`]).
    pub fn pool_metrics(&self) -> PoolMetrics {
        let (open, idle) = self.pool_state();
        PoolMetrics {
            writers_waiting: WriterGate::waiting(self.inner.writers.as_ref()),
            ..self.inner.admission.metrics(open, idle)
        }
    }

    /// Sends read-only transactions ([`TxOptions::read_only`]) to a standby: a second pool, on `url`, with
    /// the same settings (a PostgreSQL hot standby, a MySQL replica). Everything else — writes, statements
    /// outside a transaction, repository calls — stays on this database. A standby replays the primary's
    /// log after the primary commits, so a read-only transaction there may not see the latest commits yet
    /// (the replay lag: milliseconds on a quiet loopback pair, unbounded if replay stops). When the standby
    /// cannot be reached, read-only transactions run here instead: the standby's pool waits at most
    /// `connect_timeout` for a connection before giving up. Clones share the standby.
    pub fn with_standby(self, url: &str) -> Result<Database> {
        let options = ConnectOptions::parse(url)?;
        if options.dialect != self.dialect() || self.dialect() == Dialect::Sqlite {
            return Err(Error::StandbyEngine {
                dialect: self.dialect(),
                standby: options.display,
            });
        }
        let standby = Database::open(options, self.inner.config.for_standby())?;
        self.inner
            .standby
            .set(standby)
            .map_err(|_| Error::StandbyAlreadySet)?;
        Ok(self)
    }

    /// The standby read-only transactions go to, if one was given.
    pub fn standby(&self) -> Option<&Database> {
        self.inner.standby.get()
    }

    /// A connection for a transaction with `opts`: the standby's for a read-only one when there is a
    /// standby and it answers, this database's otherwise.
    fn acquire_for(&self, opts: &TxOptions) -> Result<Pooled> {
        if opts.read_only
            && let Some(standby) = self.standby()
        {
            match standby.acquire() {
                Ok(conn) => return Ok(conn),
                Err(e) if e.is_unreachable() => {
                    tracing::warn!(error = %e, "standby unreachable: read-only transaction on the primary");
                }
                Err(e) => return Err(e),
            }
        }
        self.acquire()
    }

    /// The queue of write transactions, for a SQLite file.
    pub(crate) fn writers(&self) -> Option<WriterGate> {
        self.inner.writers.clone()
    }

    /// A connection, inside a `checkout` span (see `tandem_core::observe`).
    pub(crate) fn acquire(&self) -> Result<Pooled> {
        let span = observe::checkout_span(self.dialect());
        let _in = span.enter();
        let (permit, waited) = self.inner.admission.acquire_blocking_waited()?;
        // The path a healthy pool takes all day — admitted at once, a connection idle — reads no clock: the
        // acquire deadline only matters to an acquire that is going to wait.
        let permit = if waited.is_zero() && !self.inner.admission.losses().unreachable() {
            match self.try_take(permit) {
                Ok(conn) => {
                    observe::checked_out(&span, waited);
                    return Ok(conn);
                }
                Err(permit) => permit,
            }
        } else {
            permit
        };
        let now = Instant::now();
        let conn = self.acquire_admitted(permit, now.checked_sub(waited).unwrap_or(now))?;
        observe::checked_out(&span, now.elapsed() + waited);
        Ok(conn)
    }

    /// Takes an idle connection without waiting, for callers that hold a permit already.
    pub(crate) fn try_take(
        &self,
        permit: Option<Permit>,
    ) -> std::result::Result<Pooled, Option<Permit>> {
        match self.take_idle() {
            Some(mut conn) => {
                if conn.fit_for_use() {
                    Ok(self.pooled(conn, permit, Duration::ZERO))
                } else {
                    Err(permit)
                }
            }
            None => Err(permit),
        }
    }

    /// An idle connection: the one this thread gave back last (SQLite), or r2d2's, or another thread's.
    fn take_idle(&self) -> Option<r2d2::PooledConnection<Manager>> {
        let homes = self.inner.homes.as_deref();
        homes
            .and_then(Homes::take_own)
            .and_then(|c| self.validated(c))
            .or_else(|| self.inner.pool.try_get())
            .or_else(|| {
                homes
                    .and_then(Homes::take_any)
                    .and_then(|c| self.validated(c))
            })
    }

    /// A connection taken from a home, checked as r2d2 checks its own with `validate_on_checkout`; one
    /// that fails goes to r2d2, which closes it.
    fn validated(
        &self,
        mut conn: r2d2::PooledConnection<Manager>,
    ) -> Option<r2d2::PooledConnection<Manager>> {
        if !self.inner.config.validate_on_checkout || conn.ping().is_ok() {
            return Some(conn);
        }
        conn.health.broken = true;
        None
    }

    /// A connection checked out after waiting `waited`, counted in the pool's metrics (the pool counts
    /// the connections it opens and closes itself, see `Manager`).
    fn pooled(
        &self,
        conn: r2d2::PooledConnection<Manager>,
        permit: Option<Permit>,
        waited: Duration,
    ) -> Pooled {
        let in_use = self.inner.admission.checked_out(waited, None);
        Pooled::new(conn, self.inner.homes.clone(), permit, in_use)
    }

    /// [`Database::acquire`] for a caller that was admitted already (the async executor's SQLite path).
    /// A connection that fails its check after a loss is dropped and another taken, within the deadline.
    ///
    /// A server that is gone surfaces within the connect timeout: after waiting that long without a
    /// connection, and before waiting at all once a connect failed, the pool asks the server directly
    /// ([`Database::reach`]) and returns its connect error when it does not answer.
    pub(crate) fn acquire_admitted(
        &self,
        permit: Option<Permit>,
        started: Instant,
    ) -> Result<Pooled> {
        let losses = self.inner.admission.losses();
        if losses.unreachable() && !self.options().is_memory() {
            self.reach()?;
        }
        loop {
            let left = self.inner.admission.remaining(started);
            let wait = left.min(self.inner.config.connect_timeout);
            // Counted as waiting, no connection stays home while this waits on r2d2 (see `Homes`).
            let (_waiting, home) = match self.inner.homes.as_deref() {
                Some(h) => {
                    let (w, found) = h.before_waiting();
                    (Some(w), found.and_then(|c| self.validated(c)))
                }
                None => (None, None),
            };
            match home.map_or_else(|| self.inner.pool.get_timeout(wait), Ok) {
                Ok(mut conn) => {
                    if conn.fit_for_use() {
                        return Ok(self.pooled(conn, permit, started.elapsed()));
                    }
                }
                // A connect timeout's worth of waiting: is the server there at all?
                Err(_) if wait < left && self.options().dialect != Dialect::Sqlite => {
                    self.reach()?
                }
                Err(_) => return Err(self.pool_error(started)),
            }
        }
    }

    /// One connect to the server, outside the pool: `Ok` when it answers (the pool's own attempts will
    /// too), its connect error when it does not. Remembered either way (see [`tandem_pool::LossClock`]).
    fn reach(&self) -> Result<()> {
        let losses = self.inner.admission.losses();
        let (options, timeout) = (&self.inner.options, self.inner.config.connect_timeout);
        match crate::connect::open(options, timeout, &self.inner.observer) {
            Ok(_) => {
                losses.note_reachable(true);
                Ok(())
            }
            Err(e) if e.is_unreachable() => {
                losses.note_reachable(false);
                Err(e)
            }
            Err(e) => Err(e),
        }
    }

    /// An acquire that r2d2 timed out: the connect failure that kept it from opening a connection, when
    /// there was one since the last connect that worked (typed, with its source), or the pool timeout.
    fn pool_error(&self, started: Instant) -> Error {
        match self.inner.last_error.take() {
            Some(cause) => cause,
            None => self.inner.admission.timed_out(started).into(),
        }
    }

    pub(crate) fn stream<T>(&self, r: Rendered) -> Result<RowStream<'static, T>> {
        let conn = self.acquire()?;
        RowStream::start(conn, r, None)
    }

    /// Runs `f` in a transaction with default options: commit on `Ok`, rollback on `Err` or panic, the whole
    /// transaction rerun on a retriable error (up to 3 attempts). `f` returns tandem's [`Error`], so a
    /// closure ending in `Ok(())` needs no annotation; [`Database::try_transaction`] takes a closure that
    /// returns an error type of the caller's own.
    pub fn transaction<T>(&self, f: impl FnMut(&Transaction) -> Result<T>) -> Result<T> {
        self.try_transaction_with(TxOptions::default(), f)
    }

    /// [`Database::transaction`] with these options.
    pub fn transaction_with<T>(
        &self,
        opts: TxOptions,
        f: impl FnMut(&Transaction) -> Result<T>,
    ) -> Result<T> {
        self.try_transaction_with(opts, f)
    }

    /// [`Database::transaction`] for a closure that returns an error type of the caller's own, one that
    /// tandem's [`Error`] converts into (so `?` works on every call inside).
    pub fn try_transaction<T, E: From<Error> + 'static>(
        &self,
        f: impl FnMut(&Transaction) -> Result<T, E>,
    ) -> Result<T, E> {
        self.try_transaction_with(TxOptions::default(), f)
    }

    // ANCHOR: transaction
    /// Runs `f` in a transaction with these options. Any `Err` rolls back. The attempt is run again (up to
    /// `opts.max_attempts`) when it failed because of a retriable database error — the error `f` returned
    /// is tandem's and retriable, or one of the transaction's statements failed retriably, whatever error
    /// `f` turned that into (see [`TxOptions::should_retry_any`]).
    pub fn try_transaction_with<T, E: From<Error> + 'static>(
        &self,
        opts: TxOptions,
        mut f: impl FnMut(&Transaction) -> Result<T, E>,
    ) -> Result<T, E> {
        let mut attempts = tandem_core::Attempts::new(&opts);
        loop {
            // A writer waits for its turn before it takes a connection, and keeps it to the end.
            let _turn = WriterGate::enter_blocking(self.inner.writers.as_ref(), &opts)?;
            let conn = self.acquire_for(&opts)?;
            match Transaction::run_closure(conn, &opts, attempts.made() + 1, &mut f) {
                (Err(e), seen) if attempts.again(&e, seen) => {
                    std::thread::sleep(attempts.pause());
                    continue;
                }
                (other, _) => return other,
            }
        }
    }
    // ANCHOR_END: transaction

    /// Runs a plan's steps in one transaction with these options, whatever the plan's own atomicity; a
    /// retriable failure runs the whole transaction again (up to `opts.max_attempts`). The async
    /// executor's `Database::run_atomically`, on threads.
    pub fn run_atomically<T>(&self, opts: &TxOptions, plan: Plan<T>) -> Result<T> {
        let outcomes = self.transaction_with(opts.clone(), |tx| tx.run_steps(&plan.steps))?;
        plan.finish(outcomes)
    }

    /// Opens a transaction to drive by hand: finish it with [`Transaction::commit`] or
    /// [`Transaction::rollback`]; dropped unfinished, it is rolled back. No retry here: use
    /// [`Database::transaction`] for that. A writer of a SQLite file waits for its turn first and keeps it
    /// until the transaction ends.
    pub fn begin(&self, opts: TxOptions) -> Result<Transaction> {
        let turn = WriterGate::enter_blocking(self.inner.writers.as_ref(), &opts)?;
        Transaction::begin(self.acquire_for(&opts)?, &opts, turn, 1)
    }

    /// Creates a declared table and its indexes (`IF NOT EXISTS`).
    pub fn create_table(&self, table: &CreateTable) -> Result<()> {
        let table = match self.dialect() {
            Dialect::MySql => {
                let collation = match self.inner.mysql_collation.get() {
                    Some(c) => *c,
                    None => tandem_core::ddl::choose(
                        &self.fetch_all(&tandem_core::ddl::mysql_collations())?,
                    ),
                };
                let _ = self.inner.mysql_collation.set(collation);
                std::borrow::Cow::Owned(tandem_core::ddl::for_server(table, collation))
            }
            _ => std::borrow::Cow::Borrowed(table),
        };
        let mut conn = self.acquire()?;
        for r in table.render_all(self.dialect())? {
            conn.run(&r, &mut |_| Ok(true))?;
        }
        Ok(())
    }

    /// Drops tables (`IF EXISTS`), in the order given.
    pub fn drop_tables(&self, tables: &[&tandem_sql::ast::TableSchema]) -> Result<()> {
        for t in tables {
            self.execute(&t.drop_table(true))?;
        }
        Ok(())
    }

    /// Runs blocking work from async code on tokio's blocking thread pool and returns its result: the
    /// "isolate the blocking driver" option for async services.
    #[cfg(feature = "tokio")]
    pub async fn run_blocking<T, F>(&self, f: F) -> Result<T>
    where
        F: FnOnce(&Database) -> Result<T> + Send + 'static,
        T: Send + 'static,
    {
        let db = self.clone();
        match tokio::task::spawn_blocking(move || crate::driver::off_runtime::run(|| f(&db))).await
        {
            Ok(r) => r,
            Err(e) if e.is_panic() => Err(Error::Panicked {
                message: tandem_core::tx::panic_message(&*e.into_panic()),
            }),
            Err(_) => Err(Error::Cancelled("the blocking task was cancelled".into())),
        }
    }

    /// [`Database::transaction`] from async code, on tokio's blocking thread pool.
    #[cfg(feature = "tokio")]
    pub async fn transaction_blocking<T, F>(&self, f: F) -> Result<T>
    where
        F: FnMut(&Transaction) -> Result<T> + Send + 'static,
        T: Send + 'static,
    {
        self.run_blocking(move |db| db.transaction(f)).await
    }
}

impl Database {
    /// Checks a connection out of the pool, to drive by hand.
    pub fn checkout(&self) -> Result<PooledConnection> {
        Ok(PooledConnection::new(self.acquire()?, self.writers()))
    }
}

impl crate::Executor for Database {
    fn dialect(&self) -> Dialect {
        Database::dialect(self)
    }
}

impl crate::executor::sealed::Run for Database {
    fn run_statement(&self, r: &Rendered, sink: &mut tandem_core::plan::Sink<'_>) -> Result<Done> {
        self.acquire()?.run(r, sink)
    }

    /// Runs a plan (a repository method): in one transaction when it has several steps that belong together,
    /// otherwise each step on its own.
    fn run<T>(&self, plan: Plan<T>) -> Result<T> {
        if plan.needs_transaction() {
            return self.run_atomically(&TxOptions::default(), plan);
        }
        let mut conn = self.acquire()?;
        let outcomes = run_steps(&mut conn, &plan.steps)?;
        plan.finish(outcomes)
    }

    fn stream_rendered<T: Send + 'static>(&self, r: Rendered) -> Result<RowStream<'_, T>> {
        self.stream(r)
    }

    fn run_borrowed<'a>(
        &self,
        statements: &mut dyn Iterator<Item = Result<BorrowedStatement<'a>>>,
    ) -> Result<u64> {
        self.acquire()?.run_borrowed(statements)
    }
}
