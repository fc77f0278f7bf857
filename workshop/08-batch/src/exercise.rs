//! Stage 8 — the batch job, checkpoints and restarts. Read `book/src/08-batch.md`, then make
//! `just check 08` pass.
//!
//! The essay's job reads `benchmark_source`, transforms each row and writes `benchmark_target`. Write its
//! processor (with one rule of your own) and the partitioning that lets it run in parallel; the tests run
//! the whole job with them, kill it midway, and restart it.
// The starter's parameters are unused until you write the bodies.
#![allow(unused_variables)]

use tandem_batch::essay::{Source, Target};
use tandem_batch::{ProcessError, Processed};

// ANCHOR: process
/// TODO: the processor. For a source row `(name, value)`:
/// - a negative `value` is skipped on purpose (`Processed::Skip`);
/// - otherwise write `Target { id: 0, source_name: upper(name), transformed_value: value * 2 }`;
/// - a `value * 2` that overflows an `i32` is an error (`ProcessError`) naming the value, never a
///   wrapped number.
pub fn process(s: Source) -> Result<Processed<Target>, ProcessError> {
    todo!()
}
// ANCHOR_END: process

// ANCHOR: split
/// TODO: the key range `[lo, hi]` cut into `n` contiguous partitions, in order, each one `(first, last)`
/// inclusive: together they cover every key exactly once, and their sizes differ by at most one. Fewer
/// partitions when there are fewer keys than `n`; none when `hi < lo`; `n = 0` counts as 1.
pub fn split(lo: i64, hi: i64, n: usize) -> Vec<(i64, i64)> {
    todo!()
}
// ANCHOR_END: split
