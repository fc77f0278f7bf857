//! Bad input gets a typed error, never a panic and never broken SQL.

use tandem_test_support::schema as support;

use support::users;
use tandem_sql::ast::{self, Conflict, Expr, Insert, Select, TableSchema};
use tandem_sql::prelude::*;
use tandem_sql::{Error, Ident, SqlType, Value};

fn ident(s: &str) -> Ident {
    Ident::new(s.to_owned()).unwrap()
}

/// Empty, too long, control-character and trailing-space identifiers are refused with the reason.
#[test]
fn invalid_identifiers() {
    for bad in ["", "x\u{0}y", "tab\there", "trailing ", &"n".repeat(64)] {
        let err = Ident::new(bad.to_owned()).unwrap_err();
        assert!(
            matches!(err, Error::InvalidIdentifier { ref ident, .. } if ident == bad),
            "{bad:?}: {err}"
        );
    }
    // An alias is validated when the query renders.
    let q = users::table.select(users::id.alias(""));
    assert!(matches!(
        q.render(Dialect::Sqlite),
        Err(Error::InvalidIdentifier { .. })
    ));
}

/// `IN ()` is an error on every dialect, typed or untyped.
#[test]
fn empty_in_list() {
    let q = users::table
        .select(users::id)
        .filter(users::id.in_list(Vec::<i64>::new()));
    for d in Dialect::ALL {
        assert_eq!(q.render(d), Err(Error::EmptyInList));
    }
}

/// An INSERT without rows, without columns, or with a row of the wrong width.
#[test]
fn bad_batches() {
    let empty = Insert::values(ident("t"), vec![ident("a")], vec![]);
    assert_eq!(
        empty.render(Dialect::Postgres),
        Err(Error::EmptyBatch { table: "t".into() })
    );
    assert!(matches!(
        empty.clone().into_chunks(Dialect::Postgres, None),
        Err(Error::EmptyBatch { .. })
    ));
    let no_columns = Insert::values(ident("t"), vec![], vec![vec![]]);
    assert!(matches!(
        no_columns.render(Dialect::Sqlite),
        Err(Error::Empty { .. })
    ));
    let ragged = Insert::values(
        ident("t"),
        vec![ident("a"), ident("b")],
        vec![vec![Value::I32(1), Value::I32(2)], vec![Value::I32(3)]],
    );
    assert_eq!(
        ragged.render(Dialect::MySql),
        Err(Error::RowWidth {
            row: 1,
            expected: 2,
            found: 1
        })
    );
    // The typed builder with no rows is the same error.
    let typed = users::table.insert().columns((users::name, users::age));
    assert!(matches!(
        typed.render(Dialect::Sqlite),
        Err(Error::EmptyBatch { .. })
    ));
}

/// One statement with more parameters than the engine allows is refused before it reaches the server.
#[test]
fn too_many_parameters() {
    let rows = vec![vec![Value::I32(1), Value::I32(2)]; 16_384];
    let insert = Insert::values(ident("t"), vec![ident("a"), ident("b")], rows);
    assert_eq!(
        insert.render(Dialect::Sqlite),
        Err(Error::TooManyParameters {
            dialect: Dialect::Sqlite,
            count: 32_768,
            limit: 32_766
        })
    );
    assert!(insert.render(Dialect::Postgres).is_ok());
    let wide = Insert::values(
        ident("t"),
        (0..70_000).map(|i| ident(&format!("c{i}"))).collect(),
        vec![],
    );
    assert!(matches!(
        wide.into_chunks(Dialect::Postgres, None),
        Err(Error::TooManyParameters { .. })
    ));
    let list = users::table
        .select(users::id)
        .filter(users::id.in_list(0..40_000i64));
    assert!(matches!(
        list.render(Dialect::Sqlite),
        Err(Error::TooManyParameters { count: 40_000, .. })
    ));
}

/// Statements a dialect cannot express name the dialect and the feature.
#[test]
fn unsupported_features() {
    let mut insert = Insert::values(ident("t"), vec![ident("a")], vec![vec![Value::I32(1)]]);
    insert.returning = ast::Returning::Columns(vec![ident("id"), ident("a")]);
    let err = insert.render(Dialect::MySql).unwrap_err();
    assert!(matches!(
        err,
        Error::Unsupported {
            dialect: Dialect::MySql,
            ..
        }
    ));
    assert!(
        err.to_string()
            .starts_with("MySQL cannot express RETURNING"),
        "{err}"
    );
    assert!(insert.render(Dialect::Postgres).is_ok());

    insert.returning = ast::Returning::Nothing;
    insert.conflict = Conflict::Update {
        target: vec![],
        set: vec![(ident("a"), Expr::Excluded(ident("a")))],
    };
    assert!(matches!(
        insert.render(Dialect::Postgres),
        Err(Error::Unsupported {
            dialect: Dialect::Postgres,
            ..
        })
    ));
    assert!(insert.render(Dialect::MySql).is_ok());

    let idx = ast::CreateIndex {
        table: ident("t"),
        index: ast::IndexDef {
            name: ident("t_a"),
            columns: vec![ident("a")],
            unique: false,
        },
        if_not_exists: true,
    };
    assert!(matches!(
        idx.render(Dialect::MySql),
        Err(Error::Unsupported {
            dialect: Dialect::MySql,
            ..
        })
    ));

    let mut text_key = TableSchema::new(ident("t"));
    let mut col = ast::ColumnDef::new(ident("a"), SqlType::Text);
    col.unique = true;
    text_key.columns.push(col);
    assert!(matches!(
        text_key.create_table(false).render_all(Dialect::MySql),
        Err(Error::Unsupported {
            dialect: Dialect::MySql,
            ..
        })
    ));
    assert!(
        text_key
            .create_table(false)
            .render_all(Dialect::Postgres)
            .is_ok()
    );

    let mut having = Select::from(ident("t"));
    having.having = Some(Expr::value(true));
    assert!(matches!(
        having.render(Dialect::Sqlite),
        Err(Error::Unsupported { .. })
    ));
}

/// Run-time schemas that no engine would accept are refused before rendering.
#[test]
fn invalid_schemas() {
    let mut t = TableSchema::new(ident("t"));
    assert!(matches!(
        t.create_table(true).render_all(Dialect::Sqlite),
        Err(Error::InvalidSchema { .. })
    ));
    let mut a = ast::ColumnDef::new(ident("a"), SqlType::Text);
    a.auto_increment = true;
    t.columns.push(a);
    assert!(matches!(t.validate(), Err(Error::InvalidSchema { .. })));
    t.columns[0].auto_increment = false;
    t.columns
        .push(ast::ColumnDef::new(ident("a"), SqlType::Int));
    assert!(matches!(t.validate(), Err(Error::InvalidSchema { .. })));
}

/// A value of the wrong type at run time: decoding names the column, and schemas say what a column accepts.
#[test]
fn wrong_types_at_run_time() {
    let schema = <users::table as tandem_sql::Table>::schema();
    let age = schema.column("age").unwrap();
    assert!(age.ty.accepts(&Value::I64(3)));
    assert!(!age.ty.accepts(&Value::Text("3".into())));
    assert!(matches!(
        schema.column("nope"),
        Err(Error::UnknownColumn { .. })
    ));
    let row = Row::new(
        std::sync::Arc::from(vec![
            "id".to_owned(),
            "name".to_owned(),
            "age".to_owned(),
            "email".to_owned(),
        ]),
        vec![
            Value::I64(1),
            Value::Text("a".into()),
            Value::Text("old".into()),
            Value::Null(SqlType::Text),
        ],
    );
    let err = <support::User as FromRow>::from_row(row).unwrap_err();
    assert!(
        matches!(err, Error::Decode { ref column, .. } if column == "age"),
        "{err}"
    );
}
