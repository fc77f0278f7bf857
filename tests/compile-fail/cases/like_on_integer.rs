// LIKE applies to text only.
use tandem_test_support::schema as support;
use support::users;
use tandem_sql::prelude::*;

fn main() {
    let _ = users::table.select_all().filter(users::age.like("1%"));
}
