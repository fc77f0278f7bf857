//! Stage 4 — a blocking executor and transactions. **Your code is in `src/exercise.rs`**; the chapter is
//! `book/src/04-blocking.md`; `just check 04` runs the tests.
//!
//! This file only chooses what the crate is made of: the given driver glue in `drivers.rs`, and your
//! `exercise.rs` — or, with the `solution` feature (later stages and `just solve 04` use it), the
//! reference solution. You do not need to edit it. Stages 1–3 come in as the crates `tables`,
//! `expressions` and `dialects`: their reference solutions by default, yours with `just check 04 --mine`.

pub mod drivers;

#[cfg(not(feature = "solution"))]
mod exercise;
#[cfg(feature = "solution")]
#[path = "../solution/exercise.rs"]
mod exercise;
pub use exercise::*;
