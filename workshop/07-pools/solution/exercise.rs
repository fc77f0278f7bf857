//! Stage 7 — the reference solution.

use std::time::Duration;

use tandem_blocking::{Error, PoolConfig};

// ANCHOR: config
/// The pool of a web service with `max` connections.
pub fn service_pool(max: u32) -> PoolConfig {
    let max = max.max(1);
    PoolConfig {
        max_size: max,
        min_idle: Some((max / 2).max(1)),
        max_pending: Some(2 * max),
        acquire_timeout: Duration::from_millis(500),
        validate_on_checkout: true,
        ..PoolConfig::default()
    }
}
// ANCHOR_END: config

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

// ANCHOR: respond
/// The answer for a pool error.
pub fn respond(e: &Error) -> Response {
    match e {
        Error::PoolSaturated { .. } => Response::ServiceUnavailable,
        Error::PoolTimeout { waited, .. } => {
            Response::RetryAfter((*waited).max(Duration::from_secs(1)))
        }
        _ => Response::InternalError,
    }
}
// ANCHOR_END: respond
