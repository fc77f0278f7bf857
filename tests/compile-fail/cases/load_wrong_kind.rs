// A typed load reads each column into a type of its own kind: an INT column is not an `i64`.
use tandem_test_support::schema as support;
use support::users;
use tandem_blocking::Executor;
use tandem_sql::prelude::*;

fn main() {
    let db = tandem_blocking::Database::connect("sqlite::memory:").unwrap();
    let _: Vec<(String, i64)> = db.load(&users::table.select((users::name, users::age))).unwrap();
}
