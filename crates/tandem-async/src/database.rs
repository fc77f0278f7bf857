//! [`Database`]: the pools opened from the same URLs as the blocking executor — sqlx's for PostgreSQL and
//! MySQL (and SQLite with `?driver=sqlx`), worker threads for SQLite by default — with statement execution,
//! streams, transactions (async closures) and plan execution.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tandem_core::observe::{self, Observer, PoolGauges, Side};
use tandem_core::plan::{Done, Plan};
use tandem_core::{ConnectOptions, Error, Result, TxOptions};
use tandem_pool::Admission;
use tandem_pool::{PoolConfig, PoolMetrics, WriterGate};
use tandem_sql::ast::CreateTable;
use tandem_sql::{Dialect, Rendered};

use crate::Executor;
use crate::conn::{Conn, Link};
use crate::driver::error;
use crate::executor::sealed::Discard;
use crate::stream::RowStream;
use crate::transaction::Transaction;

use crate::connect::*;

enum Pools {
    /// PostgreSQL through tokio-postgres in tandem's own pool (the default; see
    /// [`tandem_core::AsyncDriver`]).
    #[cfg(feature = "postgres")]
    Pg(Arc<crate::postgres::PgPool>),
    #[cfg(feature = "postgres")]
    Postgres(sqlx::PgPool),
    /// MySQL/MariaDB through mysql_async in tandem's own pool (the default).
    #[cfg(feature = "mysql")]
    My(Arc<crate::mysql::MyPool>),
    #[cfg(feature = "mysql")]
    MySql(sqlx::MySqlPool),
    #[cfg(feature = "sqlite")]
    Sqlite(sqlx::SqlitePool),
    #[cfg(feature = "sqlite")]
    /// SQLite through rusqlite on worker threads (the default; see [`tandem_core::AsyncDriver`]).
    Rusqlite(Arc<crate::sqlite::SqlitePool>),
}

/// A database: a bounded pool of connections to one SQLite file (or memory), PostgreSQL or MySQL database.
/// Cheap to clone; clones share the pool.
#[derive(Clone)]
pub struct Database {
    inner: Arc<Inner>,
}

struct Inner {
    pools: Pools,
    /// Admission in front of the pools.
    admission: Admission,
    options: ConnectOptions,
    config: PoolConfig,
    /// The queue of write transactions (a SQLite file only).
    writers: Option<WriterGate>,
    /// The byte-wise collation MySQL tables are made with, asked of the server once.
    mysql_collation: std::sync::OnceLock<tandem_sql::ast::MySqlCollation>,
    /// When the server the pool connects to was last chosen from the URL's list (a [`LossClock`] stamp);
    /// a connection loss since then makes the next acquire choose again.
    chosen_at: AtomicU64,
    /// One choice at a time.
    choosing: tokio::sync::Mutex<()>,
    /// The server chosen (servers), which connections name when it falls silent.
    server: crate::conn::Server,
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

/// A pool's acquire, mapped to the connection kind it gives.
fn link<DB: sqlx::Database>(
    pool: &sqlx::Pool<DB>,
    wrap: fn(sqlx::pool::PoolConnection<DB>) -> Link,
) -> impl Future<Output = std::result::Result<Link, sqlx::Error>> + use<DB> {
    // Boxed where it is made: sqlx's acquire future holds a whole connect (tens of KiB). Made straight into
    // its box, it is not copied again through the futures that await it — boxing it further out cost ten
    // copies of it per checkout (callgrind: 27k instructions, more than the select itself).
    let acquire = Box::pin(pool.acquire());
    async move { acquire.await.map(wrap) }
}

impl Database {
    /// Opens `url` with the default pool settings and checks that one connection can be made.
    pub async fn connect(url: &str) -> Result<Database> {
        Database::connect_with(url, PoolConfig::default()).await
    }

    /// Opens `url` with these pool settings.
    pub async fn connect_with(url: &str, config: PoolConfig) -> Result<Database> {
        Database::open(ConnectOptions::parse(url)?, config).await
    }

    /// Opens parsed options. One connection is made first, so an unreachable database is a typed
    /// connection error here; then the pool warms up: it opens `min_idle` connections before returning, or
    /// fails with [`Error::PoolWarmUp`] after `connect_timeout`.
    pub async fn open(options: ConnectOptions, mut config: PoolConfig) -> Result<Database> {
        if options.is_memory() {
            // Every connection to `:memory:` is a database of its own: one connection keeps one database.
            config.max_size = 1;
            config.min_idle = Some(1);
            // …and closing it would lose the data.
            config.idle_timeout = None;
            config.max_lifetime = None;
        }
        let dialect = options.dialect;
        let gauges = PoolGauges::new(Side::Async, dialect);
        // tandem's own pools keep only idle connections: the gate is what bounds them (one gate, not two).
        let admission = match options.async_driver {
            tandem_core::AsyncDriver::Native => Admission::bounding(&config, gauges),
            _ => Admission::observed(&config, gauges),
        };
        let created = admission.created_counter();
        let server: crate::conn::Server = Default::default();
        let pools = match dialect {
            #[cfg(feature = "postgres")]
            Dialect::Postgres if options.async_driver == tandem_core::AsyncDriver::Native => {
                let opener = crate::postgres::PgOpener {
                    options: options.clone(),
                    connect_timeout: config.connect_timeout,
                };
                Pools::Pg(
                    crate::postgres::PgPool::open(opener, &options, config.clone(), &admission)
                        .await?,
                )
            }
            #[cfg(feature = "postgres")]
            Dialect::Postgres => {
                let chosen =
                    choose_server(&options, &config, pg_connect_options, Some(pg_role)).await?;
                set_server(&server, &chosen);
                let o = pg_connect_options(&chosen)?;
                Pools::Postgres(
                    open_pool(o, &config, created, admission.losses().clone(), &chosen).await?,
                )
            }
            #[cfg(feature = "mysql")]
            Dialect::MySql if options.async_driver == tandem_core::AsyncDriver::Native => {
                let opener = crate::mysql::MyOpener {
                    options: options.clone(),
                    connect_timeout: config.connect_timeout,
                };
                Pools::My(
                    crate::mysql::MyPool::open(opener, &options, config.clone(), &admission)
                        .await?,
                )
            }
            #[cfg(feature = "mysql")]
            Dialect::MySql => {
                let chosen = choose_server::<sqlx::MySqlConnection>(
                    &options,
                    &config,
                    mysql_connect_options,
                    None,
                )
                .await?;
                set_server(&server, &chosen);
                let o = mysql_connect_options(&chosen)?;
                Pools::MySql(
                    open_pool(o, &config, created, admission.losses().clone(), &chosen).await?,
                )
            }
            #[cfg(feature = "sqlite")]
            Dialect::Sqlite if options.async_driver == tandem_core::AsyncDriver::Native => {
                Pools::Rusqlite(
                    crate::sqlite::SqlitePool::open(
                        crate::sqlite::SqliteOpener {
                            options: options.clone(),
                        },
                        &options,
                        config.clone(),
                        &admission,
                    )
                    .await?,
                )
            }
            #[cfg(feature = "sqlite")]
            Dialect::Sqlite => {
                let mut o = sqlx::sqlite::SqliteConnectOptions::new()
                    .foreign_keys(true)
                    // LIKE is case-sensitive on every engine (see `tandem_sql::ast::Expr::Like`).
                    .pragma("case_sensitive_like", "ON")
                    .statement_cache_capacity(64);
                o = match &options.path {
                    Some(path) => o
                        .filename(path)
                        .create_if_missing(true)
                        .journal_mode(sqlx::sqlite::SqliteJournalMode::Wal)
                        .synchronous(sqlx::sqlite::SqliteSynchronous::Normal)
                        .busy_timeout(std::time::Duration::from_secs(5)),
                    None => o.in_memory(true),
                };
                Pools::Sqlite(
                    open_pool(o, &config, created, admission.losses().clone(), &options).await?,
                )
            }
            #[allow(unreachable_patterns)]
            other => return Err(Error::engine_left_out(other, "tandem-async")),
        };
        let chosen_at = admission.losses().stamp();
        let options_for_observer = options.clone();
        let db = Database {
            inner: Arc::new(Inner {
                pools,
                admission,
                writers: WriterGate::for_database(&options),
                options,
                config,
                mysql_collation: std::sync::OnceLock::new(),
                chosen_at: AtomicU64::new(chosen_at),
                choosing: tokio::sync::Mutex::new(()),
                server,
                standby: std::sync::OnceLock::new(),
                observer: Observer::new(Side::Async, &options_for_observer),
            }),
        };
        // The size gauge starts from the warm pool's count.
        db.inner.admission.gauges().open_now(db.pool_state().0);
        Ok(db)
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
        match &self.inner.pools {
            #[cfg(feature = "postgres")]
            Pools::Pg(p) => p.state(),
            #[cfg(feature = "postgres")]
            Pools::Postgres(p) => (p.size(), p.num_idle() as u32),
            #[cfg(feature = "mysql")]
            Pools::My(p) => p.state(),
            #[cfg(feature = "mysql")]
            Pools::MySql(p) => (p.size(), p.num_idle() as u32),
            #[cfg(feature = "sqlite")]
            Pools::Sqlite(p) => (p.size(), p.num_idle() as u32),
            #[cfg(feature = "sqlite")]
            Pools::Rusqlite(p) => p.state(),
        }
    }

    /// The pool's status and counters (see [`PoolMetrics`]).
    pub fn pool_metrics(&self) -> PoolMetrics {
        let (open, idle) = self.pool_state();
        PoolMetrics {
            writers_waiting: WriterGate::waiting(self.inner.writers.as_ref()),
            ..self.inner.admission.metrics(open, idle)
        }
    }

    /// Admission first (a bounded queue, in arrival order), then the connection from the pool within what
    /// is left of the acquire timeout.
    pub(crate) async fn acquire(&self) -> Result<Conn> {
        let span = observe::checkout_span(self.dialect());
        let (mut conn, waited, open) = in_span!(span, self.acquire_unobserved())?;
        observe::checked_out(&span, waited);
        conn.counted(self.inner.admission.checked_out(waited, open));
        Ok(conn)
    }

    /// A connection, how long the acquire waited, and the driver pool's count of connections for a pool
    /// that does not count its own. What may connect (a driver pool's checkout, a ping, a walk of the
    /// servers) is boxed where it is called: inline, those states (tens of KiB, every pool kind's) would sit
    /// in every caller's future — in a service, in each request in flight, also while it waits its turn
    /// at the gate or on something else after its statements ran (sqlx's: it opens and closes them on its own, so its count is read at
    /// each checkout; the SQLite workers count themselves).
    async fn acquire_unobserved(&self) -> Result<(Conn, Duration, Option<u32>)> {
        match &self.inner.pools {
            #[cfg(feature = "postgres")]
            Pools::Pg(p) => self.acquire_native(p, Link::Pg).await,
            #[cfg(feature = "mysql")]
            Pools::My(p) => self.acquire_native(p, Link::My).await,
            #[cfg(feature = "postgres")]
            Pools::Postgres(p) => self
                .admitted(|| link(p, Link::Postgres))
                .await
                .map(|(c, w)| (c, w, Some(p.size()))),
            #[cfg(feature = "mysql")]
            Pools::MySql(p) => self
                .admitted(|| link(p, Link::MySql))
                .await
                .map(|(c, w)| (c, w, Some(p.size()))),
            #[cfg(feature = "sqlite")]
            Pools::Sqlite(p) => self
                .admitted(|| link(p, Link::Sqlite))
                .await
                .map(|(c, w)| (c, w, Some(p.size()))),
            // The same checkout as the server connections' (a worker is never checked: nothing to ask).
            #[cfg(feature = "sqlite")]
            Pools::Rusqlite(p) => self.acquire_native(p, Link::Rusqlite).await,
        }
    }

    /// A connection from one of tandem's own pools (tokio-postgres, mysql_async, the rusqlite workers),
    /// through the admission gate. One idle since before the pool last lost a connection — every one, with
    /// `validate_on_checkout` — is checked first, within a bound (it may be on a server that went away),
    /// and replaced when it does not answer; a new one walks the URL's servers itself.
    async fn acquire_native<O: crate::native::Opener>(
        &self,
        p: &crate::native::NativePool<O>,
        wrap: fn(crate::native::Pooled<O>) -> Link,
    ) -> Result<(Conn, Duration, Option<u32>)> {
        let admission = &self.inner.admission;
        let (permit, waited) = admission.acquire_waited().await?;
        let losses = admission.losses();
        // The gate's permit is a right to a connection: an idle one, or a new one — the pool has no wait
        // of its own. The path a warm pool takes all day — admitted at once, a connection idle and not
        // suspect — sets no timer and reads the clock only for the pool's age rules.
        // What is slow — a connect, the check of a suspect connection — runs within what is left of the
        // acquire timeout (connecting included, as `PoolConfig::acquire_timeout` says): past it, the
        // acquire fails with `PoolTimeout`, even when the connect timeout is longer.
        // (The acquire began `waited` before `started`, the first moment one of them was needed.)
        let mut started = None;
        loop {
            let mut c = match p.take_idle() {
                Some(c) => c,
                None => {
                    let began = *started.get_or_insert_with(Instant::now) - waited;
                    within(admission, began, p.open_one()).await??
                }
            };
            let check = O::ASKS
                && (self.inner.config.validate_on_checkout
                    || (losses.any_loss() && losses.suspect_idle(c.idle_since().elapsed())));
            if check {
                let began = *started.get_or_insert_with(Instant::now) - waited;
                if !within(admission, began, Box::pin(O::answers(&mut c))).await? {
                    c.discard();
                    continue;
                }
            }
            let observer = self.inner.observer.clone();
            // Losses are noted (and known-good times stamped) only where a check could follow.
            let losses = O::ASKS.then(|| losses.clone());
            let conn = Conn::new(wrap(c), permit, losses, None, None, observer, None);
            let waited = started.map_or(waited, |s| waited + s.elapsed());
            return Ok((conn, waited, None));
        }
    }

    /// Takes a connection from a sqlx pool (`pool_acquire` starts one attempt). A server that is gone
    /// surfaces within the connect timeout, as on the blocking side: after waiting that long without a
    /// connection, and before waiting at all once a connect failed, the pool asks the server directly
    /// ([`Database::reach`]) and returns its connect error when it does not answer — sqlx's pool itself
    /// would keep retrying a refused connect until the acquire timeout.
    async fn admitted<F>(&self, pool_acquire: impl Fn() -> F) -> Result<(Conn, Duration)>
    where
        F: Future<Output = std::result::Result<Link, sqlx::Error>>,
    {
        let started = Instant::now();
        let admission = &self.inner.admission;
        let permit = admission.acquire().await?;
        let chooses = self.inner.options.chooses_server();
        if chooses {
            Box::pin(self.follow_failover()).await?;
        }
        let server = self.dialect() != Dialect::Sqlite;
        if server && admission.losses().unreachable() {
            Box::pin(self.reach()).await?;
        }
        let result = loop {
            let left = admission.remaining(started);
            let wait = left.min(self.inner.config.connect_timeout);
            match tokio::time::timeout(wait, pool_acquire()).await {
                Ok(Ok(link)) => {
                    let losses = Some(admission.losses().clone());
                    let (bound, at) = (self.inner.options.socket_timeout, &self.inner.server);
                    let observer = self.inner.observer.clone();
                    let at = Some(at.clone());
                    let conn = Conn::new(link, permit, losses, bound, at, observer, None);
                    return Ok((conn, started.elapsed()));
                }
                // A connect timeout's worth of waiting: is the server there at all?
                Err(_) if server && wait < left => Box::pin(self.reach()).await?,
                // sqlx's own timeout: the wait and size are the admission's, measured here.
                Ok(Err(sqlx::Error::PoolTimedOut)) | Err(_) => {
                    break Err(admission.timed_out(started).into());
                }
                Ok(Err(e)) => break Err(error(self.dialect(), e)),
            }
        };
        // The chosen server may be gone: the next acquire walks the list again.
        if chooses {
            admission.losses().note_loss();
        }
        result
    }

    /// One connect to the server the pool uses, outside the pool: `Ok` when it answers, its connect error
    /// when it does not. Remembered either way (see [`tandem_pool::LossClock`]).
    async fn reach(&self) -> Result<()> {
        #[cfg_attr(
            not(any(feature = "postgres", feature = "mysql")),
            allow(unused_variables)
        )]
        let (options, config) = (&self.inner.options, &self.inner.config);
        let result: Result<()> = match &self.inner.pools {
            #[cfg(feature = "postgres")]
            Pools::Postgres(p) => {
                reach_with::<sqlx::PgConnection>(&p.connect_options(), options, config).await
            }
            #[cfg(feature = "mysql")]
            Pools::MySql(p) => {
                reach_with::<sqlx::MySqlConnection>(&p.connect_options(), options, config).await
            }
            #[allow(unreachable_patterns)]
            _ => Ok(()),
        };
        let losses = self.inner.admission.losses();
        match result {
            Ok(()) => {
                losses.note_reachable(true);
                Ok(())
            }
            Err(e) if e.is_unreachable() => {
                losses.note_reachable(false);
                // With a list of servers, the next acquire walks it again.
                Err(e)
            }
            Err(e) => Err(e),
        }
    }

    /// After a connection loss, chooses the server again from the URL's list (see [`choose_server`]) and
    /// points the pool at it; connections to a server that died fail their check and are replaced.
    async fn follow_failover(&self) -> Result<()> {
        let losses = self.inner.admission.losses();
        let chosen_at = &self.inner.chosen_at;
        if !losses.suspect(chosen_at.load(Ordering::Acquire)) {
            return Ok(());
        }
        let _one = self.inner.choosing.lock().await;
        if !losses.suspect(chosen_at.load(Ordering::Acquire)) {
            return Ok(());
        }
        let stamp = losses.stamp();
        #[cfg_attr(
            not(any(feature = "postgres", feature = "mysql")),
            allow(unused_variables)
        )]
        let (options, config) = (&self.inner.options, &self.inner.config);
        match &self.inner.pools {
            #[cfg(feature = "postgres")]
            Pools::Postgres(p) => {
                let chosen =
                    choose_server(options, config, pg_connect_options, Some(pg_role)).await?;
                p.set_connect_options(pg_connect_options(&chosen)?);
                set_server(&self.inner.server, &chosen);
            }
            #[cfg(feature = "mysql")]
            Pools::MySql(p) => {
                let chosen = choose_server::<sqlx::MySqlConnection>(
                    options,
                    config,
                    mysql_connect_options,
                    None,
                )
                .await?;
                p.set_connect_options(mysql_connect_options(&chosen)?);
                set_server(&self.inner.server, &chosen);
            }
            #[allow(unreachable_patterns)]
            _ => {}
        }
        chosen_at.store(stamp, Ordering::Release);
        Ok(())
    }

    /// Checks a connection out of the pool, to drive by hand; it goes back when dropped.
    pub async fn checkout(&self) -> Result<crate::PooledConnection> {
        Ok(crate::PooledConnection::new(
            self.acquire().await?,
            self.inner.writers.clone(),
        ))
    }

    pub(crate) async fn stream<T>(&self, r: Rendered) -> Result<RowStream<T>> {
        let conn = self.acquire().await?;
        Ok(RowStream::start(conn, r, None))
    }

    /// Runs `f` in a transaction with default options: commit on `Ok`; rollback on `Err`, on panic and when
    /// this future is dropped before it finishes; the whole transaction rerun on a retriable error (up to 3
    /// attempts). `f` returns tandem's [`Error`], so a closure ending in `Ok(())` needs no annotation;
    /// [`Database::try_transaction`] takes a closure that returns an error type of the caller's own.
    pub async fn transaction<T>(&self, f: impl AsyncFnMut(&Transaction) -> Result<T>) -> Result<T> {
        self.try_transaction_with(TxOptions::default(), f).await
    }

    /// [`Database::transaction`] with these options.
    pub async fn transaction_with<T>(
        &self,
        opts: TxOptions,
        f: impl AsyncFnMut(&Transaction) -> Result<T>,
    ) -> Result<T> {
        self.try_transaction_with(opts, f).await
    }

    /// [`Database::transaction`] for a closure that returns an error type of the caller's own, one that
    /// tandem's [`Error`] converts into (so `?` works on every call inside).
    pub async fn try_transaction<T, E: From<Error> + 'static>(
        &self,
        f: impl AsyncFnMut(&Transaction) -> Result<T, E>,
    ) -> Result<T, E> {
        self.try_transaction_with(TxOptions::default(), f).await
    }

    /// Runs `f` in a transaction with these options. Any `Err` rolls back. The attempt is run again (up to
    /// `opts.max_attempts`) when it failed because of a retriable database error — the error `f` returned
    /// is tandem's and retriable, or one of the transaction's statements failed retriably, whatever error
    /// `f` turned that into (see [`TxOptions::should_retry_any`]).
    pub async fn try_transaction_with<T, E: From<Error> + 'static>(
        &self,
        opts: TxOptions,
        mut f: impl AsyncFnMut(&Transaction) -> Result<T, E>,
    ) -> Result<T, E> {
        let mut attempts = tandem_core::Attempts::new(&opts);
        loop {
            let begun = crate::conn::as_attempt(attempts.made() + 1, self.begin(opts.clone()));
            let tx = match begun.await {
                Ok(tx) => tx,
                Err(e) if attempts.again(&e, false) => {
                    tokio::time::sleep(attempts.pause()).await;
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
            // The closure's own work (its logs, its spans) is inside the transaction's span too.
            let result = match in_span!(tx.span(), f(&tx)) {
                Ok(v) => tx.end(&opts, true).await.map(|()| v).map_err(E::from),
                Err(e) => {
                    let _ = tx.end(&opts, false).await;
                    Err(e)
                }
            };
            let seen = result.is_err() && tx.retriable_seen().await;
            drop(tx);
            match result {
                Err(e) if attempts.again(&e, seen) => {
                    tokio::time::sleep(attempts.pause()).await;
                    continue;
                }
                other => return other,
            }
        }
    }

    /// Opens a transaction to drive by hand: finish it with [`Transaction::commit`] or
    /// [`Transaction::rollback`]; dropped unfinished, it is rolled back. No retry here: use
    /// [`Database::transaction`] for that. This form's future is always `Send`, which a closure-taking one
    /// cannot promise on stable Rust, so it is the one to use inside `tokio::spawn` and web handlers.
    pub async fn begin(&self, opts: TxOptions) -> Result<Transaction> {
        // A writer waits for its turn before it takes a connection, and keeps it until the transaction ends.
        let turn = WriterGate::enter(self.inner.writers.as_ref(), &opts).await?;
        Transaction::begin(self.acquire_for(&opts).await?, &opts, turn).await
    }

    /// Sends read-only transactions ([`TxOptions::read_only`]) to a standby: a second pool, on `url`, with
    /// the same settings (a PostgreSQL hot standby, a MySQL replica). Everything else — writes, statements
    /// outside a transaction, repository calls — stays on this database. A standby replays the primary's
    /// log after the primary commits, so a read-only transaction there may not see the latest commits yet
    /// (the replay lag: milliseconds on a quiet loopback pair, unbounded if replay stops). When the standby
    /// cannot be reached, read-only transactions run here instead: the standby's pool waits at most
    /// `connect_timeout` for a connection before giving up. Clones share the standby.
    pub async fn with_standby(self, url: &str) -> Result<Database> {
        let options = ConnectOptions::parse(url)?;
        if options.dialect != self.dialect() || self.dialect() == Dialect::Sqlite {
            return Err(Error::StandbyEngine {
                dialect: self.dialect(),
                standby: options.display,
            });
        }
        let standby = Box::pin(Database::open(options, self.inner.config.for_standby())).await?;
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
    async fn acquire_for(&self, opts: &TxOptions) -> Result<Conn> {
        if opts.read_only
            && let Some(standby) = self.standby()
        {
            match Box::pin(standby.acquire()).await {
                Ok(conn) => return Ok(conn),
                Err(e) if e.is_unreachable() => {
                    tracing::warn!(error = %e, "standby unreachable: read-only transaction on the primary");
                }
                Err(e) => return Err(e),
            }
        }
        self.acquire().await
    }

    /// Runs a plan (a repository method), in one transaction when its steps belong together. Written without
    /// closures so that every repository future is `Send`.
    pub(crate) async fn run_plan<T>(&self, plan: Plan<T>) -> Result<T> {
        if plan.needs_transaction() {
            return self.run_atomically(&TxOptions::default(), plan).await;
        }
        let outcomes = self.acquire().await?.run_steps(&plan.steps).await?;
        plan.finish(outcomes)
    }

    /// Runs a plan's steps in one transaction with these options, whatever the plan's own atomicity;
    /// a retriable failure runs the whole transaction again (up to `opts.max_attempts`). On a SQLite file
    /// the transaction — BEGIN, every step, COMMIT — is one call on the connection's worker thread.
    pub async fn run_atomically<T>(&self, opts: &TxOptions, plan: Plan<T>) -> Result<T> {
        let outcomes = crate::transaction::retry(opts, || async {
            // A writer waits for its turn before it takes a connection, and keeps it to the end.
            let _turn = WriterGate::enter(self.inner.writers.as_ref(), opts).await?;
            let mut conn = self.acquire_for(opts).await?;
            conn.run_steps_atomically(&plan.steps, opts).await
        })
        .await?;
        plan.finish(outcomes)
    }

    /// Creates a declared table and its indexes (`IF NOT EXISTS`).
    pub async fn create_table(&self, table: &CreateTable) -> Result<()> {
        let table = match self.dialect() {
            Dialect::MySql => {
                let collation = match self.inner.mysql_collation.get() {
                    Some(c) => *c,
                    None => tandem_core::ddl::choose(
                        &self
                            .fetch_all(&tandem_core::ddl::mysql_collations())
                            .await?,
                    ),
                };
                let _ = self.inner.mysql_collation.set(collation);
                std::borrow::Cow::Owned(tandem_core::ddl::for_server(table, collation))
            }
            _ => std::borrow::Cow::Borrowed(table),
        };
        let mut conn = self.acquire().await?;
        for r in table.render_all(self.dialect())? {
            conn.run(&r, &mut Discard).await?;
        }
        Ok(())
    }

    /// Drops tables (`IF EXISTS`), in the order given.
    pub async fn drop_tables(&self, tables: &[&tandem_sql::ast::TableSchema]) -> Result<()> {
        for t in tables {
            self.execute(&t.drop_table(true)).await?;
        }
        Ok(())
    }
}

impl crate::Executor for Database {
    fn dialect(&self) -> Dialect {
        Database::dialect(self)
    }
}

impl crate::executor::sealed::Run for Database {
    async fn run_statement<S: crate::conn::Sink>(&self, r: Rendered, sink: &mut S) -> Result<Done> {
        self.acquire().await?.run(&r, sink).await
    }

    async fn run_key_read<S: crate::conn::Sink>(&self, r: Rendered, sink: &mut S) -> Result<Done> {
        self.acquire().await?.run_key_read(&r, sink).await
    }

    fn run<T: Send>(&self, plan: Plan<T>) -> impl Future<Output = Result<T>> + Send {
        self.run_plan(plan)
    }

    fn stream_rendered<T: Send>(
        &self,
        r: Rendered,
    ) -> impl Future<Output = Result<RowStream<T>>> + Send {
        self.stream(r)
    }
}

/// Records the server a pool was pointed at.
#[cfg(any(feature = "postgres", feature = "mysql"))]
fn set_server(server: &crate::conn::Server, chosen: &ConnectOptions) {
    *server.lock().unwrap_or_else(|p| p.into_inner()) = tandem_core::hosts::Remote::of(chosen);
}

/// `slow` (a connect, a check) within what is left of the acquire timeout for an acquire that began at
/// `began`; past it, the acquire's timeout error.
async fn within<T>(
    admission: &tandem_pool::Admission,
    began: Instant,
    slow: impl Future<Output = T>,
) -> Result<T> {
    tokio::time::timeout(admission.remaining(began), slow)
        .await
        .map_err(|_| admission.timed_out(began).into())
}
