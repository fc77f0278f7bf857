//! Running the SQLite form of a statement on a real SQLite — compiled to WebAssembly in the browser, the
//! bundled native one in tests. Every run starts from a fresh in-memory database with the declared tables
//! and their sample rows, so a run depends only on what is in the two boxes (and a shared link reproduces it).

use rusqlite::Connection;
use rusqlite::types::{Value as SqlValue, ValueRef};
use tandem_sql::ast::{Returning, Statement};
use tandem_sql::{Dialect, Render, Rendered, Value};

use crate::schema::Schema;

/// Rows shown at most per result table.
pub const MAX_ROWS: usize = 200;

/// One cell of a result.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    /// NULL.
    Null,
    /// An integer.
    Int(i64),
    /// A float.
    Real(f64),
    /// Text.
    Text(String),
    /// Bytes.
    Blob(Vec<u8>),
}

/// A table of results.
#[derive(Clone, Debug, PartialEq)]
pub struct Grid {
    /// What it shows.
    pub title: String,
    /// Column names.
    pub columns: Vec<String>,
    /// Rows (at most [`MAX_ROWS`]).
    pub rows: Vec<Vec<Cell>>,
    /// Whether rows were left out.
    pub truncated: bool,
}

/// What running the statement did.
#[derive(Clone, Debug, PartialEq)]
pub struct Execution {
    /// One line: rows returned or affected.
    pub summary: String,
    /// The rows returned, or the changed table afterwards.
    pub grids: Vec<Grid>,
}

/// A tandem value as SQLite binds it (booleans as 0/1, as the blocking executor does).
fn bind(v: &Value) -> Result<SqlValue, String> {
    Ok(match v {
        Value::Null(_) => SqlValue::Null,
        Value::Bool(b) => SqlValue::Integer(i64::from(*b)),
        Value::I16(i) => SqlValue::Integer(i64::from(*i)),
        Value::I32(i) => SqlValue::Integer(i64::from(*i)),
        Value::I64(i) => SqlValue::Integer(*i),
        Value::F32(f) => SqlValue::Real(f64::from(*f)),
        Value::F64(f) => SqlValue::Real(*f),
        Value::Text(s) => SqlValue::Text(s.clone()),
        Value::Bytes(b) => SqlValue::Blob(b.clone()),
        other => {
            return Err(format!(
                "{} values are not in the playground",
                other.kind_name()
            ));
        }
    })
}

fn execute(conn: &Connection, r: &Rendered) -> Result<usize, String> {
    let params = r.params.iter().map(bind).collect::<Result<Vec<_>, _>>()?;
    conn.execute(&r.sql, rusqlite::params_from_iter(params))
        .map_err(|e| e.to_string())
}

fn query(conn: &Connection, r: &Rendered, title: String) -> Result<Grid, String> {
    let params = r.params.iter().map(bind).collect::<Result<Vec<_>, _>>()?;
    let mut stmt = conn.prepare(&r.sql).map_err(|e| e.to_string())?;
    grid_of(&mut stmt, &params, title)
}

/// The rows of a prepared statement run with `params`, at most [`MAX_ROWS`].
fn grid_of(
    stmt: &mut rusqlite::Statement<'_>,
    params: &[SqlValue],
    title: String,
) -> Result<Grid, String> {
    let columns: Vec<String> = stmt
        .column_names()
        .iter()
        .map(|c| (*c).to_owned())
        .collect();
    let mut rows = stmt
        .query(rusqlite::params_from_iter(params.iter()))
        .map_err(|e| e.to_string())?;
    let mut grid = Grid {
        title,
        columns,
        rows: Vec::new(),
        truncated: false,
    };
    while let Some(row) = rows.next().map_err(|e| e.to_string())? {
        if grid.rows.len() == MAX_ROWS {
            grid.truncated = true;
            break;
        }
        let mut cells = Vec::with_capacity(grid.columns.len());
        for i in 0..grid.columns.len() {
            cells.push(match row.get_ref(i).map_err(|e| e.to_string())? {
                ValueRef::Null => Cell::Null,
                ValueRef::Integer(i) => Cell::Int(i),
                ValueRef::Real(f) => Cell::Real(f),
                ValueRef::Text(t) => Cell::Text(String::from_utf8_lossy(t).into_owned()),
                ValueRef::Blob(b) => Cell::Blob(b.to_vec()),
            });
        }
        grid.rows.push(cells);
    }
    Ok(grid)
}

fn table_contents(
    conn: &Connection,
    schema: &Schema,
    table: &tandem_sql::Ident,
) -> Result<Grid, String> {
    let t = schema
        .tables
        .iter()
        .find(|t| &t.schema.name == table)
        .ok_or_else(|| format!("no table {table}"))?;
    let select = tandem_sql::ast::Select::from(t.schema.name.clone());
    let r = select.render(Dialect::Sqlite).map_err(|e| e.to_string())?;
    query(conn, &r, format!("{table} afterwards"))
}

/// A fresh in-memory database with every declared table and the sample rows.
pub fn prepare(schema: &Schema, seeds: &[Statement]) -> Result<Connection, String> {
    let conn = Connection::open_in_memory().map_err(|e| e.to_string())?;
    // As tandem's executors do: LIKE is case-sensitive on every engine.
    conn.execute_batch("PRAGMA case_sensitive_like = ON")
        .map_err(|e| e.to_string())?;
    for t in &schema.tables {
        for r in t
            .schema
            .create_table(true)
            .render_all(Dialect::Sqlite)
            .map_err(|e| e.to_string())?
        {
            execute(&conn, &r).map_err(|e| format!("creating {}: {e}", t.schema.name))?;
        }
    }
    for s in seeds {
        let r = s.render(Dialect::Sqlite).map_err(|e| e.to_string())?;
        execute(&conn, &r).map_err(|e| format!("adding sample rows: {e}"))?;
    }
    Ok(conn)
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// "3 rows", or "the first 200 rows" of a cut result.
fn rows_summary(grid: &Grid) -> String {
    let n = grid.rows.len();
    let first = if grid.truncated { "the first " } else { "" };
    format!("{first}{n} row{}", plural(n))
}

/// Runs `stmt` on a database prepared by [`prepare`].
pub fn run(conn: &Connection, schema: &Schema, stmt: &Statement) -> Result<Execution, String> {
    match stmt {
        Statement::CreateTable(c) => {
            for r in c.render_all(Dialect::Sqlite).map_err(|e| e.to_string())? {
                execute(conn, &r)?;
            }
            Ok(Execution {
                summary: format!(
                    "ran on SQLite; `{}` already existed (every declared table is created before a run), so IF NOT EXISTS made it a no-op",
                    c.table.name
                ),
                grids: vec![table_contents(conn, schema, &c.table.name)?],
            })
        }
        Statement::Select(_)
        | Statement::Insert(tandem_sql::ast::Insert {
            returning: Returning::Columns(_),
            ..
        }) => {
            let r = stmt.render(Dialect::Sqlite).map_err(|e| e.to_string())?;
            let grid = query(conn, &r, "result".into())?;
            let mut summary = rows_summary(&grid);
            let mut grids = vec![grid];
            if let Statement::Insert(i) = stmt {
                summary = format!("inserted, returning {summary}");
                grids.push(table_contents(conn, schema, &i.table)?);
            }
            Ok(Execution { summary, grids })
        }
        Statement::Insert(tandem_sql::ast::Insert { table, .. })
        | Statement::Update(tandem_sql::ast::Update { table, .. })
        | Statement::Delete(tandem_sql::ast::Delete { table, .. }) => {
            let r = stmt.render(Dialect::Sqlite).map_err(|e| e.to_string())?;
            let n = execute(conn, &r)?;
            Ok(Execution {
                summary: format!("{n} row{} affected", plural(n)),
                grids: vec![table_contents(conn, schema, table)?],
            })
        }
        other => {
            let r = other.render(Dialect::Sqlite).map_err(|e| e.to_string())?;
            execute(conn, &r)?;
            Ok(Execution {
                summary: "done".into(),
                grids: Vec::new(),
            })
        }
    }
}

/// SQLite virtual-machine steps a raw-SQL statement may take before it is stopped: about a second of work
/// in the browser. A DSL query cannot loop; raw SQL can (`WITH RECURSIVE` without a bound).
pub const MAX_STEPS: u64 = 20_000_000;

/// How often, in steps, the progress handler looks at the budget.
const STEP_CHECK: u64 = 100_000;

/// Runs one statement of raw SQL, as written, on a database prepared by [`prepare`]: its rows (at most
/// [`MAX_ROWS`]) or the rows it changed; stopped after [`MAX_STEPS`] steps.
pub fn run_sql(conn: &Connection, sql: &str) -> Result<Execution, String> {
    if sql.trim().is_empty() {
        return Err("write one SQL statement, for example SELECT * FROM users".into());
    }
    use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
    let steps = std::sync::Arc::new(AtomicU64::new(0));
    let counted = steps.clone();
    conn.progress_handler(
        STEP_CHECK as i32,
        Some(move || counted.fetch_add(STEP_CHECK, Relaxed) + STEP_CHECK > MAX_STEPS),
    )
    .map_err(|e| e.to_string())?;
    let result = run_sql_unguarded(conn, sql);
    let _ = conn.progress_handler(0, None::<fn() -> bool>);
    result.map_err(|e| {
        if steps.load(Relaxed) > MAX_STEPS {
            format!("stopped after {MAX_STEPS} steps of SQLite's engine: does this query ever end?")
        } else {
            e
        }
    })
}

fn run_sql_unguarded(conn: &Connection, sql: &str) -> Result<Execution, String> {
    let mut stmt = conn.prepare(sql).map_err(|e| match e {
        rusqlite::Error::MultipleStatement => {
            "one statement at a time: remove what follows the first `;`".to_owned()
        }
        e => e.to_string(),
    })?;
    if stmt.column_count() == 0 {
        let n = stmt.execute([]).map_err(|e| e.to_string())?;
        return Ok(Execution {
            summary: format!("{n} row{} changed", plural(n)),
            grids: Vec::new(),
        });
    }
    let grid = grid_of(&mut stmt, &[], "result".into())?;
    Ok(Execution {
        summary: rows_summary(&grid),
        grids: vec![grid],
    })
}

/// Every declared table with its rows, as a run starts with them.
pub fn data(conn: &Connection, schema: &Schema) -> Result<Execution, String> {
    let grids = schema
        .tables
        .iter()
        .map(|t| {
            let mut g = table_contents(conn, schema, &t.schema.name)?;
            g.title = t.schema.name.to_string();
            Ok(g)
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(Execution {
        summary: format!(
            "{} table{} with the sample rows every run starts from",
            grids.len(),
            plural(grids.len())
        ),
        grids,
    })
}
