//! `tandem-blocking`: the blocking executor. Mature synchronous drivers — rusqlite, postgres, mysql — on OS
//! threads over an r2d2 pool, with the `tandem-sql` DSL on top and the repository API users write services
//! against. The Rust side of bluetape4k-exposed's JDBC + virtual threads.
//!
//! # Layout
//! The same files in the same roles as `tandem-async`'s, so that a `diff` of the two `src/` trees shows what
//! changes between the blocking and the async executor; each file imports only from the ones below it.
//! - [`Database`] (`database`): the pool behind `tandem-pool`'s admission control; transactions, plans,
//!   checkouts, and the bridge that runs blocking work from async code on tokio's blocking pool.
//! - [`Transaction`] (`transaction`): BEGIN … COMMIT on one connection; savepoints when nested.
//! - [`PooledConnection`] (`checkout`): one connection checked out to drive by hand.
//! - [`Executor`] and [`Repository`] (`executor`): statement execution, typed loads, streams and
//!   repositories, written once for a [`Database`], a [`Transaction`] and a [`PooledConnection`];
//!   `repository`: the repository's methods, running `tandem-core`'s plans.
//! - `slot`: where a transaction or a checked-out connection keeps its connection — lent to one call at a
//!   time, or to a stream until it ends.
//! - [`RowStream`] (`stream`): rows pulled from the driver as they are consumed, memory bounded.
//! - `conn`: a connection checked out of the pool with its admission permit — the lowest layer.
//! - `connect`: opening a connection, walking a URL's list of servers for every new connection.
//! - `driver`: binding, decoding and error mapping for each engine. Blocking only: `pool` (the r2d2
//!   manager) and `homes` (a SQLite connection kept with the thread that used it last).
//!
//! ```no_run
//! # fn main() -> tandem_core::Result<()> {
//! use tandem_blocking::Executor;
//! let db = tandem_blocking::Database::connect("sqlite::memory:")?;
//! let n: (i64,) = db.fetch_one(&tandem_sql::ast::Select::from(tandem_sql::Ident::new("sqlite_master")?))?;
//! # Ok(()) }
//! ```
#![forbid(unsafe_code)]
// Built with fewer engines, what only some engines use is compiled out where it is declared (no crate-wide
// allow: `just features` builds each executor with one engine, warnings denied).

#[cfg(not(any(feature = "sqlite", feature = "postgres", feature = "mysql")))]
compile_error!("tandem-blocking needs at least one engine feature: sqlite, postgres or mysql");

mod checkout;
mod conn;
mod connect;
mod database;
mod driver;
mod executor;
mod homes;
mod pool;
mod repository;
mod slot;
mod stream;
mod transaction;

pub use checkout::PooledConnection;
pub use database::Database;
pub use executor::{Executor, Repository};
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
