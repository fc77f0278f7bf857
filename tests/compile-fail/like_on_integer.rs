// LIKE applies to text only.
#[path = "../support/mod.rs"]
mod support;
use support::users;
use tandem_sql::prelude::*;

fn main() {
    let _ = users::table.select_all().filter(users::age.like("1%"));
}
