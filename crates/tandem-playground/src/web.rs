//! The WebAssembly exports the page calls. Strings in, JSON strings out: the page needs nothing else.

use wasm_bindgen::prelude::wasm_bindgen;

use crate::json::Json;

/// Runs one query against one schema; the report as JSON (see `Report::to_json`).
#[wasm_bindgen]
pub fn run(schema: &str, query: &str) -> String {
    crate::run(schema, query).to_json()
}

/// Runs one raw SQL statement on the database the schema declares, with its sample rows; `{summary,
/// grids, error}` as JSON.
#[wasm_bindgen]
pub fn run_sql(schema: &str, sql: &str) -> String {
    crate::report::execution_json(Some(&crate::report::run_sql(schema, sql))).to_text()
}

/// The declared tables with their sample rows; `{summary, grids, error}` as JSON.
#[wasm_bindgen]
pub fn data(schema: &str) -> String {
    crate::report::execution_json(Some(&crate::report::data(schema))).to_text()
}

/// What the editor completes, as JSON: `{tables: [{module, columns: [{field, type}]}], reference:
/// [{on, title, name, call, doc, chapter}]}`; `tables` is empty while the schema has an error.
#[wasm_bindgen]
pub fn names(schema: &str) -> String {
    crate::report::names_json(schema).to_text()
}

/// The default table declarations.
/// `just wasm-size` only: the schema and the query parsed by syn, as a syn-based playground would parse
/// them (items and an expression), so that its parser is linked in and weighed.
#[cfg(feature = "syn-size-probe")]
#[wasm_bindgen]
pub fn syn_probe(schema: &str, query: &str) -> bool {
    syn::parse_file(schema).is_ok() && syn::parse_str::<syn::Expr>(query).is_ok()
}

#[wasm_bindgen]
pub fn default_schema() -> String {
    crate::samples::DEFAULT_SCHEMA.to_owned()
}

/// The examples menu as JSON: `[{id, title, chapter, query}]`.
#[wasm_bindgen]
pub fn examples() -> String {
    Json::Arr(
        crate::samples::examples()
            .into_iter()
            .map(|e| {
                Json::Obj(vec![
                    ("id", Json::s(e.id)),
                    ("title", Json::s(e.title)),
                    ("chapter", Json::Num(f64::from(e.chapter))),
                    ("query", Json::s(e.query)),
                ])
            })
            .collect(),
    )
    .to_text()
}
