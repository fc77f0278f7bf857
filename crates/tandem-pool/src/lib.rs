//! `tandem-pool`: the pool settings both executors share, and the admission control r2d2, bb8, deadpool and
//! sqlx do not have — a bound on the queue of waiting acquires.
//!
//! The warning of the bluetape4k-exposed write-up tandem follows: non-blocking does not make connections
//! infinite. Without bounded pending acquires, warm-up and finite timeouts, an overloaded service only
//! builds a longer queue in front of its database.
//!
//! # Layout
//! - [`PoolConfig`] (`config`): size, warm-up, timeouts, pending bound, lifetimes, validation; the
//!   `default()` and `high_throughput(max_size)` presets.
//! - [`Gate`] (`gate`): at most `max_size` permits and a bounded queue of waiters, threads and tasks
//!   alike, served in arrival order (a running caller may take a freed permit before the waiter told of
//!   it, the oldest waiter passed over at most [`FAIR_EVERY`]` − 1` times in a row); typed
//!   [`AdmissionError::Saturated`] and [`AdmissionError::Timeout`].
//! - [`Admission`] (`admission`): the gate, the one acquire deadline and the counters as an executor embeds
//!   them, and the [`PoolMetrics`] snapshot.
//! - [`LossClock`] (`losses`): once a connection was found dead, idle connections older than that are
//!   checked before reuse.
//! - [`WaitTimer`] (`bound`): the bound on one wait for a server (`socket_timeout`), one timer per
//!   connection moved forward for each wait.
//! - [`WriterGate`] (`writer`): the queue a SQLite file database's write transactions wait in, a gate of
//!   one permit.
//!
//! An [`AdmissionError`] becomes `tandem_core::Error`'s `PoolSaturated` or `PoolTimeout`.
//!
//! The executors take a permit first and a connection second — `tandem-blocking` from r2d2 (SQLite's through
//! the thread "homes" in front of it), `tandem-async` from its own stack of idle connections (tokio-postgres,
//! mysql_async, SQLite worker threads; there the gate alone bounds the connections, see
//! [`Admission::bounding`]) or from sqlx's pool with `?driver=sqlx` — so no more than `max_size` callers ever
//! wait inside a pool and everyone else is either queued here, in order, or refused at once.
#![forbid(unsafe_code)]

mod admission;
mod bound;
mod config;
mod gate;
mod losses;
mod shelf;
mod writer;

pub use admission::{Admission, InUse, PoolMetrics};
pub use bound::WaitTimer;
pub use config::{PoolConfig, warm_up_size};
pub use gate::{AdmissionError, Counters, FAIR_EVERY, Gate, GateConfig, GateMetrics, Permit};
pub use losses::{ConnHealth, LossClock};
pub use shelf::{Lent, Shelf};
pub use writer::WriterGate;

impl From<AdmissionError> for tandem_core::Error {
    fn from(e: AdmissionError) -> Self {
        let n = |v: usize| u32::try_from(v).unwrap_or(u32::MAX);
        match e {
            AdmissionError::Saturated { pending, max_size } => tandem_core::Error::PoolSaturated {
                pending: n(pending),
                max_size: n(max_size),
            },
            AdmissionError::Timeout { waited, max_size } => tandem_core::Error::PoolTimeout {
                waited,
                max_size: n(max_size),
            },
        }
    }
}
