//! Stage 9 — a benchmark of your own. **Your code is in `src/exercise.rs`**; the chapter is
//! `book/src/09-choosing.md`; `just check 09` runs the tests, and
//! `cargo run --release -p workshop-09-choosing --bin bench -- --quick` the benchmark.
//!
//! This file only chooses what the crate is made of: the given workloads (and tandem's side of them) in
//! `workloads.rs`, and your `exercise.rs` — or, with the `solution` feature (`just solve 09` shows it), the
//! reference solution. You do not need to edit it. The executors measured are those of stages 4, 6 and 8:
//! their reference solutions by default, yours with `just check 09 --mine`.

pub mod service;
pub mod workloads;

#[cfg(not(feature = "solution"))]
mod exercise;
#[cfg(feature = "solution")]
#[path = "../solution/exercise.rs"]
mod exercise;
pub use exercise::*;
