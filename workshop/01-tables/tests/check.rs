//! Stage 1's specification. `just check 01` runs it on your `src/exercise.rs`. The oracles are tandem
//! itself (its `SqlValue` conversions, its quoting, its `CREATE TABLE`) and SQLite (which says what your
//! DDL declared).

use std::any::TypeId;

use proptest::prelude::*;
use tables::{
    Column, ColumnDef, DecodeError, Dialect, Schema, SqlType, SqlValue, Table, Value, quote, table,
};
use tandem_sql::Render;
use workshop_harness::{proptest_config, sql_mismatch, ui};

table! {
    /// People.
    users (id) {
        id: i64,
        name: String,
        age: i32,
        email: Option<String>,
    }
}

table! {
    /// What people bought.
    orders (id) {
        id: i64,
        user_id: i64,
        total: f64,
        paid: bool,
        note: Option<String>,
    }
}

/// The same engine, as tandem names it.
fn tandem_dialect(d: Dialect) -> tandem_sql::Dialect {
    d.to_string().parse().expect("tandem knows every engine")
}

fn tandem_type(t: SqlType) -> tandem_sql::SqlType {
    match t {
        SqlType::Bool => tandem_sql::SqlType::Bool,
        SqlType::Int => tandem_sql::SqlType::Int,
        SqlType::BigInt => tandem_sql::SqlType::BigInt,
        SqlType::Double => tandem_sql::SqlType::Double,
        SqlType::Text => tandem_sql::SqlType::Text,
    }
}

/// tandem's value as this stage's `Value` (tandem's NULL also carries its SQL type; yours need not).
fn from_tandem(v: tandem_sql::Value) -> Value {
    match v {
        tandem_sql::Value::Null(_) => Value::Null,
        tandem_sql::Value::Bool(b) => Value::Bool(b),
        tandem_sql::Value::I32(i) => Value::I32(i),
        tandem_sql::Value::I64(i) => Value::I64(i),
        tandem_sql::Value::F64(f) => Value::F64(f),
        tandem_sql::Value::Text(s) => Value::Text(s),
        other => panic!("the test uses no {other:?}"),
    }
}

/// One Rust type checked against tandem's impl of the same type: constants, `to_value`, and the way back.
fn same_as_tandem<T>(v: T) -> Result<(), TestCaseError>
where
    T: SqlValue + tandem_sql::SqlValue + PartialEq + std::fmt::Debug,
{
    let name = std::any::type_name::<T>();
    prop_assert_eq!(
        (
            tandem_type(<T as SqlValue>::SQL_TYPE),
            <T as SqlValue>::NULLABLE
        ),
        (
            <T as tandem_sql::SqlValue>::SQL_TYPE,
            <T as tandem_sql::SqlValue>::NULLABLE
        ),
        "the SQL type and nullability of {}",
        name
    );
    let mine = SqlValue::to_value(&v);
    prop_assert_eq!(
        &mine,
        &from_tandem(tandem_sql::SqlValue::into_value(v.clone())),
        "{:?}.to_value() for {}",
        v,
        name
    );
    prop_assert_eq!(
        <T as SqlValue>::from_value(mine.clone()),
        Ok(v),
        "{}::from_value({:?}) must give the value back",
        name,
        mine
    );
    Ok(())
}

proptest! {
    #![proptest_config(proptest_config(64))]

    /// Every column type converts to the value tandem binds for it, and back.
    fn values_round_trip_like_tandem(
        i in any::<i32>(), l in any::<i64>(), f in -1e12f64..1e12, b in any::<bool>(),
        s in ".{0,12}", o in proptest::option::of(any::<i64>()), os in proptest::option::of(".{0,8}"),
    ) {
        same_as_tandem(i)?;
        same_as_tandem(l)?;
        same_as_tandem(f)?;
        same_as_tandem(b)?;
        same_as_tandem(s)?;
        same_as_tandem(o)?;
        same_as_tandem(os)?;
        same_as_tandem(Some(i))?;
        same_as_tandem(Some(b))?;
    }

    /// Any name is quoted exactly as tandem quotes it, however many quote characters it holds.
    fn quoting_matches_tandem(name in "[a-z\"` _é]{1,12}") {
        let Ok(ident) = tandem_sql::Ident::new(name.clone()) else { return Ok(()) };
        for d in Dialect::ALL {
            let sql = tandem_sql::ast::Select::from(ident.clone()).render(tandem_dialect(d)).unwrap().sql;
            let expected = sql.strip_prefix("SELECT * FROM ").unwrap();
            let mine = quote(d, &name);
            prop_assert!(
                mine == expected,
                "{}: quote({:?})\n      yours: {}\n   expected: {}",
                d, name, mine, expected
            );
        }
    }

    /// `CREATE TABLE` is the statement tandem writes for the same table, on every engine.
    fn create_table_matches_tandem(schema in schemas()) {
        for d in Dialect::ALL {
            let mine = schema.create_table(d);
            let expected = tandem_create_table(&schema, d);
            if let Some(diff) = sql_mismatch(&mine, &expected) {
                let mut why = format!("{d}: {diff}");
                if d == Dialect::Sqlite {
                    why.push_str(&sqlite_diff(&mine, &expected).unwrap_or_default());
                }
                prop_assert!(false, "{}", why);
            }
        }
    }
}

/// Random tables: a key first or elsewhere, names with quote characters, every type, nullable or not.
fn schemas() -> impl Strategy<Value = Schema> {
    let ty = prop_oneof![
        Just(SqlType::Bool),
        Just(SqlType::Int),
        Just(SqlType::BigInt),
        Just(SqlType::Double),
        Just(SqlType::Text),
    ];
    let column = ("[a-z][a-z_\"`]{0,6}", ty, any::<bool>());
    (
        "[a-z][a-z_ ]{0,8}[a-z]",
        proptest::collection::vec(column, 1..6),
        any::<prop::sample::Index>(),
    )
        .prop_map(|(table, cols, key_at)| {
            let key_at = key_at.index(cols.len() + 1);
            let mut columns: Vec<ColumnDef> = cols
                .into_iter()
                .enumerate()
                .map(|(i, (name, sql_type, nullable))| ColumnDef {
                    name: format!("{name}{i}").leak(),
                    sql_type,
                    nullable,
                    primary_key: false,
                })
                .collect();
            columns.insert(
                key_at,
                ColumnDef {
                    name: "id",
                    sql_type: SqlType::BigInt,
                    nullable: false,
                    primary_key: true,
                },
            );
            Schema {
                name: table.leak(),
                columns,
            }
        })
}

/// tandem's `CREATE TABLE` for the same schema: the key generated by the database.
fn tandem_create_table(schema: &Schema, d: Dialect) -> String {
    use tandem_sql::ast::{ColumnDef as Def, TableSchema};
    let ident = |s: &str| tandem_sql::Ident::new(s.to_owned()).expect("a valid test name");
    let table = TableSchema {
        name: ident(schema.name),
        columns: schema
            .columns
            .iter()
            .map(|c| Def {
                nullable: c.nullable,
                primary_key: c.primary_key,
                auto_increment: c.primary_key,
                ..Def::new(ident(c.name), tandem_type(c.sql_type))
            })
            .collect(),
        indexes: vec![],
    };
    let mut all = table
        .create_table(false)
        .render_all(tandem_dialect(d))
        .expect("tandem renders the test table");
    all.remove(0).sql
}

/// What SQLite says each DDL declared, column by column, when the two differ: name, declared type,
/// NOT NULL, PRIMARY KEY. `None` when SQLite sees them the same (or cannot run yours).
fn sqlite_diff(mine: &str, expected: &str) -> Option<String> {
    let describe = |sql: &str| -> Result<Vec<(String, String, bool, bool)>, String> {
        let c = rusqlite::Connection::open_in_memory().unwrap();
        c.execute_batch(sql).map_err(|e| e.to_string())?;
        let table: String = c
            .query_row(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name <> 'sqlite_sequence'",
                [],
                |r| r.get(0),
            )
            .map_err(|e| e.to_string())?;
        let mut stmt = c
            .prepare("SELECT name, type, \"notnull\", pk FROM pragma_table_info(?1)")
            .unwrap();
        stmt.query_map([table], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, bool>(2)?,
                r.get::<_, i64>(3)? > 0,
            ))
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .map_err(|e| e.to_string())
    };
    let theirs = describe(expected).ok()?;
    let mine = match describe(mine) {
        Ok(m) => m,
        Err(e) => return Some(format!("\n   SQLite cannot run your statement: {e}")),
    };
    let mut out = Vec::new();
    for (i, t) in theirs.iter().enumerate() {
        let Some(m) = mine.iter().find(|m| m.0 == t.0) else {
            out.push(format!("column {:?} is missing", t.0));
            continue;
        };
        if m.1 != t.1 {
            out.push(format!(
                "column {:?} is declared {:?}, not {:?}",
                t.0, m.1, t.1
            ));
        }
        if m.2 != t.2 {
            let says = if t.2 { "lacks" } else { "must not have" };
            out.push(format!("column {:?} {says} NOT NULL", t.0));
        }
        if m.3 != t.3 {
            let says = if t.3 { "lacks" } else { "must not have" };
            out.push(format!("column {:?} {says} PRIMARY KEY", t.0));
        }
        if mine.iter().position(|m| m.0 == t.0) != Some(i) {
            out.push(format!("column {:?} is not at position {}", t.0, i + 1));
        }
    }
    for m in &mine {
        if !theirs.iter().any(|t| t.0 == m.0) {
            out.push(format!("column {:?} is not in the table", m.0));
        }
    }
    (!out.is_empty()).then(|| {
        format!(
            "\n   SQLite reads your table differently: {}",
            out.join("; ")
        )
    })
}

fn same_type<A: 'static, B: 'static>() -> bool {
    TypeId::of::<A>() == TypeId::of::<B>()
}

/// `table!` makes a marker per table and per column, with the names, the Rust types and the table in the
/// types, and the schema in declaration order.
fn the_macro_declares_tables() {
    assert_eq!(<users::table as Table>::NAME, "users");
    assert_eq!(<users::age as Column>::NAME, "age");
    assert_eq!(<orders::user_id as Column>::NAME, "user_id");
    assert!(
        same_type::<<users::age as Column>::Type, i32>(),
        "users::age holds i32"
    );
    assert!(
        same_type::<<users::email as Column>::Type, Option<String>>(),
        "users::email holds Option<String>"
    );
    assert!(
        same_type::<<users::age as Column>::Table, users::table>(),
        "users::age belongs to users::table"
    );
    assert!(
        same_type::<<orders::total as Column>::Table, orders::table>(),
        "orders::total belongs to orders::table"
    );
    let col = |name, sql_type, nullable, primary_key| ColumnDef {
        name,
        sql_type,
        nullable,
        primary_key,
    };
    let expected = [
        col("id", SqlType::BigInt, false, true),
        col("name", SqlType::Text, false, false),
        col("age", SqlType::Int, false, false),
        col("email", SqlType::Text, true, false),
    ];
    let schema = <users::table as Table>::schema();
    assert_eq!(schema.name, "users", "users' schema: the table's name");
    let names: Vec<&str> = schema.columns.iter().map(|c| c.name).collect();
    assert_eq!(
        names,
        ["id", "name", "age", "email"],
        "users' schema: the columns, in declaration order"
    );
    for (got, want) in schema.columns.iter().zip(&expected) {
        let c = want.name;
        assert_eq!(
            got.sql_type, want.sql_type,
            "users.{c}: its SQL type, from its Rust type"
        );
        assert_eq!(
            got.nullable, want.nullable,
            "users.{c}: `nullable` — true for a column of `Option<T>`, false for every other"
        );
        assert_eq!(
            got.primary_key, want.primary_key,
            "users.{c}: `primary_key` — true only for the column named in `users (id)`"
        );
    }
    assert_eq!(
        schema,
        Schema {
            name: "users",
            columns: expected.to_vec()
        }
    );
    assert_eq!(
        <orders::table as Table>::schema()
            .primary_key()
            .map(|c| c.name),
        Some("id")
    );
}

/// The values drivers hand back decode as the column's type: integers widened or narrowed when they fit,
/// 0 and 1 as booleans, NULL only into an `Option`; anything else is a `DecodeError` naming the type.
fn values_decode_what_drivers_return() {
    assert_eq!(i32::from_value(Value::I64(-7)), Ok(-7));
    assert_eq!(
        i32::from_value(Value::I64(1 << 40)),
        Err(DecodeError {
            expected: "i32",
            found: Value::I64(1 << 40)
        }),
        "an i64 that does not fit in i32"
    );
    assert_eq!(i64::from_value(Value::I32(5)), Ok(5));
    assert_eq!(
        i64::from_value(Value::I32(i32::MIN)),
        Ok(i64::from(i32::MIN))
    );
    assert_eq!(bool::from_value(Value::I64(1)), Ok(true));
    assert_eq!(bool::from_value(Value::I64(0)), Ok(false));
    assert_eq!(bool::from_value(Value::I32(1)), Ok(true), "1 as an I32");
    assert_eq!(bool::from_value(Value::I32(0)), Ok(false), "0 as an I32");
    for not_a_bool in [Value::I64(2), Value::I64(-1), Value::I32(2)] {
        assert!(
            bool::from_value(not_a_bool.clone()).is_err(),
            "{not_a_bool:?} is not a boolean"
        );
    }
    assert_eq!(f64::from_value(Value::I64(2)), Ok(2.0));
    assert_eq!(
        f64::from_value(Value::I32(-3)),
        Ok(-3.0),
        "an I32 as a float"
    );
    let exact = 1i64 << 53;
    assert_eq!(
        f64::from_value(Value::I64(exact)),
        Ok(9_007_199_254_740_992.0)
    );
    assert_eq!(
        f64::from_value(Value::I64(-exact)),
        Ok(-9_007_199_254_740_992.0)
    );
    for beyond in [exact + 1, -exact - 1, i64::MAX] {
        assert_eq!(
            f64::from_value(Value::I64(beyond)),
            Err(DecodeError {
                expected: "f64",
                found: Value::I64(beyond)
            }),
            "{beyond} has no exact f64: reading it as one would change it"
        );
    }
    assert_eq!(
        String::from_value(Value::Null),
        Err(DecodeError {
            expected: "String",
            found: Value::Null
        }),
        "NULL is not a String"
    );
    assert_eq!(
        i64::from_value(Value::Text("1".into())),
        Err(DecodeError {
            expected: "i64",
            found: Value::Text("1".into())
        })
    );
    assert_eq!(Option::<String>::from_value(Value::Null), Ok(None));
    assert_eq!(Option::<i32>::from_value(Value::I64(3)), Ok(Some(3)));
    assert!(Option::<i32>::from_value(Value::Text("x".into())).is_err());
}

/// Your `CREATE TABLE` runs on SQLite: the key is generated, NOT NULL is enforced, NULL is accepted where
/// the column is an `Option`.
fn create_table_runs_on_sqlite() {
    let sql = <users::table as Table>::schema().create_table(Dialect::Sqlite);
    let c = rusqlite::Connection::open_in_memory().unwrap();
    c.execute_batch(&sql)
        .unwrap_or_else(|e| panic!("SQLite refuses your statement ({e}):\n   {sql}"));
    c.execute(
        "INSERT INTO users (name, age, email) VALUES ('ada', 36, 'a@x')",
        [],
    )
    .unwrap_or_else(|e| {
        panic!("SQLite refuses a row without a key ({e}): the key must be generated by the database:\n   {sql}")
    });
    c.execute(
        "INSERT INTO users (name, age, email) VALUES ('bob', 41, NULL)",
        [],
    )
    .unwrap_or_else(|e| {
        panic!(
            "SQLite refuses a NULL email ({e}): `email` is an `Option<String>`, so its column takes NULL \
             (no NOT NULL on it):\n   {sql}"
        )
    });
    let ids: Vec<i64> = c
        .prepare("SELECT id FROM users ORDER BY id")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(ids, [1, 2], "the key is generated: {sql}");
    assert!(
        c.execute("INSERT INTO users (name, age) VALUES (NULL, 1)", [])
            .is_err(),
        "name is NOT NULL: {sql}"
    );
}

/// The types refuse what the chapter says they refuse. The two helpers are the shapes stage 2's `eq` and
/// `filter` will have: a value of the column's type, a column of the query's table. And `table!` refuses
/// a key that is not one of the table's columns.
fn types_refuse_mismatches() {
    let prelude = r#"
use tables::{Column, Table, table};
table! { users (id) { id: i64, name: String, age: i32 } }
table! { orders (id) { id: i64, total: f64 } }
fn compare<C: Column>(_column: C, _value: C::Type) {}
fn filter<T: Table, C: Column<Table = T>>(_from: T, _on: C) {}
"#;
    let case = |body: &str| format!("{prelude}\nfn main() {{\n    {body}\n}}\n");
    ui::check(
        &workshop_harness::this_stage!("workshop-01-tables"),
        &[
            ui::Case::compiles(
                "right_types_compile",
                case(
                    "compare(users::age, 36); compare(users::name, String::from(\"ada\")); filter(users::table, users::age); filter(orders::table, orders::total);",
                ),
            ),
            ui::Case::type_error(
                "int_column_with_a_string",
                case("compare(users::age, \"36\");"),
            ),
            ui::Case::type_error(
                "float_column_with_an_int_column_type",
                case("compare(orders::total, 3i64);"),
            ),
            ui::Case::type_error(
                "column_of_another_table",
                case("filter(users::table, orders::total);"),
            ),
            // A misspelt key would otherwise make a table with no key, silently: the macro refuses it.
            ui::Case::name_error(
                "a_key_that_is_not_a_column",
                "use tables::table;\ntable! { people (idd) { id: i64, name: String } }\nfn main() {}\n",
            ),
        ],
    );
}

/// The macro works in a program that imports nothing but the macro itself: it names your crate's items
/// as `$crate::…`, not as whatever happens to be in scope where it is used.
fn the_macro_needs_no_imports() {
    ui::check(
        &workshop_harness::this_stage!("workshop-01-tables"),
        &[ui::Case::compiles(
            "declared_with_nothing_imported",
            r#"
tables::table! {
    /// People.
    users (id) { id: i64, name: String, email: Option<String> }
}
fn main() {
    let schema = <users::table as tables::Table>::schema();
    assert_eq!(schema.columns.len(), 3);
}
"#,
        )],
    );
}

workshop_harness::checks!(
    the_macro_declares_tables,
    the_macro_needs_no_imports,
    types_refuse_mismatches,
    values_round_trip_like_tandem,
    values_decode_what_drivers_return,
    quoting_matches_tandem,
    create_table_matches_tandem,
    create_table_runs_on_sqlite,
);
