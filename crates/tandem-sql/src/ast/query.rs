//! Statements: SELECT, INSERT (with upsert and ignore), UPDATE, DELETE, and the [`Statement`] that holds any.

use crate::ident::Ident;
use crate::value::Value;

use super::expr::Expr;
use super::schema::{CreateIndex, CreateTable, DropTable};

/// A table in FROM or JOIN, with an optional alias.
#[derive(Clone, Debug, PartialEq)]
pub struct TableRef {
    /// The table name.
    pub name: Ident,
    /// `AS alias`.
    pub alias: Option<Ident>,
}

impl TableRef {
    /// A table without alias.
    pub fn new(name: Ident) -> Self {
        TableRef { name, alias: None }
    }
}

/// One item of the select list.
#[derive(Clone, Debug, PartialEq)]
pub enum SelectItem {
    /// `*`
    Star,
    /// `table.*`
    TableStar(Ident),
    /// `expr [AS alias]`
    Expr {
        /// The expression.
        expr: Expr,
        /// Its alias.
        alias: Option<Ident>,
    },
}

/// `INNER` or `LEFT` join.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JoinKind {
    /// `INNER JOIN`
    Inner,
    /// `LEFT JOIN`
    Left,
}

/// A join clause.
#[derive(Clone, Debug, PartialEq)]
pub struct Join {
    /// Inner or left.
    pub kind: JoinKind,
    /// The joined table.
    pub table: TableRef,
    /// The `ON` condition.
    pub on: Expr,
}

/// Sort direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// Ascending.
    Asc,
    /// Descending.
    Desc,
}

/// One `ORDER BY` term.
#[derive(Clone, Debug, PartialEq)]
pub struct OrderBy {
    /// What to sort by.
    pub expr: Expr,
    /// Which way.
    pub order: Order,
}

/// A SELECT query.
#[derive(Clone, Debug, PartialEq)]
pub struct Select {
    /// `SELECT DISTINCT`.
    pub distinct: bool,
    /// The select list; empty means `*`.
    pub items: Vec<SelectItem>,
    /// The FROM table.
    pub from: TableRef,
    /// Joins, in order.
    pub joins: Vec<Join>,
    /// WHERE.
    pub filter: Option<Expr>,
    /// GROUP BY.
    pub group_by: Vec<Expr>,
    /// HAVING.
    pub having: Option<Expr>,
    /// ORDER BY.
    pub order_by: Vec<OrderBy>,
    /// LIMIT (bound as a parameter).
    pub limit: Option<u64>,
    /// OFFSET (bound as a parameter).
    pub offset: Option<u64>,
}

impl Select {
    /// `SELECT * FROM table`.
    pub fn from(table: Ident) -> Self {
        Select {
            distinct: false,
            items: Vec::new(),
            from: TableRef::new(table),
            joins: Vec::new(),
            filter: None,
            group_by: Vec::new(),
            having: None,
            order_by: Vec::new(),
            limit: None,
            offset: None,
        }
    }

    /// Adds a condition to WHERE with AND.
    pub fn and_where(&mut self, cond: Expr) {
        Expr::and_into(&mut self.filter, cond);
    }
}

/// What an INSERT inserts.
#[derive(Clone, Debug, PartialEq)]
pub enum InsertSource {
    /// `VALUES (..), (..)`: rows of bound values, each as wide as the column list.
    Values(Vec<Vec<Value>>),
    /// `INSERT .. SELECT ..`
    Select(Box<Select>),
}

/// What happens when a row conflicts with a unique key.
#[derive(Clone, Debug, PartialEq)]
pub enum Conflict {
    /// The statement fails (the default).
    Fail,
    /// The conflicting row is skipped.
    Ignore {
        /// The unique columns that decide a conflict; PostgreSQL and SQLite accept an empty list (any unique
        /// key), MySQL always uses every unique key.
        target: Vec<Ident>,
    },
    /// The existing row is updated.
    Update {
        /// The unique columns that decide a conflict (required on PostgreSQL and SQLite).
        target: Vec<Ident>,
        /// `SET column = expr`; use [`Expr::Excluded`] for the value that was being inserted.
        set: Vec<(Ident, Expr)>,
    },
}

/// How an INSERT reports generated keys.
#[derive(Clone, Debug, PartialEq, Default)]
pub enum Returning {
    /// It does not.
    #[default]
    Nothing,
    /// These columns of each inserted row (`RETURNING`); MySQL can return only the generated key, through
    /// the last insert id (see [`crate::Rendered::generated_key`]).
    Columns(Vec<Ident>),
}

/// An INSERT.
#[derive(Clone, Debug, PartialEq)]
pub struct Insert {
    /// Target table.
    pub table: Ident,
    /// Columns, in the order of each row's values.
    pub columns: Vec<Ident>,
    /// Rows or a query.
    pub source: InsertSource,
    /// Conflict handling.
    pub conflict: Conflict,
    /// Generated keys.
    pub returning: Returning,
}

impl Insert {
    /// `INSERT INTO table (columns) VALUES rows`.
    pub fn values(table: Ident, columns: Vec<Ident>, rows: Vec<Vec<Value>>) -> Self {
        Insert {
            table,
            columns,
            source: InsertSource::Values(rows),
            conflict: Conflict::Fail,
            returning: Returning::Nothing,
        }
    }
}

/// An UPDATE.
#[derive(Clone, Debug, PartialEq)]
pub struct Update {
    /// Target table.
    pub table: Ident,
    /// `SET column = expr`, at least one.
    pub set: Vec<(Ident, Expr)>,
    /// WHERE; `None` updates every row.
    pub filter: Option<Expr>,
}

/// A DELETE.
#[derive(Clone, Debug, PartialEq)]
pub struct Delete {
    /// Target table.
    pub table: Ident,
    /// WHERE; `None` deletes every row.
    pub filter: Option<Expr>,
}

/// Any statement tandem renders.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Statement {
    /// SELECT.
    Select(Select),
    /// INSERT.
    Insert(Insert),
    /// UPDATE.
    Update(Update),
    /// DELETE.
    Delete(Delete),
    /// CREATE TABLE.
    CreateTable(CreateTable),
    /// CREATE INDEX.
    CreateIndex(CreateIndex),
    /// DROP TABLE.
    DropTable(DropTable),
}

macro_rules! statement_from {
    ($($t:ident),*) => {$(
        impl From<$t> for Statement {
            fn from(s: $t) -> Statement {
                Statement::$t(s)
            }
        }
    )*};
}
statement_from!(
    Select,
    Insert,
    Update,
    Delete,
    CreateTable,
    CreateIndex,
    DropTable
);
