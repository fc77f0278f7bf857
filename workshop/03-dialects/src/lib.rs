//! Stage 3 — dialects and parameters. Read `book/src/03-dialects.md`, then make `just check 03` pass.
//!
//! One AST, three engines: what differs is small and precise. Write three of the rules a dialect is made
//! of; the tests compare each with what tandem's own renderers produce.
// The starter's parameters are unused until you write the bodies.
#![allow(unused_variables)]

use tandem_sql::Dialect;

// ANCHOR: rules
/// TODO: an identifier quoted for `dialect`: `"name"` on SQLite and PostgreSQL, `` `name` `` on MySQL. A
/// quote character inside the name is doubled, so any name is safe: `a"b` becomes `"a""b"`.
pub fn quote(dialect: Dialect, name: &str) -> String {
    todo!()
}

/// TODO: the placeholder of the `n`th bound parameter (counting from 1): `?` on SQLite and MySQL, `$n` on
/// PostgreSQL.
pub fn placeholder(dialect: Dialect, n: usize) -> String {
    todo!()
}

/// TODO: how many rows of `columns` columns one multi-row INSERT may carry: each value is a parameter, and
/// PostgreSQL and MySQL accept at most 65,535 per statement, SQLite 32,766. Zero when not even one row fits
/// (or there are no columns).
pub fn rows_per_insert(dialect: Dialect, columns: usize) -> usize {
    todo!()
}
// ANCHOR_END: rules
