// Arithmetic on a text column does not compile.
#[path = "../support/mod.rs"]
mod support;
use support::users;
use tandem_sql::prelude::*;

fn main() {
    let _ = users::table.update().set(users::name, users::name + 1);
}
