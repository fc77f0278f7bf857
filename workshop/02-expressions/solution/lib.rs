//! Stage 2 — the reference solution.

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

/// `a AND b`.
pub fn and3(a: Option<bool>, b: Option<bool>) -> Option<bool> {
    match (a, b) {
        (Some(false), _) | (_, Some(false)) => Some(false),
        (Some(true), Some(true)) => Some(true),
        _ => None,
    }
}

/// `a OR b`.
pub fn or3(a: Option<bool>, b: Option<bool>) -> Option<bool> {
    match (a, b) {
        (Some(true), _) | (_, Some(true)) => Some(true),
        (Some(false), Some(false)) => Some(false),
        _ => None,
    }
}

/// `NOT a`.
pub fn not3(a: Option<bool>) -> Option<bool> {
    a.map(|v| !v)
}

/// `a = b`.
pub fn eq3(a: Option<i64>, b: Option<i64>) -> Option<bool> {
    Some(a? == b?)
}

/// `x IN (list)`.
pub fn in3(x: Option<i64>, list: &[Option<i64>]) -> Option<bool> {
    list.iter().map(|e| eq3(x, *e)).fold(Some(false), or3)
}

// ANCHOR: query
/// Adults with an email, or anyone named "ada", by name.
pub fn adults_query() -> Select {
    users::table
        .select(users::name)
        .filter(
            users::age
                .ge(18)
                .and(users::email.is_not_null())
                .or(users::name.eq("ada")),
        )
        .order_by(users::name.asc())
        .into_ast()
        .expect("a valid query")
}
// ANCHOR_END: query
