//! `tandem`: one typed SQL DSL, two execution models — blocking drivers on threads and async drivers on
//! tokio — measured side by side.
//!
//! This facade only re-exports the member crates:
//! - [`sql`] (`tandem-sql`): typed tables, columns and expressions; one AST rendered for SQLite, PostgreSQL
//!   and MySQL/MariaDB, values always bound as parameters.
//! - [`core`] (`tandem-core`): what both executors share without I/O — URLs, errors, transactions, the
//!   repository method set as plans.
//! - [`blocking`] (`tandem-blocking`): rusqlite, postgres and mysql on OS threads over r2d2.
//! - [`asynchronous`] (`tandem-async`): sqlx on tokio, the same shapes, streams with backpressure.
//! - [`batch`] (`tandem-batch`): the restartable batch job runner, blocking and async.
//! - [`pool`] (`tandem-pool`): admission control for pools (bounded queue of acquires, timeouts, metrics).
//!
//! `#[derive(Table)]` finds tandem-sql by itself, through this facade when a crate depends only on `tandem`
//! (`#[table(crate = "…")]` overrides it).
#![forbid(unsafe_code)]

pub use tandem_async as asynchronous;
pub use tandem_batch as batch;
pub use tandem_blocking as blocking;
pub use tandem_core as core;
pub use tandem_pool as pool;
pub use tandem_sql as sql;
pub use tandem_sql::prelude;
