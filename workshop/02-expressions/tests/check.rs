//! Stage 2's specification. The three-valued rules are checked against SQLite evaluating the same
//! expression; the query is rendered by tandem and run on SQLite over sample rows.

#[cfg(not(feature = "solution"))]
use workshop_02_expressions as stage;
#[cfg(feature = "solution")]
#[allow(dead_code)] // items of the solution no test calls (given types, the entity's own impls)
#[path = "../solution/lib.rs"]
mod stage;

use proptest::prelude::*;
use rusqlite::Connection;
use stage::{adults_query, and3, eq3, in3, not3, or3};
use tandem_sql::{Dialect, Render};

fn sqlite() -> Connection {
    Connection::open_in_memory().unwrap()
}

fn ask(conn: &Connection, sql: &str, params: Vec<Option<i64>>) -> Option<bool> {
    conn.query_row(sql, rusqlite::params_from_iter(params), |r| {
        r.get::<_, Option<bool>>(0)
    })
    .unwrap()
}

fn tv() -> impl Strategy<Value = Option<bool>> {
    prop_oneof![Just(None), Just(Some(true)), Just(Some(false))]
}

fn as_int(b: Option<bool>) -> Option<i64> {
    b.map(i64::from)
}

proptest! {
    /// AND, OR and NOT agree with SQLite on every combination.
    fn logic_agrees_with_sqlite(a in tv(), b in tv()) {
        let c = sqlite();
        prop_assert_eq!(and3(a, b), ask(&c, "SELECT ?1 AND ?2", vec![as_int(a), as_int(b)]), "{:?} AND {:?}", a, b);
        prop_assert_eq!(or3(a, b), ask(&c, "SELECT ?1 OR ?2", vec![as_int(a), as_int(b)]), "{:?} OR {:?}", a, b);
        prop_assert_eq!(not3(a), ask(&c, "SELECT NOT ?1", vec![as_int(a)]), "NOT {:?}", a);
    }

    /// `=` agrees with SQLite, NULLs included.
    fn equality_agrees_with_sqlite(a in proptest::option::of(-3i64..3), b in proptest::option::of(-3i64..3)) {
        prop_assert_eq!(eq3(a, b), ask(&sqlite(), "SELECT ?1 = ?2", vec![a, b]), "{:?} = {:?}", a, b);
    }

    /// `IN` agrees with SQLite, NULLs included.
    fn in_agrees_with_sqlite(
        x in proptest::option::of(0i64..4),
        list in proptest::collection::vec(proptest::option::of(0i64..4), 1..6),
    ) {
        let marks: Vec<String> = (2..=list.len() + 1).map(|i| format!("?{i}")).collect();
        let sql = format!("SELECT ?1 IN ({})", marks.join(", "));
        let mut params = vec![x];
        params.extend(list.iter().copied());
        prop_assert_eq!(in3(x, &list), ask(&sqlite(), &sql, params), "{:?} IN {:?}", x, list);
    }
}

/// The query returns exactly the rows the rule describes, with its values bound as parameters.
fn the_query_returns_the_specified_rows() {
    let select = adults_query();
    let r = select.render(Dialect::Sqlite).unwrap();
    assert_eq!(
        r.params.len(),
        2,
        "18 and \"ada\" are bound parameters: {}",
        r.sql
    );
    let c = sqlite();
    c.execute_batch(
        "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT NOT NULL, age INTEGER NOT NULL, email TEXT);
         INSERT INTO users (name, age, email) VALUES
           ('ada', 15, NULL), ('bob', 17, 'bob@x'), ('cy', 41, 'cy@x'), ('dee', 25, NULL),
           ('eve', 18, 'eve@x'), ('fay', 70, 'fay@x');",
    )
    .unwrap();
    let mut stmt = c.prepare(&r.sql).unwrap();
    let params: Vec<rusqlite::types::Value> = r
        .params
        .iter()
        .map(|v| match v {
            tandem_sql::Value::I32(i) => rusqlite::types::Value::Integer(i64::from(*i)),
            tandem_sql::Value::Text(s) => rusqlite::types::Value::Text(s.clone()),
            other => panic!("unexpected parameter {other:?}"),
        })
        .collect();
    let names: Vec<String> = stmt
        .query_map(rusqlite::params_from_iter(params), |row| row.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(names, ["ada", "cy", "eve", "fay"]);
}

workshop_harness::checks!(
    logic_agrees_with_sqlite,
    equality_agrees_with_sqlite,
    in_agrees_with_sqlite,
    the_query_returns_the_specified_rows,
);
