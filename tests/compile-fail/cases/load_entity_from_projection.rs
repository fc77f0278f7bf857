// An entity is loaded from its table's `select_all()`, not from a projection of some of its columns.
use tandem_test_support::schema as support;
use support::{User, users};
use tandem_blocking::Executor;
use tandem_sql::prelude::*;

fn main() {
    let db = tandem_blocking::Database::connect("sqlite::memory:").unwrap();
    let _: Vec<User> = db.load(&users::table.select((users::id, users::name))).unwrap();
}
