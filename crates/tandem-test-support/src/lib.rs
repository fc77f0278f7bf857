//! `tandem-test-support`: what tandem's own test files and the workshop's tests share (never published).
//!
//! - [`db`]: a database of its own for each test — a temporary SQLite file, a fresh PostgreSQL schema, a
//!   fresh MariaDB database — dropped when the test ends.
//! - [`servers`]: where PostgreSQL and MariaDB are: `TANDEM_POSTGRES_URL` / `TANDEM_MYSQL_URL`, the local
//!   servers, or (feature `testcontainers`) containers started for the run.
//! - `containers` (feature `testcontainers`): those containers, and a server of a test's own to stop,
//!   restart or freeze.
//! - [`harness`]: the libtest-mimic harness of the files that need servers: a test whose server is
//!   unreachable is reported *ignored* with the reason, and fails under `CI=true`.
//! - [`pools`]: both executors' pools behind one face, for the pool tests.
//! - [`proxy`]: a TCP proxy in front of a server that counts, forwards or holds connections.
//! - [`spans`]: a `tracing` layer that keeps the spans tandem opens, to read a call's span tree.
//! - [`statements`]: the MySQL statement-cache case both executors' suites run.
//! - [`events`]: a table of every date, time and UUID type.
//! - [`schema`]: the users-and-orders schema the cross-crate tests (and the compile-fail cases) share, with
//!   the error helpers the executor tests use.
#![allow(missing_docs)]

pub mod db;
pub mod events;
pub mod harness;
pub mod pools;
pub mod proxy;
pub mod schema;
pub mod servers;
pub mod spans;
pub mod statements;

#[cfg(feature = "testcontainers")]
pub mod containers;

/// Re-exported for [`engine_test!`].
pub use tandem_blocking;
pub use tandem_core;
