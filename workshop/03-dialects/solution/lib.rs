//! Stage 3 — the reference solution.

use tandem_sql::Dialect;

/// An identifier quoted for `dialect`.
pub fn quote(dialect: Dialect, name: &str) -> String {
    let q = if dialect == Dialect::MySql { '`' } else { '"' };
    let mut out = String::with_capacity(name.len() + 2);
    out.push(q);
    for c in name.chars() {
        if c == q {
            out.push(q);
        }
        out.push(c);
    }
    out.push(q);
    out
}

/// The placeholder of the `n`th parameter.
pub fn placeholder(dialect: Dialect, n: usize) -> String {
    match dialect {
        Dialect::Postgres => format!("${n}"),
        _ => "?".to_owned(),
    }
}

/// Rows of `columns` columns per INSERT.
pub fn rows_per_insert(dialect: Dialect, columns: usize) -> usize {
    let limit: usize = match dialect {
        Dialect::Sqlite => 32_766,
        _ => 65_535,
    };
    limit.checked_div(columns).unwrap_or(0)
}
