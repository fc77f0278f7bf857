//! Statement builders, method for method as the typed DSL has them: table markers start queries; SELECT
//! keeps the tables in scope (FROM, JOINs, correlated outer tables) to check every expression against;
//! INSERT, UPDATE and DELETE check columns and values against their table.

use tandem_sql::ast::{self, Conflict, Insert, JoinKind, Returning, Select, SelectItem, Statement};

use super::{Ctx, LitVal, Result, Typed, Val, arity};
use crate::reference::{On, no_method};
use crate::schema::Kind;
use crate::syntax::expr::{Expr, Name};
use crate::syntax::{Diagnostic, Span};

/// A SELECT being built.
#[derive(Clone, Debug)]
pub(crate) struct SelectB {
    pub ast: Select,
    /// FROM, JOINs and correlated outer tables: what expressions may read.
    pub tables: Vec<usize>,
    /// The outer tables a correlated subquery reads.
    pub outer: Vec<usize>,
    /// The kinds of the select list; `None` for `*`.
    pub out: Option<Vec<Kind>>,
    /// Where each item of the select list is written, for items that are neither a column nor aliased:
    /// their result column is headed by the DSL text rather than by SQLite's name for it (the whole SQL
    /// expression).
    pub headers: Vec<Option<Span>>,
}

impl SelectB {
    /// The one selected kind, for `in_subquery`.
    pub fn single_kind(&self) -> Option<Kind> {
        match self.out.as_deref() {
            Some([k]) => Some(*k),
            _ => None,
        }
    }

    /// The outer tables as sources of the expression the subquery is used in.
    pub fn outer_sources(&self, span: Span) -> Vec<(usize, Span)> {
        self.outer.iter().map(|t| (*t, span)).collect()
    }
}

/// An INSERT being built.
#[derive(Clone, Debug)]
pub(crate) struct InsertB {
    pub ast: Insert,
    pub table: usize,
    /// The chosen columns (indexes into the table's columns).
    pub cols: Option<Vec<usize>>,
}

/// An UPDATE being built.
#[derive(Clone, Debug)]
pub(crate) struct UpdateB {
    pub ast: ast::Update,
    pub table: usize,
}

/// A DELETE being built.
#[derive(Clone, Debug)]
pub(crate) struct DeleteB {
    pub ast: ast::Delete,
    pub table: usize,
}

impl Ctx<'_> {
    fn select_from(&self, t: usize) -> SelectB {
        SelectB {
            ast: Select::from(self.schema.tables[t].schema.name.clone()),
            tables: vec![t],
            outer: Vec::new(),
            out: None,
            headers: Vec::new(),
        }
    }

    /// `insert_into(t)`, `update(t)`, `delete_from(t)` and their method forms.
    pub(super) fn table_builder(&self, t: usize, which: &str) -> Val {
        let name = self.schema.tables[t].schema.name.clone();
        match which {
            "insert_into" | "insert" => Val::Insert(InsertB {
                ast: Insert::values(name, Vec::new(), Vec::new()),
                table: t,
                cols: None,
            }),
            "update" => Val::Update(UpdateB {
                ast: ast::Update {
                    table: name,
                    set: Vec::new(),
                    filter: None,
                },
                table: t,
            }),
            _ => Val::Delete(DeleteB {
                ast: ast::Delete {
                    table: name,
                    filter: None,
                },
                table: t,
            }),
        }
    }

    pub(super) fn subquery(&self, v: Val, span: Span) -> Result<SelectB> {
        match v {
            Val::Select(s) => Ok(s),
            other => Err(Diagnostic::new(
                format!(
                    "expected a SELECT query, found {}",
                    other.describe(self.schema)
                ),
                span,
            )),
        }
    }

    /// Argument `i` as a table marker.
    pub(super) fn table_arg(&self, args: &[Expr], i: usize) -> Result<usize> {
        match self.eval(&args[i])? {
            Val::Table(t) => Ok(t),
            other => Err(Diagnostic::new(
                format!(
                    "expected a table marker (`users::table`), found {}",
                    other.describe(self.schema)
                ),
                args[i].span(),
            )),
        }
    }

    /// A condition (a boolean expression) reading only `allowed` tables.
    fn condition(&self, e: &Expr, allowed: &[usize]) -> Result<Typed> {
        let t = match self.eval(e)? {
            Val::Expr(t) if t.kind == Kind::Bool => t,
            other => {
                return Err(Diagnostic::new(
                    format!(
                        "expected a condition (an SQL `bool` expression), found {}",
                        other.describe(self.schema)
                    ),
                    e.span(),
                ));
            }
        };
        self.check_sources(&t.sources, allowed)?;
        Ok(t)
    }

    /// A bare column of table `t`.
    fn column_of(&self, v: Val, span: Span, t: usize) -> Result<usize> {
        match v {
            Val::Expr(Typed {
                column: Some((table, c)),
                ..
            }) if table == t => Ok(c),
            _ => Err(Diagnostic::new(
                format!(
                    "expected a column of table `{}`",
                    self.schema.tables[t].module
                ),
                span,
            )),
        }
    }

    /// One column or a tuple of columns of table `t`.
    fn column_list(&self, e: &Expr, t: usize) -> Result<Vec<usize>> {
        match self.eval(e)? {
            Val::Tuple(items) => items
                .into_iter()
                .map(|(v, s)| self.column_of(v, s, t))
                .collect(),
            v => Ok(vec![self.column_of(v, e.span(), t)?]),
        }
    }

    /// Dispatches a method call on any value.
    pub(super) fn method(
        &self,
        recv: Val,
        recv_span: Span,
        m: &Name,
        args: &[Expr],
        span: Span,
    ) -> Result<Val> {
        match recv {
            Val::Table(t) => self.table_method(t, m, args, span),
            Val::Expr(t) => self.expr_method(t, recv_span, m, args, span),
            Val::Select(s) => self.select_method(s, m, args, span),
            Val::Insert(i) => self.insert_method(i, m, args, span),
            Val::Update(u) => self.update_method(u, m, args, span),
            Val::Delete(d) => self.delete_method(d, m, args, span),
            Val::Lit(_) => Err(Diagnostic::new(
                "a plain value has no SQL methods: start from the column (`users::age.gt(18)`)",
                recv_span,
            )),
            other => Err(Diagnostic::new(
                format!("{} has no method `{}`", other.describe(self.schema), m.name),
                m.span,
            )),
        }
    }

    fn table_method(&self, t: usize, m: &Name, args: &[Expr], span: Span) -> Result<Val> {
        match m.name.as_str() {
            "select_all" => {
                arity(m, args, 0, span)?;
                Ok(Val::Select(self.select_from(t)))
            }
            "select" | "filter" | "inner_join" | "left_join" => {
                self.select_method(self.select_from(t), m, args, span)
            }
            "insert" | "update" | "delete" => {
                arity(m, args, 0, span)?;
                Ok(self.table_builder(t, &m.name))
            }
            "create_table" => {
                arity(m, args, 0, span)?;
                Ok(Val::Statement(Statement::CreateTable(
                    self.schema.tables[t].schema.create_table(true),
                )))
            }
            "drop_table" => {
                arity(m, args, 0, span)?;
                Ok(Val::Statement(Statement::DropTable(
                    self.schema.tables[t].schema.drop_table(true),
                )))
            }
            other => Err(no_method(On::Table, other, m.span)),
        }
    }

    fn select_method(&self, mut s: SelectB, m: &Name, args: &[Expr], span: Span) -> Result<Val> {
        match m.name.as_str() {
            "select" => {
                arity(m, args, 1, span)?;
                let items = match self.eval(&args[0])? {
                    Val::Tuple(items) => items,
                    v => vec![(v, args[0].span())],
                };
                if items.is_empty() || items.len() > 8 {
                    return Err(Diagnostic::new(
                        "select one to eight items (a tuple of up to 8)",
                        args[0].span(),
                    ));
                }
                let mut list = Vec::new();
                let mut kinds = Vec::new();
                let mut headers = Vec::new();
                for (v, at) in items {
                    let (t, alias) = match v {
                        Val::Aliased(t, a) => (t, Some(a)),
                        v => (self.any_expr(v, at)?, None),
                    };
                    self.check_sources(&t.sources, &s.tables)?;
                    kinds.push(t.kind);
                    let computed = alias.is_none() && !matches!(t.ast, ast::Expr::Column(_));
                    headers.push(computed.then_some(at));
                    list.push(SelectItem::Expr { expr: t.ast, alias });
                }
                s.ast.items = list;
                s.out = Some(kinds);
                s.headers = headers;
            }
            "filter" | "having" => {
                arity(m, args, 1, span)?;
                let c = self.condition(&args[0], &s.tables)?;
                if m.name == "filter" {
                    s.ast.and_where(c.ast);
                } else {
                    ast::Expr::and_into(&mut s.ast.having, c.ast);
                }
            }
            "inner_join" | "left_join" => {
                arity(m, args, 2, span)?;
                let t = self.table_arg(args, 0)?;
                s.tables.push(t);
                let on = self.condition(&args[1], &s.tables)?;
                s.ast.joins.push(ast::Join {
                    kind: if m.name == "inner_join" {
                        JoinKind::Inner
                    } else {
                        JoinKind::Left
                    },
                    table: ast::TableRef::new(self.schema.tables[t].schema.name.clone()),
                    on: on.ast,
                });
            }
            "correlated_with" => {
                arity(m, args, 1, span)?;
                let t = self.table_arg(args, 0)?;
                s.tables.push(t);
                s.outer.push(t);
            }
            "order_by" => {
                arity(m, args, 1, span)?;
                match self.eval(&args[0])? {
                    Val::Order(o, sources) => {
                        self.check_sources(&sources, &s.tables)?;
                        s.ast.order_by.push(o);
                    }
                    _ => {
                        return Err(Diagnostic::new(
                            "order by a direction: `users::name.asc()` or `.desc()`",
                            args[0].span(),
                        ));
                    }
                }
            }
            "group_by" => {
                arity(m, args, 1, span)?;
                let e = self.any_expr(self.eval(&args[0])?, args[0].span())?;
                self.check_sources(&e.sources, &s.tables)?;
                s.ast.group_by.push(e.ast);
            }
            "distinct" => {
                arity(m, args, 0, span)?;
                s.ast.distinct = true;
            }
            "limit" | "offset" => {
                arity(m, args, 1, span)?;
                let n = match self.eval(&args[0])? {
                    Val::Lit(LitVal::Int {
                        value,
                        negative: false,
                        suffix,
                    }) if suffix.as_deref().is_none_or(|s| s == "u64")
                        && u64::try_from(value).is_ok() =>
                    {
                        value as u64
                    }
                    _ => {
                        return Err(Diagnostic::new(
                            format!("`{}` takes a count (a `u64`)", m.name),
                            args[0].span(),
                        ));
                    }
                };
                if m.name == "limit" {
                    s.ast.limit = Some(n);
                } else {
                    s.ast.offset = Some(n);
                }
            }
            "into_ast" => arity(m, args, 0, span)?,
            other => return Err(no_method(On::Query, other, m.span)),
        }
        Ok(Val::Select(s))
    }

    fn insert_method(&self, mut i: InsertB, m: &Name, args: &[Expr], span: Span) -> Result<Val> {
        let table = &self.schema.tables[i.table];
        match m.name.as_str() {
            "columns" => {
                arity(m, args, 1, span)?;
                let cols = self.column_list(&args[0], i.table)?;
                i.ast.columns = cols
                    .iter()
                    .map(|c| table.columns[*c].name.clone())
                    .collect();
                i.cols = Some(cols);
            }
            "values" | "rows" => {
                arity(m, args, 1, span)?;
                let Some(cols) = i.cols.clone() else {
                    return Err(Diagnostic::new(
                        "choose the columns first: `.columns((users::name, users::age))`",
                        m.span,
                    ));
                };
                let rows = if m.name == "values" {
                    vec![(self.eval(&args[0])?, args[0].span())]
                } else {
                    match self.eval(&args[0])? {
                        Val::Array(rows) => rows,
                        _ => {
                            return Err(Diagnostic::new(
                                "`rows` takes a list of rows: `[(..), (..)]`",
                                args[0].span(),
                            ));
                        }
                    }
                };
                for (row, at) in rows {
                    let values = match row {
                        Val::Tuple(v) if cols.len() > 1 || v.len() == 1 => v,
                        v if cols.len() == 1 => vec![(v, at)],
                        _ => {
                            return Err(Diagnostic::new(
                                format!("a row of {} values is a tuple: `(..)`", cols.len()),
                                at,
                            ));
                        }
                    };
                    if values.len() != cols.len() {
                        return Err(Diagnostic::new(
                            format!(
                                "this row has {} values; the INSERT names {} columns",
                                values.len(),
                                cols.len()
                            ),
                            at,
                        ));
                    }
                    let mut out = Vec::with_capacity(values.len());
                    for ((v, s), c) in values.into_iter().zip(&cols) {
                        let kind = table.columns[*c].kind;
                        match v {
                            Val::Lit(l) => out.push(l.value(kind, s)?),
                            _ => {
                                return Err(Diagnostic::new(
                                    format!("insert a plain `{}` value here", kind.rust()),
                                    s,
                                ));
                            }
                        }
                    }
                    if let ast::InsertSource::Values(rows) = &mut i.ast.source {
                        rows.push(out);
                    }
                }
            }
            "on_conflict_do_nothing" => {
                arity(m, args, 0, span)?;
                i.ast.conflict = Conflict::Ignore { target: Vec::new() };
            }
            "on_conflict_update" => {
                arity(m, args, 2, span)?;
                let target = self.column_list(&args[0], i.table)?;
                let set = self.column_list(&args[1], i.table)?;
                i.ast.conflict = Conflict::Update {
                    target: target
                        .iter()
                        .map(|c| table.columns[*c].name.clone())
                        .collect(),
                    set: set
                        .iter()
                        .map(|c| {
                            let n = table.columns[*c].name.clone();
                            (n.clone(), ast::Expr::Excluded(n))
                        })
                        .collect(),
                };
            }
            "returning" => {
                arity(m, args, 1, span)?;
                let c = self.column_of(self.eval(&args[0])?, args[0].span(), i.table)?;
                i.ast.returning = Returning::Columns(vec![table.columns[c].name.clone()]);
            }
            "entity" | "entities" => {
                return Err(Diagnostic::new(
                    "entities are Rust values the playground cannot build: use `.columns(..).values(..)`",
                    m.span,
                ));
            }
            "into_ast" => arity(m, args, 0, span)?,
            other => return Err(no_method(On::Insert, other, m.span)),
        }
        Ok(Val::Insert(i))
    }

    fn update_method(&self, mut u: UpdateB, m: &Name, args: &[Expr], span: Span) -> Result<Val> {
        match m.name.as_str() {
            "set" => {
                arity(m, args, 2, span)?;
                let c = self.column_of(self.eval(&args[0])?, args[0].span(), u.table)?;
                let col = &self.schema.tables[u.table].columns[c];
                let v = self.to_expr(self.eval(&args[1])?, args[1].span(), col.kind)?;
                self.check_sources(&v.sources, &[u.table])?;
                u.ast.set.push((col.name.clone(), v.ast));
            }
            "filter" => {
                arity(m, args, 1, span)?;
                let c = self.condition(&args[0], &[u.table])?;
                ast::Expr::and_into(&mut u.ast.filter, c.ast);
            }
            "into_ast" => arity(m, args, 0, span)?,
            other => return Err(no_method(On::Update, other, m.span)),
        }
        Ok(Val::Update(u))
    }

    fn delete_method(&self, mut d: DeleteB, m: &Name, args: &[Expr], span: Span) -> Result<Val> {
        match m.name.as_str() {
            "filter" => {
                arity(m, args, 1, span)?;
                let c = self.condition(&args[0], &[d.table])?;
                ast::Expr::and_into(&mut d.ast.filter, c.ast);
            }
            "into_ast" => arity(m, args, 0, span)?,
            other => return Err(no_method(On::Delete, other, m.span)),
        }
        Ok(Val::Delete(d))
    }
}
