// Arithmetic on a text column does not compile.
use tandem_test_support::schema as support;
use support::users;
use tandem_sql::prelude::*;

fn main() {
    let _ = users::table.update().set(users::name, users::name + 1);
}
