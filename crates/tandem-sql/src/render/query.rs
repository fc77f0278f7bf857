//! SELECT, INSERT (with conflict handling and generated keys), UPDATE and DELETE.

use super::{GeneratedKey, Render, Rendered, Writer};
use crate::ast::{
    Conflict, Delete, Insert, InsertSource, JoinKind, Order, Returning, Select, SelectItem,
    TableRef, Update,
};
use crate::dialect::{Dialect, UpsertStyle};
use crate::error::{Error, Result};
use crate::value::Value;

impl Render for Select {
    fn render(&self, dialect: Dialect) -> Result<Rendered> {
        let mut w = Writer::new(dialect);
        w.select(self)?;
        w.finish(GeneratedKey::None)
    }
}

impl Render for Insert {
    fn render(&self, dialect: Dialect) -> Result<Rendered> {
        let rows = match &self.source {
            InsertSource::Values(rows) => Some(rows.as_slice()),
            InsertSource::Select(_) => None,
        };
        render_insert(
            self,
            dialect,
            rows.map(|r| r.iter().map(|row| row.iter().cloned())),
        )
    }
}

impl Insert {
    /// Renders this INSERT, consuming its rows instead of cloning them (the batch path).
    pub fn into_rendered(self, dialect: Dialect) -> Result<Rendered> {
        let mut this = self;
        let rows = match std::mem::replace(&mut this.source, InsertSource::Values(Vec::new())) {
            InsertSource::Values(rows) => rows,
            select @ InsertSource::Select(_) => {
                this.source = select;
                return this.render(dialect);
            }
        };
        render_insert(
            &this,
            dialect,
            Some(rows.into_iter().map(|row| row.into_iter())),
        )
    }
}

impl Render for Update {
    fn render(&self, dialect: Dialect) -> Result<Rendered> {
        if self.set.is_empty() {
            return Err(Error::Empty {
                what: "UPDATE SET list",
            });
        }
        let mut w = Writer::new(dialect);
        w.push("UPDATE ");
        w.ident(&self.table);
        w.push(" SET ");
        w.assignments(&self.set)?;
        if let Some(f) = &self.filter {
            w.push(" WHERE ");
            w.expr(f)?;
        }
        w.finish(GeneratedKey::None)
    }
}

impl Render for Delete {
    fn render(&self, dialect: Dialect) -> Result<Rendered> {
        let mut w = Writer::new(dialect);
        w.push("DELETE FROM ");
        w.ident(&self.table);
        if let Some(f) = &self.filter {
            w.push(" WHERE ");
            w.expr(f)?;
        }
        w.finish(GeneratedKey::None)
    }
}

/// The shared INSERT walk; `rows` is `None` for `INSERT … SELECT`.
fn render_insert<R, V>(insert: &Insert, dialect: Dialect, rows: Option<R>) -> Result<Rendered>
where
    R: ExactSizeIterator<Item = V>,
    V: ExactSizeIterator<Item = Value>,
{
    if insert.columns.is_empty() {
        return Err(Error::Empty {
            what: "INSERT column list",
        });
    }
    let width = insert.columns.len();
    let row_count = rows.as_ref().map_or(0, |r| r.len());
    if rows.is_some() && row_count == 0 {
        return Err(Error::EmptyBatch {
            table: insert.table.to_string(),
        });
    }
    // Reject before writing anything: a statement over the limit would fail on the server anyway.
    let params = row_count * width;
    if params > dialect.param_limit() {
        return Err(Error::TooManyParameters {
            dialect,
            count: params,
            limit: dialect.param_limit(),
        });
    }
    let mut w = Writer::with_capacity(dialect, 64 + 8 * width + params * 7, params + 2);
    let key = generated_key(insert, &w)?;
    w.push("INSERT INTO ");
    w.ident(&insert.table);
    w.push(" (");
    w.ident_list(&insert.columns);
    w.push(")");
    match rows {
        Some(rows) => {
            w.push(" VALUES ");
            for (r, row) in rows.enumerate() {
                if row.len() != width {
                    return Err(Error::RowWidth {
                        row: r,
                        expected: width,
                        found: row.len(),
                    });
                }
                w.push(if r == 0 { "(" } else { ", (" });
                for (c, v) in row.enumerate() {
                    if c > 0 {
                        w.push(", ");
                    }
                    w.param(v);
                }
                w.push(")");
            }
        }
        None => {
            let InsertSource::Select(select) = &insert.source else {
                return Err(Error::EmptyBatch {
                    table: insert.table.to_string(),
                });
            };
            w.push(" ");
            let needs_where = insert.conflict != Conflict::Fail
                && select.filter.is_none()
                && w.rules.upsert_select_needs_where();
            w.select(select)?;
            if needs_where {
                if !select.group_by.is_empty()
                    || !select.order_by.is_empty()
                    || select.limit.is_some()
                {
                    return Err(w.unsupported(
                        "an upsert from a SELECT without WHERE that groups, orders or limits",
                    ));
                }
                w.push(" WHERE true");
            }
        }
    }
    w.conflict(insert)?;
    if let (GeneratedKey::Returning, Returning::Columns(cols)) = (&key, &insert.returning) {
        w.push(" RETURNING ");
        w.ident_list(cols);
    }
    w.finish(key)
}

fn generated_key(insert: &Insert, w: &Writer) -> Result<GeneratedKey> {
    let Returning::Columns(cols) = &insert.returning else {
        return Ok(GeneratedKey::None);
    };
    if cols.is_empty() {
        return Err(Error::Empty {
            what: "RETURNING column list",
        });
    }
    if w.rules.supports_returning() {
        return Ok(GeneratedKey::Returning);
    }
    if cols.len() > 1 {
        return Err(
            w.unsupported("RETURNING more than the generated key (it has only LAST_INSERT_ID)")
        );
    }
    if insert.conflict != Conflict::Fail {
        return Err(
            w.unsupported("returning keys from an INSERT that ignores or updates conflicts")
        );
    }
    if matches!(insert.source, InsertSource::Select(_)) {
        return Err(w.unsupported("returning keys from INSERT … SELECT"));
    }
    Ok(GeneratedKey::LastInsertId)
}

impl Writer {
    pub(crate) fn select(&mut self, s: &Select) -> Result<()> {
        self.push(if s.distinct {
            "SELECT DISTINCT "
        } else {
            "SELECT "
        });
        if s.items.is_empty() {
            self.push("*");
        }
        for (i, item) in s.items.iter().enumerate() {
            if i > 0 {
                self.push(", ");
            }
            match item {
                SelectItem::Star => self.push("*"),
                SelectItem::TableStar(t) => {
                    self.ident(t);
                    self.push(".*");
                }
                SelectItem::Expr { expr, alias } => {
                    self.expr(expr)?;
                    if let Some(a) = alias {
                        self.push(" AS ");
                        self.ident(a);
                    }
                }
            }
        }
        self.push(" FROM ");
        self.table_ref(&s.from);
        for j in &s.joins {
            self.push(match j.kind {
                JoinKind::Inner => " INNER JOIN ",
                JoinKind::Left => " LEFT JOIN ",
            });
            self.table_ref(&j.table);
            self.push(" ON ");
            self.expr(&j.on)?;
        }
        if let Some(f) = &s.filter {
            self.push(" WHERE ");
            self.expr(f)?;
        }
        for (i, g) in s.group_by.iter().enumerate() {
            self.push(if i == 0 { " GROUP BY " } else { ", " });
            self.expr(g)?;
        }
        if let Some(h) = &s.having {
            if s.group_by.is_empty() {
                return Err(self.unsupported("HAVING without GROUP BY"));
            }
            self.push(" HAVING ");
            self.expr(h)?;
        }
        for (i, o) in s.order_by.iter().enumerate() {
            self.push(if i == 0 { " ORDER BY " } else { ", " });
            self.expr(&o.expr)?;
            self.push(match o.order {
                Order::Asc => " ASC",
                Order::Desc => " DESC",
            });
        }
        self.limit_offset(s.limit, s.offset);
        Ok(())
    }

    fn table_ref(&mut self, t: &TableRef) {
        self.ident(&t.name);
        if let Some(a) = &t.alias {
            self.push(" AS ");
            self.ident(a);
        }
    }

    fn assignments(&mut self, set: &[(crate::ident::Ident, crate::ast::Expr)]) -> Result<()> {
        for (i, (col, e)) in set.iter().enumerate() {
            if i > 0 {
                self.push(", ");
            }
            self.ident(col);
            self.push(" = ");
            self.expr(e)?;
        }
        Ok(())
    }

    fn conflict(&mut self, insert: &Insert) -> Result<()> {
        match (&insert.conflict, self.rules.upsert_style()) {
            (Conflict::Fail, _) => {}
            (Conflict::Ignore { target }, UpsertStyle::OnConflict) => {
                self.push(" ON CONFLICT");
                if !target.is_empty() {
                    self.push(" (");
                    self.ident_list(target);
                    self.push(")");
                }
                self.push(" DO NOTHING");
            }
            (Conflict::Update { target, set }, UpsertStyle::OnConflict) => {
                if target.is_empty() {
                    return Err(self.unsupported("ON CONFLICT DO UPDATE without a conflict target"));
                }
                if set.is_empty() {
                    return Err(Error::Empty {
                        what: "upsert SET list",
                    });
                }
                self.push(" ON CONFLICT (");
                self.ident_list(target);
                self.push(") DO UPDATE SET ");
                self.assignments(set)?;
            }
            // Not `INSERT IGNORE`: it also turns errors such as a too-long string or a missing foreign key
            // into warnings and stores a truncated value or nothing. Assigning a column to itself skips the
            // duplicate and nothing else. Affected-row counts cannot tell skipped rows from inserted ones
            // when the client asks for found rows (sqlx always does), so each skipped row also bumps the
            // session variable `@tandem_duplicates`, which batch plans reset before and read after.
            (Conflict::Ignore { target }, UpsertStyle::OnDuplicateKey) => {
                let col = target.first().unwrap_or(&insert.columns[0]).clone();
                self.push(" ON DUPLICATE KEY UPDATE ");
                self.ident(&col);
                self.push(" = IF((@tandem_duplicates := @tandem_duplicates + 1) > 0, ");
                self.ident(&col);
                self.push(", ");
                self.ident(&col);
                self.push(")");
            }
            (Conflict::Update { set, .. }, UpsertStyle::OnDuplicateKey) => {
                if set.is_empty() {
                    return Err(Error::Empty {
                        what: "upsert SET list",
                    });
                }
                self.push(" ON DUPLICATE KEY UPDATE ");
                self.assignments(set)?;
            }
        }
        Ok(())
    }
}
