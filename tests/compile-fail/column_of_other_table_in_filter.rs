// A filter on a column of a table that is not in FROM or a JOIN does not compile.
#[path = "../support/mod.rs"]
mod support;
use support::{orders, users};
use tandem_sql::prelude::*;

fn main() {
    let _ = users::table.select_all().filter(orders::total.gt(10.0));
}
