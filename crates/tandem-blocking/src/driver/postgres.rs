//! PostgreSQL for the blocking executor: `tandem-postgres`' connection — the same wire code as the async
//! executor's — driven on a one-thread tokio runtime of its own (what the `postgres` crate does inside), so
//! that each wait for the server is bounded by `socket_timeout` (the `postgres` crate has none: a frozen
//! server held its caller forever). A row the connection has received already is taken without entering
//! the runtime.

use futures_util::FutureExt;
use std::future::Future;
use tandem_core::CopyIn;
use tandem_core::{ConnectOptions, Error, Result};
use tandem_sql::Rendered;

use super::{Done, Sink};

pub(crate) use tandem_postgres::error;

/// One connection and the runtime its calls are driven on.
pub(crate) struct PgConn {
    conn: tandem_postgres::PgConn,
    runtime: OwnRuntime,
}

pub(crate) fn open(opts: &ConnectOptions, timeout: std::time::Duration) -> Result<PgConn> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| {
            Error::Internal(format!(
                "cannot start a PostgreSQL connection's runtime: {e}"
            ))
        })?;
    // The handshake is bounded by the caller (`driver::bounded`), on a thread of its own.
    let conn = runtime.block_on(tandem_postgres::connect(opts, timeout))?;
    Ok(PgConn {
        conn,
        runtime: OwnRuntime(Some(runtime)),
    })
}

/// A connection's own runtime. Blocking on it from a thread that runs async code (a blocking call made
/// straight from an async task, which `run_blocking` exists to avoid, or a connection dropped there)
/// would panic in tokio ("Cannot start a runtime from within a runtime"); such a call is made on a
/// thread of its own instead, so that it blocks its caller exactly as a MySQL or SQLite call does — the
/// same behaviour on every engine, at the cost of a thread per call on that path only. Inside
/// `run_blocking` (one of tokio's blocking threads, where blocking is allowed) it blocks directly.
struct OwnRuntime(Option<tokio::runtime::Runtime>);

impl OwnRuntime {
    fn block_on<F: Future + Send>(&self, future: F) -> Result<F::Output>
    where
        F::Output: Send,
    {
        let Some(runtime) = &self.0 else {
            unreachable!("the runtime is taken only when the connection is dropped")
        };
        if tokio::runtime::Handle::try_current().is_err() || super::off_runtime::marked() {
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
        self.conn.is_closed()
    }

    /// Statements without parameters, in one round trip (BEGIN, COMMIT, SET …).
    pub(crate) fn batch_execute(&mut self, sql: &str) -> Result<()> {
        self.runtime.block_on(self.conn.batch_execute(sql))?
    }
}

pub(crate) fn run(c: &mut PgConn, r: &Rendered, sink: &mut Sink<'_>) -> Result<Done> {
    let (conn, rt) = (&mut c.conn, &c.runtime);
    let tandem_postgres::Prepared { statement, columns } = match conn.cached(&r.sql) {
        Some(prepared) => prepared,
        None => rt.block_on(conn.statement(&r.sql))??,
    };
    if columns.is_empty() {
        let affected = rt.block_on(conn.execute(&statement, &r.params))??;
        return Ok(Done {
            affected,
            last_insert_id: None,
            key_step: None,
        });
    }
    let rows = rt.block_on(conn.query(&statement, &r.params))??;
    let mut rows = std::pin::pin!(rows);
    // Each row is one wait: a consumer may take its time between rows, the server may not. A row the
    // connection has received already is taken without a wait (entering the runtime for each row of a
    // page was a tenth of a batch job's client-side instructions).
    loop {
        let next = match futures_util::StreamExt::next(&mut rows).now_or_never() {
            Some(next) => next.transpose().map_err(error)?,
            None => rt.block_on(conn.next_row(rows.as_mut()))??,
        };
        let Some(row) = next else {
            break;
        };
        if !sink(&mut tandem_postgres::cells(&columns, &row))? {
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
    c.runtime.block_on(c.conn.copy_in(copy))?
}
