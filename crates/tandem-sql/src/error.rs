//! The one error type of `tandem-sql`: everything that can go wrong while building, rendering or decoding.
//!
//! Rendering never panics on user input and never produces SQL it knows to be broken: it returns one of these.

use crate::dialect::Dialect;
use crate::value::SqlType;

/// `Result` with [`Error`] as the default error.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong while building, rendering or decoding a statement.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A table, column, index or alias name that cannot be used.
    #[error("invalid identifier {ident:?}: {reason}")]
    InvalidIdentifier {
        /// The name as given.
        ident: String,
        /// Which rule it breaks.
        reason: &'static str,
    },
    /// `IN ()` / `NOT IN ()` with no values: not valid SQL on PostgreSQL or MySQL.
    #[error("IN list is empty")]
    EmptyInList,
    /// An INSERT with no rows.
    #[error("batch for table {table:?} has no rows")]
    EmptyBatch {
        /// The target table.
        table: String,
    },
    /// A statement part that needs at least one element got none (columns of an INSERT, SET of an UPDATE, …).
    #[error("{what} is empty")]
    Empty {
        /// Which part.
        what: &'static str,
    },
    /// A row of a multi-row INSERT whose width differs from the column list.
    #[error("row {row} has {found} values but the INSERT names {expected} columns")]
    RowWidth {
        /// Zero-based index of the row.
        row: usize,
        /// Number of columns named.
        expected: usize,
        /// Number of values in the row.
        found: usize,
    },
    /// One statement would bind more parameters than the engine accepts.
    #[error(
        "{dialect} accepts at most {limit} bound parameters per statement; this one needs {count}"
    )]
    TooManyParameters {
        /// The target engine.
        dialect: Dialect,
        /// Parameters the statement needs.
        count: usize,
        /// The engine's limit.
        limit: usize,
    },
    /// The statement uses something this dialect cannot express.
    #[error("{dialect} cannot express {feature}")]
    Unsupported {
        /// The target engine.
        dialect: Dialect,
        /// What it cannot do.
        feature: &'static str,
    },
    /// A value of the wrong SQL type for where it is used (checked at run time by untyped builders).
    #[error("column {column:?} expects {expected} but got {found}")]
    TypeMismatch {
        /// The column.
        column: String,
        /// The column's declared type.
        expected: SqlType,
        /// What the value was.
        found: &'static str,
    },
    /// A table declaration that no engine would accept (duplicate column, misplaced auto-increment, …).
    #[error("table {table:?}: {reason}")]
    InvalidSchema {
        /// The table.
        table: String,
        /// What is wrong.
        reason: String,
    },
    /// A name that is not a column of the table it is used with.
    #[error("table {table:?} has no column {column:?}")]
    UnknownColumn {
        /// The table.
        table: String,
        /// The missing column.
        column: String,
    },
    /// A row value could not be decoded into the requested Rust type.
    #[error("column {column:?}: {source}")]
    Decode {
        /// The column (name, or `#index` when the name is unknown).
        column: String,
        /// What was wrong with the value.
        source: ValueError,
    },
    /// A row had fewer columns than the target type reads.
    #[error("row has no column {column:?} (it has {len} columns)")]
    MissingColumn {
        /// The column that was expected.
        column: String,
        /// How many columns the row has.
        len: usize,
    },
}

/// Why one value could not become the requested Rust type.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ValueError {
    /// NULL read into a type that is not an `Option`.
    #[error("unexpected NULL (read it into an Option)")]
    UnexpectedNull,
    /// A value of another type.
    #[error("expected {expected}, found {found}")]
    WrongType {
        /// The Rust-side type asked for.
        expected: &'static str,
        /// The kind of value found.
        found: &'static str,
    },
    /// A number that does not fit the requested type.
    #[error("{value} does not fit in {target}")]
    OutOfRange {
        /// The value, as text.
        value: String,
        /// The requested type.
        target: &'static str,
    },
    /// Text that does not parse as the requested type (dates and UUIDs stored as text).
    #[error("cannot parse {text:?} as {target}")]
    Parse {
        /// The text.
        text: String,
        /// The requested type.
        target: &'static str,
    },
}
