//! Multi-row INSERTs that split themselves to fit each engine's bind-parameter limit.
//!
//! A batch of N rows of W columns needs N × W parameters; PostgreSQL and MySQL stop at 65,535 per statement,
//! SQLite at 32,766. [`Insert::into_chunks`] cuts the rows into consecutive chunks, each as large as allowed
//! (or as asked), keeping every row exactly once and in order.

use crate::ast::{Insert, InsertSource};
use crate::dialect::Dialect;
use crate::error::{Error, Result};
use crate::render::{Render, Rendered};
use crate::value::ValueRef;

/// How many rows of `width` columns fit in one statement for `dialect`, capped at `max_rows` if given.
pub fn rows_per_statement(
    dialect: Dialect,
    width: usize,
    max_rows: Option<usize>,
) -> Result<usize> {
    if width == 0 {
        return Err(Error::Empty {
            what: "INSERT column list",
        });
    }
    let by_limit = dialect.param_limit() / width;
    if by_limit == 0 {
        return Err(Error::TooManyParameters {
            dialect,
            count: width,
            limit: dialect.param_limit(),
        });
    }
    Ok(match max_rows {
        Some(m) if m > 0 => m.min(by_limit),
        _ => by_limit,
    })
}

impl Insert {
    /// Splits a multi-row INSERT into statements that each respect `dialect`'s parameter limit and hold at
    /// most `max_rows` rows (if given). Conflict handling and RETURNING apply to every chunk.
    pub fn into_chunks(self, dialect: Dialect, max_rows: Option<usize>) -> Result<Vec<Insert>> {
        let per = rows_per_statement(dialect, self.columns.len(), max_rows)?;
        let Insert {
            table,
            columns,
            source,
            conflict,
            returning,
        } = self;
        let rows = match source {
            InsertSource::Values(rows) => rows,
            select @ InsertSource::Select(_) => {
                return Ok(vec![Insert {
                    table,
                    columns,
                    source: select,
                    conflict,
                    returning,
                }]);
            }
        };
        if rows.is_empty() {
            return Err(Error::EmptyBatch {
                table: table.to_string(),
            });
        }
        let mut out = Vec::with_capacity(rows.len().div_ceil(per));
        let mut rows = rows.into_iter().peekable();
        while rows.peek().is_some() {
            let chunk: Vec<_> = rows.by_ref().take(per).collect();
            out.push(Insert {
                table: table.clone(),
                columns: columns.clone(),
                source: InsertSource::Values(chunk),
                conflict: conflict.clone(),
                returning: returning.clone(),
            });
        }
        Ok(out)
    }

    /// [`Insert::into_chunks`], rendered.
    pub fn render_chunks(self, dialect: Dialect, max_rows: Option<usize>) -> Result<Vec<Rendered>> {
        self.into_chunks(dialect, max_rows)?
            .into_iter()
            .map(|i| i.into_rendered(dialect))
            .collect()
    }
}

/// The two statements around a MySQL insert that ignores duplicates, counting what it skipped (the
/// rendering of [`crate::ast::Conflict::Ignore`] bumps the session variable they reset and read).
#[derive(Clone, Debug)]
pub struct DuplicateCounter {
    /// Sets the count to zero.
    pub reset: Rendered,
    /// Reads the count: one row, one `BIGINT`.
    pub read: Rendered,
}

/// The SQL text of a multi-row INSERT for each row count, rendered once and reused: a batch of thousands of
/// chunks renders its statement text once (twice with a shorter last chunk) and only builds parameters per
/// chunk.
#[derive(Debug)]
pub struct InsertTemplate {
    dialect: Dialect,
    shape: Insert,
    texts: Vec<(usize, Rendered)>,
}

impl InsertTemplate {
    /// A template for INSERTs like `shape` (its rows are ignored; its table, columns, conflict handling and
    /// RETURNING are kept).
    pub fn new(dialect: Dialect, mut shape: Insert) -> Self {
        shape.source = InsertSource::Values(Vec::new());
        InsertTemplate {
            dialect,
            shape,
            texts: Vec::new(),
        }
    }

    /// The statements that count the duplicates a statement of this template skipped, where its affected-row
    /// count cannot tell them apart (MySQL with found rows, which every driver here asks for): run `reset`
    /// before the insert and `read` after it; `read` returns one row with the count. `None` where the
    /// affected-row count is the number inserted already.
    pub fn duplicate_counter(&self) -> Result<Option<DuplicateCounter>> {
        if self.dialect != Dialect::MySql
            || !matches!(self.shape.conflict, crate::ast::Conflict::Ignore { .. })
        {
            return Ok(None);
        }
        Ok(Some(DuplicateCounter {
            reset: crate::raw("SET @tandem_duplicates = 0", vec![]).render(self.dialect)?,
            read: crate::raw("SELECT CAST(@tandem_duplicates AS SIGNED)", vec![])
                .render(self.dialect)?,
        }))
    }

    /// The statement for `params`, which hold `params.len() / width` rows of values in column order.
    pub fn statement(&mut self, params: Vec<crate::Value>) -> Result<Rendered> {
        crate::render::check_values(self.dialect, &params)?;
        let text = self.text(params.len())?;
        Ok(Rendered {
            sql: text.sql.clone(),
            params,
            generated_key: text.generated_key.clone(),
        })
    }

    /// [`InsertTemplate::statement`] for values that borrow their text and bytes (see [`ValueRef`]): the
    /// same checks, the same SQL.
    pub fn statement_refs<'a>(
        &mut self,
        params: Vec<ValueRef<'a>>,
    ) -> Result<BorrowedStatement<'a>> {
        crate::render::check_values_iter(
            self.dialect,
            params.iter().filter_map(|p| match p {
                ValueRef::Value(v) => Some(v),
                _ => None,
            }),
        )?;
        let text = self.text(params.len())?;
        Ok(BorrowedStatement {
            sql: text.sql.clone(),
            params,
        })
    }

    /// The statement text for `count` parameters (rendered once per row count), after checking the count.
    fn text(&mut self, count: usize) -> Result<&Rendered> {
        let width = self.shape.columns.len();
        if width == 0 || count == 0 || !count.is_multiple_of(width) {
            return Err(Error::RowWidth {
                row: 0,
                expected: width,
                found: count,
            });
        }
        let rows = count / width;
        if count > self.dialect.param_limit() {
            return Err(Error::TooManyParameters {
                dialect: self.dialect,
                count,
                limit: self.dialect.param_limit(),
            });
        }
        let at = match self.texts.iter().position(|(n, _)| *n == rows) {
            Some(at) => at,
            None => {
                let r = self.render_rows(rows)?;
                self.texts.push((rows, r));
                self.texts.len() - 1
            }
        };
        Ok(&self.texts[at].1)
    }

    /// The text for `rows` rows: from the process's cache of texts ([`TEXTS`]), keyed by the one-row text
    /// (which names the table, the columns, the conflict handling and RETURNING) and how it reports
    /// generated keys, or rendered and kept.
    fn render_rows(&self, rows: usize) -> Result<Rendered> {
        let width = self.shape.columns.len();
        let shaped = |rows: usize| {
            let mut shape = self.shape.clone();
            shape.source =
                InsertSource::Values(vec![
                    vec![crate::Value::Null(crate::SqlType::Int); width];
                    rows
                ]);
            shape.into_rendered(self.dialect)
        };
        // The one-row text and how it reports generated keys: two INSERTs of the same text may differ in
        // that alone (MySQL's keys come from the connection, not the text).
        let one = shaped(1)?;
        let key = (self.dialect, one.sql, one.generated_key, rows);
        let lock = || TEXTS.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(r) = lock().as_ref().and_then(|texts| texts.get(&key)) {
            return Ok(r.clone());
        }
        let r = shaped(rows)?;
        let mut texts = lock();
        let texts = texts.get_or_insert_with(std::collections::HashMap::new);
        if texts.len() >= TEXTS_KEPT {
            texts.clear();
        }
        texts.insert(key, r.clone());
        Ok(r)
    }
}

/// The multi-row INSERT texts rendered so far in this process, by dialect, one-row text, generated keys and
/// row count. A
/// batch job writes each chunk through a template of its own (one plan per chunk, built without I/O), so
/// a template's own texts live one chunk; rendering a 500-row text (a thousand placeholders) took more of
/// the job's client-side instructions than binding the values.
static TEXTS: std::sync::Mutex<Option<Texts>> = std::sync::Mutex::new(None);

/// Rendered texts by dialect, one-row text, generated keys and row count.
type Texts =
    std::collections::HashMap<(Dialect, String, crate::render::GeneratedKey, usize), Rendered>;

/// How many texts [`TEXTS`] keeps before it starts again (a process that writes to many tables, or chunks
/// of many sizes, renders again rather than grow without bound).
const TEXTS_KEPT: usize = 256;

/// An INSERT whose parameters borrow the rows they come from: what a blocking executor binds in place.
/// It returns no rows and no generated keys (see [`InsertTemplate::statement_refs`]).
#[derive(Clone, Debug, PartialEq)]
pub struct BorrowedStatement<'a> {
    /// The SQL text, with the dialect's placeholders.
    pub sql: String,
    /// The values, in placeholder order.
    pub params: Vec<ValueRef<'a>>,
}

impl BorrowedStatement<'_> {
    /// The same statement owning its values.
    pub fn to_rendered(&self) -> Rendered {
        Rendered {
            sql: self.sql.clone(),
            params: self.params.iter().map(ValueRef::to_value).collect(),
            generated_key: crate::GeneratedKey::None,
        }
    }
}

#[cfg(test)]
mod duplicate_counter_tests {
    use super::*;
    use crate::ast::{Conflict, Insert};
    use crate::ident::Ident;

    fn shape(conflict: Conflict) -> Insert {
        let mut i = Insert::values(
            Ident::new("t").unwrap(),
            vec![Ident::new("a").unwrap()],
            Vec::new(),
        );
        i.conflict = conflict;
        i
    }

    #[test]
    fn only_mysql_ignoring_duplicates_counts_them() {
        let ignore = || Conflict::Ignore { target: Vec::new() };
        let c = InsertTemplate::new(Dialect::MySql, shape(ignore()))
            .duplicate_counter()
            .unwrap()
            .expect("MySQL ignoring duplicates counts them");
        assert_eq!(c.reset.sql, "SET @tandem_duplicates = 0");
        assert_eq!(c.read.sql, "SELECT CAST(@tandem_duplicates AS SIGNED)");
        let mut t = InsertTemplate::new(Dialect::MySql, shape(ignore()));
        let insert = t.statement(vec![crate::Value::I64(1)]).unwrap();
        assert!(insert.sql.contains("@tandem_duplicates"), "{}", insert.sql);
        for (dialect, conflict) in [
            (Dialect::Postgres, ignore()),
            (Dialect::Sqlite, ignore()),
            (Dialect::MySql, Conflict::Fail),
        ] {
            let none = InsertTemplate::new(dialect, shape(conflict)).duplicate_counter();
            assert!(none.unwrap().is_none(), "{dialect}");
        }
    }

    /// Templates share the texts rendered in the process, but only for the same INSERT: on MySQL an
    /// INSERT that returns its keys has the same text as one that does not (the keys come from the
    /// connection), and each keeps its own way of reporting them, whichever rendered first.
    #[test]
    fn shared_texts_keep_each_insert_own_keys() {
        use crate::ast::Returning;
        let keyed = || {
            let mut s = shape(Conflict::Fail);
            s.returning = Returning::Columns(vec![Ident::new("a").unwrap()]);
            s
        };
        let params = || vec![crate::Value::I64(1), crate::Value::I64(2)];
        for order in [[false, true], [true, false]] {
            for returns in order {
                let s = if returns {
                    keyed()
                } else {
                    shape(Conflict::Fail)
                };
                let r = InsertTemplate::new(Dialect::MySql, s)
                    .statement(params())
                    .unwrap();
                assert_eq!(r.sql, "INSERT INTO `t` (`a`) VALUES (?), (?)");
                let want = match returns {
                    true => crate::GeneratedKey::LastInsertId,
                    false => crate::GeneratedKey::None,
                };
                assert_eq!(r.generated_key, want, "returns keys: {returns}");
            }
        }
        // And a text of another row count is its own.
        let r = InsertTemplate::new(Dialect::MySql, shape(Conflict::Fail))
            .statement(vec![crate::Value::I64(1)])
            .unwrap();
        assert_eq!(r.sql, "INSERT INTO `t` (`a`) VALUES (?)");
    }
}
