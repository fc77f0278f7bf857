//! What `#[derive(Table)]` generates for a row struct: schema, entity values, and decoding.

use tandem_test_support::schema as support;

use std::sync::Arc;

use support::{User, orders, users};
use tandem_sql::prelude::*;
use tandem_sql::{SqlType, Value};

fn user() -> User {
    User {
        id: 7,
        name: "ada".into(),
        age: 36,
        email: None,
    }
}

/// The schema carries types, nullability, keys, defaults and indexes from the declaration.
#[test]
fn schema_from_declaration() {
    let s = <users::table as tandem_sql::Table>::schema();
    assert_eq!(s.name.as_str(), "users");
    let names: Vec<&str> = s.columns.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["id", "name", "age", "email"]);
    let id = &s.columns[0];
    assert!(id.primary_key && id.auto_increment && !id.nullable && id.ty == SqlType::BigInt);
    assert_eq!(s.columns[1].ty, SqlType::VarChar(100));
    assert!(s.columns[1].unique);
    assert!(s.columns[3].nullable);
    let indexes: Vec<String> = s
        .all_indexes()
        .unwrap()
        .iter()
        .map(|i| i.name.to_string())
        .collect();
    assert_eq!(indexes, ["users_age_idx", "users_name_key"]);
    let shipped = <orders::shipped as Column>::def();
    assert_eq!(
        shipped.default,
        Some(tandem_sql::ast::DefaultValue::Bool(false))
    );
}

/// An entity's values, insert columns (no generated key) and key, and its round trip through a row.
#[test]
fn entity_round_trip() {
    let u = user();
    assert_eq!(<User as Entity>::KEY.as_str(), "id");
    const { assert!(<User as Entity>::GENERATED_KEY) };
    assert_eq!(u.key(), 7);
    let names: Vec<&str> = User::insert_columns().iter().map(|c| c.as_str()).collect();
    assert_eq!(names, ["name", "age", "email"]);
    assert_eq!(
        u.insert_values(),
        [
            Value::Text("ada".into()),
            Value::I32(36),
            Value::Null(SqlType::Text)
        ]
    );
    let columns: Arc<[String]> = Arc::from(vec![
        "id".into(),
        "name".into(),
        "age".into(),
        "email".into(),
    ]);
    let row = Row::new(columns, u.to_values());
    assert_eq!(User::from_row(row).unwrap(), u);
    assert_eq!(u.clone().into_values(), u.to_values());
}

/// A row with too few columns is a typed error naming the missing column.
#[test]
fn short_row() {
    let row = Row::new(Arc::from(vec!["id".to_owned()]), vec![Value::I64(1)]);
    assert!(matches!(
        User::from_row(row),
        Err(tandem_sql::Error::MissingColumn { ref column, .. }) if column == "name"
    ));
}

/// A table declared through the facade alone, with `crate = "tandem::sql"`.
#[derive(tandem::sql::Table, Debug, Clone, PartialEq)]
#[table(name = "notes", crate = "tandem::sql")]
pub struct Note {
    /// Generated key.
    #[column(primary_key, auto_increment)]
    pub id: i64,
    /// Text.
    pub body: String,
}

/// The facade path works for declarations and queries.
#[test]
fn declared_through_the_facade() {
    use tandem::prelude::*;
    let r = notes::table
        .select(notes::body)
        .filter(notes::id.eq(1))
        .render(Dialect::Postgres)
        .unwrap();
    assert_eq!(
        r.sql,
        r#"SELECT "notes"."body" FROM "notes" WHERE "notes"."id" = $1"#
    );
    assert_eq!(<Note as Entity>::KEY.as_str(), "id");
}
