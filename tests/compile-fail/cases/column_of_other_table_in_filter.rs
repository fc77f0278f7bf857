// A filter on a column of a table that is not in FROM or a JOIN does not compile.
use tandem_test_support::schema as support;
use support::{orders, users};
use tandem_sql::prelude::*;

fn main() {
    let _ = users::table.select_all().filter(orders::total.gt(10.0));
}
