//! Stage 1 — tables and typed columns. Read `book/src/01-tables.md`, then make `just check 01` pass.
//!
//! Two tasks: finish the `Book` declaration so that it yields the table the chapter specifies, and write
//! the mapping from Rust field types to SQL column types that `#[derive(Table)]` relies on.
// The starter's parameters are unused until you write the bodies.
#![allow(unused_variables)]

use tandem_sql::SqlType;
use tandem_sql::prelude::*;

// ANCHOR: book
/// A book of a library.
///
/// TODO (1): make the declaration yield the chapter's table: `id` a generated primary key, `title` a
/// `VARCHAR(200)` that is unique, `author` a `VARCHAR(100)` with an index (MySQL cannot index `TEXT`).
/// Only attributes change; the fields stay.
#[derive(Table, Debug, Clone, PartialEq)]
#[table(name = "books")]
pub struct Book {
    /// Generated key.
    pub id: i64,
    /// Title, unique.
    pub title: String,
    /// Author's name.
    pub author: String,
    /// Year of publication.
    pub year: i32,
    /// ISBN, when the book has one.
    pub isbn: Option<String>,
}
// ANCHOR_END: book

// ANCHOR: sql_type_of
/// TODO (2): the SQL type and nullability tandem gives a field of the Rust type written `rust`:
/// `"i64"` is `(SqlType::BigInt, false)`, `"Option<String>"` is `(SqlType::Text, true)`. The types are
/// `bool`, `i16`, `i32`, `i64`, `f32`, `f64`, `String`, `Vec<u8>` and `Option<T>` of each; anything else
/// (including `Option<Option<T>>`) is `None`.
pub fn sql_type_of(rust: &str) -> Option<(SqlType, bool)> {
    todo!("map Rust type names to SQL types")
}
// ANCHOR_END: sql_type_of
