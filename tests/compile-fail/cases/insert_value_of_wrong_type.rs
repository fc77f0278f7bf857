// An INSERT row whose values do not match the columns' types does not compile.
use tandem_test_support::schema as support;
use support::users;
use tandem_sql::prelude::*;

fn main() {
    let _ = users::table.insert().columns((users::name, users::age)).values((36, "ada"));
}
