//! Typed expressions: [`Expression`] (kind + tables read), values that stand in for expressions of a kind
//! ([`AsExpr`]), the comparison and logic methods, arithmetic operators, and SQL functions.

use std::marker::PhantomData;
use std::ops;

use super::select::Subquery;
use super::sources::Concat;
use super::table::Column;
use crate::ast::{self, BinaryOp};
use crate::kind::{self, Kind, Numeric, Ordered};
use crate::value::Value;

/// A typed SQL expression: it has a kind, reads a list of tables, and lowers to an [`ast::Expr`].
pub trait Expression: Sized {
    /// The SQL kind of its result.
    type Kind: Kind;
    /// Whether it may be NULL (not counting a LEFT JOIN, which the query knows).
    type Null: kind::Nullability;
    /// The tables it reads, as a type-level list.
    type Sources;
    /// The untyped expression.
    fn into_ast(self) -> ast::Expr;
}

impl<C: Column> Expression for C {
    type Kind = C::Kind;
    type Null = <C::Value as crate::SqlValue>::Null;
    type Sources = (C::Table, ());
    fn into_ast(self) -> ast::Expr {
        ast::Expr::qualified(<C::Table as super::Table>::NAME, C::NAME)
    }
}

/// An expression built by the typed layer: the AST it stands for, with its kind and tables in the type.
///
/// `N` is whether it may be NULL ([`kind::Nullable`], the default, for every computed expression but
/// `COUNT`).
pub struct SqlExpr<K, S, N = kind::Nullable> {
    pub(super) ast: ast::Expr,
    _types: PhantomData<ExprTypes<K, S, N>>,
}

/// The phantom marker of an expression's kind, tables and nullability.
type ExprTypes<K, S, N> = fn() -> (K, S, N);

impl<K, S, N> SqlExpr<K, S, N> {
    /// Wraps an untyped expression, asserting its kind and tables (for extensions of the typed layer).
    pub fn from_ast(ast: ast::Expr) -> Self {
        SqlExpr {
            ast,
            _types: PhantomData,
        }
    }
}

impl<K, S, N> Clone for SqlExpr<K, S, N> {
    fn clone(&self) -> Self {
        SqlExpr::from_ast(self.ast.clone())
    }
}

impl<K, S, N> std::fmt::Debug for SqlExpr<K, S, N> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.ast.fmt(f)
    }
}

impl<K: Kind, S, N: kind::Nullability> Expression for SqlExpr<K, S, N> {
    type Kind = K;
    type Sources = S;
    type Null = N;
    fn into_ast(self) -> ast::Expr {
        self.ast
    }
}

/// Something usable where an expression of kind `K` is expected: an expression of that kind, or a Rust value
/// of a matching type (bound as a parameter).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be used as an SQL `{K}` expression",
    label = "expected a value or expression of SQL kind `{K}`",
    note = "compare and assign values of the column's own type: an integer column takes integers, a text column strings"
)]
pub trait AsExpr<K> {
    /// Tables read (none for a plain value).
    type Sources;
    /// The untyped expression.
    fn into_expr(self) -> ast::Expr;
}

impl<E: Expression> AsExpr<E::Kind> for E {
    type Sources = E::Sources;
    fn into_expr(self) -> ast::Expr {
        self.into_ast()
    }
}

/// A Rust value insertable into a column of kind `K`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be stored in a column of SQL kind `{K}`",
    label = "expected a value of SQL kind `{K}`"
)]
pub trait AsValue<K> {
    /// The bound value.
    fn into_value(self) -> Value;
}

// Concrete impls (no blanket over `SqlValue`) so that an integer literal infers the column's width:
// `users::id.eq(5)` picks `i64` because only `i64` is `AsExpr<BigInt>`.
macro_rules! value_kinds {
    ($($t:ty => $k:ident),* $(,)?) => {$(
        impl AsExpr<kind::$k> for $t {
            type Sources = ();
            fn into_expr(self) -> ast::Expr {
                ast::Expr::Value(Value::from(self))
            }
        }
        impl AsExpr<kind::$k> for Option<$t> {
            type Sources = ();
            fn into_expr(self) -> ast::Expr {
                ast::Expr::Value(self.map_or(Value::Null(<kind::$k as Kind>::SQL_TYPE), Value::from))
            }
        }
        impl AsValue<kind::$k> for $t {
            fn into_value(self) -> Value {
                Value::from(self)
            }
        }
        impl AsValue<kind::$k> for Option<$t> {
            fn into_value(self) -> Value {
                self.map_or(Value::Null(<kind::$k as Kind>::SQL_TYPE), Value::from)
            }
        }
    )*};
}

value_kinds! {
    bool => Bool, i16 => SmallInt, i32 => Int, i64 => BigInt, f32 => Real, f64 => Double,
    String => Text, &str => Text, Vec<u8> => Blob, &[u8] => Blob,
}
#[cfg(feature = "chrono")]
value_kinds! {
    chrono::NaiveDate => Date, chrono::NaiveTime => Time, chrono::NaiveDateTime => Timestamp,
    chrono::DateTime<chrono::Utc> => TimestampTz,
}
#[cfg(feature = "uuid")]
value_kinds! { uuid::Uuid => Uuid }

impl AsExpr<kind::Text> for &String {
    type Sources = ();
    fn into_expr(self) -> ast::Expr {
        ast::Expr::Value(Value::Text(self.clone()))
    }
}
impl AsValue<kind::Text> for &String {
    fn into_value(self) -> Value {
        Value::Text(self.clone())
    }
}

/// `SqlExpr` with sources `A` then `B`.
pub(super) type Both<K, A, B> = SqlExpr<K, <A as Concat<B>>::Out>;

fn binary<K, S>(lhs: ast::Expr, op: BinaryOp, rhs: ast::Expr) -> SqlExpr<K, S> {
    SqlExpr::from_ast(lhs.binary(op, rhs))
}

/// Comparison, membership and ordering methods on every typed expression.
// `is_null(self)` builds `IS NULL`; the name follows SQL, not Rust's `is_*` getter convention.
#[allow(clippy::wrong_self_convention)]
pub trait ExprMethods: Expression {
    /// `self = rhs`
    fn eq<R: AsExpr<Self::Kind>>(self, rhs: R) -> Both<kind::Bool, Self::Sources, R::Sources>
    where
        Self::Sources: Concat<R::Sources>,
    {
        binary(self.into_ast(), BinaryOp::Eq, rhs.into_expr())
    }

    /// `self <> rhs`
    fn ne<R: AsExpr<Self::Kind>>(self, rhs: R) -> Both<kind::Bool, Self::Sources, R::Sources>
    where
        Self::Sources: Concat<R::Sources>,
    {
        binary(self.into_ast(), BinaryOp::NotEq, rhs.into_expr())
    }

    /// `self < rhs`
    fn lt<R: AsExpr<Self::Kind>>(self, rhs: R) -> Both<kind::Bool, Self::Sources, R::Sources>
    where
        Self::Kind: Ordered,
        Self::Sources: Concat<R::Sources>,
    {
        binary(self.into_ast(), BinaryOp::Lt, rhs.into_expr())
    }

    /// `self <= rhs`
    fn le<R: AsExpr<Self::Kind>>(self, rhs: R) -> Both<kind::Bool, Self::Sources, R::Sources>
    where
        Self::Kind: Ordered,
        Self::Sources: Concat<R::Sources>,
    {
        binary(self.into_ast(), BinaryOp::LtEq, rhs.into_expr())
    }

    /// `self > rhs`
    fn gt<R: AsExpr<Self::Kind>>(self, rhs: R) -> Both<kind::Bool, Self::Sources, R::Sources>
    where
        Self::Kind: Ordered,
        Self::Sources: Concat<R::Sources>,
    {
        binary(self.into_ast(), BinaryOp::Gt, rhs.into_expr())
    }

    /// `self >= rhs`
    fn ge<R: AsExpr<Self::Kind>>(self, rhs: R) -> Both<kind::Bool, Self::Sources, R::Sources>
    where
        Self::Kind: Ordered,
        Self::Sources: Concat<R::Sources>,
    {
        binary(self.into_ast(), BinaryOp::GtEq, rhs.into_expr())
    }

    /// `self IS NULL`
    fn is_null(self) -> SqlExpr<kind::Bool, Self::Sources> {
        SqlExpr::from_ast(ast::Expr::IsNull {
            expr: Box::new(self.into_ast()),
            negated: false,
        })
    }

    /// `self IS NOT NULL`
    fn is_not_null(self) -> SqlExpr<kind::Bool, Self::Sources> {
        SqlExpr::from_ast(ast::Expr::IsNull {
            expr: Box::new(self.into_ast()),
            negated: true,
        })
    }

    /// `self IN (v1, v2, ..)`; an empty list is an [`crate::Error::EmptyInList`] when rendered.
    fn in_list<I, V>(self, values: I) -> SqlExpr<kind::Bool, Self::Sources>
    where
        I: IntoIterator<Item = V>,
        V: AsExpr<Self::Kind, Sources = ()>,
    {
        in_list(self, values, false)
    }

    /// `self NOT IN (v1, v2, ..)`
    fn not_in_list<I, V>(self, values: I) -> SqlExpr<kind::Bool, Self::Sources>
    where
        I: IntoIterator<Item = V>,
        V: AsExpr<Self::Kind, Sources = ()>,
    {
        in_list(self, values, true)
    }

    /// `self IN (SELECT ..)`: the subquery selects one column of the same kind.
    fn in_subquery<Q>(self, query: Q) -> Both<kind::Bool, Self::Sources, Q::Outer>
    where
        Q: Subquery<Kind = Self::Kind>,
        Self::Sources: Concat<Q::Outer>,
    {
        SqlExpr::from_ast(ast::Expr::InSubquery {
            expr: Box::new(self.into_ast()),
            query: Box::new(query.into_select()),
            negated: false,
        })
    }

    /// `self NOT IN (SELECT ..)`
    fn not_in_subquery<Q>(self, query: Q) -> Both<kind::Bool, Self::Sources, Q::Outer>
    where
        Q: Subquery<Kind = Self::Kind>,
        Self::Sources: Concat<Q::Outer>,
    {
        SqlExpr::from_ast(ast::Expr::InSubquery {
            expr: Box::new(self.into_ast()),
            query: Box::new(query.into_select()),
            negated: true,
        })
    }

    /// `self BETWEEN low AND high` (both ends included).
    fn between<L, H>(self, low: L, high: H) -> SqlExpr<kind::Bool, Self::Sources>
    where
        Self::Kind: Ordered,
        L: AsExpr<Self::Kind, Sources = ()>,
        H: AsExpr<Self::Kind, Sources = ()>,
    {
        between(self, low, high, false)
    }

    /// `self NOT BETWEEN low AND high`
    fn not_between<L, H>(self, low: L, high: H) -> SqlExpr<kind::Bool, Self::Sources>
    where
        Self::Kind: Ordered,
        L: AsExpr<Self::Kind, Sources = ()>,
        H: AsExpr<Self::Kind, Sources = ()>,
    {
        between(self, low, high, true)
    }

    /// `self LIKE pattern ESCAPE '\'`: `%` matches any run of characters, `_` one character, `\` makes
    /// the next one literal; case-sensitive on every engine. To match a piece of user text, use
    /// [`ExprMethods::contains`], [`ExprMethods::starts_with`] or [`ExprMethods::ends_with`], which escape
    /// it.
    fn like<P: AsExpr<kind::Text>>(self, pattern: P) -> Both<kind::Bool, Self::Sources, P::Sources>
    where
        Self: Expression<Kind = kind::Text>,
        Self::Sources: Concat<P::Sources>,
    {
        like(self, pattern, false)
    }

    /// `self NOT LIKE pattern`
    fn not_like<P: AsExpr<kind::Text>>(
        self,
        pattern: P,
    ) -> Both<kind::Bool, Self::Sources, P::Sources>
    where
        Self: Expression<Kind = kind::Text>,
        Self::Sources: Concat<P::Sources>,
    {
        like(self, pattern, true)
    }

    /// Whether the text contains `needle` literally (`%`, `_` and `\` in it match themselves).
    fn contains(self, needle: &str) -> SqlExpr<kind::Bool, Self::Sources>
    where
        Self: Expression<Kind = kind::Text>,
    {
        literal_like(self, format!("%{}%", escape_like(needle)))
    }

    /// Whether the text starts with `prefix` literally.
    fn starts_with(self, prefix: &str) -> SqlExpr<kind::Bool, Self::Sources>
    where
        Self: Expression<Kind = kind::Text>,
    {
        literal_like(self, format!("{}%", escape_like(prefix)))
    }

    /// Whether the text ends with `suffix` literally.
    fn ends_with(self, suffix: &str) -> SqlExpr<kind::Bool, Self::Sources>
    where
        Self: Expression<Kind = kind::Text>,
    {
        literal_like(self, format!("%{}", escape_like(suffix)))
    }

    /// `ORDER BY self ASC`
    fn asc(self) -> Ordering<Self::Sources> {
        Ordering::new(self.into_ast(), ast::Order::Asc)
    }

    /// `ORDER BY self DESC`
    fn desc(self) -> Ordering<Self::Sources> {
        Ordering::new(self.into_ast(), ast::Order::Desc)
    }

    /// The expression as a value of its kind, wrapped for reuse where an owned typed expression is wanted.
    fn expr(self) -> SqlExpr<Self::Kind, Self::Sources> {
        SqlExpr::from_ast(self.into_ast())
    }
}

impl<E: Expression> ExprMethods for E {}

fn in_list<E: Expression, I, V>(e: E, values: I, negated: bool) -> SqlExpr<kind::Bool, E::Sources>
where
    I: IntoIterator<Item = V>,
    V: AsExpr<E::Kind, Sources = ()>,
{
    SqlExpr::from_ast(ast::Expr::InList {
        expr: Box::new(e.into_ast()),
        list: values.into_iter().map(AsExpr::into_expr).collect(),
        negated,
    })
}

fn between<E: Expression, L, H>(
    e: E,
    low: L,
    high: H,
    negated: bool,
) -> SqlExpr<kind::Bool, E::Sources>
where
    L: AsExpr<E::Kind>,
    H: AsExpr<E::Kind>,
{
    SqlExpr::from_ast(ast::Expr::Between {
        expr: Box::new(e.into_ast()),
        low: Box::new(low.into_expr()),
        high: Box::new(high.into_expr()),
        negated,
    })
}

fn like<E: Expression, P: AsExpr<kind::Text>>(
    e: E,
    p: P,
    negated: bool,
) -> Both<kind::Bool, E::Sources, P::Sources>
where
    E::Sources: Concat<P::Sources>,
{
    SqlExpr::from_ast(ast::Expr::Like {
        expr: Box::new(e.into_ast()),
        pattern: Box::new(p.into_expr()),
        negated,
    })
}

/// `text` with the LIKE wildcards and the escape character escaped, so it matches only itself.
pub fn escape_like(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    for c in text.chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

fn literal_like<E: Expression>(e: E, pattern: String) -> SqlExpr<kind::Bool, E::Sources> {
    SqlExpr::from_ast(ast::Expr::Like {
        expr: Box::new(e.into_ast()),
        pattern: Box::new(ast::Expr::value(pattern)),
        negated: false,
    })
}

/// `AND`, `OR` and `NOT` on boolean expressions.
pub trait BoolMethods: Expression<Kind = kind::Bool> {
    /// `self AND rhs`
    fn and<R>(self, rhs: R) -> Both<kind::Bool, Self::Sources, R::Sources>
    where
        R: Expression<Kind = kind::Bool>,
        Self::Sources: Concat<R::Sources>,
    {
        binary(self.into_ast(), BinaryOp::And, rhs.into_ast())
    }

    /// `self OR rhs`
    fn or<R>(self, rhs: R) -> Both<kind::Bool, Self::Sources, R::Sources>
    where
        R: Expression<Kind = kind::Bool>,
        Self::Sources: Concat<R::Sources>,
    {
        binary(self.into_ast(), BinaryOp::Or, rhs.into_ast())
    }

    /// `NOT self`
    fn not(self) -> SqlExpr<kind::Bool, Self::Sources> {
        SqlExpr::from_ast(ast::Expr::Not(Box::new(self.into_ast())))
    }
}

impl<E: Expression<Kind = kind::Bool>> BoolMethods for E {}

/// One `ORDER BY` term with the tables it reads.
pub struct Ordering<S> {
    pub(crate) term: ast::OrderBy,
    _sources: PhantomData<fn() -> S>,
}

impl<S> Ordering<S> {
    /// The untyped term.
    pub fn into_ast(self) -> ast::OrderBy {
        self.term
    }

    fn new(expr: ast::Expr, order: ast::Order) -> Self {
        Ordering {
            term: ast::OrderBy { expr, order },
            _sources: PhantomData,
        }
    }
}

macro_rules! arithmetic {
    ($($tr:ident $method:ident $op:ident),*) => {$(
        impl<K: Numeric, S, N, R: AsExpr<K>> ops::$tr<R> for SqlExpr<K, S, N>
        where
            S: Concat<R::Sources>,
        {
            type Output = Both<K, S, R::Sources>;
            fn $method(self, rhs: R) -> Self::Output {
                binary(self.ast, BinaryOp::$op, rhs.into_expr())
            }
        }
    )*};
}
arithmetic!(Add add Add, Sub sub Sub, Mul mul Mul, Div div Div, Rem rem Mod);

/// The right operand of arithmetic on a numeric kind `K`. A separate trait so that `#[derive(Table)]` can put
/// "the column is numeric" in a bound that mentions the operand's type (a bound on the column's kind alone
/// would be a trivially false where-clause on text columns, which Rust rejects).
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "arithmetic needs a numeric column and an operand of the same kind",
    label = "`{Self}` is not a numeric `{K}` operand"
)]
pub trait NumericRhs<K>: AsExpr<K> {}
impl<K: Numeric, R: AsExpr<K>> NumericRhs<K> for R {}

/// Arithmetic for column markers; `#[derive(Table)]` implements `+ - * / %` on each column through this.
#[doc(hidden)]
pub fn __column_arith<C, R>(
    op: BinaryOp,
    col: C,
    rhs: R,
) -> Both<C::Kind, (C::Table, ()), R::Sources>
where
    C: Column,
    R: NumericRhs<C::Kind>,
    (C::Table, ()): Concat<R::Sources>,
{
    binary(col.into_ast(), op, rhs.into_expr())
}

impl<K: Numeric, S, N> ops::Neg for SqlExpr<K, S, N> {
    type Output = SqlExpr<K, S, N>;
    fn neg(self) -> Self::Output {
        SqlExpr::from_ast(ast::Expr::Neg(Box::new(self.ast)))
    }
}
