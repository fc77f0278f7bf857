//! The repository on every engine: CRUD, atomic plans, finders and pages, batches and their keys, streams,
//! declared tables.

use super::*;
use tandem_test_support::statements as stmts;

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
        // Writing the values already there still counts the row (MySQL: CLIENT_FOUND_ROWS).
        assert_eq!(repo.update_by_id(&User { age: 37, ..ada.clone() }).unwrap(), 1);
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
                assert!(
                    matches!(
                        r.count(),
                        Err(Error::StreamOpen(tandem_blocking::Holder::Transaction))
                    ),
                    "the connection is held by the stream"
                );
                let mut n = 0;
                for u in s.by_ref() {
                    u?;
                    n += 1;
                }
                drop(s);
                assert_eq!(r.count()?, 3_000);
                Ok(n)
            })
            .unwrap();
        assert_eq!(n, 3_000);
    }
);

/// On a server whose keys are `auto_increment_increment` apart (a Galera node sets it to the cluster's
/// size; here the session is set to 3), a multi-row insert reports the keys the server gave, not counted
/// up by one: each returned id reads back its own row.
pub(crate) fn keys_follow_auto_increment_increment_mysql() {
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

/// Creating and dropping declared tables, twice over (IF [NOT] EXISTS).
pub(crate) fn schema_helpers() {
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
pub(crate) fn copy_path_postgres() {
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

/// tokio-postgres keeps no statements of its own: each connection keeps what it prepared, letting go of
/// the one used least recently past 64 — a statement used between every two of 150 distinct ones stays
/// prepared all along, and each one let go is closed on the server (`pg_prepared_statements`).
pub(crate) fn hot_statements_stay_prepared_postgres() {
    let t = db::open(Dialect::Postgres, "bhot", PoolConfig::default());
    let conn = t.db.checkout().unwrap();
    let prepared =
        || -> Vec<(String, String)> { conn.fetch_all(&stmts::prepared_statement()).unwrap() };
    let (hot, answer) = stmts::interleaved().next().unwrap();
    assert_eq!(conn.fetch_one::<(i64,)>(&hot).unwrap().0, answer);
    let before = prepared();
    for (select, answer) in stmts::interleaved() {
        let (got,): (i64,) = conn.fetch_one(&select).unwrap();
        assert_eq!(got, answer, "{}", select.sql);
    }
    stmts::check_postgres(&before, &prepared());
}

/// The `mysql` crate's statement cache is off and each connection keeps its prepared statements itself:
/// more distinct statements than it keeps (64) on one connection all answer right, the first ones again
/// after they were let go, and the server holds no more of them open than the connection keeps — each
/// one let go was closed (the session's own `Com_stmt_prepare` and `Com_stmt_close` counters).
pub(crate) fn statements_kept_and_closed_mysql() {
    let t = db::open(Dialect::MySql, "bstmts", PoolConfig::default());
    let conn = t.db.checkout().unwrap();
    let counters = || {
        let rows: Vec<(String, String)> = conn.fetch_all(&stmts::counters_statement()).unwrap();
        stmts::counters(&rows)
    };
    let before = counters();
    for (select, answer) in stmts::calls() {
        let (got,): (i64,) = conn.fetch_one(&select).unwrap();
        assert_eq!(got, answer, "{}", select.sql);
    }
    stmts::check(before, counters());
}
