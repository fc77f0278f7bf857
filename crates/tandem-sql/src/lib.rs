//! `tandem-sql`: tandem's typed SQL DSL. One AST, rendered for SQLite, PostgreSQL and MySQL/MariaDB, with
//! values always bound as parameters. No I/O and no driver: the blocking and async executors, the batch job,
//! the benchmark and the browser playground all build on it.
//!
//! # Layout
//! - [`ident`]: validated identifiers; [`value`]: bound values, SQL types and Rust conversions;
//!   [`kind`]: compile-time kind markers.
//! - [`ast`]: the untyped statements, plain data that knows no dialect.
//! - [`dialect`]: the three engines, each a small set of rules; [`render`]: the one walk that writes SQL text
//!   and collects parameters; [`batch`]: multi-row INSERTs split to each engine's parameter limit.
//! - [`typed`]: tables, columns and expressions checked by the compiler, producing the AST;
//!   `#[derive(Table)]` declares them.
//! - [`row`]: result rows and decoding into tuples and entities, shared by both executors.
//!
//! # Example
//! ```
//! use tandem_sql::prelude::*;
//!
//! #[derive(Table, Debug, Clone, PartialEq)]
//! #[table(name = "users")]
//! pub struct User {
//!     #[column(primary_key, auto_increment)]
//!     pub id: i64,
//!     #[column(varchar = 100)]
//!     pub name: String,
//!     pub age: i32,
//!     pub email: Option<String>,
//! }
//!
//! let query = users::table
//!     .select((users::id, users::name))
//!     .filter(users::age.ge(18).and(users::email.is_not_null()))
//!     .order_by(users::name.asc())
//!     .limit(10);
//! let pg = query.render(Dialect::Postgres).unwrap();
//! assert_eq!(
//!     pg.sql,
//!     r#"SELECT "users"."id", "users"."name" FROM "users" WHERE ("users"."age" >= $1) AND ("users"."email" IS NOT NULL) ORDER BY "users"."name" ASC LIMIT $2"#
//! );
//! assert_eq!(pg.params, vec![Value::I32(18), Value::I64(10)]);
//! ```
#![forbid(unsafe_code)]

/// Calls `$m!` once per tuple width: `each_tuple!(m; ; A, B, C)` is `m!(A); m!(A, B); m!(A, B, C);`, and
/// names before the first `;` start every list (`each_tuple!(m; A; B, C)` is `m!(A, B); m!(A, B, C);`).
macro_rules! each_tuple {
    ($m:ident; $($done:ident),* ; $next:ident $(, $rest:ident)*) => {
        $m!($($done,)* $next);
        each_tuple!($m; $($done,)* $next ; $($rest),*);
    };
    ($m:ident; $($done:ident),* ; ) => {};
}

/// [`each_tuple!`] over pairs of names (a type and its companion): `each_pair_tuple!(m; ; A IA, B IB)` is
/// `m!(A IA); m!(A IA, B IB);`.
macro_rules! each_pair_tuple {
    ($m:ident; $($d:ident $dd:ident),* ; $n:ident $nn:ident $(, $r:ident $rr:ident)*) => {
        $m!($($d $dd,)* $n $nn);
        each_pair_tuple!($m; $($d $dd,)* $n $nn ; $($r $rr),*);
    };
    ($m:ident; $($d:ident $dd:ident),* ; ) => {};
}

pub mod ast;
pub mod batch;
pub mod dialect;
mod error;
pub mod ident;
pub mod kind;
pub mod render;
pub mod row;
pub mod typed;
pub mod value;

pub use dialect::Dialect;
pub use error::{Error, Result, ValueError};
pub use ident::Ident;
pub use render::{GeneratedKey, RawSql, Render, Rendered, raw};
pub use row::{Cells, FromRow, Row};
pub use tandem_macros::Table;
pub use typed::{Column, Entity, Table};
pub use value::{SqlType, SqlValue, Value, ValueRef};

/// Everything a query-writing module needs: `use tandem_sql::prelude::*;`.
pub mod prelude {
    pub use crate::typed::{
        AliasMethods, AsExpr, BoolMethods, Column, Entity, ExprMethods, Expression, Table,
        TableMethods, avg, coalesce, count, count_distinct, count_star, delete_from, exists,
        insert_into, length, lower, max, min, not_exists, sum, update, upper,
    };
    pub use crate::{Dialect, FromRow, Render, Rendered, Row, SqlValue, Value};
    pub use tandem_macros::Table;
}

/// Items `#[derive(Table)]` expands to; not part of the public API.
#[doc(hidden)]
pub mod __private {
    pub use crate::ast::{ColumnDef, DefaultValue, IndexDef, TableSchema};
    pub use crate::typed::{__column_arith, NumericRhs};
    pub use std::sync::OnceLock;
}
