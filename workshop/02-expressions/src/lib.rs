//! Stage 2 — expressions and NULL. **Your code is in `src/exercise.rs`**; the chapter is
//! `book/src/02-expressions.md`; `just check 02` runs the tests.
//!
//! This file only chooses what the crate is: your `exercise.rs`, or with the `solution` feature (later
//! stages and `just solve 02` use it) the reference solution. You do not need to edit it. Stage 1 comes
//! in as the crate `tables`: the reference solution by default, yours with `just check 02 --mine`.

#[cfg(not(feature = "solution"))]
mod exercise;
#[cfg(feature = "solution")]
#[path = "../solution/exercise.rs"]
mod exercise;
pub use exercise::*;
