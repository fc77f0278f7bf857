// Every column of a LEFT JOINed table may be NULL: a typed load reads it only into an `Option`.
use tandem_test_support::schema as support;
use support::{orders, users};
use tandem_blocking::Executor;
use tandem_sql::prelude::*;

fn main() {
    let db = tandem_blocking::Database::connect("sqlite::memory:").unwrap();
    let q = users::table
        .left_join(orders::table, orders::user_id.eq(users::id))
        .select((users::name, orders::code));
    let _: Vec<(String, String)> = db.load(&q).unwrap();
}
