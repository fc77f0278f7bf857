//! Exact SQL of every statement kind, for SQLite, PostgreSQL and MySQL side by side.

use tandem_test_support::schema as support;

use support::{orders, sql3, users};
use tandem_sql::prelude::*;
use tandem_sql::{GeneratedKey, Value};

/// Asserts the three renderings (SQLite, PostgreSQL, MySQL) of a statement.
macro_rules! assert_sql {
    ($stmt:expr, $sqlite:expr, $pg:expr, $my:expr $(,)?) => {{
        let [s, p, m] = sql3(&$stmt);
        assert_eq!(s, $sqlite, "sqlite");
        assert_eq!(p, $pg, "postgres");
        assert_eq!(m, $my, "mysql");
    }};
}

/// `SELECT *` and a select list with an alias and DISTINCT.
#[test]
fn select_lists() {
    assert_sql!(
        users::table.select_all(),
        r#"SELECT * FROM "users""#,
        r#"SELECT * FROM "users""#,
        "SELECT * FROM `users`",
    );
    assert_sql!(
        users::table
            .select((users::id, users::name.alias("who")))
            .distinct(),
        r#"SELECT DISTINCT "users"."id", "users"."name" AS "who" FROM "users""#,
        r#"SELECT DISTINCT "users"."id", "users"."name" AS "who" FROM "users""#,
        "SELECT DISTINCT `users`.`id`, `users`.`name` AS `who` FROM `users`",
    );
}

/// Every comparison operator, AND/OR/NOT, IS [NOT] NULL, and the parentheses that fix precedence.
#[test]
fn where_operators() {
    let q = users::table.select(users::id).filter(
        users::age
            .eq(1)
            .and(users::age.ne(2))
            .and(users::age.lt(3))
            .or(users::age
                .le(4)
                .and(users::age.gt(5))
                .and(users::age.ge(6))
                .not())
            .or(users::email.is_null().and(users::name.is_not_null())),
    );
    assert_sql!(
        q,
        r#"SELECT "users"."id" FROM "users" WHERE (("users"."age" = ?) AND ("users"."age" <> ?) AND ("users"."age" < ?)) OR (NOT (("users"."age" <= ?) AND ("users"."age" > ?) AND ("users"."age" >= ?))) OR (("users"."email" IS NULL) AND ("users"."name" IS NOT NULL))"#,
        r#"SELECT "users"."id" FROM "users" WHERE (("users"."age" = $1) AND ("users"."age" <> $2) AND ("users"."age" < $3)) OR (NOT (("users"."age" <= $4) AND ("users"."age" > $5) AND ("users"."age" >= $6))) OR (("users"."email" IS NULL) AND ("users"."name" IS NOT NULL))"#,
        "SELECT `users`.`id` FROM `users` WHERE ((`users`.`age` = ?) AND (`users`.`age` <> ?) AND (`users`.`age` < ?)) OR (NOT ((`users`.`age` <= ?) AND (`users`.`age` > ?) AND (`users`.`age` >= ?))) OR ((`users`.`email` IS NULL) AND (`users`.`name` IS NOT NULL))",
    );
    let r = q.render(Dialect::Postgres).unwrap();
    assert_eq!(r.params, (1..=6).map(Value::I32).collect::<Vec<_>>());
}

/// IN, NOT IN, BETWEEN, NOT BETWEEN, LIKE and NOT LIKE.
#[test]
fn membership_and_patterns() {
    assert_sql!(
        users::table.select(users::id).filter(
            users::age
                .in_list([1, 2])
                .and(users::id.not_in_list([3]))
                .and(users::age.between(10, 20))
                .and(users::age.not_between(13, 14))
                .and(users::name.like("a%"))
                .and(users::name.not_like("%z")),
        ),
        r#"SELECT "users"."id" FROM "users" WHERE ("users"."age" IN (?, ?)) AND ("users"."id" NOT IN (?)) AND ("users"."age" BETWEEN ? AND ?) AND ("users"."age" NOT BETWEEN ? AND ?) AND ("users"."name" LIKE ? ESCAPE '\') AND ("users"."name" NOT LIKE ? ESCAPE '\')"#,
        r#"SELECT "users"."id" FROM "users" WHERE ("users"."age" IN ($1, $2)) AND ("users"."id" NOT IN ($3)) AND ("users"."age" BETWEEN $4 AND $5) AND ("users"."age" NOT BETWEEN $6 AND $7) AND ("users"."name" LIKE $8 ESCAPE '\') AND ("users"."name" NOT LIKE $9 ESCAPE '\')"#,
        "SELECT `users`.`id` FROM `users` WHERE (`users`.`age` IN (?, ?)) AND (`users`.`id` NOT IN (?)) AND (`users`.`age` BETWEEN ? AND ?) AND (`users`.`age` NOT BETWEEN ? AND ?) AND (`users`.`name` LIKE ? ESCAPE '\\\\') AND (`users`.`name` NOT LIKE ? ESCAPE '\\\\')",
    );
}

/// ORDER BY both ways, LIMIT with OFFSET, and OFFSET alone (each engine's "no limit").
#[test]
fn order_limit_offset() {
    assert_sql!(
        users::table
            .select(users::id)
            .order_by(users::age.desc())
            .order_by(users::id.asc())
            .limit(10)
            .offset(5),
        r#"SELECT "users"."id" FROM "users" ORDER BY "users"."age" DESC, "users"."id" ASC LIMIT ? OFFSET ?"#,
        r#"SELECT "users"."id" FROM "users" ORDER BY "users"."age" DESC, "users"."id" ASC LIMIT $1 OFFSET $2"#,
        "SELECT `users`.`id` FROM `users` ORDER BY `users`.`age` DESC, `users`.`id` ASC LIMIT ? OFFSET ?",
    );
    assert_sql!(
        users::table.select(users::id).offset(5),
        r#"SELECT "users"."id" FROM "users" LIMIT -1 OFFSET ?"#,
        r#"SELECT "users"."id" FROM "users" OFFSET $1"#,
        "SELECT `users`.`id` FROM `users` LIMIT 18446744073709551615 OFFSET ?",
    );
}

/// Aggregates with GROUP BY and HAVING; SUM and AVG are cast so every engine returns one type.
#[test]
fn aggregates() {
    assert_sql!(
        users::table
            .select((
                users::age,
                count_star(),
                count(users::email),
                sum(users::id),
                avg(users::age),
                min(users::name),
                max(users::name)
            ))
            .group_by(users::age)
            .having(count_star().gt(1)),
        r#"SELECT "users"."age", COUNT(*), COUNT("users"."email"), CAST(SUM("users"."id") AS INTEGER), CAST(AVG("users"."age") AS REAL), MIN("users"."name"), MAX("users"."name") FROM "users" GROUP BY "users"."age" HAVING COUNT(*) > ?"#,
        r#"SELECT "users"."age", COUNT(*), COUNT("users"."email"), CAST(SUM("users"."id") AS BIGINT), CAST(AVG("users"."age") AS DOUBLE PRECISION), MIN("users"."name"), MAX("users"."name") FROM "users" GROUP BY "users"."age" HAVING COUNT(*) > $1"#,
        "SELECT `users`.`age`, COUNT(*), COUNT(`users`.`email`), CAST(SUM(`users`.`id`) AS SIGNED), CAST(AVG(`users`.`age`) AS DOUBLE), MIN(`users`.`name`), MAX(`users`.`name`) FROM `users` GROUP BY `users`.`age` HAVING COUNT(*) > ?",
    );
    assert_sql!(
        users::table.select((
            count_distinct(users::age),
            upper(users::name),
            length(users::name)
        )),
        r#"SELECT COUNT(DISTINCT "users"."age"), UPPER("users"."name"), CAST(LENGTH("users"."name") AS INTEGER) FROM "users""#,
        r#"SELECT COUNT(DISTINCT "users"."age"), UPPER("users"."name"), CAST(LENGTH("users"."name") AS BIGINT) FROM "users""#,
        "SELECT COUNT(DISTINCT `users`.`age`), UPPER(`users`.`name`), CAST(CHAR_LENGTH(`users`.`name`) AS SIGNED) FROM `users`",
    );
}

/// Inner and left joins; columns of both tables are usable after the join.
#[test]
fn joins() {
    assert_sql!(
        users::table
            .inner_join(orders::table, orders::user_id.eq(users::id))
            .select((users::name, orders::total))
            .filter(orders::shipped.eq(true)),
        r#"SELECT "users"."name", "orders"."total" FROM "users" INNER JOIN "orders" ON "orders"."user_id" = "users"."id" WHERE "orders"."shipped" = ?"#,
        r#"SELECT "users"."name", "orders"."total" FROM "users" INNER JOIN "orders" ON "orders"."user_id" = "users"."id" WHERE "orders"."shipped" = $1"#,
        "SELECT `users`.`name`, `orders`.`total` FROM `users` INNER JOIN `orders` ON `orders`.`user_id` = `users`.`id` WHERE `orders`.`shipped` = ?",
    );
    assert_sql!(
        users::table
            .left_join(orders::table, orders::user_id.eq(users::id))
            .select((users::name, count(orders::id)))
            .group_by(users::name),
        r#"SELECT "users"."name", COUNT("orders"."id") FROM "users" LEFT JOIN "orders" ON "orders"."user_id" = "users"."id" GROUP BY "users"."name""#,
        r#"SELECT "users"."name", COUNT("orders"."id") FROM "users" LEFT JOIN "orders" ON "orders"."user_id" = "users"."id" GROUP BY "users"."name""#,
        "SELECT `users`.`name`, COUNT(`orders`.`id`) FROM `users` LEFT JOIN `orders` ON `orders`.`user_id` = `users`.`id` GROUP BY `users`.`name`",
    );
}

/// Subqueries in IN / NOT IN and correlated EXISTS / NOT EXISTS.
#[test]
fn subqueries() {
    let big_spenders = orders::table
        .select(orders::user_id)
        .filter(orders::total.gt(100.0));
    assert_sql!(
        users::table
            .select(users::name)
            .filter(users::id.in_subquery(big_spenders.clone())),
        r#"SELECT "users"."name" FROM "users" WHERE "users"."id" IN (SELECT "orders"."user_id" FROM "orders" WHERE "orders"."total" > ?)"#,
        r#"SELECT "users"."name" FROM "users" WHERE "users"."id" IN (SELECT "orders"."user_id" FROM "orders" WHERE "orders"."total" > $1)"#,
        "SELECT `users`.`name` FROM `users` WHERE `users`.`id` IN (SELECT `orders`.`user_id` FROM `orders` WHERE `orders`.`total` > ?)",
    );
    assert_sql!(
        users::table.select(users::name).filter(
            users::id
                .not_in_subquery(big_spenders)
                .and(users::age.gt(1))
        ),
        r#"SELECT "users"."name" FROM "users" WHERE ("users"."id" NOT IN (SELECT "orders"."user_id" FROM "orders" WHERE "orders"."total" > ?)) AND ("users"."age" > ?)"#,
        r#"SELECT "users"."name" FROM "users" WHERE ("users"."id" NOT IN (SELECT "orders"."user_id" FROM "orders" WHERE "orders"."total" > $1)) AND ("users"."age" > $2)"#,
        "SELECT `users`.`name` FROM `users` WHERE (`users`.`id` NOT IN (SELECT `orders`.`user_id` FROM `orders` WHERE `orders`.`total` > ?)) AND (`users`.`age` > ?)",
    );
    let has_orders = || {
        orders::table
            .select(orders::id)
            .correlated_with(users::table)
            .filter(orders::user_id.eq(users::id))
    };
    assert_sql!(
        users::table
            .select(users::id)
            .filter(exists(has_orders()).and(not_exists(has_orders()))),
        r#"SELECT "users"."id" FROM "users" WHERE (EXISTS (SELECT "orders"."id" FROM "orders" WHERE "orders"."user_id" = "users"."id")) AND (NOT EXISTS (SELECT "orders"."id" FROM "orders" WHERE "orders"."user_id" = "users"."id"))"#,
        r#"SELECT "users"."id" FROM "users" WHERE (EXISTS (SELECT "orders"."id" FROM "orders" WHERE "orders"."user_id" = "users"."id")) AND (NOT EXISTS (SELECT "orders"."id" FROM "orders" WHERE "orders"."user_id" = "users"."id"))"#,
        "SELECT `users`.`id` FROM `users` WHERE (EXISTS (SELECT `orders`.`id` FROM `orders` WHERE `orders`.`user_id` = `users`.`id`)) AND (NOT EXISTS (SELECT `orders`.`id` FROM `orders` WHERE `orders`.`user_id` = `users`.`id`))",
    );
}

/// One-row and multi-row INSERT; generated keys by RETURNING or, on MySQL, by the last insert id.
#[test]
fn inserts_and_generated_keys() {
    let one = users::table
        .insert()
        .columns((users::name, users::age, users::email))
        .values(("ada", 36, Some("a@x")))
        .returning(users::id);
    assert_sql!(
        one,
        r#"INSERT INTO "users" ("name", "age", "email") VALUES (?, ?, ?) RETURNING "id""#,
        r#"INSERT INTO "users" ("name", "age", "email") VALUES ($1, $2, $3) RETURNING "id""#,
        "INSERT INTO `users` (`name`, `age`, `email`) VALUES (?, ?, ?)",
    );
    assert_eq!(
        one.render(Dialect::Postgres).unwrap().generated_key,
        GeneratedKey::Returning
    );
    assert_eq!(
        one.render(Dialect::MySql).unwrap().generated_key,
        GeneratedKey::LastInsertId
    );

    let users_to_add = [
        support::User {
            id: 0,
            name: "a".into(),
            age: 1,
            email: None,
        },
        support::User {
            id: 0,
            name: "b".into(),
            age: 2,
            email: Some("b@x".into()),
        },
    ];
    let many = users::table.insert().entities(&users_to_add);
    assert_sql!(
        many,
        r#"INSERT INTO "users" ("name", "age", "email") VALUES (?, ?, ?), (?, ?, ?)"#,
        r#"INSERT INTO "users" ("name", "age", "email") VALUES ($1, $2, $3), ($4, $5, $6)"#,
        "INSERT INTO `users` (`name`, `age`, `email`) VALUES (?, ?, ?), (?, ?, ?)",
    );
    assert_eq!(
        many.render(Dialect::Sqlite).unwrap().params,
        vec![
            Value::Text("a".into()),
            Value::I32(1),
            Value::Null(tandem_sql::SqlType::Text),
            Value::Text("b".into()),
            Value::I32(2),
            Value::Text("b@x".into()),
        ]
    );
}

/// Insert-ignore and upsert in each engine's syntax; MySQL's ignore is a no-op update, not INSERT IGNORE.
#[test]
fn ignore_and_upsert() {
    let row = || {
        users::table
            .insert()
            .columns((users::name, users::age))
            .values(("ada", 1))
    };
    assert_sql!(
        row().on_conflict_do_nothing(),
        r#"INSERT INTO "users" ("name", "age") VALUES (?, ?) ON CONFLICT DO NOTHING"#,
        r#"INSERT INTO "users" ("name", "age") VALUES ($1, $2) ON CONFLICT DO NOTHING"#,
        "INSERT INTO `users` (`name`, `age`) VALUES (?, ?) ON DUPLICATE KEY UPDATE `name` = IF((@tandem_duplicates := @tandem_duplicates + 1) > 0, `name`, `name`)",
    );
    assert_sql!(
        row().on_conflict_update(users::name, users::age),
        r#"INSERT INTO "users" ("name", "age") VALUES (?, ?) ON CONFLICT ("name") DO UPDATE SET "age" = EXCLUDED."age""#,
        r#"INSERT INTO "users" ("name", "age") VALUES ($1, $2) ON CONFLICT ("name") DO UPDATE SET "age" = EXCLUDED."age""#,
        "INSERT INTO `users` (`name`, `age`) VALUES (?, ?) ON DUPLICATE KEY UPDATE `age` = VALUES(`age`)",
    );
    assert_sql!(
        row().on_conflict_do_nothing().returning(users::id),
        r#"INSERT INTO "users" ("name", "age") VALUES (?, ?) ON CONFLICT DO NOTHING RETURNING "id""#,
        r#"INSERT INTO "users" ("name", "age") VALUES ($1, $2) ON CONFLICT DO NOTHING RETURNING "id""#,
        "ERR: MySQL cannot express returning keys from an INSERT that ignores or updates conflicts",
    );
}

/// UPDATE with SET expressions over the row's own columns, and DELETE with and without a filter.
#[test]
fn update_and_delete() {
    assert_sql!(
        users::table
            .update()
            .set(users::age, users::age + 1)
            .set(users::email, None::<String>)
            .filter(users::id.eq(7)),
        r#"UPDATE "users" SET "age" = "users"."age" + ?, "email" = ? WHERE "users"."id" = ?"#,
        r#"UPDATE "users" SET "age" = "users"."age" + $1, "email" = $2 WHERE "users"."id" = $3"#,
        "UPDATE `users` SET `age` = `users`.`age` + ?, `email` = ? WHERE `users`.`id` = ?",
    );
    assert_sql!(
        users::table.update().set(users::age, users::age * 2 - 3),
        r#"UPDATE "users" SET "age" = ("users"."age" * ?) - ?"#,
        r#"UPDATE "users" SET "age" = ("users"."age" * $1) - $2"#,
        "UPDATE `users` SET `age` = (`users`.`age` * ?) - ?",
    );
    assert_sql!(
        users::table.delete().filter(users::age.lt(18)),
        r#"DELETE FROM "users" WHERE "users"."age" < ?"#,
        r#"DELETE FROM "users" WHERE "users"."age" < $1"#,
        "DELETE FROM `users` WHERE `users`.`age` < ?",
    );
    assert_sql!(
        users::table.delete(),
        r#"DELETE FROM "users""#,
        r#"DELETE FROM "users""#,
        "DELETE FROM `users`",
    );
}

/// CREATE TABLE with keys, NOT NULL, defaults and indexes (inline on MySQL), CREATE INDEX and DROP TABLE.
#[test]
fn ddl() {
    let render_all = |d| -> Vec<String> {
        orders::table
            .create_table()
            .render_all(d)
            .unwrap()
            .into_iter()
            .map(|r| r.sql)
            .collect()
    };
    assert_eq!(
        render_all(Dialect::Sqlite),
        [
            r#"CREATE TABLE IF NOT EXISTS "orders" ("id" INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT, "user_id" BIGINT NOT NULL, "code" VARCHAR(20) NOT NULL CHECK (length("code") <= 20), "total" DOUBLE NOT NULL, "shipped" BOOLEAN NOT NULL DEFAULT 0)"#,
            r#"CREATE UNIQUE INDEX IF NOT EXISTS "orders_user_id_code_key" ON "orders" ("user_id", "code")"#,
        ]
    );
    assert_eq!(
        render_all(Dialect::Postgres),
        [
            r#"CREATE TABLE IF NOT EXISTS "orders" ("id" BIGINT NOT NULL GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, "user_id" BIGINT NOT NULL, "code" VARCHAR(20) NOT NULL, "total" DOUBLE PRECISION NOT NULL, "shipped" BOOLEAN NOT NULL DEFAULT FALSE)"#,
            r#"CREATE UNIQUE INDEX IF NOT EXISTS "orders_user_id_code_key" ON "orders" ("user_id", "code")"#,
        ]
    );
    assert_eq!(
        render_all(Dialect::MySql),
        [
            "CREATE TABLE IF NOT EXISTS `orders` (`id` BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, `user_id` BIGINT NOT NULL, `code` VARCHAR(20) NOT NULL, `total` DOUBLE NOT NULL, `shipped` BOOLEAN NOT NULL DEFAULT FALSE, UNIQUE KEY `orders_user_id_code_key` (`user_id`, `code`)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_nopad_bin"
        ]
    );
    assert_sql!(
        users::table.drop_table(),
        r#"DROP TABLE IF EXISTS "users""#,
        r#"DROP TABLE IF EXISTS "users""#,
        "DROP TABLE IF EXISTS `users`",
    );
}

/// Quote characters inside identifiers are doubled, so a hostile name stays one identifier.
#[test]
fn identifier_escaping() {
    use tandem_sql::Ident;
    use tandem_sql::ast::{Expr, Select};
    let mut q = Select::from(Ident::new(r#"we"ird`name"#).unwrap());
    q.and_where(
        Expr::column(Ident::new("a\"b").unwrap())
            .binary(tandem_sql::ast::BinaryOp::Eq, Expr::value(1)),
    );
    assert_sql!(
        q,
        r#"SELECT * FROM "we""ird`name" WHERE "a""b" = ?"#,
        r#"SELECT * FROM "we""ird`name" WHERE "a""b" = $1"#,
        "SELECT * FROM `we\"ird``name` WHERE `a\"b` = ?",
    );
}

/// Values never reach the SQL text, even ones that look like SQL.
#[test]
fn values_are_parameters() {
    let evil = "'; DROP TABLE users; --";
    let q = users::table.select(users::id).filter(users::name.eq(evil));
    for d in Dialect::ALL {
        let r = q.render(d).unwrap();
        assert!(!r.sql.contains("DROP"), "{d}: {}", r.sql);
        assert_eq!(r.params, vec![Value::Text(evil.into())]);
    }
}
