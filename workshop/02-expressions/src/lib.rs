//! Stage 2 — expressions and NULL. Read `book/src/02-expressions.md`, then make `just check 02` pass.
//!
//! SQL has three truth values: TRUE, FALSE and UNKNOWN, which is what a comparison with NULL gives. Model
//! them as `Option<bool>` (`None` is UNKNOWN) and write SQL's rules; the tests ask SQLite for the truth.
//! Then write one query with the typed DSL.
// The starter's parameters are unused until you write the bodies.
#![allow(unused_variables)]

use tandem_sql::ast::Select;
use tandem_sql::prelude::*;

/// A user (given: the table the query reads).
#[derive(Table, Debug, Clone, PartialEq)]
#[table(name = "users")]
pub struct User {
    /// Generated key.
    #[column(primary_key, auto_increment)]
    pub id: i64,
    /// Name.
    pub name: String,
    /// Age in years.
    pub age: i32,
    /// Email, when known.
    pub email: Option<String>,
}

// ANCHOR: three_valued
/// TODO: `a AND b`. FALSE wins over UNKNOWN: `FALSE AND NULL` is FALSE, `TRUE AND NULL` is UNKNOWN.
pub fn and3(a: Option<bool>, b: Option<bool>) -> Option<bool> {
    todo!()
}

/// TODO: `a OR b`. TRUE wins over UNKNOWN.
pub fn or3(a: Option<bool>, b: Option<bool>) -> Option<bool> {
    todo!()
}

/// TODO: `NOT a`. The negation of UNKNOWN is UNKNOWN.
pub fn not3(a: Option<bool>) -> Option<bool> {
    todo!()
}

/// TODO: `a = b`. Anything compared with NULL is UNKNOWN — even NULL with NULL.
pub fn eq3(a: Option<i64>, b: Option<i64>) -> Option<bool> {
    todo!()
}

/// TODO: `x IN (list)`: TRUE if an element equals `x`; otherwise UNKNOWN if `x` or any element is NULL;
/// otherwise FALSE. (So `3 NOT IN (1, NULL)` is not TRUE: the trap behind many empty results.)
pub fn in3(x: Option<i64>, list: &[Option<i64>]) -> Option<bool> {
    todo!()
}
// ANCHOR_END: three_valued

// ANCHOR: query
/// TODO: with the typed DSL, the names of the users who are 18 or older *and* have an email, or who are
/// named "ada" whatever else is true of them — ordered by name. Values are bound, never spliced: build the
/// query from `users::…` columns and Rust values, then `.into_ast()`.
pub fn adults_query() -> Select {
    todo!()
}
// ANCHOR_END: query
