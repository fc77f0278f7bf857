//! Stage 6 — an async executor, streams and cancellation. **Your code is in `src/exercise.rs`**; the
//! chapter is `book/src/06-async.md`; `just check 06` runs the tests.
//!
//! This file only chooses what the crate is made of: the given sqlx glue in `drivers.rs`, and your
//! `exercise.rs` — or, with the `solution` feature (later stages and `just solve 06` use it), the
//! reference solution. You do not need to edit it. Stages 1–4 come in as the crates `tables`,
//! `expressions`, `dialects` and `blocking`: their reference solutions by default, yours with
//! `just check 06 --mine`.

pub mod drivers;

#[cfg(not(feature = "solution"))]
mod exercise;
#[cfg(feature = "solution")]
#[path = "../solution/exercise.rs"]
mod exercise;
pub use exercise::*;
