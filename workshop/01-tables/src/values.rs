//! Given: the vocabulary every stage shares — the engines, the values a statement binds and a row holds,
//! the SQL types of columns, and the error of a value that is not the type asked for. You do not edit
//! this file; your code in `exercise.rs` builds on it.

use std::fmt;

/// A target SQL engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dialect {
    /// SQLite: embedded, one file (or memory).
    Sqlite,
    /// PostgreSQL.
    Postgres,
    /// MySQL 8 and MariaDB.
    MySql,
}

impl Dialect {
    /// All three, for code that renders every one.
    pub const ALL: [Dialect; 3] = [Dialect::Sqlite, Dialect::Postgres, Dialect::MySql];
}

impl fmt::Display for Dialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Dialect::Sqlite => "SQLite",
            Dialect::Postgres => "PostgreSQL",
            Dialect::MySql => "MySQL",
        })
    }
}

/// A value: bound to a statement as a parameter, or read from a row.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// SQL NULL.
    Null,
    /// A boolean.
    Bool(bool),
    /// A 32-bit integer (`INT`).
    I32(i32),
    /// A 64-bit integer (`BIGINT`).
    I64(i64),
    /// A double-precision float.
    F64(f64),
    /// Text.
    Text(String),
}

impl Value {
    /// What kind of value this is, for messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Value::Null => "NULL",
            Value::Bool(_) => "a boolean",
            Value::I32(_) => "a 32-bit integer",
            Value::I64(_) => "a 64-bit integer",
            Value::F64(_) => "a float",
            Value::Text(_) => "text",
        }
    }
}

/// The SQL type of a column, before any engine spells it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SqlType {
    /// A boolean.
    Bool,
    /// A 32-bit integer.
    Int,
    /// A 64-bit integer.
    BigInt,
    /// A double-precision float.
    Double,
    /// Text of any length.
    Text,
}

/// A value that is not of the Rust type it was read as.
#[derive(Clone, Debug, PartialEq)]
pub struct DecodeError {
    /// The Rust type asked for (`"i32"`).
    pub expected: &'static str,
    /// The value found.
    pub found: Value,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "cannot read {} ({:?}) as {}",
            self.found.kind(),
            self.found,
            self.expected
        )
    }
}

impl std::error::Error for DecodeError {}
