//! `tandem`: one typed SQL DSL, two execution models — blocking drivers on threads and async drivers on
//! tokio — measured side by side.
//!
//! This facade only re-exports the member crates:
//! - [`sql`] (`tandem-sql`): typed tables, columns and expressions; one AST rendered for SQLite, PostgreSQL
//!   and MySQL/MariaDB, values always bound as parameters.
#![forbid(unsafe_code)]

pub use tandem_sql as sql;
pub use tandem_sql::prelude;
