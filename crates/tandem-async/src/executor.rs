//! [`Executor`]: what runs statements — a [`crate::Database`] (a pooled connection per call), a
//! [`crate::Transaction`] or a [`crate::PooledConnection`]. Everything users call (`execute`, `fetch_*`,
//! `load`, `fetch`, `repository`) is provided once, on top of the plumbing each executor implements — one
//! statement into a row sink, a plan, a stream — which sits in a sealed supertrait (`sealed::Run`), as on the
//! blocking side. Every future it returns is `Send`, so functions written against `&impl Executor` run inside
//! `tokio::spawn`.

use std::future::Future;

use tandem_core::plan::{Done, Plan};
use tandem_core::{Error, Result};
use tandem_sql::typed::{Entity, Load, SelectQuery};
use tandem_sql::{Cells, Dialect, FromRow, Render, Rendered};

use crate::stream::RowStream;
use sealed::{Decode, DecodeFirst, Discard};

pub(crate) mod sealed {
    use super::*;

    pub use crate::conn::Sink;

    /// The plumbing under [`Executor`](super::Executor), implemented by tandem's executors only: it is
    /// public in a private module, so other crates can neither name it nor implement it.
    pub trait Run: Sync {
        /// Runs one statement, handing its rows to `sink`.
        fn run_statement<S: Sink>(
            &self,
            r: Rendered,
            sink: &mut S,
        ) -> impl Future<Output = Result<Done>> + Send;

        /// Runs a repository's key lookup (one statement, at most one row, through the key's index):
        /// like any statement, except where the executor has a faster way that cannot block the runtime
        /// (a pooled rusqlite connection runs it on the caller's thread, see `Conn::run_key_read`).
        fn run_key_read<S: Sink>(
            &self,
            r: Rendered,
            sink: &mut S,
        ) -> impl Future<Output = Result<Done>> + Send {
            self.run_statement(r, sink)
        }

        /// Runs a plan (a repository method): its steps together when they belong together (a
        /// transaction, or a savepoint inside one).
        fn run<T: Send>(&self, plan: Plan<T>) -> impl Future<Output = Result<T>> + Send;

        /// A stream over a rendered statement, holding a connection while it lives.
        fn stream_rendered<T: Send>(
            &self,
            r: Rendered,
        ) -> impl Future<Output = Result<RowStream<T>>> + Send;
    }

    /// Decodes every row as it arrives.
    pub(crate) struct Decode<T>(pub(crate) Vec<T>);

    impl<T: FromRow + Send> Sink for Decode<T> {
        async fn push<C: Cells + Send + ?Sized>(&mut self, row: &mut C) -> Result<bool>
        where
            Error: From<C::Error>,
        {
            self.0.push(T::from_cells(row)?);
            Ok(true)
        }
    }

    /// Decodes the first row and stops reading.
    pub(crate) struct DecodeFirst<T>(pub(crate) Option<T>);

    impl<T: FromRow + Send> Sink for DecodeFirst<T> {
        async fn push<C: Cells + Send + ?Sized>(&mut self, row: &mut C) -> Result<bool>
        where
            Error: From<C::Error>,
        {
            self.0 = Some(T::from_cells(row)?);
            Ok(false)
        }
        fn keep(&self) -> usize {
            1
        }
    }

    /// Reads no rows (a statement run for its effect).
    pub(crate) struct Discard;

    impl Sink for Discard {
        async fn push<C: Cells + Send + ?Sized>(&mut self, _: &mut C) -> Result<bool>
        where
            Error: From<C::Error>,
        {
            Ok(true)
        }
        fn keep(&self) -> usize {
            0
        }
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
        async move { Ok(self.run_statement(r?, &mut Discard).await?.affected) }
    }

    /// All rows, decoded as they arrive (on SQLite's worker threads, once the worker hands them over).
    fn fetch_all<T: FromRow + Send>(
        &self,
        stmt: &impl Render,
    ) -> impl Future<Output = Result<Vec<T>>> + Send {
        let r = stmt.render(self.dialect());
        async move {
            let mut rows = Decode(Vec::new());
            self.run_statement(r?, &mut rows).await?;
            Ok(rows.0)
        }
    }

    /// The first row, if any (the rest are not read).
    fn fetch_optional<T: FromRow + Send>(
        &self,
        stmt: &impl Render,
    ) -> impl Future<Output = Result<Option<T>>> + Send {
        let r = stmt.render(self.dialect());
        async move {
            let mut first = DecodeFirst(None);
            self.run_statement(r?, &mut first).await?;
            Ok(first.0)
        }
    }

    /// The first row, or [`Error::RowNotFound`].
    fn fetch_one<T: FromRow + Send>(
        &self,
        stmt: &impl Render,
    ) -> impl Future<Output = Result<T>> + Send {
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
        T: Load<Out> + Send,
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
