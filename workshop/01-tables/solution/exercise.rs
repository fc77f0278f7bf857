//! Stage 1 — tables and typed columns: the reference solution.

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

/// The error for `found` read as `expected`.
fn wrong(expected: &'static str, found: Value) -> DecodeError {
    DecodeError { expected, found }
}

impl SqlValue for i32 {
    const SQL_TYPE: SqlType = SqlType::Int;
    fn to_value(&self) -> Value {
        Value::I32(*self)
    }
    fn from_value(value: Value) -> Result<Self, DecodeError> {
        match value {
            Value::I32(v) => Ok(v),
            // Drivers hand back every integer as 64 bits (SQLite has no other); take it when it fits.
            Value::I64(v) => i32::try_from(v).map_err(|_| wrong("i32", value)),
            other => Err(wrong("i32", other)),
        }
    }
}

impl SqlValue for i64 {
    const SQL_TYPE: SqlType = SqlType::BigInt;
    fn to_value(&self) -> Value {
        Value::I64(*self)
    }
    fn from_value(value: Value) -> Result<Self, DecodeError> {
        match value {
            Value::I64(v) => Ok(v),
            Value::I32(v) => Ok(i64::from(v)),
            other => Err(wrong("i64", other)),
        }
    }
}

impl SqlValue for f64 {
    const SQL_TYPE: SqlType = SqlType::Double;
    fn to_value(&self) -> Value {
        Value::F64(*self)
    }
    fn from_value(value: Value) -> Result<Self, DecodeError> {
        match value {
            Value::F64(v) => Ok(v),
            Value::I32(v) => Ok(f64::from(v)),
            // An integer-valued float may come back as an integer (SQLite stores 2.0 in a column of
            // numeric affinity as 2).
            Value::I64(v) if v.unsigned_abs() <= 1 << 53 => Ok(v as f64),
            other => Err(wrong("f64", other)),
        }
    }
}

impl SqlValue for bool {
    const SQL_TYPE: SqlType = SqlType::Bool;
    fn to_value(&self) -> Value {
        Value::Bool(*self)
    }
    fn from_value(value: Value) -> Result<Self, DecodeError> {
        match value {
            Value::Bool(b) => Ok(b),
            // SQLite and MySQL store booleans as the integers 0 and 1.
            Value::I32(0) | Value::I64(0) => Ok(false),
            Value::I32(1) | Value::I64(1) => Ok(true),
            other => Err(wrong("bool", other)),
        }
    }
}

impl SqlValue for String {
    const SQL_TYPE: SqlType = SqlType::Text;
    fn to_value(&self) -> Value {
        Value::Text(self.clone())
    }
    fn from_value(value: Value) -> Result<Self, DecodeError> {
        match value {
            Value::Text(s) => Ok(s),
            other => Err(wrong("String", other)),
        }
    }
}

impl<T: SqlValue> SqlValue for Option<T> {
    const SQL_TYPE: SqlType = T::SQL_TYPE;
    const NULLABLE: bool = true;
    fn to_value(&self) -> Value {
        match self {
            Some(v) => v.to_value(),
            None => Value::Null,
        }
    }
    fn from_value(value: Value) -> Result<Self, DecodeError> {
        match value {
            Value::Null => Ok(None),
            other => T::from_value(other).map(Some),
        }
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
        #[doc = concat!("The `", stringify!($table), "` table and its columns.")]
        $(#[$meta])*
        #[allow(non_camel_case_types)]
        pub mod $table {
            // The column types are written where the macro is called: see what is in scope there.
            #[allow(unused_imports)]
            use super::*;

            /// The table itself.
            #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
            pub struct table;

            impl $crate::Table for table {
                const NAME: &'static str = stringify!($table);
                fn schema() -> $crate::Schema {
                    $crate::Schema {
                        name: stringify!($table),
                        columns: vec![$(
                            $crate::ColumnDef {
                                name: stringify!($col),
                                sql_type: <$ty as $crate::SqlValue>::SQL_TYPE,
                                nullable: <$ty as $crate::SqlValue>::NULLABLE,
                                primary_key: stringify!($col) == stringify!($key),
                            }
                        ),+],
                    }
                }
            }

            // The key must be one of the columns: this names it as a type, which fails to compile if not.
            const _: $key = $key;

            $(
                #[doc = concat!("The `", stringify!($col), "` column.")]
                $(#[$col_meta])*
                #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
                pub struct $col;

                impl $crate::Column for $col {
                    type Table = table;
                    type Type = $ty;
                    const NAME: &'static str = stringify!($col);
                }
            )+
        }
    };
}
// ANCHOR_END: macro

// ANCHOR: quote
/// `name` as an identifier of `dialect`: in double quotes on SQLite and PostgreSQL, in backticks on MySQL,
/// with the quote character doubled inside, so that no name can end the identifier early.
pub fn quote(dialect: Dialect, name: &str) -> String {
    let q = match dialect {
        Dialect::Sqlite | Dialect::Postgres => '"',
        Dialect::MySql => '`',
    };
    let mut out = String::with_capacity(name.len() + 2);
    out.push(q);
    for c in name.chars() {
        if c == q {
            out.push(q);
        }
        out.push(c);
    }
    out.push(q);
    out
}
// ANCHOR_END: quote

// ANCHOR: create_table
impl Schema {
    /// The key column, if the schema has one.
    pub fn primary_key(&self) -> Option<&ColumnDef> {
        self.columns.iter().find(|c| c.primary_key)
    }

    /// `CREATE TABLE` for `dialect`.
    pub fn create_table(&self, dialect: Dialect) -> String {
        let columns: Vec<String> = self
            .columns
            .iter()
            .map(|c| column_def(dialect, c))
            .collect();
        let mut sql = format!(
            "CREATE TABLE {} ({})",
            quote(dialect, self.name),
            columns.join(", ")
        );
        if dialect == Dialect::MySql {
            sql.push_str(" ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_nopad_bin");
        }
        sql
    }
}

/// One column's definition.
fn column_def(dialect: Dialect, c: &ColumnDef) -> String {
    let name = quote(dialect, c.name);
    if c.primary_key {
        return match dialect {
            // Exactly `INTEGER PRIMARY KEY` makes the column SQLite's rowid; AUTOINCREMENT never reuses
            // the key of a deleted last row.
            Dialect::Sqlite => format!("{name} INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT"),
            Dialect::Postgres => format!(
                "{name} {} NOT NULL GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY",
                type_name(dialect, c.sql_type)
            ),
            Dialect::MySql => format!(
                "{name} {} NOT NULL AUTO_INCREMENT PRIMARY KEY",
                type_name(dialect, c.sql_type)
            ),
        };
    }
    let null = if c.nullable { "" } else { " NOT NULL" };
    format!("{name} {}{null}", type_name(dialect, c.sql_type))
}

/// How `dialect` spells `ty`.
fn type_name(dialect: Dialect, ty: SqlType) -> &'static str {
    match (dialect, ty) {
        (_, SqlType::Bool) => "BOOLEAN",
        (Dialect::MySql, SqlType::Int) => "INT",
        (_, SqlType::Int) => "INTEGER",
        (_, SqlType::BigInt) => "BIGINT",
        (Dialect::Postgres, SqlType::Double) => "DOUBLE PRECISION",
        (_, SqlType::Double) => "DOUBLE",
        (Dialect::MySql, SqlType::Text) => "LONGTEXT",
        (_, SqlType::Text) => "TEXT",
    }
}
// ANCHOR_END: create_table
