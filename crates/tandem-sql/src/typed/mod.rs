//! The typed layer: tables and columns declared once, expressions whose kinds and tables are checked by the
//! compiler, and builders that produce the plain [`crate::ast`].
//!
//! Two guarantees, each pinned by a compile-fail test:
//! - an expression of one kind is compared with, assigned or inserted as a value of the same kind only
//!   (`users::age.eq("x")` does not compile when `age` is an `i32`);
//! - a query uses columns of the tables in its FROM and JOIN clauses only (a filter on `orders::id` in a query
//!   over `users` does not compile);
//! - a typed load ([`Load`]) reads a query only into a Rust type whose columns have the query's kinds, and a
//!   column that may be NULL (an `Option` field, any column of a LEFT JOINed table, a computed expression
//!   other than `COUNT`) only into an `Option`.
//!
//! The second works with type-level lists: every expression carries the list of tables it reads
//! (`Sources`), every query the list of tables it has (`QS`), and [`AllIn`] proves the first is contained in
//! the second — the index `I` is found by the compiler, never written by the user.

mod expr;
mod functions;
mod insert;
mod load;
mod select;
mod sources;
mod table;
mod write;

#[doc(hidden)]
pub use expr::{__column_arith, NumericRhs};
pub use expr::{
    AsExpr, AsValue, BoolMethods, ExprMethods, Expression, Ordering, SqlExpr, escape_like,
};
pub use functions::{
    avg, coalesce, count, count_distinct, count_star, exists, length, lower, max, min, not_exists,
    sum, upper,
};
pub use insert::{ColumnList, InsertQuery, RowValues, insert_into};
pub use load::{Load, LoadCell};
pub use select::{AliasMethods, Aliased, All, SelectList, SelectQuery, Subquery};
pub use sources::{AllIn, Concat, HasTable, Here, HereOuter, LeftJoined, There};
pub use table::{Column, Entity, Table, TableMethods};
pub use write::{DeleteQuery, UpdateQuery, delete_from, update};
