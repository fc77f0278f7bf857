// An `i32` column compared with a string does not compile.
use tandem_test_support::schema as support;
use support::users;
use tandem_sql::prelude::*;

fn main() {
    let _ = users::table.select_all().filter(users::age.eq("eighteen"));
}
