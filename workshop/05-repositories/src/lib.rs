//! Stage 5 — repositories. **Your code is in `src/exercise.rs`**; the chapter is
//! `book/src/05-repositories.md`; `just check 05` runs the tests.
//!
//! This file only chooses what the crate is: your `exercise.rs`, or with the `solution` feature (`just
//! solve 05` shows it) the reference solution. You do not need to edit it. Stages 1–4 come in as the
//! crates `tables`, `expressions`, `dialects` and `blocking`: their reference solutions by default, yours
//! with `just check 05 --mine`.

#[cfg(not(feature = "solution"))]
mod exercise;
#[cfg(feature = "solution")]
#[path = "../solution/exercise.rs"]
mod exercise;
pub use exercise::*;
