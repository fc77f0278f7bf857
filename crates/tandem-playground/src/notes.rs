//! Dialect notes: where a dialect's SQL cannot say exactly what the query says, what tandem does instead.
//! The SQL panes show them under the statement, so a difference is never silent (MySQL's pane has no
//! `RETURNING`, and says how the key comes back instead).

use tandem_sql::Dialect;
use tandem_sql::ast::{
    Conflict, Expr, Insert, InsertSource, Returning, Select, SelectItem, Statement,
};

/// What a statement contains that dialects treat differently.
#[derive(Default)]
struct Seen {
    like: bool,
    limit_in_subquery: bool,
}

impl Seen {
    fn select(&mut self, s: &Select, nested: bool) {
        if nested && s.limit.is_some() {
            self.limit_in_subquery = true;
        }
        for item in &s.items {
            if let SelectItem::Expr { expr, .. } = item {
                self.expr(expr);
            }
        }
        for j in &s.joins {
            self.expr(&j.on);
        }
        let rest = s.filter.iter().chain(&s.group_by).chain(&s.having);
        for e in rest.chain(s.order_by.iter().map(|o| &o.expr)) {
            self.expr(e);
        }
    }

    fn expr(&mut self, e: &Expr) {
        match e {
            Expr::Column(_) | Expr::Value(_) | Expr::CountStar | Expr::Excluded(_) => {}
            Expr::Binary { lhs, rhs, .. } => {
                self.expr(lhs);
                self.expr(rhs);
            }
            Expr::Not(e) | Expr::Neg(e) | Expr::IsNull { expr: e, .. } => self.expr(e),
            Expr::Cast { expr, .. } => self.expr(expr),
            Expr::InList { expr, list, .. } => {
                self.expr(expr);
                list.iter().for_each(|e| self.expr(e));
            }
            Expr::InSubquery { expr, query, .. } => {
                self.expr(expr);
                self.select(query, true);
            }
            Expr::Exists { query, .. } => self.select(query, false),
            Expr::Between {
                expr, low, high, ..
            } => {
                self.expr(expr);
                self.expr(low);
                self.expr(high);
            }
            Expr::Like { expr, pattern, .. } => {
                self.like = true;
                self.expr(expr);
                self.expr(pattern);
            }
            Expr::Call { args, .. } => args.iter().for_each(|e| self.expr(e)),
            _ => {}
        }
    }
}

/// The notes for `stmt` rendered for `dialect`, each a sentence or two.
pub fn notes(stmt: &Statement, dialect: Dialect) -> Vec<String> {
    let mut seen = Seen::default();
    let mut insert: Option<&Insert> = None;
    match stmt {
        Statement::Select(s) => seen.select(s, false),
        Statement::Insert(i) => {
            insert = Some(i);
            if let InsertSource::Select(s) = &i.source {
                seen.select(s, false);
            }
        }
        Statement::Update(u) => {
            u.set.iter().for_each(|(_, e)| seen.expr(e));
            u.filter.iter().for_each(|e| seen.expr(e));
        }
        Statement::Delete(d) => d.filter.iter().for_each(|e| seen.expr(e)),
        _ => {}
    }
    let mut out = Vec::new();
    match dialect {
        Dialect::MySql => {
            if let Some(i) = insert {
                if let Returning::Columns(_) = i.returning {
                    out.push(
                        "MySQL has no RETURNING: tandem runs this INSERT, then reads the generated key with \
                         LAST_INSERT_ID() (the first row's; the next rows' follow it by \
                         @@auto_increment_increment)."
                            .to_owned(),
                    );
                }
                match &i.conflict {
                    Conflict::Fail => {}
                    Conflict::Ignore { .. } => out.push(
                        "MySQL cannot name the conflict target: a collision with any unique key skips the \
                         row. Not INSERT IGNORE, which would also turn bad values into warnings: the no-op \
                         ON DUPLICATE KEY UPDATE skips duplicates only, and counts them in \
                         @tandem_duplicates."
                            .to_owned(),
                    ),
                    Conflict::Update { .. } => out.push(
                        "ON DUPLICATE KEY UPDATE fires on a collision with any unique key, not only the \
                         conflict target; the value being inserted is VALUES(column) where PostgreSQL and \
                         SQLite say EXCLUDED.column."
                            .to_owned(),
                    ),
                }
            }
            if seen.like {
                out.push(
                    "MySQL's LIKE follows the column's collation: case-sensitive on tables tandem creates \
                     (a binary collation), case-insensitive on a default utf8mb4 table."
                        .to_owned(),
                );
            }
            if seen.limit_in_subquery {
                out.push(
                    "MySQL refuses LIMIT inside an IN (…) subquery (error 1235); MariaDB accepts it."
                        .to_owned(),
                );
            }
        }
        Dialect::Sqlite if seen.like => out.push(
            "SQLite's LIKE ignores ASCII case unless PRAGMA case_sensitive_like = ON, which tandem's \
             connections (and this page) set: LIKE is case-sensitive on every engine tandem drives."
                .to_owned(),
        ),
        _ => {}
    }
    out
}
