//! Stage 1 — tables and typed columns. **Your code is in `src/exercise.rs`**; the chapter is
//! `book/src/01-tables.md`; `just check 01` runs the tests.
//!
//! This file only chooses what the crate is made of: the given types in `values.rs`, and your
//! `exercise.rs` — or, with the `solution` feature (later stages and `just solve 01` use it), the reference
//! solution. You do not need to edit it.

mod values;
pub use values::*;

#[cfg(not(feature = "solution"))]
mod exercise;
#[cfg(feature = "solution")]
#[path = "../solution/exercise.rs"]
mod exercise;
pub use exercise::*;
