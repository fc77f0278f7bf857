//! PostgreSQL on tokio-postgres, driven synchronously: each connection owns a one-thread tokio runtime
//! (what the `postgres` crate is) and blocks on it for each call, and every wait for the server is bounded
//! by `socket_timeout` — the `postgres` crate has no such bound, so a frozen server held its caller
//! forever. Prepared statements are cached per connection, rows read from the socket as they are consumed,
//! parameters converted to the exact width the server asks for, and bulk loads sent by binary COPY.

use std::collections::HashMap;
use std::error::Error as StdError;
use std::future::Future;
use std::pin::Pin;
use std::task::Poll;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures_util::{FutureExt, SinkExt, StreamExt};
use tandem_core::CopyIn;
use tandem_core::{ConnectOptions, DbError, DbErrorKind, Error, Result};
use tandem_sql::{Dialect, Rendered, Row, SqlType, Value};
use tokio_postgres::types::{IsNull, ToSql, Type, to_sql_checked};
use tokio_postgres::{Client, NoTls, Statement};

use super::{Done, Sink, names};

/// Prepared statements kept per connection; the batch path reuses one shape per chunk size.
const STATEMENT_CACHE: usize = 64;

pub(crate) struct PgConn {
    client: Client,
    statements: HashMap<String, Statement>,
    io: Io,
}

/// What a call blocks on: the runtime and the bound on each wait (apart from the client, which the
/// waits borrow).
/// tokio-postgres' connection future, whatever its stream type (plain TCP or TLS).
type Driving = Pin<Box<dyn Future<Output = std::result::Result<(), tokio_postgres::Error>> + Send>>;

struct Io {
    /// The reactor and timers the waits run on (one thread: the caller's).
    runtime: OwnRuntime,
    /// tokio-postgres' connection: the socket's I/O, polled beside each call's own future (as the
    /// `postgres` crate does: no task to wake, no scheduler in between); dropping it closes the socket.
    connection: Option<Driving>,
    /// `socket_timeout`: the longest one wait for the server may take.
    bound: Option<Duration>,
    /// Set when a wait outlived `bound`: the connection is out of step and is never used again.
    silent: bool,
}

pub(crate) fn open(opts: &ConnectOptions, timeout: Duration) -> Result<PgConn> {
    let mut config = tokio_postgres::Config::new();
    config
        .host(&opts.host)
        .port(opts.port)
        .user(&opts.user)
        .dbname(&opts.database);
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
    config.connect_timeout(timeout);
    if let Some(bound) = opts.socket_timeout {
        // Sent data unacknowledged this long (a partition, a host gone) closes the socket in the kernel.
        config.tcp_user_timeout(bound);
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| {
            Error::Internal(format!(
                "cannot start a PostgreSQL connection's runtime: {e}"
            ))
        })?;
    let tls = super::tls::client_config(opts)?;
    if tls.is_some() {
        config.ssl_mode(if opts.tls.requires_tls() {
            tokio_postgres::config::SslMode::Require
        } else {
            tokio_postgres::config::SslMode::Prefer
        });
    }
    // The handshake is bounded by the caller (`driver::bounded`).
    let connected = runtime.block_on(async {
        Ok::<_, tokio_postgres::Error>(match tls {
            None => {
                let (client, connection) = config.connect(NoTls).await?;
                (client, Box::pin(connection) as Driving)
            }
            Some(tls) => {
                let make = tokio_postgres_rustls::MakeRustlsConnect::new(tls);
                let (client, connection) = config.connect(make).await?;
                (client, Box::pin(connection) as Driving)
            }
        })
    });
    let (client, connection) = connected.map_err(|e| connect_error(opts, e))?;
    Ok(PgConn {
        client,
        statements: HashMap::new(),
        io: Io {
            runtime: OwnRuntime(Some(runtime)),
            connection: Some(connection),
            bound: opts.socket_timeout,
            silent: false,
        },
    })
}

impl Io {
    /// Runs one step of a call on the connection's runtime, waiting at most `socket_timeout` for it: past
    /// it the connection is marked silent (never used again) and the error is [`DbErrorKind::NoAnswer`]
    /// (see `Conn::note` for what follows).
    fn wait<T: Send>(
        &mut self,
        step: impl Future<Output = std::result::Result<T, tokio_postgres::Error>> + Send,
    ) -> Result<T> {
        let connection = &mut self.connection;
        let mut step = std::pin::pin!(step);
        // The call's future first (it queues its request), then the connection's I/O (it sends the
        // request and hands the answer over, which wakes the call). A connection that ended (the server
        // closed it, or it failed) is not polled again: the call then fails as closed.
        let driven = std::future::poll_fn(|cx| {
            if let Poll::Ready(done) = step.as_mut().poll(cx) {
                return Poll::Ready(done);
            }
            if let Some(c) = connection
                && c.as_mut().poll(cx).is_ready()
            {
                *connection = None;
                return step.as_mut().poll(cx);
            }
            Poll::Pending
        });
        let bound = self.bound;
        let answered = self.runtime.block_on(async move {
            let Some(bound) = bound else {
                return Ok(driven.await);
            };
            let mut driven = std::pin::pin!(driven);
            loop {
                let started = std::time::Instant::now();
                match tokio::time::timeout(bound, driven.as_mut()).await {
                    Err(_) if DbError::waited_late(started.elapsed(), bound) => continue,
                    answered => return answered,
                }
            }
        })?;
        match answered {
            Ok(result) => result.map_err(error),
            Err(_) => {
                self.silent = true;
                Err(Error::Database(DbError::no_answer(
                    Dialect::Postgres,
                    "the server",
                    self.bound.unwrap_or_default(),
                )))
            }
        }
    }
}

/// A connection's own runtime. Blocking on it from a thread that runs async code (a blocking call made
/// straight from an async task, which `run_blocking` exists to avoid, or a connection dropped there)
/// would panic in tokio ("Cannot start a runtime from within a runtime"); such a call is made on a
/// thread of its own instead, so that it blocks its caller exactly as a MySQL or SQLite call does — the
/// same behaviour on every engine, at the cost of a thread per call on that path only.
struct OwnRuntime(Option<tokio::runtime::Runtime>);

impl OwnRuntime {
    fn block_on<F: Future + Send>(&self, future: F) -> Result<F::Output>
    where
        F::Output: Send,
    {
        let Some(runtime) = &self.0 else {
            unreachable!("the runtime is taken only when the connection is dropped")
        };
        if tokio::runtime::Handle::try_current().is_err() {
            return Ok(runtime.block_on(future));
        }
        std::thread::scope(|scope| {
            let call = std::thread::Builder::new()
                .name("tandem-pg-call".into())
                .spawn_scoped(scope, || runtime.block_on(future))
                .map_err(|source| Error::Thread {
                    what: "a PostgreSQL call made from async code",
                    source,
                })?;
            Ok(call
                .join()
                .unwrap_or_else(|payload| std::panic::resume_unwind(payload)))
        })
    }
}

impl Drop for OwnRuntime {
    fn drop(&mut self) {
        // Dropping a runtime inside async code panics too; shutting it down in the background does not.
        if let Some(runtime) = self.0.take() {
            runtime.shutdown_background();
        }
    }
}

impl PgConn {
    /// Whether the connection can take no other call.
    pub(crate) fn is_closed(&self) -> bool {
        self.io.silent || self.io.connection.is_none() || self.client.is_closed()
    }

    /// Statements without parameters, in one round trip (BEGIN, COMMIT, SET …).
    pub(crate) fn batch_execute(&mut self, sql: &str) -> Result<()> {
        self.io.wait(self.client.batch_execute(sql))
    }
}

/// A tandem value bound as whatever integer, float or text type the server inferred for its placeholder, with
/// range checks: PostgreSQL will not take an `i64` for an `INT4` on its own.
#[derive(Debug)]
struct Bind<'a>(&'a Value);

type BoxError = Box<dyn StdError + Sync + Send>;

fn narrow<T: TryFrom<i64>>(v: i64, ty: &Type) -> Result<T, BoxError> {
    T::try_from(v).map_err(|_| format!("{v} does not fit in {ty}").into())
}

impl ToSql for Bind<'_> {
    fn to_sql(&self, ty: &Type, out: &mut BytesMut) -> Result<IsNull, BoxError> {
        let v = self.0;
        if v.is_null() {
            return Ok(IsNull::Yes);
        }
        if let Some(i) = v.as_i64().filter(|_| !matches!(v, Value::Bool(_))) {
            return match *ty {
                Type::INT2 => narrow::<i16>(i, ty)?.to_sql(ty, out),
                Type::INT4 => narrow::<i32>(i, ty)?.to_sql(ty, out),
                Type::INT8 => i.to_sql(ty, out),
                Type::FLOAT4 => (i as f32).to_sql(ty, out),
                Type::FLOAT8 => (i as f64).to_sql(ty, out),
                Type::TEXT | Type::VARCHAR => i.to_string().to_sql(ty, out),
                _ => Err(format!("cannot bind an integer as {ty}").into()),
            };
        }
        match v {
            Value::Bool(b) => b.to_sql(ty, out),
            Value::F32(f) if *ty == Type::FLOAT8 => f64::from(*f).to_sql(ty, out),
            Value::F32(f) => f.to_sql(ty, out),
            Value::F64(f) if *ty == Type::FLOAT4 => (*f as f32).to_sql(ty, out),
            Value::F64(f) => f.to_sql(ty, out),
            Value::Text(s) => s.as_str().to_sql(ty, out),
            Value::Bytes(b) => b.as_slice().to_sql(ty, out),
            #[cfg(feature = "chrono")]
            Value::Date(d) => d.to_sql(ty, out),
            #[cfg(feature = "chrono")]
            Value::Time(t) => t.to_sql(ty, out),
            #[cfg(feature = "chrono")]
            Value::Timestamp(t) => t.to_sql(ty, out),
            #[cfg(feature = "chrono")]
            Value::TimestampTz(t) => t.to_sql(ty, out),
            #[cfg(feature = "uuid")]
            Value::Uuid(u) => u.to_sql(ty, out),
            other => Err(super::unsupported_value(Dialect::Postgres, other)
                .to_string()
                .into()),
        }
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    to_sql_checked!();
}

fn decode(row: &tokio_postgres::Row, i: usize) -> Result<Value> {
    let ty = row.columns()[i].type_().clone();
    let get_err = |e: tokio_postgres::Error| Error::decode(Dialect::Postgres, ty.to_string(), e);
    macro_rules! get {
        ($t:ty, $variant:ident) => {
            row.try_get::<_, Option<$t>>(i)
                .map_err(get_err)?
                .map_or(Value::Null(SqlType::$variant), Into::into)
        };
    }
    Ok(match ty {
        Type::BOOL => get!(bool, Bool),
        Type::INT2 => get!(i16, SmallInt),
        Type::INT4 => get!(i32, Int),
        Type::INT8 => get!(i64, BigInt),
        Type::FLOAT4 => get!(f32, Real),
        Type::FLOAT8 => get!(f64, Double),
        Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::UNKNOWN => {
            get!(String, Text)
        }
        Type::BYTEA => get!(Vec<u8>, Blob),
        #[cfg(feature = "chrono")]
        Type::DATE => get!(chrono::NaiveDate, Date),
        #[cfg(feature = "chrono")]
        Type::TIME => get!(chrono::NaiveTime, Time),
        #[cfg(feature = "chrono")]
        Type::TIMESTAMP => get!(chrono::NaiveDateTime, Timestamp),
        #[cfg(feature = "chrono")]
        Type::TIMESTAMPTZ => get!(chrono::DateTime<chrono::Utc>, TimestampTz),
        #[cfg(feature = "uuid")]
        Type::UUID => get!(uuid::Uuid, Uuid),
        Type::OID => row
            .try_get::<_, Option<u32>>(i)
            .map_err(get_err)?
            .map_or(Value::Null(SqlType::BigInt), |v| Value::I64(v.into())),
        other => {
            return Err(Error::Unsupported {
                dialect: Dialect::Postgres,
                what: format!("the column type {other}"),
            });
        }
    })
}

fn statement(c: &mut PgConn, sql: &str) -> Result<Statement> {
    if let Some(s) = c.statements.get(sql) {
        return Ok(s.clone());
    }
    let s = c.io.wait(c.client.prepare(sql))?;
    if c.statements.len() >= STATEMENT_CACHE {
        c.statements.clear();
    }
    c.statements.insert(sql.to_owned(), s.clone());
    Ok(s)
}

pub(crate) fn run(c: &mut PgConn, r: &Rendered, sink: &mut Sink<'_>) -> Result<Done> {
    let stmt = statement(c, &r.sql)?;
    let client = &c.client;
    if stmt.columns().is_empty() {
        let affected = c.io.wait(async {
            let binds: Vec<Bind<'_>> = r.params.iter().map(Bind).collect();
            let refs: Vec<&(dyn ToSql + Sync)> =
                binds.iter().map(|b| b as &(dyn ToSql + Sync)).collect();
            client.execute(&stmt, &refs).await
        })?;
        return Ok(Done {
            affected,
            last_insert_id: None,
            key_step: None,
        });
    }
    let columns = names(stmt.columns().iter().map(|c| c.name().to_owned()));
    let width = columns.len();
    let rows =
        c.io.wait(client.query_raw(&stmt, r.params.iter().map(Bind)))?;
    let mut rows = std::pin::pin!(rows);
    // Each row is one wait: a consumer may take its time between rows, the server may not. A row the
    // connection has received already is taken without a wait (entering the runtime for each row of a
    // page was a tenth of a batch job's client-side instructions).
    loop {
        let next = match rows.next().now_or_never() {
            Some(next) => next.transpose().map_err(error)?,
            None => c.io.wait(async { rows.next().await.transpose() })?,
        };
        let Some(row) = next else {
            break;
        };
        let mut values = Vec::with_capacity(width);
        for i in 0..width {
            values.push(decode(&row, i)?);
        }
        if !sink(Row::new(columns.clone(), values))? {
            return Ok(Done::default());
        }
    }
    Ok(Done {
        affected: rows.rows_affected().unwrap_or_default(),
        last_insert_id: None,
        key_step: None,
    })
}

/// `COPY … FROM STDIN (FORMAT binary)` of a payload encoded by `tandem-core` (the async side sends the same).
pub(crate) fn copy_in(c: &mut PgConn, copy: &CopyIn) -> Result<u64> {
    let payload = Bytes::from(copy.payload()?);
    let sql = copy.statement();
    let sink = c.io.wait(c.client.copy_in::<_, Bytes>(sql.as_str()))?;
    let mut sink = Box::pin(sink);
    c.io.wait(sink.send(payload))?;
    c.io.wait(sink.as_mut().finish())
}

/// Maps a postgres error: server errors by SQLSTATE (with the constraint name), a closed connection or an
/// I/O failure as [`DbErrorKind::ConnectionLost`].
/// A failed connect: TLS failures as [`Error::Tls`], the rest as any other error.
fn connect_error(opts: &ConnectOptions, e: tokio_postgres::Error) -> Error {
    if let Some((kind, cause)) = tandem_core::tls::failure(&e) {
        return Error::tls_caused(opts, kind, cause);
    }
    // The driver says so only in words (tokio-postgres' `connect_tls`): the server answered the TLS
    // request with "no", and the mode does not allow plain TCP.
    if opts.tls.requires_tls() && e.to_string().contains("server does not support TLS") {
        return Error::tls_caused(opts, tandem_core::TlsErrorKind::NotOffered, e);
    }
    match error(e) {
        // Not the server's refusal (those keep their code): the server was not reached. tokio-postgres
        // says only "error connecting to server"; the URL and the causes under it say which and why.
        Error::Database(d) if d.code.is_none() => {
            let mut message = d.message.clone();
            let mut cause = d.source.as_deref().and_then(StdError::source);
            while let Some(c) = cause {
                message = format!("{message}: {c}");
                cause = c.source();
            }
            Error::Database(DbError {
                source: d.source,
                ..DbError::connection_lost(
                    Dialect::Postgres,
                    format!("cannot connect to {}: {message}", opts.display),
                )
            })
        }
        other => other,
    }
}

pub(crate) fn error(e: tokio_postgres::Error) -> Error {
    if let Some(db) = e.as_db_error() {
        let classified = DbError {
            dialect: Dialect::Postgres,
            kind: tandem_core::error::classify_postgres(db.code().code()),
            code: Some(db.code().code().to_owned()),
            message: db.message().to_owned(),
            constraint: db.constraint().map(str::to_owned),
            source: None,
        };
        return Error::Database(classified.with_source(e));
    }
    let io = e.source().is_some_and(|s| s.is::<std::io::Error>());
    let kind = if e.is_closed() || io {
        DbErrorKind::ConnectionLost
    } else {
        DbErrorKind::Other
    };
    Error::Database(
        DbError {
            dialect: Dialect::Postgres,
            kind,
            code: None,
            message: e.to_string(),
            constraint: None,
            source: None,
        }
        .with_source(e),
    )
}
