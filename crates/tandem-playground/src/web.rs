//! The WebAssembly exports the page calls. Strings in, JSON strings out: the page needs nothing else.

use wasm_bindgen::prelude::wasm_bindgen;

use crate::json::Json;

/// Runs one query against one schema; the report as JSON (see `Report::to_json`).
#[wasm_bindgen]
pub fn run(schema: &str, query: &str) -> String {
    crate::run(schema, query).to_json()
}

/// The default table declarations.
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
