//! Stage 7 — pools under load. Read `book/src/07-pools.md`, then make `just check 07` pass.
//!
//! A pool is a promise to the database: never more than `max` connections, never an unbounded queue of
//! callers waiting for one. Configure a pool for a web service, and decide what a request does when the
//! pool says no.
// The starter's parameters are unused until you write the bodies.
#![allow(unused_variables)]

use std::time::Duration;

use tandem_blocking::{Error, PoolConfig};

// ANCHOR: config
/// TODO: the pool of a web service with `max` connections (at least 1):
/// - warm: `max / 2` connections (at least one) open before the service reports ready;
/// - at most `2 × max` requests waiting for a connection; the next one is refused at once;
/// - no request waits more than 500 ms for a connection;
/// - connections checked with a round trip before use (the database restarts at night);
/// - everything else as `PoolConfig::default()`.
pub fn service_pool(max: u32) -> PoolConfig {
    todo!()
}
// ANCHOR_END: config

// ANCHOR: respond
/// What a request handler answers when it cannot get a connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Response {
    /// 503 at once: the service is overloaded, the client should back off.
    ServiceUnavailable,
    /// 503 with `Retry-After`: the queue was open but too slow; try again after this long.
    RetryAfter(Duration),
    /// 500: something else went wrong.
    InternalError,
}

/// TODO: the answer for a pool error: `Error::PoolSaturated` sheds load (`ServiceUnavailable`);
/// `Error::PoolTimeout` asks the client to come back after as long as it waited (`RetryAfter(waited)`, at
/// least one second); anything else is an `InternalError`.
pub fn respond(e: &Error) -> Response {
    todo!()
}
// ANCHOR_END: respond
