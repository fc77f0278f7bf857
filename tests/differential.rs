//! Differential test: random filters over random rows, evaluated by an in-memory reference evaluator with
//! SQL's three-valued logic, agree with SQLite running the SQL tandem renders — NULL semantics included.

use proptest::prelude::*;
use rusqlite::Connection;
use tandem_sql::ast::{BinaryOp, Expr, Function, Select, SelectItem};
use tandem_sql::{Dialect, Ident, Render, SqlType, Value};

/// One row of table `t(id, a, b, s)`.
#[derive(Clone, Debug)]
struct Row {
    a: Option<i64>,
    b: Option<i64>,
    s: Option<String>,
}

/// Integer-valued expressions.
#[derive(Clone, Debug)]
enum IntE {
    A,
    B,
    Lit(Option<i64>),
    Arith(BinaryOp, Box<IntE>, Box<IntE>),
    Coalesce(Box<IntE>, i64),
}

/// Text-valued expressions.
#[derive(Clone, Debug)]
enum TextE {
    S,
    Lit(Option<String>),
    Upper(Box<TextE>),
}

/// Boolean filters.
#[derive(Clone, Debug)]
enum BoolE {
    CmpInt(BinaryOp, IntE, IntE),
    CmpText(BinaryOp, TextE, TextE),
    IsNull(IntE, bool),
    TextIsNull(TextE, bool),
    In(IntE, Vec<Option<i64>>, bool),
    Between(IntE, IntE, IntE, bool),
    Like(TextE, String, bool),
    Not(Box<BoolE>),
    And(Box<BoolE>, Box<BoolE>),
    Or(Box<BoolE>, Box<BoolE>),
}

fn col(name: &str) -> Expr {
    Expr::column(Ident::new(name.to_owned()).unwrap())
}

impl IntE {
    fn eval(&self, r: &Row) -> Option<i64> {
        match self {
            IntE::A => r.a,
            IntE::B => r.b,
            IntE::Lit(v) => *v,
            IntE::Arith(op, l, rr) => {
                let (l, rr) = (l.eval(r)?, rr.eval(r)?);
                Some(match op {
                    BinaryOp::Add => l + rr,
                    BinaryOp::Sub => l - rr,
                    BinaryOp::Mul => l * rr,
                    _ => unreachable!("only + - * are generated"),
                })
            }
            IntE::Coalesce(e, d) => Some(e.eval(r).unwrap_or(*d)),
        }
    }
    fn ast(&self) -> Expr {
        match self {
            IntE::A => col("a"),
            IntE::B => col("b"),
            IntE::Lit(v) => Expr::Value(v.map_or(Value::Null(SqlType::BigInt), Value::I64)),
            IntE::Arith(op, l, r) => l.ast().binary(*op, r.ast()),
            IntE::Coalesce(e, d) => Expr::call(Function::Coalesce, vec![e.ast(), Expr::value(*d)]),
        }
    }
}

impl TextE {
    fn eval(&self, r: &Row) -> Option<String> {
        match self {
            TextE::S => r.s.clone(),
            TextE::Lit(v) => v.clone(),
            // SQLite's UPPER folds ASCII only.
            TextE::Upper(e) => e.eval(r).map(|s| s.to_ascii_uppercase()),
        }
    }
    fn ast(&self) -> Expr {
        match self {
            TextE::S => col("s"),
            TextE::Lit(v) => Expr::Value(v.clone().map_or(Value::Null(SqlType::Text), Value::Text)),
            TextE::Upper(e) => Expr::call(Function::Upper, vec![e.ast()]),
        }
    }
}

fn cmp<T: Ord>(op: BinaryOp, l: Option<T>, r: Option<T>) -> Option<bool> {
    let (l, r) = (l?, r?);
    Some(match op {
        BinaryOp::Eq => l == r,
        BinaryOp::NotEq => l != r,
        BinaryOp::Lt => l < r,
        BinaryOp::LtEq => l <= r,
        BinaryOp::Gt => l > r,
        BinaryOp::GtEq => l >= r,
        _ => unreachable!("only comparisons are generated"),
    })
}

fn not(v: Option<bool>) -> Option<bool> {
    v.map(|b| !b)
}

fn and(l: Option<bool>, r: Option<bool>) -> Option<bool> {
    match (l, r) {
        (Some(false), _) | (_, Some(false)) => Some(false),
        (Some(true), Some(true)) => Some(true),
        _ => None,
    }
}

fn or(l: Option<bool>, r: Option<bool>) -> Option<bool> {
    match (l, r) {
        (Some(true), _) | (_, Some(true)) => Some(true),
        (Some(false), Some(false)) => Some(false),
        _ => None,
    }
}

/// tandem's LIKE on every engine: `%` any run, `_` one character, `\` makes the next character literal,
/// case-sensitive.
fn like(text: &[char], pat: &[char]) -> bool {
    match pat.split_first() {
        None => text.is_empty(),
        Some(('%', rest)) => (0..=text.len()).any(|i| like(&text[i..], rest)),
        Some(('\\', [escaped, rest @ ..])) => {
            text.first() == Some(escaped) && like(&text[1..], rest)
        }
        Some((p, rest)) => match text.split_first() {
            Some((t, trest)) => (*p == '_' || t == p) && like(trest, rest),
            None => false,
        },
    }
}

impl BoolE {
    fn eval(&self, r: &Row) -> Option<bool> {
        match self {
            BoolE::CmpInt(op, a, b) => cmp(*op, a.eval(r), b.eval(r)),
            BoolE::CmpText(op, a, b) => cmp(*op, a.eval(r), b.eval(r)),
            BoolE::IsNull(e, neg) => Some(e.eval(r).is_none() != *neg),
            BoolE::TextIsNull(e, neg) => Some(e.eval(r).is_none() != *neg),
            BoolE::In(e, list, neg) => {
                let v = e.eval(r)?;
                let found = if list.contains(&Some(v)) {
                    Some(true)
                } else if list.contains(&None) {
                    None
                } else {
                    Some(false)
                };
                if *neg { not(found) } else { found }
            }
            BoolE::Between(e, lo, hi, neg) => {
                let (v, lo, hi) = (e.eval(r), lo.eval(r), hi.eval(r));
                let inside = and(cmp(BinaryOp::GtEq, v, lo), cmp(BinaryOp::LtEq, v, hi));
                if *neg { not(inside) } else { inside }
            }
            BoolE::Like(e, p, neg) => {
                let t: Vec<char> = e.eval(r)?.chars().collect();
                let p: Vec<char> = p.chars().collect();
                Some(like(&t, &p) != *neg)
            }
            BoolE::Not(e) => not(e.eval(r)),
            BoolE::And(a, b) => and(a.eval(r), b.eval(r)),
            BoolE::Or(a, b) => or(a.eval(r), b.eval(r)),
        }
    }

    fn ast(&self) -> Expr {
        match self {
            BoolE::CmpInt(op, a, b) => a.ast().binary(*op, b.ast()),
            BoolE::CmpText(op, a, b) => a.ast().binary(*op, b.ast()),
            BoolE::IsNull(e, negated) => Expr::IsNull {
                expr: Box::new(e.ast()),
                negated: *negated,
            },
            BoolE::TextIsNull(e, negated) => Expr::IsNull {
                expr: Box::new(e.ast()),
                negated: *negated,
            },
            BoolE::In(e, list, negated) => Expr::InList {
                expr: Box::new(e.ast()),
                list: list.iter().map(|v| IntE::Lit(*v).ast()).collect(),
                negated: *negated,
            },
            BoolE::Between(e, lo, hi, negated) => Expr::Between {
                expr: Box::new(e.ast()),
                low: Box::new(lo.ast()),
                high: Box::new(hi.ast()),
                negated: *negated,
            },
            BoolE::Like(e, p, negated) => Expr::Like {
                expr: Box::new(e.ast()),
                pattern: Box::new(Expr::value(p.as_str())),
                negated: *negated,
            },
            BoolE::Not(e) => e.ast().not(),
            BoolE::And(a, b) => a.ast().and(b.ast()),
            BoolE::Or(a, b) => a.ast().or(b.ast()),
        }
    }
}

fn small_int() -> impl Strategy<Value = Option<i64>> {
    proptest::option::weighted(0.8, -3i64..=3)
}

fn small_text() -> impl Strategy<Value = Option<String>> {
    proptest::option::weighted(0.8, "[abAB%_\\\\]{0,3}")
}

fn int_e() -> impl Strategy<Value = IntE> {
    prop_oneof![
        Just(IntE::A),
        Just(IntE::B),
        small_int().prop_map(IntE::Lit)
    ]
    .prop_recursive(2, 8, 2, |inner| {
        prop_oneof![
            (
                prop_oneof![
                    Just(BinaryOp::Add),
                    Just(BinaryOp::Sub),
                    Just(BinaryOp::Mul)
                ],
                inner.clone(),
                inner.clone()
            )
                .prop_map(|(op, l, r)| IntE::Arith(op, Box::new(l), Box::new(r))),
            (inner, -3i64..=3).prop_map(|(e, d)| IntE::Coalesce(Box::new(e), d)),
        ]
    })
}

fn text_e() -> impl Strategy<Value = TextE> {
    prop_oneof![
        Just(TextE::S),
        small_text().prop_map(TextE::Lit),
        Just(TextE::Upper(Box::new(TextE::S))),
    ]
}

fn cmp_op() -> impl Strategy<Value = BinaryOp> {
    prop_oneof![
        Just(BinaryOp::Eq),
        Just(BinaryOp::NotEq),
        Just(BinaryOp::Lt),
        Just(BinaryOp::LtEq),
        Just(BinaryOp::Gt),
        Just(BinaryOp::GtEq),
    ]
}

fn bool_e() -> impl Strategy<Value = BoolE> {
    let leaf = prop_oneof![
        (cmp_op(), int_e(), int_e()).prop_map(|(o, a, b)| BoolE::CmpInt(o, a, b)),
        (cmp_op(), text_e(), text_e()).prop_map(|(o, a, b)| BoolE::CmpText(o, a, b)),
        (int_e(), any::<bool>()).prop_map(|(e, n)| BoolE::IsNull(e, n)),
        (text_e(), any::<bool>()).prop_map(|(e, n)| BoolE::TextIsNull(e, n)),
        (
            int_e(),
            proptest::collection::vec(small_int(), 1..4),
            any::<bool>()
        )
            .prop_map(|(e, l, n)| BoolE::In(e, l, n)),
        (int_e(), int_e(), int_e(), any::<bool>())
            .prop_map(|(e, l, h, n)| BoolE::Between(e, l, h, n)),
        // Wildcards, letters of both cases, and escapes (each `\` followed by the character it escapes).
        (text_e(), "([abAB%_]|\\\\[abAB%_\\\\]){0,4}", any::<bool>())
            .prop_map(|(e, p, n)| BoolE::Like(e, p, n)),
    ];
    leaf.prop_recursive(3, 16, 2, |inner| {
        prop_oneof![
            inner.clone().prop_map(|e| BoolE::Not(Box::new(e))),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| BoolE::And(Box::new(a), Box::new(b))),
            (inner.clone(), inner).prop_map(|(a, b)| BoolE::Or(Box::new(a), Box::new(b))),
        ]
    })
}

fn rows() -> impl Strategy<Value = Vec<Row>> {
    proptest::collection::vec(
        (small_int(), small_int(), small_text()).prop_map(|(a, b, s)| Row { a, b, s }),
        0..12,
    )
}

fn to_sqlite(v: &Value) -> rusqlite::types::Value {
    use rusqlite::types::Value as S;
    match v {
        Value::Null(_) => S::Null,
        Value::I64(i) => S::Integer(*i),
        Value::I32(i) => S::Integer((*i).into()),
        Value::Text(t) => S::Text(t.clone()),
        other => panic!("the generator makes no {other:?}"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// SQLite selects exactly the rows for which the reference evaluator says the filter is TRUE.
    #[test]
    fn filters_agree_with_sqlite(rows in rows(), filter in bool_e()) {
        let conn = Connection::open_in_memory().unwrap();
        // As tandem's executors open SQLite.
        conn.execute_batch("PRAGMA case_sensitive_like = ON").unwrap();
        conn.execute_batch("CREATE TABLE t (id INTEGER PRIMARY KEY, a BIGINT, b BIGINT, s TEXT)").unwrap();
        for (i, r) in rows.iter().enumerate() {
            conn.execute("INSERT INTO t VALUES (?1, ?2, ?3, ?4)", rusqlite::params![i as i64, r.a, r.b, r.s]).unwrap();
        }
        let mut q = Select::from(Ident::new("t").unwrap());
        q.items = vec![SelectItem::Expr { expr: col("id"), alias: None }];
        q.and_where(filter.ast());
        q.order_by = vec![tandem_sql::ast::OrderBy { expr: col("id"), order: tandem_sql::ast::Order::Asc }];
        let rendered = q.render(Dialect::Sqlite).unwrap();
        let mut stmt = conn.prepare(&rendered.sql).unwrap();
        let params: Vec<rusqlite::types::Value> = rendered.params.iter().map(to_sqlite).collect();
        let got: Vec<i64> = stmt
            .query_map(rusqlite::params_from_iter(params), |row| row.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let expected: Vec<i64> = rows
            .iter()
            .enumerate()
            .filter(|(_, r)| filter.eval(r) == Some(true))
            .map(|(i, _)| i as i64)
            .collect();
        prop_assert_eq!(got, expected, "SQL: {}", rendered.sql);
    }
}
