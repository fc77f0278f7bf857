//! Table declarations to tables: what `#[derive(Table)]` does at compile time, done at run time on the
//! parsed struct — the same options, the same names, the same `TableSchema` — so the playground renders the
//! same DDL as the compiled crate would.

use tandem_sql::Ident;
use tandem_sql::SqlType;
use tandem_sql::ast::{ColumnDef, DefaultValue, IndexDef, TableSchema};

use crate::syntax::expr::Lit;
use crate::syntax::items::{Attr, Meta, StructDecl, TypeName, parse_items};
use crate::syntax::{Diagnostic, Span};

/// The SQL kinds the playground knows: those of the Rust types a table struct may use here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `bool`
    Bool,
    /// `i16`
    SmallInt,
    /// `i32`
    Int,
    /// `i64`
    BigInt,
    /// `f32`
    Real,
    /// `f64`
    Double,
    /// `String`
    Text,
    /// `Vec<u8>`
    Blob,
}

impl Kind {
    /// The Rust type of a value of this kind, as error messages name it.
    pub fn rust(self) -> &'static str {
        match self {
            Kind::Bool => "bool",
            Kind::SmallInt => "i16",
            Kind::Int => "i32",
            Kind::BigInt => "i64",
            Kind::Real => "f32",
            Kind::Double => "f64",
            Kind::Text => "String",
            Kind::Blob => "Vec<u8>",
        }
    }

    fn from_rust(name: &str) -> Option<Kind> {
        Some(match name {
            "bool" => Kind::Bool,
            "i16" => Kind::SmallInt,
            "i32" => Kind::Int,
            "i64" => Kind::BigInt,
            "f32" => Kind::Real,
            "f64" => Kind::Double,
            "String" => Kind::Text,
            _ => return None,
        })
    }

    /// The SQL type a value of this kind binds as.
    pub fn sql_type(self) -> SqlType {
        match self {
            Kind::Bool => SqlType::Bool,
            Kind::SmallInt => SqlType::SmallInt,
            Kind::Int => SqlType::Int,
            Kind::BigInt => SqlType::BigInt,
            Kind::Real => SqlType::Real,
            Kind::Double => SqlType::Double,
            Kind::Text => SqlType::Text,
            Kind::Blob => SqlType::Blob,
        }
    }

    /// Integers and floats: arithmetic, `sum`, `avg`.
    pub fn is_numeric(self) -> bool {
        matches!(
            self,
            Kind::SmallInt | Kind::Int | Kind::BigInt | Kind::Real | Kind::Double
        )
    }

    /// Everything but booleans and bytes: `<`, `between`, `min`, `max`.
    pub fn is_ordered(self) -> bool {
        !matches!(self, Kind::Bool | Kind::Blob)
    }
}

/// One column: the Rust field and the SQL column.
#[derive(Clone, Debug, PartialEq)]
pub struct ColumnDecl {
    /// The field name, which queries use (`users::email`).
    pub field: String,
    /// The SQL name.
    pub name: Ident,
    /// Its kind.
    pub kind: Kind,
    /// `Option<T>`.
    pub nullable: bool,
}

/// One declared table.
#[derive(Clone, Debug, PartialEq)]
pub struct TableDecl {
    /// The module queries name it by (`users` in `users::table`).
    pub module: String,
    /// The SQL table.
    pub schema: TableSchema,
    /// Its columns, in declaration order.
    pub columns: Vec<ColumnDecl>,
}

impl TableDecl {
    /// The column whose field is `field`.
    pub fn column(&self, field: &str) -> Option<(usize, &ColumnDecl)> {
        self.columns
            .iter()
            .enumerate()
            .find(|(_, c)| c.field == field)
    }
}

/// Every declared table.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Schema {
    /// The tables, in declaration order.
    pub tables: Vec<TableDecl>,
}

impl Schema {
    /// Parses and checks the schema box.
    pub fn parse(src: &str) -> Result<Schema, Diagnostic> {
        let mut tables: Vec<TableDecl> = Vec::new();
        for decl in parse_items(src)? {
            let t = table(&decl)?;
            if tables
                .iter()
                .any(|o| o.module == t.module || o.schema.name == t.schema.name)
            {
                return Err(Diagnostic::new(
                    format!("table `{}` is declared twice", t.module),
                    decl.name.span,
                ));
            }
            tables.push(t);
        }
        if tables.is_empty() {
            return Err(Diagnostic::new(
                "declare at least one table: a `#[derive(Table)]` struct with `#[table(name = \"…\")]`",
                Span::new(0, src.len()),
            ));
        }
        Ok(Schema { tables })
    }

    /// The table a module name stands for.
    pub fn table(&self, module: &str) -> Option<(usize, &TableDecl)> {
        self.tables
            .iter()
            .enumerate()
            .find(|(_, t)| t.module == module)
    }

    /// The modules, for "did you mean" messages.
    pub fn modules(&self) -> String {
        let names: Vec<String> = self
            .tables
            .iter()
            .map(|t| format!("`{}`", t.module))
            .collect();
        names.join(", ")
    }
}

fn ident(name: &str, span: Span) -> Result<Ident, Diagnostic> {
    Ident::new(name.to_owned()).map_err(|e| Diagnostic::new(e.to_string(), span))
}

fn str_value(m: &Meta) -> Result<(String, Span), Diagnostic> {
    match m {
        Meta::Value {
            lit: Lit::Str(s),
            span,
            negative: false,
            ..
        } => Ok((s.clone(), *span)),
        other => Err(Diagnostic::new(
            format!(
                "`{}` takes a string: `{} = \"…\"`",
                other.name().name,
                other.name().name
            ),
            other.name().span,
        )),
    }
}

fn attr<'a>(attrs: &'a [Attr], name: &str) -> impl Iterator<Item = &'a Meta> {
    attrs
        .iter()
        .filter(move |a| a.path.name == name)
        .flat_map(|a| a.args.iter())
}

fn table(decl: &StructDecl) -> Result<TableDecl, Diagnostic> {
    let mut name = None;
    let mut module = None;
    let mut indexes: Vec<(bool, Vec<(String, Span)>)> = Vec::new();
    if !decl.attrs.iter().any(|a| a.path.name == "table") {
        return Err(Diagnostic::new(
            "a table struct needs `#[table(name = \"…\")]` (and `#[derive(Table)]`)",
            decl.name.span,
        ));
    }
    for m in attr(&decl.attrs, "table") {
        match (m.name().name.as_str(), m) {
            ("name", _) => name = Some(str_value(m)?),
            ("module", _) => module = Some(str_value(m)?),
            ("crate", _) => {}
            ("index" | "unique_index", Meta::List(n, cols)) => {
                let cols = cols
                    .iter()
                    .map(|c| match c {
                        Meta::Flag(f) => Ok((f.name.clone(), f.span)),
                        other => Err(Diagnostic::new("list field names here", other.name().span)),
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                indexes.push((n.name == "unique_index", cols));
            }
            (other, _) => {
                return Err(Diagnostic::new(
                    format!("unknown table option `{other}` (name, module, index, unique_index)"),
                    m.name().span,
                ));
            }
        }
    }
    let Some((name, name_span)) = name else {
        return Err(Diagnostic::new(
            "#[derive(Table)] needs #[table(name = \"...\")]",
            decl.name.span,
        ));
    };
    let module = module.map_or_else(|| name.clone(), |(m, _)| m);
    let mut schema = TableSchema::new(ident(&name, name_span)?);
    let mut columns = Vec::new();
    for f in &decl.fields {
        if f.name.name == "table" {
            return Err(Diagnostic::new(
                "a field named `table` clashes with the table marker; rename it and add #[column(name = \"table\")]",
                f.name.span,
            ));
        }
        let (kind, nullable) = field_kind(&f.ty)?;
        let mut def = ColumnDef::new(ident(&f.name.name, f.name.span)?, kind.sql_type());
        def.nullable = nullable;
        for m in attr(&f.attrs, "column") {
            column_option(&mut def, kind, m)?;
        }
        columns.push(ColumnDecl {
            field: f.name.name.clone(),
            name: def.name.clone(),
            kind,
            nullable,
        });
        schema.columns.push(def);
    }
    if columns.is_empty() {
        return Err(Diagnostic::new(
            "a table needs at least one column",
            decl.name.span,
        ));
    }
    for (unique, cols) in indexes {
        let mut names = Vec::new();
        for (field, span) in &cols {
            let c = columns
                .iter()
                .find(|c| &c.field == field)
                .ok_or_else(|| Diagnostic::new("no such field in this struct", *span))?;
            names.push(c.name.clone());
        }
        let joined: Vec<&str> = names.iter().map(Ident::as_str).collect();
        let index = format!(
            "{}_{}_{}",
            name,
            joined.join("_"),
            if unique { "key" } else { "idx" }
        );
        schema.indexes.push(IndexDef {
            name: ident(&index, name_span)?,
            columns: names,
            unique,
        });
    }
    schema
        .validate()
        .map_err(|e| Diagnostic::new(e.to_string(), decl.name.span))?;
    Ok(TableDecl {
        module,
        schema,
        columns,
    })
}

fn field_kind(ty: &TypeName) -> Result<(Kind, bool), Diagnostic> {
    let unsupported = || {
        Diagnostic::new(
            format!(
                "`{}` columns are not in the playground: use bool, i16, i32, i64, f32, f64, String, Vec<u8> or an Option of one",
                ty.name
            ),
            ty.span,
        )
    };
    match (ty.name.as_str(), ty.args.as_slice()) {
        ("Option", [inner]) => {
            let (k, nullable) = field_kind(inner)?;
            if nullable {
                return Err(Diagnostic::new(
                    "`Option<Option<…>>` is not a column type",
                    ty.span,
                ));
            }
            Ok((k, true))
        }
        ("Vec", [inner]) if inner.name == "u8" && inner.args.is_empty() => Ok((Kind::Blob, false)),
        (name, []) => Kind::from_rust(name)
            .map(|k| (k, false))
            .ok_or_else(unsupported),
        _ => Err(unsupported()),
    }
}

fn column_option(def: &mut ColumnDef, kind: Kind, m: &Meta) -> Result<(), Diagnostic> {
    let bad = |msg: &str| Diagnostic::new(msg.to_owned(), m.name().span);
    match (m.name().name.as_str(), m) {
        ("primary_key", Meta::Flag(_)) => def.primary_key = true,
        ("auto_increment", Meta::Flag(_)) => def.auto_increment = true,
        ("unique", Meta::Flag(_)) => def.unique = true,
        ("default_now", Meta::Flag(_)) => def.default = Some(DefaultValue::CurrentTimestamp),
        ("name", _) => {
            let (n, span) = str_value(m)?;
            def.name = ident(&n, span)?;
        }
        (
            "varchar",
            Meta::Value {
                lit: Lit::Int(n, None),
                negative: false,
                span,
                ..
            },
        ) => {
            if kind != Kind::Text {
                return Err(bad(
                    "varchar applies to String and Option<String> fields only",
                ));
            }
            let n = u32::try_from(*n).ok().filter(|n| *n > 0).ok_or_else(|| {
                Diagnostic::new("varchar takes a length from 1 to 4294967295", *span)
            })?;
            def.ty = SqlType::VarChar(n);
        }
        (
            "default",
            Meta::Value {
                lit,
                negative,
                span,
                ..
            },
        ) => {
            def.default = Some(match (lit, negative) {
                (Lit::Int(v, _), neg) => {
                    let v = i64::try_from(*v)
                        .map_err(|_| Diagnostic::new("this default does not fit in i64", *span))?;
                    DefaultValue::Int(if *neg { -v } else { v })
                }
                (Lit::Float(v, _), neg) => DefaultValue::Float(if *neg { -v } else { *v }),
                (Lit::Bool(b), _) => DefaultValue::Bool(*b),
                (Lit::Str(s), _) => DefaultValue::Text(s.clone()),
                _ => {
                    return Err(Diagnostic::new(
                        "default must be an integer, float, bool or string",
                        *span,
                    ));
                }
            });
        }
        _ => {
            return Err(bad(
                "unknown column option (primary_key, auto_increment, unique, varchar, name, default, default_now)",
            ));
        }
    }
    Ok(())
}
