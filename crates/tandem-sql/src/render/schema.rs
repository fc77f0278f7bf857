//! CREATE TABLE, CREATE INDEX and DROP TABLE.

use super::{GeneratedKey, Render, Rendered, Writer};
use crate::ast::{ColumnDef, CreateIndex, CreateTable, DefaultValue, DropTable, IndexDef};
use crate::dialect::Dialect;
use crate::error::Result;
use crate::ident::Ident;
use crate::value::SqlType;

impl CreateTable {
    /// The CREATE TABLE statement followed by one CREATE INDEX per index (on MySQL the indexes are declared
    /// inside CREATE TABLE, so that is the only statement).
    pub fn render_all(&self, dialect: Dialect) -> Result<Vec<Rendered>> {
        let t = &self.table;
        t.validate()?;
        let indexes = t.all_indexes()?;
        let mut w = Writer::new(dialect);
        w.push(if self.if_not_exists {
            "CREATE TABLE IF NOT EXISTS "
        } else {
            "CREATE TABLE "
        });
        w.ident(&t.name);
        w.push(" (");
        let pk: Vec<Ident> = t.primary_key().iter().map(|c| c.name.clone()).collect();
        for (i, col) in t.columns.iter().enumerate() {
            if i > 0 {
                w.push(", ");
            }
            w.column_def(col, pk.len() == 1)?;
        }
        if pk.len() > 1 {
            w.push(", PRIMARY KEY (");
            w.ident_list(&pk);
            w.push(")");
        }
        if w.rules.inline_indexes() {
            for idx in &indexes {
                w.inline_index(t, idx)?;
            }
        }
        w.push(")");
        w.push(&w.rules.table_options(self.mysql_collation));
        let mut out = vec![w.finish(GeneratedKey::None)?];
        if !dialect.rules().inline_indexes() {
            for index in indexes {
                let ci = CreateIndex {
                    table: t.name.clone(),
                    index,
                    if_not_exists: self.if_not_exists,
                };
                out.push(ci.render(dialect)?);
            }
        }
        Ok(out)
    }
}

impl Render for CreateIndex {
    fn render(&self, dialect: Dialect) -> Result<Rendered> {
        let mut w = Writer::new(dialect);
        if self.index.columns.is_empty() {
            return Err(crate::Error::Empty {
                what: "index column list",
            });
        }
        w.push(if self.index.unique {
            "CREATE UNIQUE INDEX "
        } else {
            "CREATE INDEX "
        });
        if self.if_not_exists {
            if !w.rules.create_index_if_not_exists() {
                return Err(w.unsupported("CREATE INDEX IF NOT EXISTS"));
            }
            w.push("IF NOT EXISTS ");
        }
        w.ident(&self.index.name);
        w.push(" ON ");
        w.ident(&self.table);
        w.push(" (");
        w.ident_list(&self.index.columns);
        w.push(")");
        w.finish(GeneratedKey::None)
    }
}

impl Render for DropTable {
    fn render(&self, dialect: Dialect) -> Result<Rendered> {
        let mut w = Writer::new(dialect);
        w.push(if self.if_exists {
            "DROP TABLE IF EXISTS "
        } else {
            "DROP TABLE "
        });
        w.ident(&self.table);
        w.finish(GeneratedKey::None)
    }
}

impl Writer {
    fn column_def(&mut self, col: &ColumnDef, single_pk: bool) -> Result<()> {
        self.ident(&col.name);
        self.push(" ");
        let ty = self.rules.column_type(col);
        self.push(&ty);
        if !col.nullable {
            self.push(" NOT NULL");
        }
        if col.auto_increment {
            let ai = self.rules.auto_increment();
            self.push(ai);
        }
        let pk_written = col.auto_increment && self.rules.auto_increment_is_primary_key();
        if col.primary_key && single_pk && !pk_written {
            self.push(" PRIMARY KEY");
        }
        if let Some(d) = &col.default {
            self.push(" DEFAULT ");
            self.default_value(d);
        }
        if let (SqlType::VarChar(n), true) = (col.ty, self.rules.length_check()) {
            self.push(" CHECK (length(");
            self.ident(&col.name);
            self.push(") <= ");
            self.push(&n.to_string());
            self.push(")");
        }
        Ok(())
    }

    fn default_value(&mut self, d: &DefaultValue) {
        match d {
            DefaultValue::Null => self.push("NULL"),
            DefaultValue::Int(i) => self.push(&i.to_string()),
            // `{:?}` keeps a decimal point or exponent, so the literal stays a float.
            DefaultValue::Float(f) => self.push(&format!("{f:?}")),
            DefaultValue::Bool(b) => {
                let lit = self.rules.bool_literal(*b);
                self.push(lit);
            }
            DefaultValue::Text(s) => {
                let rules = self.rules;
                rules.string_literal(&mut self.sql, s);
            }
            DefaultValue::CurrentTimestamp => self.push("CURRENT_TIMESTAMP"),
        }
    }

    fn inline_index(&mut self, t: &crate::ast::TableSchema, idx: &IndexDef) -> Result<()> {
        for col in &idx.columns {
            if matches!(t.column(col.as_str())?.ty, SqlType::Text | SqlType::Blob) {
                return Err(
                    self.unsupported("an index on a TEXT or BLOB column (declare it varchar(n))")
                );
            }
        }
        self.push(if idx.unique {
            ", UNIQUE KEY "
        } else {
            ", KEY "
        });
        self.ident(&idx.name);
        self.push(" (");
        self.ident_list(&idx.columns);
        self.push(")");
        Ok(())
    }
}
