//! [`Executor`]: what runs statements — a [`crate::Database`] (a pooled connection per call), a
//! [`crate::Transaction`] or a [`crate::PooledConnection`]. Everything users call (`execute`, `fetch_*`,
//! `load`, `fetch`, `repository`) is provided once, on top of the plumbing each executor implements — one
//! statement into a row sink, a plan, a stream — which sits in a sealed supertrait (`sealed::Run`): users
//! call the methods, tandem owns the plumbing, so it can change without breaking anyone.

use tandem_core::plan::{Done, Plan, Sink};
use tandem_core::{Error, Result};
use tandem_sql::batch::BorrowedStatement;
use tandem_sql::typed::{Entity, Load, SelectQuery};
use tandem_sql::{Dialect, FromRow, Render, Rendered};

use crate::stream::RowStream;

// ANCHOR: executor
pub(crate) mod sealed {
    use super::*;

    /// The plumbing under [`Executor`](super::Executor), implemented by tandem's executors only: it is
    /// public in a private module, so other crates can neither name it nor implement it.
    pub trait Run {
        /// Runs one statement, handing each row to `sink` (which returns `false` to stop reading).
        fn run_statement(&self, r: &Rendered, sink: &mut Sink<'_>) -> Result<Done>;

        /// Runs a plan (a repository method): its steps together when they belong together (a
        /// transaction, or a savepoint inside one).
        fn run<T>(&self, plan: Plan<T>) -> Result<T>;

        /// A stream over a rendered statement, holding a connection while it lives.
        fn stream_rendered<T: Send + 'static>(&self, r: Rendered) -> Result<RowStream<'_, T>>;

        /// Runs statements whose values borrow the caller's rows (`batch_insert`'s, see
        /// `tandem_core::repo::borrowed_batch_insert`), one after the other on one connection, each on its
        /// own; returns the rows they affected in all.
        fn run_borrowed<'a>(
            &self,
            statements: &mut dyn Iterator<Item = Result<BorrowedStatement<'a>>>,
        ) -> Result<u64>;
    }
}

/// Runs statements: implemented by [`crate::Database`], [`crate::Transaction`] and
/// [`crate::PooledConnection`]. Bring it into scope (`use tandem_blocking::Executor;`) to call its methods.
/// Only `dialect` is required; the rest is provided on tandem's sealed plumbing (one statement into a row
/// sink, a plan, a stream).
pub trait Executor: sealed::Run {
    /// The engine.
    fn dialect(&self) -> Dialect;

    /// Runs a statement; returns rows affected.
    fn execute(&self, stmt: &impl Render) -> Result<u64> {
        let r = stmt.render(self.dialect())?;
        Ok(self.run_statement(&r, &mut |_| Ok(true))?.affected)
    }

    /// All rows, decoded.
    fn fetch_all<T: FromRow>(&self, stmt: &impl Render) -> Result<Vec<T>> {
        let r = stmt.render(self.dialect())?;
        let mut out = Vec::new();
        self.run_statement(&r, &mut |cells| {
            out.push(T::from_cells(cells)?);
            Ok(true)
        })?;
        Ok(out)
    }

    /// The first row, if any (the rest are not read).
    fn fetch_optional<T: FromRow>(&self, stmt: &impl Render) -> Result<Option<T>> {
        let r = stmt.render(self.dialect())?;
        let mut out = None;
        self.run_statement(&r, &mut |cells| {
            out = Some(T::from_cells(cells)?);
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

/// The repository of entity `E`, over an [`Executor`] `X`: a [`crate::Database`], a [`crate::Transaction`]
/// or a [`crate::PooledConnection`]. Declared here, beside the trait whose `repository()` makes one; its
/// methods are in `repository`.
pub struct Repository<'a, E, X> {
    pub(crate) exec: &'a X,
    _entity: std::marker::PhantomData<fn() -> E>,
}

impl<'a, E, X> Repository<'a, E, X> {
    pub(crate) fn new(exec: &'a X) -> Self {
        Repository {
            exec,
            _entity: std::marker::PhantomData,
        }
    }
}
