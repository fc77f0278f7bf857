//! The typed INSERT builder: columns of one table, rows whose values match the columns' kinds, entities,
//! conflict handling and generated keys.

use std::marker::PhantomData;

use super::expr::AsValue;
use super::table::{Column, Entity, Table};
use crate::ast::{self, Conflict, Expr, InsertSource, Returning};
use crate::dialect::Dialect;
use crate::error::Result;
use crate::ident::Ident;
use crate::render::{Render, Rendered};
use crate::value::Value;

/// `INSERT INTO table …`
pub fn insert_into<T: Table>(_table: T) -> InsertQuery<T, ()> {
    InsertQuery {
        ast: ast::Insert::values(T::NAME, Vec::new(), Vec::new()),
        _types: PhantomData,
    }
}

/// An INSERT under construction. `Kinds` are the kinds of the chosen columns, which every row must match.
pub struct InsertQuery<T, Kinds> {
    ast: ast::Insert,
    _types: PhantomData<fn() -> (T, Kinds)>,
}

impl<T, K> Clone for InsertQuery<T, K> {
    fn clone(&self) -> Self {
        InsertQuery {
            ast: self.ast.clone(),
            _types: PhantomData,
        }
    }
}

impl<T, K> std::fmt::Debug for InsertQuery<T, K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.ast.fmt(f)
    }
}

impl<T: Table> InsertQuery<T, ()> {
    /// Chooses the columns (one column or a tuple of columns of this table).
    pub fn columns<C: ColumnList<T>>(self, columns: C) -> InsertQuery<T, C::Kinds> {
        let mut ast = self.ast;
        ast.columns = C::names(columns);
        InsertQuery {
            ast,
            _types: PhantomData,
        }
    }

    /// One entity: its insertable columns (all but a generated key).
    pub fn entity<E: Entity<Table = T>>(self, entity: &E) -> InsertQuery<T, ()> {
        self.entities(std::iter::once(entity))
    }

    /// Many entities, as one multi-row INSERT (split it with [`ast::Insert::into_chunks`]).
    pub fn entities<'a, E, I>(self, entities: I) -> InsertQuery<T, ()>
    where
        E: Entity<Table = T> + 'a,
        I: IntoIterator<Item = &'a E>,
    {
        let mut ast = self.ast;
        ast.columns = E::insert_columns().to_vec();
        let rows = entities.into_iter().map(Entity::insert_values).collect();
        ast.source = InsertSource::Values(rows);
        InsertQuery {
            ast,
            _types: PhantomData,
        }
    }
}

impl<T: Table, K> InsertQuery<T, K> {
    /// Adds one row of values matching the columns' kinds.
    pub fn values<R: RowValues<K>>(mut self, row: R) -> Self {
        if let InsertSource::Values(rows) = &mut self.ast.source {
            rows.push(row.into_values());
        }
        self
    }

    /// Adds many rows.
    pub fn rows<R: RowValues<K>, I: IntoIterator<Item = R>>(mut self, rows: I) -> Self {
        if let InsertSource::Values(existing) = &mut self.ast.source {
            existing.extend(rows.into_iter().map(RowValues::into_values));
        }
        self
    }

    /// Skips rows that conflict with any unique key (`ON CONFLICT DO NOTHING`; on MySQL a no-op
    /// `ON DUPLICATE KEY UPDATE`, which unlike `INSERT IGNORE` keeps other errors errors).
    pub fn on_conflict_do_nothing(mut self) -> Self {
        self.ast.conflict = Conflict::Ignore { target: Vec::new() };
        self
    }

    /// On a conflict over `target` (a unique column or tuple of them), updates `columns` to the values that
    /// were being inserted: an upsert.
    pub fn on_conflict_update<Tg: ColumnList<T>, U: ColumnList<T>>(
        mut self,
        target: Tg,
        columns: U,
    ) -> Self {
        let set = U::names(columns)
            .into_iter()
            .map(|c| (c.clone(), Expr::Excluded(c)))
            .collect();
        self.ast.conflict = Conflict::Update {
            target: Tg::names(target),
            set,
        };
        self
    }

    /// Returns the generated key of each row: `RETURNING key` where the engine has it, the last insert id on
    /// MySQL (see [`crate::GeneratedKey`]).
    pub fn returning<C: Column<Table = T>>(mut self, _key: C) -> Self {
        self.ast.returning = Returning::Columns(vec![C::NAME]);
        self
    }

    /// The untyped statement. A `Result`, as every typed statement's `into_ast` is: building a
    /// `INSERT` cannot fail today, building a SELECT can (an invalid alias), and a caller need not
    /// know which.
    pub fn into_ast(self) -> Result<ast::Insert> {
        Ok(self.ast)
    }
}

impl<T, K> Render for InsertQuery<T, K> {
    fn render(&self, dialect: Dialect) -> Result<Rendered> {
        self.ast.render(dialect)
    }
}

/// One column or a tuple of columns, all of table `T`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a list of columns of table `{T}`",
    label = "name columns of the table being written, alone or in a tuple (up to 12)"
)]
pub trait ColumnList<T> {
    /// The columns' kinds, as a tuple.
    type Kinds;
    /// The column names.
    fn names(self) -> Vec<Ident>;
}

impl<T: Table, C: Column<Table = T>> ColumnList<T> for C {
    type Kinds = (C::Kind,);
    fn names(self) -> Vec<Ident> {
        vec![C::NAME]
    }
}

/// A row of Rust values matching the kinds `K` of the chosen columns.
#[diagnostic::on_unimplemented(
    message = "`{Self}` does not match the INSERT's columns",
    label = "give one value per column, in column order, each of the column's type"
)]
pub trait RowValues<K> {
    /// The bound values.
    fn into_values(self) -> Vec<Value>;
}

impl<K, V: AsValue<K>> RowValues<(K,)> for V {
    fn into_values(self) -> Vec<Value> {
        vec![self.into_value()]
    }
}

macro_rules! tuples {
    ($($c:ident $k:ident),+) => {
        impl<T: Table, $($c: Column<Table = T>),+> ColumnList<T> for ($($c,)+) {
            type Kinds = ($($c::Kind,)+);
            fn names(self) -> Vec<Ident> {
                vec![$($c::NAME),+]
            }
        }
        impl<$($k, $c: AsValue<$k>),+> RowValues<($($k,)+)> for ($($c,)+) {
            #[allow(non_snake_case)]
            fn into_values(self) -> Vec<Value> {
                let ($($c,)+) = self;
                vec![$($c.into_value()),+]
            }
        }
    };
}
each_pair_tuple!(tuples; A KA; B KB, C KC, D KD, E KE, F KF, G KG, H KH, I KI, J KJ, L KL, M KM);
