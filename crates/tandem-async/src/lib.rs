//! `tandem-async`: the async executor. sqlx on tokio, with the same DSL, the same repository methods and
//! options, and the same errors as the blocking executor — the Rust side of the essay's "R2DBC + coroutines".
//! Everything that is not I/O (statements, transaction SQL, retry rule, repository plans, error kinds) comes
//! from `tandem-core`, shared with `tandem-blocking`.
//!
//! # Layout
//! - [`Executor`] (`executor`): statement execution, typed loads, streams and repositories, written once for
//!   both a [`Database`] and a [`Transaction`]; every future it returns is `Send`.
//! - [`Database`] (`database`): sqlx pools, transactions with async closures, plans.
//! - [`Transaction`] (`transaction`): BEGIN … COMMIT on one connection; rolled back on `Err`, on panic and
//!   when its future is dropped; savepoints when nested. [`retry`]: the retry rule for transactions begun by
//!   hand, `Send` for spawned tasks.
//! - [`RowStream`] (`stream`): a `Stream` that reads from the server as it is polled, memory bounded.
//! - [`Repository`] (`repository`): the repository method set, running `tandem-core`'s plans.
//! - [`PooledConnection`] (`conn`): one pooled connection and the statement loop; `backend`: binding, decoding and errors per
//!   sqlx driver.
#![forbid(unsafe_code)]

mod backend;
mod conn;
mod database;
mod executor;
pub(crate) mod repository;
mod sqlite;
mod stream;
mod transaction;

pub use conn::PooledConnection;
pub use database::Database;
pub use executor::{Executor, Keep};
pub use repository::Repository;
pub use stream::{BATCH as STREAM_BATCH, BUFFERED as STREAM_BUFFERED, RowStream};
pub use tandem_core::{
    BatchOptions, BatchResult, BatchTransaction, ConnectOptions, CursorPage, DbError, DbErrorKind,
    Error, Find, Isolation, Page, PoolConfig, PoolMetrics, Result, TxOptions,
};
pub use transaction::{Transaction, retry};
