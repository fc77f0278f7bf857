//! `tandem-playground`: the DSL in the browser. A learner writes table declarations and a query in the same
//! Rust syntax as the book; the playground builds the real `tandem-sql` statement from them, shows its SQL
//! and parameters for SQLite, PostgreSQL and MySQL side by side, and runs the SQLite form on SQLite compiled
//! to WebAssembly, against sample rows.
//!
//! # Layout
//! - [`syntax`]: a lexer and parser for the Rust the playground reads (table structs, DSL expressions),
//!   with spans for every error.
//! - [`schema`]: `#[derive(Table)]` done at run time: structs to `TableSchema`s and column kinds.
//! - `eval`: expressions to the untyped AST, with the typed DSL's kind and table checks.
//! - [`run`](mod@run): a fresh in-memory SQLite per run: tables, sample rows, the statement.
//! - [`samples`]: the default schema, sample rows and the examples menu (shared with the book).
//! - [`reference`](mod@reference): every function and method the playground reads, for errors, the page's reference
//!   panel and completion.
//! - [`notes`]: what a dialect's SQL cannot say of the query, and what tandem does instead.
//! - `report` and `json`: one run's outcome as the JSON the page reads; `web` (wasm32 only): the exports.
//! - `web/`: the page itself (HTML, CSS, `app.js` and `editor.js`).
//!
//! Nothing here panics on user input: every problem is a [`report::Report`] with a message and a span.
#![forbid(unsafe_code)]

mod eval;
mod json;
pub mod notes;
pub mod reference;
pub mod report;
pub mod run;
pub mod samples;
pub mod schema;
pub mod syntax;
#[cfg(target_arch = "wasm32")]
mod web;

pub use eval::build;
pub use report::{Report, run};
