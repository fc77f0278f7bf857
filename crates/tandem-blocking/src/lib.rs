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
//! - [`PooledConnection`] (`engine`): one connection checked out to drive by hand.
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
// Built with fewer engines, the shared connection code keeps parameters and helpers only some engines use.
#![cfg_attr(
    not(all(feature = "sqlite", feature = "postgres", feature = "mysql")),
    allow(unused_variables, dead_code, unreachable_code, unused_imports)
)]

#[cfg(not(any(feature = "sqlite", feature = "postgres", feature = "mysql")))]
compile_error!("tandem-blocking needs at least one engine feature: sqlite, postgres or mysql");

mod database;
mod driver;
pub mod engine;
mod executor;
mod homes;
mod pool;
pub(crate) mod repository;
mod stream;
mod transaction;

pub use database::Database;
pub use engine::PooledConnection;
pub use executor::Executor;
pub use repository::Repository;
pub use stream::{BATCH as STREAM_BATCH, BUFFERED as STREAM_BUFFERED, RowStream};
pub use tandem_core::{
    BatchOptions, BatchResult, BatchTransaction, ConnectOptions, CursorPage, DbError, DbErrorKind,
    Error, Find, Holder, Isolation, Page, Result, TxOptions,
};
pub use tandem_pool::{PoolConfig, PoolMetrics};
pub use transaction::Transaction;

/// Built without an engine, a URL for it is a typed error (`just features` runs these).
#[cfg(all(test, not(feature = "mysql")))]
mod left_out_engines {
    #[test]
    fn a_url_for_a_left_out_engine_is_unsupported() {
        let err = crate::Database::connect("mysql://root@127.0.0.1:3306/tandem").unwrap_err();
        assert!(
            matches!(
                err,
                crate::Error::Unsupported {
                    dialect: tandem_sql::Dialect::MySql,
                    ..
                }
            ),
            "{err}"
        );
        assert!(err.to_string().contains("`mysql` feature"), "{err}");
    }
}
