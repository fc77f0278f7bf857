//! Typed UPDATE and DELETE: one table, assignments of matching kinds, filters over that table.

use std::marker::PhantomData;

use super::expr::{AsExpr, Expression};
use super::sources::AllIn;
use super::table::{Column, Table};
use crate::ast;
use crate::dialect::Dialect;
use crate::error::Result;
use crate::kind;
use crate::render::{Render, Rendered};

/// `UPDATE table …`
pub fn update<T: Table>(_table: T) -> UpdateQuery<T> {
    UpdateQuery {
        ast: ast::Update {
            table: T::NAME,
            set: Vec::new(),
            filter: None,
        },
        _table: PhantomData,
    }
}

/// `DELETE FROM table …`
pub fn delete_from<T: Table>(_table: T) -> DeleteQuery<T> {
    DeleteQuery {
        ast: ast::Delete {
            table: T::NAME,
            filter: None,
        },
        _table: PhantomData,
    }
}

/// An UPDATE under construction.
#[derive(Debug, Clone)]
pub struct UpdateQuery<T> {
    ast: ast::Update,
    _table: PhantomData<fn() -> T>,
}

impl<T: Table> UpdateQuery<T> {
    /// `SET column = value`, where the value is of the column's kind and reads only this table.
    pub fn set<C, V, I>(mut self, _column: C, value: V) -> Self
    where
        C: Column<Table = T>,
        V: AsExpr<C::Kind>,
        V::Sources: AllIn<(T, ()), I>,
    {
        self.ast.set.push((C::NAME, value.into_expr()));
        self
    }
}

/// A DELETE under construction.
#[derive(Debug, Clone)]
pub struct DeleteQuery<T> {
    ast: ast::Delete,
    _table: PhantomData<fn() -> T>,
}

/// What UPDATE and DELETE have alike: a filter over their one table, the untyped statement, rendering.
macro_rules! one_table_write {
    ($query:ident, $ast:ident, $done:literal) => {
        impl<T: Table> $query<T> {
            #[doc = concat!("`WHERE cond`; called again, joined with AND. Without a filter every row is ", $done, ".")]
            pub fn filter<E, I>(mut self, cond: E) -> Self
            where
                E: Expression<Kind = kind::Bool>,
                E::Sources: AllIn<(T, ()), I>,
            {
                ast::Expr::and_into(&mut self.ast.filter, cond.into_ast());
                self
            }

            /// The untyped statement. A `Result`, as every typed statement's `into_ast` is: building
            /// this one cannot fail today, building a SELECT can (an invalid alias), and a caller need
            /// not know which.
            pub fn into_ast(self) -> Result<ast::$ast> {
                Ok(self.ast)
            }
        }

        impl<T> Render for $query<T> {
            fn render(&self, dialect: Dialect) -> Result<Rendered> {
                self.ast.render(dialect)
            }
        }
    };
}
one_table_write!(UpdateQuery, Update, "updated");
one_table_write!(DeleteQuery, Delete, "deleted");
