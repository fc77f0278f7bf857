//! Expressions: column references, bound values, operators, functions and subqueries.

use crate::ident::Ident;
use crate::value::{SqlType, Value};

use super::query::Select;

/// A column, optionally qualified by a table name or alias.
#[derive(Clone, Debug, PartialEq)]
pub struct ColumnRef {
    /// The table or alias that qualifies the column, if any.
    pub table: Option<Ident>,
    /// The column name.
    pub column: Ident,
}

/// Binary operators, comparison, logic and arithmetic alike.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinaryOp {
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
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/`
    Div,
    /// `%`
    Mod,
}

impl BinaryOp {
    /// The operator's SQL spelling (the same on all three engines).
    pub fn sql(self) -> &'static str {
        match self {
            BinaryOp::Eq => "=",
            BinaryOp::NotEq => "<>",
            BinaryOp::Lt => "<",
            BinaryOp::LtEq => "<=",
            BinaryOp::Gt => ">",
            BinaryOp::GtEq => ">=",
            BinaryOp::And => "AND",
            BinaryOp::Or => "OR",
            BinaryOp::Add => "+",
            BinaryOp::Sub => "-",
            BinaryOp::Mul => "*",
            BinaryOp::Div => "/",
            BinaryOp::Mod => "%",
        }
    }
}

/// Functions tandem knows how to spell on every engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Function {
    /// `COUNT(expr)`; `COUNT(*)` is [`Expr::CountStar`].
    Count,
    /// `SUM(expr)`
    Sum,
    /// `MIN(expr)`
    Min,
    /// `MAX(expr)`
    Max,
    /// `AVG(expr)`
    Avg,
    /// `UPPER(expr)`
    Upper,
    /// `LOWER(expr)`
    Lower,
    /// `LENGTH(expr)` in characters (`CHAR_LENGTH` on MySQL).
    Length,
    /// `COALESCE(a, b, ..)`
    Coalesce,
    /// `ABS(expr)`
    Abs,
}

impl Function {
    /// Whether this is an aggregate (allowed with `DISTINCT`, needs `GROUP BY` for mixed selects).
    pub fn is_aggregate(self) -> bool {
        matches!(
            self,
            Function::Count | Function::Sum | Function::Min | Function::Max | Function::Avg
        )
    }
}

/// An expression.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Expr {
    /// A column.
    Column(ColumnRef),
    /// A bound parameter; never spliced into the SQL text.
    Value(Value),
    /// `lhs op rhs`
    Binary {
        /// Left operand.
        lhs: Box<Expr>,
        /// Operator.
        op: BinaryOp,
        /// Right operand.
        rhs: Box<Expr>,
    },
    /// `NOT expr`
    Not(Box<Expr>),
    /// `-expr`
    Neg(Box<Expr>),
    /// `expr IS [NOT] NULL`
    IsNull {
        /// Tested expression.
        expr: Box<Expr>,
        /// `IS NOT NULL` when true.
        negated: bool,
    },
    /// `expr [NOT] IN (list..)`; an empty list is an error when rendered.
    InList {
        /// Tested expression.
        expr: Box<Expr>,
        /// Candidates.
        list: Vec<Expr>,
        /// `NOT IN` when true.
        negated: bool,
    },
    /// `expr [NOT] IN (SELECT ..)`
    InSubquery {
        /// Tested expression.
        expr: Box<Expr>,
        /// The subquery, selecting one column.
        query: Box<Select>,
        /// `NOT IN` when true.
        negated: bool,
    },
    /// `[NOT] EXISTS (SELECT ..)`
    Exists {
        /// The subquery.
        query: Box<Select>,
        /// `NOT EXISTS` when true.
        negated: bool,
    },
    /// `expr [NOT] BETWEEN low AND high`
    Between {
        /// Tested expression.
        expr: Box<Expr>,
        /// Lower bound, inclusive.
        low: Box<Expr>,
        /// Upper bound, inclusive.
        high: Box<Expr>,
        /// `NOT BETWEEN` when true.
        negated: bool,
    },
    /// `expr [NOT] LIKE pattern ESCAPE '\'` — `%` any run, `_` one character, `\` makes the next character
    /// literal, on every engine; case-sensitive everywhere (tandem's SQLite connections turn on
    /// `case_sensitive_like`; its MySQL tables use a binary collation).
    Like {
        /// Tested expression.
        expr: Box<Expr>,
        /// The pattern (`%` and `_` wildcards).
        pattern: Box<Expr>,
        /// `NOT LIKE` when true.
        negated: bool,
    },
    /// A function call.
    Call {
        /// Which function.
        func: Function,
        /// Arguments.
        args: Vec<Expr>,
        /// `DISTINCT` inside an aggregate.
        distinct: bool,
    },
    /// `COUNT(*)`
    CountStar,
    /// `CAST(expr AS type)`
    Cast {
        /// The expression.
        expr: Box<Expr>,
        /// The target type.
        ty: SqlType,
    },
    /// The value an upsert tried to insert into this column (`EXCLUDED.col`, MySQL `VALUES(col)`).
    Excluded(Ident),
}

impl Expr {
    /// An unqualified column.
    pub fn column(name: Ident) -> Expr {
        Expr::Column(ColumnRef {
            table: None,
            column: name,
        })
    }

    /// A column qualified by its table.
    pub fn qualified(table: Ident, column: Ident) -> Expr {
        Expr::Column(ColumnRef {
            table: Some(table),
            column,
        })
    }

    /// A bound value.
    pub fn value(v: impl Into<Value>) -> Expr {
        Expr::Value(v.into())
    }

    /// `self op rhs`.
    pub fn binary(self, op: BinaryOp, rhs: Expr) -> Expr {
        Expr::Binary {
            lhs: Box::new(self),
            op,
            rhs: Box::new(rhs),
        }
    }

    /// `self AND rhs`.
    pub fn and(self, rhs: Expr) -> Expr {
        self.binary(BinaryOp::And, rhs)
    }

    /// Puts `cond` in `slot` (a WHERE or HAVING), joined with AND to what is there already: how a
    /// `filter` or `having` called again adds up.
    pub fn and_into(slot: &mut Option<Expr>, cond: Expr) {
        *slot = Some(match slot.take() {
            Some(existing) => existing.and(cond),
            None => cond,
        });
    }

    /// `self OR rhs`.
    pub fn or(self, rhs: Expr) -> Expr {
        self.binary(BinaryOp::Or, rhs)
    }

    /// `NOT self`.
    #[allow(clippy::should_implement_trait)]
    pub fn not(self) -> Expr {
        Expr::Not(Box::new(self))
    }

    /// A call of `func` with `args`.
    pub fn call(func: Function, args: Vec<Expr>) -> Expr {
        Expr::Call {
            func,
            args,
            distinct: false,
        }
    }
}
