// The playground's examples. Each query between `ANCHOR` lines is offered in the playground's menu and
// included in the book; `tests/snippets.rs` compiles this file against the real typed DSL and checks that
// the playground renders each query exactly as the compiled crate does.

/// Every example, as the compiled DSL builds it (`stmt` turns each builder into its statement).
pub fn examples() -> Vec<(&'static str, Statement)> {
    vec![
        (
            "all_users",
            stmt(
                // ANCHOR: all_users
                users::table.select_all()
                // ANCHOR_END: all_users
            ),
        ),
        (
            "create_users",
            stmt(
                // ANCHOR: create_users
                users::table.create_table()
                // ANCHOR_END: create_users
            ),
        ),
        (
            "adults",
            stmt(
                // ANCHOR: adults
                users::table
                    .select((users::id, users::name))
                    .filter(users::age.ge(18).and(users::email.is_not_null()))
                    .order_by(users::name.asc())
                    .limit(10)
                // ANCHOR_END: adults
            ),
        ),
        (
            "no_email",
            stmt(
                // ANCHOR: no_email
                users::table
                    .select((users::name, users::email))
                    .filter(users::email.is_null().or(users::email.like("%@example.org")))
                // ANCHOR_END: no_email
            ),
        ),
        (
            "in_between",
            stmt(
                // ANCHOR: in_between
                users::table
                    .select((users::name, users::age))
                    .filter(users::age.between(18, 40).and(users::name.in_list(["ada", "cy", "dee"])))
                    .order_by(users::age.desc())
                // ANCHOR_END: in_between
            ),
        ),
        (
            "aggregates",
            stmt(
                // ANCHOR: aggregates
                users::table.select((count_star(), avg(users::age), max(users::age)))
                // ANCHOR_END: aggregates
            ),
        ),
        (
            "totals_per_user",
            stmt(
                // ANCHOR: totals_per_user
                orders::table
                    .inner_join(users::table, orders::user_id.eq(users::id))
                    .select((users::name, count_star(), sum(orders::total)))
                    .group_by(users::name)
                    .having(count_star().gt(1))
                // ANCHOR_END: totals_per_user
            ),
        ),
        (
            "left_join",
            stmt(
                // ANCHOR: left_join
                users::table
                    .left_join(orders::table, orders::user_id.eq(users::id))
                    .select((users::name, count(orders::id).alias("orders")))
                    .group_by(users::name)
                    .order_by(users::name.asc())
                // ANCHOR_END: left_join
            ),
        ),
        (
            "no_orders",
            stmt(
                // ANCHOR: no_orders
                users::table.select_all().filter(not_exists(
                    orders::table
                        .select_all()
                        .correlated_with(users::table)
                        .filter(orders::user_id.eq(users::id)),
                ))
                // ANCHOR_END: no_orders
            ),
        ),
        (
            "big_spenders",
            stmt(
                // ANCHOR: big_spenders
                users::table.select(users::name).filter(
                    users::id.in_subquery(
                        orders::table
                            .select(orders::user_id)
                            .filter(orders::total.gt(100.0)),
                    ),
                )
                // ANCHOR_END: big_spenders
            ),
        ),
        (
            "insert_returning",
            stmt(
                // ANCHOR: insert_returning
                users::table
                    .insert()
                    .columns((users::name, users::age, users::email))
                    .values(("eve", 29, Some("eve@example.com")))
                    .values(("fay", 17, None::<String>))
                    .returning(users::id)
                // ANCHOR_END: insert_returning
            ),
        ),
        (
            "upsert",
            stmt(
                // ANCHOR: upsert
                users::table
                    .insert()
                    .columns((users::name, users::age))
                    .values(("ada", 37))
                    .on_conflict_update(users::name, users::age)
                // ANCHOR_END: upsert
            ),
        ),
        (
            "birthday",
            stmt(
                // ANCHOR: birthday
                users::table
                    .update()
                    .set(users::age, users::age + 1)
                    .filter(users::name.eq("ada"))
                // ANCHOR_END: birthday
            ),
        ),
        (
            "delete_minors",
            stmt(
                // ANCHOR: delete_minors
                users::table.delete().filter(users::age.lt(18))
                // ANCHOR_END: delete_minors
            ),
        ),
    ]
}
