// SUM over no rows is NULL: a computed column other than COUNT loads only into an `Option`.
use tandem_test_support::schema as support;
use support::users;
use tandem_async::Executor;
use tandem_sql::prelude::*;

fn main() {
    let db = tandem_async::Database::connect("sqlite::memory:");
    let _ = async {
        let db = db.await.unwrap();
        let _: Vec<(i64,)> = db.load(&users::table.select(sum(users::age))).await.unwrap();
    };
}
