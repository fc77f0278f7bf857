//! Stage 9 — benchmarking and choosing. Read `book/src/09-choosing.md`, then make `just check 09` pass.
//!
//! Two habits of the benchmark, and the selection guide as code: the figures of one cell, and the model a
//! workload should start from.
// The starter's parameters are unused until you write the bodies.
#![allow(unused_variables)]

use std::time::Duration;

// ANCHOR: figures
/// TODO: the median of the measured times (the middle one of an odd count, the mean of the two middle
/// ones of an even count); `None` for no samples. One slow outlier must not move it.
pub fn median(samples: &[Duration]) -> Option<Duration> {
    todo!()
}

/// TODO: operations per second for `ops` operations that took `elapsed` (zero time is `f64::INFINITY`
/// for any work, `0.0` for none).
pub fn ops_per_sec(ops: u64, elapsed: Duration) -> f64 {
    todo!()
}
// ANCHOR_END: figures

// ANCHOR: choose
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

/// TODO: the chapter's selection guide, in order — the first rule that applies decides:
/// 1. an async stack stays async (blocking calls would stall its runtime): `Async`;
/// 2. batch-heavy work is as fast on threads and simpler to run: `Blocking`;
/// 3. more than 1,000 requests in flight need tasks, not a thread each: `Async`;
/// 4. otherwise choose what the team can operate: `Blocking` if it knows threads, else `Async`.
pub fn choose(w: &Workload) -> Model {
    todo!()
}
// ANCHOR_END: choose
