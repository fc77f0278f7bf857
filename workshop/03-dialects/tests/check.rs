//! Stage 3's specification, with tandem's renderers as the oracle.

#[cfg(not(feature = "solution"))]
use workshop_03_dialects as stage;
#[cfg(feature = "solution")]
#[allow(dead_code)] // items of the solution no test calls (given types, the entity's own impls)
#[path = "../solution/lib.rs"]
mod stage;

use proptest::prelude::*;
use stage::{placeholder, quote, rows_per_insert};
use tandem_sql::ast::{BinaryOp, Expr, Select};
use tandem_sql::{Dialect, Ident, Render};

fn dialect() -> impl Strategy<Value = Dialect> {
    prop_oneof![
        Just(Dialect::Sqlite),
        Just(Dialect::Postgres),
        Just(Dialect::MySql)
    ]
}

proptest! {
    /// Any valid name is quoted exactly as tandem quotes it.
    fn quoting_matches_tandem(d in dialect(), name in "[a-z\"` _é]{1,12}") {
        let Ok(ident) = Ident::new(name.clone()) else { return Ok(()) };
        let sql = Select::from(ident).render(d).unwrap().sql;
        let rendered = sql.strip_prefix("SELECT * FROM ").unwrap();
        prop_assert_eq!(quote(d, &name), rendered);
    }

    /// The n-th placeholder is the one tandem writes for the n-th value.
    fn placeholders_match_tandem(d in dialect(), n in 1usize..15) {
        let mut select = Select::from(Ident::new("t").unwrap());
        for i in 0..n {
            select.and_where(Expr::column(Ident::new("a").unwrap()).binary(BinaryOp::Eq, Expr::value(i as i64)));
        }
        let sql = select.render(d).unwrap().sql;
        let found: Vec<String> = sql
            .split(" = ")
            .skip(1)
            .map(|rest| rest.chars().take_while(|c| *c == '?' || *c == '$' || c.is_ascii_digit()).collect())
            .collect();
        let mine: Vec<String> = (1..=n).map(|i| placeholder(d, i)).collect();
        prop_assert_eq!(mine, found);
    }

    /// Rows per INSERT are what tandem's batch splitter uses.
    fn rows_per_insert_matches_tandem(d in dialect(), columns in 0usize..70_000) {
        let oracle = tandem_sql::batch::rows_per_statement(d, columns, None).unwrap_or(0);
        prop_assert_eq!(rows_per_insert(d, columns), oracle);
    }
}

/// The seed workload's chunk: 1,000 rows of 3 columns fit in one statement everywhere.
fn the_seed_chunk_fits() {
    for d in Dialect::ALL {
        assert!(rows_per_insert(d, 3) >= 1_000, "{d}");
    }
    assert_eq!(rows_per_insert(Dialect::Sqlite, 2), 16_383);
}

workshop_harness::checks!(
    quoting_matches_tandem,
    placeholders_match_tandem,
    rows_per_insert_matches_tandem,
    the_seed_chunk_fits,
);
