//! The SQL rendered for SQLite runs on SQLite and does what the statement says: DDL, inserts with returned
//! keys, ignore and upsert, updates, deletes, joins, subqueries, hostile identifiers and split batches.
//! (PostgreSQL and MariaDB run the same statements in the executors' tests.)

use tandem_test_support::schema as support;

use rusqlite::Connection;
use support::{orders, users};
use tandem_sql::ast::{ColumnDef, Insert, Select, TableSchema};
use tandem_sql::prelude::*;
use tandem_sql::{Ident, SqlType, Value};

fn bind(v: &Value) -> rusqlite::types::Value {
    use rusqlite::types::Value as S;
    match v {
        Value::Null(_) => S::Null,
        Value::Bool(b) => S::Integer((*b).into()),
        Value::I32(i) => S::Integer((*i).into()),
        Value::I64(i) => S::Integer(*i),
        Value::F64(f) => S::Real(*f),
        Value::Text(t) => S::Text(t.clone()),
        Value::Bytes(b) => S::Blob(b.clone()),
        other => panic!("not used in this test: {other:?}"),
    }
}

/// Runs a statement, returning its rows' first column as i64 (empty for statements without rows).
fn run(conn: &Connection, stmt: &impl Render) -> rusqlite::Result<Vec<i64>> {
    let r = stmt.render(Dialect::Sqlite).expect("renders");
    let mut s = conn.prepare(&r.sql)?;
    let params = rusqlite::params_from_iter(r.params.iter().map(bind));
    if s.column_count() == 0 {
        s.execute(params)?;
        return Ok(Vec::new());
    }
    s.query_map(params, |row| row.get::<_, i64>(0))?.collect()
}

fn scalar(conn: &Connection, sql: &str) -> i64 {
    conn.query_row(sql, [], |r| r.get(0)).unwrap()
}

fn schema(conn: &Connection) {
    for t in [users::table.create_table(), orders::table.create_table()] {
        for r in t.render_all(Dialect::Sqlite).unwrap() {
            conn.execute(&r.sql, []).unwrap();
        }
    }
}

/// Keys come back through RETURNING; ignore skips the duplicate; upsert updates it; CHECK enforces varchar.
#[test]
fn inserts_ignore_upsert() {
    let conn = Connection::open_in_memory().unwrap();
    schema(&conn);
    let ids = run(
        &conn,
        &users::table
            .insert()
            .columns((users::name, users::age, users::email))
            .values(("ada", 36, Some("a@x")))
            .values(("bob", 17, None::<&str>))
            .returning(users::id),
    )
    .unwrap();
    assert_eq!(ids, [1, 2]);
    let dup = || {
        users::table
            .insert()
            .columns((users::name, users::age))
            .values(("ada", 99))
    };
    assert!(
        run(&conn, &dup()).is_err(),
        "a duplicate fails without conflict handling"
    );
    run(&conn, &dup().on_conflict_do_nothing()).unwrap();
    assert_eq!(
        scalar(&conn, "SELECT age FROM users WHERE name = 'ada'"),
        36
    );
    run(&conn, &dup().on_conflict_update(users::name, users::age)).unwrap();
    assert_eq!(
        scalar(&conn, "SELECT age FROM users WHERE name = 'ada'"),
        99
    );
    assert_eq!(scalar(&conn, "SELECT COUNT(*) FROM users"), 2);
    let long = users::table
        .insert()
        .columns((users::name, users::age))
        .values(("x".repeat(101), 1));
    assert!(
        run(&conn, &long).is_err(),
        "varchar(100) holds no 101 characters"
    );
}

/// UPDATE with an expression, DELETE with a filter, and queries with joins, grouping and subqueries.
#[test]
fn updates_deletes_and_queries() {
    let conn = Connection::open_in_memory().unwrap();
    schema(&conn);
    let people = [("ada", 36), ("bob", 17), ("cy", 50)];
    run(
        &conn,
        &users::table
            .insert()
            .columns((users::name, users::age))
            .rows(people),
    )
    .unwrap();
    let orders_rows = [(1i64, "o1", 10.0), (1, "o2", 200.0), (3, "o3", 5.0)];
    run(
        &conn,
        &orders::table
            .insert()
            .columns((orders::user_id, orders::code, orders::total))
            .rows(orders_rows),
    )
    .unwrap();

    run(
        &conn,
        &users::table
            .update()
            .set(users::age, users::age + 1)
            .filter(users::name.eq("bob")),
    )
    .unwrap();
    assert_eq!(
        scalar(&conn, "SELECT age FROM users WHERE name = 'bob'"),
        18
    );

    let big = run(
        &conn,
        &users::table.select(users::id).filter(
            users::id.in_subquery(
                orders::table
                    .select(orders::user_id)
                    .filter(orders::total.gt(100.0)),
            ),
        ),
    )
    .unwrap();
    assert_eq!(big, [1]);
    let without_orders = run(
        &conn,
        &users::table.select(users::id).filter(not_exists(
            orders::table
                .select_all()
                .correlated_with(users::table)
                .filter(orders::user_id.eq(users::id)),
        )),
    )
    .unwrap();
    assert_eq!(without_orders, [2]);
    let counts = run(
        &conn,
        &users::table
            .left_join(orders::table, orders::user_id.eq(users::id))
            .select(count(orders::id))
            .group_by(users::id)
            .order_by(users::id.asc()),
    )
    .unwrap();
    assert_eq!(counts, [2, 0, 1]);
    let paged = run(
        &conn,
        &users::table
            .select(users::id)
            .order_by(users::id.desc())
            .offset(1),
    )
    .unwrap();
    assert_eq!(paged, [2, 1]);

    run(
        &conn,
        &orders::table.delete().filter(orders::total.lt(50.0)),
    )
    .unwrap();
    assert_eq!(scalar(&conn, "SELECT COUNT(*) FROM orders"), 1);
}

/// Names with quotes, backticks, spaces and keywords are one identifier each: created, written and read back.
#[test]
fn hostile_identifiers() {
    let conn = Connection::open_in_memory().unwrap();
    let ident = |s: &str| Ident::new(s.to_owned()).unwrap();
    let mut t = TableSchema::new(ident("we\"ird table"));
    t.columns
        .push(ColumnDef::new(ident("select"), SqlType::BigInt));
    t.columns
        .push(ColumnDef::new(ident("a`b\"c"), SqlType::Text));
    for r in t.create_table(true).render_all(Dialect::Sqlite).unwrap() {
        conn.execute(&r.sql, []).unwrap();
    }
    let insert = Insert::values(
        t.name.clone(),
        vec![ident("select"), ident("a`b\"c")],
        vec![
            vec![Value::I64(1), Value::Text("x".into())],
            vec![Value::I64(2), Value::Text("y".into())],
        ],
    );
    run(&conn, &insert).unwrap();
    let mut q = Select::from(t.name.clone());
    q.items = vec![tandem_sql::ast::SelectItem::Expr {
        expr: tandem_sql::ast::Expr::column(ident("select")),
        alias: None,
    }];
    q.and_where(tandem_sql::ast::Expr::column(ident("a`b\"c")).binary(
        tandem_sql::ast::BinaryOp::Eq,
        tandem_sql::ast::Expr::value("y"),
    ));
    assert_eq!(run(&conn, &q).unwrap(), [2]);
    run(&conn, &t.drop_table(true)).unwrap();
}

/// A batch larger than one statement may bind is split, and every row lands exactly once, in order.
#[test]
fn split_batches_store_every_row() {
    let conn = Connection::open_in_memory().unwrap();
    schema(&conn);
    let rows: Vec<(String, i32)> = (0..40_000).map(|i| (format!("item-{i}"), i)).collect();
    let insert = users::table
        .insert()
        .columns((users::name, users::age))
        .rows(rows)
        .into_ast()
        .unwrap();
    let chunks = insert.render_chunks(Dialect::Sqlite, None).unwrap();
    assert_eq!(chunks.len(), 3, "16,383 rows of 2 parameters per statement");
    for c in &chunks {
        conn.execute(
            &c.sql,
            rusqlite::params_from_iter(c.params.iter().map(bind)),
        )
        .unwrap();
    }
    assert_eq!(scalar(&conn, "SELECT COUNT(*) FROM users"), 40_000);
    assert_eq!(
        scalar(
            &conn,
            "SELECT COUNT(*) FROM users WHERE name = 'item-' || age AND id = age + 1"
        ),
        40_000
    );
}
