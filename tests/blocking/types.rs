//! What values and errors look like: dates and UUIDs, typed loads, one function for database and transaction,
//! the caller's own error type, bad input, text and float comparison rules.

use super::*;

engine_test!(
    /// Dates, times, timestamps (with and without zone) and UUIDs round-trip exactly, NULLs included, and
    /// compare in time order in a filter.
    temporal_and_uuid_values,
    |t: &TestDb| {
        use events::{Event, events as evs};
        let db = &t.db;
        db.create_table(&events::events::table.create_table()).unwrap();
        let repo = db.repository::<Event>();
        let mut want = evs();
        let ids = repo.insert_all(&want).unwrap();
        for (e, id) in want.iter_mut().zip(ids) {
            e.id = id;
        }
        let got: Vec<Event> = db.load(&events::events::table.select_all().order_by(events::events::id.asc())).unwrap();
        assert_eq!(got, want);
        let later: Vec<(uuid::Uuid,)> = db
            .load(
                &events::events::table
                    .select(events::events::uid)
                    .filter(events::events::utc.gt(want[0].utc))
                    .filter(events::events::day.le(want[1].day))
                    .filter(events::events::at.gt(want[0].at)),
            )
            .unwrap();
        assert_eq!(later, [(want[1].uid,)], "compared in time order");
        assert_eq!(repo.get(want[1].id).unwrap().maybe_utc, None);
    }
);

/// One function for both: written against `&impl Executor`, it runs on the database and inside a
/// transaction alike (and there it sees the transaction's uncommitted rows).
fn adults(x: &impl Executor) -> Result<Vec<String>, Error> {
    let rows: Vec<(String,)> = x.load(
        &users::table
            .select(users::name)
            .filter(users::age.ge(18))
            .order_by(users::name.asc()),
    )?;
    Ok(rows.into_iter().map(|(n,)| n).collect())
}

/// The same through a repository over any executor.
fn add_user(x: &impl Executor, name: &str, age: i32) -> Result<i64, Error> {
    x.repository::<User>().insert(&user(name, age))
}

engine_test!(
    /// A function written once against `Executor` runs on a `Database` and inside a `Transaction`.
    one_function_for_both,
    |t: &TestDb| {
        let db = &t.db;
        setup(db);
        add_user(db, "ann", 30).unwrap();
        add_user(db, "kid", 9).unwrap();
        assert_eq!(adults(db).unwrap(), ["ann"]);
        let inside = db
            .transaction(|tx| {
                add_user(tx, "bob", 40)?;
                adults(tx)
            })
            .unwrap();
        assert_eq!(inside, ["ann", "bob"], "the transaction sees its own row");
        let rolled_back = db.transaction(|tx| {
            add_user(tx, "cat", 50)?;
            assert_eq!(adults(tx)?, ["ann", "bob", "cat"]);
            Err::<(), _>(Error::Usage("undo".into()))
        });
        assert!(rolled_back.is_err());
        assert_eq!(adults(db).unwrap(), ["ann", "bob"]);
        // A checked-out connection is an executor too: statements, a plan that needs a transaction
        // (insert_all), and a stream that gives the connection back when it ends.
        let conn = db.checkout().unwrap();
        let ids = conn.repository::<User>().insert_all(&[user("dan", 60), user("eve", 70)]).unwrap();
        assert_eq!(ids.len(), 2);
        assert_eq!(adults(&conn).unwrap(), ["ann", "bob", "dan", "eve"]);
        let streamed: Vec<User> = conn.fetch(&users::table.select_all()).unwrap().collect::<Result<_, _>>().unwrap();
        assert_eq!(streamed.len(), 5, "ann, kid, bob, dan, eve");
        assert_eq!(conn.execute(&users::table.delete().filter(users::age.lt(18))).unwrap(), 1);
    }
);

engine_test!(
    /// Typed loads: tuples of the selected columns' types, `Option` for nullable columns (an `Option` field,
    /// a LEFT JOINed table, SUM), the entity from `select_all()`, inside a transaction too.
    typed_loads,
    |t: &TestDb| {
        let db = &t.db;
        setup(db);
        let users_repo = db.repository::<User>();
        let ann = users_repo.insert(&User { email: Some("ann@x".into()), ..user("ann", 30) }).unwrap();
        users_repo.insert(&user("bob", 40)).unwrap();
        db.repository::<Order>()
            .insert(&Order { id: 0, user_id: ann, code: "A1".into(), total: 2.5, shipped: true })
            .unwrap();

        let q = users::table.select((users::name, users::age, users::email)).order_by(users::id.asc());
        let rows: Vec<(String, i32, Option<String>)> = db.load(&q).unwrap();
        assert_eq!(rows, [("ann".into(), 30, Some("ann@x".into())), ("bob".into(), 40, None)]);

        let everyone: Vec<User> = db.load(&users::table.select_all().order_by(users::id.asc())).unwrap();
        assert_eq!(everyone.iter().map(|u| u.name.as_str()).collect::<Vec<_>>(), ["ann", "bob"]);

        let joined = users::table
            .left_join(orders::table, orders::user_id.eq(users::id))
            .select((users::name, orders::code, orders::total))
            .order_by(users::id.asc());
        let rows: Vec<(String, Option<String>, Option<f64>)> = db.load(&joined).unwrap();
        assert_eq!(rows, [("ann".into(), Some("A1".into()), Some(2.5)), ("bob".into(), None, None)]);

        let counted: Vec<(i64, Option<i64>)> =
            db.load(&users::table.select((count_star(), sum(users::age)))).unwrap();
        assert_eq!(counted, [(2, Some(70))]);
        let none: Vec<(i64, Option<i64>)> =
            db.load(&users::table.filter(users::age.gt(100)).select((count_star(), sum(users::age)))).unwrap();
        assert_eq!(none, [(0, None)], "SUM over no rows is NULL, which is why it loads into an Option");

        let in_tx: Vec<(String,)> = db
            .transaction(|tx| tx.load(&users::table.select(users::name).filter(users::age.lt(35))))
            .unwrap();
        assert_eq!(in_tx, [("ann".to_string(),)]);
    }
);

engine_test!(
    /// A transaction whose closure returns the application's own error type: any `Err` rolls back; only a
    /// retriable database failure (here a real one from the server, turned into the app's error) reruns it.
    own_error_type,
    |t: &TestDb| {
        let db = &t.db;
        setup(db);
        let mut attempts = 0;
        let refused = db.try_transaction(|tx| {
            attempts += 1;
            tx.repository::<User>().insert(&user("refused", 1))?;
            Err::<(), _>(AppError::Rule("no"))
        });
        assert!(matches!(refused, Err(AppError::Rule("no"))), "{refused:?}");
        assert_eq!(attempts, 1, "a rule failure is not retried");
        db.repository::<User>().insert(&user("taken", 1)).unwrap();
        let mut attempts = 0;
        let dup = db.try_transaction(|tx| -> Result<(), AppError> {
            attempts += 1;
            tx.repository::<User>().insert(&user("before-dup", 1))?;
            tx.repository::<User>().insert(&user("taken", 2))?;
            Ok(())
        });
        assert!(
            matches!(&dup, Err(AppError::Db(e)) if e.kind() == Some(DbErrorKind::UniqueViolation)),
            "{dup:?}"
        );
        assert_eq!((attempts, names(db)), (1, vec!["taken".to_string()]), "rolled back, not retried");

        let Some((prepare, fail)) = support::retriable_failure(db.dialect()) else { return };
        if let Some(sql) = prepare {
            db.execute(&raw(sql, vec![])).unwrap();
        }
        let mut attempts = 0;
        let out = db
            .try_transaction(|tx| -> Result<u32, AppError> {
                attempts += 1;
                tx.repository::<User>().insert(&user(&format!("attempt{attempts}"), 1))?;
                if attempts == 1 {
                    tx.execute(&raw(fail, vec![])).map_err(AppError::Db)?;
                }
                Ok(attempts)
            })
            .unwrap();
        assert_eq!(out, 2, "the retriable failure reran the transaction");
        assert_eq!(names(db), ["taken", "attempt2"]);
    }
);

engine_test!(
    /// Empty batches, duplicates, too-long strings, NUL bytes and non-ASCII text: typed errors or exact round trips.
    bad_input,
    |t: &TestDb| {
        let db = &t.db;
        setup(db);
        let repo = db.repository::<User>();
        assert!(matches!(
            repo.batch_insert(&[], &BatchOptions::default()),
            Err(Error::Sql(tandem_sql::Error::EmptyBatch { .. }))
        ));
        repo.insert(&user("same", 1)).unwrap();
        let dup = repo.insert(&user("same", 2)).unwrap_err();
        assert_eq!(dup.kind(), Some(DbErrorKind::UniqueViolation), "{dup}");
        let Error::Database(e) = &dup else { unreachable!("checked above") };
        let expected_constraint = if db.dialect() == Dialect::Sqlite { "users.name" } else { "users_name_key" };
        assert_eq!(e.constraint.as_deref(), Some(expected_constraint), "{e}");
        let long = repo.insert(&user(&"x".repeat(101), 1)).unwrap_err();
        let expected = if db.dialect() == Dialect::Sqlite { DbErrorKind::CheckViolation } else { DbErrorKind::DataTooLong };
        assert_eq!(long.kind(), Some(expected), "{long}");

        let text = "한국어 ✓ émoji 🦀 'quote' \"dq\" back\\slash";
        let id = repo.insert(&user(text, 1)).unwrap();
        assert_eq!(repo.get(id).unwrap().name, text);
        let nul = repo.insert(&user("nul\0byte", 1));
        match db.dialect() {
            Dialect::Postgres => assert_eq!(nul.unwrap_err().kind(), Some(DbErrorKind::InvalidValue)),
            _ => assert_eq!(repo.get(nul.unwrap()).unwrap().name, "nul\0byte"),
        }
        let wrong: Result<Vec<(String, String)>, _> = db.fetch_all(&users::table.select((users::name, users::email)));
        assert!(
            matches!(wrong, Err(Error::Sql(tandem_sql::Error::Decode { ref column, .. })) if column == "email"),
            "NULL into a String names the column: {wrong:?}"
        );
        let mismatch: Result<Vec<(i64,)>, _> = db.fetch_all(&users::table.select(users::name));
        assert!(matches!(mismatch, Err(Error::Sql(tandem_sql::Error::Decode { .. }))));
        let short: Result<Vec<(i64, i64)>, _> = db.fetch_all(&users::table.select(users::id));
        assert!(matches!(short, Err(Error::Sql(tandem_sql::Error::MissingColumn { .. }))));
        assert!(matches!(db.execute(&raw("SELEKT nonsense", vec![])), Err(Error::Database(_))));
        if db.dialect() == Dialect::Sqlite {
            let bad: Result<Vec<(String,)>, _> =
                db.fetch_all(&raw(support::NOT_UTF8_TEXT, vec![]));
            support::check_not_utf8_decode(&bad);
        }
        let stored = if db.dialect() == Dialect::Postgres { 2 } else { 3 };
        assert_eq!(repo.count().unwrap(), stored, "only the rows that succeeded are there");
    }
);

/// The names of the users matching `filter`, sorted.
fn names_where(
    db: &Database,
    filter: impl Expression<Kind = tandem_sql::kind::Bool, Sources = (users::table, ())>,
) -> Vec<String> {
    let mut names: Vec<String> = db
        .fetch_all::<(String,)>(&users::table.select(users::name).filter(filter))
        .unwrap()
        .into_iter()
        .map(|(n,)| n)
        .collect();
    names.sort();
    names
}

engine_test!(
    /// Text means the same on every engine: trailing spaces count (MariaDB tables get a NO PAD binary
    /// collation), LIKE is case-sensitive with `\` as its escape, and `contains` / `starts_with` /
    /// `ends_with` match their text literally. NaN is refused where the engine cannot store it; `-0.0`
    /// reads back as a zero.
    text_and_float_semantics,
    |t: &TestDb| {
        let db = &t.db;
        setup(db);
        let repo = db.repository::<User>();
        for name in ["pad", "pad ", "100%", "100x", "a_b", "axb", "a\\b", "abc", "ABC"] {
            repo.insert(&user(name, 1)).unwrap_or_else(|e| panic!("{name:?}: {e}"));
        }
        assert_eq!(names_where(db, users::name.eq("pad")), ["pad"]);
        assert_eq!(names_where(db, users::name.eq("pad ")), ["pad "]);
        assert_eq!(names_where(db, users::name.like("abc")), ["abc"]);
        assert_eq!(names_where(db, users::name.like("a_b")), ["a\\b", "a_b", "axb"]);
        assert_eq!(names_where(db, users::name.like("a\\_b")), ["a_b"]);
        assert_eq!(names_where(db, users::name.like("100\\%")), ["100%"]);
        assert_eq!(names_where(db, users::name.like("a\\\\b")), ["a\\b"]);
        assert_eq!(names_where(db, users::name.contains("%")), ["100%"]);
        assert_eq!(names_where(db, users::name.contains("_")), ["a_b"]);
        assert_eq!(names_where(db, users::name.contains("\\")), ["a\\b"]);
        assert_eq!(names_where(db, users::name.starts_with("100")), ["100%", "100x"]);
        assert_eq!(names_where(db, users::name.ends_with("b")), ["a\\b", "a_b", "axb"]);
        assert_eq!(names_where(db, users::name.ends_with("pad ")), ["pad "]);
        assert_eq!(names_where(db, users::name.contains("B")), ["ABC"]);

        let order = |total: f64| Order {
            id: 0,
            user_id: 1,
            code: format!("{total}"),
            total,
            shipped: false,
        };
        let orders_repo = db.repository::<Order>();
        let nan = orders_repo.insert(&order(f64::NAN));
        if db.dialect() == Dialect::Postgres {
            let id = nan.unwrap();
            assert!(orders_repo.get(id).unwrap().total.is_nan());
        } else {
            assert!(
                matches!(nan, Err(Error::Sql(tandem_sql::Error::Unsupported { .. }))),
                "{nan:?}"
            );
            let (n,): (i64,) = db.fetch_one(&orders::table.select(count_star())).unwrap();
            assert_eq!(n, 0, "nothing was written");
        }
        let id = orders_repo.insert(&order(-0.0)).unwrap();
        let back = orders_repo.get(id).unwrap().total;
        assert_eq!(back, 0.0);
        assert_eq!(
            back.is_sign_negative(),
            db.dialect() == Dialect::Postgres,
            "PostgreSQL keeps the sign of -0.0; SQLite and MariaDB return 0.0"
        );
    }
);
