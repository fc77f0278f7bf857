//! Stage 6 — the async executor, streams and backpressure. **Your code is in `src/exercise.rs`**; the chapter is `book/src/06-async.md`;
//! `just check 06` runs the tests.
//!
//! This file only chooses what the crate is: your `exercise.rs`, or with the `solution` feature (`just
//! solve 06` shows it) the reference solution. You do not need to edit it.

#[cfg(not(feature = "solution"))]
mod exercise;
#[cfg(feature = "solution")]
#[path = "../solution/exercise.rs"]
mod exercise;
pub use exercise::*;
