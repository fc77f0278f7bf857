//! The schema the cross-crate tests share: users and their orders.
#![allow(dead_code, missing_docs)]

// The playground's default schema, so the tables the tests use are the ones a learner sees first in the
// browser (and `tests/snippets.rs` checks the playground against the same declarations).
include!("../../tandem-playground/snippets/schema.rs");

/// A user to insert (its key is generated).
pub fn user(name: &str, age: i32) -> User {
    User {
        id: 0,
        name: name.into(),
        age,
        email: None,
    }
}

/// Renders `stmt` for SQLite, PostgreSQL and MySQL, in that order; errors as `ERR: …`.
pub fn sql3(stmt: &impl Render) -> [String; 3] {
    Dialect::ALL.map(|d| match stmt.render(d) {
        Ok(r) => r.sql,
        Err(e) => format!("ERR: {e}"),
    })
}

/// The driver's error under a database error, as its `Debug` text through the whole source chain: what
/// tandem does not classify (PostgreSQL's detail and hint) must still be there. Fails when there is none.
pub fn driver_error_text(e: &(dyn std::error::Error + 'static)) -> String {
    let mut chain = Vec::new();
    let mut next = e.source();
    while let Some(s) = next {
        chain.push(format!("{s:?}"));
        next = s.source();
    }
    assert!(
        !chain.is_empty(),
        "the database error keeps no driver error: {e}"
    );
    chain.join(" <- ")
}

/// Checks a unique violation's driver error: present on every engine, with PostgreSQL's detail (which names
/// the duplicated key) kept.
pub fn check_unique_violation_source(
    dialect: tandem_sql::Dialect,
    e: &(dyn std::error::Error + 'static),
) {
    let text = driver_error_text(e);
    if dialect == tandem_sql::Dialect::Postgres {
        assert!(
            text.contains("already exists"),
            "PostgreSQL's detail is lost: {text}"
        );
    }
}

/// A statement whose one cell is TEXT that is not UTF-8 (SQLite keeps whatever bytes it is given).
pub const NOT_UTF8_TEXT: &str = "SELECT CAST(x'ff' AS TEXT)";

/// Checks what reading [`NOT_UTF8_TEXT`] gave: a decode error that names SQLite and the TEXT type, with
/// the driver's own error as its source.
pub fn check_not_utf8_decode<T: std::fmt::Debug>(got: &Result<T, tandem_core::Error>) {
    assert!(
        matches!(
            got,
            Err(tandem_core::Error::Decode { dialect: tandem_sql::Dialect::Sqlite, column_type, source, .. })
                if column_type == "TEXT" && source.is_some()
        ),
        "{got:?}"
    );
}

/// A statement that the server fails with a real retriable error (PostgreSQL serialization failure 40001,
/// MariaDB deadlock 1213), and what must run once before it; `None` on SQLite, whose retriable error (busy)
/// takes a second writer and its busy timeout to produce.
pub fn retriable_failure(
    dialect: tandem_sql::Dialect,
) -> Option<(Option<&'static str>, &'static str)> {
    match dialect {
        tandem_sql::Dialect::Postgres => Some((
            None,
            "DO $$ BEGIN RAISE EXCEPTION 'simulated' USING ERRCODE = '40001'; END $$",
        )),
        tandem_sql::Dialect::MySql => Some((
            Some(
                "CREATE PROCEDURE IF NOT EXISTS tandem_simulated_deadlock() \
                 SIGNAL SQLSTATE '40001' SET MYSQL_ERRNO = 1213, MESSAGE_TEXT = 'simulated deadlock'",
            ),
            "CALL tandem_simulated_deadlock()",
        )),
        tandem_sql::Dialect::Sqlite => None,
    }
}

/// An application's own error type, for transactions whose closures return it.
#[derive(Debug)]
pub enum AppError {
    /// A database failure.
    Db(tandem_core::Error),
    /// A business rule said no.
    Rule(&'static str),
}

impl From<tandem_core::Error> for AppError {
    fn from(e: tandem_core::Error) -> Self {
        AppError::Db(e)
    }
}
