//! [`Database`]: sqlx pools opened from the same URLs as the blocking executor, with statement execution,
//! streams, transactions (async closures) and plan execution.

use std::sync::Arc;
use std::time::{Duration, Instant};

use sqlx::pool::PoolOptions;
use tandem_core::plan::Plan;
use tandem_core::{ConnectOptions, Error, PoolConfig, Result, TxOptions};
use tandem_sql::ast::CreateTable;
use tandem_sql::{Dialect, FromRow, Render, Rendered};

use crate::backend::error;
use crate::conn::{Collect, Conn, Discard, First};
use crate::stream::RowStream;
use crate::transaction::Transaction;

enum Pools {
    Postgres(sqlx::PgPool),
    MySql(sqlx::MySqlPool),
    Sqlite(sqlx::SqlitePool),
    /// SQLite through rusqlite (the default; see [`tandem_core::SqliteDriver`]).
    Rusqlite(tandem_blocking::Database),
}

/// A database: a bounded sqlx pool to one SQLite file (or memory), PostgreSQL or MySQL database. Cheap to
/// clone; clones share the pool.
#[derive(Clone)]
pub struct Database {
    inner: Arc<Inner>,
}

struct Inner {
    pools: Pools,
    options: ConnectOptions,
    config: PoolConfig,
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Database")
            .field("url", &self.inner.options.display)
            .field("config", &self.inner.config)
            .finish()
    }
}

fn pool_options<DB: sqlx::Database>(config: &PoolConfig) -> PoolOptions<DB> {
    PoolOptions::<DB>::new()
        .max_connections(config.max_size.max(1))
        .min_connections(config.min_idle.unwrap_or(0).min(config.max_size.max(1)))
        .acquire_timeout(config.acquire_timeout)
        .test_before_acquire(config.validate_on_checkout)
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

    /// Opens parsed options: connects `min_idle` connections (at least one) before returning, so an
    /// unreachable database is an error here.
    pub async fn open(options: ConnectOptions, mut config: PoolConfig) -> Result<Database> {
        if options.is_memory() {
            // Every connection to `:memory:` is a database of its own: one connection keeps one database.
            config.max_size = 1;
            config.min_idle = Some(1);
        }
        let dialect = options.dialect;
        let connect_err = |e: sqlx::Error| match error(dialect, e) {
            Error::PoolTimeout { .. } => Error::Database(tandem_core::DbError::connection_lost(
                dialect,
                format!("cannot connect to {}", options.display),
            )),
            Error::Database(mut d) => {
                d.message = format!("cannot connect to {}: {}", options.display, d.message);
                Error::Database(d)
            }
            other => other,
        };
        let pools = match dialect {
            Dialect::Postgres => {
                let mut o = sqlx::postgres::PgConnectOptions::new()
                    .host(&options.host)
                    .port(options.port)
                    .username(&options.user)
                    .database(&options.database)
                    .ssl_mode(sqlx::postgres::PgSslMode::Disable)
                    .statement_cache_capacity(64);
                if let Some(p) = &options.password {
                    o = o.password(p);
                }
                if let Some(name) = &options.application_name {
                    o = o.application_name(name);
                }
                if let Some(sp) = &options.search_path {
                    o = o.options([("search_path", sp.as_str())]);
                }
                Pools::Postgres(
                    pool_options(&config)
                        .connect_with(o)
                        .await
                        .map_err(connect_err)?,
                )
            }
            Dialect::MySql => {
                let mut o = sqlx::mysql::MySqlConnectOptions::new()
                    .host(&options.host)
                    .port(options.port)
                    .username(&options.user)
                    .database(&options.database)
                    .ssl_mode(sqlx::mysql::MySqlSslMode::Disabled)
                    .statement_cache_capacity(64);
                if let Some(p) = &options.password {
                    o = o.password(p);
                }
                Pools::MySql(
                    pool_options(&config)
                        .connect_with(o)
                        .await
                        .map_err(connect_err)?,
                )
            }
            Dialect::Sqlite if options.sqlite_driver == tandem_core::SqliteDriver::Rusqlite => {
                let (o, c) = (options.clone(), config.clone());
                let db = tokio::task::spawn_blocking(move || tandem_blocking::Database::open(o, c))
                    .await
                    .map_err(|e| Error::Usage(format!("opening SQLite: {e}")))??;
                Pools::Rusqlite(db)
            }
            Dialect::Sqlite => {
                let mut o = sqlx::sqlite::SqliteConnectOptions::new()
                    .foreign_keys(true)
                    .statement_cache_capacity(64);
                o = match &options.path {
                    Some(path) => o
                        .filename(path)
                        .create_if_missing(true)
                        .journal_mode(sqlx::sqlite::SqliteJournalMode::Wal)
                        .synchronous(sqlx::sqlite::SqliteSynchronous::Normal)
                        .busy_timeout(Duration::from_secs(5)),
                    None => o.in_memory(true),
                };
                Pools::Sqlite(
                    pool_options(&config)
                        .connect_with(o)
                        .await
                        .map_err(connect_err)?,
                )
            }
        };
        Ok(Database {
            inner: Arc::new(Inner {
                pools,
                options,
                config,
            }),
        })
    }

    /// The engine.
    pub fn dialect(&self) -> Dialect {
        self.inner.options.dialect
    }

    /// The pool settings in force.
    pub fn config(&self) -> &PoolConfig {
        &self.inner.config
    }

    /// Connections open and idle right now.
    pub fn pool_state(&self) -> (u32, u32) {
        match &self.inner.pools {
            Pools::Postgres(p) => (p.size(), p.num_idle() as u32),
            Pools::MySql(p) => (p.size(), p.num_idle() as u32),
            Pools::Sqlite(p) => (p.size(), p.num_idle() as u32),
            Pools::Rusqlite(db) => db.pool_state(),
        }
    }

    pub(crate) async fn acquire(&self) -> Result<Conn> {
        let started = Instant::now();
        let timeout = |e: sqlx::Error| match error(self.dialect(), e) {
            Error::PoolTimeout { .. } => Error::PoolTimeout {
                waited: started.elapsed(),
                max_size: self.inner.config.max_size,
            },
            other => other,
        };
        Ok(match &self.inner.pools {
            Pools::Postgres(p) => Conn::Postgres(p.acquire().await.map_err(timeout)?),
            Pools::MySql(p) => Conn::MySql(p.acquire().await.map_err(timeout)?),
            Pools::Sqlite(p) => Conn::Sqlite(p.acquire().await.map_err(timeout)?),
            Pools::Rusqlite(db) => {
                let db = db.clone();
                let conn = tokio::task::spawn_blocking(move || db.checkout())
                    .await
                    .map_err(|e| Error::Usage(format!("acquiring a SQLite connection: {e}")))??;
                Conn::Rusqlite(Some(conn))
            }
        })
    }

    /// Runs a statement; returns rows affected.
    pub async fn execute(&self, stmt: &impl Render) -> Result<u64> {
        let r = stmt.render(self.dialect())?;
        Ok(self.acquire().await?.run(&r, &mut Discard).await?.affected)
    }

    /// All rows, decoded.
    pub async fn fetch_all<T: FromRow>(&self, stmt: &impl Render) -> Result<Vec<T>> {
        let r = stmt.render(self.dialect())?;
        let mut rows = Collect(Vec::new());
        self.acquire().await?.run(&r, &mut rows).await?;
        rows.0
            .into_iter()
            .map(|row| T::from_row(row).map_err(Error::from))
            .collect()
    }

    /// The first row, or [`Error::RowNotFound`].
    pub async fn fetch_one<T: FromRow>(&self, stmt: &impl Render) -> Result<T> {
        self.fetch_optional(stmt).await?.ok_or(Error::RowNotFound)
    }

    /// The first row, if any.
    pub async fn fetch_optional<T: FromRow>(&self, stmt: &impl Render) -> Result<Option<T>> {
        let r = stmt.render(self.dialect())?;
        let mut first = First(None);
        self.acquire().await?.run(&r, &mut first).await?;
        first.0.map(T::from_row).transpose().map_err(Error::from)
    }

    /// A `Stream` of rows that reads from the server as it is polled, a bounded number at a time (see
    /// [`RowStream`]). It holds one connection until it ends or is dropped.
    pub async fn fetch<T: FromRow>(&self, stmt: &impl Render) -> Result<RowStream<T>> {
        self.stream(stmt.render(self.dialect())?).await
    }

    pub(crate) async fn stream<T>(&self, r: Rendered) -> Result<RowStream<T>> {
        let conn = self.acquire().await?;
        Ok(RowStream::start(conn, r, None))
    }

    /// Runs `f` in a transaction with default options: commit on `Ok`; rollback on `Err`, on panic and when
    /// this future is dropped before it finishes; the whole transaction rerun on a retriable error (up to 3
    /// attempts).
    pub async fn transaction<T>(&self, f: impl AsyncFnMut(&Transaction) -> Result<T>) -> Result<T> {
        self.transaction_with(TxOptions::default(), f).await
    }

    /// Runs `f` in a transaction with these options.
    pub async fn transaction_with<T>(
        &self,
        opts: TxOptions,
        mut f: impl AsyncFnMut(&Transaction) -> Result<T>,
    ) -> Result<T> {
        let mut attempt = 1;
        loop {
            let conn = self.acquire().await?;
            let tx = Transaction::begin(conn, &opts).await?;
            let result = match f(&tx).await {
                Ok(v) => tx.end(&opts, true).await.map(|()| v),
                Err(e) => {
                    let _ = tx.end(&opts, false).await;
                    Err(e)
                }
            };
            drop(tx);
            match result {
                Err(e) if opts.should_retry(&e, attempt) => {
                    tracing::debug!(attempt, error = %e, "retrying transaction");
                    attempt += 1;
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
        Transaction::begin(self.acquire().await?, &opts).await
    }

    /// Runs a plan (a repository method), in one transaction when its steps belong together. Written without
    /// closures so that every repository future is `Send`.
    pub async fn run<T>(&self, plan: Plan<T>) -> Result<T> {
        if plan.needs_transaction() {
            let opts = TxOptions::default();
            let mut attempt = 1;
            loop {
                let tx = self.begin(opts.clone()).await?;
                let result = match tx.run_steps(&plan.steps).await {
                    Ok(outcomes) => tx.end(&opts, true).await.map(|()| outcomes),
                    Err(e) => {
                        let _ = tx.end(&opts, false).await;
                        Err(e)
                    }
                };
                match result {
                    Err(e) if opts.should_retry(&e, attempt) => attempt += 1,
                    other => return plan.finish(other?),
                }
            }
        }
        let outcomes = self.acquire().await?.run_steps(&plan.steps).await?;
        plan.finish(outcomes)
    }

    /// Creates a declared table and its indexes (`IF NOT EXISTS`).
    pub async fn create_table(&self, table: &CreateTable) -> Result<()> {
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

    /// A repository of entity `E` over this database.
    pub fn repository<E: tandem_sql::Entity>(&self) -> crate::Repository<'_, E> {
        crate::Repository::new(crate::repository::Exec::Db(self))
    }
}
