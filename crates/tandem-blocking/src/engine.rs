//! One pooled blocking connection, for code that drives it itself (the batch runner's run lock, a session
//! setting that must stay on one connection).

use tandem_core::Result;
use tandem_core::plan::{Outcome, Step};
use tandem_sql::{Dialect, Rendered, Row};

use crate::database::{Database, Pooled, run_steps};

/// A connection checked out of a blocking [`Database`]; it goes back to the pool when dropped.
pub struct PooledConnection(Pooled);

pub use tandem_core::plan::Done;

impl PooledConnection {
    /// The engine.
    pub fn dialect(&self) -> Dialect {
        self.0.dialect()
    }

    /// Runs one statement, handing each row to `sink` (which returns `false` to stop reading).
    pub fn run(&mut self, r: &Rendered, sink: &mut dyn FnMut(Row) -> Result<bool>) -> Result<Done> {
        self.0.run(r, sink)
    }

    /// Runs a statement; returns rows affected.
    pub fn execute(&mut self, stmt: &impl tandem_sql::Render) -> Result<u64> {
        let r = stmt.render(self.dialect())?;
        Ok(self.run(&r, &mut |_| Ok(true))?.affected)
    }

    /// The first row, or [`tandem_core::Error::RowNotFound`].
    pub fn fetch_one<T: tandem_sql::FromRow>(
        &mut self,
        stmt: &impl tandem_sql::Render,
    ) -> Result<T> {
        let r = stmt.render(self.dialect())?;
        crate::database::first(&mut self.0, &r)?.ok_or(tandem_core::Error::RowNotFound)
    }

    /// A statement without parameters or rows.
    pub fn simple(&mut self, sql: &str) -> Result<()> {
        self.0.simple(sql)
    }

    /// Closes this connection when it is dropped instead of giving it back to the pool: for session state
    /// that must not outlive its user (an advisory lock, a changed setting).
    pub fn close_on_drop(&mut self) {
        self.0.broken = true;
    }

    /// Runs plan steps, collecting each outcome.
    pub fn run_steps(&mut self, steps: &[Step]) -> Result<Vec<Outcome>> {
        run_steps(&mut self.0, steps)
    }
}

impl Database {
    /// Checks a connection out of the pool, to drive by hand.
    pub fn checkout(&self) -> Result<PooledConnection> {
        Ok(PooledConnection(self.acquire()?))
    }

    /// Checks a connection out from async code: waits for admission without blocking a thread, takes an
    /// idle connection at once when there is one, and only opens a new one on tokio's blocking pool.
    #[cfg(feature = "tokio")]
    pub async fn checkout_async(&self) -> Result<PooledConnection> {
        let started = std::time::Instant::now();
        let permit = self.admission().acquire().await?;
        let permit = match self.try_take(permit) {
            Ok(conn) => return Ok(PooledConnection(conn)),
            Err(permit) => permit,
        };
        let db = self.clone();
        tokio::task::spawn_blocking(move || db.acquire_admitted(permit, started))
            .await
            .map_err(|e| tandem_core::Error::Usage(format!("acquiring a connection: {e}")))?
            .map(PooledConnection)
    }
}
