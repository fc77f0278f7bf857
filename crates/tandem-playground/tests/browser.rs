//! The built page in headless Chromium (Debian's `chromium` + `chromium-driver`), driven as a learner uses
//! it: the page loads its WebAssembly and shows the default query's SQL and rows; a typed query renders for
//! every dialect and runs; a bad query shows its error and the next good one works; an example from the
//! menu runs; the address reproduces the state. A screenshot is saved to `target/playground-e2e/`.
//!
//! Needs the page built (`just playground-build`) and the browser installed; without them the test is
//! reported *ignored*, with the reason (libtest-mimic harness) — except under `CI=true`, where it fails.

#![cfg_attr(target_arch = "wasm32", allow(unused))]

#[cfg(not(target_arch = "wasm32"))]
#[path = "support/webdriver.rs"]
mod webdriver;

use std::path::PathBuf;

#[cfg(not(target_arch = "wasm32"))]
use libtest_mimic::{Arguments, Completion, Failed, Trial};
#[cfg(not(target_arch = "wasm32"))]
use webdriver::Browser;

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    let args = Arguments::from_args();
    let trial = Trial::ignorable_test("page_in_headless_chromium", page_in_headless_chromium);
    libtest_mimic::run(&args, vec![trial]).exit();
}

/// A browser test has nothing to do inside WebAssembly.
#[cfg(target_arch = "wasm32")]
fn main() {}

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Ignored (outside CI) or failed (under CI), with the reason.
#[cfg(not(target_arch = "wasm32"))]
fn unavailable(why: &str) -> Result<Completion, Failed> {
    let msg = format!("cannot run the browser test: {why}");
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        return Err(format!("{msg} (CI=true: this test must run)").into());
    }
    Ok(Completion::ignored_with(msg))
}

/// The whole page, as a learner uses it.
#[cfg(not(target_arch = "wasm32"))]
fn page_in_headless_chromium() -> Result<Completion, Failed> {
    let site = std::env::var("TANDEM_PLAYGROUND_SITE")
        .map(PathBuf::from)
        .unwrap_or_else(|_| workspace().join("target/playground"));
    if !site.join("pkg/tandem_playground_bg.wasm").is_file() {
        return unavailable(&format!(
            "no built page in {} (run `just playground-build`, or set TANDEM_PLAYGROUND_SITE)",
            site.display()
        ));
    }
    let chromedriver =
        std::env::var("CHROMEDRIVER").unwrap_or_else(|_| "/usr/bin/chromedriver".into());
    let chromium = std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    for bin in [&chromedriver, &chromium] {
        if !std::path::Path::new(bin).exists() {
            return unavailable(&format!(
                "{bin} is missing (Debian: apt-get install chromium chromium-driver; or set CHROMEDRIVER / CHROMIUM)"
            ));
        }
    }
    let addr = tandem_playground::serve::start(site, "127.0.0.1:0").expect("serve the page");
    let b = Browser::start(&chromedriver, &chromium).expect("start headless Chromium");
    let base = format!("http://{addr}/");
    b.goto(&base);
    b.wait_for("return Boolean(window.tandemPlayground && window.tandemPlayground.ready)");
    let usable_ms = b
        .script("return window.tandemPlayground.usableMs")
        .as_f64()
        .unwrap_or(f64::NAN);

    // The default query: the README's adults, three dialects, three rows from SQLite in WebAssembly.
    let pg = b.text(r#"[data-dialect="PostgreSQL"] pre.sql"#);
    assert!(
        pg.contains(r#"WHERE ("users"."age" >= $1) AND ("users"."email" IS NOT NULL)"#),
        "{pg}"
    );
    assert!(
        b.text(r#"[data-dialect="MySQL"] pre.sql"#)
            .contains("`users`.`age` >= ?")
    );
    assert_eq!(b.text("#summary"), "3 rows");
    assert!(b.text("#grids").contains("ada"));

    // A query typed key by key.
    b.type_into(
        "#query",
        "users::table\n    .select((users::name, users::age))\n    .filter(users::age.lt(18))\n    .order_by(users::age.desc())",
    );
    b.click("#run");
    b.wait_for("return document.querySelector('#summary').textContent === '2 rows'");
    let sqlite = b.text(r#"[data-dialect="SQLite"] pre.sql"#);
    assert_eq!(
        sqlite,
        r#"SELECT "users"."name", "users"."age" FROM "users" WHERE "users"."age" < ? ORDER BY "users"."age" DESC"#
    );
    let grid = b.text("#grids");
    assert!(
        grid.find("bob").unwrap() < grid.find("ed").unwrap(),
        "{grid}"
    );
    let run_ms = b
        .script("return window.tandemPlayground.lastRunMs")
        .as_f64()
        .unwrap_or(f64::NAN);

    // A bad query: the error with its caret, no stale SQL; then a good one works again.
    b.type_into("#query", "users::table.filter(users::age.eq(\"x\"))");
    b.click("#run");
    b.wait_for("return !document.querySelector('#error').hidden");
    let err = b.text("#error-text");
    assert!(err.contains("expected `i32`"), "{err}");
    assert!(err.contains("query:1:35") && err.contains("^^^"), "{err}");
    assert!(b.script("return document.querySelectorAll('#dialects .dialect').length") == 0);
    std::fs::create_dir_all(workspace().join("target/playground-e2e")).unwrap();
    std::fs::write(
        workspace().join("target/playground-e2e/error.png"),
        b.screenshot(),
    )
    .unwrap();
    b.type_into("#query", "users::table.select(count_star())");
    b.click("#run");
    b.wait_for("return document.querySelector('#error').hidden && document.querySelector('#summary').textContent === '1 row'");
    assert!(b.text("#grids").contains('5'));

    // An example from the menu, and a schema the learner changed.
    b.script("const s = document.querySelector('#examples'); s.value = 'no_orders'; s.dispatchEvent(new Event('change')); return true;");
    b.wait_for("return document.querySelector('#summary').textContent === '2 rows'");
    assert!(
        b.text(r#"[data-dialect="SQLite"] pre.sql"#)
            .contains("NOT EXISTS")
    );

    // The address carries the state: a fresh load reproduces it.
    let url = b
        .script("return location.href")
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(url.contains("q="), "{url}");
    b.goto(&base);
    b.goto(&url);
    b.wait_for("return Boolean(window.tandemPlayground && window.tandemPlayground.ready)");
    assert!(
        b.script("return document.querySelector('#query').value.includes('not_exists')") == true
    );
    assert_eq!(b.text("#summary"), "2 rows");

    let png = b.screenshot();
    assert!(png.starts_with(b"\x89PNG"), "a PNG screenshot");
    std::fs::write(workspace().join("target/playground-e2e/page.png"), png).unwrap();
    let wasm =
        std::fs::metadata(workspace().join("target/playground/pkg/tandem_playground_bg.wasm"))
            .map_or(0, |m| m.len());
    println!(
        "playground: usable {usable_ms:.0} ms after navigation; a typed query rendered and ran in {run_ms:.1} ms; {wasm} bytes of WebAssembly"
    );
    Ok(Completion::Completed)
}
