//! What `#[derive(Table)]` implements: a [`Table`] marker, one [`Column`] marker per field, and [`Entity`]
//! for the struct itself.

use super::insert::{InsertQuery, insert_into};
use super::select::SelectQuery;
use super::write::{DeleteQuery, UpdateQuery, delete_from, update};
use crate::ast::{ColumnDef, CreateTable, DropTable, TableSchema};
use crate::ident::Ident;
use crate::kind::Kind;
use crate::value::{SqlValue, Value};

// ANCHOR: column
/// A declared table: a zero-sized marker type (`users::table`).
pub trait Table: Copy + Default + Send + Sync + 'static {
    /// The table's name.
    const NAME: Ident;
    /// The table's columns and indexes, built once.
    fn schema() -> &'static TableSchema;
}

/// A declared column: a zero-sized marker type (`users::id`) that knows its table, Rust type and SQL kind.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is neither a column nor a value of the expected SQL kind",
    label = "expected a column, or a value of the column's own type",
    note = "an integer column compares with integers, a text column with strings: convert the value first"
)]
pub trait Column: Copy + Default + Send + Sync + 'static {
    /// The table the column belongs to.
    type Table: Table;
    /// The Rust type of the field (`i64`, `Option<String>`).
    type Value: SqlValue;
    /// The SQL kind, for compile-time checks.
    type Kind: Kind;
    /// The column's name.
    const NAME: Ident;
    /// The column's declaration.
    fn def() -> &'static ColumnDef {
        <Self::Table as Table>::schema()
            .columns
            .iter()
            .find(|c| c.name == Self::NAME)
            .expect("a declared column is part of its table's schema")
    }
}
// ANCHOR_END: column

/// A struct that is one row of a declared table: the struct `#[derive(Table)]` was written on.
pub trait Entity: crate::row::FromRow + Sized + Send + 'static {
    /// The table.
    type Table: Table;
    /// The primary key's Rust type.
    type Key: SqlValue + Clone + Send;
    /// The primary key's column name.
    const KEY: Ident;
    /// Whether the database generates the key (auto-increment).
    const GENERATED_KEY: bool;
    /// The key of this row.
    fn key(&self) -> Self::Key;
    /// Every column's value, in declaration order.
    fn to_values(&self) -> Vec<Value>;
    /// Consumes the row into its values, in declaration order.
    fn into_values(self) -> Vec<Value>;
    /// The columns an INSERT writes: all but a generated key.
    fn insert_columns() -> &'static [Ident];
    /// Appends the values of [`Entity::insert_columns`], in that order, to `out` (the batch path: no
    /// vector per row).
    fn write_insert_values(&self, out: &mut Vec<Value>);
    /// [`Entity::write_insert_values`] borrowing text and bytes from the row instead of copying them, for a
    /// driver that binds in place. The derive writes it; by default the values are copied.
    fn write_insert_refs<'a>(&'a self, out: &mut Vec<crate::ValueRef<'a>>) {
        let mut owned = Vec::with_capacity(Self::insert_columns().len());
        self.write_insert_values(&mut owned);
        out.extend(owned.into_iter().map(crate::ValueRef::Value));
    }
    /// The values of [`Entity::insert_columns`], in that order.
    fn insert_values(&self) -> Vec<Value> {
        let mut out = Vec::with_capacity(Self::insert_columns().len());
        self.write_insert_values(&mut out);
        out
    }
}

/// Statement builders on table markers: `users::table.select_all()`, `users::table.update()`, …
pub trait TableMethods: Table {
    /// `SELECT * FROM table`.
    fn select_all(self) -> SelectQuery<(Self, ()), super::select::All<Self>> {
        SelectQuery::<(Self, ()), super::select::All<Self>>::from_table()
    }

    /// `SELECT list FROM table`.
    fn select<L, I>(self, list: L) -> SelectQuery<(Self, ()), L::Cells>
    where
        L: super::SelectList<(Self, ()), I>,
    {
        self.select_all().select(list)
    }

    /// `SELECT * FROM table INNER JOIN other ON cond`.
    fn inner_join<T, E, I>(self, other: T, on: E) -> SelectQuery<(T, (Self, ()))>
    where
        T: Table,
        E: super::Expression<Kind = crate::kind::Bool>,
        E::Sources: super::AllIn<(T, (Self, ())), I>,
    {
        self.select_all().inner_join(other, on)
    }

    /// `SELECT * FROM table LEFT JOIN other ON cond`.
    fn left_join<T, E, I>(self, other: T, on: E) -> SelectQuery<(super::LeftJoined<T>, (Self, ()))>
    where
        T: Table,
        E: super::Expression<Kind = crate::kind::Bool>,
        E::Sources: super::AllIn<(super::LeftJoined<T>, (Self, ())), I>,
    {
        self.select_all().left_join(other, on)
    }

    /// `SELECT … FROM table WHERE cond`; pick columns later with `.select(..)`.
    fn filter<E, I>(self, cond: E) -> SelectQuery<(Self, ()), super::select::All<Self>>
    where
        E: super::Expression<Kind = crate::kind::Bool>,
        E::Sources: super::AllIn<(Self, ()), I>,
    {
        self.select_all().filter(cond)
    }

    /// `INSERT INTO table`.
    fn insert(self) -> InsertQuery<Self, ()> {
        insert_into(self)
    }

    /// `UPDATE table`.
    fn update(self) -> UpdateQuery<Self> {
        update(self)
    }

    /// `DELETE FROM table`.
    fn delete(self) -> DeleteQuery<Self> {
        delete_from(self)
    }

    /// `CREATE TABLE IF NOT EXISTS` with the table's indexes.
    fn create_table(self) -> CreateTable {
        Self::schema().create_table(true)
    }

    /// `DROP TABLE IF EXISTS`.
    fn drop_table(self) -> DropTable {
        Self::schema().drop_table(true)
    }
}

impl<T: Table> TableMethods for T {}
