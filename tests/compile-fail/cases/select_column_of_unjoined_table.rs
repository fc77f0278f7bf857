// Selecting a column of a table the query does not have does not compile.
use tandem_test_support::schema as support;
use support::{orders, users};
use tandem_sql::prelude::*;

fn main() {
    let _ = users::table.select((users::id, orders::total));
}
