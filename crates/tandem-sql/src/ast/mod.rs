//! The untyped AST: plain data that knows no dialect.
//!
//! The typed layer ([`crate::typed`]) builds these values; code that learns its schema at run time (the
//! playground, the batch reader over any table) builds them directly. Either way one renderer per dialect turns
//! them into SQL text and bound parameters.

mod expr;
mod query;
mod schema;

pub use expr::{BinaryOp, ColumnRef, Expr, Function};
pub use query::{
    Conflict, Delete, Insert, InsertSource, Join, JoinKind, Order, OrderBy, Returning, Select,
    SelectItem, Statement, TableRef, Update,
};
pub use schema::{
    ColumnDef, CreateIndex, CreateTable, DefaultValue, DropTable, IndexDef, MySqlCollation,
    TableSchema,
};
