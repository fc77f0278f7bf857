//! The playground inside headless Chromium, through wasm-bindgen-test: SQLite compiled to WebAssembly runs
//! every example, and a bad input leaves the module working for the next one.
//!
//! `just playground-wasm-test` runs it (wasm-bindgen-test-runner, chromedriver, `webdriver.json` for the
//! flags this machine's Chromium needs).
#![cfg(target_arch = "wasm32")]

use tandem_playground::run::Cell;
use tandem_playground::samples::{DEFAULT_SCHEMA, examples};
use wasm_bindgen_test::{wasm_bindgen_test, wasm_bindgen_test_configure};

wasm_bindgen_test_configure!(run_in_browser);

/// The README's query runs on SQLite in the browser and returns its three rows.
#[wasm_bindgen_test]
fn sqlite_runs_in_the_browser() {
    let q = examples()
        .into_iter()
        .find(|e| e.id == "adults")
        .unwrap()
        .query;
    let r = tandem_playground::run(DEFAULT_SCHEMA, &q);
    let x = r.execution.unwrap().unwrap();
    let names: Vec<Cell> = x.grids[0].rows.iter().map(|row| row[1].clone()).collect();
    assert_eq!(
        names,
        [
            Cell::Text("ada".into()),
            Cell::Text("cy".into()),
            Cell::Text("dee".into())
        ]
    );
}

/// Every example of the menu renders for three dialects and runs.
#[wasm_bindgen_test]
fn every_example_runs() {
    for e in examples() {
        let r = tandem_playground::run(DEFAULT_SCHEMA, &e.query);
        assert!(r.error.is_none(), "{}", e.id);
        assert_eq!(r.sql.len(), 3);
        assert!(
            matches!(r.execution, Some(Ok(_))),
            "{}: {:?}",
            e.id,
            r.execution
        );
    }
}

/// Bad input of every kind is a report, and the module keeps working.
#[wasm_bindgen_test]
fn bad_input_then_good() {
    for bad in [
        "users::table.filter(",
        "users::table.filter(users::age.eq(\"x\"))",
        "nope::table",
        "(((((",
        "\u{0}",
    ] {
        assert!(
            tandem_playground::run(DEFAULT_SCHEMA, bad).error.is_some(),
            "{bad}"
        );
    }
    let dup = tandem_playground::run(
        DEFAULT_SCHEMA,
        r#"users::table.insert().columns((users::name, users::age)).values(("ada", 1))"#,
    );
    assert!(dup.execution.unwrap().unwrap_err().contains("UNIQUE"));
    let ok = tandem_playground::run(DEFAULT_SCHEMA, "users::table.select(count_star())");
    assert_eq!(
        ok.execution.unwrap().unwrap().grids[0].rows,
        vec![vec![Cell::Int(5)]]
    );
}
