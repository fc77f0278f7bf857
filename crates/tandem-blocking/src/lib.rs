//! `tandem-blocking`: the blocking executor. Mature synchronous drivers — rusqlite, postgres, mysql — on OS
//! threads over an r2d2 pool, with the `tandem-sql` DSL on top and the repository API users write services
//! against. The Rust side of the essay's "JDBC + virtual threads".
//!
//! # Layout
//! - [`Executor`] (`executor`): statement execution, typed loads, streams and repositories, written once for
//!   both a [`Database`] and a [`Transaction`].
//! - [`Database`] (`database`): the pool, transactions, plans, and the bridge that runs blocking work from
//!   async code on tokio's blocking pool.
//! - [`Transaction`] (`transaction`): BEGIN … COMMIT on one connection; savepoints when nested.
//! - [`RowStream`] (`stream`): rows pulled from the driver as they are consumed, memory bounded.
//! - [`Repository`] (`repository`): the repository method set, running `tandem-core`'s plans.
//! - `driver`: binding, decoding and error mapping for each engine; `pool`: the r2d2 manager, behind
//!   `tandem-pool`'s admission control (bounded queue of acquires, one deadline, metrics).
//!
//! ```no_run
//! # fn main() -> tandem_core::Result<()> {
//! use tandem_blocking::Executor;
//! let db = tandem_blocking::Database::connect("sqlite::memory:")?;
//! let n: (i64,) = db.fetch_one(&tandem_sql::ast::Select::from(tandem_sql::Ident::new("sqlite_master")?))?;
//! # Ok(()) }
//! ```
#![forbid(unsafe_code)]

mod database;
mod driver;
pub mod engine;
mod executor;
mod pool;
pub(crate) mod repository;
mod stream;
mod transaction;

pub use database::Database;
pub use executor::Executor;
pub use repository::Repository;
pub use stream::{BATCH as STREAM_BATCH, BUFFERED as STREAM_BUFFERED, RowStream};
pub use tandem_core::{
    BatchOptions, BatchResult, BatchTransaction, ConnectOptions, CursorPage, DbError, DbErrorKind,
    Error, Find, Isolation, Page, PoolConfig, PoolMetrics, Result, TxOptions,
};
pub use transaction::Transaction;
