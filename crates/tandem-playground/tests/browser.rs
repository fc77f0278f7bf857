//! The built page in headless Chromium (Debian's `chromium` + `chromium-driver`), driven through WebDriver
//! by fantoccini as a learner uses it: the page loads its WebAssembly and shows the default query's SQL and rows; a typed query renders for
//! every dialect and runs; a bad query shows its error and the next good one works; an example from the
//! menu runs; the address reproduces the state. A screenshot is saved to `target/playground-e2e/`.
//!
//! Needs the page built (`just playground-build`) and the browser installed; without them the test is
//! reported *ignored*, with the reason (libtest-mimic harness) — except under `CI=true`, where it fails.

#![cfg_attr(target_arch = "wasm32", allow(unused))]

use std::path::PathBuf;

#[cfg(not(target_arch = "wasm32"))]
use browser::Page;
#[cfg(not(target_arch = "wasm32"))]
use libtest_mimic::{Arguments, Completion, Failed, Trial};

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

/// The processes a run needs (chromedriver, the static server) and a WebDriver session through
/// fantoccini, with the few steps the test repeats.
#[cfg(not(target_arch = "wasm32"))]
mod browser {
    use std::io::BufRead;
    use std::process::{Child, Command, Stdio};
    use std::time::{Duration, Instant};

    use fantoccini::{Client, ClientBuilder, Locator};
    use serde_json::{Value, json};

    /// A child process killed when dropped.
    pub struct Process(pub Child);

    impl Drop for Process {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }

    /// A port free at the moment of asking.
    fn free_port() -> u16 {
        std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free port")
    }

    /// What the server said on stderr: one line per file it did not have.
    pub type Missing = std::sync::Arc<std::sync::Mutex<Vec<String>>>;

    /// `playground-serve` (this package's development binary) on a free port; its first line names it.
    pub fn serve(site: &std::path::Path) -> Result<(Process, String, Missing), String> {
        let mut child = Command::new(env!("CARGO_BIN_EXE_playground-serve"))
            .arg(site)
            .arg("127.0.0.1:0")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start playground-serve: {e}"))?;
        let missing = Missing::default();
        let stderr = child.stderr.take().expect("piped stderr");
        let said = missing.clone();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr)
                .lines()
                .map_while(Result::ok)
            {
                eprintln!("{line}");
                said.lock().unwrap().push(line);
            }
        });
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().expect("piped stdout"))
            .read_line(&mut line)
            .map_err(|e| format!("playground-serve said nothing: {e}"))?;
        let url = line
            .split_whitespace()
            .find(|w| w.starts_with("http://"))
            .ok_or_else(|| format!("playground-serve: {line:?}"))?
            .to_owned();
        Ok((Process(child), url, missing))
    }

    /// chromedriver and a headless Chromium session in it (flags as this machine's browser needs them:
    /// no sandbox as root, no background networking on a closed network).
    pub struct Page {
        pub client: Client,
        _driver: Process,
    }

    impl Page {
        pub async fn start(chromedriver: &str, chromium: &str) -> Result<Page, String> {
            let port = free_port();
            let driver = Process(
                Command::new(chromedriver)
                    .arg(format!("--port={port}"))
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .map_err(|e| format!("cannot start {chromedriver}: {e}"))?,
            );
            let profile =
                std::env::temp_dir().join(format!("tandem-chromium-{}", std::process::id()));
            let caps = json!({
                "browserName": "chrome",
                "goog:chromeOptions": {
                    "binary": chromium,
                    "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic",
                             "--no-first-run", "--disable-background-networking",
                             "--disable-component-update", "--disable-sync", "--window-size=1400,1300",
                             format!("--user-data-dir={}", profile.display())]
                }
            });
            let caps = caps.as_object().cloned().expect("an object");
            let connector = hyper_util::client::legacy::connect::HttpConnector::new();
            let deadline = Instant::now() + Duration::from_secs(20);
            // chromedriver takes a moment to listen: retry the session until it answers.
            let client = loop {
                match ClientBuilder::new(connector.clone())
                    .capabilities(caps.clone())
                    .connect(&format!("http://127.0.0.1:{port}"))
                    .await
                {
                    Ok(c) => break c,
                    Err(e) if Instant::now() > deadline => {
                        return Err(format!("no WebDriver session from {chromedriver}: {e}"));
                    }
                    Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
                }
            };
            Ok(Page {
                client,
                _driver: driver,
            })
        }

        /// Runs a script; its `return` value comes back.
        pub async fn script(&self, js: &str) -> Value {
            self.client
                .execute(js, Vec::new())
                .await
                .unwrap_or_else(|e| panic!("{js}: {e}"))
        }

        /// Waits (30 s at most) until `js` returns true.
        pub async fn wait_for(&self, js: &str) {
            let deadline = Instant::now() + Duration::from_secs(30);
            while self.script(js).await != Value::Bool(true) {
                if Instant::now() > deadline {
                    let errors = self
                        .script("return window.tandemPlayground && window.tandemPlayground.errors")
                        .await;
                    panic!("timed out waiting for: {js} (script errors: {errors})");
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }

        /// Replaces the text of a field, typed key by key.
        pub async fn type_into(&self, css: &str, text: &str) {
            let field = self.client.find(Locator::Css(css)).await.expect(css);
            field.clear().await.expect("clear");
            field.send_keys(text).await.expect("send keys");
        }

        pub async fn click(&self, css: &str) {
            self.client
                .find(Locator::Css(css))
                .await
                .expect(css)
                .click()
                .await
                .expect("click");
        }

        /// The text of the first element matching `css`.
        pub async fn text(&self, css: &str) -> String {
            self.client
                .find(Locator::Css(css))
                .await
                .expect(css)
                .text()
                .await
                .expect("text")
        }

        pub async fn goto(&self, url: &str) {
            self.client.goto(url).await.expect(url);
        }

        pub async fn screenshot(&self) -> Vec<u8> {
            self.client.screenshot().await.expect("screenshot")
        }
    }
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
    let (_server, base, missing) = browser::serve(&site).expect("serve the page");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    rt.block_on(drive(&chromedriver, &chromium, &base, &missing))
}

/// A screenshot of the page as it is, into `target/playground-e2e/<name>.png`, to look at.
#[cfg(not(target_arch = "wasm32"))]
async fn shot(b: &Page, name: &str) {
    std::fs::write(
        workspace().join(format!("target/playground-e2e/{name}.png")),
        b.screenshot().await,
    )
    .unwrap();
}

/// Picks an example from the menu, as a learner does.
#[cfg(not(target_arch = "wasm32"))]
async fn choose_example(b: &Page, id: &str) {
    b.script(&format!(
        "const s = document.querySelector('#examples'); s.value = '{id}'; \
         s.dispatchEvent(new Event('change')); return true;"
    ))
    .await;
}

/// The page driven through WebDriver (fantoccini).
#[cfg(not(target_arch = "wasm32"))]
async fn drive(
    chromedriver: &str,
    chromium: &str,
    base: &str,
    missing: &browser::Missing,
) -> Result<Completion, Failed> {
    std::fs::create_dir_all(workspace().join("target/playground-e2e")).unwrap();
    let b = Page::start(chromedriver, chromium)
        .await
        .expect("start headless Chromium");
    b.goto(base).await;
    b.wait_for("return Boolean(window.tandemPlayground && window.tandemPlayground.ready)")
        .await;
    let usable_ms = b
        .script("return window.tandemPlayground.usableMs")
        .await
        .as_f64()
        .unwrap_or(f64::NAN);
    // Nothing the page asked for was missing (a favicon included), and no script error on load.
    assert!(
        missing.lock().unwrap().is_empty(),
        "{:?}",
        missing.lock().unwrap()
    );
    assert_eq!(
        b.script("return window.tandemPlayground.errors").await,
        serde_json::json!([])
    );

    // The default query: the README's adults, three dialects, three rows from SQLite in WebAssembly.
    let pg = b.text(r#"[data-dialect="PostgreSQL"] pre.sql"#).await;
    assert!(
        pg.contains(r#"WHERE ("users"."age" >= $1) AND ("users"."email" IS NOT NULL)"#),
        "{pg}"
    );
    assert!(
        b.text(r#"[data-dialect="MySQL"] pre.sql"#)
            .await
            .contains("`users`.`age` >= ?")
    );
    assert_eq!(b.text("#summary").await, "3 rows");
    assert!(b.text("#grids").await.contains("ada"));

    // The editor: highlighted, numbered, brackets matched; completion offers a table's columns.
    assert!(
        b.script("return document.querySelectorAll('#query-pane .t-method').length > 0 && document.querySelector('#query-pane .gutter').textContent.startsWith('1')")
            .await
            == serde_json::Value::Bool(true)
    );
    b.type_into("#query", "users::table.select(users::na").await;
    b.wait_for("const l = document.querySelector('#query-pane .completions'); return !l.hidden && l.textContent.includes('name')")
        .await;
    shot(&b, "completion").await;
    let field = b
        .client
        .find(fantoccini::Locator::Css("#query"))
        .await
        .unwrap();
    field.send_keys("\u{E007}").await.unwrap();
    field.send_keys(")").await.unwrap();
    assert_eq!(
        b.script("return document.querySelector('#query').value")
            .await,
        serde_json::json!("users::table.select(users::name)")
    );
    b.wait_for("return document.querySelector('#summary').textContent === '5 rows'")
        .await;
    // The caret after the `)` lights it and the `(` it closes.
    assert_eq!(
        b.script("return document.querySelectorAll('#query-pane .t-bracket.matched').length")
            .await,
        serde_json::json!(2)
    );
    shot(&b, "editor").await;
    // An unclosed bracket is marked where it stands.
    b.type_into("#query", "users::table.filter(users::age.gt(18)")
        .await;
    b.wait_for("return document.querySelectorAll('#query-pane .t-bracket.unmatched').length === 1")
        .await;

    // A query typed key by key.
    b.type_into(
        "#query",
        "users::table\n    .select((users::name, users::age))\n    .filter(users::age.lt(18))\n    .order_by(users::age.desc())",
    ).await;
    b.click("#run").await;
    b.wait_for("return document.querySelector('#summary').textContent === '2 rows'")
        .await;
    let sqlite = b.text(r#"[data-dialect="SQLite"] pre.sql"#).await;
    assert_eq!(
        sqlite,
        r#"SELECT "users"."name", "users"."age" FROM "users" WHERE "users"."age" < ? ORDER BY "users"."age" DESC"#
    );
    let grid = b.text("#grids").await;
    assert!(
        grid.find("bob").unwrap() < grid.find("ed").unwrap(),
        "{grid}"
    );
    // The raw-SQL tab runs the query's SQLite statement, values written in, and gets the same rows.
    b.click("#tab-raw").await;
    b.click("#raw-from-query").await;
    b.wait_for("return document.querySelector('#raw-summary').textContent === '2 rows'")
        .await;
    let raw = b
        .script("return document.querySelector('#raw').value")
        .await
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(raw.contains("< 18") && !raw.contains('?'), "{raw}");
    assert_eq!(
        b.script("return document.querySelector('#raw-grids tbody').textContent")
            .await,
        b.script("return document.querySelector('#grids tbody').textContent")
            .await
    );
    b.type_into(
        "#raw",
        "SELECT name FROM users WHERE email IS NULL ORDER BY name",
    )
    .await;
    b.click("#raw-run").await;
    b.wait_for("return document.querySelector('#raw-summary').textContent === '2 rows'")
        .await;
    assert!(b.text("#raw-grids").await.contains("bob"));
    // The data tab: each table with its sample rows.
    b.click("#tab-data").await;
    b.wait_for("return document.querySelectorAll('#data-grids table').length >= 2")
        .await;
    let data = b.text("#data-grids").await;
    assert!(
        data.contains("users") && data.contains("orders") && data.contains("ada@example.com"),
        "{data}"
    );
    shot(&b, "data").await;
    b.click("#tab-result").await;

    let run_ms = b
        .script("return window.tandemPlayground.lastRunMs")
        .await
        .as_f64()
        .unwrap_or(f64::NAN);

    // A bad query: the error with its caret, no stale SQL; then a good one works again.
    b.type_into("#query", "users::table.filter(users::age.eq(\"x\"))")
        .await;
    b.click("#run").await;
    b.wait_for("return !document.querySelector('#error').hidden")
        .await;
    let err = b.text("#error-text").await;
    assert!(err.contains("expected `i32`"), "{err}");
    assert!(err.contains("query:1:35") && err.contains("^^^"), "{err}");
    assert!(
        b.script("return document.querySelectorAll('#dialects .dialect').length")
            .await
            == 0
    );
    shot(&b, "error").await;
    // A long message wraps inside its box: the advice at its end is not cut at the box's edge.
    b.type_into(
        "#query",
        "users::table.insert().values(User { name: \"ada\", age: 36, email: None })",
    )
    .await;
    b.click("#run").await;
    b.wait_for(
        "return !document.querySelector('#error').hidden && \
         document.querySelector('#error-message').textContent.includes('struct literals')",
    )
    .await;
    let fits = b
        .script(
            "const m = document.querySelector('#error-message'); \
             return m.scrollWidth <= m.clientWidth && m.getBoundingClientRect().right <= \
             document.querySelector('#error').getBoundingClientRect().right",
        )
        .await;
    assert_eq!(
        fits,
        serde_json::Value::Bool(true),
        "the error's message wraps within its box"
    );
    shot(&b, "error-wrapped").await;
    b.type_into("#query", "users::table.select(count_star())")
        .await;
    b.click("#run").await;
    b.wait_for("return document.querySelector('#error').hidden && document.querySelector('#summary').textContent === '1 row'").await;
    assert!(b.text("#grids").await.contains('5'));

    // An example from the menu, and a schema the learner changed.
    choose_example(&b, "no_orders").await;
    b.wait_for("return document.querySelector('#summary').textContent === '2 rows'")
        .await;
    assert!(
        b.text(r#"[data-dialect="SQLite"] pre.sql"#)
            .await
            .contains("NOT EXISTS")
    );

    // Back and forward walk the examples chosen; a link to an unknown example says so.
    choose_example(&b, "adults").await;
    b.wait_for("return document.querySelector('#summary').textContent === '3 rows'")
        .await;
    b.script("history.back(); return true;").await;
    b.wait_for(
        "return document.querySelector('#query').value.includes('not_exists') \
         && document.querySelector('#summary').textContent === '2 rows'",
    )
    .await;
    b.script("history.forward(); return true;").await;
    b.wait_for("return document.querySelector('#summary').textContent === '3 rows'")
        .await;
    b.script("location.hash = 'example=no_such_example'; return true;")
        .await;
    b.wait_for("return document.querySelector('#status').textContent.includes('no example named')")
        .await;
    b.script("history.back(); return true;").await;
    b.wait_for("return document.querySelector('#summary').textContent === '3 rows'")
        .await;
    b.script("history.back(); return true;").await;
    b.wait_for("return document.querySelector('#summary').textContent === '2 rows'")
        .await;

    // MySQL has no RETURNING: its pane says what tandem does instead.
    b.type_into(
        "#query",
        r#"users::table.insert().columns((users::name, users::age)).values(("zoe", 30)).returning(users::id)"#,
    )
    .await;
    b.click("#run").await;
    b.wait_for("return document.querySelector('#summary').textContent.startsWith('inserted')")
        .await;
    let note = b.text(r#"[data-dialect="MySQL"] .dialect-note"#).await;
    assert!(note.contains("LAST_INSERT_ID()"), "{note}");
    shot(&b, "mysql-note").await;
    assert!(
        !b.text(r#"[data-dialect="MySQL"] pre.sql"#)
            .await
            .contains("RETURNING")
    );

    // A 200 KB paste is refused, and its error shows a window of the line: the page keeps its width.
    b.script(
        "const q = document.querySelector('#query'); q.value = 'x'.repeat(200 * 1024); \
         q.dispatchEvent(new Event('input')); document.querySelector('#run').click(); return true;",
    )
    .await;
    b.wait_for("return !document.querySelector('#error').hidden")
        .await;
    let err = b.text("#error-text").await;
    assert!(
        err.contains("the playground reads at most"),
        "{}",
        &err[..err.len().min(300)]
    );
    assert!(
        err.len() < 1_000,
        "the error box shows {} characters",
        err.len()
    );
    assert_eq!(
        b.script("return document.documentElement.scrollWidth <= window.innerWidth")
            .await,
        serde_json::Value::Bool(true),
        "the page grew wider than the window"
    );
    shot(&b, "long-paste").await;

    // The address carries the state: a fresh load reproduces it.
    choose_example(&b, "no_orders").await;
    b.wait_for("return document.querySelector('#summary').textContent === '2 rows'")
        .await;
    let url = b
        .script("return location.href")
        .await
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(url.contains("q="), "{url}");
    // A fresh load (leaving the page first: the state is in the fragment, and a fragment change alone
    // would keep the loaded page), then the state applied: waited for, not read once.
    b.goto("about:blank").await;
    b.goto(&url).await;
    b.wait_for(
        "return Boolean(window.tandemPlayground && window.tandemPlayground.ready) \
         && document.querySelector('#query').value.includes('not_exists') \
         && document.querySelector('#summary').textContent === '2 rows'",
    )
    .await;

    let png = b.screenshot().await;
    assert!(png.starts_with(b"\x89PNG"), "a PNG screenshot");
    std::fs::write(workspace().join("target/playground-e2e/page.png"), png).unwrap();
    // The layout at a laptop's size and at a phone's: screenshots to look at, and no sideways scrolling.
    for (w, h) in [(1280, 720), (420, 900)] {
        b.client.set_window_size(w, h).await.expect("resize");
        let fits = b
            .script("return document.documentElement.scrollWidth <= window.innerWidth")
            .await;
        assert_eq!(
            fits,
            serde_json::Value::Bool(true),
            "wider than a {w}×{h} window"
        );
        shot(&b, &format!("page-{w}x{h}")).await;
    }
    assert!(
        missing.lock().unwrap().is_empty(),
        "{:?}",
        missing.lock().unwrap()
    );
    let wasm =
        std::fs::metadata(workspace().join("target/playground/pkg/tandem_playground_bg.wasm"))
            .map_or(0, |m| m.len());
    println!(
        "playground: usable {usable_ms:.0} ms after navigation; a typed query rendered and ran in {run_ms:.1} ms; {wasm} bytes of WebAssembly"
    );
    let _ = b.client.close().await;
    Ok(Completion::Completed)
}
