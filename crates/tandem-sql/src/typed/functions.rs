//! SQL functions as typed expressions: aggregates (`count`, `sum`, `avg`, `min`, `max`), text functions,
//! `coalesce`, and `EXISTS` over a subquery.

use super::expr::{AsExpr, Both, Expression, SqlExpr};
use super::select::Subquery;
use super::sources::Concat;
use crate::ast::{self, Function};
use crate::kind::{self, Kind, Numeric, Ordered};

fn call<K, S>(func: Function, arg: ast::Expr, distinct: bool) -> SqlExpr<K, S> {
    SqlExpr::from_ast(ast::Expr::Call {
        func,
        args: vec![arg],
        distinct,
    })
}

/// `COUNT(*)`, a `BIGINT` on every engine.
pub fn count_star() -> SqlExpr<kind::BigInt, (), kind::NotNull> {
    SqlExpr::from_ast(ast::Expr::CountStar)
}

/// `COUNT(expr)`: rows where `expr` is not NULL (never NULL itself).
pub fn count<E: Expression>(e: E) -> SqlExpr<kind::BigInt, E::Sources, kind::NotNull> {
    never_null(call(Function::Count, e.into_ast(), false))
}

/// `COUNT(DISTINCT expr)`
pub fn count_distinct<E: Expression>(e: E) -> SqlExpr<kind::BigInt, E::Sources, kind::NotNull> {
    never_null(call(Function::Count, e.into_ast(), true))
}

fn never_null<K, S>(e: SqlExpr<K, S>) -> SqlExpr<K, S, kind::NotNull> {
    SqlExpr::from_ast(e.ast)
}

/// `SUM(expr)`, cast so every engine returns the same type (PostgreSQL sums `BIGINT` into `NUMERIC`, MySQL
/// into `DECIMAL`): integers sum to `BIGINT`, floats to `DOUBLE`. NULL over no rows.
pub fn sum<E: Expression>(e: E) -> SqlExpr<<E::Kind as Numeric>::Sum, E::Sources>
where
    E::Kind: Numeric,
{
    cast(call::<<E::Kind as Numeric>::Sum, E::Sources>(
        Function::Sum,
        e.into_ast(),
        false,
    ))
}

/// `AVG(expr)` as a `DOUBLE`. NULL over no rows.
pub fn avg<E: Expression>(e: E) -> SqlExpr<kind::Double, E::Sources>
where
    E::Kind: Numeric,
{
    cast(call::<kind::Double, E::Sources>(
        Function::Avg,
        e.into_ast(),
        false,
    ))
}

/// `MIN(expr)`. NULL over no rows.
pub fn min<E: Expression>(e: E) -> SqlExpr<E::Kind, E::Sources>
where
    E::Kind: Ordered,
{
    call(Function::Min, e.into_ast(), false)
}

/// `MAX(expr)`. NULL over no rows.
pub fn max<E: Expression>(e: E) -> SqlExpr<E::Kind, E::Sources>
where
    E::Kind: Ordered,
{
    call(Function::Max, e.into_ast(), false)
}

/// `UPPER(expr)`
pub fn upper<E: Expression<Kind = kind::Text>>(e: E) -> SqlExpr<kind::Text, E::Sources> {
    call(Function::Upper, e.into_ast(), false)
}

/// `LOWER(expr)`
pub fn lower<E: Expression<Kind = kind::Text>>(e: E) -> SqlExpr<kind::Text, E::Sources> {
    call(Function::Lower, e.into_ast(), false)
}

/// Length in characters (`LENGTH`, or `CHAR_LENGTH` on MySQL).
pub fn length<E: Expression<Kind = kind::Text>>(e: E) -> SqlExpr<kind::BigInt, E::Sources> {
    cast(call::<kind::BigInt, E::Sources>(
        Function::Length,
        e.into_ast(),
        false,
    ))
}

/// `COALESCE(expr, fallback)`
pub fn coalesce<E, F>(e: E, fallback: F) -> Both<E::Kind, E::Sources, F::Sources>
where
    E: Expression,
    F: AsExpr<E::Kind>,
    E::Sources: Concat<F::Sources>,
{
    SqlExpr::from_ast(ast::Expr::call(
        Function::Coalesce,
        vec![e.into_ast(), fallback.into_expr()],
    ))
}

/// `EXISTS (subquery)`; a correlated subquery passes its outer tables on to the enclosing query's check.
pub fn exists<Q: Subquery>(query: Q) -> SqlExpr<kind::Bool, Q::Outer> {
    SqlExpr::from_ast(ast::Expr::Exists {
        query: Box::new(query.into_select()),
        negated: false,
    })
}

/// `NOT EXISTS (subquery)`
pub fn not_exists<Q: Subquery>(query: Q) -> SqlExpr<kind::Bool, Q::Outer> {
    SqlExpr::from_ast(ast::Expr::Exists {
        query: Box::new(query.into_select()),
        negated: true,
    })
}

/// Wraps in `CAST(.. AS <K>)` so the result type is the same on every engine.
fn cast<K: Kind, S>(e: SqlExpr<K, S>) -> SqlExpr<K, S> {
    SqlExpr::from_ast(ast::Expr::Cast {
        expr: Box::new(e.ast),
        ty: K::SQL_TYPE,
    })
}
