//! Stage 1's specification. `just check 01` runs it on `src/lib.rs`; the oracle is tandem itself:
//! `#[derive(Table)]`'s own type mapping (`SqlValue`) and renderers.

#[cfg(not(feature = "solution"))]
use workshop_01_tables as stage;
#[cfg(feature = "solution")]
#[allow(dead_code)] // items of the solution no test calls (given types, the entity's own impls)
#[path = "../solution/lib.rs"]
mod stage;

use proptest::prelude::*;
use stage::{books, sql_type_of};
use tandem_sql::ast::{ColumnDef, IndexDef, TableSchema};
use tandem_sql::{Dialect, Ident, SqlType, SqlValue, Table};

fn ident(s: &'static str) -> Ident {
    Ident::from_static(s)
}

/// The declaration yields exactly the chapter's table.
fn book_declaration_is_the_specified_table() {
    let col = |name, ty, nullable| ColumnDef {
        nullable,
        ..ColumnDef::new(ident(name), ty)
    };
    let expected = TableSchema {
        name: ident("books"),
        columns: vec![
            ColumnDef {
                primary_key: true,
                auto_increment: true,
                ..col("id", SqlType::BigInt, false)
            },
            ColumnDef {
                unique: true,
                ..col("title", SqlType::VarChar(200), false)
            },
            col("author", SqlType::VarChar(100), false),
            col("year", SqlType::Int, false),
            col("isbn", SqlType::Text, true),
        ],
        indexes: vec![IndexDef {
            name: ident("books_author_idx"),
            columns: vec![ident("author")],
            unique: false,
        }],
    };
    assert_eq!(
        *<books::table as Table>::schema(),
        expected,
        "the declaration does not yield the chapter's table yet: compare its attributes with the TODO"
    );
}

/// On every engine the DDL declares the key, the unique title and the author index.
fn ddl_on_every_engine() {
    for d in Dialect::ALL {
        let sql: Vec<String> = <books::table as Table>::schema()
            .create_table(false)
            .render_all(d)
            .unwrap()
            .into_iter()
            .map(|r| r.sql)
            .collect();
        let all = sql.join(";\n");
        assert!(all.contains("PRIMARY KEY"), "{d}: {all}");
        assert!(
            all.contains("books_title_key"),
            "{d}: a unique index on title: {all}"
        );
        assert!(
            all.contains("books_author_idx"),
            "{d}: an index on author: {all}"
        );
        assert!(all.contains("VARCHAR(200)"), "{d}: {all}");
    }
}

/// Each Rust type maps as tandem's own `SqlValue` does.
fn types_match_tandem() {
    fn oracle<T: SqlValue>() -> Option<(SqlType, bool)> {
        Some((T::SQL_TYPE, T::NULLABLE))
    }
    let cases = [
        ("bool", oracle::<bool>()),
        ("i16", oracle::<i16>()),
        ("i32", oracle::<i32>()),
        ("i64", oracle::<i64>()),
        ("f32", oracle::<f32>()),
        ("f64", oracle::<f64>()),
        ("String", oracle::<String>()),
        ("Vec<u8>", oracle::<Vec<u8>>()),
        ("Option<bool>", oracle::<Option<bool>>()),
        ("Option<i32>", oracle::<Option<i32>>()),
        ("Option<i64>", oracle::<Option<i64>>()),
        ("Option<f64>", oracle::<Option<f64>>()),
        ("Option<String>", oracle::<Option<String>>()),
        ("Option<Vec<u8>>", oracle::<Option<Vec<u8>>>()),
    ];
    for (name, expected) in cases {
        assert_eq!(sql_type_of(name), expected, "{name}");
    }
}

proptest! {
    /// Names that are not column types are `None`, never a panic.
    fn other_names_are_none(name in "[A-Za-z<>0-9_:]{0,16}") {
        let known = ["bool", "i16", "i32", "i64", "f32", "f64", "String", "Vec<u8>"];
        let inner = name.strip_prefix("Option<").and_then(|n| n.strip_suffix('>')).unwrap_or(&name);
        prop_assume!(!known.contains(&inner));
        prop_assert_eq!(sql_type_of(&name), None);
    }
}

/// `Option<Option<T>>` is not a column type.
fn nested_options_are_none() {
    assert_eq!(sql_type_of("Option<Option<i64>>"), None);
    assert_eq!(sql_type_of("Option<u32>"), None);
}

workshop_harness::checks!(
    book_declaration_is_the_specified_table,
    ddl_on_every_engine,
    types_match_tandem,
    other_names_are_none,
    nested_options_are_none,
);
