//! Expression methods and SQL functions, with the typed DSL's rules: comparisons need the same kind on both
//! sides, `<` and `between` an ordered kind, `like` text, arithmetic and `sum` numbers, `and`/`or` booleans.

use tandem_sql::Ident;
use tandem_sql::ast::{self, BinaryOp, Function, Order};

use super::{Ctx, LitVal, Result, Typed, Val, arity};
use crate::reference::{On, no_method};
use crate::schema::Kind;
use crate::syntax::expr::{ArithOp, Expr, Name};
use crate::syntax::{Diagnostic, Span};

fn merged(a: &[(usize, Span)], b: &[(usize, Span)]) -> Vec<(usize, Span)> {
    let mut out = a.to_vec();
    out.extend(
        b.iter()
            .filter(|(t, _)| !a.iter().any(|(u, _)| u == t))
            .copied(),
    );
    out
}

impl Ctx<'_> {
    pub(super) fn arith(&self, op: ArithOp, lhs: &Expr, rhs: &Expr, span: Span) -> Result<Val> {
        let l = match self.eval(lhs)? {
            Val::Lit(_) => {
                return Err(Diagnostic::new(
                    "put the column first (`users::age + 1`): arithmetic starts from an SQL expression",
                    lhs.span(),
                ));
            }
            v => self.any_expr(v, lhs.span())?,
        };
        if !l.kind.is_numeric() {
            return Err(Diagnostic::new(
                format!(
                    "arithmetic needs a numeric column and an operand of the same kind; this is `{}`",
                    l.kind.rust()
                ),
                lhs.span(),
            ));
        }
        let r = self.to_expr(self.eval(rhs)?, rhs.span(), l.kind)?;
        let op = match op {
            ArithOp::Add => BinaryOp::Add,
            ArithOp::Sub => BinaryOp::Sub,
            ArithOp::Mul => BinaryOp::Mul,
            ArithOp::Div => BinaryOp::Div,
            ArithOp::Rem => BinaryOp::Mod,
        };
        let _ = span;
        Ok(Val::Expr(Typed::new(
            l.ast.binary(op, r.ast),
            l.kind,
            merged(&l.sources, &r.sources),
        )))
    }

    fn one_expr(&self, name: &Name, args: &[Expr], span: Span) -> Result<Typed> {
        arity(name, args, 1, span)?;
        self.any_expr(self.eval(&args[0])?, args[0].span())
    }

    fn require(&self, ok: bool, what: &str, t: &Typed, span: Span) -> Result<()> {
        if ok {
            Ok(())
        } else {
            Err(Diagnostic::new(
                format!("{what}; this is `{}`", t.kind.rust()),
                span,
            ))
        }
    }

    /// `name` needs an orderable receiver (`<`, `between`): not a boolean or bytes.
    fn require_ordered(&self, t: &Typed, name: &str, span: Span) -> Result<()> {
        self.require(
            t.kind.is_ordered(),
            &format!("`{name}` needs an orderable expression"),
            t,
            span,
        )
    }

    /// A free function call: SQL functions, `Some(..)`, statement builders.
    pub(super) fn call(&self, func: &[Name], args: &[Expr], span: Span) -> Result<Val> {
        let Some(name) = func.last() else {
            return Err(Diagnostic::new("expected a function", span));
        };
        if func.len() == 2 && func[0].name == "Statement" && name.name == "from" {
            arity(name, args, 1, span)?;
            return self.eval(&args[0]);
        }
        if func.len() > 1 {
            return Err(Diagnostic::new(
                format!("call `{}` without a path", name.name),
                span,
            ));
        }
        let call = |f: Function, t: Typed, kind: Kind, distinct: bool| {
            Typed::new(
                ast::Expr::Call {
                    func: f,
                    args: vec![t.ast],
                    distinct,
                },
                kind,
                t.sources,
            )
        };
        let cast = |t: Typed| Typed {
            ast: ast::Expr::Cast {
                expr: Box::new(t.ast),
                ty: t.kind.sql_type(),
            },
            ..t
        };
        let a0 = || args.first().map_or(span, Expr::span);
        let t = match name.name.as_str() {
            "Some" => {
                arity(name, args, 1, span)?;
                return match self.eval(&args[0])? {
                    Val::Lit(l) => Ok(Val::Lit(LitVal::Some(Box::new(l)))),
                    other => Err(Diagnostic::new(
                        format!(
                            "`Some(..)` wraps a plain value, not {}",
                            other.describe(self.schema)
                        ),
                        args[0].span(),
                    )),
                };
            }
            "count_star" => {
                arity(name, args, 0, span)?;
                Typed::new(ast::Expr::CountStar, Kind::BigInt, Vec::new())
            }
            "count" | "count_distinct" => {
                let t = self.one_expr(name, args, span)?;
                call(
                    Function::Count,
                    t,
                    Kind::BigInt,
                    name.name == "count_distinct",
                )
            }
            "sum" => {
                let t = self.one_expr(name, args, span)?;
                self.require(
                    t.kind.is_numeric(),
                    "`sum` needs a numeric expression",
                    &t,
                    a0(),
                )?;
                let k = if matches!(t.kind, Kind::Real | Kind::Double) {
                    Kind::Double
                } else {
                    Kind::BigInt
                };
                cast(call(Function::Sum, t, k, false))
            }
            "avg" => {
                let t = self.one_expr(name, args, span)?;
                self.require(
                    t.kind.is_numeric(),
                    "`avg` needs a numeric expression",
                    &t,
                    a0(),
                )?;
                cast(call(Function::Avg, t, Kind::Double, false))
            }
            "min" | "max" => {
                let t = self.one_expr(name, args, span)?;
                self.require(
                    t.kind.is_ordered(),
                    "`min` and `max` need an orderable expression",
                    &t,
                    a0(),
                )?;
                let f = if name.name == "min" {
                    Function::Min
                } else {
                    Function::Max
                };
                let k = t.kind;
                call(f, t, k, false)
            }
            "upper" | "lower" | "length" => {
                let t = self.one_expr(name, args, span)?;
                self.require(
                    t.kind == Kind::Text,
                    &format!("`{}` needs text", name.name),
                    &t,
                    a0(),
                )?;
                match name.name.as_str() {
                    "upper" => call(Function::Upper, t, Kind::Text, false),
                    "lower" => call(Function::Lower, t, Kind::Text, false),
                    _ => cast(call(Function::Length, t, Kind::BigInt, false)),
                }
            }
            "coalesce" => {
                arity(name, args, 2, span)?;
                let t = self.any_expr(self.eval(&args[0])?, args[0].span())?;
                let f = self.to_expr(self.eval(&args[1])?, args[1].span(), t.kind)?;
                Typed::new(
                    ast::Expr::call(Function::Coalesce, vec![t.ast, f.ast]),
                    t.kind,
                    merged(&t.sources, &f.sources),
                )
            }
            "exists" | "not_exists" => {
                arity(name, args, 1, span)?;
                let q = self.subquery(self.eval(&args[0])?, args[0].span())?;
                let outer = q.outer_sources(args[0].span());
                Typed::new(
                    ast::Expr::Exists {
                        query: Box::new(q.ast),
                        negated: name.name == "not_exists",
                    },
                    Kind::Bool,
                    outer,
                )
            }
            "insert_into" | "update" | "delete_from" => {
                arity(name, args, 1, span)?;
                let table = self.table_arg(args, 0)?;
                return Ok(self.table_builder(table, &name.name));
            }
            other => {
                return Err(Diagnostic::new(
                    format!(
                        "unknown function `{other}` ({})",
                        crate::reference::names(crate::reference::On::Function)
                    ),
                    name.span,
                ));
            }
        };
        Ok(Val::Expr(t))
    }

    /// Methods of typed expressions.
    pub(super) fn expr_method(
        &self,
        t: Typed,
        recv_span: Span,
        m: &Name,
        args: &[Expr],
        span: Span,
    ) -> Result<Val> {
        let bool_expr =
            |ast: ast::Expr, sources| Ok(Val::Expr(Typed::new(ast, Kind::Bool, sources)));
        let name = m.name.as_str();
        match name {
            "eq" | "ne" | "lt" | "le" | "gt" | "ge" => {
                arity(m, args, 1, span)?;
                let op = match name {
                    "eq" => BinaryOp::Eq,
                    "ne" => BinaryOp::NotEq,
                    "lt" => BinaryOp::Lt,
                    "le" => BinaryOp::LtEq,
                    "gt" => BinaryOp::Gt,
                    _ => BinaryOp::GtEq,
                };
                if !matches!(op, BinaryOp::Eq | BinaryOp::NotEq) {
                    self.require_ordered(&t, name, recv_span)?;
                }
                let r = self.to_expr(self.eval(&args[0])?, args[0].span(), t.kind)?;
                bool_expr(t.ast.binary(op, r.ast), merged(&t.sources, &r.sources))
            }
            "is_null" | "is_not_null" => {
                arity(m, args, 0, span)?;
                bool_expr(
                    ast::Expr::IsNull {
                        expr: Box::new(t.ast),
                        negated: name == "is_not_null",
                    },
                    t.sources,
                )
            }
            "in_list" | "not_in_list" => {
                arity(m, args, 1, span)?;
                let items = match self.eval(&args[0])? {
                    Val::Array(items) => items,
                    other => {
                        return Err(Diagnostic::new(
                            format!(
                                "`{name}` takes a list of values (`[1, 2]` or `vec![..]`), not {}",
                                other.describe(self.schema)
                            ),
                            args[0].span(),
                        ));
                    }
                };
                let mut list = Vec::with_capacity(items.len());
                for (v, s) in items {
                    let e = self.to_expr(v, s, t.kind)?;
                    if let Some((_, at)) = e.sources.first() {
                        return Err(Diagnostic::new(
                            format!(
                                "`{name}` takes plain values; compare with a query through `in_subquery`"
                            ),
                            *at,
                        ));
                    }
                    list.push(e.ast);
                }
                bool_expr(
                    ast::Expr::InList {
                        expr: Box::new(t.ast),
                        list,
                        negated: name == "not_in_list",
                    },
                    t.sources,
                )
            }
            "in_subquery" | "not_in_subquery" => {
                arity(m, args, 1, span)?;
                let q = self.subquery(self.eval(&args[0])?, args[0].span())?;
                match q.single_kind() {
                    Some(k) if k == t.kind => {}
                    Some(k) => {
                        return Err(Diagnostic::new(
                            format!(
                                "the subquery selects `{}`, this expression is `{}`",
                                k.rust(),
                                t.kind.rust()
                            ),
                            args[0].span(),
                        ));
                    }
                    None => {
                        return Err(Diagnostic::new(
                            "the subquery must select exactly one column: `.select(orders::user_id)`",
                            args[0].span(),
                        ));
                    }
                }
                let outer = q.outer_sources(args[0].span());
                bool_expr(
                    ast::Expr::InSubquery {
                        expr: Box::new(t.ast),
                        query: Box::new(q.ast),
                        negated: name == "not_in_subquery",
                    },
                    merged(&t.sources, &outer),
                )
            }
            "between" | "not_between" => {
                arity(m, args, 2, span)?;
                self.require_ordered(&t, name, recv_span)?;
                let low = self.to_expr(self.eval(&args[0])?, args[0].span(), t.kind)?;
                let high = self.to_expr(self.eval(&args[1])?, args[1].span(), t.kind)?;
                for (e, a) in [(&low, &args[0]), (&high, &args[1])] {
                    if !e.sources.is_empty() {
                        return Err(Diagnostic::new("`between` takes plain values", a.span()));
                    }
                }
                bool_expr(
                    ast::Expr::Between {
                        expr: Box::new(t.ast),
                        low: Box::new(low.ast),
                        high: Box::new(high.ast),
                        negated: name == "not_between",
                    },
                    t.sources,
                )
            }
            "like" | "not_like" => {
                arity(m, args, 1, span)?;
                self.require(
                    t.kind == Kind::Text,
                    &format!("`{name}` needs a text expression"),
                    &t,
                    recv_span,
                )?;
                let p = self.to_expr(self.eval(&args[0])?, args[0].span(), Kind::Text)?;
                bool_expr(
                    ast::Expr::Like {
                        expr: Box::new(t.ast),
                        pattern: Box::new(p.ast),
                        negated: name == "not_like",
                    },
                    merged(&t.sources, &p.sources),
                )
            }
            "and" | "or" => {
                arity(m, args, 1, span)?;
                self.require(
                    t.kind == Kind::Bool,
                    &format!("`{name}` joins conditions"),
                    &t,
                    recv_span,
                )?;
                let r = match self.eval(&args[0])? {
                    Val::Expr(r) if r.kind == Kind::Bool => r,
                    other => {
                        return Err(Diagnostic::new(
                            format!(
                                "`{name}` takes another condition, not {}",
                                other.describe(self.schema)
                            ),
                            args[0].span(),
                        ));
                    }
                };
                let op = if name == "and" {
                    BinaryOp::And
                } else {
                    BinaryOp::Or
                };
                bool_expr(t.ast.binary(op, r.ast), merged(&t.sources, &r.sources))
            }
            "not" => {
                arity(m, args, 0, span)?;
                self.require(
                    t.kind == Kind::Bool,
                    "`not` negates a condition",
                    &t,
                    recv_span,
                )?;
                bool_expr(ast::Expr::Not(Box::new(t.ast)), t.sources)
            }
            "asc" | "desc" => {
                arity(m, args, 0, span)?;
                let order = if name == "asc" {
                    Order::Asc
                } else {
                    Order::Desc
                };
                Ok(Val::Order(ast::OrderBy { expr: t.ast, order }, t.sources))
            }
            "expr" => {
                arity(m, args, 0, span)?;
                Ok(Val::Expr(Typed { column: None, ..t }))
            }
            "alias" => {
                arity(m, args, 1, span)?;
                let a = match self.eval(&args[0])? {
                    Val::Lit(LitVal::Str(s)) => {
                        Ident::new(s).map_err(|e| Diagnostic::new(e.to_string(), args[0].span()))?
                    }
                    _ => return Err(Diagnostic::new("`alias` takes a string", args[0].span())),
                };
                Ok(Val::Aliased(t, a))
            }
            other => Err(no_method(On::Expression, other, m.span)),
        }
    }
}
