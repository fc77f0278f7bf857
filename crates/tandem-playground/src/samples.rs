//! What the page starts with: the default schema, its sample rows, and the examples menu — the queries of
//! `snippets/queries.rs`, which the book includes and `tests/snippets.rs` compiles against the real DSL.

use tandem_sql::ast::Statement;

use crate::schema::{Kind, Schema};
use crate::syntax::expr::parse_query;

/// The default schema: the `users` and `orders` tables of the book and the README.
pub const DEFAULT_SCHEMA: &str = include_str!("../snippets/schema.rs");

const QUERIES: &str = include_str!("../snippets/queries.rs");

/// Sample rows for the default schema, written in the DSL and built by the playground itself.
const SEEDS: [&str; 2] = [
    r#"users::table.insert().columns((users::name, users::age, users::email)).rows([
        ("ada", 36, Some("ada@example.com")),
        ("bob", 17, None),
        ("cy", 41, Some("cy@example.org")),
        ("dee", 25, Some("dee@example.com")),
        ("ed", 15, None),
    ])"#,
    r#"orders::table.insert().columns((orders::user_id, orders::code, orders::total, orders::shipped)).rows([
        (1, "A-100", 120.5, true),
        (1, "A-101", 35.0, false),
        (3, "C-200", 99.9, true),
        (3, "C-201", 250.0, false),
        (3, "C-202", 12.25, true),
        (4, "D-300", 18.0, false),
    ])"#,
];

/// One entry of the examples menu.
#[derive(Clone, Debug, PartialEq)]
pub struct Example {
    /// The anchor in `snippets/queries.rs` (and in the book).
    pub id: &'static str,
    /// The menu's label.
    pub title: &'static str,
    /// The book chapter it belongs to.
    pub chapter: u8,
    /// The query, as the book shows it.
    pub query: String,
}

/// The menu: (anchor, label, chapter).
const MENU: [(&str, &str, u8); 14] = [
    ("all_users", "All users", 1),
    ("create_users", "CREATE TABLE from a declaration", 1),
    ("adults", "Adults with an email, by name", 2),
    ("no_email", "NULL: no email, or an example.org one", 2),
    ("in_between", "IN and BETWEEN", 2),
    ("aggregates", "Aggregates", 2),
    ("totals_per_user", "Join, group, having", 3),
    ("left_join", "Left join: users and their order counts", 3),
    (
        "no_orders",
        "Correlated NOT EXISTS: users without orders",
        3,
    ),
    ("big_spenders", "IN (subquery): users with a big order", 3),
    (
        "insert_returning",
        "Insert two users, returning their ids",
        3,
    ),
    ("upsert", "Upsert by name", 3),
    ("birthday", "Update with arithmetic", 3),
    ("delete_minors", "Delete", 3),
];

/// The text between `// ANCHOR: id` and `// ANCHOR_END: id`, its common indentation removed — what mdbook's
/// `{{#include file:id}}` shows.
pub fn anchored(src: &str, id: &str) -> Option<String> {
    let (start, end) = (format!("// ANCHOR: {id}"), format!("// ANCHOR_END: {id}"));
    let mut lines = src.lines();
    lines.by_ref().find(|l| l.trim() == start)?;
    let body: Vec<&str> = lines.take_while(|l| l.trim() != end).collect();
    let indent = body
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    let text: Vec<&str> = body.iter().map(|l| l.get(indent..).unwrap_or("")).collect();
    Some(text.join("\n"))
}

/// The examples menu.
pub fn examples() -> Vec<Example> {
    MENU.iter()
        .filter_map(|(id, title, chapter)| {
            Some(Example {
                id,
                title,
                chapter: *chapter,
                query: anchored(QUERIES, id)?,
            })
        })
        .collect()
}

/// Sample rows for `schema`: the DSL seeds where they fit the declared tables, five generated rows for any
/// other table.
pub fn seeds(schema: &Schema) -> Vec<Statement> {
    let mut out = Vec::new();
    let mut seeded = Vec::new();
    for src in SEEDS {
        let built = parse_query(src)
            .ok()
            .and_then(|e| crate::eval::build(schema, &e).ok());
        if let Some(Statement::Insert(i)) = built {
            seeded.push(i.table.clone());
            out.push(Statement::Insert(i));
        }
    }
    for t in &schema.tables {
        if seeded.contains(&t.schema.name) {
            continue;
        }
        let cols: Vec<_> = t
            .schema
            .columns
            .iter()
            .zip(&t.columns)
            .filter(|(def, _)| !def.auto_increment)
            .collect();
        let rows = (1..=5i64)
            .map(|i| {
                cols.iter()
                    .map(|(def, c)| generated(c.kind, &c.field, i, def.ty))
                    .collect()
            })
            .collect();
        let names = cols.iter().map(|(def, _)| def.name.clone()).collect();
        out.push(Statement::Insert(tandem_sql::ast::Insert::values(
            t.schema.name.clone(),
            names,
            rows,
        )));
    }
    out
}

fn generated(kind: Kind, field: &str, i: i64, ty: tandem_sql::SqlType) -> tandem_sql::Value {
    use tandem_sql::Value;
    match kind {
        Kind::Bool => Value::Bool(i % 2 == 0),
        Kind::SmallInt => Value::I16(i as i16 * 10),
        Kind::Int => Value::I32(i as i32 * 10),
        Kind::BigInt => Value::I64(i),
        Kind::Real => Value::F32(i as f32 * 1.5),
        Kind::Double => Value::F64(i as f64 * 1.5),
        Kind::Text => {
            let mut s = format!("{field}-{i}");
            if let tandem_sql::SqlType::VarChar(n) = ty {
                s = s.chars().take(n as usize).collect();
                if s.is_empty() {
                    s = "x".into();
                }
            }
            Value::Text(s)
        }
        Kind::Blob => Value::Bytes(vec![i as u8; 3]),
    }
}
