//! Stage 9 — the reference solution.

use std::time::Duration;

// ANCHOR: figures
/// The median of the measured times.
pub fn median(samples: &[Duration]) -> Option<Duration> {
    if samples.is_empty() {
        return None;
    }
    let mut sorted = samples.to_vec();
    sorted.sort();
    let mid = sorted.len() / 2;
    Some(if sorted.len() % 2 == 1 {
        sorted[mid]
    } else {
        (sorted[mid - 1] + sorted[mid]) / 2
    })
}

/// Operations per second.
pub fn ops_per_sec(ops: u64, elapsed: Duration) -> f64 {
    if ops == 0 {
        0.0
    } else if elapsed.is_zero() {
        f64::INFINITY
    } else {
        ops as f64 / elapsed.as_secs_f64()
    }
}
// ANCHOR_END: figures

/// An execution model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Model {
    /// tandem-blocking: threads, iterators.
    Blocking,
    /// tandem-async: tasks, streams.
    Async,
}

/// What a service does with its database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Workload {
    /// Requests in flight at once at peak.
    pub concurrent_requests: u32,
    /// The service is already async (an async web framework, other async I/O in the same requests).
    pub async_stack: bool,
    /// Most time goes to large batch writes or CPU work per row, not to waiting on many small queries.
    pub batch_heavy: bool,
    /// The team diagnoses production with thread dumps and pool metrics rather than async task traces.
    pub team_knows_threads: bool,
}

// ANCHOR: choose
/// The selection guide: the first rule that applies decides.
pub fn choose(w: &Workload) -> Model {
    if w.async_stack {
        Model::Async
    } else if w.batch_heavy {
        Model::Blocking
    } else if w.concurrent_requests > 1_000 {
        Model::Async
    } else if w.team_knows_threads {
        Model::Blocking
    } else {
        Model::Async
    }
}
// ANCHOR_END: choose
