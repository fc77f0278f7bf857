//! Stage 2 — expressions and NULL: the reference solution.

use std::cmp::Ordering;
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
        self.params.push(value);
        match self.dialect {
            Dialect::Postgres => {
                self.text.push('$');
                self.text.push_str(&self.params.len().to_string());
            }
            Dialect::Sqlite | Dialect::MySql => self.text.push('?'),
        }
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
        match self {
            Expr::Column { table, column } => {
                out.ident(table);
                out.push(".");
                out.ident(column);
            }
            Expr::Value(v) => out.param(v.clone()),
            Expr::Binary { lhs, op, rhs } => {
                lhs.operand(out, Some(*op))?;
                out.push(" ");
                out.push(op.sql());
                out.push(" ");
                rhs.operand(out, Some(*op))?;
            }
            Expr::Not(inner) => {
                out.push("NOT ");
                inner.operand(out, None)?;
            }
            Expr::IsNull { expr, negated } => {
                expr.operand(out, None)?;
                out.push(if *negated { " IS NOT NULL" } else { " IS NULL" });
            }
            Expr::InList { expr, list } => {
                if list.is_empty() {
                    return Err(RenderError::EmptyInList);
                }
                expr.operand(out, None)?;
                out.push(" IN (");
                for (i, v) in list.iter().enumerate() {
                    if i > 0 {
                        out.push(", ");
                    }
                    out.param(v.clone());
                }
                out.push(")");
            }
            Expr::Like { expr, pattern } => {
                expr.operand(out, None)?;
                out.push(" LIKE ");
                out.param(Value::Text(pattern.clone()));
                // A backslash inside a MySQL string literal is itself an escape: it is written twice there.
                out.push(match out.dialect() {
                    Dialect::MySql => " ESCAPE '\\\\'",
                    Dialect::Sqlite | Dialect::Postgres => " ESCAPE '\\'",
                });
            }
        }
        Ok(())
    }

    /// Writes `self` as an operand of `parent` (`None`: of NOT, IS NULL, IN or LIKE).
    fn operand(&self, out: &mut Sql, parent: Option<Op>) -> Result<(), RenderError> {
        let flat = match self {
            Expr::Column { .. } | Expr::Value(_) => true,
            Expr::Binary { op, .. } => parent == Some(*op) && matches!(op, Op::And | Op::Or),
            _ => false,
        };
        if flat {
            self.render(out)
        } else {
            out.push("(");
            self.render(out)?;
            out.push(")");
            Ok(())
        }
    }
}
// ANCHOR_END: render

// ANCHOR: eval
impl Expr {
    /// What the database computes for one row (`row(table, column)` gives a column's value). A
    /// predicate gives `Value::Bool`, or `Value::Null` for UNKNOWN.
    pub fn eval(&self, row: &dyn Fn(&str, &str) -> Value) -> Value {
        let truth = |b: Option<bool>| b.map_or(Value::Null, Value::Bool);
        match self {
            Expr::Column { table, column } => row(table, column),
            Expr::Value(v) => v.clone(),
            Expr::Binary { lhs, op, rhs } => {
                let (l, r) = (lhs.eval(row), rhs.eval(row));
                truth(match op {
                    Op::And => and3(as_truth(&l), as_truth(&r)),
                    Op::Or => or3(as_truth(&l), as_truth(&r)),
                    cmp => compare(&l, &r).map(|o| match cmp {
                        Op::Eq => o == Ordering::Equal,
                        Op::NotEq => o != Ordering::Equal,
                        Op::Lt => o == Ordering::Less,
                        Op::LtEq => o != Ordering::Greater,
                        Op::Gt => o == Ordering::Greater,
                        _ => o != Ordering::Less,
                    }),
                })
            }
            Expr::Not(inner) => truth(as_truth(&inner.eval(row)).map(|b| !b)),
            Expr::IsNull { expr, negated } => {
                Value::Bool((expr.eval(row) == Value::Null) != *negated)
            }
            Expr::InList { expr, list } => {
                let x = expr.eval(row);
                // TRUE if some element is equal; else UNKNOWN if anything was NULL; else FALSE.
                let mut result = Some(false);
                for v in list {
                    match compare(&x, v) {
                        Some(Ordering::Equal) => return Value::Bool(true),
                        None => result = None,
                        Some(_) => {}
                    }
                }
                truth(result)
            }
            Expr::Like { expr, pattern } => match expr.eval(row) {
                Value::Text(s) => Value::Bool(like(
                    &s.chars().collect::<Vec<_>>(),
                    &pattern.chars().collect::<Vec<_>>(),
                )),
                _ => Value::Null,
            },
        }
    }
}

/// A predicate's value as a truth value (`None`: UNKNOWN).
fn as_truth(v: &Value) -> Option<bool> {
    match v {
        Value::Bool(b) => Some(*b),
        Value::I32(i) => Some(*i != 0),
        Value::I64(i) => Some(*i != 0),
        _ => None,
    }
}

/// `a AND b`: FALSE wins over UNKNOWN.
fn and3(a: Option<bool>, b: Option<bool>) -> Option<bool> {
    match (a, b) {
        (Some(false), _) | (_, Some(false)) => Some(false),
        (Some(true), Some(true)) => Some(true),
        _ => None,
    }
}

/// `a OR b`: TRUE wins over UNKNOWN.
fn or3(a: Option<bool>, b: Option<bool>) -> Option<bool> {
    match (a, b) {
        (Some(true), _) | (_, Some(true)) => Some(true),
        (Some(false), Some(false)) => Some(false),
        _ => None,
    }
}

/// How two values compare; `None` when either is NULL (or they cannot be compared).
fn compare(a: &Value, b: &Value) -> Option<Ordering> {
    let number = |v: &Value| match v {
        Value::I32(i) => Some(f64::from(*i)),
        Value::I64(i) => Some(*i as f64),
        Value::F64(f) => Some(*f),
        Value::Bool(b) => Some(f64::from(u8::from(*b))),
        _ => None,
    };
    match (a, b) {
        (Value::I64(x), Value::I64(y)) => Some(x.cmp(y)),
        (Value::Text(x), Value::Text(y)) => Some(x.as_bytes().cmp(y.as_bytes())),
        _ => number(a)?.partial_cmp(&number(b)?),
    }
}

/// Whether `s` matches the LIKE pattern `p`, case-sensitively, with `\` as the escape character.
fn like(s: &[char], p: &[char]) -> bool {
    match p.split_first() {
        None => s.is_empty(),
        Some(('%', rest)) => (0..=s.len()).any(|i| like(&s[i..], rest)),
        Some(('_', rest)) => !s.is_empty() && like(&s[1..], rest),
        Some(('\\', rest)) if !rest.is_empty() => {
            s.first() == Some(&rest[0]) && like(&s[1..], &rest[1..])
        }
        Some((c, rest)) => s.first() == Some(c) && like(&s[1..], rest),
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
        Condition::new(Expr::Binary {
            lhs: Box::new(self.expr),
            op: Op::And,
            rhs: Box::new(other.expr),
        })
    }

    /// `self OR other`.
    pub fn or(self, other: Condition<T>) -> Condition<T> {
        Condition::new(Expr::Binary {
            lhs: Box::new(self.expr),
            op: Op::Or,
            rhs: Box::new(other.expr),
        })
    }

    /// `NOT self`.
    #[allow(clippy::should_implement_trait)] // `!cond` would hide that SQL's NOT keeps UNKNOWN unknown
    pub fn not(self) -> Condition<T> {
        Condition::new(Expr::Not(Box::new(self.expr)))
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
        let mut out = Sql::new(dialect);
        self.expr.render(&mut out)?;
        Ok(out)
    }

    /// Whether a row satisfies it: `Some(true)`, `Some(false)`, or `None` for UNKNOWN (which a WHERE
    /// treats as false).
    pub fn eval(&self, row: &dyn Fn(&str, &str) -> Value) -> Option<bool> {
        as_truth(&self.expr.eval(row))
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
        compare_with(self, Op::Eq, value.into())
    }

    /// `self <> value`.
    fn ne(self, value: impl Into<Self::Type>) -> Condition<Self::Table> {
        compare_with(self, Op::NotEq, value.into())
    }

    /// `self < value`.
    fn lt(self, value: impl Into<Self::Type>) -> Condition<Self::Table> {
        compare_with(self, Op::Lt, value.into())
    }

    /// `self <= value`.
    fn le(self, value: impl Into<Self::Type>) -> Condition<Self::Table> {
        compare_with(self, Op::LtEq, value.into())
    }

    /// `self > value`.
    fn gt(self, value: impl Into<Self::Type>) -> Condition<Self::Table> {
        compare_with(self, Op::Gt, value.into())
    }

    /// `self >= value`.
    fn ge(self, value: impl Into<Self::Type>) -> Condition<Self::Table> {
        compare_with(self, Op::GtEq, value.into())
    }

    /// `self IS NULL`.
    fn is_null(self) -> Condition<Self::Table> {
        Condition::new(Expr::IsNull {
            expr: Box::new(self.expr()),
            negated: false,
        })
    }

    /// `self IS NOT NULL`.
    fn is_not_null(self) -> Condition<Self::Table> {
        Condition::new(Expr::IsNull {
            expr: Box::new(self.expr()),
            negated: true,
        })
    }

    /// `self IN (values…)`; an empty list is an error when rendered.
    fn in_list(self, values: impl IntoIterator<Item = Self::Type>) -> Condition<Self::Table> {
        Condition::new(Expr::InList {
            expr: Box::new(self.expr()),
            list: values
                .into_iter()
                .map(|v| tables::SqlValue::to_value(&v))
                .collect(),
        })
    }

    /// `self LIKE pattern`, with `%`, `_` and `\` as the pattern's special characters.
    fn like(self, pattern: &str) -> Condition<Self::Table>
    where
        Self::Type: Textual,
    {
        Condition::new(Expr::Like {
            expr: Box::new(self.expr()),
            pattern: pattern.to_owned(),
        })
    }

    /// Whether the text contains `text` as it is: its `%`, `_` and `\` are escaped, so they match only
    /// themselves.
    fn contains(self, text: &str) -> Condition<Self::Table>
    where
        Self::Type: Textual,
    {
        self.like(&format!("%{}%", escape_like(text)))
    }
}

impl<C: Column> ColumnExt for C {}

/// `column op value`.
fn compare_with<C: Column>(column: C, op: Op, value: C::Type) -> Condition<C::Table> {
    Condition::new(Expr::Binary {
        lhs: Box::new(column.expr()),
        op,
        rhs: Box::new(Expr::Value(tables::SqlValue::to_value(&value))),
    })
}

/// `text` with the LIKE wildcards and the escape character escaped: `50%` becomes `50\%`.
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
// ANCHOR_END: typed
