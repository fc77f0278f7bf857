//! Stage 1 — tables and typed columns. Your code. Read `book/src/01-tables.md`, then make `just check 01`
//! pass. The order that works: the `table!` macro (until it exists, the tests do not compile), then the
//! conversions of `SqlValue`, then `quote` and `create_table`.
// When you are done, delete this comment and the `#![allow(…)]` under it: they keep the compiler quiet
// while the bodies are `todo!()`s (unused parameters, imports, helpers); then its warnings are worth reading.
#![allow(unused_variables)]

use crate::{DecodeError, Dialect, SqlType, Value};

// ANCHOR: sql_value
/// A Rust type a column can hold: its SQL type, whether it may be NULL, and the way to and from a
/// [`Value`].
pub trait SqlValue: Sized + Clone + 'static {
    /// The column's SQL type.
    const SQL_TYPE: SqlType;
    /// Whether the column accepts NULL (only `Option<T>` does).
    const NULLABLE: bool = false;
    /// The value to bind for `self`.
    fn to_value(&self) -> Value;
    /// `self` back from a value a driver read.
    fn from_value(value: Value) -> Result<Self, DecodeError>;
}
// ANCHOR_END: sql_value

impl SqlValue for i32 {
    const SQL_TYPE: SqlType = SqlType::Int;
    fn to_value(&self) -> Value {
        todo!("i32::to_value")
    }
    fn from_value(value: Value) -> Result<Self, DecodeError> {
        todo!("i32::from_value")
    }
}

impl SqlValue for i64 {
    const SQL_TYPE: SqlType = SqlType::BigInt;
    fn to_value(&self) -> Value {
        todo!("i64::to_value")
    }
    fn from_value(value: Value) -> Result<Self, DecodeError> {
        todo!("i64::from_value")
    }
}

impl SqlValue for f64 {
    const SQL_TYPE: SqlType = SqlType::Double;
    fn to_value(&self) -> Value {
        todo!("f64::to_value")
    }
    fn from_value(value: Value) -> Result<Self, DecodeError> {
        todo!("f64::from_value")
    }
}

impl SqlValue for bool {
    const SQL_TYPE: SqlType = SqlType::Bool;
    fn to_value(&self) -> Value {
        todo!("bool::to_value")
    }
    fn from_value(value: Value) -> Result<Self, DecodeError> {
        todo!("bool::from_value")
    }
}

impl SqlValue for String {
    const SQL_TYPE: SqlType = SqlType::Text;
    fn to_value(&self) -> Value {
        todo!("String::to_value")
    }
    fn from_value(value: Value) -> Result<Self, DecodeError> {
        todo!("String::from_value")
    }
}

impl<T: SqlValue> SqlValue for Option<T> {
    const SQL_TYPE: SqlType = T::SQL_TYPE;
    const NULLABLE: bool = true;
    fn to_value(&self) -> Value {
        todo!("Option<T>::to_value")
    }
    fn from_value(value: Value) -> Result<Self, DecodeError> {
        todo!("Option<T>::from_value")
    }
}

// ANCHOR: traits
/// A table: a zero-sized marker type whose name and schema are known to the compiler.
pub trait Table: Copy + Default + 'static {
    /// The table's name.
    const NAME: &'static str;
    /// Its columns, in declaration order.
    fn schema() -> Schema;
}

/// A column: a zero-sized marker type that knows its table and the Rust type of its values.
pub trait Column: Copy + Default + 'static {
    /// The table the column belongs to.
    type Table: Table;
    /// The Rust type of its values (`i32`, `Option<String>`, …).
    type Type: SqlValue;
    /// The column's name.
    const NAME: &'static str;
}
// ANCHOR_END: traits

// ANCHOR: schema
/// A table's schema: what `CREATE TABLE` needs to know.
#[derive(Clone, Debug, PartialEq)]
pub struct Schema {
    /// The table's name.
    pub name: &'static str,
    /// Its columns, in declaration order.
    pub columns: Vec<ColumnDef>,
}

/// One column of a [`Schema`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ColumnDef {
    /// The column's name.
    pub name: &'static str,
    /// Its SQL type.
    pub sql_type: SqlType,
    /// Whether it accepts NULL.
    pub nullable: bool,
    /// Whether it is the table's key, which the database generates.
    pub primary_key: bool,
}
// ANCHOR_END: schema

// ANCHOR: macro
/// Declares a table: `table! { users (id) { id: i64, name: String } }` makes the module `users` with the
/// marker `users::table` and one marker per column (`users::id`, `users::name`); the column in
/// parentheses is the key, an `i64` the database generates.
#[macro_export]
macro_rules! table {
    (
        $(#[$meta:meta])*
        $table:ident ($key:ident) {
            $( $(#[$col_meta:meta])* $col:ident : $ty:ty ),+ $(,)?
        }
    ) => {
        // TODO: generate the module `$table` with the marker `table` (implementing `Table`) and one marker
        // per column (implementing `Column`): see the chapter's section "The macro". Until then, every
        // use of the macro stops the build here.
        compile_error!(
            "TODO (stage 1): write the `table!` macro in workshop/01-tables/src/exercise.rs (book/src/01-tables.md, section \"The macro\")"
        );
    };
}
// ANCHOR_END: macro

// ANCHOR: quote
/// `name` as an identifier of `dialect`: in double quotes on SQLite and PostgreSQL, in backticks on MySQL,
/// with the quote character doubled inside, so that no name can end the identifier early.
pub fn quote(dialect: Dialect, name: &str) -> String {
    todo!("quote an identifier")
}
// ANCHOR_END: quote

// ANCHOR: create_table
impl Schema {
    /// The key column, if the schema has one.
    pub fn primary_key(&self) -> Option<&ColumnDef> {
        self.columns.iter().find(|c| c.primary_key)
    }

    /// `CREATE TABLE` for `dialect`: see the chapter's table of type names and key clauses.
    pub fn create_table(&self, dialect: Dialect) -> String {
        todo!("CREATE TABLE")
    }
}
// ANCHOR_END: create_table
