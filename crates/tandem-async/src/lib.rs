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
// Built with fewer engines, the shared code keeps parameters and helpers only some engines use.
#![cfg_attr(
    not(all(feature = "sqlite", feature = "postgres", feature = "mysql")),
    allow(
        unused_variables,
        dead_code,
        unreachable_code,
        unused_imports,
        unused_mut
    )
)]

#[cfg(not(any(feature = "sqlite", feature = "postgres", feature = "mysql")))]
compile_error!("tandem-async needs at least one engine feature: sqlite, postgres or mysql");

mod backend;
mod conn;
mod database;
mod executor;
pub(crate) mod repository;
#[cfg(feature = "sqlite")]
mod sqlite;
mod stream;
mod transaction;

pub use conn::PooledConnection;
pub use database::Database;
pub use executor::Executor;
pub use repository::Repository;
pub use stream::{BATCH as STREAM_BATCH, BUFFERED as STREAM_BUFFERED, RowStream};
pub use tandem_core::{
    BatchOptions, BatchResult, BatchTransaction, ConnectOptions, CursorPage, DbError, DbErrorKind,
    Error, Find, Holder, Isolation, Page, Result, TxOptions,
};
pub use tandem_pool::{PoolConfig, PoolMetrics};
pub use transaction::{Transaction, retry};

/// Built without an engine, a URL for it is a typed error (`just features` runs these).
#[cfg(all(test, not(feature = "postgres")))]
mod left_out_engines {
    #[test]
    fn a_url_for_a_left_out_engine_is_unsupported() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let err = rt
            .block_on(crate::Database::connect(
                "postgres://postgres@127.0.0.1:5432/tandem",
            ))
            .unwrap_err();
        assert!(
            matches!(
                err,
                crate::Error::Unsupported {
                    dialect: tandem_sql::Dialect::Postgres,
                    ..
                }
            ),
            "{err}"
        );
        assert!(err.to_string().contains("`postgres` feature"), "{err}");
    }
}
