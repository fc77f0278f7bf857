//! Stage 3 — dialects and parameters. **Your code is in `src/exercise.rs`**; the chapter is
//! `book/src/03-dialects.md`; `just check 03` runs the tests.
//!
//! This file only chooses what the crate is: your `exercise.rs`, or with the `solution` feature (later
//! stages and `just solve 03` use it) the reference solution. You do not need to edit it. Stages 1 and 2
//! come in as the crates `tables` and `expressions`: their reference solutions by default, yours with
//! `just check 03 --mine`.

#[cfg(not(feature = "solution"))]
mod exercise;
#[cfg(feature = "solution")]
#[path = "../solution/exercise.rs"]
mod exercise;
pub use exercise::*;
