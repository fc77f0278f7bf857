//! What values and errors look like: dates and UUIDs, typed loads, one function for database and transaction,
//! the caller's own error type, bad input, text comparison rules.

use super::*;

async fn temporal_and_uuid_values(t: &ADb) {
    use events::events::table as ev;
    use events::{Event, events as evs};
    let db = &t.db;
    db.create_table(&ev.create_table()).await.unwrap();
    let repo = db.repository::<Event>();
    let mut want = evs();
    let ids = repo.insert_all(&want).await.unwrap();
    for (e, id) in want.iter_mut().zip(ids) {
        e.id = id;
    }
    let got: Vec<Event> = db
        .load(&ev.select_all().order_by(events::events::id.asc()))
        .await
        .unwrap();
    assert_eq!(got, want);
    let later: Vec<(uuid::Uuid,)> = db
        .load(
            &ev.select(events::events::uid)
                .filter(events::events::utc.gt(want[0].utc))
                .filter(events::events::day.le(want[1].day))
                .filter(events::events::at.gt(want[0].at)),
        )
        .await
        .unwrap();
    assert_eq!(later, [(want[1].uid,)], "compared in time order");
    assert_eq!(repo.get(want[1].id).await.unwrap().maybe_utc, None);
}

async_engine_test!(
    /// Dates, times, timestamps and UUIDs round-trip exactly, NULLs included, and compare in time order.
    temporal_and_uuid_values
);

/// One function for both: written against `&impl Executor`, it runs on the database and inside a
/// transaction alike.
async fn adults(x: &impl Executor) -> Result<Vec<String>, Error> {
    let rows: Vec<(String,)> = x
        .load(
            &users::table
                .select(users::name)
                .filter(users::age.ge(18))
                .order_by(users::name.asc()),
        )
        .await?;
    Ok(rows.into_iter().map(|(n,)| n).collect())
}

async fn one_function_for_both(t: &ADb) {
    let db = &t.db;
    setup(db).await;
    db.repository::<User>()
        .insert(&user("ann", 30))
        .await
        .unwrap();
    db.repository::<User>()
        .insert(&user("kid", 9))
        .await
        .unwrap();
    assert_eq!(adults(db).await.unwrap(), ["ann"]);
    let tx = db.begin(TxOptions::default()).await.unwrap();
    tx.repository::<User>()
        .insert(&user("bob", 40))
        .await
        .unwrap();
    assert_eq!(adults(&tx).await.unwrap(), ["ann", "bob"]);
    tx.rollback().await.unwrap();
    assert_eq!(adults(db).await.unwrap(), ["ann"]);
    // A generic function's future is Send: it runs in a spawned task.
    let spawned = db.clone();
    let got = tokio::spawn(async move { adults(&spawned).await })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(got, ["ann"]);
    // A checked-out connection is an executor too: statements, a plan that needs a transaction
    // (insert_all), and a stream that gives the connection back when it ends.
    let conn = db.checkout().await.unwrap();
    let ids = conn
        .repository::<User>()
        .insert_all(&[user("dan", 60), user("eve", 70)])
        .await
        .unwrap();
    assert_eq!(ids.len(), 2);
    assert_eq!(adults(&conn).await.unwrap(), ["ann", "dan", "eve"]);
    let streamed: Vec<User> = conn
        .fetch(&users::table.select_all())
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(streamed.len(), 4, "ann, kid, dan, eve");
    assert_eq!(
        conn.execute(&users::table.delete().filter(users::age.lt(18)))
            .await
            .unwrap(),
        1
    );
}

async_engine_test!(
    /// A function written once against `Executor` runs on a `Database`, inside a `Transaction`, on a
    /// checked-out connection, and in a spawned task.
    one_function_for_both
);

async fn typed_loads(t: &ADb) {
    let db = &t.db;
    setup(db).await;
    let users_repo = db.repository::<User>();
    let ann = users_repo
        .insert(&User {
            email: Some("ann@x".into()),
            ..user("ann", 30)
        })
        .await
        .unwrap();
    users_repo.insert(&user("bob", 40)).await.unwrap();
    db.repository::<Order>()
        .insert(&Order {
            id: 0,
            user_id: ann,
            code: "A1".into(),
            total: 2.5,
            shipped: true,
        })
        .await
        .unwrap();
    let q = users::table
        .select((users::name, users::age, users::email))
        .order_by(users::id.asc());
    let rows: Vec<(String, i32, Option<String>)> = db.load(&q).await.unwrap();
    assert_eq!(
        rows,
        [
            ("ann".into(), 30, Some("ann@x".into())),
            ("bob".into(), 40, None)
        ]
    );
    let everyone: Vec<User> = db
        .load(&users::table.select_all().order_by(users::id.asc()))
        .await
        .unwrap();
    assert_eq!(everyone.len(), 2);
    let joined = users::table
        .left_join(orders::table, orders::user_id.eq(users::id))
        .select((users::name, orders::code))
        .order_by(users::id.asc());
    let rows: Vec<(String, Option<String>)> = db.load(&joined).await.unwrap();
    assert_eq!(
        rows,
        [("ann".into(), Some("A1".into())), ("bob".into(), None)]
    );
    let none: Vec<(i64, Option<i64>)> = db
        .load(
            &users::table
                .filter(users::age.gt(100))
                .select((count_star(), sum(users::age))),
        )
        .await
        .unwrap();
    assert_eq!(none, [(0, None)]);
    let in_tx: Vec<(String,)> = db
        .transaction(async |tx| {
            tx.load(&users::table.select(users::name).filter(users::age.lt(35)))
                .await
        })
        .await
        .unwrap();
    assert_eq!(in_tx, [("ann".to_string(),)]);
}

async_engine_test!(
    /// Typed loads: tuples of the selected columns' types, `Option` for nullable ones, the entity from
    /// `select_all()`, inside a transaction too.
    typed_loads
);

async fn own_error_type(t: &ADb) {
    let db = &t.db;
    setup(db).await;
    let mut attempts = 0;
    let refused = db
        .try_transaction(async |tx| {
            attempts += 1;
            tx.repository::<User>().insert(&user("refused", 1)).await?;
            Err::<(), _>(AppError::Rule("no"))
        })
        .await;
    assert!(matches!(refused, Err(AppError::Rule("no"))), "{refused:?}");
    assert_eq!(attempts, 1, "a rule failure is not retried");
    db.repository::<User>()
        .insert(&user("taken", 1))
        .await
        .unwrap();
    let mut attempts = 0;
    let dup = db
        .try_transaction(async |tx| -> Result<(), AppError> {
            attempts += 1;
            tx.repository::<User>()
                .insert(&user("before-dup", 1))
                .await?;
            tx.repository::<User>().insert(&user("taken", 2)).await?;
            Ok(())
        })
        .await;
    assert!(
        matches!(&dup, Err(AppError::Db(e)) if e.kind() == Some(DbErrorKind::UniqueViolation)),
        "{dup:?}"
    );
    assert_eq!(attempts, 1, "not retried");
    assert_eq!(names(db).await, ["taken"], "rolled back");

    let Some((prepare, fail)) = support::retriable_failure(db.dialect()) else {
        return;
    };
    if let Some(sql) = prepare {
        db.execute(&raw(sql, vec![])).await.unwrap();
    }
    let mut attempts = 0;
    let out = db
        .try_transaction(async |tx| -> Result<u32, AppError> {
            attempts += 1;
            tx.repository::<User>()
                .insert(&user(&format!("attempt{attempts}"), 1))
                .await?;
            if attempts == 1 {
                tx.execute(&raw(fail, vec![])).await.map_err(AppError::Db)?;
            }
            Ok(attempts)
        })
        .await
        .unwrap();
    assert_eq!(out, 2, "the retriable failure reran the transaction");
    assert_eq!(names(db).await, ["taken", "attempt2"]);
}

async_engine_test!(
    /// A transaction whose closure returns the application's own error type: any `Err` rolls back; only a
    /// retriable database failure (a real one from the server, turned into the app's error) reruns it.
    own_error_type
);

async fn bad_input(t: &ADb) {
    let db = &t.db;
    setup(db).await;
    let repo = db.repository::<User>();
    assert!(matches!(
        repo.batch_insert(&[], &BatchOptions::default()).await,
        Err(Error::Sql(tandem_sql::Error::EmptyBatch { .. }))
    ));
    repo.insert(&user("same", 1)).await.unwrap();
    let dup = repo.insert(&user("same", 2)).await.unwrap_err();
    assert_eq!(dup.kind(), Some(DbErrorKind::UniqueViolation), "{dup}");
    let Error::Database(e) = &dup else {
        unreachable!("checked above")
    };
    let expected_constraint = if db.dialect() == Dialect::Sqlite {
        "users.name"
    } else {
        "users_name_key"
    };
    assert_eq!(e.constraint.as_deref(), Some(expected_constraint), "{e}");
    let long = repo.insert(&user(&"x".repeat(101), 1)).await.unwrap_err();
    let expected = if db.dialect() == Dialect::Sqlite {
        DbErrorKind::CheckViolation
    } else {
        DbErrorKind::DataTooLong
    };
    assert_eq!(long.kind(), Some(expected), "{long}");
    let text = "한국어 ✓ émoji 🦀 'quote' \"dq\" back\\slash";
    let id = repo.insert(&user(text, 1)).await.unwrap();
    assert_eq!(repo.get(id).await.unwrap().name, text);
    let nul = repo.insert(&user("nul\0byte", 1)).await;
    match db.dialect() {
        Dialect::Postgres => assert_eq!(nul.unwrap_err().kind(), Some(DbErrorKind::InvalidValue)),
        _ => assert_eq!(repo.get(nul.unwrap()).await.unwrap().name, "nul\0byte"),
    }
    let wrong: Result<Vec<(String, String)>, _> = db
        .fetch_all(&users::table.select((users::name, users::email)))
        .await;
    assert!(
        matches!(wrong, Err(Error::Sql(tandem_sql::Error::Decode { ref column, .. })) if column == "email"),
        "{wrong:?}"
    );
    let short: Result<Vec<(i64, i64)>, _> = db.fetch_all(&users::table.select(users::id)).await;
    assert!(matches!(
        short,
        Err(Error::Sql(tandem_sql::Error::MissingColumn { .. }))
    ));
    assert!(matches!(
        db.execute(&raw("SELEKT nonsense", vec![])).await,
        Err(Error::Database(_))
    ));
    if db.dialect() == Dialect::Sqlite {
        let bad: Result<Vec<(String,)>, _> =
            db.fetch_all(&raw(support::NOT_UTF8_TEXT, vec![])).await;
        support::check_not_utf8_decode(&bad);
    }
    let stored = if db.dialect() == Dialect::Postgres {
        2
    } else {
        3
    };
    assert_eq!(repo.count().await.unwrap(), stored);
}

async_engine_test!(
    /// Empty batches, duplicates, too-long strings, NUL bytes and non-ASCII text: typed errors or round trips.
    bad_input
);

/// Tables the async executor creates keep trailing spaces significant (a NO PAD collation on MariaDB), and
/// its LIKE is case-sensitive with `\` as the escape, as on the blocking side.
async fn text_semantics(t: &ADb) {
    let db = &t.db;
    setup(db).await;
    let repo = db.repository::<User>();
    for name in ["pad", "pad ", "Pad", "5%"] {
        repo.insert(&user(name, 1)).await.unwrap();
    }
    let count = |f| async move {
        db.repository::<User>()
            .count_by(Find::all().filter(f))
            .await
            .unwrap()
    };
    assert_eq!(count(users::name.eq("pad")).await, 1);
    assert_eq!(count(users::name.like("pad%")).await, 2);
    assert_eq!(count(users::name.like("5\\%")).await, 1);
    assert_eq!(count(users::name.ends_with("%")).await, 1);
}

async_engine_test!(
    /// Trailing spaces, LIKE case and escapes through the async executor.
    text_semantics
);
