//! [`Executor`]: what runs statements — a [`crate::Database`] (a pooled connection per call) or a
//! [`crate::Transaction`]. A few required methods (the engine, one statement, a plan, a stream) and
//! everything users call (`execute`, `fetch_*`, `load`, `fetch`, `repository`) provided on top, once. Every
//! future it returns is `Send`, so functions written against `&impl Executor` run inside `tokio::spawn`.

use std::future::Future;

use tandem_core::plan::{Done, Plan};
use tandem_core::{Error, Result};
use tandem_sql::typed::{Entity, Load, SelectQuery};
use tandem_sql::{Dialect, FromRow, Render, Rendered, Row};

use crate::repository::Repository;
use crate::stream::RowStream;
use sealed::Keep;

pub(crate) mod sealed {
    use super::*;

    /// How many rows of a statement to keep.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum Keep {
        /// Every row.
        All,
        /// The first row; the rest are not read.
        First,
        /// None (a statement run for its effect).
        None,
    }

    /// The plumbing under [`Executor`](super::Executor), implemented by tandem's executors only: it is
    /// public in a private module, so other crates can neither name it nor implement it.
    pub trait Run: Sync {
        /// Runs one statement, keeping the rows `keep` asks for.
        fn run_statement(
            &self,
            r: Rendered,
            keep: Keep,
        ) -> impl Future<Output = Result<(Vec<Row>, Done)>> + Send;

        /// Runs a plan (a repository method): its steps together when they belong together (a
        /// transaction, or a savepoint inside one).
        fn run<T: Send>(&self, plan: Plan<T>) -> impl Future<Output = Result<T>> + Send;

        /// A stream over a rendered statement, holding a connection while it lives.
        fn stream_rendered<T: Send>(
            &self,
            r: Rendered,
        ) -> impl Future<Output = Result<RowStream<T>>> + Send;
    }
}

// ANCHOR: executor
/// Runs statements: implemented by [`crate::Database`], [`crate::Transaction`] and
/// [`crate::PooledConnection`]. Bring it into scope (`use tandem_async::Executor;`) to call its methods.
/// Only `dialect` is required; the rest is provided on tandem's sealed plumbing (one statement, a plan, a
/// stream). Every future it returns is `Send`.
pub trait Executor: sealed::Run {
    /// The engine.
    fn dialect(&self) -> Dialect;

    /// Runs a statement; returns rows affected.
    fn execute(&self, stmt: &impl Render) -> impl Future<Output = Result<u64>> + Send {
        let r = stmt.render(self.dialect());
        async move { Ok(self.run_statement(r?, Keep::None).await?.1.affected) }
    }

    /// All rows, decoded.
    fn fetch_all<T: FromRow>(
        &self,
        stmt: &impl Render,
    ) -> impl Future<Output = Result<Vec<T>>> + Send {
        let r = stmt.render(self.dialect());
        async move {
            let (rows, _) = self.run_statement(r?, Keep::All).await?;
            rows.into_iter()
                .map(|row| T::from_row(row).map_err(Error::from))
                .collect()
        }
    }

    /// The first row, if any (the rest are not read).
    fn fetch_optional<T: FromRow>(
        &self,
        stmt: &impl Render,
    ) -> impl Future<Output = Result<Option<T>>> + Send {
        let r = stmt.render(self.dialect());
        async move {
            let (rows, _) = self.run_statement(r?, Keep::First).await?;
            rows.into_iter()
                .next()
                .map(T::from_row)
                .transpose()
                .map_err(Error::from)
        }
    }

    /// The first row, or [`Error::RowNotFound`].
    fn fetch_one<T: FromRow>(&self, stmt: &impl Render) -> impl Future<Output = Result<T>> + Send {
        let first = self.fetch_optional(stmt);
        async move { first.await?.ok_or(Error::RowNotFound) }
    }

    /// All rows of a typed query, read into `T` — checked at compile time: a tuple of the selected columns'
    /// types (an `Option` for a column that may be NULL), or the table's entity from `select_all()`.
    fn load<T, QS, Out>(
        &self,
        query: &SelectQuery<QS, Out>,
    ) -> impl Future<Output = Result<Vec<T>>> + Send
    where
        T: Load<Out>,
    {
        self.fetch_all(query)
    }

    /// A `Stream` of rows that reads from the server as it is polled, a bounded number at a time (see
    /// [`RowStream`]). It holds a connection until it ends or is dropped; inside a transaction, the
    /// transaction's other calls wait for it.
    fn fetch<T: FromRow + Send>(
        &self,
        stmt: &impl Render,
    ) -> impl Future<Output = Result<RowStream<T>>> + Send {
        let r = stmt.render(self.dialect());
        async move { self.stream_rendered(r?).await }
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
