//! `tandem-core`: what the blocking and the async executor share that is not I/O.
//!
//! # Layout
//! - [`options`]: connection URLs parsed once ([`ConnectOptions`]); pool settings ([`PoolConfig`]) come from
//!   `tandem-pool` and are re-exported here.
//! - [`error`]: the executors' one error type, and the mapping of each engine's codes to [`DbErrorKind`].
//! - [`tx`]: transaction options, the statements that begin, nest and end transactions, the retry rule.
//! - [`plan`]: a repository method as data — steps plus a pure function from outcomes to a result.
//! - [`repo`]: the repository method set as plans, with its option and page types.
//! - [`copy`]: PostgreSQL's binary COPY payload.
//! - `tls` (feature `tls`): TLS failures classified, root certificate files read, for every driver.
//! - [`writer`]: the queue a SQLite file database's write transactions wait in ([`WriterGate`]).
//! - [`ddl`]: the MySQL collation `create_table` uses, as the server offers it.
//!
//! Both executors run the same plans and the same transaction statements, so a repository call means the same
//! thing on either side; only the I/O differs.
#![forbid(unsafe_code)]

pub mod copy;
pub mod ddl;
pub mod error;
pub mod hosts;
pub mod options;
pub mod plan;
pub mod repo;
#[cfg(feature = "tls")]
pub mod tls;
pub mod tx;
pub mod writer;

pub use error::{DbError, DbErrorKind, Error, Holder, Result, TlsErrorKind};
pub use hosts::{HostWalk, ServerRole, SessionAttrs, Verdict};
pub use options::{ConnectOptions, SqliteDriver, TlsMode};
pub use plan::{Atomicity, Done, Outcome, Outcomes, Plan, Runner, Step, StepId, Steps};
pub use repo::{BatchOptions, BatchResult, BatchTransaction, CursorPage, Find, Page};
pub use tandem_pool::{PoolConfig, PoolMetrics};
pub use tx::{Attempts, Ending, Isolation, TxOptions};
pub use writer::WriterGate;
