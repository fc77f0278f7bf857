//! SQLite: `?` placeholders, `RETURNING` (3.35+), rowid aliases for auto-increment, type affinity.

use super::{Dialect, LimitPart, Rules};
use crate::ast::ColumnDef;
use crate::value::SqlType;

pub(crate) struct Sqlite;

impl Rules for Sqlite {
    fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }

    /// `SQLITE_MAX_VARIABLE_NUMBER` defaults to 32,766 since SQLite 3.32.0.
    fn param_limit(&self) -> usize {
        32_766
    }

    // ANCHOR: limit_offset
    /// SQLite's grammar has no OFFSET without LIMIT; a negative LIMIT means "no limit"
    /// (<https://www.sqlite.org/lang_select.html#limitoffset>).
    fn limit_offset(&self, limit: Option<u64>, offset: Option<u64>, w: &mut dyn FnMut(LimitPart)) {
        match (limit, offset) {
            (Some(l), _) => {
                w(LimitPart::Sql(" LIMIT "));
                w(LimitPart::Param(l));
            }
            (None, Some(_)) => w(LimitPart::Sql(" LIMIT -1")),
            (None, None) => {}
        }
        if let Some(o) = offset {
            w(LimitPart::Sql(" OFFSET "));
            w(LimitPart::Param(o));
        }
    }
    // ANCHOR_END: limit_offset

    /// The declared names are chosen for their affinity and for what drivers read back from them: an
    /// auto-increment key must be spelled exactly `INTEGER` to alias the rowid.
    fn column_type(&self, col: &ColumnDef) -> String {
        if col.auto_increment {
            return "INTEGER".into();
        }
        match col.ty {
            SqlType::Bool => "BOOLEAN".into(),
            SqlType::SmallInt => "SMALLINT".into(),
            SqlType::Int => "INTEGER".into(),
            SqlType::BigInt => "BIGINT".into(),
            SqlType::Real => "REAL".into(),
            SqlType::Double => "DOUBLE".into(),
            SqlType::Text => "TEXT".into(),
            SqlType::VarChar(n) => format!("VARCHAR({n})"),
            SqlType::Blob => "BLOB".into(),
            SqlType::Date => "DATE".into(),
            SqlType::Time => "TIME".into(),
            SqlType::Timestamp => "DATETIME".into(),
            SqlType::TimestampTz => "TIMESTAMPTZ".into(),
            SqlType::Uuid => "BLOB".into(),
        }
    }

    fn cast_type(&self, ty: SqlType) -> &'static str {
        match ty {
            SqlType::Bool | SqlType::SmallInt | SqlType::Int | SqlType::BigInt => "INTEGER",
            SqlType::Real | SqlType::Double => "REAL",
            SqlType::Blob | SqlType::Uuid => "BLOB",
            _ => "TEXT",
        }
    }

    /// Older SQLite builds lack `TRUE`/`FALSE` keywords; 1 and 0 work everywhere.
    fn bool_literal(&self, b: bool) -> &'static str {
        if b { "1" } else { "0" }
    }

    /// `AUTOINCREMENT` keeps ids monotonic (no reuse of a deleted maximum), as on the other engines.
    fn auto_increment(&self) -> &'static str {
        " PRIMARY KEY AUTOINCREMENT"
    }

    /// `AUTOINCREMENT` is only valid right after `PRIMARY KEY`.
    fn auto_increment_is_primary_key(&self) -> bool {
        true
    }

    /// SQLite ignores the length of `VARCHAR(n)`; a CHECK makes a too-long string fail as it does elsewhere.
    fn length_check(&self) -> bool {
        true
    }

    /// "The SELECT statement must always include a WHERE clause" when an upsert follows it, or `ON` parses as
    /// a join constraint (<https://www.sqlite.org/lang_upsert.html>, parsing ambiguity).
    fn upsert_select_needs_where(&self) -> bool {
        true
    }
}
