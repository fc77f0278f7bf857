//! [`Executor`]: what runs statements — a [`crate::Database`] (a pooled connection per call) or a
//! [`crate::Transaction`]. Three required methods (the engine, one statement into a row sink, a plan) and a
//! stream opener; everything users call (`execute`, `fetch_*`, `load`, `fetch`, `repository`) is provided on
//! top, once, so a function written against `&impl Executor` runs inside a transaction or outside it alike.

use tandem_core::plan::{Done, Plan, Sink};
use tandem_core::{Error, Result};
use tandem_sql::batch::BorrowedStatement;
use tandem_sql::typed::{Entity, Load, SelectQuery};
use tandem_sql::{Dialect, FromRow, Render, Rendered, Row};

use crate::repository::Repository;
use crate::stream::RowStream;

// ANCHOR: executor
/// Runs statements: implemented by [`crate::Database`] and [`crate::Transaction`]. Bring it into scope
/// (`use tandem_blocking::Executor;`) to call its methods.
pub trait Executor {
    /// The engine.
    fn dialect(&self) -> Dialect;

    /// Runs one statement, handing each row to `sink` (which returns `false` to stop reading).
    fn run_statement(&self, r: &Rendered, sink: &mut Sink<'_>) -> Result<Done>;

    /// Runs a plan (a repository method): its steps together when they belong together (a transaction, or
    /// a savepoint inside one).
    fn run<T>(&self, plan: Plan<T>) -> Result<T>;

    /// A stream over a rendered statement, holding a connection while it lives.
    fn stream_rendered<T: Send + 'static>(&self, r: Rendered) -> Result<RowStream<'_, T>>;

    /// Runs statements whose values borrow the caller's rows (`batch_insert`'s, see
    /// `tandem_core::repo::borrowed_batch_insert`), one after the other on one connection, each on its
    /// own; returns the rows they affected in all.
    #[doc(hidden)]
    fn run_borrowed<'a>(
        &self,
        statements: &mut dyn Iterator<Item = Result<BorrowedStatement<'a>>>,
    ) -> Result<u64>;

    /// Runs a statement; returns rows affected.
    fn execute(&self, stmt: &impl Render) -> Result<u64> {
        let r = stmt.render(self.dialect())?;
        Ok(self.run_statement(&r, &mut |_| Ok(true))?.affected)
    }

    /// All rows, decoded.
    fn fetch_all<T: FromRow>(&self, stmt: &impl Render) -> Result<Vec<T>> {
        let r = stmt.render(self.dialect())?;
        let mut out = Vec::new();
        self.run_statement(&r, &mut |row: Row| {
            out.push(T::from_row(row)?);
            Ok(true)
        })?;
        Ok(out)
    }

    /// The first row, if any (the rest are not read).
    fn fetch_optional<T: FromRow>(&self, stmt: &impl Render) -> Result<Option<T>> {
        let r = stmt.render(self.dialect())?;
        let mut out = None;
        self.run_statement(&r, &mut |row: Row| {
            out = Some(T::from_row(row)?);
            Ok(false)
        })?;
        Ok(out)
    }

    /// The first row, or [`Error::RowNotFound`].
    fn fetch_one<T: FromRow>(&self, stmt: &impl Render) -> Result<T> {
        self.fetch_optional(stmt)?.ok_or(Error::RowNotFound)
    }

    /// All rows of a typed query, read into `T` — checked at compile time: a tuple of the selected columns'
    /// types (an `Option` for a column that may be NULL), or the table's entity from `select_all()`.
    fn load<T, QS, Out>(&self, query: &SelectQuery<QS, Out>) -> Result<Vec<T>>
    where
        T: Load<Out>,
    {
        self.fetch_all(query)
    }

    /// A streaming iterator over the rows: read from the driver as it is consumed, a bounded number at a
    /// time (see [`RowStream`]). It holds a connection until it ends or is dropped; inside a transaction,
    /// the transaction's other calls fail until then.
    fn fetch<T: FromRow + Send + 'static>(&self, stmt: &impl Render) -> Result<RowStream<'_, T>> {
        self.stream_rendered(stmt.render(self.dialect())?)
    }

    /// The repository of entity `E` over this executor.
    fn repository<E: Entity>(&self) -> Repository<'_, E, Self>
    where
        Self: Sized,
    {
        Repository::new(self)
    }
}
// ANCHOR_END: executor
