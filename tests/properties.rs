//! Property tests over generated ASTs: rendering never panics, values never reach the SQL text, placeholders
//! and parameters always agree, and batch splitting respects every limit while keeping every row in order.

use proptest::prelude::*;
use tandem_sql::ast::{
    BinaryOp, Conflict, Delete, Expr, Function, Insert, Order, OrderBy, Select, Statement, Update,
};
use tandem_sql::{Dialect, Ident, Render, SqlType, Value};

/// Marks generated string values so the test can look for them in the SQL text.
const MARK: &str = "\u{27ea}val";

fn ident() -> impl Strategy<Value = Ident> {
    // Quotes, backticks, spaces and non-ASCII on purpose; no `?` or `$` so placeholders can be counted.
    "[a-zA-Z_\"` é]{0,12}[a-zA-Z_\"`é]"
        .prop_map(|s| Ident::new(s).expect("generated names are valid"))
}

fn value() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<i64>().prop_map(Value::I64),
        any::<i32>().prop_map(Value::I32),
        any::<bool>().prop_map(Value::Bool),
        any::<f64>().prop_map(Value::F64),
        // Strings that look like SQL, with quotes and placeholders inside.
        "[a-z'\"`?$;\\- ]{0,16}".prop_map(|s| Value::Text(format!("{MARK}{s}"))),
        proptest::collection::vec(any::<u8>(), 0..8).prop_map(Value::Bytes),
        Just(Value::Null(SqlType::Int)),
    ]
}

fn column() -> impl Strategy<Value = Expr> {
    (proptest::option::of(ident()), ident()).prop_map(|(t, c)| match t {
        Some(t) => Expr::qualified(t, c),
        None => Expr::column(c),
    })
}

fn op() -> impl Strategy<Value = BinaryOp> {
    prop_oneof![
        Just(BinaryOp::Eq),
        Just(BinaryOp::NotEq),
        Just(BinaryOp::Lt),
        Just(BinaryOp::GtEq),
        Just(BinaryOp::And),
        Just(BinaryOp::Or),
        Just(BinaryOp::Add),
        Just(BinaryOp::Mul),
        Just(BinaryOp::Mod),
    ]
}

fn expr() -> impl Strategy<Value = Expr> {
    let leaf = prop_oneof![
        column(),
        value().prop_map(Expr::Value),
        Just(Expr::CountStar)
    ];
    leaf.prop_recursive(4, 32, 4, |inner| {
        prop_oneof![
            (inner.clone(), op(), inner.clone()).prop_map(|(l, o, r)| l.binary(o, r)),
            inner.clone().prop_map(Expr::not),
            (inner.clone(), any::<bool>()).prop_map(|(e, negated)| Expr::IsNull {
                expr: Box::new(e),
                negated
            }),
            (
                inner.clone(),
                proptest::collection::vec(inner.clone(), 0..4),
                any::<bool>()
            )
                .prop_map(|(e, list, negated)| Expr::InList {
                    expr: Box::new(e),
                    list,
                    negated
                }),
            (inner.clone(), inner.clone(), inner.clone()).prop_map(|(e, l, h)| Expr::Between {
                expr: Box::new(e),
                low: Box::new(l),
                high: Box::new(h),
                negated: false,
            }),
            (inner.clone(), inner.clone()).prop_map(|(e, p)| Expr::Like {
                expr: Box::new(e),
                pattern: Box::new(p),
                negated: true,
            }),
            (
                proptest::collection::vec(inner.clone(), 0..3),
                any::<bool>()
            )
                .prop_map(|(args, distinct)| {
                    Expr::Call {
                        func: Function::Coalesce,
                        args,
                        distinct,
                    }
                }),
            inner.clone().prop_map(|e| Expr::Call {
                func: Function::Sum,
                args: vec![e],
                distinct: true
            }),
            (ident(), inner).prop_map(|(t, e)| {
                let mut sub = Select::from(t);
                sub.and_where(e);
                Expr::Exists {
                    query: Box::new(sub),
                    negated: false,
                }
            }),
        ]
    })
}

fn select() -> impl Strategy<Value = Select> {
    (
        ident(),
        proptest::option::of(expr()),
        proptest::collection::vec(expr(), 0..2),
        proptest::option::of(expr()),
        proptest::collection::vec((expr(), any::<bool>()), 0..2),
        proptest::option::of(any::<u64>()),
        proptest::option::of(any::<u64>()),
    )
        .prop_map(|(t, filter, group_by, having, order, limit, offset)| {
            let mut s = Select::from(t);
            s.filter = filter;
            s.group_by = group_by;
            s.having = having;
            s.order_by = order
                .into_iter()
                .map(|(expr, asc)| OrderBy {
                    expr,
                    order: if asc { Order::Asc } else { Order::Desc },
                })
                .collect();
            s.limit = limit;
            s.offset = offset;
            s
        })
}

fn statement() -> impl Strategy<Value = Statement> {
    prop_oneof![
        select().prop_map(Statement::Select),
        (
            ident(),
            proptest::collection::vec(ident(), 0..4),
            proptest::collection::vec(proptest::collection::vec(value(), 0..4), 0..4),
            any::<u8>()
        )
            .prop_map(|(t, cols, rows, c)| {
                let mut i = Insert::values(t, cols.clone(), rows);
                i.conflict = match c % 3 {
                    0 => Conflict::Fail,
                    1 => Conflict::Ignore { target: cols },
                    _ => Conflict::Update {
                        target: cols.clone(),
                        set: cols
                            .into_iter()
                            .map(|c| (c.clone(), Expr::Excluded(c)))
                            .collect(),
                    },
                };
                Statement::Insert(i)
            }),
        (
            ident(),
            proptest::collection::vec((ident(), expr()), 0..3),
            proptest::option::of(expr())
        )
            .prop_map(|(table, set, filter)| Statement::Update(Update {
                table,
                set,
                filter
            })),
        (ident(), proptest::option::of(expr()))
            .prop_map(|(table, filter)| Statement::Delete(Delete { table, filter })),
    ]
}

fn placeholder_count(d: Dialect, sql: &str) -> usize {
    let marker = if d == Dialect::Postgres { '$' } else { '?' };
    sql.chars().filter(|&c| c == marker).count()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(600))]

    /// Any AST renders to `Ok` or a typed `Err` on every dialect (a panic fails the test), and when it
    /// renders, no string value appears in the text and placeholders match parameters one to one.
    #[test]
    fn rendering_is_total_and_binds_every_value(stmt in statement()) {
        for d in Dialect::ALL {
            if let Ok(r) = stmt.render(d) {
                prop_assert!(!r.sql.contains(MARK), "{d}: value in SQL text: {}", r.sql);
                prop_assert_eq!(placeholder_count(d, &r.sql), r.params.len(), "{}: {}", d, r.sql);
                prop_assert!(r.params.len() <= d.param_limit());
            }
        }
    }

    /// Splitting a batch keeps every row exactly once and in order, and no chunk exceeds the engine's
    /// parameter limit or the requested row count.
    #[test]
    fn batch_splitting_respects_limits(
        width in 1usize..48,
        rows in 1usize..4_000,
        max_rows in proptest::option::of(1usize..3_000),
        dialect in prop_oneof![Just(Dialect::Sqlite), Just(Dialect::Postgres), Just(Dialect::MySql)],
    ) {
        let columns: Vec<Ident> = (0..width).map(|i| Ident::new(format!("c{i}")).unwrap()).collect();
        let data: Vec<Vec<Value>> =
            (0..rows).map(|r| (0..width).map(|c| Value::I64((r * width + c) as i64)).collect()).collect();
        let insert = Insert::values(Ident::new("t").unwrap(), columns, data.clone());
        let chunks = insert.into_chunks(dialect, max_rows).unwrap();
        let mut seen = Vec::with_capacity(rows);
        for chunk in chunks {
            let tandem_sql::ast::InsertSource::Values(chunk_rows) = &chunk.source else {
                unreachable!("chunks of a VALUES insert are VALUES inserts")
            };
            prop_assert!(chunk_rows.len() * width <= dialect.param_limit());
            if let Some(m) = max_rows {
                prop_assert!(chunk_rows.len() <= m);
            }
            let rendered = chunk.clone().into_rendered(dialect).unwrap();
            prop_assert_eq!(rendered.params.len(), chunk_rows.len() * width);
            seen.extend(chunk_rows.iter().cloned());
        }
        prop_assert_eq!(seen, data);
    }
}

/// The largest batch that fits is used: 32,766 / 3 rows per SQLite statement, 65,535 / 2 on PostgreSQL.
#[test]
fn chunks_are_as_large_as_allowed() {
    assert_eq!(
        tandem_sql::batch::rows_per_statement(Dialect::Sqlite, 3, None).unwrap(),
        10_922
    );
    assert_eq!(
        tandem_sql::batch::rows_per_statement(Dialect::Postgres, 2, None).unwrap(),
        32_767
    );
    assert_eq!(
        tandem_sql::batch::rows_per_statement(Dialect::MySql, 3, Some(1_000)).unwrap(),
        1_000
    );
    let rows = vec![vec![Value::I32(1), Value::I32(2)]; 70_000];
    let insert = Insert::values(
        Ident::new("t").unwrap(),
        vec![Ident::new("a").unwrap(), Ident::new("b").unwrap()],
        rows,
    );
    let sizes: Vec<usize> = insert
        .render_chunks(Dialect::Postgres, None)
        .unwrap()
        .iter()
        .map(|r| r.params.len() / 2)
        .collect();
    assert_eq!(sizes, [32_767, 32_767, 4_466]);
}
