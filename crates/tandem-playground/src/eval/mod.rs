//! From parsed Rust to the real DSL statement. The typed DSL checks kinds and tables at compile time; here
//! the same rules run on the parsed expression (an `i32` column compared with a string, a filter on a table
//! outside FROM/JOIN, `like` on a number — each an error at the spot), and the result is `tandem-sql`'s own
//! untyped AST, which the same renderers turn into SQL for every dialect.
//!
//! - `mod.rs`: values, literals and their kinds, paths and the entry point.
//! - `exprs`: expression methods (`eq`, `between`, `and`, …) and functions (`count_star`, `sum`, …).
//! - `statements`: SELECT, INSERT, UPDATE, DELETE and DDL builders.

mod exprs;
mod statements;

use tandem_sql::Value;
use tandem_sql::ast::{self, Statement};

use crate::schema::{Kind, Schema};
use crate::syntax::expr::{Expr, Lit, Name};
use crate::syntax::{Diagnostic, Span};

use statements::{DeleteB, InsertB, SelectB, UpdateB};

/// Errors of this module.
pub(crate) type Result<T> = std::result::Result<T, Diagnostic>;

/// A typed expression: its AST, kind, the tables it reads (each with the span of a column read from it),
/// and, for a bare column, which one.
#[derive(Clone, Debug)]
pub(crate) struct Typed {
    pub ast: ast::Expr,
    pub kind: Kind,
    pub sources: Vec<(usize, Span)>,
    pub column: Option<(usize, usize)>,
}

impl Typed {
    fn new(ast: ast::Expr, kind: Kind, sources: Vec<(usize, Span)>) -> Typed {
        Typed {
            ast,
            kind,
            sources,
            column: None,
        }
    }
}

/// A literal, not yet given a kind (Rust infers it from where it is used).
#[derive(Clone, Debug)]
pub(crate) enum LitVal {
    Int {
        value: u128,
        negative: bool,
        suffix: Option<String>,
    },
    Float {
        value: f64,
        suffix: Option<String>,
    },
    Str(String),
    Bytes(Vec<u8>),
    Bool(bool),
    None,
    Some(Box<LitVal>),
}

/// What an expression of the query box evaluates to.
#[derive(Clone, Debug)]
pub(crate) enum Val {
    Table(usize),
    Expr(Typed),
    Lit(LitVal),
    Order(ast::OrderBy, Vec<(usize, Span)>),
    Aliased(Typed, tandem_sql::Ident),
    Select(SelectB),
    Insert(InsertB),
    Update(UpdateB),
    Delete(DeleteB),
    Statement(Statement),
    Tuple(Vec<(Val, Span)>),
    Array(Vec<(Val, Span)>),
}

impl Val {
    /// The value as a learner reads it in an error.
    fn describe(&self, schema: &Schema) -> String {
        match self {
            Val::Table(t) => format!("the table marker `{}::table`", schema.tables[*t].module),
            Val::Expr(e) => format!("an SQL expression of kind `{}`", e.kind.rust()),
            Val::Lit(l) => format!("a plain value ({})", l.describe()),
            Val::Order(..) => "an ordering (`.asc()` / `.desc()`)".into(),
            Val::Aliased(..) => "an aliased expression".into(),
            Val::Select(_) => "a SELECT query".into(),
            Val::Insert(_) => "an INSERT".into(),
            Val::Update(_) => "an UPDATE".into(),
            Val::Delete(_) => "a DELETE".into(),
            Val::Statement(_) => "a statement".into(),
            Val::Tuple(_) => "a tuple".into(),
            Val::Array(_) => "a list".into(),
        }
    }
}

impl LitVal {
    fn from_lit(l: &Lit) -> LitVal {
        match l {
            Lit::Int(v, s) => LitVal::Int {
                value: *v,
                negative: false,
                suffix: s.clone(),
            },
            Lit::Float(v, s) => LitVal::Float {
                value: *v,
                suffix: s.clone(),
            },
            Lit::Str(s) => LitVal::Str(s.clone()),
            Lit::Bytes(b) => LitVal::Bytes(b.clone()),
            Lit::Bool(b) => LitVal::Bool(*b),
        }
    }

    fn describe(&self) -> String {
        match self {
            LitVal::Int {
                suffix: Some(s), ..
            }
            | LitVal::Float {
                suffix: Some(s), ..
            } => s.clone(),
            LitVal::Int { .. } => "integer".into(),
            LitVal::Float { .. } => "float".into(),
            LitVal::Str(_) => "&str".into(),
            LitVal::Bytes(_) => "&[u8]".into(),
            LitVal::Bool(_) => "bool".into(),
            LitVal::None => "None".into(),
            LitVal::Some(inner) => format!("Some({})", inner.describe()),
        }
    }

    /// The literal as a bound value of `kind`, as Rust would infer it; an error where Rust would not compile.
    pub(crate) fn value(&self, kind: Kind, span: Span) -> Result<Value> {
        let mismatch = || {
            Diagnostic::new(
                format!(
                    "expected `{}`, found {}: compare and assign values of the column's own type",
                    kind.rust(),
                    self.describe()
                ),
                span,
            )
        };
        let suffix_ok = |s: &Option<String>| s.as_deref().is_none_or(|s| s == kind.rust());
        Ok(match self {
            LitVal::None => Value::Null(kind.sql_type()),
            LitVal::Some(inner) => inner.value(kind, span)?,
            LitVal::Int {
                value,
                negative,
                suffix,
            } if suffix_ok(suffix) => {
                let v = i128::try_from(*value).unwrap_or(i128::MAX);
                let v = if *negative { -v } else { v };
                let range = |ok: bool| {
                    if ok {
                        Ok(())
                    } else {
                        Err(Diagnostic::new(
                            format!("{v} is out of range for `{}`", kind.rust()),
                            span,
                        ))
                    }
                };
                match kind {
                    Kind::SmallInt => {
                        range(i16::try_from(v).is_ok())?;
                        Value::I16(v as i16)
                    }
                    Kind::Int => {
                        range(i32::try_from(v).is_ok())?;
                        Value::I32(v as i32)
                    }
                    Kind::BigInt => {
                        range(i64::try_from(v).is_ok())?;
                        Value::I64(v as i64)
                    }
                    Kind::Real | Kind::Double => {
                        return Err(Diagnostic::new(
                            format!(
                                "expected `{}`, found integer: write it as a float, `{v}.0`",
                                kind.rust()
                            ),
                            span,
                        ));
                    }
                    _ => return Err(mismatch()),
                }
            }
            LitVal::Float { value, suffix } if suffix_ok(suffix) => match kind {
                Kind::Real => Value::F32(*value as f32),
                Kind::Double => Value::F64(*value),
                _ => return Err(mismatch()),
            },
            LitVal::Str(s) if kind == Kind::Text => Value::Text(s.clone()),
            LitVal::Bytes(b) if kind == Kind::Blob => Value::Bytes(b.clone()),
            LitVal::Bool(b) if kind == Kind::Bool => Value::Bool(*b),
            _ => return Err(mismatch()),
        })
    }
}

/// Evaluation over one schema.
pub(crate) struct Ctx<'s> {
    pub schema: &'s Schema,
}

/// Builds the statement a query expression stands for.
pub fn build(schema: &Schema, e: &Expr) -> std::result::Result<Statement, Diagnostic> {
    build_with_headers(schema, e).map(|(s, _)| s)
}

/// [`build`], with where each computed item of a SELECT's list is written in the query (see
/// `SelectB::headers`): one entry per item, `None` for a column or an aliased item; empty for other
/// statements and for `select_all`.
pub fn build_with_headers(
    schema: &Schema,
    e: &Expr,
) -> std::result::Result<(Statement, Vec<Option<Span>>), Diagnostic> {
    let ctx = Ctx { schema };
    let v = ctx.eval(e)?;
    let headers = match &v {
        Val::Select(s) => s.headers.clone(),
        _ => Vec::new(),
    };
    Ok((ctx.statement(v, e.span())?, headers))
}

impl Ctx<'_> {
    pub(crate) fn eval(&self, e: &Expr) -> Result<Val> {
        match e {
            Expr::Lit(l, _) => Ok(Val::Lit(LitVal::from_lit(l))),
            Expr::Path(segs, span) => self.path(segs, *span),
            Expr::Tuple(items, _) => Ok(Val::Tuple(self.eval_all(items)?)),
            Expr::Array(items, _) => Ok(Val::Array(self.eval_all(items)?)),
            Expr::Neg(inner, span) => self.neg(inner, *span),
            Expr::Arith { op, lhs, rhs, span } => self.arith(*op, lhs, rhs, *span),
            Expr::Call { func, args, span } => self.call(func, args, *span),
            Expr::Method {
                recv,
                method,
                args,
                span,
            } => {
                let r = self.eval(recv)?;
                self.method(r, recv.span(), method, args, *span)
            }
        }
    }

    fn eval_all(&self, items: &[Expr]) -> Result<Vec<(Val, Span)>> {
        items
            .iter()
            .map(|e| Ok((self.eval(e)?, e.span())))
            .collect()
    }

    fn path(&self, segs: &[Name], span: Span) -> Result<Val> {
        match segs {
            [one] if one.name == "None" => Ok(Val::Lit(LitVal::None)),
            [one] => Err(Diagnostic::new(
                match self.schema.table(&one.name) {
                    Some(_) => format!(
                        "write `{0}::table` for the table, `{0}::<field>` for a column",
                        one.name
                    ),
                    None => format!(
                        "cannot find `{}`: the tables are {}",
                        one.name,
                        self.schema.modules()
                    ),
                },
                span,
            )),
            [module, item] => {
                let Some((t, table)) = self.schema.table(&module.name) else {
                    return Err(Diagnostic::new(
                        format!(
                            "no table `{}` is declared: the tables are {}",
                            module.name,
                            self.schema.modules()
                        ),
                        module.span,
                    ));
                };
                if item.name == "table" {
                    return Ok(Val::Table(t));
                }
                let Some((c, col)) = table.column(&item.name) else {
                    let fields: Vec<String> = table
                        .columns
                        .iter()
                        .map(|c| format!("`{}`", c.field))
                        .collect();
                    return Err(Diagnostic::new(
                        format!(
                            "table `{}` has no column `{}`: its columns are {}",
                            module.name,
                            item.name,
                            fields.join(", ")
                        ),
                        item.span,
                    ));
                };
                Ok(Val::Expr(Typed {
                    ast: ast::Expr::qualified(table.schema.name.clone(), col.name.clone()),
                    kind: col.kind,
                    sources: vec![(t, span)],
                    column: Some((t, c)),
                }))
            }
            _ => Err(Diagnostic::new(
                "name tables and columns as `table::column`, without a crate path",
                span,
            )),
        }
    }

    /// `v` where an expression of `kind` is expected: an expression of that kind, or a literal bound as a
    /// value of it.
    pub(crate) fn to_expr(&self, v: Val, span: Span, kind: Kind) -> Result<Typed> {
        match v {
            Val::Expr(t) if t.kind == kind => Ok(t),
            Val::Expr(t) => Err(Diagnostic::new(
                format!(
                    "expected an expression of kind `{}`, found one of kind `{}`",
                    kind.rust(),
                    t.kind.rust()
                ),
                span,
            )),
            Val::Lit(l) => Ok(Typed::new(
                ast::Expr::Value(l.value(kind, span)?),
                kind,
                Vec::new(),
            )),
            other => Err(Diagnostic::new(
                format!(
                    "expected a value or expression of kind `{}`, found {}",
                    kind.rust(),
                    other.describe(self.schema)
                ),
                span,
            )),
        }
    }

    /// `v` where any typed expression is expected.
    pub(crate) fn any_expr(&self, v: Val, span: Span) -> Result<Typed> {
        match v {
            Val::Expr(t) => Ok(t),
            Val::Lit(l) => Err(Diagnostic::new(
                format!(
                    "a plain value ({}) has no SQL kind of its own here: use a column or an SQL expression",
                    l.describe()
                ),
                span,
            )),
            other => Err(Diagnostic::new(
                format!(
                    "expected an SQL expression, found {}",
                    other.describe(self.schema)
                ),
                span,
            )),
        }
    }

    /// Checks that an expression reads only `allowed` tables (the query's FROM and JOINs).
    pub(crate) fn check_sources(&self, sources: &[(usize, Span)], allowed: &[usize]) -> Result<()> {
        match sources.iter().find(|(t, _)| !allowed.contains(t)) {
            None => Ok(()),
            Some((t, span)) => Err(Diagnostic::new(
                format!(
                    "this reads table `{0}`, which is not in the query: add it with `.inner_join({0}::table, ..)`, or `.correlated_with({0}::table)` in a subquery",
                    self.schema.tables[*t].module
                ),
                *span,
            )),
        }
    }

    fn neg(&self, inner: &Expr, span: Span) -> Result<Val> {
        match self.eval(inner)? {
            Val::Lit(LitVal::Int {
                value,
                negative,
                suffix,
            }) => Ok(Val::Lit(LitVal::Int {
                value,
                negative: !negative,
                suffix,
            })),
            Val::Lit(LitVal::Float { value, suffix }) => Ok(Val::Lit(LitVal::Float {
                value: -value,
                suffix,
            })),
            Val::Expr(t) if t.kind.is_numeric() => Ok(Val::Expr(Typed::new(
                ast::Expr::Neg(Box::new(t.ast)),
                t.kind,
                t.sources,
            ))),
            other => Err(Diagnostic::new(
                format!("cannot negate {}", other.describe(self.schema)),
                span,
            )),
        }
    }

    /// The whole query box's value as a statement.
    fn statement(&self, v: Val, span: Span) -> Result<Statement> {
        match v {
            Val::Select(s) => Ok(Statement::Select(s.ast)),
            Val::Insert(i) => Ok(Statement::Insert(i.ast)),
            Val::Update(u) => Ok(Statement::Update(u.ast)),
            Val::Delete(d) => Ok(Statement::Delete(d.ast)),
            Val::Statement(s) => Ok(s),
            Val::Table(t) => Err(Diagnostic::new(
                format!(
                    "this is the table marker: query it with `{}::table.select_all()`",
                    self.schema.tables[t].module
                ),
                span,
            )),
            other => Err(Diagnostic::new(
                format!(
                    "this is {}, not a statement: use it inside `.filter(..)` or `.select(..)` of a query",
                    other.describe(self.schema)
                ),
                span,
            )),
        }
    }
}

/// Checks the number of arguments of a call.
pub(crate) fn arity(name: &Name, args: &[Expr], n: usize, span: Span) -> Result<()> {
    if args.len() == n {
        return Ok(());
    }
    let at = args.get(n).map_or(span, Expr::span);
    Err(Diagnostic::new(
        format!(
            "`{}` takes {n} argument{}, {} given",
            name.name,
            if n == 1 { "" } else { "s" },
            args.len()
        ),
        at,
    ))
}
