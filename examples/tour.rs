//! A tour of the DSL: a few statements rendered for SQLite, PostgreSQL and MySQL, with their parameters.
//!
//! `cargo run --example tour`

use tandem::prelude::*;
use tandem::sql::ast::Statement;

// ANCHOR: declaration
/// A user of the example schema.
#[derive(Table, Debug, Clone, PartialEq)]
#[table(name = "users", index(age))]
pub struct User {
    /// Generated key.
    #[column(primary_key, auto_increment)]
    pub id: i64,
    /// Unique display name.
    #[column(varchar = 100, unique)]
    pub name: String,
    /// Age in years.
    pub age: i32,
    /// Contact address, if known.
    pub email: Option<String>,
}
// ANCHOR_END: declaration

/// An order placed by a user.
#[derive(Table, Debug, Clone, PartialEq)]
#[table(name = "orders")]
pub struct Order {
    /// Generated key.
    #[column(primary_key, auto_increment)]
    pub id: i64,
    /// The user who ordered.
    pub user_id: i64,
    /// Amount.
    pub total: f64,
}

fn show(title: &str, stmt: &dyn Render) {
    println!("── {title}");
    for dialect in Dialect::ALL {
        match stmt.render(dialect) {
            Ok(r) => println!(
                "  {:<10} {}\n  {:<10} {:?}",
                dialect.name(),
                r.sql,
                "",
                r.params
            ),
            Err(e) => println!("  {:<10} error: {e}", dialect.name()),
        }
    }
}

fn main() {
    let create = users::table.create_table();
    println!("── create table users");
    for dialect in Dialect::ALL {
        for r in create
            .render_all(dialect)
            .expect("the example schema is valid")
        {
            println!("  {:<10} {}", dialect.name(), r.sql);
        }
    }

    show(
        "adults with an email, by name",
        &users::table
            .select((users::id, users::name))
            .filter(users::age.ge(18).and(users::email.is_not_null()))
            .order_by(users::name.asc())
            .limit(10)
            .offset(20),
    );
    show(
        "order totals per user",
        &orders::table
            .inner_join(users::table, orders::user_id.eq(users::id))
            .select((users::name, count_star(), sum(orders::total)))
            .group_by(users::name)
            .having(count_star().gt(2)),
    );
    show(
        "users with no orders",
        &users::table.select_all().filter(not_exists(
            orders::table
                .select_all()
                .correlated_with(users::table)
                .filter(orders::user_id.eq(users::id)),
        )),
    );
    show(
        "insert two users, returning their ids",
        &users::table
            .insert()
            .columns((users::name, users::age, users::email))
            .values(("ada", 36, Some("ada@example.com")))
            .values(("bob", 17, None::<String>))
            .returning(users::id),
    );
    show(
        "upsert by name",
        &users::table
            .insert()
            .columns((users::name, users::age))
            .values(("ada", 37))
            .on_conflict_update(users::name, users::age),
    );
    show(
        "birthday",
        &users::table
            .update()
            .set(users::age, users::age + 1)
            .filter(users::name.eq("ada")),
    );
    show(
        "delete minors",
        &Statement::from(
            users::table
                .delete()
                .filter(users::age.lt(18))
                .into_ast()
                .expect("a DELETE always builds"),
        ),
    );
}
