//! The blocking executor and repository against SQLite, PostgreSQL and MariaDB: every repository method,
//! the transaction rules, killed connections, large batches and bad input.

use tandem_test_support::schema as support;
use tandem_test_support::{db, engine_test, events, harness};

use std::panic::{AssertUnwindSafe, catch_unwind};
use tandem_blocking::Executor;

use db::TestDb;
use support::{AppError, Order, User, check_unique_violation_source, orders, users};
use tandem_blocking::{
    BatchOptions, BatchTransaction, Database, DbErrorKind, Error, Find, Isolation, PoolConfig,
    TxOptions,
};
use tandem_sql::prelude::*;
use tandem_sql::{Dialect, Value, raw};

fn user(name: &str, age: i32) -> User {
    User {
        id: 0,
        name: name.into(),
        age,
        email: None,
    }
}

fn setup(db: &Database) {
    db.create_table(&users::table.create_table()).unwrap();
    db.create_table(&orders::table.create_table()).unwrap();
}

fn names(db: &Database) -> Vec<String> {
    db.fetch_all::<(String,)>(&users::table.select(users::name).order_by(users::id.asc()))
        .unwrap()
        .into_iter()
        .map(|(n,)| n)
        .collect()
}

engine_test!(
    /// insert, get, find_by_id, exists, count, update_by_id, delete_by_id, and NotFound.
    crud,
    |t: &TestDb| {
        let db = &t.db;
        setup(db);
        let repo = db.repository::<User>();
        let id = repo.insert(&user("ada", 36)).unwrap();
        let id2 = repo.insert(&User { email: Some("b@x".into()), ..user("bob", 17) }).unwrap();
        assert!(id2 > id, "keys increase: {id}, then {id2}");
        let ada = repo.get(id).unwrap();
        assert_eq!(ada, User { id, ..user("ada", 36) });
        assert_eq!(repo.find_by_id(id + 100).unwrap(), None);
        assert!(matches!(repo.get(id + 100), Err(Error::NotFound { .. })));
        assert!(repo.exists_by_id(id).unwrap());
        assert!(!repo.exists_by_id(id + 100).unwrap());
        assert_eq!(repo.count().unwrap(), 2);
        assert_eq!(repo.update_by_id(&User { age: 37, ..ada.clone() }).unwrap(), 1);
        assert_eq!(repo.get(id).unwrap().age, 37);
        assert_eq!(repo.delete_by_id(id).unwrap(), 1);
        assert_eq!(repo.delete_by_id(id).unwrap(), 0);
        assert_eq!(repo.count().unwrap(), 1);
        assert_eq!(repo.get(id2).unwrap().email.as_deref(), Some("b@x"));
    }
);

engine_test!(
    /// `run_atomically`: a plan's steps in one transaction with the caller's options, whatever the plan's
    /// own atomicity — a step that fails after others succeeded rolls them back.
    plans_run_atomically,
    |t: &TestDb| {
        let db = &t.db;
        setup(db);
        let repo = db.repository::<User>();
        repo.insert(&user("a", 1)).unwrap();
        let plan = |rows: &[User]| {
            // One statement per row, each on its own as far as the plan is concerned.
            let opts = BatchOptions {
                chunk_rows: Some(1),
                transaction: BatchTransaction::PerChunk,
                ..BatchOptions::default()
            };
            tandem_core::repo::batch_insert::<User>(db.dialect(), rows, &opts).unwrap()
        };
        let rows = ["b", "c", "a"].map(|n| user(n, 2));
        let err = db
            .run_atomically(&TxOptions::default(), plan(&rows))
            .unwrap_err();
        assert_eq!(err.kind(), Some(DbErrorKind::UniqueViolation), "{err}");
        assert_eq!(names(db), ["a"], "b and c were rolled back with the failing a");
        let done = db
            .run_atomically(&TxOptions::default(), plan(&rows[..2]))
            .unwrap();
        assert_eq!(done.inserted, 2);
        assert_eq!(names(db), ["a", "b", "c"]);
    }
);

engine_test!(
    /// find_all streams with filter, order, limit and offset; find_by, count_by, exists_by; pages and cursors.
    finders_and_pages,
    |t: &TestDb| {
        let db = &t.db;
        setup(db);
        let repo = db.repository::<User>();
        let people: Vec<User> = (0..25).map(|i| user(&format!("u{i:02}"), i % 5)).collect();
        let ids = repo.insert_all(&people).unwrap();
        assert_eq!(ids.len(), 25);
        // Increasing, and each the key of its own row: not necessarily consecutive (a Galera cluster, or
        // any server with auto_increment_increment > 1, spaces them).
        assert!(ids.windows(2).all(|w| w[1] > w[0]), "ids in insertion order: {ids:?}");
        for (id, p) in ids.iter().zip(&people) {
            assert_eq!(repo.get(*id).unwrap().name, p.name);
        }

        let young: Vec<User> = repo
            .find_all(Find::all().filter(users::age.lt(2)).order_by(users::name.desc()).limit(4).offset(1))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let young_names: Vec<&str> = young.iter().map(|u| u.name.as_str()).collect();
        assert_eq!(young_names, ["u20", "u16", "u15", "u11"]);
        let by = repo.find_by(Find::all().filter(users::age.eq(3))).unwrap().count();
        assert_eq!(by, 5);
        assert_eq!(repo.count_by(Find::all().filter(users::age.ge(3))).unwrap(), 10);
        assert!(repo.exists_by(Find::all().filter(users::name.eq("u07"))).unwrap());
        assert!(!repo.exists_by(Find::all().filter(users::name.eq("nobody"))).unwrap());

        let page = repo.find_page(2, 10, Find::all()).unwrap();
        assert_eq!((page.page, page.size, page.total, page.total_pages()), (2, 10, 25, 3));
        assert_eq!(page.items.len(), 5);
        assert_eq!(page.items[0].name, "u20");
        let filtered = repo.find_page(0, 3, Find::all().filter(users::age.eq(0))).unwrap();
        assert_eq!((filtered.total, filtered.items.len()), (5, 3));

        let mut after = None;
        let mut seen = Vec::new();
        loop {
            let p = repo.find_cursor_page(after, 7, Find::all()).unwrap();
            seen.extend(p.items.iter().map(|u| u.id));
            match p.next {
                Some(k) => after = Some(k),
                None => break,
            }
        }
        assert_eq!(seen, ids);
    }
);

engine_test!(
    /// batch_insert per chunk and per call, ignore duplicates, returned ids, upsert, update_all and deletes.
    batches_and_bulk_changes,
    |t: &TestDb| {
        let db = &t.db;
        setup(db);
        let repo = db.repository::<User>();
        let first: Vec<User> = (0..2_500).map(|i| user(&format!("n{i}"), i)).collect();
        let r = repo.batch_insert(&first, &BatchOptions { return_ids: true, ..BatchOptions::default() }).unwrap();
        assert_eq!(r.inserted, 2_500);
        assert_eq!(r.ids.len(), 2_500);
        assert!(r.ids.windows(2).all(|w| w[1] > w[0]));
        for k in [0, 1, 1_249, 2_499] {
            assert_eq!(repo.get(r.ids[k]).unwrap().name, first[k].name);
        }

        let again: Vec<User> = (2_400..2_600).map(|i| user(&format!("n{i}"), -1)).collect();
        let dup = repo.batch_insert(&again, &BatchOptions::default()).unwrap_err();
        assert_eq!(dup.kind(), Some(DbErrorKind::UniqueViolation), "{dup}");
        check_unique_violation_source(db.dialect(), &dup);
        assert_eq!(repo.count().unwrap(), 2_500, "the failing chunk left nothing behind");
        let ignored = repo
            .batch_insert(&again, &BatchOptions { ignore_duplicates: true, ..BatchOptions::default() })
            .unwrap();
        assert_eq!(ignored.inserted, 100);
        assert_eq!(repo.count().unwrap(), 2_600);

        let whole = BatchOptions { transaction: BatchTransaction::PerCall, ..BatchOptions::default() };
        let more: Vec<User> = (0..3).map(|i| user(&format!("m{i}"), 1)).collect();
        assert_eq!(repo.batch_insert(&more, &whole).unwrap().inserted, 3);

        let upserts = vec![user("n0", 500), user("fresh", 501)];
        assert_eq!(repo.batch_upsert(&upserts, users::name).unwrap(), 2);
        assert_eq!(db.fetch_one::<(i32,)>(&users::table.select(users::age).filter(users::name.eq("n0"))).unwrap(), (500,));
        assert_eq!(repo.count().unwrap(), 2_604);

        let changed = repo.update_all(|u| u.set(users::age, users::age + 1000).filter(users::age.between(10, 19))).unwrap();
        assert_eq!(changed, 10);
        let ids: Vec<i64> = r.ids[..100].to_vec();
        assert_eq!(repo.delete_all_by_ids(&ids).unwrap(), 100, "an upsert keeps the row's id");
        assert_eq!(repo.delete_all_by_ids(&[]).unwrap(), 0);
        // n1000..n2499; the ten raised above 1000 were among the first 100 ids, already deleted.
        assert_eq!(repo.delete_by(Find::all().filter(users::age.ge(1000))).unwrap(), 1_500);
        assert_eq!(repo.delete_all().unwrap(), 2_604 - 100 - 1_500);
        assert_eq!(repo.count().unwrap(), 0);
    }
);

engine_test!(
    /// Ignoring duplicates and returning keys together: the keys are those of the rows kept, in insertion
    /// order — on MySQL too, where a multi-row statement that skipped rows cannot tell them.
    ids_of_kept_rows_when_duplicates_are_skipped,
    |t: &TestDb| {
        let db = &t.db;
        setup(db);
        let repo = db.repository::<User>();
        let first: Vec<User> = (0..10).map(|i| user(&format!("d{i}"), i)).collect();
        repo.batch_insert(&first, &BatchOptions::default()).unwrap();
        let mixed: Vec<User> = (5..15).map(|i| user(&format!("d{i}"), i)).collect();
        let opts = BatchOptions { ignore_duplicates: true, return_ids: true, chunk_rows: Some(4), ..BatchOptions::default() };
        let r = repo.batch_insert(&mixed, &opts).unwrap();
        assert_eq!(r.inserted, 5);
        let kept: Vec<i64> = (10..15)
            .map(|i| db.fetch_one::<(i64,)>(&users::table.select(users::id).filter(users::name.eq(format!("d{i}")))).unwrap().0)
            .collect();
        assert_eq!(r.ids, kept);
    }
);

engine_test!(
    /// More rows than one statement may bind are split and stored exactly once.
    batch_beyond_parameter_limit,
    |t: &TestDb| {
        let db = &t.db;
        setup(db);
        let repo = db.repository::<Order>();
        let rows: Vec<Order> = (0..70_000)
            .map(|i| Order { id: 0, user_id: i, code: format!("c{i}"), total: 1.0, shipped: false })
            .collect();
        let opts = BatchOptions { chunk_rows: None, allow_copy: false, ..BatchOptions::default() };
        assert_eq!(repo.batch_insert(&rows, &opts).unwrap().inserted, 70_000);
        let (n, distinct, sum): (i64, i64, i64) = db
            .fetch_one(&orders::table.select((count_star(), count_distinct(orders::user_id), sum(orders::user_id))))
            .unwrap();
        assert_eq!((n, distinct, sum), (70_000, 70_000, (0..70_000i64).sum()));
    }
);

engine_test!(
    /// Commit on Ok; rollback on Err and on panic leaves no row; a rolled-back savepoint keeps the outer work.
    transaction_rules,
    |t: &TestDb| {
        let db = &t.db;
        setup(db);
        db.transaction(|tx| tx.repository::<User>().insert(&user("kept", 1)).map(|_| ())).unwrap();
        let err = db
            .transaction(|tx| {
                tx.repository::<User>().insert(&user("gone", 2))?;
                Err::<(), _>(Error::Usage("no".into()))
            })
            .unwrap_err();
        assert!(matches!(err, Error::Usage(_)));
        let panicked = catch_unwind(AssertUnwindSafe(|| {
            db.transaction(|tx| {
                tx.repository::<User>().insert(&user("panic", 3))?;
                panic!("boom");
                #[allow(unreachable_code)]
                Ok::<_, Error>(())
            })
        }));
        assert!(panicked.is_err());
        assert_eq!(names(db), ["kept"]);

        db.transaction(|tx| {
            let repo = tx.repository::<User>();
            repo.insert(&user("outer", 4))?;
            let inner = tx.transaction(|tx| {
                tx.repository::<User>().insert(&user("inner", 5))?;
                Err::<(), _>(Error::Usage("undo the savepoint".into()))
            });
            assert!(inner.is_err());
            tx.transaction(|tx| tx.repository::<User>().insert(&user("inner-ok", 6)))?;
            Ok::<_, Error>(())
        })
        .unwrap();
        assert_eq!(names(db), ["kept", "outer", "inner-ok"]);
    }
);

engine_test!(
    /// Isolation and read-only options reach the engine; a retriable error reruns the whole transaction, up
    /// to the bound.
    transaction_options_and_retry,
    |t: &TestDb| {
        let db = &t.db;
        setup(db);
        let ro = TxOptions::default().isolation(Isolation::Serializable).read_only();
        let err = db.transaction_with(ro.clone(), |tx| tx.repository::<User>().insert(&user("x", 1))).unwrap_err();
        assert!(matches!(err, Error::Database(_)), "a write in a read-only transaction fails: {err}");
        assert_eq!(db.transaction_with(ro, |tx| tx.repository::<User>().count()).unwrap(), 0);

        let deadlock = || {
            Error::Database(tandem_blocking::DbError {
                dialect: db.dialect(),
                kind: DbErrorKind::Deadlock,
                code: None,
                message: "simulated".into(),
                constraint: None,
                source: None,
            })
        };
        let mut attempts = 0;
        let out = db
            .transaction(|tx| {
                attempts += 1;
                tx.repository::<User>().insert(&user(&format!("try{attempts}"), attempts))?;
                if attempts < 3 { Err(deadlock()) } else { Ok(attempts) }
            })
            .unwrap();
        assert_eq!(out, 3);
        assert_eq!(names(db), ["try3"], "failed attempts were rolled back");
        let mut tries = 0;
        let err = db
            .transaction_with(TxOptions::default().max_attempts(2), |_| {
                tries += 1;
                Err::<(), _>(deadlock())
            })
            .unwrap_err();
        assert_eq!((tries, err.kind()), (2, Some(DbErrorKind::Deadlock)));
        let mut once = 0;
        let _ = db.transaction(|_| {
            once += 1;
            Err::<(), _>(Error::Usage("not retriable".into()))
        });
        assert_eq!(once, 1);
    }
);

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
        let refused = db.transaction(|tx| {
            attempts += 1;
            tx.repository::<User>().insert(&user("refused", 1))?;
            Err::<(), _>(AppError::Rule("no"))
        });
        assert!(matches!(refused, Err(AppError::Rule("no"))), "{refused:?}");
        assert_eq!(attempts, 1, "a rule failure is not retried");
        db.repository::<User>().insert(&user("taken", 1)).unwrap();
        let mut attempts = 0;
        let dup = db.transaction(|tx| -> Result<(), AppError> {
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
            .transaction(|tx| -> Result<u32, AppError> {
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
        let stored = if db.dialect() == Dialect::Postgres { 2 } else { 3 };
        assert_eq!(repo.count().unwrap(), stored, "only the rows that succeeded are there");
    }
);

engine_test!(
    /// Dropping a stream halfway gives its connection back, usable; streams inside a transaction work too.
    streams,
    |t: &TestDb| {
        let db = &t.db;
        setup(db);
        let repo = db.repository::<User>();
        let rows: Vec<User> = (0..3_000).map(|i| user(&format!("s{i}"), i)).collect();
        repo.batch_insert(&rows, &BatchOptions::default()).unwrap();
        let mut stream = repo.find_all(Find::all().order_by(users::id.asc())).unwrap();
        let first: Vec<User> = stream.by_ref().take(10).collect::<Result<_, _>>().unwrap();
        assert_eq!(first[9].name, "s9");
        drop(stream);
        let (open, idle) = db.pool_state();
        assert_eq!(open, idle, "the stream's connection is back in the pool");
        assert_eq!(repo.count().unwrap(), 3_000);
        let n = db
            .transaction(|tx| {
                let r = tx.repository::<User>();
                let mut s = r.find_all(Find::all())?;
                assert!(matches!(r.count(), Err(Error::Usage(_))), "the connection is busy with the stream");
                let mut n = 0;
                for u in s.by_ref() {
                    u?;
                    n += 1;
                }
                drop(s);
                assert_eq!(r.count()?, 3_000);
                Ok::<_, Error>(n)
            })
            .unwrap();
        assert_eq!(n, 3_000);
    }
);

/// Kills the backend of an open transaction from another connection, then checks the rules: the error is
/// connection-lost, the transaction's rows are absent, and the same `Database` works on the next call.
fn killed_mid_transaction(t: &TestDb) {
    let db = &t.db;
    let admin = t.admin().expect("server engines have an admin connection");
    setup(db);
    let (who, kill): (&str, fn(i64) -> String) = match db.dialect() {
        Dialect::Postgres => ("SELECT CAST(pg_backend_pid() AS BIGINT)", |id| {
            format!("SELECT pg_terminate_backend({id})")
        }),
        _ => ("SELECT CONNECTION_ID()", |id| format!("KILL {id}")),
    };
    let err = db
        .transaction_with(TxOptions::default().max_attempts(1), |tx| {
            tx.repository::<User>().insert(&user("doomed", 1))?;
            let (id,): (i64,) = tx.fetch_one(&raw(who, vec![]))?;
            admin.execute(&raw(kill(id), vec![]))?;
            std::thread::sleep(std::time::Duration::from_millis(100));
            tx.repository::<User>().insert(&user("doomed-too", 2))?;
            Ok::<_, Error>(())
        })
        .unwrap_err();
    assert_eq!(err.kind(), Some(DbErrorKind::ConnectionLost), "{err}");
    assert_eq!(
        db.repository::<User>().count().unwrap(),
        0,
        "the killed transaction left nothing"
    );
    db.repository::<User>().insert(&user("after", 3)).unwrap();
    assert_eq!(names(db), ["after"]);
}

/// `pg_terminate_backend` mid-transaction.
fn killed_mid_transaction_postgres() {
    let t = db::open(Dialect::Postgres, "killed", PoolConfig::default());
    killed_mid_transaction(&t);
}

/// MariaDB `KILL` mid-transaction.
fn killed_mid_transaction_mysql() {
    let t = db::open(Dialect::MySql, "killed", PoolConfig::default());
    killed_mid_transaction(&t);
}

/// On a server whose keys are `auto_increment_increment` apart (a Galera node sets it to the cluster's
/// size; here the session is set to 3), a multi-row insert reports the keys the server gave, not counted
/// up by one: each returned id reads back its own row.
fn keys_follow_auto_increment_increment_mysql() {
    let config = PoolConfig {
        max_size: 1,
        ..PoolConfig::default()
    };
    let t = db::open(Dialect::MySql, "increment", config);
    let db = &t.db;
    setup(db);
    db.execute(&raw("SET SESSION auto_increment_increment = 3", vec![]))
        .unwrap();
    let repo = db.repository::<User>();
    let rows: Vec<User> = (0..25).map(|i| user(&format!("k{i}"), i)).collect();
    let opts = BatchOptions {
        return_ids: true,
        chunk_rows: Some(10),
        ..BatchOptions::default()
    };
    let r = repo.batch_insert(&rows, &opts).unwrap();
    assert_eq!(r.ids.len(), 25);
    assert!(
        r.ids.windows(2).take(9).all(|w| w[1] == w[0] + 3),
        "the session's keys are 3 apart: {:?}",
        r.ids
    );
    for (id, row) in r.ids.iter().zip(&rows) {
        assert_eq!(repo.get(*id).unwrap().name, row.name, "the row of key {id}");
    }
    let ids = repo
        .insert_all(
            &rows[..3]
                .iter()
                .map(|u| user(&format!("again-{}", u.name), 1))
                .collect::<Vec<_>>(),
        )
        .unwrap();
    for id in ids {
        assert!(
            repo.get(id).unwrap().name.starts_with("again-"),
            "insert_all's key {id}"
        );
    }
}

/// An async service runs a blocking transaction on tokio's blocking pool and gets its result back.
async fn bridge_from_async() {
    let t = db::open(Dialect::Sqlite, "bridge", PoolConfig::default());
    setup(&t.db);
    let id =
        t.db.transaction_blocking(|tx| tx.repository::<User>().insert(&user("from-async", 1)))
            .await
            .unwrap();
    let found =
        t.db.run_blocking(move |db| db.repository::<User>().get(id))
            .await
            .unwrap();
    assert_eq!(found.name, "from-async");
    let err =
        t.db.run_blocking(|_| -> tandem_blocking::Result<()> { panic!("inside") })
            .await
            .unwrap_err();
    assert!(matches!(err, Error::Panicked { ref message } if message == "inside"));
}

/// An unreachable server is a typed connection error at connect time, naming the URL without its password.
fn unreachable_server() {
    let err = Database::connect_with(
        "postgres://u:secret@127.0.0.1:1/none",
        PoolConfig {
            acquire_timeout: std::time::Duration::from_millis(300),
            ..PoolConfig::default()
        },
    )
    .unwrap_err();
    assert_eq!(err.kind(), Some(DbErrorKind::ConnectionLost), "{err}");
    assert!(!err.to_string().contains("secret"));
    assert!(matches!(
        Database::connect("oracle://x"),
        Err(Error::InvalidUrl { .. })
    ));
}

/// Creating and dropping declared tables, twice over (IF [NOT] EXISTS).
fn schema_helpers() {
    let t = db::open(Dialect::Sqlite, "schema", PoolConfig::default());
    setup(&t.db);
    setup(&t.db);
    let tables = |db: &Database| -> Vec<String> {
        db.fetch_all::<(String,)>(&raw("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name", vec![]))
            .unwrap()
            .into_iter()
            .map(|(n,)| n)
            .collect()
    };
    assert_eq!(tables(&t.db), ["orders", "users"]);
    let schemas = [
        <users::table as tandem_sql::Table>::schema(),
        <orders::table as tandem_sql::Table>::schema(),
    ];
    t.db.drop_tables(&schemas).unwrap();
    t.db.drop_tables(&schemas).unwrap();
    assert!(tables(&t.db).is_empty());
    let _ = Value::I64(0);
}

/// On PostgreSQL a batch in one transaction goes through binary COPY, and stores exactly the rows given.
fn copy_path_postgres() {
    let t = db::open(Dialect::Postgres, "copy", PoolConfig::default());
    setup(&t.db);
    let repo = t.db.repository::<Order>();
    let rows: Vec<Order> = (0..5_000)
        .map(|i| Order {
            id: 0,
            user_id: i,
            code: format!("c{i}"),
            total: f64::from(i as i32) / 4.0,
            shipped: i % 2 == 0,
        })
        .collect();
    let opts = BatchOptions {
        transaction: BatchTransaction::PerCall,
        ..BatchOptions::default()
    };
    assert_eq!(repo.batch_insert(&rows, &opts).unwrap().inserted, 5_000);
    let back: Vec<Order> = repo
        .find_all(Find::all().order_by(orders::id.asc()))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(back.len(), 5_000);
    for (got, want) in back.iter().zip(&rows) {
        assert_eq!(
            (got.user_id, &got.code, got.total, got.shipped),
            (want.user_id, &want.code, want.total, want.shipped)
        );
    }
    // A duplicate inside a COPY fails the whole call: nothing of it stays.
    let dup = vec![rows[0].clone(), rows[0].clone()];
    let err = repo.batch_insert(&dup, &opts).unwrap_err();
    assert_eq!(err.kind(), Some(DbErrorKind::UniqueViolation), "{err}");
    assert_eq!(repo.count().unwrap(), 5_000);
}

/// Two transactions that really conflict: one fails with a retriable error (PostgreSQL serialization failure,
/// MariaDB deadlock) and is rerun by the retry rule; both end up committed.
fn real_conflict_is_retried(t: &TestDb) {
    use std::sync::{Arc, Barrier};
    let db = t.db.clone();
    setup(&db);
    let repo = db.repository::<User>();
    repo.insert(&user("a", 0)).unwrap();
    repo.insert(&user("b", 0)).unwrap();
    let barrier = Arc::new(Barrier::new(2));
    let attempts = Arc::new(std::sync::atomic::AtomicU32::new(0));
    let worker = |first: &'static str, second: &'static str| {
        let (db, barrier, attempts) = (db.clone(), barrier.clone(), attempts.clone());
        std::thread::spawn(move || {
            let mut mine = 0;
            db.transaction_with(
                TxOptions::default()
                    .isolation(Isolation::Serializable)
                    .max_attempts(5),
                |tx| {
                    mine += 1;
                    attempts.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    let r = tx.repository::<User>();
                    // Both read, then write what the other read: a write skew (PostgreSQL) / lock cycle (MariaDB).
                    r.update_all(|u| {
                        u.set(users::age, users::age + 1)
                            .filter(users::name.eq(first))
                    })?;
                    if mine == 1 {
                        barrier.wait();
                    }
                    r.update_all(|u| {
                        u.set(users::age, users::age + 1)
                            .filter(users::name.eq(second))
                    })?;
                    Ok::<_, Error>(())
                },
            )
        })
    };
    let one = worker("a", "b");
    let two = worker("b", "a");
    one.join().unwrap().unwrap();
    two.join().unwrap().unwrap();
    let ages: Vec<(i32,)> = db
        .fetch_all(&users::table.select(users::age).order_by(users::name.asc()))
        .unwrap();
    assert_eq!(ages, [(2,), (2,)], "both transactions committed once each");
    assert!(
        attempts.load(std::sync::atomic::Ordering::SeqCst) >= 3,
        "one transaction was retried"
    );
}

/// PostgreSQL: a serialization failure or deadlock is retried.
fn real_conflict_is_retried_postgres() {
    let t = db::open(Dialect::Postgres, "conflict", PoolConfig::default());
    real_conflict_is_retried(&t);
}

/// MariaDB: a deadlock is retried.
fn real_conflict_is_retried_mysql() {
    let t = db::open(Dialect::MySql, "conflict", PoolConfig::default());
    real_conflict_is_retried(&t);
}

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

fn main() {
    harness::main(
        [
            harness::engines("crud", crud::run),
            harness::engines("plans_run_atomically", plans_run_atomically::run),
            harness::engines("finders_and_pages", finders_and_pages::run),
            harness::engines("batches_and_bulk_changes", batches_and_bulk_changes::run),
            harness::engines(
                "ids_of_kept_rows_when_duplicates_are_skipped",
                ids_of_kept_rows_when_duplicates_are_skipped::run,
            ),
            harness::engines(
                "batch_beyond_parameter_limit",
                batch_beyond_parameter_limit::run,
            ),
            harness::engines("transaction_rules", transaction_rules::run),
            harness::engines(
                "transaction_options_and_retry",
                transaction_options_and_retry::run,
            ),
            harness::engines("own_error_type", own_error_type::run),
            harness::engines("typed_loads", typed_loads::run),
            harness::engines("one_function_for_both", one_function_for_both::run),
            harness::engines("temporal_and_uuid_values", temporal_and_uuid_values::run),
            harness::engines("bad_input", bad_input::run),
            harness::engines("streams", streams::run),
            vec![
                harness::Case::new(
                    "killed_mid_transaction_postgres",
                    killed_mid_transaction_postgres,
                )
                .needs(&[Dialect::Postgres]),
            ],
            vec![
                harness::Case::new("killed_mid_transaction_mysql", killed_mid_transaction_mysql)
                    .needs(&[Dialect::MySql]),
            ],
            vec![
                harness::Case::new(
                    "keys_follow_auto_increment_increment_mysql",
                    keys_follow_auto_increment_increment_mysql,
                )
                .needs(&[Dialect::MySql]),
            ],
            vec![harness::Case::new("bridge_from_async", move || {
                harness::block_on(bridge_from_async())
            })],
            vec![harness::Case::new("unreachable_server", unreachable_server)],
            vec![harness::Case::new("schema_helpers", schema_helpers)],
            vec![
                harness::Case::new("copy_path_postgres", copy_path_postgres)
                    .needs(&[Dialect::Postgres]),
            ],
            vec![
                harness::Case::new(
                    "real_conflict_is_retried_postgres",
                    real_conflict_is_retried_postgres,
                )
                .needs(&[Dialect::Postgres]),
            ],
            vec![
                harness::Case::new(
                    "real_conflict_is_retried_mysql",
                    real_conflict_is_retried_mysql,
                )
                .needs(&[Dialect::MySql]),
            ],
            harness::engines("text_and_float_semantics", text_and_float_semantics::run),
        ]
        .into_iter()
        .flatten()
        .collect(),
    );
}
