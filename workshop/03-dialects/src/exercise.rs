//! Stage 3 — dialects and parameters. Your code. Read `book/src/03-dialects.md`, then make `just check 03`
//! pass. The builders are given; you write what turns them into SQL for each engine: `param_limit`,
//! `Select::render`, `Update::render` and `Delete::render`, then `Insert::render` and `render_chunks`.
// When you are done, delete this comment and the `#![allow(…)]` under it: they keep the compiler quiet
// while the bodies are `todo!()`s (unused parameters, imports, helpers); then its warnings are worth reading.
#![allow(unused_variables, unused_imports, dead_code)]

use std::fmt;
use std::marker::PhantomData;

use expressions::{Condition, Expr, RenderError, Sql};
use tables::{Column, Dialect, SqlValue, Table, Value};

// ANCHOR: statement
/// A statement ready for a driver: the SQL text, its parameters, and how the keys it generates come back.
#[derive(Clone, Debug, PartialEq)]
pub struct Statement {
    /// The SQL text, with the dialect's placeholders.
    pub sql: String,
    /// The values, in placeholder order.
    pub params: Vec<Value>,
    /// For an INSERT asked for its keys: where they come from.
    pub key: GeneratedKey,
}

/// Where an INSERT's generated keys come from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum GeneratedKey {
    /// Nowhere: nobody asked.
    #[default]
    None,
    /// The statement returns them as rows (`RETURNING "id"`): run it as a query.
    Returning,
    /// The connection's last insert id, read after the statement (MySQL has no `RETURNING`).
    LastInsertId,
}

/// Why a statement cannot be rendered.
#[derive(Clone, Debug, PartialEq)]
pub enum Error {
    /// The WHERE clause cannot be rendered.
    Expr(RenderError),
    /// An INSERT with no rows.
    EmptyBatch {
        /// The table.
        table: &'static str,
    },
    /// A list that must not be empty is (the INSERT columns, an UPDATE's SET, an upsert's SET).
    Empty {
        /// Which list.
        what: &'static str,
    },
    /// More bind parameters than the engine accepts in one statement.
    TooManyParameters {
        /// The engine.
        dialect: Dialect,
        /// How many the statement needs.
        count: usize,
        /// How many the engine takes.
        limit: usize,
    },
    /// A row with another number of values than the INSERT has columns.
    RowWidth {
        /// The row's index.
        row: usize,
        /// The number of columns.
        expected: usize,
        /// The number of values in the row.
        found: usize,
    },
    /// A column the table does not have.
    UnknownColumn {
        /// The table.
        table: &'static str,
        /// The name given.
        column: &'static str,
    },
    /// Something this dialect cannot say.
    Unsupported {
        /// The engine.
        dialect: Dialect,
        /// What it cannot say.
        feature: &'static str,
    },
}

impl From<RenderError> for Error {
    fn from(e: RenderError) -> Error {
        Error::Expr(e)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Expr(e) => e.fmt(f),
            Error::EmptyBatch { table } => write!(f, "an INSERT into {table} with no rows"),
            Error::Empty { what } => write!(f, "the {what} is empty"),
            Error::TooManyParameters {
                dialect,
                count,
                limit,
            } => write!(
                f,
                "{count} parameters in one statement; {dialect} takes at most {limit}"
            ),
            Error::RowWidth {
                row,
                expected,
                found,
            } => write!(f, "row {row} has {found} values for {expected} columns"),
            Error::UnknownColumn { table, column } => {
                write!(f, "table {table} has no column {column:?}")
            }
            Error::Unsupported { dialect, feature } => write!(f, "{dialect} cannot say {feature}"),
        }
    }
}

impl std::error::Error for Error {}
// ANCHOR_END: statement

// ANCHOR: limits
/// The most bind parameters one statement may carry: 32,766 on SQLite (its default
/// `SQLITE_MAX_VARIABLE_NUMBER` since 3.32), 65,535 on PostgreSQL and MySQL (their protocols count
/// parameters in 16 bits).
pub fn param_limit(dialect: Dialect) -> usize {
    todo!("the engine's bind-parameter limit")
}

// ANCHOR_END: limits

/// A column of `T` as `"table"."column"`.
fn column_expr<T: Table>(column: &'static str) -> Expr {
    Expr::Column {
        table: T::NAME,
        column,
    }
}

/// The names of `T`'s columns, in declaration order.
fn column_names<T: Table>() -> Vec<&'static str> {
    T::schema().columns.iter().map(|c| c.name).collect()
}

/// The name of `T`'s key (the first column when it declares none).
fn key_name<T: Table>() -> &'static str {
    let schema = T::schema();
    schema
        .primary_key()
        .or(schema.columns.first())
        .map_or("id", |c| c.name)
}

// ANCHOR: select
/// The direction of an ORDER BY.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// Smallest first.
    Asc,
    /// Largest first.
    Desc,
}

/// `SELECT` every column of `T`, with an optional filter, order, limit and offset.
#[derive(Clone, Debug)]
pub struct Select<T: Table> {
    filter: Option<Condition<T>>,
    order_by: Vec<(&'static str, Order)>,
    limit: Option<u64>,
    offset: Option<u64>,
}

impl<T: Table> Select<T> {
    /// Every row of `table`, every column in declaration order.
    pub fn from(_table: T) -> Select<T> {
        Select {
            filter: None,
            order_by: Vec::new(),
            limit: None,
            offset: None,
        }
    }

    /// Keeps the rows `condition` holds for (AND-ed with an earlier filter).
    pub fn filter(mut self, condition: Condition<T>) -> Select<T> {
        self.filter = Some(match self.filter.take() {
            Some(earlier) => earlier.and(condition),
            None => condition,
        });
        self
    }

    /// Orders by `column` (after earlier orderings).
    pub fn order_by<C: Column<Table = T>>(mut self, _column: C, order: Order) -> Select<T> {
        self.order_by.push((C::NAME, order));
        self
    }

    /// At most `n` rows.
    pub fn limit(mut self, n: u64) -> Select<T> {
        self.limit = Some(n);
        self
    }

    /// Skips the first `n` rows.
    pub fn offset(mut self, n: u64) -> Select<T> {
        self.offset = Some(n);
        self
    }
    // ANCHOR_END: select

    // ANCHOR: render_select
    /// `SELECT "t"."a", "t"."b" FROM "t"[ WHERE …][ ORDER BY …][ LIMIT ?][ OFFSET ?]` for `dialect`.
    pub fn render(&self, dialect: Dialect) -> Result<Statement, Error> {
        todo!("render a SELECT")
    }
}

// ANCHOR_END: render_select

// ANCHOR: insert
/// What an INSERT does with a row whose key already exists.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OnConflict {
    /// Fail (the default).
    Fail,
    /// Skip the row.
    Ignore,
    /// Update these columns of the existing row with the new row's values (an upsert).
    Update(Vec<&'static str>),
}

/// `INSERT INTO T (columns…) VALUES (…), (…)`, with conflict handling and generated keys.
#[derive(Clone, Debug)]
pub struct Insert<T: Table> {
    columns: Vec<&'static str>,
    rows: Vec<Vec<Value>>,
    conflict: OnConflict,
    returning_key: bool,
    table: PhantomData<T>,
}

impl<T: Table> Insert<T> {
    /// An INSERT of `columns` into `table`, with no rows yet.
    pub fn into(_table: T, columns: Vec<&'static str>) -> Insert<T> {
        Insert {
            columns,
            rows: Vec::new(),
            conflict: OnConflict::Fail,
            returning_key: false,
            table: PhantomData,
        }
    }

    /// One more row: a value per column, in the columns' order.
    pub fn row(mut self, values: Vec<Value>) -> Insert<T> {
        self.rows.push(values);
        self
    }

    /// What to do with rows whose key exists.
    pub fn on_conflict(mut self, conflict: OnConflict) -> Insert<T> {
        self.conflict = conflict;
        self
    }

    /// Asks for the generated keys.
    pub fn returning_key(mut self) -> Insert<T> {
        self.returning_key = true;
        self
    }
    // ANCHOR_END: insert

    // ANCHOR: render_insert
    /// The statement for `dialect`; more parameters than the engine takes is an error (see
    /// [`Insert::render_chunks`]).
    pub fn render(&self, dialect: Dialect) -> Result<Statement, Error> {
        todo!("render an INSERT")
    }

    /// The rows split into as few statements as the engine's parameter limit allows, each a full INSERT
    /// with the same columns, conflict handling and keys; every row once, in order.
    pub fn render_chunks(&self, dialect: Dialect) -> Result<Vec<Statement>, Error> {
        todo!("split an INSERT at the parameter limit")
    }
}
// ANCHOR_END: render_insert

// ANCHOR: write
/// Column types that can be added to: `Update::add` is only for them.
pub trait Numeric: SqlValue {}
impl Numeric for i32 {}
impl Numeric for i64 {}
impl Numeric for f64 {}

/// What an UPDATE sets a column to.
#[derive(Clone, Debug)]
enum SetTo {
    /// A value.
    Value(Value),
    /// The column's own value plus this one.
    Add(Value),
}

/// `UPDATE T SET … WHERE …`.
#[derive(Clone, Debug)]
pub struct Update<T: Table> {
    set: Vec<(&'static str, SetTo)>,
    filter: Option<Condition<T>>,
}

impl<T: Table> Update<T> {
    /// An UPDATE of `table`, with nothing set yet.
    pub fn table(_table: T) -> Update<T> {
        Update {
            set: Vec::new(),
            filter: None,
        }
    }

    /// `SET column = value`.
    pub fn set<C: Column<Table = T>>(mut self, _column: C, value: impl Into<C::Type>) -> Update<T> {
        self.set
            .push((C::NAME, SetTo::Value(value.into().to_value())));
        self
    }

    /// `SET name = value` by the column's name, for code that knows its columns only at run time (a
    /// repository over any entity); a name the table lacks is `Error::UnknownColumn` when rendered.
    pub fn set_column(mut self, name: &'static str, value: Value) -> Update<T> {
        self.set.push((name, SetTo::Value(value)));
        self
    }

    /// `SET column = column + delta`: computed by the database, so that two transactions adding at once
    /// both count.
    pub fn add<C: Column<Table = T>>(mut self, _column: C, delta: C::Type) -> Update<T>
    where
        C::Type: Numeric,
    {
        self.set.push((C::NAME, SetTo::Add(delta.to_value())));
        self
    }

    /// Changes only the rows `condition` holds for (AND-ed with an earlier filter).
    pub fn filter(mut self, condition: Condition<T>) -> Update<T> {
        self.filter = Some(match self.filter.take() {
            Some(earlier) => earlier.and(condition),
            None => condition,
        });
        self
    }

    /// `UPDATE "t" SET "a" = ?, "b" = "t"."b" + ?[ WHERE …]`.
    pub fn render(&self, dialect: Dialect) -> Result<Statement, Error> {
        todo!("render an UPDATE")
    }
}

/// `DELETE FROM T WHERE …`.
#[derive(Clone, Debug)]
pub struct Delete<T: Table> {
    filter: Option<Condition<T>>,
}

impl<T: Table> Delete<T> {
    /// A DELETE of every row of `table`, until filtered.
    pub fn from(_table: T) -> Delete<T> {
        Delete { filter: None }
    }

    /// Deletes only the rows `condition` holds for (AND-ed with an earlier filter).
    pub fn filter(mut self, condition: Condition<T>) -> Delete<T> {
        self.filter = Some(match self.filter.take() {
            Some(earlier) => earlier.and(condition),
            None => condition,
        });
        self
    }

    /// `DELETE FROM "t"[ WHERE …]`.
    pub fn render(&self, dialect: Dialect) -> Result<Statement, Error> {
        todo!("render a DELETE")
    }
}
// ANCHOR_END: write
