//! `tandem-async`: the async executor, on tokio. PostgreSQL through tokio-postgres (`tandem-postgres`, the
//! same wire code the blocking executor drives), SQLite through rusqlite on worker threads, both in
//! tandem's own pool; MySQL through sqlx; and sqlx's driver for any engine with `?driver=sqlx`. The same
//! DSL, the same repository methods and options, and the same errors as the blocking executor — the Rust
//! side of bluetape4k-exposed's R2DBC + coroutines. Everything that is not I/O (statements, transaction SQL, retry rule, repository plans, error
//! kinds) comes from `tandem-core`, shared with `tandem-blocking`.
//!
//! # Layout
//! The same files in the same roles as `tandem-blocking`'s, so that a `diff` of the two `src/` trees shows
//! what changes between the blocking and the async executor; each file imports only from the ones below it.
//! - [`Database`] (`database`): the pools — tandem's own for PostgreSQL connections and SQLite worker
//!   threads, sqlx's for MySQL and for `?driver=sqlx` — behind the admission gate; transactions with async
//!   closures, plans, checkouts.
//! - [`Transaction`] (`transaction`): BEGIN … COMMIT on one connection; rolled back on `Err`, on panic and
//!   when its future is dropped; savepoints when nested. [`retry`]: the retry rule for transactions begun
//!   by hand, `Send` for spawned tasks.
//! - [`PooledConnection`] (`checkout`): one connection checked out to drive by hand.
//! - [`Executor`] and [`Repository`] (`executor`): statement execution, typed loads, streams and
//!   repositories, written once for a [`Database`], a [`Transaction`] and a [`PooledConnection`]; every
//!   future it returns is `Send`. `repository`: the repository's methods, running `tandem-core`'s plans.
//! - `slot`: where a transaction or a checked-out connection keeps its connection — lent to one call at a
//!   time, or to a stream until it ends.
//! - [`RowStream`] (`stream`): a `Stream` that reads from the server as it is polled, memory bounded.
//! - `conn`: a connection checked out of one of the pools with its admission permit, and the statement
//!   loop every operation goes through — the lowest layer.
//! - `connect`: opening a pool, walking a URL's list of servers once per pool.
//! - `driver`: binding, decoding and errors per sqlx driver. Async only: `sqlite` (rusqlite connections on
//!   worker threads).
#![forbid(unsafe_code)]
// Built with fewer engines, what only some engines use is compiled out where it is declared (no crate-wide
// allow: `just features` builds each executor with one engine, warnings denied).

#[cfg(not(any(feature = "sqlite", feature = "postgres", feature = "mysql")))]
compile_error!("tandem-async needs at least one engine feature: sqlite, postgres or mysql");

/// Awaits a future inside a span without moving it: `.instrument(span)` takes the future by value, and a
/// large one (an acquire's, a statement's) is then copied whole — measured at tens of thousands of
/// instructions per call. Pinned where it is made, it is polled with the span entered.
/// Without a subscriber (a disabled span) it is a plain `.await`.
macro_rules! in_span {
    ($span:expr, $fut:expr) => {{
        let span: &tracing::Span = &$span;
        if span.is_disabled() {
            $fut.await
        } else {
            let mut fut = std::pin::pin!($fut);
            std::future::poll_fn(|cx| {
                let _in = span.enter();
                std::future::Future::poll(fut.as_mut(), cx)
            })
            .await
        }
    }};
}

mod checkout;
mod conn;
mod connect;
mod database;
mod driver;
mod executor;
#[cfg(feature = "mysql")]
mod mysql;
mod native;
#[cfg(feature = "postgres")]
mod postgres;
mod repository;
mod sink;
mod slot;
#[cfg(feature = "sqlite")]
mod sqlite;
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
