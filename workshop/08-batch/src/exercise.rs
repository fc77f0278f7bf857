//! Stage 8 — a batch job runner. Your code. Read `book/src/08-batch.md`, then make `just check 08` pass.
//! First `split`, then the blocking runner, then the async one — what they share (the statements of each
//! step of the job) is worth writing once, beside them.
// When you are done, delete this comment and the `#![allow(…)]` under it: they keep the compiler quiet
// while the bodies are `todo!()`s (unused parameters, imports, helpers); then its warnings are worth reading.
#![allow(unused_variables, unused_imports, dead_code)]

use blocking::{ATTEMPTS, Error, Executor, RETRY_PAUSE, Result};
use dialects::{GeneratedKey, Insert, OnConflict, Order, Select, Statement, Update};
use expressions::ColumnExt;
use tables::{DecodeError, Dialect, Value};

use crate::job::{
    COMPLETED, Job, Report, STARTED, batch_job_execution, batch_step_execution, benchmark_source,
    benchmark_target, transform,
};

// ANCHOR: split
/// The key range `[lo, hi]` cut into `n` contiguous partitions, in order, each `(first, last)` inclusive:
/// every key in exactly one, sizes differing by at most one; fewer partitions when there are fewer keys;
/// none when `hi < lo`; `n = 0` counts as 1.
pub fn split(lo: i64, hi: i64, n: usize) -> Vec<(i64, i64)> {
    todo!("cut the key range into partitions")
}
// ANCHOR_END: split

// ANCHOR: blocking
/// Runs `job` on threads, one per partition. A run of a job whose last run did not complete resumes it,
/// each partition after its checkpoint.
pub fn run_blocking(db: &blocking::Database, job: &Job) -> Result<Report> {
    todo!("run the job on threads")
}

// ANCHOR_END: blocking

// ANCHOR: async
/// [`run_blocking`] on the async executor: one task per partition.
pub async fn run_async(db: &asynchronous::Database, job: &Job) -> Result<Report> {
    todo!("run the job on tasks")
}

// ANCHOR_END: async
