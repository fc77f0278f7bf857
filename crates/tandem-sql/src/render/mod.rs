//! Rendering: one walk over the AST writes the SQL text and collects the bound parameters.
//!
//! The walk is shared; every place where engines differ asks the dialect's `Rules`. Values always become
//! placeholders. Every function returns `Result`: a statement a dialect cannot express is an
//! [`Error::Unsupported`] naming both, never a panic and never half-written SQL.

mod expr;
mod query;
mod schema;

use crate::ast::Statement;
use crate::dialect::{Dialect, LimitPart, Rules};
use crate::error::{Error, Result};
use crate::ident::Ident;
use crate::value::Value;

/// How the executor obtains the keys an INSERT generated.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub enum GeneratedKey {
    /// The statement returns none.
    #[default]
    None,
    /// The statement's result rows carry them (`RETURNING`).
    Returning,
    /// Read the connection's last insert id: the first generated key of the statement; a multi-row INSERT
    /// receives consecutive keys from there (InnoDB's default lock modes allocate them together).
    LastInsertId,
}

/// SQL text with its bound parameters, ready for a driver.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Rendered {
    /// The SQL text, with placeholders (`?` or `$n`) where the values go.
    pub sql: String,
    /// The values, in placeholder order.
    pub params: Vec<Value>,
    /// How generated keys come back, for INSERTs.
    pub generated_key: GeneratedKey,
}

/// Anything that renders into one statement.
pub trait Render {
    /// Renders for `dialect`.
    fn render(&self, dialect: Dialect) -> Result<Rendered>;
}

impl Render for Statement {
    fn render(&self, dialect: Dialect) -> Result<Rendered> {
        match self {
            Statement::Select(s) => s.render(dialect),
            Statement::Insert(s) => s.render(dialect),
            Statement::Update(s) => s.render(dialect),
            Statement::Delete(s) => s.render(dialect),
            Statement::CreateIndex(s) => s.render(dialect),
            Statement::DropTable(s) => s.render(dialect),
            Statement::CreateTable(s) => {
                let mut all = s.render_all(dialect)?;
                if all.len() == 1 {
                    Ok(all.remove(0))
                } else {
                    Err(Error::Unsupported {
                        dialect,
                        feature: "CREATE TABLE with indexes as one statement (use CreateTable::render_all)",
                    })
                }
            }
        }
    }
}

/// Hand-written SQL with its parameters, for what the DSL does not cover (engine functions, administration).
/// It is sent as written, whatever the dialect: write it for the engine it runs on.
#[derive(Clone, Debug, PartialEq)]
pub struct RawSql {
    /// The SQL text, with the engine's placeholders.
    pub sql: String,
    /// The parameters.
    pub params: Vec<Value>,
}

/// Hand-written SQL (see [`RawSql`]).
pub fn raw(sql: impl Into<String>, params: Vec<Value>) -> RawSql {
    RawSql {
        sql: sql.into(),
        params,
    }
}

impl Render for RawSql {
    fn render(&self, dialect: Dialect) -> Result<Rendered> {
        check_values(dialect, &self.params)?;
        Ok(Rendered {
            sql: self.sql.clone(),
            params: self.params.clone(),
            generated_key: GeneratedKey::None,
        })
    }
}

impl<T: Render + ?Sized> Render for &T {
    fn render(&self, dialect: Dialect) -> Result<Rendered> {
        (**self).render(dialect)
    }
}

/// The output buffer of one statement.
pub(crate) struct Writer {
    pub(crate) rules: &'static dyn Rules,
    pub(crate) sql: String,
    pub(crate) params: Vec<Value>,
}

impl Writer {
    pub(crate) fn new(dialect: Dialect) -> Self {
        Writer::with_capacity(dialect, 128, 4)
    }

    pub(crate) fn with_capacity(dialect: Dialect, sql: usize, params: usize) -> Self {
        Writer {
            rules: dialect.rules(),
            sql: String::with_capacity(sql),
            params: Vec::with_capacity(params),
        }
    }

    pub(crate) fn dialect(&self) -> Dialect {
        self.rules.dialect()
    }

    pub(crate) fn push(&mut self, s: &str) {
        self.sql.push_str(s);
    }

    /// A quoted identifier, the quote character doubled inside it.
    pub(crate) fn ident(&mut self, ident: &Ident) {
        let q = self.rules.quote();
        self.sql.push(q);
        for c in ident.as_str().chars() {
            if c == q {
                self.sql.push(q);
            }
            self.sql.push(c);
        }
        self.sql.push(q);
    }

    /// Identifiers separated by commas.
    pub(crate) fn ident_list(&mut self, idents: &[Ident]) {
        for (i, id) in idents.iter().enumerate() {
            if i > 0 {
                self.sql.push_str(", ");
            }
            self.ident(id);
        }
    }

    /// A placeholder, and its value into the parameter list.
    pub(crate) fn param(&mut self, value: Value) {
        self.params.push(value);
        self.rules.placeholder(&mut self.sql, self.params.len());
    }

    pub(crate) fn limit_offset(&mut self, limit: Option<u64>, offset: Option<u64>) {
        let rules = self.rules;
        rules.limit_offset(limit, offset, &mut |part| match part {
            LimitPart::Sql(s) => self.sql.push_str(s),
            // Clamped: no engine holds 2^63 rows, and every engine binds a signed 64-bit integer here.
            LimitPart::Param(n) => self.param(Value::I64(n.min(i64::MAX as u64) as i64)),
        });
    }

    pub(crate) fn unsupported(&self, feature: &'static str) -> Error {
        Error::Unsupported {
            dialect: self.dialect(),
            feature,
        }
    }

    /// Checks the parameter limit and hands the statement out.
    pub(crate) fn finish(self, generated_key: GeneratedKey) -> Result<Rendered> {
        let limit = self.rules.param_limit();
        if self.params.len() > limit {
            return Err(Error::TooManyParameters {
                dialect: self.dialect(),
                count: self.params.len(),
                limit,
            });
        }
        check_values(self.dialect(), &self.params)?;
        Ok(Rendered {
            sql: self.sql,
            params: self.params,
            generated_key,
        })
    }
}

/// Refuses values the engine cannot store as they are, before they reach a driver: NaN on SQLite (which
/// would store NULL without a word) and MySQL/MariaDB (whose DOUBLE has no NaN). PostgreSQL stores NaN.
/// (`-0.0` is kept by PostgreSQL; SQLite and MariaDB give it back as `0.0`, which compares equal.)
pub(crate) fn check_values(dialect: Dialect, params: &[Value]) -> Result<()> {
    check_values_iter(dialect, params.iter())
}

pub(crate) fn check_values_iter<'v>(
    dialect: Dialect,
    mut params: impl Iterator<Item = &'v Value>,
) -> Result<()> {
    if dialect == Dialect::Postgres {
        return Ok(());
    }
    let nan = |v: &Value| match v {
        Value::F64(f) => f.is_nan(),
        Value::F32(f) => f.is_nan(),
        _ => false,
    };
    if params.any(nan) {
        return Err(Error::Unsupported {
            dialect,
            feature: "NaN (not-a-number) floats",
        });
    }
    Ok(())
}
