// A typed load does not read a column that may be NULL (an `Option` field) into a non-`Option` type.
use tandem_test_support::schema as support;
use support::users;
use tandem_blocking::Executor;
use tandem_sql::prelude::*;

fn main() {
    let db = tandem_blocking::Database::connect("sqlite::memory:").unwrap();
    let _: Vec<(String,)> = db.load(&users::table.select(users::email)).unwrap();
}
