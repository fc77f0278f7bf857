//! What a MySQL connection keeps prepared, as its session's counters show it: the case both executors'
//! suites run (`statements_kept_and_closed_mysql`) on one connection each.

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
        open <= 64,
        "{open} statements left open on the server ({prepared} prepared, {closed} closed)"
    );
}
