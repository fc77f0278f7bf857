//! Stage 7 — pools under load. **Your code is in `src/exercise.rs`**; the chapter is `book/src/07-pools.md`;
//! `just check 07` runs the tests.
//!
//! This file only chooses what the crate is: your `exercise.rs`, or with the `solution` feature (`just
//! solve 07` shows it) the reference solution. You do not need to edit it.

#[cfg(not(feature = "solution"))]
mod exercise;
#[cfg(feature = "solution")]
#[path = "../solution/exercise.rs"]
mod exercise;
pub use exercise::*;
