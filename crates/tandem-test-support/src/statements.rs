//! What a connection keeps prepared, as the server shows it: the cases both executors' suites run on one
//! connection each — MySQL's session counters (`statements_kept_and_closed_mysql`), PostgreSQL's
//! `pg_prepared_statements` (`hot_statements_stay_prepared_postgres`).

use tandem_core::statements::STATEMENTS_KEPT;
use tandem_sql::{RawSql, Value, raw};

/// The session's statement counters, read through the executor under test.
pub fn counters_statement() -> RawSql {
    raw("SHOW SESSION STATUS LIKE 'Com_stmt_%'", vec![])
}

/// `Com_stmt_prepare` and `Com_stmt_close` out of [`counters_statement`]'s rows.
pub fn counters(rows: &[(String, String)]) -> (i64, i64) {
    let get = |name: &str| -> i64 {
        let (_, v) = rows.iter().find(|(n, _)| n == name).expect(name);
        v.parse().unwrap()
    };
    (get("Com_stmt_prepare"), get("Com_stmt_close"))
}

/// The calls to make, with what each must answer: 150 distinct statements, each twice in a row (prepared
/// once), then ten of the first again (let go by then, so prepared anew and closed again when let go).
pub fn calls() -> impl Iterator<Item = (RawSql, i64)> {
    (0..150).flat_map(|k| [k, k]).chain(0..10).map(|k| {
        let select = raw(
            format!("SELECT CAST(? AS SIGNED) + {k}"),
            vec![Value::I64(1)],
        );
        (select, 1 + k)
    })
}

/// Checks the counters read before and after [`calls`]: not one prepare per call (that would be 310),
/// and no more left open on the server than a connection keeps (64; what it had prepared before the
/// calls is within that bound too). The counters' own statement may be let go and prepared again.
pub fn check(before: (i64, i64), after: (i64, i64)) {
    let (prepared, closed) = (after.0 - before.0, after.1 - before.1);
    assert!((150..=165).contains(&prepared), "{prepared} prepared");
    let open = prepared - closed;
    assert!(
        open <= STATEMENTS_KEPT as i64,
        "{open} statements left open on the server ({prepared} prepared, {closed} closed)"
    );
}

/// PostgreSQL: what the session holds prepared, as (SQL text, when it was prepared).
pub fn prepared_statement() -> RawSql {
    raw(
        "SELECT statement, prepare_time::text FROM pg_prepared_statements",
        vec![],
    )
}

/// The statement used between every two others in [`interleaved`].
pub const HOT_SQL: &str = "SELECT $1::int8 + 1000000";

/// The PostgreSQL calls to make, with what each must answer: [`HOT_SQL`], then one of 150 distinct
/// statements, in turn — more distinct ones than a connection keeps (64), the hot one used all along.
pub fn interleaved() -> impl Iterator<Item = (RawSql, i64)> {
    (0..150).flat_map(|k| {
        [
            (raw(HOT_SQL, vec![Value::I64(1)]), 1_000_001),
            (
                raw(format!("SELECT $1::int8 + {k}"), vec![Value::I64(1)]),
                1 + k,
            ),
        ]
    })
}

/// Checks [`prepared_statement`]'s rows read before and after [`interleaved`]: the hot statement was
/// prepared once (the same prepare time: never let go while in use), and the session holds no more
/// statements than a connection keeps — each one let go was closed.
pub fn check_postgres(before: &[(String, String)], after: &[(String, String)]) {
    let hot = |rows: &[(String, String)]| -> String {
        let found = rows.iter().find(|(sql, _)| sql == HOT_SQL);
        found
            .map(|(_, at)| at.clone())
            .unwrap_or_else(|| panic!("{HOT_SQL} is not prepared on the session: {rows:?}"))
    };
    assert_eq!(
        hot(before),
        hot(after),
        "the hot statement was prepared again: the connection let go of a statement in use"
    );
    assert!(
        after.len() <= STATEMENTS_KEPT,
        "{} statements prepared on the session, more than a connection keeps ({STATEMENTS_KEPT})",
        after.len()
    );
}
