//! Expressions. Operands that are themselves operators are parenthesised, except a chain of the same
//! associative operator (`a AND b AND c`), so precedence never depends on an engine's table.

use super::Writer;
use crate::ast::{BinaryOp, Expr, Function};
use crate::dialect::UpsertStyle;
use crate::error::{Error, Result};

impl Writer {
    pub(crate) fn expr(&mut self, e: &Expr) -> Result<()> {
        match e {
            Expr::Column(c) => {
                if let Some(t) = &c.table {
                    self.ident(t);
                    self.push(".");
                }
                self.ident(&c.column);
            }
            Expr::Value(v) => self.param(v.clone()),
            Expr::Binary { lhs, op, rhs } => {
                self.operand(lhs, Some(*op))?;
                self.push(" ");
                self.push(op.sql());
                self.push(" ");
                self.operand(rhs, Some(*op))?;
            }
            Expr::Not(inner) => {
                self.push("NOT ");
                self.operand(inner, None)?;
            }
            Expr::Neg(inner) => {
                self.push("-");
                self.operand(inner, None)?;
            }
            Expr::IsNull { expr, negated } => {
                self.operand(expr, None)?;
                self.push(if *negated { " IS NOT NULL" } else { " IS NULL" });
            }
            Expr::InList {
                expr,
                list,
                negated,
            } => {
                if list.is_empty() {
                    return Err(Error::EmptyInList);
                }
                self.operand(expr, None)?;
                self.push(if *negated { " NOT IN (" } else { " IN (" });
                for (i, item) in list.iter().enumerate() {
                    if i > 0 {
                        self.push(", ");
                    }
                    self.expr(item)?;
                }
                self.push(")");
            }
            Expr::InSubquery {
                expr,
                query,
                negated,
            } => {
                self.operand(expr, None)?;
                self.push(if *negated { " NOT IN (" } else { " IN (" });
                self.select(query)?;
                self.push(")");
            }
            Expr::Exists { query, negated } => {
                self.push(if *negated { "NOT EXISTS (" } else { "EXISTS (" });
                self.select(query)?;
                self.push(")");
            }
            Expr::Between {
                expr,
                low,
                high,
                negated,
            } => {
                self.operand(expr, None)?;
                self.push(if *negated {
                    " NOT BETWEEN "
                } else {
                    " BETWEEN "
                });
                self.operand(low, None)?;
                self.push(" AND ");
                self.operand(high, None)?;
            }
            Expr::Like {
                expr,
                pattern,
                negated,
            } => {
                self.operand(expr, None)?;
                self.push(if *negated { " NOT LIKE " } else { " LIKE " });
                self.operand(pattern, None)?;
                // The same escape character everywhere (SQLite has none by default), spelled as each
                // dialect writes a backslash in a string.
                self.push(" ESCAPE ");
                let rules = self.rules;
                rules.string_literal(&mut self.sql, "\\");
            }
            Expr::Call {
                func,
                args,
                distinct,
            } => self.call(*func, args, *distinct)?,
            Expr::CountStar => self.push("COUNT(*)"),
            Expr::Cast { expr, ty } => {
                self.push("CAST(");
                self.expr(expr)?;
                self.push(" AS ");
                let name = self.rules.cast_type(*ty);
                self.push(name);
                self.push(")");
            }
            Expr::Excluded(col) => match self.rules.upsert_style() {
                UpsertStyle::OnConflict => {
                    self.push("EXCLUDED.");
                    self.ident(col);
                }
                // MariaDB knows only `VALUES(col)` here; MySQL 8.0.20+ deprecates it but still runs it.
                UpsertStyle::OnDuplicateKey => {
                    self.push("VALUES(");
                    self.ident(col);
                    self.push(")");
                }
            },
        }
        Ok(())
    }

    fn call(&mut self, func: Function, args: &[Expr], distinct: bool) -> Result<()> {
        let arity_ok = match func {
            Function::Coalesce => !args.is_empty(),
            _ => args.len() == 1,
        };
        if !arity_ok {
            return Err(Error::Unsupported {
                dialect: self.dialect(),
                feature: "a function call with the wrong number of arguments",
            });
        }
        if distinct && !func.is_aggregate() {
            return Err(self.unsupported("DISTINCT inside a non-aggregate function"));
        }
        let name = self.rules.function(func);
        self.push(name);
        self.push(if distinct { "(DISTINCT " } else { "(" });
        for (i, a) in args.iter().enumerate() {
            if i > 0 {
                self.push(", ");
            }
            self.expr(a)?;
        }
        self.push(")");
        Ok(())
    }

    // ANCHOR: operand
    /// An operand: atoms as they are, operators in parentheses (but `a AND b AND c` stays flat).
    fn operand(&mut self, e: &Expr, parent: Option<BinaryOp>) -> Result<()> {
        let needs_parens = match e {
            Expr::Binary { op, .. } => {
                !(parent == Some(*op) && matches!(op, BinaryOp::And | BinaryOp::Or))
            }
            Expr::Not(_)
            | Expr::Neg(_)
            | Expr::IsNull { .. }
            | Expr::InList { .. }
            | Expr::InSubquery { .. }
            | Expr::Exists { .. }
            | Expr::Between { .. }
            | Expr::Like { .. } => true,
            _ => false,
        };
        if needs_parens {
            self.push("(");
            self.expr(e)?;
            self.push(")");
        } else {
            self.expr(e)?;
        }
        Ok(())
    }
    // ANCHOR_END: operand
}
