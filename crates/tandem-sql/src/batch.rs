//! Multi-row INSERTs that split themselves to fit each engine's bind-parameter limit.
//!
//! A batch of N rows of W columns needs N × W parameters; PostgreSQL and MySQL stop at 65,535 per statement,
//! SQLite at 32,766. [`Insert::into_chunks`] cuts the rows into consecutive chunks, each as large as allowed
//! (or as asked), keeping every row exactly once and in order.

use crate::ast::{Insert, InsertSource};
use crate::dialect::Dialect;
use crate::error::{Error, Result};
use crate::render::Rendered;

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
