//! The stores behind the service's variants: tandem on each executor, and the same two calls by hand on each
//! raw driver, with the smallest pool that bounds its connections (a stack of them behind a semaphore or a
//! condition variable), as a service written without tandem would hold them.

use std::sync::{Condvar, Mutex};

use anyhow::Context as _;
use tandem_async::Executor as _;
use tandem_blocking::Executor as _;
use tandem_core::ConnectOptions;
use tandem_sql::Dialect;

use super::app::{AsyncStore, BlockingStore, World};
use crate::seed;

/// The select and the update, as the raw drivers send them.
fn sql(dialect: Dialect) -> (&'static str, &'static str) {
    match dialect {
        Dialect::Postgres => (
            "SELECT id, randomnumber FROM world WHERE id = $1",
            "UPDATE world SET randomnumber = $1 WHERE id = $2",
        ),
        _ => (
            "SELECT id, randomnumber FROM world WHERE id = ?",
            "UPDATE world SET randomnumber = ? WHERE id = ?",
        ),
    }
}

fn missing(id: i32) -> anyhow::Error {
    anyhow::anyhow!("world has no row {id}")
}

/// tandem-async: the repository.
pub struct TandemAsync(pub tandem_async::Database);

impl AsyncStore for TandemAsync {
    async fn row(&self, id: i32) -> anyhow::Result<World> {
        self.0
            .repository::<World>()
            .find_by_id(id)
            .await?
            .ok_or_else(|| missing(id))
    }

    async fn update(&self, w: World) -> anyhow::Result<()> {
        self.0.repository::<World>().update_by_id(&w).await?;
        Ok(())
    }
}

/// tandem-blocking: the repository.
#[derive(Clone)]
pub struct TandemBlocking(pub tandem_blocking::Database);

impl BlockingStore for TandemBlocking {
    fn row(&self, id: i32) -> anyhow::Result<World> {
        self.0
            .repository::<World>()
            .find_by_id(id)?
            .ok_or_else(|| missing(id))
    }

    fn update(&self, w: World) -> anyhow::Result<()> {
        self.0.repository::<World>().update_by_id(&w)?;
        Ok(())
    }
}

/// At most `n` connections for tasks: a semaphore's permits and a stack of connections.
pub struct TaskPool<C> {
    permits: tokio::sync::Semaphore,
    conns: Mutex<Vec<C>>,
}

/// A connection out of a [`TaskPool`], back on the stack when dropped.
struct Held<'a, C> {
    pool: &'a TaskPool<C>,
    conn: Option<C>,
    _permit: tokio::sync::SemaphorePermit<'a>,
}

impl<C> TaskPool<C> {
    fn new(conns: Vec<C>) -> Self {
        TaskPool {
            permits: tokio::sync::Semaphore::new(conns.len()),
            conns: Mutex::new(conns),
        }
    }

    async fn get(&self) -> Held<'_, C> {
        let permit = self
            .permits
            .acquire()
            .await
            .expect("the semaphore is never closed");
        let conn = self.conns.lock().expect("no panics under the lock").pop();
        Held {
            pool: self,
            conn: Some(conn.expect("a permit stands for a connection on the stack")),
            _permit: permit,
        }
    }
}

impl<C> Held<'_, C> {
    fn conn(&mut self) -> &mut C {
        self.conn.as_mut().expect("held until dropped")
    }
}

impl<C> Drop for Held<'_, C> {
    fn drop(&mut self) {
        // Before the permit (a field, dropped after this body) lets the next task in.
        if let Some(c) = self.conn.take() {
            self.pool
                .conns
                .lock()
                .expect("no panics under the lock")
                .push(c);
        }
    }
}

/// At most `n` connections for threads: a stack of connections and a condition variable.
pub struct ThreadPool<C> {
    conns: Mutex<Vec<C>>,
    freed: Condvar,
}

impl<C> ThreadPool<C> {
    fn new(conns: Vec<C>) -> Self {
        ThreadPool {
            conns: Mutex::new(conns),
            freed: Condvar::new(),
        }
    }

    fn with<T>(&self, f: impl FnOnce(&mut C) -> anyhow::Result<T>) -> anyhow::Result<T> {
        let mut conn = {
            let mut stack = self.conns.lock().expect("no panics under the lock");
            loop {
                match stack.pop() {
                    Some(c) => break c,
                    None => stack = self.freed.wait(stack).expect("no panics under the lock"),
                }
            }
        };
        let out = f(&mut conn);
        self.conns
            .lock()
            .expect("no panics under the lock")
            .push(conn);
        self.freed.notify_one();
        out
    }
}

/// tokio-postgres or mysql_async by hand; statements prepared once per connection (tokio-postgres) or
/// cached by the driver (mysql_async).
pub enum RawAsync {
    /// tokio-postgres.
    Postgres(
        TaskPool<(
            tokio_postgres::Client,
            tokio_postgres::Statement,
            tokio_postgres::Statement,
        )>,
    ),
    /// mysql_async.
    MySql(TaskPool<mysql_async::Conn>),
}

impl RawAsync {
    /// `n` connections to the server `url` names; `None` for SQLite, which has no async driver of its own.
    pub async fn connect(url: &str, n: usize) -> anyhow::Result<Option<RawAsync>> {
        let opts = ConnectOptions::parse(url)?;
        let (select, update) = sql(opts.dialect);
        Ok(Some(match opts.dialect {
            Dialect::Sqlite => return Ok(None),
            Dialect::Postgres => {
                let mut conns = Vec::with_capacity(n);
                for _ in 0..n {
                    let c = seed::tokio_pg_client(&opts).await?;
                    let (s, u) = (c.prepare(select).await?, c.prepare(update).await?);
                    conns.push((c, s, u));
                }
                RawAsync::Postgres(TaskPool::new(conns))
            }
            Dialect::MySql => {
                let mut conns = Vec::with_capacity(n);
                for _ in 0..n {
                    conns.push(seed::mysql_async_conn(&opts).await?);
                }
                RawAsync::MySql(TaskPool::new(conns))
            }
        }))
    }
}

impl AsyncStore for RawAsync {
    async fn row(&self, id: i32) -> anyhow::Result<World> {
        let (id, randomnumber) = match self {
            RawAsync::Postgres(pool) => {
                let mut held = pool.get().await;
                let (c, select, _) = held.conn();
                let r = c
                    .query_opt(&*select, &[&id])
                    .await?
                    .ok_or_else(|| missing(id))?;
                (r.get(0), r.get(1))
            }
            RawAsync::MySql(pool) => {
                use mysql_async::prelude::Queryable;
                let mut held = pool.get().await;
                let row: Option<(i32, i32)> =
                    held.conn().exec_first(sql(Dialect::MySql).0, (id,)).await?;
                row.ok_or_else(|| missing(id))?
            }
        };
        Ok(World { id, randomnumber })
    }

    async fn update(&self, w: World) -> anyhow::Result<()> {
        match self {
            RawAsync::Postgres(pool) => {
                let mut held = pool.get().await;
                let (c, _, update) = held.conn();
                c.execute(&*update, &[&w.randomnumber, &w.id]).await?;
            }
            RawAsync::MySql(pool) => {
                use mysql_async::prelude::Queryable;
                let mut held = pool.get().await;
                held.conn()
                    .exec_drop(sql(Dialect::MySql).1, (w.randomnumber, w.id))
                    .await?;
            }
        }
        Ok(())
    }
}

/// sqlx by hand: its own pool of `n` connections, `query_as(..).fetch_one` and `query(..).execute`.
pub enum Sqlx {
    /// SQLite.
    Sqlite(sqlx::SqlitePool),
    /// PostgreSQL.
    Postgres(sqlx::PgPool),
    /// MySQL / MariaDB.
    MySql(sqlx::MySqlPool),
}

impl Sqlx {
    /// A pool of `n` connections to `url`.
    pub async fn connect(url: &str, n: u32) -> anyhow::Result<Sqlx> {
        let opts = ConnectOptions::parse(url)?;
        crate::plain_only(&opts)?;
        Ok(match opts.dialect {
            Dialect::Sqlite => Sqlx::Sqlite(
                sqlx::sqlite::SqlitePoolOptions::new()
                    .max_connections(n)
                    .connect_with(seed::sqlx_sqlite_options(&opts))
                    .await?,
            ),
            Dialect::Postgres => Sqlx::Postgres(
                sqlx::postgres::PgPoolOptions::new()
                    .max_connections(n)
                    .connect_with(seed::sqlx_pg_options(&opts))
                    .await?,
            ),
            Dialect::MySql => Sqlx::MySql(
                sqlx::mysql::MySqlPoolOptions::new()
                    .max_connections(n)
                    .connect_with(seed::sqlx_mysql_options(&opts))
                    .await?,
            ),
        })
    }
}

/// The same sqlx call on whichever pool `$store` holds.
macro_rules! on_sqlx {
    ($store:expr, $dialect:ident, $pool:ident => $call:expr) => {
        match $store {
            Sqlx::Sqlite($pool) => {
                let $dialect = Dialect::Sqlite;
                $call
            }
            Sqlx::Postgres($pool) => {
                let $dialect = Dialect::Postgres;
                $call
            }
            Sqlx::MySql($pool) => {
                let $dialect = Dialect::MySql;
                $call
            }
        }
    };
}

impl AsyncStore for Sqlx {
    async fn row(&self, id: i32) -> anyhow::Result<World> {
        let (id, randomnumber) = on_sqlx!(self, dialect, pool => {
            sqlx::query_as::<_, (i32, i32)>(sql(dialect).0)
                .bind(id)
                .fetch_optional(pool)
                .await?
        })
        .ok_or_else(|| missing(id))?;
        Ok(World { id, randomnumber })
    }

    async fn update(&self, w: World) -> anyhow::Result<()> {
        on_sqlx!(self, dialect, pool => {
            sqlx::query(sql(dialect).1)
                .bind(w.randomnumber)
                .bind(w.id)
                .execute(pool)
                .await?;
        });
        Ok(())
    }
}

/// The raw blocking drivers by hand: rusqlite, `postgres` (statements prepared once per connection), `mysql`
/// (statements cached by the driver), `n` connections shared by the server's threads.
pub enum RawBlocking {
    /// rusqlite.
    Sqlite(ThreadPool<rusqlite::Connection>),
    /// `postgres`.
    Postgres(ThreadPool<(postgres::Client, postgres::Statement, postgres::Statement)>),
    /// `mysql`.
    MySql(ThreadPool<mysql::Conn>),
}

impl RawBlocking {
    /// `n` connections to `url`.
    pub fn connect(url: &str, n: usize) -> anyhow::Result<RawBlocking> {
        let opts = ConnectOptions::parse(url)?;
        let (select, update) = sql(opts.dialect);
        Ok(match opts.dialect {
            Dialect::Sqlite => RawBlocking::Sqlite(ThreadPool::new(
                (0..n)
                    .map(|_| seed::sqlite_conn(&opts))
                    .collect::<anyhow::Result<_>>()?,
            )),
            Dialect::Postgres => RawBlocking::Postgres(ThreadPool::new(
                (0..n)
                    .map(|_| {
                        let mut c = seed::pg_client(&opts)?;
                        let (s, u) = (c.prepare(select)?, c.prepare(update)?);
                        Ok((c, s, u))
                    })
                    .collect::<anyhow::Result<_>>()?,
            )),
            Dialect::MySql => RawBlocking::MySql(ThreadPool::new(
                (0..n)
                    .map(|_| seed::mysql_conn(&opts))
                    .collect::<anyhow::Result<_>>()?,
            )),
        })
    }
}

impl BlockingStore for RawBlocking {
    fn row(&self, id: i32) -> anyhow::Result<World> {
        let (select, _) = sql(match self {
            RawBlocking::Postgres(_) => Dialect::Postgres,
            _ => Dialect::MySql,
        });
        let (id, randomnumber) = match self {
            RawBlocking::Sqlite(pool) => pool.with(|c| {
                use rusqlite::OptionalExtension as _;
                Ok(c.prepare_cached(select)?
                    .query_row([id], |r| Ok((r.get(0)?, r.get(1)?)))
                    .optional()?)
            }),
            RawBlocking::Postgres(pool) => pool.with(|(c, select, _)| {
                Ok(c.query_opt(&*select, &[&id])?.map(|r| (r.get(0), r.get(1))))
            }),
            RawBlocking::MySql(pool) => pool.with(|c| {
                use mysql::prelude::Queryable as _;
                Ok(c.exec_first::<(i32, i32), _, _>(select, (id,))?)
            }),
        }?
        .ok_or_else(|| missing(id))?;
        Ok(World { id, randomnumber })
    }

    fn update(&self, w: World) -> anyhow::Result<()> {
        let (_, update) = sql(Dialect::MySql);
        match self {
            RawBlocking::Sqlite(pool) => pool.with(|c| {
                c.prepare_cached(update)?
                    .execute([w.randomnumber, w.id])
                    .context("rusqlite update")?;
                Ok(())
            }),
            RawBlocking::Postgres(pool) => pool.with(|(c, _, update)| {
                c.execute(&*update, &[&w.randomnumber, &w.id])?;
                Ok(())
            }),
            RawBlocking::MySql(pool) => pool.with(|c| {
                use mysql::prelude::Queryable as _;
                Ok(c.exec_drop(update, (w.randomnumber, w.id))?)
            }),
        }
    }
}
