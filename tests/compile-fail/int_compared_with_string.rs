// An `i32` column compared with a string does not compile.
#[path = "../support/mod.rs"]
mod support;
use support::users;
use tandem_sql::prelude::*;

fn main() {
    let _ = users::table.select_all().filter(users::age.eq("eighteen"));
}
