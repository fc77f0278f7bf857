//! `tandem-core`: what the blocking and the async executor share that is not I/O. It depends on no runtime
//! and no driver: pool settings and the queues that wait (admission, the SQLite writer gate) are
//! `tandem-pool`'s, which builds on this crate.
//!
//! # Layout
//! - [`options`]: connection URLs parsed once ([`ConnectOptions`]).
//! - [`error`]: the executors' one error type, and the mapping of each engine's codes to [`DbErrorKind`].
//! - [`tx`]: transaction options, the statements that begin, nest and end transactions, the retry rule.
//! - [`plan`]: a repository method as data — steps plus a pure function from outcomes to a result.
//! - [`repo`]: the repository method set as plans, with its option and page types.
//! - [`copy`]: PostgreSQL's binary COPY payload.
//! - `tls` (feature `tls`): TLS failures classified, root certificate files read, for every driver.
//! - [`observe`]: the spans and metrics both executors emit, with the same names and fields.
//! - [`ddl`]: the MySQL collation `create_table` uses, as the server offers it.
//!
//! Both executors run the same plans and the same transaction statements, so a repository call means the same
//! thing on either side; only the I/O differs.
#![forbid(unsafe_code)]

pub mod copy;
pub mod ddl;
pub mod error;
pub mod hosts;
pub mod observe;
pub mod options;
pub mod plan;
pub mod poll;
pub mod repo;
pub mod statements;
#[cfg(feature = "tls")]
pub mod tls;
pub mod tx;

pub use error::{DbError, DbErrorKind, Error, Holder, Result, TlsErrorKind};
pub use hosts::{HostWalk, ServerRole, SessionAttrs, Verdict};
pub use options::{AsyncDriver, ConnectOptions, TlsMode, WorkerWait};
pub use plan::{Atomicity, CopyIn, Done, Outcome, Outcomes, Plan, Runner, Step, StepId, Steps};
pub use repo::{BatchOptions, BatchResult, BatchTransaction, CursorPage, Find, Page};
pub use tx::{Attempts, Closing, Isolation, TxOptions};
