//! Stage 8 — the batch job, checkpoints and restarts. **Your code is in `src/exercise.rs`**; the chapter is `book/src/08-batch.md`;
//! `just check 08` runs the tests.
//!
//! This file only chooses what the crate is: your `exercise.rs`, or with the `solution` feature (`just
//! solve 08` shows it) the reference solution. You do not need to edit it.

#[cfg(not(feature = "solution"))]
mod exercise;
#[cfg(feature = "solution")]
#[path = "../solution/exercise.rs"]
mod exercise;
pub use exercise::*;
