//! Stage 8 — a batch job runner. **Your code is in `src/exercise.rs`**; the chapter is
//! `book/src/08-batch.md`; `just check 08` runs the tests.
//!
//! This file only chooses what the crate is made of: the given job (tables, definition, transformation)
//! in `job.rs`, and your `exercise.rs` — or, with the `solution` feature (`just solve 08` shows it), the
//! reference solution. You do not need to edit it. The job runs on the executors of stages 4 and 6: their
//! reference solutions by default, yours with `just check 08 --mine`.

pub mod job;

#[cfg(not(feature = "solution"))]
mod exercise;
#[cfg(feature = "solution")]
#[path = "../solution/exercise.rs"]
mod exercise;
pub use exercise::*;
