//! MySQL and MariaDB: backtick quoting, `?` placeholders, last-insert-id instead of RETURNING,
//! `ON DUPLICATE KEY UPDATE`, inline index declarations.

use super::{Dialect, LimitPart, Rules, UpsertStyle};
use crate::ast::{ColumnDef, Function};
use crate::value::SqlType;

pub(crate) struct MySql;

impl Rules for MySql {
    fn dialect(&self) -> Dialect {
        Dialect::MySql
    }

    fn quote(&self) -> char {
        '`'
    }

    /// The prepared-statement protocol counts parameters in two bytes: at most 65,535.
    fn param_limit(&self) -> usize {
        65_535
    }

    /// MySQL has no OFFSET without LIMIT; the manual's advice is the largest unsigned 64-bit number
    /// (<https://dev.mysql.com/doc/refman/8.0/en/select.html>, LIMIT clause).
    fn limit_offset(&self, limit: Option<u64>, offset: Option<u64>, w: &mut dyn FnMut(LimitPart)) {
        match (limit, offset) {
            (Some(l), _) => {
                w(LimitPart::Sql(" LIMIT "));
                w(LimitPart::Param(l));
            }
            (None, Some(_)) => w(LimitPart::Sql(" LIMIT 18446744073709551615")),
            (None, None) => {}
        }
        if let Some(o) = offset {
            w(LimitPart::Sql(" OFFSET "));
            w(LimitPart::Param(o));
        }
    }

    fn supports_returning(&self) -> bool {
        false
    }

    /// `LONGTEXT`/`LONGBLOB` so that text and bytes are as unbounded as on the other engines; `DATETIME(6)`
    /// keeps microseconds and has no 2038 limit; UUIDs are 16 bytes.
    fn column_type(&self, col: &ColumnDef) -> String {
        match col.ty {
            SqlType::Bool => "BOOLEAN".into(),
            SqlType::SmallInt => "SMALLINT".into(),
            SqlType::Int => "INT".into(),
            SqlType::BigInt => "BIGINT".into(),
            SqlType::Real => "FLOAT".into(),
            SqlType::Double => "DOUBLE".into(),
            SqlType::Text => "LONGTEXT".into(),
            SqlType::VarChar(n) => format!("VARCHAR({n})"),
            SqlType::Blob => "LONGBLOB".into(),
            SqlType::Date => "DATE".into(),
            SqlType::Time => "TIME(6)".into(),
            SqlType::Timestamp | SqlType::TimestampTz => "DATETIME(6)".into(),
            SqlType::Uuid => "BINARY(16)".into(),
        }
    }

    fn cast_type(&self, ty: SqlType) -> &'static str {
        match ty {
            SqlType::Bool | SqlType::SmallInt | SqlType::Int | SqlType::BigInt => "SIGNED",
            SqlType::Real | SqlType::Double => "DOUBLE",
            SqlType::Text | SqlType::VarChar(_) => "CHAR",
            SqlType::Blob | SqlType::Uuid => "BINARY",
            SqlType::Date => "DATE",
            SqlType::Time => "TIME(6)",
            SqlType::Timestamp | SqlType::TimestampTz => "DATETIME(6)",
        }
    }

    /// `LENGTH` counts bytes on MySQL; `CHAR_LENGTH` counts characters like the other engines' `LENGTH`.
    fn function(&self, f: Function) -> &'static str {
        match f {
            Function::Length => "CHAR_LENGTH",
            other => super::standard_function_name(other),
        }
    }

    /// Backslash is an escape character in MySQL string literals unless `NO_BACKSLASH_ESCAPES` is set;
    /// doubling it is correct in both modes only when the mode is off, which is the server default.
    fn string_literal(&self, out: &mut String, s: &str) {
        out.push('\'');
        for c in s.chars() {
            match c {
                '\'' => out.push_str("''"),
                '\\' => out.push_str("\\\\"),
                c => out.push(c),
            }
        }
        out.push('\'');
    }

    fn upsert_style(&self) -> UpsertStyle {
        UpsertStyle::OnDuplicateKey
    }

    /// A binary collation (see [`crate::ast::MySqlCollation`]).
    fn table_options(&self, collation: crate::ast::MySqlCollation) -> String {
        format!(
            " ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE={}",
            collation.name()
        )
    }

    fn inline_indexes(&self) -> bool {
        true
    }

    /// MySQL 8 has no `CREATE INDEX IF NOT EXISTS` (MariaDB does; tandem speaks the common subset).
    fn create_index_if_not_exists(&self) -> bool {
        false
    }

    fn auto_increment(&self) -> &'static str {
        " AUTO_INCREMENT"
    }
}
