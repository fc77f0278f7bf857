// An UPDATE cannot set a column of another table.
use tandem_test_support::schema as support;
use support::{orders, users};
use tandem_sql::prelude::*;

fn main() {
    let _ = users::table.update().set(orders::total, 1.0);
}
