//! One pooled sqlx connection of any engine, and the generic statement loop every operation goes through.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures_util::TryStreamExt;
use sqlx::pool::PoolConnection;
use sqlx::{AssertSqlSafe, Column, Either, Row as _};
use tandem_core::observe::Observer;
use tandem_core::plan::{Done, Outcome, Step};
use tandem_core::{DbError, Error, Result};
use tandem_pool::{InUse, Permit};
use tandem_sql::{Cells, Dialect, Rendered, Row};

use crate::driver::{Backend, cells, error};
#[cfg(feature = "mysql")]
use crate::mysql::PooledMy;
#[cfg(feature = "postgres")]
use crate::postgres::PooledPg;
pub use crate::sink::Sink;
#[cfg(feature = "sqlite")]
use crate::sqlite::PooledWorker;

tokio::task_local! {
    /// The attempt a transaction begun in this task belongs to, set by the retry loops.
    static ATTEMPT: u32;
}

/// The attempt number of a transaction begun now (1 outside a retry loop).
pub(crate) fn attempt() -> u32 {
    ATTEMPT.try_with(|a| *a).unwrap_or(1)
}

/// Runs `f` as attempt `n` of a retried transaction (see [`attempt`]).
pub(crate) async fn as_attempt<F: std::future::Future>(n: u32, f: F) -> F::Output {
    ATTEMPT.scope(n, f).await
}

/// Counts the rows handed to the sink it wraps (a statement's `rows`, see `tandem_core::observe`).
struct Counting<'a, S> {
    sink: &'a mut S,
    rows: u64,
}

impl<S: Sink> Sink for Counting<'_, S> {
    async fn push<C: Cells + Send + ?Sized>(&mut self, row: &mut C) -> Result<bool>
    where
        Error: From<C::Error>,
    {
        self.rows += 1;
        self.sink.push(row).await
    }
    fn keep(&self) -> usize {
        self.sink.keep()
    }
}

/// Collects every row (a plan's step, whose outcome holds its rows).
pub(crate) struct Collect(pub Vec<Row>);
impl Sink for Collect {
    async fn push<C: Cells + Send + ?Sized>(&mut self, row: &mut C) -> Result<bool>
    where
        Error: From<C::Error>,
    {
        self.0.push(row.row()?);
        Ok(true)
    }
}

/// A connection checked out of one of the pools, with its admission permit. Fields drop in order: the
/// connection is handed back to its pool before the permit admits the next waiter.
pub(crate) struct Conn {
    pub(crate) link: Link,
    /// Set before a transaction's first statement is sent and cleared once it has ended: a `Conn` dropped
    /// with it set (its future was cancelled somewhere in between) must not go back to the pool as it is.
    pub(crate) in_transaction: bool,
    /// Set while a statement (or a COPY) is on its way and cleared when its answer is in: a server
    /// connection dropped with it set (its future was cancelled mid-statement) is out of step with its
    /// server — a COPY half sent, replies still to come — and is closed instead of pooled.
    mid_statement: bool,
    /// Whether a statement failed retriably, or the connection was found lost (then it is closed).
    pub(crate) health: tandem_pool::ConnHealth,
    /// A native server connection to close when dropped, not to pool (see [`Conn::close_on_drop`]).
    closing: bool,
    /// `socket_timeout` (servers): the longest one wait for the server may take.
    bound: Option<Duration>,
    /// The server the pool connects to (servers): a call it left unanswered names it and marks it silent.
    server: Option<Server>,
    /// Where its statements report (spans, metrics; see `tandem_core::observe`).
    pub(crate) observer: Observer,
    _permit: Option<Permit>,
    /// Counts it in use in the pool's metrics until it is back (dropped last).
    _in_use: Option<InUse>,
}

/// The server a pool connects to now: the one chosen from the URL's list, changed after a failover.
pub(crate) type Server = Arc<std::sync::Mutex<Option<tandem_core::hosts::Remote>>>;

/// The driver connection itself.
pub(crate) enum Link {
    /// A tokio-postgres connection of tandem's own pool (the default driver).
    #[cfg(feature = "postgres")]
    Pg(PooledPg),
    /// sqlx's PostgreSQL connection (`?driver=sqlx`).
    #[cfg(feature = "postgres")]
    Postgres(PoolConnection<sqlx::Postgres>),
    /// A mysql_async connection of tandem's own pool (the default driver).
    #[cfg(feature = "mysql")]
    My(PooledMy),
    /// sqlx's MySQL connection (`?driver=sqlx`).
    #[cfg(feature = "mysql")]
    MySql(PoolConnection<sqlx::MySql>),
    #[cfg(feature = "sqlite")]
    Sqlite(PoolConnection<sqlx::Sqlite>),
    #[cfg(feature = "sqlite")]
    /// A rusqlite connection on its worker thread.
    Rusqlite(PooledWorker),
    /// Left behind by a connection handed to a cleanup task, or closed.
    Abandoned,
}

impl Link {
    /// Whether it is a server connection of tandem's own pool (tokio-postgres, mysql_async).
    fn is_native_server(&self) -> bool {
        match self {
            #[cfg(feature = "postgres")]
            Link::Pg(_) => true,
            #[cfg(feature = "mysql")]
            Link::My(_) => true,
            _ => false,
        }
    }

    /// The server a native connection is on (a sqlx connection's is the pool's, see `Conn::server`).
    fn remote(&self) -> Option<&tandem_core::hosts::Remote> {
        match self {
            #[cfg(feature = "postgres")]
            Link::Pg(c) => c.remote.as_ref(),
            #[cfg(feature = "mysql")]
            Link::My(c) => c.remote.as_ref(),
            _ => None,
        }
    }
}

fn abandoned() -> Error {
    Error::Internal("a connection handed to its cleanup task was used".into())
}

/// Waits at most `bound` for one answer of the server: past it the error is
/// [`tandem_core::DbErrorKind::NoAnswer`], which closes the connection (see [`Conn::note`]).
async fn answer<T>(
    bound: Option<Duration>,
    dialect: Dialect,
    step: impl Future<Output = std::result::Result<T, sqlx::Error>>,
) -> Result<T> {
    let answered = match bound {
        None => Some(step.await),
        Some(bound) => tandem_pool::WaitTimer::once(bound, step).await,
    };
    match answered {
        Some(result) => result.map_err(|e| error(dialect, e)),
        None => Err(Error::Database(DbError::no_answer(
            dialect,
            "the server",
            bound.unwrap_or_default(),
        ))),
    }
}

async fn run_on<B: Backend, S: Sink>(
    conn: &mut PoolConnection<B>,
    r: &Rendered,
    sink: &mut S,
    bound: Option<Duration>,
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
    // Each row is one wait: a consumer may take its time between rows, the server may not.
    while let Some(item) = answer(bound, B::DIALECT, stream.try_next()).await? {
        match item {
            Either::Left(result) => {
                done.affected += B::affected(&result);
                if let Some(id) = B::last_insert_id(&result) {
                    done.last_insert_id = Some(id);
                }
            }
            Either::Right(row) => {
                let columns = names.get_or_insert_with(|| {
                    row.columns()
                        .iter()
                        .map(|c| c.name().to_owned())
                        .collect::<Vec<_>>()
                        .into()
                });
                if !sink.push(&mut cells::<B>(columns, &row)).await? {
                    return Ok(Done::default());
                }
            }
        }
    }
    drop(stream);
    done.key_step = key_step::<B>(conn, r, &done, bound).await?;
    Ok(done)
}

/// The distance between the keys a multi-row MySQL INSERT generated, read on the connection that ran it
/// (`auto_increment_increment`: a Galera node sets it to the cluster's size). Only when the keys are
/// wanted and there are several: one round trip that most calls never make. (The blocking driver does
/// the same.)
async fn key_step<B: Backend>(
    conn: &mut PoolConnection<B>,
    r: &Rendered,
    done: &Done,
    bound: Option<Duration>,
) -> Result<Option<i64>>
where
    for<'c> &'c mut B::Connection: sqlx::Executor<'c, Database = B>,
    B::Arguments: sqlx::IntoArguments<B>,
{
    if B::DIALECT != Dialect::MySql
        || done.affected < 2
        || done.last_insert_id.is_none()
        || !tandem_core::repo::wants_last_insert_id(r)
    {
        return Ok(None);
    }
    let step = sqlx::query::<B>("SELECT @@SESSION.auto_increment_increment").fetch_one(&mut **conn);
    let row = answer(bound, B::DIALECT, step).await?;
    Ok(B::decode(&row, 0)?.as_i64())
}

/// A row sink for a rusqlite statement that keeps the first `keep` rows (all of them for `usize::MAX`), to
/// be handed to an async sink afterwards.
#[cfg(feature = "sqlite")]
fn kept(
    keep: usize,
    rows: &mut Vec<Row>,
) -> impl FnMut(&mut tandem_core::plan::RowCells<'_>) -> Result<bool> + '_ {
    move |cells| {
        if rows.len() < keep {
            rows.push(cells.row()?);
        }
        Ok(keep == usize::MAX || rows.len() < keep || keep == 0)
    }
}

/// Hands rows kept by [`kept`] to `sink`, until it says stop.
#[cfg(feature = "sqlite")]
async fn hand_over<S: Sink>(rows: Vec<Row>, sink: &mut S) -> Result<()> {
    for mut row in rows {
        if !sink.push(&mut row).await? {
            break;
        }
    }
    Ok(())
}

async fn simple_on<B: Backend>(
    conn: &mut PoolConnection<B>,
    sql: &str,
    bound: Option<Duration>,
) -> Result<()>
where
    for<'c> &'c mut B::Connection: sqlx::Executor<'c, Database = B>,
{
    let step = sqlx::raw_sql(AssertSqlSafe(sql.to_owned())).execute(&mut **conn);
    answer(bound, B::DIALECT, step).await.map(|_| ())
}

/// A statement's sink as `tandem-postgres` takes it.
#[cfg(feature = "postgres")]
struct SinkOf<'a, S>(&'a mut S);

#[cfg(feature = "postgres")]
impl<S: Sink> tandem_postgres::RowSink for SinkOf<'_, S> {
    async fn push(&mut self, row: &mut tandem_postgres::PgCells<'_>) -> Result<bool> {
        self.0.push(row).await
    }
}

impl Conn {
    /// A checked-out connection; `bound` is the URL's `socket_timeout` and `server` the pool's server
    /// (servers; `None` for SQLite).
    pub(crate) fn new(
        link: Link,
        permit: Option<Permit>,
        losses: Option<Arc<tandem_pool::LossClock>>,
        bound: Option<Duration>,
        server: Option<Server>,
        observer: Observer,
        in_use: Option<InUse>,
    ) -> Conn {
        Conn {
            link,
            in_transaction: false,
            mid_statement: false,
            health: tandem_pool::ConnHealth::new(losses),
            closing: false,
            bound,
            server,
            observer,
            _permit: permit,
            _in_use: in_use,
        }
    }

    /// Counts the connection in use in its pool's metrics until it is dropped.
    pub(crate) fn counted(&mut self, in_use: InUse) {
        self._in_use = Some(in_use);
    }

    /// Ends a sqlx SQLite connection's abandoned transaction (see [`Drop for Conn`]); closes the connection
    /// if that fails. The statements after the ROLLBACK prove the connection is outside a transaction.
    #[cfg(feature = "sqlite")]
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
            #[cfg(feature = "postgres")]
            Link::Postgres(_) | Link::Pg(_) => Dialect::Postgres,
            #[cfg(feature = "mysql")]
            Link::MySql(_) | Link::My(_) => Dialect::MySql,
            #[cfg(feature = "sqlite")]
            Link::Sqlite(_) | Link::Rusqlite(_) => Dialect::Sqlite,
            // Never run on: its own dialect does not matter.
            Link::Abandoned => Dialect::Sqlite,
        }
    }

    /// Runs one statement, feeding rows to `sink`, under its span (see `tandem_core::observe`).
    pub(crate) async fn run<S: Sink>(&mut self, r: &Rendered, sink: &mut S) -> Result<Done> {
        let s = self.observer.statement(&r.sql);
        let mut counting = Counting { sink, rows: 0 };
        let result = in_span!(s.span(), self.run_unobserved(r, &mut counting));
        let rows = match &result {
            Ok(done) if counting.rows == 0 => done.affected,
            _ => counting.rows,
        };
        s.finish(&self.observer, &result, rows);
        result
    }

    async fn run_unobserved<S: Sink>(&mut self, r: &Rendered, sink: &mut S) -> Result<Done> {
        self.mid_statement = true;
        let result = match &mut self.link {
            #[cfg(feature = "postgres")]
            // Unboxed, as mysql_async's: `PgConn::run` boxes only its rare or row-less steps (a prepare, a
            // statement without rows), which keeps every executor future within `futures_stay_small`'s
            // 8 KiB and a read without an allocation for its future.
            Link::Pg(c) => c.pg.run(r, &mut SinkOf(sink)).await,
            #[cfg(feature = "postgres")]
            Link::Postgres(c) => run_on(c, r, sink, self.bound).await,
            #[cfg(feature = "mysql")]
            Link::My(c) => c.run(r, sink).await,
            #[cfg(feature = "mysql")]
            Link::MySql(c) => run_on(c, r, sink, self.bound).await,
            #[cfg(feature = "sqlite")]
            Link::Sqlite(c) => run_on(c, r, sink, self.bound).await,
            #[cfg(feature = "sqlite")]
            Link::Rusqlite(worker) => {
                let keep = sink.keep();
                let r = r.clone();
                let got = worker
                    .call(move |c| {
                        let mut rows = Vec::new();
                        let done = tandem_core::Runner::run(c, &r, &mut kept(keep, &mut rows))?;
                        Ok((rows, done))
                    })
                    .await;
                match got {
                    Ok((rows, done)) => hand_over(rows, sink).await.map(|()| done),
                    Err(e) => Err(e),
                }
            }
            Link::Abandoned => Err(abandoned()),
        };
        self.note(result)
    }

    /// A repository's key lookup: one statement that reads at most one row through the key's index. On a
    /// rusqlite connection it runs right here, on the runtime's thread, when it can do so without waiting
    /// for a lock (see `Worker::run_here`): a few microseconds, less than the two thread wake-ups a trip to
    /// the worker costs. Everywhere else, and when it cannot, it runs like any statement.
    pub(crate) async fn run_key_read<S: Sink>(
        &mut self,
        r: &Rendered,
        sink: &mut S,
    ) -> Result<Done> {
        #[cfg(feature = "sqlite")]
        if let Link::Rusqlite(worker) = &self.link {
            let started = std::time::Instant::now();
            let mut rows = Vec::new();
            let here = worker.run_here(r, &mut kept(sink.keep(), &mut rows));
            if let Some(done) = here {
                let s = self.observer.statement_since(&r.sql, started);
                let read = rows.len() as u64;
                let result = match done {
                    Ok(done) => hand_over(rows, sink).await.map(|()| done),
                    Err(e) => Err(e),
                };
                let n = match &result {
                    Ok(done) if read == 0 => done.affected,
                    _ => read,
                };
                s.finish(&self.observer, &result, n);
                return self.note(result);
            }
        }
        self.run(r, sink).await
    }

    /// A statement without parameters or rows (BEGIN, COMMIT, SAVEPOINT, pragmas), under its span.
    pub(crate) async fn simple(&mut self, sql: &str) -> Result<()> {
        let s = self.observer.statement(sql);
        let result = in_span!(s.span(), self.simple_unobserved(sql));
        s.finish(&self.observer, &result, 0);
        result
    }

    async fn simple_unobserved(&mut self, sql: &str) -> Result<()> {
        self.mid_statement = true;
        let result = match &mut self.link {
            #[cfg(feature = "postgres")]
            Link::Pg(c) => Box::pin(c.pg.batch_execute(sql)).await,
            #[cfg(feature = "postgres")]
            Link::Postgres(c) => simple_on(c, sql, self.bound).await,
            #[cfg(feature = "mysql")]
            Link::My(c) => Box::pin(c.simple(sql)).await,
            #[cfg(feature = "mysql")]
            Link::MySql(c) => simple_on(c, sql, self.bound).await,
            #[cfg(feature = "sqlite")]
            Link::Sqlite(c) => simple_on(c, sql, self.bound).await,
            #[cfg(feature = "sqlite")]
            Link::Rusqlite(worker) => {
                let sql = sql.to_owned();
                worker.call(move |c| c.simple(&sql)).await
            }
            Link::Abandoned => Err(abandoned()),
        };
        self.note(result)
    }

    /// PostgreSQL binary COPY: planned for PostgreSQL only, which this build leaves out.
    #[cfg(not(feature = "postgres"))]
    pub(crate) async fn copy_in(&mut self, _: &tandem_core::CopyIn) -> Result<u64> {
        Err(Error::Internal(
            "COPY is planned for PostgreSQL only".into(),
        ))
    }

    /// PostgreSQL binary COPY of a payload encoded by `tandem-core`.
    #[cfg(feature = "postgres")]
    pub(crate) async fn copy_in(&mut self, copy: &tandem_core::CopyIn) -> Result<u64> {
        if let Link::Pg(c) = &mut self.link {
            // Cut short anywhere from here (a failure too), the connection is not reused.
            self.mid_statement = true;
            let sql = copy.statement();
            let s = self.observer.statement(&sql);
            let result = in_span!(s.span(), Box::pin(c.pg.copy_in(copy)));
            s.finish(&self.observer, &result, *result.as_ref().unwrap_or(&0));
            return self.note(result);
        }
        let Link::Postgres(c) = &mut self.link else {
            return Err(Error::Internal(
                "COPY is planned for PostgreSQL only".into(),
            ));
        };
        let (payload, sql) = (copy.payload()?, copy.statement());
        // Cut short anywhere from here (a failure too), the connection is not reused: see `mid_statement`.
        self.mid_statement = true;
        let (bound, pg) = (self.bound, Dialect::Postgres);
        let s = self.observer.statement(&sql);
        let result = in_span!(s.span(), async {
            let mut copy = answer(bound, pg, c.copy_in_raw(&sql)).await?;
            answer(bound, pg, copy.send(payload)).await?;
            answer(bound, pg, copy.finish()).await
        });
        s.finish(&self.observer, &result, *result.as_ref().unwrap_or(&0));
        self.note(result)
    }

    /// Runs plan steps, collecting each outcome.
    pub(crate) async fn run_steps(
        &mut self,
        steps: &std::sync::Arc<[Step]>,
    ) -> Result<Vec<Outcome>> {
        #[cfg(feature = "sqlite")]
        if let Link::Rusqlite(worker) = &mut self.link {
            // The whole plan in one call on the worker thread, its statements reporting from there.
            let (steps, observer) = (steps.clone(), self.observer.clone());
            let parent = tracing::Span::current();
            return worker
                .call(move |c| {
                    let mut c = tandem_core::observe::Observed {
                        runner: c,
                        observer: &observer,
                    };
                    parent.in_scope(|| tandem_core::plan::run_steps(&mut c, &steps))
                })
                .await;
        }
        let steps: &[Step] = steps;
        let mut outcomes = Vec::with_capacity(steps.len());
        for step in steps {
            outcomes.push(match step {
                Step::Sql(r) | Step::Guard { statement: r, .. } => {
                    let mut rows = Collect(Vec::new());
                    let done = self.run(r, &mut rows).await?;
                    step.judge(Outcome::of(r, rows.0, done))?
                }
                Step::Copy(copy) => Outcome {
                    affected: self.copy_in(copy).await?,
                    ..Outcome::default()
                },
            });
        }
        Ok(outcomes)
    }

    /// Runs plan steps in one transaction with `opts`: BEGIN, the steps, then COMMIT — or ROLLBACK when a
    /// step failed — by the rule of [`tandem_core::Closing`]. The caller holds the writer gate's turn. On a
    /// rusqlite connection the whole transaction is one call on its worker thread: one wake-up each way
    /// instead of one per statement. A connection whose transaction did not surely end is not pooled as
    /// it is (see `in_transaction`).
    pub(crate) async fn run_steps_atomically(
        &mut self,
        steps: &Arc<[Step]>,
        opts: &tandem_core::TxOptions,
    ) -> Result<Vec<Outcome>> {
        use tandem_core::tx;
        let dialect = self.dialect();
        self.in_transaction = true;
        let mut span = tandem_core::observe::TxSpan::begin(&self.observer, opts, attempt());
        #[cfg(feature = "sqlite")]
        if let Link::Rusqlite(worker) = &mut self.link {
            let (steps, opts, observer) = (steps.clone(), opts.clone(), self.observer.clone());
            let parent = tracing::Span::current();
            let call = worker.call(move |c| {
                let mut c = tandem_core::observe::Observed {
                    runner: c,
                    observer: &observer,
                };
                Ok(parent.in_scope(|| {
                    tx::run_atomically(&mut c, dialect, &opts, &mut span, |c| {
                        tandem_core::plan::run_steps(c, &steps)
                    })
                }))
            });
            let (result, over) = call.await?;
            if over {
                self.in_transaction = false;
            }
            return self.note(result);
        }
        let current = span.span().clone();
        let work = async {
            for sql in tx::begin(dialect, opts) {
                if let Err(e) = self.simple(&sql).await {
                    span.failed();
                    return Err(e);
                }
            }
            let outcomes = self.run_steps(steps).await;
            // COMMIT, or ROLLBACK after failed steps, by the rule of `tx::Closing`; a failed COMMIT is
            // rolled back (on the servers the transaction is over already: ROLLBACK answers with a warning
            // at most).
            let committing = outcomes.is_ok();
            let mut closing = tx::Closing::new(dialect, opts, committing);
            while let Some(sql) = closing.next(|| None) {
                let result = self.simple(&sql).await;
                closing.record(result);
            }
            let (ended, over) = closing.finish(|| None);
            span.end(committing, &ended);
            Ok((outcomes, ended, over))
        };
        let (outcomes, ended, over) = in_span!(current, work)?;
        if over {
            self.in_transaction = false;
        }
        outcomes.and_then(|outcomes| ended.map(|()| outcomes))
    }

    /// A connection that broke is closed instead of going back to the pool; a server that gave no answer
    /// is named in the error and tried last by host walks for a while; a retriable failure is
    /// remembered (see [`tandem_pool::ConnHealth::note`]). A lost connection also makes the pool check the
    /// others (and, for a URL naming several servers, choose the server again).
    fn note<T>(&mut self, result: Result<T>) -> Result<T> {
        self.mid_statement = false;
        // A native connection knows its own server.
        let result = match self.link.remote() {
            Some(remote) => remote.name_silence(result),
            None => result,
        };
        let result = match (&self.server, &result) {
            (Some(server), Err(e)) if e.kind() == Some(tandem_core::DbErrorKind::NoAnswer) => {
                let remote = server.lock().unwrap_or_else(|p| p.into_inner()).clone();
                match remote {
                    Some(remote) => remote.name_silence(result),
                    None => result,
                }
            }
            _ => result,
        };
        if self.health.note(&result) {
            self.close_on_drop();
        }
        result
    }

    /// Closes a server connection when it is dropped (PostgreSQL, MariaDB: the server ends whatever it
    /// was left in); says whether it was one. SQLite connections are left to their caller.
    fn close_server_on_drop(&mut self) -> bool {
        match &mut self.link {
            #[cfg(feature = "postgres")]
            Link::Pg(_) => {
                self.closing = true;
                true
            }
            #[cfg(feature = "mysql")]
            Link::My(_) => {
                self.closing = true;
                true
            }
            #[cfg(feature = "postgres")]
            Link::Postgres(c) => {
                c.close_on_drop();
                true
            }
            #[cfg(feature = "mysql")]
            Link::MySql(c) => {
                c.close_on_drop();
                true
            }
            #[allow(unreachable_patterns)]
            _ => false,
        }
    }

    pub(crate) fn close_on_drop(&mut self) {
        match &mut self.link {
            #[cfg(feature = "postgres")]
            Link::Pg(_) => self.closing = true,
            #[cfg(feature = "mysql")]
            Link::My(_) => self.closing = true,
            #[cfg(feature = "postgres")]
            Link::Postgres(c) => c.close_on_drop(),
            #[cfg(feature = "mysql")]
            Link::MySql(c) => c.close_on_drop(),
            #[cfg(feature = "sqlite")]
            Link::Sqlite(c) => c.close_on_drop(),
            #[cfg(feature = "sqlite")]
            Link::Rusqlite(w) => w.close_on_drop(),
            Link::Abandoned => {}
        }
    }
}

impl Drop for Conn {
    /// A connection dropped inside a transaction (a cancelled future: during BEGIN, between statements,
    /// during COMMIT) never goes back to the pool as it is. Server connections are closed — the server
    /// rolls back, and nothing the abandoned transaction set (MySQL's `SET TRANSACTION` for the next one, a
    /// read-only mode) can leak. sqlx SQLite connections (possibly the only one of an in-memory database)
    /// are rolled back on a task that holds them, and their permit, until it is done. rusqlite connections
    /// get the rollback queued on their worker thread, where it runs before any later caller's call.
    fn drop(&mut self) {
        // A native server connection dropped inside a transaction or mid-statement, or told to close, is
        // taken out of its pool and closed now: the server ends what it was left in (rolls back, drops its
        // session locks) at once, not at the pool's next checkout.
        if self.link.is_native_server() {
            if self.closing || self.in_transaction || self.mid_statement {
                match std::mem::replace(&mut self.link, Link::Abandoned) {
                    #[cfg(feature = "postgres")]
                    Link::Pg(c) => c.discard(),
                    #[cfg(feature = "mysql")]
                    Link::My(c) => c.discard(),
                    _ => {}
                }
            }
            return;
        }
        if !self.in_transaction {
            // A cancelled statement outside a transaction: the servers' connections are out of step.
            // (SQLite's drivers finish or stop the statement on their own thread and stay usable.)
            if self.mid_statement {
                self.close_server_on_drop();
            }
            return;
        }
        if self.close_server_on_drop() {
            return;
        }
        match &mut self.link {
            #[cfg(feature = "sqlite")]
            Link::Sqlite(_) => {
                let link = std::mem::replace(&mut self.link, Link::Abandoned);
                let abandoned = Conn::new(
                    link,
                    self._permit.take(),
                    self.health.take_losses(),
                    self.bound,
                    self.server.take(),
                    self.observer.clone(),
                    self._in_use.take(),
                );
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
            #[cfg(feature = "sqlite")]
            Link::Rusqlite(w) => w.end_abandoned_transaction(),
            // Servers' connections were closed above.
            #[allow(unreachable_patterns)]
            _ => {}
        }
    }
}
