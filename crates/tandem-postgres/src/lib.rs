//! `tandem-postgres`: the PostgreSQL driver both tandem executors use — one wire implementation, two
//! execution models.
//!
//! tokio-postgres splits a connection into a `Client`, which sends requests, and a `Connection` future,
//! which does the socket's I/O: whoever polls the `Connection` decides the execution model. Here nobody
//! spawns it: each call of a [`PgConn`] is a future that polls the call's own future and the connection
//! side by side ([`Io::wait`]), bounded by the URL's `socket_timeout`. The blocking executor runs that
//! future on the connection's own current-thread runtime (what the `postgres` crate does inside); the
//! async executor awaits it on the caller's runtime. No task to wake, no channel hop between them: the
//! same code, driven two ways.
//!
//! # Layout
//! - this file: [`connect`] (configuration, TLS, startup parameters, socket options) and [`PgConn`] —
//!   statements prepared and cached, run, COPY, each wait bounded.
//! - `values`: [`Bind`] (a value bound as the type the server inferred) and [`decode`].
//! - `errors`: [`error`] and [`connect_error`], tokio-postgres' errors as tandem's.
//! - `sides`: the two wakers of a wait, so that a wake-up polls only the side it came for.
//! - `tls`: the rustls configuration of each `sslmode`.
#![forbid(unsafe_code)]

mod errors;
mod sides;
mod tls;
mod values;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use tandem_core::plan::Done;
use tandem_core::statements::Statements;
use tandem_core::{ConnectOptions, CopyIn, DbError, Error, Result};
use tandem_pool::WaitTimer;
use tandem_sql::row::Decoded;
use tandem_sql::{Dialect, Rendered, Value};
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, NoTls, RowStream, Statement};

pub use errors::{connect_error, error};
use sides::Sides;
pub use tls::client_config;
pub use values::{Bind, decode};

/// tokio-postgres' connection future, whatever its stream type (plain TCP or TLS).
type Driving = Pin<Box<dyn Future<Output = std::result::Result<(), tokio_postgres::Error>> + Send>>;

/// One open PostgreSQL connection: the client, its prepared statements, and the I/O the calls drive.
pub struct PgConn {
    client: Client,
    /// Prepared statements by SQL text, the least recently used let go past
    /// [`tandem_core::statements::STATEMENTS_KEPT`] (closed on the server as it is dropped).
    statements: Statements<Prepared>,
    io: Io,
}

/// A prepared statement and the names of its columns, shared by every row it returns (made once, where
/// each run used to collect them again).
#[derive(Clone)]
pub struct Prepared {
    /// The statement.
    pub statement: Statement,
    /// Its columns' names.
    pub columns: Arc<[String]>,
}

/// What a call waits on: the connection's I/O and the bound on each wait (apart from the client, which the
/// calls borrow).
pub struct Io {
    /// tokio-postgres' connection: the socket's I/O, polled beside each call's own future; dropping it
    /// closes the socket.
    connection: Option<Driving>,
    /// `socket_timeout`: the longest one wait for the server may take.
    bound: Option<Duration>,
    /// Set when a wait outlived `bound`: the connection is out of step and is never used again.
    silent: bool,
    /// The one timer of this connection's waits (see `tandem_pool::WaitTimer`).
    timer: WaitTimer,
    /// Which side of a wait — the call's future or the connection's I/O — was woken since it was last
    /// polled, so that a wake-up polls only that side (see `sides`).
    sides: Sides,
}

/// Opens a connection to the one server `opts` names (a host list is walked by the executors, which call
/// this for each server they try), with its TLS mode, startup parameters (`search_path`, time limits),
/// `application_name`, and the socket's bounds: `TCP_USER_TIMEOUT` and keepalive probes after
/// `socket_timeout` of silence, so that a partition is noticed by the kernel too. The TCP connect waits at
/// most `connect_timeout`; the handshake after it is bounded by the caller.
pub async fn connect(opts: &ConnectOptions, connect_timeout: Duration) -> Result<PgConn> {
    let mut config = tokio_postgres::Config::new();
    config
        .host(&opts.host)
        .port(opts.port)
        .user(&opts.user)
        .dbname(&opts.database)
        .connect_timeout(connect_timeout);
    if let Some(p) = &opts.password {
        config.password(p);
    }
    if let Some(name) = &opts.application_name {
        config.application_name(name);
    }
    let settings = opts.pg_startup_settings();
    if !settings.is_empty() {
        let each: Vec<String> = settings
            .iter()
            .map(|(k, v)| format!("-c {k}={v}"))
            .collect();
        config.options(each.join(" "));
    }
    if let Some(bound) = opts.socket_timeout {
        // Sent data unacknowledged this long (a partition, a host gone) closes the socket in the kernel;
        // an idle connection is probed after as long.
        config
            .tcp_user_timeout(bound)
            .keepalives(true)
            .keepalives_idle(bound);
    }
    let tls = client_config(opts)?;
    if tls.is_some() {
        config.ssl_mode(if opts.tls.requires_tls() {
            tokio_postgres::config::SslMode::Require
        } else {
            tokio_postgres::config::SslMode::Prefer
        });
    }
    let connected = match tls {
        None => config
            .connect(NoTls)
            .await
            .map(|(client, connection)| (client, Box::pin(connection) as Driving)),
        Some(tls) => {
            let make = tokio_postgres_rustls::MakeRustlsConnect::new(tls);
            config
                .connect(make)
                .await
                .map(|(client, connection)| (client, Box::pin(connection) as Driving))
        }
    };
    let (client, connection) = connected.map_err(|e| connect_error(opts, e))?;
    Ok(PgConn {
        client,
        statements: Statements::default(),
        io: Io {
            connection: Some(connection),
            bound: opts.socket_timeout,
            silent: false,
            timer: WaitTimer::default(),
            sides: Sides::new(),
        },
    })
}

impl Io {
    /// Runs one step of a call, polling the connection's I/O beside it, waiting at most `socket_timeout`
    /// for it: past it the connection is marked silent (never used again) and the error is
    /// [`tandem_core::DbErrorKind::NoAnswer`] (the executors name the server). A bound that ran out while
    /// this process was not running is given again (see [`DbError::waited_late`]).
    pub async fn wait<T>(
        &mut self,
        step: impl Future<Output = std::result::Result<T, tokio_postgres::Error>>,
    ) -> Result<T> {
        let (connection, sides) = (&mut self.connection, &self.sides);
        let mut step = std::pin::pin!(step);
        sides.start();
        let driven = std::pin::pin!(std::future::poll_fn(|cx| sides.poll(
            step.as_mut(),
            connection,
            cx
        )));
        let Some(bound) = self.bound else {
            return driven.await.map_err(error);
        };
        match self.timer.within(bound, driven).await {
            Some(result) => result.map_err(error),
            None => {
                self.silent = true;
                Err(Error::Database(DbError::no_answer(
                    Dialect::Postgres,
                    "the server",
                    bound,
                )))
            }
        }
    }
}

impl PgConn {
    /// Whether the connection can take no other call.
    pub fn is_closed(&self) -> bool {
        self.io.silent || self.io.connection.is_none() || self.client.is_closed()
    }

    /// Statements without parameters, in one round trip (BEGIN, COMMIT, SET …).
    pub async fn batch_execute(&mut self, sql: &str) -> Result<()> {
        self.io.wait(self.client.batch_execute(sql)).await
    }

    /// The prepared statement of `sql` if it is in the cache (counted as used): no wait, no future.
    pub fn cached(&mut self, sql: &str) -> Option<Prepared> {
        self.statements.get(sql).cloned()
    }

    /// The prepared statement of `sql`, from the cache or prepared now.
    pub async fn statement(&mut self, sql: &str) -> Result<Prepared> {
        if let Some(s) = self.cached(sql) {
            return Ok(s);
        }
        let statement = self.io.wait(self.client.prepare(sql)).await?;
        let prepared = Prepared {
            columns: names(&statement),
            statement,
        };
        // The statement let go, if any, is closed on the server when its last clone is dropped.
        drop(self.statements.keep(sql, prepared.clone()));
        Ok(prepared)
    }

    /// Runs a statement that returns no rows; the rows it affected.
    pub async fn execute(&mut self, statement: &Statement, params: &[Value]) -> Result<u64> {
        let client = &self.client;
        self.io
            .wait(async {
                let binds: Vec<Bind<'_>> = params.iter().map(Bind).collect();
                let refs: Vec<&(dyn ToSql + Sync)> =
                    binds.iter().map(|b| b as &(dyn ToSql + Sync)).collect();
                client.execute(statement, &refs).await
            })
            .await
    }

    /// Starts a query; its rows are read with [`PgConn::next_row`] (each a wait of its own: a consumer may
    /// take its time between rows, the server may not).
    pub async fn query(&mut self, statement: &Statement, params: &[Value]) -> Result<RowStream> {
        let client = &self.client;
        self.io
            .wait(client.query_raw(statement, params.iter().map(Bind)))
            .await
    }

    /// The next row of a query started with [`PgConn::query`], or `None` after the last.
    pub async fn next_row(
        &mut self,
        rows: Pin<&mut RowStream>,
    ) -> Result<Option<tokio_postgres::Row>> {
        let mut rows = rows;
        self.io.wait(async { rows.next().await.transpose() }).await
    }

    /// `COPY … FROM STDIN (FORMAT binary)` of a payload encoded by `tandem-core`; the rows copied.
    pub async fn copy_in(&mut self, copy: &CopyIn) -> Result<u64> {
        let payload = Bytes::from(copy.payload()?);
        let sql = copy.statement();
        let client = &self.client;
        let sink = self
            .io
            .wait(client.copy_in::<_, Bytes>(sql.as_str()))
            .await?;
        let mut sink = Box::pin(sink);
        self.io.wait(sink.send(payload)).await?;
        self.io.wait(sink.as_mut().finish()).await
    }

    /// Runs one statement, handing each row to `sink` (which returns `false` to stop reading): the row
    /// loop of a caller that awaits (the async executor; the blocking one runs its own, stepping
    /// [`PgConn::next_row`] where a row is not in yet).
    pub async fn run<S: RowSink>(&mut self, r: &Rendered, sink: &mut S) -> Result<Done> {
        // A statement prepared before is taken from the cache without a wait; preparing one and a
        // statement without rows are boxed: their futures inline would make every future of the async
        // executor above this one a few hundred bytes larger (its `futures_stay_small` test), while a
        // query's rows, the path of every read, stay unboxed (a box is an allocation per statement).
        let Prepared { statement, columns } = match self.cached(&r.sql) {
            Some(prepared) => prepared,
            None => Box::pin(self.statement(&r.sql)).await?,
        };
        if columns.is_empty() {
            let affected = Box::pin(self.execute(&statement, &r.params)).await?;
            return Ok(Done {
                affected,
                last_insert_id: None,
                key_step: None,
            });
        }
        let rows = self.query(&statement, &r.params).await?;
        let mut rows = std::pin::pin!(rows);
        while let Some(row) = self.next_row(rows.as_mut()).await? {
            if !sink.push(&mut cells(&columns, &row)).await? {
                return Ok(Done::default());
            }
        }
        Ok(Done {
            affected: rows.rows_affected().unwrap_or_default(),
            last_insert_id: None,
            key_step: None,
        })
    }
}

/// Receives a statement's rows, for [`PgConn::run`]: `push` returns `false` to stop reading, and may wait
/// (a stream's consumer: the backpressure).
pub trait RowSink: Send {
    /// Takes one row, as received.
    fn push(&mut self, row: &mut PgCells<'_>) -> impl Future<Output = Result<bool>> + Send;
}

/// The column names of a statement's rows, shared by every row.
pub fn names(statement: &Statement) -> Arc<[String]> {
    (statement.columns().iter())
        .map(|c| c.name().to_owned())
        .collect::<Vec<_>>()
        .into()
}

/// A received row, decoded one cell at a time as its reader asks ([`decode`]; see [`tandem_sql::Cells`]).
pub type PgCells<'r> = Decoded<'r, tokio_postgres::Row, Error>;

/// Row `row` of a statement whose column names are `columns`, as [`PgCells`].
pub fn cells<'r>(columns: &'r Arc<[String]>, row: &'r tokio_postgres::Row) -> PgCells<'r> {
    Decoded::new(columns, row, row.len(), decode)
}
