//! Stage 7 — a pool gate. **Your code is in `src/exercise.rs`**; the chapter is `book/src/07-pools.md`;
//! `just check 07` runs the tests.
//!
//! This file only chooses what the crate is: your `exercise.rs`, or with the `solution` feature (later
//! stages and `just solve 07` use it) the reference solution. You do not need to edit it. The checks put
//! your gate in front of the executors of stages 4 and 6: their reference solutions by default, yours with
//! `just check 07 --mine`.

#[cfg(not(feature = "solution"))]
mod exercise;
#[cfg(feature = "solution")]
#[path = "../solution/exercise.rs"]
mod exercise;
pub use exercise::*;
