//! One run of the playground: parse both boxes, build the statement, render it for every dialect, run the
//! SQLite form; and its JSON for the page.

use tandem_sql::ast::Statement;
use tandem_sql::{Dialect, Render, Rendered, Value};

use crate::json::Json;
use crate::run::{Cell, Execution, Grid};
use crate::schema::Schema;
use crate::syntax::expr::parse_query;
use crate::syntax::{Diagnostic, Span};

/// Which box an error is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Input {
    /// The table declarations.
    Schema,
    /// The query.
    Query,
}

/// An error in one of the boxes, located for the editor.
#[derive(Clone, Debug, PartialEq)]
pub struct InputError {
    /// Which box.
    pub input: Input,
    /// The message.
    pub message: String,
    /// Byte range in that box's text.
    pub span: Span,
    /// 1-based line and column (in characters) of the start.
    pub line: usize,
    /// See `line`.
    pub column: usize,
    /// The range in UTF-16 code units, as a browser's text area counts.
    pub utf16: (usize, usize),
}

impl InputError {
    fn new(input: Input, src: &str, d: Diagnostic) -> InputError {
        let clamp = |i: usize| {
            let mut i = i.min(src.len());
            while !src.is_char_boundary(i) {
                i -= 1;
            }
            i
        };
        let (start, end) = (clamp(d.span.start), clamp(d.span.end.max(d.span.start)));
        let before = &src[..start];
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        let u16 = |s: &str| s.encode_utf16().count();
        InputError {
            input,
            message: d.message,
            span: Span::new(start, end),
            line,
            column,
            utf16: (u16(before), u16(&src[..end])),
        }
    }
}

/// The SQL of one dialect: its statements (CREATE TABLE may be followed by CREATE INDEX), or why it has none.
#[derive(Clone, Debug, PartialEq)]
pub struct DialectSql {
    /// The engine.
    pub dialect: Dialect,
    /// The rendered statements, or the renderer's error.
    pub rendered: Result<Vec<Rendered>, String>,
    /// Where this dialect's SQL does not say exactly what the query says (see [`crate::notes`]).
    pub notes: Vec<String>,
}

/// The outcome of one run.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    /// A parse or build error, if the boxes did not make a statement.
    pub error: Option<InputError>,
    /// The statement built, if any.
    pub statement: Option<Statement>,
    /// SQL for each dialect (empty when there is an error).
    pub sql: Vec<DialectSql>,
    /// What SQLite did, or its error.
    pub execution: Option<Result<Execution, String>>,
}

fn render(stmt: &Statement, dialect: Dialect) -> Result<Vec<Rendered>, String> {
    match stmt {
        Statement::CreateTable(c) => c.render_all(dialect),
        other => other.render(dialect).map(|r| vec![r]),
    }
    .map_err(|e| e.to_string())
}

/// Parses both boxes, builds the statement, renders it for every dialect and runs it on SQLite.
pub fn run(schema_src: &str, query_src: &str) -> Report {
    let failed = |input, src, d| Report {
        error: Some(InputError::new(input, src, d)),
        statement: None,
        sql: Vec::new(),
        execution: None,
    };
    let schema = match Schema::parse(schema_src) {
        Ok(s) => s,
        Err(d) => return failed(Input::Schema, schema_src, d),
    };
    let (stmt, headers) =
        match parse_query(query_src).and_then(|e| crate::eval::build_with_headers(&schema, &e)) {
            Ok(s) => s,
            Err(d) => return failed(Input::Query, query_src, d),
        };
    let sql = Dialect::ALL
        .iter()
        .map(|d| DialectSql {
            dialect: *d,
            rendered: render(&stmt, *d),
            notes: crate::notes::notes(&stmt, *d),
        })
        .collect();
    let seeds = crate::samples::seeds(&schema);
    let mut execution = crate::run::prepare(&schema, &seeds)
        .and_then(|conn| crate::run::run(&conn, &schema, &stmt));
    // A computed column is headed by its DSL text (`avg(orders::total)`), not by SQLite's name for it
    // (the whole SQL expression, `CAST(AVG("orders"."total") AS REAL)`).
    if let Ok(Execution { grids, .. }) = &mut execution
        && let Some(result) = grids.first_mut()
        && result.columns.len() == headers.len()
    {
        for (column, at) in result.columns.iter_mut().zip(&headers) {
            if let Some(at) = at {
                *column = header_text(query_src, *at);
            }
        }
    }
    Report {
        error: None,
        statement: Some(stmt),
        sql,
        execution: Some(execution),
    }
}

/// The DSL text at `at`, on one line with single spaces, shortened past 40 characters.
fn header_text(src: &str, at: Span) -> String {
    let text = src.get(at.start..at.end).unwrap_or("?");
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match one_line.char_indices().nth(40) {
        Some((cut, _)) => format!("{}…", &one_line[..cut]),
        None => one_line,
    }
}

/// A bound value as the parameter list shows it, with its type.
pub fn param(v: &Value) -> (String, String) {
    let text = match v {
        Value::Null(_) => "NULL".to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::I16(i) => i.to_string(),
        Value::I32(i) => i.to_string(),
        Value::I64(i) => i.to_string(),
        Value::F32(f) => format!("{f:?}"),
        Value::F64(f) => format!("{f:?}"),
        Value::Text(s) => format!("{s:?}"),
        Value::Bytes(b) => hex(b),
        other => other.kind_name().to_owned(),
    };
    let ty = match v {
        Value::Null(t) => format!("NULL {t:?}"),
        other => other.kind_name().to_owned(),
    };
    (text, ty)
}

fn hex(b: &[u8]) -> String {
    let digits: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!("x'{digits}'")
}

fn cell(c: &Cell) -> Json {
    match c {
        Cell::Null => Json::Null,
        // Beyond 2^53 a JavaScript number loses digits: send those as text.
        Cell::Int(i) if i.unsigned_abs() > (1 << 53) => Json::s(i.to_string()),
        Cell::Int(i) => Json::Num(*i as f64),
        Cell::Real(f) => Json::Num(*f),
        Cell::Text(s) => Json::s(s.clone()),
        Cell::Blob(b) => Json::s(hex(b)),
    }
}

fn grid(g: &Grid) -> Json {
    Json::Obj(vec![
        ("title", Json::s(g.title.clone())),
        (
            "columns",
            Json::Arr(g.columns.iter().map(|c| Json::s(c.clone())).collect()),
        ),
        (
            "rows",
            Json::Arr(
                g.rows
                    .iter()
                    .map(|r| Json::Arr(r.iter().map(cell).collect()))
                    .collect(),
            ),
        ),
        ("truncated", Json::Bool(g.truncated)),
    ])
}

/// What running something did, as the page reads it: `{summary, grids, error}` (`null` for nothing run).
pub fn execution_json(execution: Option<&Result<Execution, String>>) -> Json {
    match execution {
        None => Json::Null,
        Some(Ok(x)) => Json::Obj(vec![
            ("summary", Json::s(x.summary.clone())),
            ("grids", Json::Arr(x.grids.iter().map(grid).collect())),
            ("error", Json::Null),
        ]),
        Some(Err(e)) => Json::Obj(vec![("error", Json::s(e.clone()))]),
    }
}

/// The names the editor completes and the reference it shows (see `web::names`).
pub fn names_json(schema_src: &str) -> Json {
    use crate::reference::ENTRIES;
    let tables = Schema::parse(schema_src).map_or_else(
        |_| Vec::new(),
        |schema| {
            schema
                .tables
                .iter()
                .map(|t| {
                    Json::Obj(vec![
                        ("module", Json::s(t.module.clone())),
                        (
                            "columns",
                            Json::Arr(
                                t.columns
                                    .iter()
                                    .map(|c| {
                                        let ty = if c.nullable {
                                            format!("Option<{}>", c.kind.rust())
                                        } else {
                                            c.kind.rust().to_owned()
                                        };
                                        Json::Obj(vec![
                                            ("field", Json::s(c.field.clone())),
                                            ("type", Json::s(ty)),
                                        ])
                                    })
                                    .collect(),
                            ),
                        ),
                    ])
                })
                .collect()
        },
    );
    let reference = ENTRIES
        .iter()
        .map(|e| {
            Json::Obj(vec![
                ("on", Json::s(e.on.key())),
                ("title", Json::s(e.on.title())),
                ("name", Json::s(e.name)),
                ("call", Json::s(e.call)),
                ("doc", Json::s(e.doc)),
                ("chapter", Json::s(e.chapter)),
            ])
        })
        .collect();
    Json::Obj(vec![
        ("tables", Json::Arr(tables)),
        ("reference", Json::Arr(reference)),
    ])
}

/// A fresh database from the Tables box, or why there is none.
fn database(schema_src: &str) -> Result<(Schema, rusqlite::Connection), String> {
    let schema = Schema::parse(schema_src).map_err(|d| {
        let e = InputError::new(Input::Schema, schema_src, d);
        format!(
            "the Tables box has an error (line {}, column {}): {}",
            e.line, e.column, e.message
        )
    })?;
    let seeds = crate::samples::seeds(&schema);
    let conn = crate::run::prepare(&schema, &seeds)?;
    Ok((schema, conn))
}

/// Runs one raw SQL statement on the database the Tables box declares, with its sample rows: the same
/// database every DSL run starts from.
pub fn run_sql(schema_src: &str, sql: &str) -> Result<Execution, String> {
    let (_, conn) = database(schema_src)?;
    crate::run::run_sql(&conn, sql)
}

/// The tables the Tables box declares, with their sample rows.
pub fn data(schema_src: &str) -> Result<Execution, String> {
    let (schema, conn) = database(schema_src)?;
    crate::run::data(&conn, &schema)
}

/// The SQLite statement with its parameters written in as literals, for running it by hand; `None` when
/// a value has no literal here.
pub fn inline_sqlite(r: &Rendered) -> Option<String> {
    let mut out = String::with_capacity(r.sql.len());
    let mut params = r.params.iter();
    let mut quote: Option<char> = None;
    for ch in r.sql.chars() {
        match (quote, ch) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(ch),
            (None, '?') => {
                out.push_str(&literal(params.next()?)?);
                continue;
            }
            _ => {}
        }
        out.push(ch);
    }
    params.next().is_none().then_some(out)
}

fn literal(v: &Value) -> Option<String> {
    Some(match v {
        Value::Null(_) => "NULL".to_owned(),
        Value::Bool(b) => u8::from(*b).to_string(),
        Value::I16(i) => i.to_string(),
        Value::I32(i) => i.to_string(),
        Value::I64(i) => i.to_string(),
        Value::F32(f) if f.is_finite() => format!("{f:?}"),
        Value::F64(f) if f.is_finite() => format!("{f:?}"),
        Value::Text(s) => format!("'{}'", s.replace('\'', "''")),
        Value::Bytes(b) => hex(b),
        _ => return None,
    })
}

impl Report {
    /// The report as the page reads it.
    pub fn to_json(&self) -> String {
        let error = match &self.error {
            None => Json::Null,
            Some(e) => Json::Obj(vec![
                (
                    "input",
                    Json::s(match e.input {
                        Input::Schema => "schema",
                        Input::Query => "query",
                    }),
                ),
                ("message", Json::s(e.message.clone())),
                ("start", Json::Num(e.utf16.0 as f64)),
                ("end", Json::Num(e.utf16.1 as f64)),
                ("line", Json::Num(e.line as f64)),
                ("column", Json::Num(e.column as f64)),
            ]),
        };
        let sql = Json::Arr(
            self.sql
                .iter()
                .map(|d| {
                    let (statements, err) = match &d.rendered {
                        Ok(rs) => (
                            rs.iter()
                                .map(|r| {
                                    let inline = match d.dialect {
                                        // What the raw-SQL tab runs to check this statement by hand.
                                        Dialect::Sqlite => {
                                            inline_sqlite(r).map_or(Json::Null, Json::s)
                                        }
                                        _ => Json::Null,
                                    };
                                    Json::Obj(vec![
                                        ("sql", Json::s(r.sql.clone())),
                                        ("inline", inline),
                                        (
                                            "params",
                                            Json::Arr(
                                                r.params
                                                    .iter()
                                                    .map(|p| {
                                                        let (v, t) = param(p);
                                                        Json::Obj(vec![
                                                            ("value", Json::s(v)),
                                                            ("type", Json::s(t)),
                                                        ])
                                                    })
                                                    .collect(),
                                            ),
                                        ),
                                    ])
                                })
                                .collect(),
                            Json::Null,
                        ),
                        Err(e) => (Vec::new(), Json::s(e.clone())),
                    };
                    Json::Obj(vec![
                        ("dialect", Json::s(d.dialect.to_string())),
                        ("statements", Json::Arr(statements)),
                        ("error", err),
                        (
                            "notes",
                            Json::Arr(d.notes.iter().map(|n| Json::s(n.clone())).collect()),
                        ),
                    ])
                })
                .collect(),
        );
        let run = execution_json(self.execution.as_ref());
        Json::Obj(vec![("error", error), ("sql", sql), ("run", run)]).to_text()
    }
}
