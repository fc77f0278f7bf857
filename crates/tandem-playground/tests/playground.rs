//! The playground on native SQLite: what learners see for good and bad input — errors at the right spot with
//! the typed DSL's rules, SQLite's own errors, results of the examples, sample rows for any schema, and no
//! input that breaks it.

use tandem_playground::report::Input;
use tandem_playground::run::Cell;
use tandem_playground::samples::DEFAULT_SCHEMA;

fn run(query: &str) -> tandem_playground::Report {
    tandem_playground::run(DEFAULT_SCHEMA, query)
}

/// The first statement `r` rendered for `dialect`.
fn first_sql(r: &tandem_playground::Report, dialect: tandem_sql::Dialect) -> &tandem_sql::Rendered {
    &r.sql
        .iter()
        .find(|d| d.dialect == dialect)
        .unwrap()
        .rendered
        .as_ref()
        .unwrap()[0]
}

/// The error of `query`, with the text it points at.
fn error_at(query: &str) -> (String, String) {
    let r = run(query);
    let e = r.error.unwrap_or_else(|| panic!("{query} should fail"));
    assert_eq!(e.input, Input::Query);
    (e.message, query[e.span.start..e.span.end].to_owned())
}

/// Kind mismatches fail where rustc would, pointing at the offending value.
#[test]
fn kind_errors_point_at_the_value() {
    let (msg, at) = error_at(r#"users::table.filter(users::age.eq("x"))"#);
    assert_eq!(at, r#""x""#);
    assert!(msg.contains("i32") && msg.contains("&str"), "{msg}");
    let (msg, at) = error_at("users::table.filter(users::age.like(\"a%\"))");
    assert_eq!(at, "users::age");
    assert!(msg.contains("text"), "{msg}");
    let (_, at) = error_at("orders::table.filter(orders::total.gt(100))");
    assert_eq!(at, "100", "an integer literal is not an f64");
    let (_, at) = error_at("users::table.select(sum(users::name))");
    assert_eq!(at, "users::name");
    let (_, at) = error_at("users::table.filter(users::age.gt(18).and(users::name))");
    assert_eq!(at, "users::name");
    let (msg, _) = error_at("users::table.filter(users::age.eq(99999999999))");
    assert!(msg.contains("out of range"), "{msg}");
    let (_, at) = error_at("users::table.filter(users::id.eq(orders::total))");
    assert_eq!(at, "orders::total");
}

/// Names that do not exist, and tables outside FROM/JOIN, are errors at the name.
#[test]
fn unknown_names_and_tables_outside_the_query() {
    let (msg, at) = error_at("user::table.select_all()");
    assert_eq!(at, "user");
    assert!(msg.contains("`users`"), "{msg}");
    let (msg, at) = error_at("users::table.select(users::mail)");
    assert_eq!(at, "mail");
    assert!(msg.contains("`email`"), "{msg}");
    let (msg, at) = error_at("users::table.filter(orders::total.gt(1.0))");
    assert_eq!(at, "orders::total");
    assert!(msg.contains("inner_join"), "{msg}");
    let (_, at) = error_at("users::table.selekt_all()");
    assert_eq!(at, "selekt_all");
    let (msg, _) = error_at("users::table");
    assert!(msg.contains("select_all"), "{msg}");
}

/// Schema mistakes point into the schema box.
#[test]
fn schema_errors() {
    for (schema, at) in [
        ("struct A { id: i64 }", "A"),
        ("#[table(name = \"a\")] struct A { id: u32 }", "u32"),
        (
            "#[table(name = \"a\")] struct A { #[column(varchar = 10)] id: i64 }",
            "varchar",
        ),
        ("#[table(name = \"a \")] struct A { id: i64 }", "\"a \""),
        (
            "#[table(name = \"a\")] struct A { id: i64 } #[table(name = \"a\")] struct B { id: i64 }",
            "B",
        ),
        ("#[table(name = \"a\")] struct A { id: i64, id: i32 }", "A"),
    ] {
        let r = tandem_playground::run(schema, "a::table.select_all()");
        let e = r.error.unwrap_or_else(|| panic!("{schema} should fail"));
        assert_eq!(e.input, Input::Schema, "{schema}");
        assert_eq!(
            &schema[e.span.start..e.span.end],
            at,
            "{schema}: {}",
            e.message
        );
    }
}

fn names(r: &tandem_playground::Report) -> Vec<String> {
    let x = r.execution.as_ref().unwrap().as_ref().unwrap();
    let g = &x.grids[0];
    let col = g.columns.iter().position(|c| c == "name").unwrap();
    g.rows
        .iter()
        .map(|row| match &row[col] {
            Cell::Text(s) => s.clone(),
            other => panic!("{other:?}"),
        })
        .collect()
}

/// Queries run on SQLite against the sample rows and return what SQL says they should.
#[test]
fn examples_return_their_rows() {
    let r = run(&example("adults"));
    assert_eq!(names(&r), ["ada", "cy", "dee"]);
    let r = run(&example("no_orders"));
    assert_eq!(names(&r), ["bob", "ed"]);
    let r = run(&example("big_spenders"));
    assert_eq!(names(&r), ["ada", "cy"]);
    let r = run(&example("insert_returning"));
    let x = r.execution.unwrap().unwrap();
    assert_eq!(
        x.grids[0].rows,
        vec![vec![Cell::Int(6)], vec![Cell::Int(7)]]
    );
    assert_eq!(x.grids[1].rows.len(), 7, "the table afterwards");
    let r = run(&example("birthday"));
    let x = r.execution.unwrap().unwrap();
    assert_eq!(x.summary, "1 row affected");
    let ada = &x.grids[0].rows[0];
    assert_eq!(ada[2], Cell::Int(37));
    let r = run(&example("totals_per_user"));
    let x = r.execution.unwrap().unwrap();
    assert_eq!(
        x.grids[0].rows.len(),
        2,
        "ada and cy have more than one order"
    );
}

fn example(id: &str) -> String {
    tandem_playground::samples::examples()
        .into_iter()
        .find(|e| e.id == id)
        .unwrap()
        .query
}

/// What SQLite refuses is SQLite's error, with the SQL still shown; a dialect that cannot express a
/// statement says so in its own pane.
#[test]
fn engine_errors_are_shown_not_thrown() {
    let r = run(r#"users::table.insert().columns((users::name, users::age)).values(("ada", 3))"#);
    assert!(r.error.is_none());
    assert_eq!(r.sql.len(), 3);
    let err = r.execution.unwrap().unwrap_err();
    assert!(err.contains("UNIQUE"), "{err}");
    let r = run("users::table.filter(users::age.in_list([]))");
    assert!(r.sql.iter().all(|d| {
        d.rendered
            .as_ref()
            .unwrap_err()
            .contains("IN list is empty")
    }));
    assert!(r.execution.unwrap().is_err());
}

/// A schema of the learner's own gets generated sample rows.
#[test]
fn any_schema_gets_sample_rows() {
    let schema = r#"
        #[derive(Table)]
        #[table(name = "books")]
        struct Book {
            #[column(primary_key, auto_increment)]
            id: i64,
            #[column(varchar = 3)]
            title: String,
            pages: i16,
            price: Option<f64>,
            out: bool,
        }"#;
    let r = tandem_playground::run(
        schema,
        "books::table.select((books::title, books::pages)).filter(books::pages.gt(20))",
    );
    let x = r.execution.unwrap().unwrap();
    assert_eq!(x.grids[0].rows.len(), 3);
    assert_eq!(
        x.grids[0].rows[0],
        vec![Cell::Text("tit".into()), Cell::Int(30)]
    );
}

/// The JSON the page reads is valid JSON with the fields it uses.
#[test]
fn report_json() {
    let j: serde_json::Value = serde_json::from_str(&run(&example("adults")).to_json()).unwrap();
    assert!(j["error"].is_null());
    assert_eq!(j["sql"].as_array().unwrap().len(), 3);
    assert_eq!(j["sql"][1]["dialect"], "PostgreSQL");
    assert_eq!(j["sql"][1]["statements"][0]["params"][0]["value"], "18");
    assert_eq!(j["run"]["grids"][0]["rows"].as_array().unwrap().len(), 3);
    let bad = "users::table.filter(users::naem.eq(\"é\"))";
    let j: serde_json::Value = serde_json::from_str(&run(bad).to_json()).unwrap();
    assert_eq!(j["error"]["input"], "query");
    // UTF-16 offsets for the browser's text area.
    assert_eq!(j["error"]["start"], 27);
    assert_eq!(j["error"]["line"], 1);
}

/// No input breaks the playground: every prefix of every example, and every example with one character
/// removed or doubled, gives a report (an error or a result), never a panic.
#[test]
fn no_input_breaks_it() {
    for e in tandem_playground::samples::examples() {
        let q = &e.query;
        let cuts: Vec<usize> = q.char_indices().map(|(i, _)| i).collect();
        for &i in &cuts {
            let _ = run(&q[..i]);
            let removed: String = q[..i].chars().chain(q[i..].chars().skip(1)).collect();
            let _ = run(&removed);
            let doubled = format!("{}{}", &q[..i], &q[i..]);
            let _ = run(&format!("{}{}", &q[..i], &doubled[i..]));
        }
        // Prefixes of the schema with this query.
        if e.id == "adults" {
            for (i, _) in DEFAULT_SCHEMA.char_indices() {
                let _ = tandem_playground::run(&DEFAULT_SCHEMA[..i], q);
            }
        }
    }
    let huge = "users::table.select_all()".repeat(5_000);
    assert!(run(&huge).error.unwrap().message.contains("at most"));
}

/// A computed column is headed by the DSL that computes it; a column by its name; an alias by the alias.
#[test]
fn result_headers_are_readable() {
    let r = run(
        "users::table.select((users::name, count_star(), avg(users::age), \
         max(users::age).alias(\"oldest\")))",
    );
    assert!(r.error.is_none(), "{:?}", r.error);
    let exec = r.execution.unwrap().unwrap();
    assert_eq!(
        exec.grids[0].columns,
        ["name", "count_star()", "avg(users::age)", "oldest"]
    );
    // Long expressions are cut, on one line.
    let r = run(
        "users::table.select(sum(users::age\n    + users::age + users::age + users::age + users::age))",
    );
    let exec = r.execution.unwrap().unwrap();
    let header = &exec.grids[0].columns[0];
    assert!(
        header.starts_with("sum(users::age + users::age") && header.ends_with('…'),
        "{header}"
    );
}

/// An unclosed bracket is reported where it stands, not at the end of the input.
#[test]
fn unclosed_bracket_points_at_itself() {
    let (msg, at) = error_at("users::table.filter(users::age.gt(18).limit(3)");
    assert_eq!(
        (msg.as_str(), at.as_str()),
        ("this `(` is never closed: add `)`", "(")
    );
    let r = run("users::table.filter(users::age.gt(18).limit(3)");
    assert_eq!(r.error.unwrap().column, 20);
}

/// Where a dialect cannot say what the query says, its pane says what tandem does instead.
#[test]
fn dialect_notes_say_what_a_dialect_does_instead() {
    let notes = |query: &str, dialect: tandem_sql::Dialect| -> Vec<String> {
        let r = run(query);
        assert!(r.error.is_none(), "{query}: {:?}", r.error);
        r.sql
            .into_iter()
            .find(|d| d.dialect == dialect)
            .unwrap()
            .notes
    };
    let insert = r#"users::table.insert().columns((users::name, users::age)).values(("ada", 3)).returning(users::id)"#;
    let my = notes(insert, tandem_sql::Dialect::MySql);
    assert!(
        my.iter()
            .any(|n| n.contains("no RETURNING") && n.contains("LAST_INSERT_ID()")),
        "{my:?}"
    );
    let r = run(insert);
    assert!(
        !first_sql(&r, tandem_sql::Dialect::MySql)
            .sql
            .contains("RETURNING")
    );
    assert!(notes(insert, tandem_sql::Dialect::Postgres).is_empty());
    let like = r#"users::table.filter(users::name.like("a%"))"#;
    assert!(notes(like, tandem_sql::Dialect::MySql)[0].contains("collation"));
    assert!(notes(like, tandem_sql::Dialect::Sqlite)[0].contains("case_sensitive_like"));
    assert!(notes("users::table.select_all()", tandem_sql::Dialect::MySql).is_empty());
}

/// The raw-SQL tab: the SQLite statement with its values written in returns the rows the DSL query
/// returned, on the same database; bad, runaway and multiple statements are errors, never a hang.
#[test]
fn raw_sql_runs_on_the_same_database() {
    use tandem_playground::report::{data, inline_sqlite, run_sql};
    let dsl = run(
        r#"users::table.select((users::name, users::age)).filter(users::age.ge(18).and(users::name.ne("cy"))).order_by(users::age.desc())"#,
    );
    let inline = inline_sqlite(first_sql(&dsl, tandem_sql::Dialect::Sqlite)).unwrap();
    assert!(
        inline.contains(">= 18") && inline.contains("<> 'cy'"),
        "{inline}"
    );
    let by_hand = run_sql(DEFAULT_SCHEMA, &inline).unwrap();
    let from_dsl = dsl.execution.unwrap().unwrap();
    assert_eq!(by_hand.grids[0].rows, from_dsl.grids[0].rows);
    assert!(!by_hand.grids[0].rows.is_empty());

    // Quotes inside values are doubled; `?` inside a value is not a placeholder.
    let odd = run(r#"users::table.filter(users::name.eq("o'brien?"))"#);
    assert!(
        inline_sqlite(first_sql(&odd, tandem_sql::Dialect::Sqlite))
            .unwrap()
            .ends_with("= 'o''brien?'")
    );

    let changed = run_sql(DEFAULT_SCHEMA, "DELETE FROM orders WHERE total > 0").unwrap();
    assert!(
        changed.summary.ends_with("rows changed"),
        "{}",
        changed.summary
    );
    let err = |sql: &str| run_sql(DEFAULT_SCHEMA, sql).unwrap_err();
    assert!(
        err("SELEC 1").contains("syntax error"),
        "{}",
        err("SELEC 1")
    );
    assert!(err("SELECT 1; SELECT 2").contains("one statement"));
    assert!(err("  ").contains("write one SQL statement"));
    let runaway =
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c";
    assert!(
        err(runaway).contains("does this query ever end"),
        "{}",
        err(runaway)
    );
    // A long result is cut, not refused.
    let long = run_sql(
        DEFAULT_SCHEMA,
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x FROM c",
    )
    .unwrap();
    assert!(long.grids[0].truncated);
    assert!(
        run_sql("struct", "SELECT 1")
            .unwrap_err()
            .contains("Tables box")
    );

    // The data tab: every table with the rows a run starts from.
    let tables = data(DEFAULT_SCHEMA).unwrap();
    let names: Vec<&str> = tables.grids.iter().map(|g| g.title.as_str()).collect();
    assert!(
        names.contains(&"users") && names.contains(&"orders"),
        "{names:?}"
    );
    let users = tables.grids.iter().find(|g| g.title == "users").unwrap();
    let all = run_sql(DEFAULT_SCHEMA, "SELECT * FROM users ORDER BY id").unwrap();
    assert_eq!(users.rows, all.grids[0].rows);
}

/// The reference lists what the evaluator reads: every name in it is known where it is listed, and an
/// unknown name's error lists the reference's names for that receiver.
#[test]
fn reference_matches_the_evaluator() {
    use tandem_playground::reference::{ENTRIES, On, names};
    let probe = |on: On, name: &str| -> String {
        match on {
            On::Function => format!("users::table.select({name}())"),
            On::Table => format!("users::table.{name}()"),
            On::Query => format!("users::table.select_all().{name}()"),
            On::Expression => format!("users::table.filter(users::age.{name}())"),
            On::Insert => format!("users::table.insert().{name}()"),
            On::Update => format!("users::table.update().{name}()"),
            On::Delete => format!("users::table.delete().{name}()"),
        }
    };
    for e in ENTRIES {
        let r = run(&probe(e.on, e.name));
        if let Some(err) = r.error {
            assert!(
                !err.message.contains(&format!("method `{}`", e.name))
                    && !err.message.contains(&format!("function `{}`", e.name)),
                "{:?} {}: {}",
                e.on,
                e.name,
                err.message
            );
        }
        assert!(!e.call.is_empty() && !e.doc.is_empty() && e.chapter.ends_with(".html"));
    }
    for on in On::ALL {
        let err = run(&probe(on, "no_such_thing")).error.unwrap();
        assert!(
            err.message.ends_with(&format!("({})", names(on))),
            "{on:?}: {}",
            err.message
        );
    }
}
