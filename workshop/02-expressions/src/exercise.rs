//! Stage 2 — expressions and NULL. Your code. Read `book/src/02-expressions.md`, then make
//! `just check 02` pass. The order that works: `Sql::param`, the typed layer at the bottom (`ColumnExt`,
//! `Condition`), `Expr::render`, then `Expr::eval` — SQL's three-valued logic.
// When you are done, delete this comment and the `#![allow(…)]` under it: they keep the compiler quiet
// while the bodies are `todo!()`s (unused parameters, imports, helpers); then its warnings are worth reading.
#![allow(unused_variables, dead_code)]

use std::fmt;
use std::marker::PhantomData;

use tables::{Column, Dialect, Table, Value, quote};

// ANCHOR: sql
/// SQL text being written for one dialect, and the values its placeholders stand for.
#[derive(Clone, Debug, PartialEq)]
pub struct Sql {
    dialect: Dialect,
    /// The text so far, with placeholders where values go.
    pub text: String,
    /// The values, in placeholder order.
    pub params: Vec<Value>,
}

impl Sql {
    /// Nothing written yet, for `dialect`.
    pub fn new(dialect: Dialect) -> Sql {
        Sql {
            dialect,
            text: String::new(),
            params: Vec::new(),
        }
    }

    /// The dialect being written.
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// Appends SQL text.
    pub fn push(&mut self, text: &str) {
        self.text.push_str(text);
    }

    /// Appends an identifier, quoted for the dialect.
    pub fn ident(&mut self, name: &str) {
        self.text.push_str(&quote(self.dialect, name));
    }
}
// ANCHOR_END: sql

// ANCHOR: param
impl Sql {
    /// Appends a placeholder for `value` and keeps the value: `?` on SQLite and MySQL, `$1`, `$2`, … on
    /// PostgreSQL (numbered from 1 in the order they appear).
    pub fn param(&mut self, value: Value) {
        todo!("bind a value")
    }
}
// ANCHOR_END: param

/// Why an expression cannot be rendered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RenderError {
    /// `IN ()` with nothing in the list: no engine accepts it.
    EmptyInList,
}

impl fmt::Display for RenderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RenderError::EmptyInList => f.write_str("an IN list needs at least one value"),
        }
    }
}

impl std::error::Error for RenderError {}

// ANCHOR: tree
/// The operators between two expressions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// `=`
    Eq,
    /// `<>`
    NotEq,
    /// `<`
    Lt,
    /// `<=`
    LtEq,
    /// `>`
    Gt,
    /// `>=`
    GtEq,
    /// `AND`
    And,
    /// `OR`
    Or,
}

impl Op {
    /// How SQL spells it (the same on every engine).
    pub fn sql(self) -> &'static str {
        match self {
            Op::Eq => "=",
            Op::NotEq => "<>",
            Op::Lt => "<",
            Op::LtEq => "<=",
            Op::Gt => ">",
            Op::GtEq => ">=",
            Op::And => "AND",
            Op::Or => "OR",
        }
    }
}

/// An expression: plain data, no dialect, no types — the typed layer below builds it.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// A column, qualified by its table: `"users"."age"`.
    Column {
        /// The table's name.
        table: &'static str,
        /// The column's name.
        column: &'static str,
    },
    /// A value, always bound as a parameter.
    Value(Value),
    /// `lhs op rhs`.
    Binary {
        /// The left operand.
        lhs: Box<Expr>,
        /// The operator.
        op: Op,
        /// The right operand.
        rhs: Box<Expr>,
    },
    /// `NOT expr`.
    Not(Box<Expr>),
    /// `expr IS NULL`, or `IS NOT NULL` when negated.
    IsNull {
        /// The tested expression.
        expr: Box<Expr>,
        /// `IS NOT NULL` when true.
        negated: bool,
    },
    /// `expr IN (v1, v2, …)`.
    InList {
        /// The tested expression.
        expr: Box<Expr>,
        /// The candidates, each bound.
        list: Vec<Value>,
    },
    /// `expr LIKE pattern ESCAPE '\'`: `%` any run, `_` one character, `\` makes the next one literal.
    Like {
        /// The tested expression.
        expr: Box<Expr>,
        /// The pattern, bound.
        pattern: String,
    },
}
// ANCHOR_END: tree

// ANCHOR: render
impl Expr {
    /// Writes the expression: operands that are themselves operators go in parentheses — except one
    /// `AND` inside another (or `OR` inside `OR`), which stays flat — so that precedence never depends on an
    /// engine.
    pub fn render(&self, out: &mut Sql) -> Result<(), RenderError> {
        todo!("render an expression")
    }
}
// ANCHOR_END: render

// ANCHOR: eval
impl Expr {
    /// What the database computes for one row (`row(table, column)` gives a column's value). A
    /// predicate gives `Value::Bool`, or `Value::Null` for UNKNOWN.
    pub fn eval(&self, row: &dyn Fn(&str, &str) -> Value) -> Value {
        todo!("evaluate an expression")
    }
}

// ANCHOR_END: eval

// ANCHOR: typed
/// A condition on the rows of table `T`: an expression the compiler knows reads only `T`.
#[derive(Clone, Debug, PartialEq)]
pub struct Condition<T: Table> {
    expr: Expr,
    table: PhantomData<T>,
}

impl<T: Table> Condition<T> {
    fn new(expr: Expr) -> Condition<T> {
        Condition {
            expr,
            table: PhantomData,
        }
    }

    /// `self AND other`.
    pub fn and(self, other: Condition<T>) -> Condition<T> {
        todo!("AND")
    }

    /// `self OR other`.
    pub fn or(self, other: Condition<T>) -> Condition<T> {
        todo!("OR")
    }

    /// `NOT self`.
    #[allow(clippy::should_implement_trait)] // `!cond` would hide that SQL's NOT keeps UNKNOWN unknown
    pub fn not(self) -> Condition<T> {
        todo!("NOT")
    }

    /// The expression.
    pub fn expr(&self) -> &Expr {
        &self.expr
    }

    /// The expression, by value.
    pub fn into_expr(self) -> Expr {
        self.expr
    }

    /// The condition as SQL for `dialect`.
    pub fn to_sql(&self, dialect: Dialect) -> Result<Sql, RenderError> {
        todo!("render a condition")
    }

    /// Whether a row satisfies it: `Some(true)`, `Some(false)`, or `None` for UNKNOWN (which a WHERE
    /// treats as false).
    pub fn eval(&self, row: &dyn Fn(&str, &str) -> Value) -> Option<bool> {
        todo!("evaluate a condition")
    }
}

/// Column types that hold text: only they have `like` and `contains`.
pub trait Textual {}
impl Textual for String {}
impl Textual for Option<String> {}

/// What every column can be asked; `use expressions::ColumnExt` and `users::age.ge(18)` works.
pub trait ColumnExt: Column {
    /// The column as an expression.
    fn expr(self) -> Expr {
        Expr::Column {
            table: <Self::Table as Table>::NAME,
            column: Self::NAME,
        }
    }

    /// `self = value`.
    fn eq(self, value: impl Into<Self::Type>) -> Condition<Self::Table> {
        todo!("self = value")
    }

    /// `self <> value`.
    fn ne(self, value: impl Into<Self::Type>) -> Condition<Self::Table> {
        todo!("self <> value")
    }

    /// `self < value`.
    fn lt(self, value: impl Into<Self::Type>) -> Condition<Self::Table> {
        todo!("self < value")
    }

    /// `self <= value`.
    fn le(self, value: impl Into<Self::Type>) -> Condition<Self::Table> {
        todo!("self <= value")
    }

    /// `self > value`.
    fn gt(self, value: impl Into<Self::Type>) -> Condition<Self::Table> {
        todo!("self > value")
    }

    /// `self >= value`.
    fn ge(self, value: impl Into<Self::Type>) -> Condition<Self::Table> {
        todo!("self >= value")
    }

    /// `self IS NULL`.
    fn is_null(self) -> Condition<Self::Table> {
        todo!("IS NULL")
    }

    /// `self IS NOT NULL`.
    fn is_not_null(self) -> Condition<Self::Table> {
        todo!("IS NOT NULL")
    }

    /// `self IN (values…)`; an empty list is an error when rendered.
    fn in_list(self, values: impl IntoIterator<Item = Self::Type>) -> Condition<Self::Table> {
        todo!("IN (…)")
    }

    /// `self LIKE pattern`, with `%`, `_` and `\` as the pattern's special characters.
    fn like(self, pattern: &str) -> Condition<Self::Table>
    where
        Self::Type: Textual,
    {
        todo!("LIKE")
    }

    /// Whether the text contains `text` as it is: its `%`, `_` and `\` are escaped, so they match only
    /// themselves.
    fn contains(self, text: &str) -> Condition<Self::Table>
    where
        Self::Type: Textual,
    {
        todo!("contains")
    }
}

impl<C: Column> ColumnExt for C {}

/// `text` with the LIKE wildcards and the escape character escaped: `50%` becomes `50\%`.
pub fn escape_like(text: &str) -> String {
    todo!("escape LIKE's special characters")
}
// ANCHOR_END: typed
