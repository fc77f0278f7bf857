//! The typed SELECT builder. `QS` is the type-level list of the query's tables (FROM and JOINs, plus the outer
//! tables a correlated subquery may read); `Out` the kinds of the select list; `Outer` the outer tables.

use std::marker::PhantomData;

use super::expr::{Expression, Ordering};
use super::sources::{AllIn, LeftJoined, PathNull};
use super::table::Table;
use crate::ast::{self, JoinKind, SelectItem, TableRef};
use crate::dialect::Dialect;
use crate::error::{Error, Result};
use crate::ident::Ident;
use crate::kind::{self, Cell, Kind, Nullability};
use crate::render::{Render, Rendered};

/// The phantom marker carrying a query's type-level parameters.
type Marker<QS, Out, Outer> = PhantomData<fn() -> (QS, Out, Outer)>;

/// A SELECT under construction; render it, or hand it to an executor.
pub struct SelectQuery<QS, Out = (), Outer = ()> {
    ast: ast::Select,
    /// The first error met while building (an invalid alias); reported when rendered.
    pending: Option<Error>,
    _types: Marker<QS, Out, Outer>,
}

impl<QS, Out, Outer> Clone for SelectQuery<QS, Out, Outer> {
    fn clone(&self) -> Self {
        SelectQuery {
            ast: self.ast.clone(),
            pending: self.pending.clone(),
            _types: PhantomData,
        }
    }
}

impl<QS, Out, Outer> std::fmt::Debug for SelectQuery<QS, Out, Outer> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.ast.fmt(f)
    }
}

/// The output of `SELECT *` from one table: loadable as the table's entity.
pub struct All<T>(PhantomData<fn() -> T>);

impl<T: Table> SelectQuery<(T, ()), All<T>> {
    pub(crate) fn from_table() -> Self {
        SelectQuery {
            ast: ast::Select::from(T::NAME),
            pending: None,
            _types: PhantomData,
        }
    }
}

impl<QS, Out, Outer> SelectQuery<QS, Out, Outer> {
    fn retype<QS2, Out2, Outer2>(self) -> SelectQuery<QS2, Out2, Outer2> {
        SelectQuery {
            ast: self.ast,
            pending: self.pending,
            _types: PhantomData,
        }
    }

    /// Chooses the select list: one expression, an [`Aliased`] one, or a tuple of them.
    pub fn select<L, I>(mut self, list: L) -> SelectQuery<QS, L::Cells, Outer>
    where
        L: SelectList<QS, I>,
    {
        self.ast.items = list.items(&mut self.pending);
        self.retype()
    }

    /// `WHERE cond`; called again, the conditions are joined with AND.
    pub fn filter<E, I>(mut self, cond: E) -> Self
    where
        E: Expression<Kind = kind::Bool>,
        E::Sources: AllIn<QS, I>,
    {
        self.ast.and_where(cond.into_ast());
        self
    }

    /// `INNER JOIN table ON cond`
    pub fn inner_join<T, E, I>(self, table: T, on: E) -> SelectQuery<(T, QS), Out::Joined, Outer>
    where
        T: Table,
        E: Expression<Kind = kind::Bool>,
        E::Sources: AllIn<(T, QS), I>,
        Out: JoinOut,
    {
        self.join(JoinKind::Inner, table, on)
    }

    /// `LEFT JOIN table ON cond`; the joined table's columns read as NULL where nothing matched, so they
    /// are nullable in the query's type: a typed load reads them into `Option`s.
    pub fn left_join<T, E, I>(
        self,
        table: T,
        on: E,
    ) -> SelectQuery<(LeftJoined<T>, QS), Out::Joined, Outer>
    where
        T: Table,
        E: Expression<Kind = kind::Bool>,
        E::Sources: AllIn<(LeftJoined<T>, QS), I>,
        Out: JoinOut,
    {
        self.join(JoinKind::Left, table, on)
    }

    fn join<T: Table, J, E: Expression>(
        mut self,
        kind: JoinKind,
        _: T,
        on: E,
    ) -> SelectQuery<(J, QS), Out::Joined, Outer>
    where
        Out: JoinOut,
    {
        self.ast.joins.push(ast::Join {
            kind,
            table: TableRef::new(T::NAME),
            on: on.into_ast(),
        });
        self.retype()
    }

    /// Lets this query, used as a subquery, read columns of the enclosing query's table `T`
    /// (`EXISTS (SELECT .. WHERE orders.user_id = users.id)`).
    pub fn correlated_with<T: Table>(self, _outer: T) -> SelectQuery<(T, QS), Out, (T, Outer)> {
        self.retype()
    }

    /// `ORDER BY term`; called again, adds a further term.
    pub fn order_by<S, I>(mut self, term: Ordering<S>) -> Self
    where
        S: AllIn<QS, I>,
    {
        self.ast.order_by.push(term.term);
        self
    }

    /// `GROUP BY expr`; called again, adds a further expression.
    pub fn group_by<E, I>(mut self, e: E) -> Self
    where
        E: Expression,
        E::Sources: AllIn<QS, I>,
    {
        self.ast.group_by.push(e.into_ast());
        self
    }

    /// `HAVING cond`; called again, joined with AND.
    pub fn having<E, I>(mut self, cond: E) -> Self
    where
        E: Expression<Kind = kind::Bool>,
        E::Sources: AllIn<QS, I>,
    {
        let cond = cond.into_ast();
        ast::Expr::and_into(&mut self.ast.having, cond);
        self
    }

    /// `SELECT DISTINCT`
    pub fn distinct(mut self) -> Self {
        self.ast.distinct = true;
        self
    }

    /// `LIMIT n`
    pub fn limit(mut self, n: u64) -> Self {
        self.ast.limit = Some(n);
        self
    }

    /// `OFFSET n`
    pub fn offset(mut self, n: u64) -> Self {
        self.ast.offset = Some(n);
        self
    }

    /// The untyped query (an error met while building is returned here).
    pub fn into_ast(self) -> Result<ast::Select> {
        match self.pending {
            Some(e) => Err(e),
            None => Ok(self.ast),
        }
    }

    /// The untyped query, borrowed.
    pub fn as_ast(&self) -> &ast::Select {
        &self.ast
    }
}

impl<QS, Out, Outer> Render for SelectQuery<QS, Out, Outer> {
    fn render(&self, dialect: Dialect) -> Result<Rendered> {
        if let Some(e) = &self.pending {
            return Err(e.clone());
        }
        self.ast.render(dialect)
    }
}

/// A query usable as a subquery: its one selected kind and the outer tables it reads.
pub trait Subquery {
    /// The kind of the single selected column (`()` when it selects several or `*`).
    type Kind;
    /// Outer tables read by a correlated subquery.
    type Outer;
    /// The untyped query.
    fn into_select(self) -> ast::Select;
}

impl<QS, Out: SingleKind, Outer> Subquery for SelectQuery<QS, Out, Outer> {
    type Kind = Out::Kind;
    type Outer = Outer;
    fn into_select(self) -> ast::Select {
        // An invalid alias inside a subquery surfaces as an invalid identifier when the outer query renders.
        self.ast
    }
}

/// The kind of a one-column select list; `()` (for `*` or several columns) has the unit kind and is usable
/// with `EXISTS` only.
#[doc(hidden)]
pub trait SingleKind {
    type Kind;
}
impl SingleKind for () {
    type Kind = ();
}
impl<T> SingleKind for All<T> {
    type Kind = ();
}
impl<K: Kind, N> SingleKind for (Cell<K, N>,) {
    type Kind = K;
}

/// A query's output once another table is joined: `SELECT *` of one table is no longer one entity; a
/// chosen select list stays what it is.
#[doc(hidden)]
pub trait JoinOut {
    type Joined;
}
impl JoinOut for () {
    type Joined = ();
}
impl<T> JoinOut for All<T> {
    type Joined = ();
}
macro_rules! join_out {
    ($($k:ident),+) => {
        impl<$($k),+> JoinOut for ($($k,)+) {
            type Joined = Self;
        }
    };
}
each_tuple!(join_out; ; A, B, C, D, E, F, G, H);
macro_rules! multi_kind {
    ($($k:ident),+) => {
        impl<$($k),+> SingleKind for ($($k),+) {
            type Kind = ();
        }
    };
}
each_tuple!(multi_kind; A; B, C, D, E, F, G, H);

/// An expression with `AS alias`.
pub struct Aliased<E> {
    expr: E,
    alias: &'static str,
}

/// `expr AS alias` for the select list.
pub trait AliasMethods: Expression {
    /// Names the selected expression.
    fn alias(self, alias: &'static str) -> Aliased<Self> {
        Aliased { expr: self, alias }
    }
}
impl<E: Expression> AliasMethods for E {}

/// A select list: one item or a tuple of items, each reading only tables of `QS`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a select list for this query",
    label = "select columns or expressions of the query's tables, or a tuple of them (up to 8)"
)]
pub trait SelectList<QS, I> {
    /// The kinds of the items, as a tuple.
    type Kinds;
    /// The kinds and nullability of the items, as a tuple of [`Cell`]s.
    type Cells;
    /// The untyped items; an invalid alias is recorded in `pending`.
    fn items(self, pending: &mut Option<Error>) -> Vec<SelectItem>;
}

/// One item of a select list.
#[doc(hidden)]
pub trait SelectItemOf<QS, I> {
    type Kind;
    type Cell;
    fn item(self, pending: &mut Option<Error>) -> SelectItem;
}

impl<QS, I, E> SelectItemOf<QS, I> for E
where
    E: Expression,
    E::Sources: AllIn<QS, I>,
    I: PathNull,
{
    type Kind = E::Kind;
    type Cell = Cell<E::Kind, <E::Null as Nullability>::Or<I::Null>>;
    fn item(self, _: &mut Option<Error>) -> SelectItem {
        SelectItem::Expr {
            expr: self.into_ast(),
            alias: None,
        }
    }
}

impl<QS, I, E> SelectItemOf<QS, I> for Aliased<E>
where
    E: Expression,
    E::Sources: AllIn<QS, I>,
    I: PathNull,
{
    type Kind = E::Kind;
    type Cell = Cell<E::Kind, <E::Null as Nullability>::Or<I::Null>>;
    fn item(self, pending: &mut Option<Error>) -> SelectItem {
        let alias = match Ident::new(self.alias) {
            Ok(a) => Some(a),
            Err(e) => {
                pending.get_or_insert(e);
                None
            }
        };
        SelectItem::Expr {
            expr: self.expr.into_ast(),
            alias,
        }
    }
}

impl<QS, I, E: SelectItemOf<QS, I>> SelectList<QS, (I,)> for E {
    type Kinds = (E::Kind,);
    type Cells = (E::Cell,);
    fn items(self, pending: &mut Option<Error>) -> Vec<SelectItem> {
        vec![self.item(pending)]
    }
}

macro_rules! select_tuple {
    ($($t:ident $i:ident),+) => {
        impl<QS, $($t, $i),+> SelectList<QS, ($($i,)+ ())> for ($($t,)+)
        where
            $($t: SelectItemOf<QS, $i>),+
        {
            type Kinds = ($($t::Kind,)+);
            type Cells = ($($t::Cell,)+);
            #[allow(non_snake_case)]
            fn items(self, pending: &mut Option<Error>) -> Vec<SelectItem> {
                let ($($t,)+) = self;
                vec![$($t.item(pending)),+]
            }
        }
    };
}
each_pair_tuple!(select_tuple; ; A IA, B IB, C IC, D ID, E IE, F IF, G IG, H IH);
