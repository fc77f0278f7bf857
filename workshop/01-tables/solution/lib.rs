//! Stage 1 — the reference solution.

use tandem_sql::SqlType;
use tandem_sql::prelude::*;

/// A book of a library.
#[derive(Table, Debug, Clone, PartialEq)]
#[table(name = "books", index(author))]
pub struct Book {
    /// Generated key.
    #[column(primary_key, auto_increment)]
    pub id: i64,
    /// Title, unique.
    #[column(varchar = 200, unique)]
    pub title: String,
    /// Author's name (indexed, so bounded: MySQL cannot index a TEXT column).
    #[column(varchar = 100)]
    pub author: String,
    /// Year of publication.
    pub year: i32,
    /// ISBN, when the book has one.
    pub isbn: Option<String>,
}

// ANCHOR: sql_type_of
/// The SQL type and nullability of a field of Rust type `rust`.
pub fn sql_type_of(rust: &str) -> Option<(SqlType, bool)> {
    let rust = rust.trim();
    if let Some(inner) = rust
        .strip_prefix("Option<")
        .and_then(|r| r.strip_suffix('>'))
    {
        return match sql_type_of(inner)? {
            (_, true) => None,
            (ty, false) => Some((ty, true)),
        };
    }
    let ty = match rust {
        "bool" => SqlType::Bool,
        "i16" => SqlType::SmallInt,
        "i32" => SqlType::Int,
        "i64" => SqlType::BigInt,
        "f32" => SqlType::Real,
        "f64" => SqlType::Double,
        "String" => SqlType::Text,
        "Vec<u8>" => SqlType::Blob,
        _ => return None,
    };
    Some((ty, false))
}
// ANCHOR_END: sql_type_of
