//! The three dialects. [`Dialect`] is what users name; each engine's quirks live in one small file
//! implementing `Rules`, whose methods have defaults so a dialect overrides only what differs.

use std::fmt;

use crate::ast::{ColumnDef, Function};
use crate::value::SqlType;

mod mysql;
mod postgres;
mod sqlite;

/// A target SQL engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dialect {
    /// SQLite 3.35 or later (RETURNING, upsert).
    Sqlite,
    /// PostgreSQL 12 or later.
    Postgres,
    /// MySQL 8 and MariaDB 10.5 or later.
    MySql,
}

impl Dialect {
    /// All dialects, for code that renders every one of them.
    pub const ALL: [Dialect; 3] = [Dialect::Sqlite, Dialect::Postgres, Dialect::MySql];

    /// The most bind parameters one statement may carry on this engine.
    pub fn param_limit(self) -> usize {
        self.rules().param_limit()
    }

    /// Whether INSERT can return columns of the inserted rows (`RETURNING`); MySQL reports only the last
    /// insert id.
    pub fn supports_returning(self) -> bool {
        self.rules().supports_returning()
    }

    /// A short lowercase name (`sqlite`, `postgres`, `mysql`), also the URL scheme.
    pub fn name(self) -> &'static str {
        match self {
            Dialect::Sqlite => "sqlite",
            Dialect::Postgres => "postgres",
            Dialect::MySql => "mysql",
        }
    }

    pub(crate) fn rules(self) -> &'static dyn Rules {
        match self {
            Dialect::Sqlite => &sqlite::Sqlite,
            Dialect::Postgres => &postgres::Postgres,
            Dialect::MySql => &mysql::MySql,
        }
    }
}

impl fmt::Display for Dialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Dialect::Sqlite => "SQLite",
            Dialect::Postgres => "PostgreSQL",
            Dialect::MySql => "MySQL",
        })
    }
}

impl std::str::FromStr for Dialect {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "sqlite" => Ok(Dialect::Sqlite),
            "postgres" | "postgresql" | "pg" => Ok(Dialect::Postgres),
            "mysql" | "mariadb" => Ok(Dialect::MySql),
            other => Err(format!(
                "unknown dialect {other:?} (sqlite, postgres, mysql)"
            )),
        }
    }
}

/// How one engine spells what differs between engines. The renderer asks; it never matches on [`Dialect`].
pub(crate) trait Rules: Sync {
    /// Which dialect this is (for error messages).
    fn dialect(&self) -> Dialect;

    /// The identifier quote character; a quote inside a name is written twice.
    fn quote(&self) -> char {
        '"'
    }

    /// Most parameters per statement.
    fn param_limit(&self) -> usize;

    /// Writes the placeholder of the `n`th parameter (1-based).
    fn placeholder(&self, out: &mut String, _n: usize) {
        out.push('?');
    }

    /// Whether `INSERT … RETURNING` exists.
    fn supports_returning(&self) -> bool {
        true
    }

    /// The `LIMIT`/`OFFSET` clause, with `?` markers written through `param`. An OFFSET without LIMIT needs a
    /// dialect-specific "no limit" on SQLite and MySQL.
    fn limit_offset(&self, limit: Option<u64>, offset: Option<u64>, w: &mut dyn FnMut(LimitPart));

    /// The name of a column type in CREATE TABLE.
    fn column_type(&self, col: &ColumnDef) -> String;

    /// The type name used in `CAST(x AS …)`.
    fn cast_type(&self, ty: SqlType) -> &'static str;

    /// A function's name.
    fn function(&self, f: Function) -> &'static str {
        standard_function_name(f)
    }

    /// Writes a string literal for a DDL default: single quotes doubled.
    fn string_literal(&self, out: &mut String, s: &str) {
        out.push('\'');
        for c in s.chars() {
            if c == '\'' {
                out.push('\'');
            }
            out.push(c);
        }
        out.push('\'');
    }

    /// A boolean literal for a DDL default.
    fn bool_literal(&self, b: bool) -> &'static str {
        if b { "TRUE" } else { "FALSE" }
    }

    /// How an insert with conflict handling is spelled.
    fn upsert_style(&self) -> UpsertStyle {
        UpsertStyle::OnConflict
    }

    /// Text after the closing parenthesis of CREATE TABLE.
    fn table_options(&self, _collation: crate::ast::MySqlCollation) -> String {
        String::new()
    }

    /// Whether indexes are declared inside CREATE TABLE (MySQL) or as separate statements.
    fn inline_indexes(&self) -> bool {
        false
    }

    /// Whether `CREATE INDEX IF NOT EXISTS` exists.
    fn create_index_if_not_exists(&self) -> bool {
        true
    }

    /// The extra column clause for an auto-increment primary key, after the type and NOT NULL.
    fn auto_increment(&self) -> &'static str;

    /// Whether [`Rules::auto_increment`] already contains `PRIMARY KEY`.
    fn auto_increment_is_primary_key(&self) -> bool {
        false
    }

    /// A CHECK that enforces a varchar length the engine itself does not (SQLite).
    fn length_check(&self) -> bool {
        false
    }

    /// Whether `INSERT … SELECT` with an upsert clause needs a WHERE in the SELECT (SQLite's parser does).
    fn upsert_select_needs_where(&self) -> bool {
        false
    }
}

/// The SQL-standard spelling of each function, which PostgreSQL and SQLite use as is.
pub(crate) fn standard_function_name(f: Function) -> &'static str {
    match f {
        Function::Count => "COUNT",
        Function::Sum => "SUM",
        Function::Min => "MIN",
        Function::Max => "MAX",
        Function::Avg => "AVG",
        Function::Upper => "UPPER",
        Function::Lower => "LOWER",
        Function::Length => "LENGTH",
        Function::Coalesce => "COALESCE",
        Function::Abs => "ABS",
    }
}

/// A piece of a LIMIT/OFFSET clause handed back to the renderer.
pub(crate) enum LimitPart {
    /// Literal SQL text.
    Sql(&'static str),
    /// A bound integer parameter.
    Param(u64),
}

/// The two upsert families.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum UpsertStyle {
    /// `ON CONFLICT (..) DO NOTHING | DO UPDATE SET c = EXCLUDED.c` (PostgreSQL, SQLite).
    OnConflict,
    /// `ON DUPLICATE KEY UPDATE c = VALUES(c)` (MySQL, MariaDB).
    OnDuplicateKey,
}
