//! Stage 2's specification. `just check 02` runs it on your `src/exercise.rs`. The oracles: tandem's own
//! renderer (the same condition built as tandem's AST must give the same SQL and parameters) and SQLite
//! (which computes every condition your evaluator computes, NULLs and all).

use expressions::{ColumnExt, Condition, RenderError, Sql};
use proptest::prelude::*;
use tables::{Dialect, Table, Value, table};
use tandem_sql::ast::{BinaryOp, Expr as TExpr, Select};
use tandem_sql::{Ident, Render};
use workshop_harness::{proptest_config, sql_mismatch, ui};

table! {
    /// The table every condition here reads.
    t (id) {
        id: i64,
        a: Option<i64>,
        b: Option<i64>,
        s: Option<String>,
        n: i32,
    }
}

/// A condition, built the same way in your DSL and in tandem's AST.
#[derive(Clone, Debug)]
enum Spec {
    /// `a` or `b` compared with a value, maybe NULL.
    Cmp(Col, Cmp, Option<i64>),
    /// `n` (never NULL) compared with a value.
    CmpN(Cmp, i32),
    /// `col IS [NOT] NULL`.
    IsNull(Col, bool),
    /// `col IN (…)`.
    In(Col, Vec<Option<i64>>),
    /// `s LIKE pattern`.
    Like(String),
    /// `s` contains the text literally.
    Contains(String),
    And(Box<Spec>, Box<Spec>),
    Or(Box<Spec>, Box<Spec>),
    Not(Box<Spec>),
}

#[derive(Clone, Copy, Debug)]
enum Col {
    A,
    B,
    S,
}

#[derive(Clone, Copy, Debug)]
enum Cmp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

fn specs() -> impl Strategy<Value = Spec> {
    let int_col = prop_oneof![Just(Col::A), Just(Col::B)];
    let cmp = prop_oneof![
        Just(Cmp::Eq),
        Just(Cmp::Ne),
        Just(Cmp::Lt),
        Just(Cmp::Le),
        Just(Cmp::Gt),
        Just(Cmp::Ge)
    ];
    let value = proptest::option::of(-2i64..3);
    let leaf = prop_oneof![
        (int_col.clone(), cmp.clone(), value.clone()).prop_map(|(c, o, v)| Spec::Cmp(c, o, v)),
        (cmp, -2i32..3).prop_map(|(o, v)| Spec::CmpN(o, v)),
        (
            prop_oneof![Just(Col::A), Just(Col::B), Just(Col::S)],
            any::<bool>()
        )
            .prop_map(|(c, n)| Spec::IsNull(c, n)),
        (int_col, proptest::collection::vec(value, 1..4)).prop_map(|(c, l)| Spec::In(c, l)),
        "[ab%_]{0,4}".prop_map(Spec::Like),
        "[ab%_\\\\]{0,3}".prop_map(Spec::Contains),
    ];
    leaf.prop_recursive(4, 24, 2, |inner| {
        prop_oneof![
            (inner.clone(), inner.clone()).prop_map(|(a, b)| Spec::And(Box::new(a), Box::new(b))),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| Spec::Or(Box::new(a), Box::new(b))),
            inner.prop_map(|a| Spec::Not(Box::new(a))),
        ]
    })
}

/// The condition in your DSL.
fn mine(spec: &Spec) -> Condition<t::table> {
    let cmp = |c: Col, o: Cmp, v: Option<i64>| match (c, o) {
        (Col::A, Cmp::Eq) => t::a.eq(v),
        (Col::A, Cmp::Ne) => t::a.ne(v),
        (Col::A, Cmp::Lt) => t::a.lt(v),
        (Col::A, Cmp::Le) => t::a.le(v),
        (Col::A, Cmp::Gt) => t::a.gt(v),
        (Col::A, Cmp::Ge) => t::a.ge(v),
        (_, Cmp::Eq) => t::b.eq(v),
        (_, Cmp::Ne) => t::b.ne(v),
        (_, Cmp::Lt) => t::b.lt(v),
        (_, Cmp::Le) => t::b.le(v),
        (_, Cmp::Gt) => t::b.gt(v),
        (_, Cmp::Ge) => t::b.ge(v),
    };
    match spec {
        Spec::Cmp(c, o, v) => cmp(*c, *o, *v),
        Spec::CmpN(o, v) => match o {
            Cmp::Eq => t::n.eq(*v),
            Cmp::Ne => t::n.ne(*v),
            Cmp::Lt => t::n.lt(*v),
            Cmp::Le => t::n.le(*v),
            Cmp::Gt => t::n.gt(*v),
            Cmp::Ge => t::n.ge(*v),
        },
        Spec::IsNull(Col::A, false) => t::a.is_null(),
        Spec::IsNull(Col::A, true) => t::a.is_not_null(),
        Spec::IsNull(Col::B, false) => t::b.is_null(),
        Spec::IsNull(Col::B, true) => t::b.is_not_null(),
        Spec::IsNull(Col::S, false) => t::s.is_null(),
        Spec::IsNull(Col::S, true) => t::s.is_not_null(),
        Spec::In(Col::A, l) => t::a.in_list(l.clone()),
        Spec::In(_, l) => t::b.in_list(l.clone()),
        Spec::Like(p) => t::s.like(p),
        Spec::Contains(text) => t::s.contains(text),
        Spec::And(x, y) => mine(x).and(mine(y)),
        Spec::Or(x, y) => mine(x).or(mine(y)),
        Spec::Not(x) => mine(x).not(),
    }
}

/// The same condition as tandem's untyped AST.
fn tandem(spec: &Spec) -> TExpr {
    let col = |c: Col| {
        let name = match c {
            Col::A => "a",
            Col::B => "b",
            Col::S => "s",
        };
        TExpr::qualified(Ident::from_static("t"), Ident::from_static(name))
    };
    let int = |v: Option<i64>| {
        TExpr::value(v.map_or(
            tandem_sql::Value::Null(tandem_sql::SqlType::BigInt),
            tandem_sql::Value::I64,
        ))
    };
    let op = |o: Cmp| match o {
        Cmp::Eq => BinaryOp::Eq,
        Cmp::Ne => BinaryOp::NotEq,
        Cmp::Lt => BinaryOp::Lt,
        Cmp::Le => BinaryOp::LtEq,
        Cmp::Gt => BinaryOp::Gt,
        Cmp::Ge => BinaryOp::GtEq,
    };
    let like = |pattern: String| TExpr::Like {
        expr: Box::new(col(Col::S)),
        pattern: Box::new(TExpr::value(pattern)),
        negated: false,
    };
    match spec {
        Spec::Cmp(c, o, v) => col(*c).binary(op(*o), int(*v)),
        Spec::CmpN(o, v) => TExpr::qualified(Ident::from_static("t"), Ident::from_static("n"))
            .binary(op(*o), TExpr::value(*v)),
        Spec::IsNull(c, negated) => TExpr::IsNull {
            expr: Box::new(col(*c)),
            negated: *negated,
        },
        Spec::In(c, l) => TExpr::InList {
            expr: Box::new(col(*c)),
            list: l.iter().map(|v| int(*v)).collect(),
            negated: false,
        },
        Spec::Like(p) => like(p.clone()),
        Spec::Contains(text) => like(format!("%{}%", tandem_sql::typed::escape_like(text))),
        Spec::And(x, y) => tandem(x).and(tandem(y)),
        Spec::Or(x, y) => tandem(x).or(tandem(y)),
        Spec::Not(x) => tandem(x).not(),
    }
}

/// The same engine, as tandem names it.
fn tandem_dialect(d: Dialect) -> tandem_sql::Dialect {
    d.to_string().parse().expect("tandem knows every engine")
}

/// tandem's text and parameters for a condition: the WHERE clause of a SELECT, cut out of it.
fn tandem_sql(expr: TExpr, d: Dialect) -> (String, Vec<Value>) {
    let d = tandem_dialect(d);
    let prefix = Select::from(Ident::from_static("t")).render(d).unwrap().sql + " WHERE ";
    let mut select = Select::from(Ident::from_static("t"));
    select.filter = Some(expr);
    let r = select.render(d).unwrap();
    let params = r
        .params
        .into_iter()
        .map(|v| match v {
            tandem_sql::Value::Null(_) => Value::Null,
            tandem_sql::Value::I32(i) => Value::I32(i),
            tandem_sql::Value::I64(i) => Value::I64(i),
            tandem_sql::Value::Text(s) => Value::Text(s),
            other => panic!("the test binds no {other:?}"),
        })
        .collect();
    (r.sql[prefix.len()..].to_owned(), params)
}

/// A connection with table `t` holding `rows`, LIKE case-sensitive as tandem's connections have it.
fn sqlite_with(rows: &[Row]) -> rusqlite::Connection {
    let c = rusqlite::Connection::open_in_memory().unwrap();
    c.execute_batch(
        "PRAGMA case_sensitive_like = ON;
         CREATE TABLE t (id INTEGER PRIMARY KEY, a INTEGER, b INTEGER, s TEXT, n INTEGER NOT NULL);",
    )
    .unwrap();
    for (i, r) in rows.iter().enumerate() {
        c.execute(
            "INSERT INTO t (id, a, b, s, n) VALUES (?1, ?2, ?3, ?4, ?5)",
            rusqlite::params![i as i64 + 1, r.a, r.b, r.s, r.n],
        )
        .unwrap();
    }
    c
}

fn bind(v: &Value) -> rusqlite::types::Value {
    use rusqlite::types::Value as V;
    match v {
        Value::Null => V::Null,
        Value::Bool(b) => V::Integer(i64::from(*b)),
        Value::I32(i) => V::Integer(i64::from(*i)),
        Value::I64(i) => V::Integer(*i),
        Value::F64(f) => V::Real(*f),
        Value::Text(s) => V::Text(s.clone()),
    }
}

#[derive(Clone, Debug)]
struct Row {
    a: Option<i64>,
    b: Option<i64>,
    s: Option<String>,
    n: i32,
}

fn rows() -> impl Strategy<Value = Vec<Row>> {
    let row = (
        proptest::option::of(-2i64..3),
        proptest::option::of(-2i64..3),
        proptest::option::of("[abAB%_\\\\]{0,4}"),
        -2i32..3,
    )
        .prop_map(|(a, b, s, n)| Row { a, b, s, n });
    proptest::collection::vec(row, 1..8)
}

/// Row `i` of `rows` as your evaluator reads it.
fn reader(rows: &[Row], i: usize) -> impl Fn(&str, &str) -> Value + '_ {
    move |table, column| {
        assert_eq!(
            table, "t",
            "the evaluator asked for a column of table {table:?}"
        );
        let r = &rows[i];
        match column {
            "id" => Value::I64(i as i64 + 1),
            "a" => r.a.map_or(Value::Null, Value::I64),
            "b" => r.b.map_or(Value::Null, Value::I64),
            "s" => r.s.clone().map_or(Value::Null, Value::Text),
            "n" => Value::I32(r.n),
            other => panic!("the evaluator asked for column {other:?}, which t does not have"),
        }
    }
}

fn truth(v: Option<bool>) -> &'static str {
    match v {
        Some(true) => "TRUE",
        Some(false) => "FALSE",
        None => "UNKNOWN",
    }
}

proptest! {
    #![proptest_config(proptest_config(256))]

    /// Every condition renders to exactly tandem's SQL and parameters, on every engine: columns
    /// qualified and quoted, every value a placeholder, operators in parentheses unless an AND chain (or
    /// an OR chain) keeps them flat.
    fn conditions_render_like_tandem(spec in specs()) {
        let cond = mine(&spec);
        for d in Dialect::ALL {
            let out = cond.to_sql(d).unwrap_or_else(|e| panic!("{d}: {e}"));
            let (sql, params) = tandem_sql(tandem(&spec), d);
            if let Some(diff) = sql_mismatch(&out.text, &sql) {
                prop_assert!(false, "{}: {}", d, diff);
            }
            prop_assert!(
                out.params == params,
                "{}: the parameters of {} differ:\n      yours: {:?}\n   expected: {:?}",
                d, out.text, out.params, params
            );
        }
    }

    /// SQL's three-valued logic: for every row, SQLite computes the same truth value for your SQL as your
    /// evaluator does (TRUE, FALSE or UNKNOWN), and a WHERE keeps exactly the rows that are TRUE.
    fn three_valued_logic_matches_sqlite(spec in specs(), rows in rows()) {
        let cond = mine(&spec);
        let sql = cond.to_sql(Dialect::Sqlite).unwrap();
        let c = sqlite_with(&rows);
        let query = format!("SELECT ({}) FROM t ORDER BY id", sql.text);
        let params: Vec<rusqlite::types::Value> = sql.params.iter().map(bind).collect();
        let mut stmt = c.prepare(&query).unwrap_or_else(|e| panic!("SQLite cannot run your SQL ({e}): {}", sql.text));
        let sqlite: Vec<Option<bool>> = stmt
            .query_map(rusqlite::params_from_iter(params), |r| r.get::<_, Option<bool>>(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        for (i, expected) in sqlite.iter().enumerate() {
            let yours = cond.eval(&reader(&rows, i));
            prop_assert_eq!(
                truth(yours), truth(*expected),
                "row {:?}: your evaluator says {} where SQLite says {}, for {} with the parameters {:?}",
                rows[i], truth(yours), truth(*expected), sql.text, sql.params
            );
        }
    }

    /// No value is ever written into the SQL text: hostile strings give the same text as harmless ones,
    /// travel as parameters, and match only themselves.
    fn values_never_reach_the_sql_text(
        hostile in prop_oneof![
            Just("'; DROP TABLE t; --".to_owned()),
            Just("\" OR 1=1 --".to_owned()),
            Just("' OR ''='".to_owned()),
            Just("?".to_owned()),
            Just("$1".to_owned()),
            Just("50%_off\\".to_owned()),
            // Any text but NUL, which PostgreSQL refuses in text and at which SQLite's LIKE stops reading.
            "[^\\x00]{0,10}",
        ],
        rows in rows(),
    ) {
        let conds = |s: &str| vec![
            t::s.eq(s.to_owned()),
            t::s.contains(s),
            t::s.in_list([Some(s.to_owned()), None]),
        ];
        for (with_hostile, harmless) in conds(&hostile).into_iter().zip(conds("x")) {
            for d in Dialect::ALL {
                let a = with_hostile.to_sql(d).unwrap();
                let b = harmless.to_sql(d).unwrap();
                prop_assert_eq!(&a.text, &b.text, "{}: a value changed the SQL text", d);
                prop_assert!(
                    a.params.contains(&Value::Text(hostile.clone()))
                        || a.params.contains(&Value::Text(format!("%{}%", expressions::escape_like(&hostile)))),
                    "{}: the value is not among the parameters {:?}", d, a.params
                );
            }
        }
        // `contains` matches the text literally, wildcards and all.
        let mut rows = rows;
        rows[0].s = Some(format!("<{hostile}>"));
        let c = sqlite_with(&rows);
        let sql = t::s.contains(&hostile).to_sql(Dialect::Sqlite).unwrap();
        let found: Vec<i64> = c
            .prepare(&format!("SELECT id FROM t WHERE {} ORDER BY id", sql.text))
            .unwrap()
            .query_map(rusqlite::params_from_iter(sql.params.iter().map(bind)), |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let expected: Vec<i64> = rows
            .iter()
            .enumerate()
            .filter(|(_, r)| r.s.as_deref().is_some_and(|s| s.contains(hostile.as_str())))
            .map(|(i, _)| i as i64 + 1)
            .collect();
        prop_assert_eq!(found, expected, "the rows whose s contains {:?}", hostile);
    }
}

/// Placeholders: `?` on SQLite and MySQL, `$1`, `$2`, … on PostgreSQL, numbered in order; the values kept in
/// the same order.
fn placeholders_per_dialect() {
    for (d, expected) in [
        (Dialect::Sqlite, "? ?"),
        (Dialect::MySql, "? ?"),
        (Dialect::Postgres, "$1 $2"),
    ] {
        let mut sql = Sql::new(d);
        sql.param(Value::I64(7));
        sql.push(" ");
        sql.param(Value::Text("x".into()));
        assert_eq!(sql.text, expected, "{d}");
        assert_eq!(sql.params, [Value::I64(7), Value::Text("x".into())], "{d}");
    }
}

/// `IN ()` is refused with a typed error, on every engine, instead of a panic or broken SQL.
fn an_empty_in_list_is_an_error() {
    let cond = t::a.in_list([]);
    for d in Dialect::ALL {
        assert_eq!(cond.to_sql(d), Err(RenderError::EmptyInList), "{d}");
    }
    let nested = t::n.eq(1).and(t::b.in_list(vec![]).not());
    assert_eq!(
        nested.to_sql(Dialect::Sqlite),
        Err(RenderError::EmptyInList)
    );
}

/// A few conditions read by eye: the shape of the SQL the chapter describes.
fn examples_from_the_chapter() {
    // Compared as SQL (a caret under the first difference), not as Rust string literals, whose escaping
    // would show each backslash twice.
    let same = |mine: &str, expected: &str, why: &str| {
        if let Some(diff) = sql_mismatch(mine, expected) {
            panic!("{why}: {diff}");
        }
    };
    let c = t::n
        .ge(18)
        .and(t::s.is_not_null())
        .or(t::s.eq("ada".to_owned()));
    let sql = c.to_sql(Dialect::Postgres).unwrap();
    same(
        &sql.text,
        r#"(("t"."n" >= $1) AND ("t"."s" IS NOT NULL)) OR ("t"."s" = $2)"#,
        "an AND inside an OR is parenthesised; PostgreSQL numbers its placeholders",
    );
    assert_eq!(sql.params, [Value::I32(18), Value::Text("ada".into())]);
    let flat = t::a.eq(1).and(t::b.eq(2)).and(t::n.eq(3).not());
    same(
        &flat.to_sql(Dialect::MySql).unwrap().text,
        "(`t`.`a` = ?) AND (`t`.`b` = ?) AND (NOT (`t`.`n` = ?))",
        "a chain of ANDs stays flat; NOT's operand is parenthesised; MySQL quotes with backticks",
    );
    let like = t::s.contains("50%");
    let sql = like.to_sql(Dialect::MySql).unwrap();
    same(
        &sql.text,
        r"`t`.`s` LIKE ? ESCAPE '\\'",
        "MySQL writes the escape character twice inside its string",
    );
    assert_eq!(
        sql.params,
        [Value::Text(r"%50\%%".into())],
        "contains escapes its %"
    );
    let null = t::a.eq(None).to_sql(Dialect::Sqlite).unwrap();
    same(
        &null.text,
        r#""t"."a" = ?"#,
        "eq(None) is `= ?` with NULL bound (never true: SQL's NULL), not IS NULL",
    );
    assert_eq!(<t::table as Table>::NAME, "t");
}

/// The types refuse a value of the wrong type (in every comparison), LIKE on a number, and one condition
/// over two tables.
fn types_refuse_mismatches() {
    let prelude = r#"
use expressions::ColumnExt;
use tables::{Dialect, table};
table! { users (id) { id: i64, name: String, age: i32 } }
table! { orders (id) { id: i64, total: f64 } }
"#;
    let case = |body: &str| format!("{prelude}\nfn main() {{\n    let _ = {body};\n}}\n");
    ui::check(
        &workshop_harness::this_stage!("workshop-02-expressions", "workshop-01-tables"),
        &[
            ui::Case::compiles(
                "right_types_compile",
                case(
                    "users::age.ge(18).and(users::name.like(\"a%\")).or(users::id.in_list([1, 2])).to_sql(Dialect::Sqlite).unwrap()",
                ),
            ),
            ui::Case::type_error("int_column_with_a_string", case("users::age.eq(\"36\")")),
            ui::Case::type_error("like_on_a_number", case("users::age.like(\"1%\")")),
            // Every comparison, not only `eq`: each takes a value of the column's type.
            ui::Case::type_error("ne_with_a_float", case("users::age.ne(2.5)")),
            ui::Case::type_error("lt_with_a_string", case("users::age.lt(\"x\")")),
            ui::Case::type_error("le_with_a_float", case("users::age.le(1.5)")),
            ui::Case::type_error("gt_with_a_float", case("users::age.gt(1.5)")),
            ui::Case::type_error("ge_with_a_string", case("users::age.ge(\"18\")")),
            ui::Case::type_error(
                "two_tables_in_one_condition",
                case("users::age.ge(18).and(orders::total.gt(10.0))"),
            ),
        ],
    );
}

workshop_harness::checks!(
    placeholders_per_dialect,
    types_refuse_mismatches,
    examples_from_the_chapter,
    conditions_render_like_tandem,
    an_empty_in_list_is_an_error,
    three_valued_logic_matches_sqlite,
    values_never_reach_the_sql_text,
);
