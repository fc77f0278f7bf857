//! One pooled sqlx connection of any engine, and the generic statement loop every operation goes through.

use std::future::Future;
use std::sync::Arc;

use futures_util::TryStreamExt;
use sqlx::pool::PoolConnection;
use sqlx::{AssertSqlSafe, Column, Either, Row as _};
use tandem_blocking::engine::PooledConnection as BlockingConnection;
use tandem_core::plan::{Outcome, Step};
use tandem_core::{DbError, Error, Result};
use tandem_pool::Permit;
use tandem_sql::{Dialect, Rendered, Row};

use crate::backend::{Backend, error};

/// What a statement did, besides its rows.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Done {
    pub affected: u64,
    pub last_insert_id: Option<i64>,
}

/// Receives rows; returns `false` to stop reading. Async so that a stream's sink can wait for its
/// consumer: that wait is the backpressure.
pub(crate) trait Sink: Send {
    fn push(&mut self, row: Row) -> impl Future<Output = Result<bool>> + Send;
    /// How many rows a driver that cannot call back into async code should hand over (rusqlite on a blocking
    /// thread): all of them, or only the first.
    fn keep(&self) -> usize {
        usize::MAX
    }
}

/// Collects every row.
pub(crate) struct Collect(pub Vec<Row>);
impl Sink for Collect {
    async fn push(&mut self, row: Row) -> Result<bool> {
        self.0.push(row);
        Ok(true)
    }
}

/// Keeps the first row and stops.
pub(crate) struct First(pub Option<Row>);
impl Sink for First {
    async fn push(&mut self, row: Row) -> Result<bool> {
        self.0 = Some(row);
        Ok(false)
    }
    fn keep(&self) -> usize {
        1
    }
}

/// Discards rows.
pub(crate) struct Discard;
impl Sink for Discard {
    async fn push(&mut self, _: Row) -> Result<bool> {
        Ok(true)
    }
    fn keep(&self) -> usize {
        0
    }
}

/// A connection checked out of one of the pools, with its admission permit. Fields drop in order: the
/// connection is handed back to its pool before the permit admits the next waiter.
pub(crate) struct Conn {
    pub(crate) link: Link,
    /// Set before a transaction's first statement is sent and cleared once it has ended: a `Conn` dropped
    /// with it set (its future was cancelled somewhere in between) must not go back to the pool as it is.
    pub(crate) in_transaction: bool,
    _permit: Option<Permit>,
    /// The pool's record of lost connections (sqlx pools; the rusqlite path keeps its own).
    losses: Option<Arc<tandem_pool::LossClock>>,
}

/// The driver connection itself.
pub(crate) enum Link {
    Postgres(PoolConnection<sqlx::Postgres>),
    MySql(PoolConnection<sqlx::MySql>),
    Sqlite(PoolConnection<sqlx::Sqlite>),
    /// A rusqlite connection, driven on tokio's blocking threads; `None` while a cancelled call still has it.
    Rusqlite(Option<BlockingConnection>),
}

/// Runs `f` on the connection on a blocking thread and brings the connection back. If the caller's future is
/// dropped meanwhile, the connection goes back to its pool from the thread, which ends any transaction it
/// was left in first.
pub(crate) async fn hop<R: Send + 'static>(
    slot: &mut Option<BlockingConnection>,
    f: impl FnOnce(&mut BlockingConnection) -> Result<R> + Send + 'static,
) -> Result<R> {
    let mut conn = slot
        .take()
        .ok_or_else(|| Error::Usage("the connection was lost by a cancelled call".into()))?;
    // Dropped with this future: a caller that gives up also stops the statement, instead of leaving it
    // to run to its end on the blocking thread.
    let mut stop = InterruptOnDrop(conn.interrupter());
    let (back, rx) = tokio::sync::oneshot::channel();
    tokio::task::spawn_blocking(move || {
        let result = f(&mut conn);
        // If the caller is gone, `conn` is dropped here: its pool ends any transaction it was left in
        // before pooling it (see `tandem_blocking`'s `has_broken`).
        let _ = back.send((conn, result));
    });
    let (conn, result) = rx
        .await
        .map_err(|_| Error::Usage("a blocking SQLite call panicked".into()))?;
    stop.0 = None;
    *slot = Some(conn);
    result
}

struct InterruptOnDrop(Option<tandem_blocking::engine::Interrupter>);

impl Drop for InterruptOnDrop {
    fn drop(&mut self) {
        if let Some(i) = &self.0 {
            i.interrupt();
        }
    }
}

async fn run_on<B: Backend, S: Sink>(
    conn: &mut PoolConnection<B>,
    r: &Rendered,
    sink: &mut S,
) -> Result<Done>
where
    for<'c> &'c mut B::Connection: sqlx::Executor<'c, Database = B>,
    B::Arguments: sqlx::IntoArguments<B>,
{
    let mut q = sqlx::query::<B>(AssertSqlSafe(r.sql.clone()));
    for v in &r.params {
        q = B::bind(q, v)?;
    }
    let mut done = Done::default();
    let mut names: Option<Arc<[String]>> = None;
    let mut stream = sqlx::Executor::fetch_many(&mut **conn, q);
    while let Some(item) = stream.try_next().await.map_err(|e| error(B::DIALECT, e))? {
        match item {
            Either::Left(result) => {
                done.affected += B::affected(&result);
                if let Some(id) = B::last_insert_id(&result) {
                    done.last_insert_id = Some(id);
                }
            }
            Either::Right(row) => {
                let columns = names
                    .get_or_insert_with(|| {
                        row.columns()
                            .iter()
                            .map(|c| c.name().to_owned())
                            .collect::<Vec<_>>()
                            .into()
                    })
                    .clone();
                let mut values = Vec::with_capacity(columns.len());
                for i in 0..columns.len() {
                    values.push(B::decode(&row, i)?);
                }
                if !sink.push(Row::new(columns, values)).await? {
                    return Ok(Done::default());
                }
            }
        }
    }
    Ok(done)
}

async fn simple_on<B: Backend>(conn: &mut PoolConnection<B>, sql: &str) -> Result<()>
where
    for<'c> &'c mut B::Connection: sqlx::Executor<'c, Database = B>,
{
    sqlx::raw_sql(AssertSqlSafe(sql.to_owned()))
        .execute(&mut **conn)
        .await
        .map(|_| ())
        .map_err(|e| error(B::DIALECT, e))
}

impl Conn {
    pub(crate) fn new(
        link: Link,
        permit: Option<Permit>,
        losses: Option<Arc<tandem_pool::LossClock>>,
    ) -> Conn {
        Conn {
            link,
            in_transaction: false,
            _permit: permit,
            losses,
        }
    }

    /// Ends a sqlx SQLite connection's abandoned transaction (see [`Drop for Conn`]); closes the connection
    /// if that fails. The statements after the ROLLBACK prove the connection is outside a transaction.
    async fn end_abandoned_sqlite(mut self) {
        self.in_transaction = false;
        let _ = self.simple("ROLLBACK").await;
        for sql in ["PRAGMA query_only = OFF", "BEGIN DEFERRED", "ROLLBACK"] {
            if self.simple(sql).await.is_err() {
                self.close_on_drop();
                return;
            }
        }
    }

    pub(crate) fn dialect(&self) -> Dialect {
        match &self.link {
            Link::Postgres(_) => Dialect::Postgres,
            Link::MySql(_) => Dialect::MySql,
            Link::Sqlite(_) | Link::Rusqlite(_) => Dialect::Sqlite,
        }
    }

    /// Runs one statement, feeding rows to `sink`.
    pub(crate) async fn run<S: Sink>(&mut self, r: &Rendered, sink: &mut S) -> Result<Done> {
        let result = match &mut self.link {
            Link::Postgres(c) => run_on(c, r, sink).await,
            Link::MySql(c) => run_on(c, r, sink).await,
            Link::Sqlite(c) => run_on(c, r, sink).await,
            Link::Rusqlite(slot) => {
                let keep = sink.keep();
                let r = r.clone();
                let got = hop(slot, move |c| {
                    let mut rows = Vec::new();
                    let done = c.run(&r, &mut |row| {
                        if rows.len() < keep {
                            rows.push(row);
                        }
                        Ok(keep == usize::MAX || rows.len() < keep || keep == 0)
                    })?;
                    Ok((rows, done))
                })
                .await;
                match got {
                    Ok((rows, done)) => {
                        for row in rows {
                            if !sink.push(row).await? {
                                break;
                            }
                        }
                        Ok(Done {
                            affected: done.affected,
                            last_insert_id: done.last_insert_id,
                        })
                    }
                    Err(e) => Err(e),
                }
            }
        };
        self.note(result)
    }

    /// A statement without parameters or rows (BEGIN, COMMIT, SAVEPOINT, pragmas).
    pub(crate) async fn simple(&mut self, sql: &str) -> Result<()> {
        let result = match &mut self.link {
            Link::Postgres(c) => simple_on(c, sql).await,
            Link::MySql(c) => simple_on(c, sql).await,
            Link::Sqlite(c) => simple_on(c, sql).await,
            Link::Rusqlite(slot) => {
                let sql = sql.to_owned();
                hop(slot, move |c| c.simple(&sql)).await
            }
        };
        self.note(result)
    }

    /// PostgreSQL binary COPY of a payload encoded by `tandem-core`.
    pub(crate) async fn copy_in(&mut self, step: &Step) -> Result<u64> {
        let Step::Copy {
            schema,
            columns,
            rows,
        } = step
        else {
            return Err(Error::Usage("copy_in needs a COPY step".into()));
        };
        let Link::Postgres(c) = &mut self.link else {
            return Err(Error::Usage("COPY is planned for PostgreSQL only".into()));
        };
        let payload = tandem_core::copy::encode_binary(schema, columns, rows)?;
        let sql = tandem_core::copy::copy_statement(schema, columns);
        let lost = |e| error(Dialect::Postgres, e);
        let mut copy = c.copy_in_raw(&sql).await.map_err(lost)?;
        copy.send(payload).await.map_err(lost)?;
        let result = copy.finish().await.map_err(lost);
        self.note(result)
    }

    /// Runs plan steps, collecting each outcome.
    pub(crate) async fn run_steps(
        &mut self,
        steps: &std::sync::Arc<[Step]>,
    ) -> Result<Vec<Outcome>> {
        if let Link::Rusqlite(slot) = &mut self.link {
            // The whole plan in one hop to the blocking thread.
            let steps = steps.clone();
            return hop(slot, move |c| c.run_steps(&steps)).await;
        }
        let steps: &[Step] = steps;
        let mut outcomes = Vec::with_capacity(steps.len());
        for step in steps {
            outcomes.push(match step {
                Step::Sql(r) => {
                    let mut rows = Collect(Vec::new());
                    let done = self.run(r, &mut rows).await?;
                    Outcome {
                        rows: rows.0,
                        affected: done.affected,
                        last_insert_id: if tandem_core::repo::wants_last_insert_id(r) {
                            done.last_insert_id
                        } else {
                            None
                        },
                    }
                }
                copy @ Step::Copy { .. } => Outcome {
                    affected: self.copy_in(copy).await?,
                    ..Outcome::default()
                },
            });
        }
        Ok(outcomes)
    }

    /// A connection that broke is closed instead of going back to the pool.
    fn note<T>(&mut self, result: Result<T>) -> Result<T> {
        if let Err(Error::Database(DbError {
            kind: tandem_core::DbErrorKind::ConnectionLost,
            ..
        })) = &result
        {
            self.close_on_drop();
            if let Some(l) = &self.losses {
                l.note_loss();
            }
        }
        result
    }

    pub(crate) fn close_on_drop(&mut self) {
        match &mut self.link {
            Link::Postgres(c) => c.close_on_drop(),
            Link::MySql(c) => c.close_on_drop(),
            Link::Sqlite(c) => c.close_on_drop(),
            Link::Rusqlite(Some(c)) => c.close_on_drop(),
            // A cancelled call's thread has it; it ends its transaction before giving it back.
            Link::Rusqlite(None) => {}
        }
    }
}

impl Drop for Conn {
    /// A connection dropped inside a transaction (a cancelled future: during BEGIN, between statements,
    /// during COMMIT) never goes back to the pool as it is. Server connections are closed — the server
    /// rolls back, and nothing the abandoned transaction set (MySQL's `SET TRANSACTION` for the next one, a
    /// read-only mode) can leak. sqlx SQLite connections (possibly the only one of an in-memory database)
    /// are rolled back on a task that holds them, and their permit, until it is done. rusqlite connections
    /// are rolled back by their pool as they return.
    fn drop(&mut self) {
        if !self.in_transaction {
            return;
        }
        match &mut self.link {
            Link::Postgres(c) => c.close_on_drop(),
            Link::MySql(c) => c.close_on_drop(),
            Link::Sqlite(_) => {
                let link = std::mem::replace(&mut self.link, Link::Rusqlite(None));
                let abandoned = Conn::new(link, self._permit.take(), self.losses.take());
                match tokio::runtime::Handle::try_current() {
                    Ok(rt) => {
                        rt.spawn(abandoned.end_abandoned_sqlite());
                    }
                    Err(_) => {
                        let mut abandoned = abandoned;
                        abandoned.close_on_drop();
                    }
                }
            }
            Link::Rusqlite(_) => {}
        }
    }
}

/// A connection checked out of the pool by hand ([`crate::Database::checkout`]): it goes back to the pool
/// (and admits the next waiter) when dropped.
pub struct PooledConnection(pub(crate) Conn);

impl std::fmt::Debug for PooledConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("PooledConnection")
            .field(&self.0.dialect())
            .finish()
    }
}

impl PooledConnection {
    /// The engine.
    pub fn dialect(&self) -> Dialect {
        self.0.dialect()
    }

    /// Closes this connection when it is dropped instead of giving it back to the pool: for session state
    /// that must not outlive its user (an advisory lock, a changed setting).
    pub fn close_on_drop(&mut self) {
        self.0.close_on_drop();
    }

    /// Runs a statement; returns rows affected.
    pub async fn execute(&mut self, stmt: &impl tandem_sql::Render) -> Result<u64> {
        let r = stmt.render(self.dialect())?;
        Ok(self.0.run(&r, &mut Discard).await?.affected)
    }

    /// The first row, or [`Error::RowNotFound`].
    pub async fn fetch_one<T: tandem_sql::FromRow>(
        &mut self,
        stmt: &impl tandem_sql::Render,
    ) -> Result<T> {
        let r = stmt.render(self.dialect())?;
        let mut first = First(None);
        self.0.run(&r, &mut first).await?;
        let row = first.0.ok_or(Error::RowNotFound)?;
        Ok(T::from_row(row)?)
    }
}
