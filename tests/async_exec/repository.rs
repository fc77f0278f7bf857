//! The repository on every engine: CRUD, atomic plans, finders and pages, batches and their keys.

use super::*;

async fn crud(t: &ADb) {
    let db = &t.db;
    setup(db).await;
    let repo = db.repository::<User>();
    let id = repo.insert(&user("ada", 36)).await.unwrap();
    let id2 = repo
        .insert(&User {
            email: Some("b@x".into()),
            ..user("bob", 17)
        })
        .await
        .unwrap();
    assert!(id2 > id, "keys increase: {id}, then {id2}");
    let ada = repo.get(id).await.unwrap();
    assert_eq!(
        ada,
        User {
            id,
            ..user("ada", 36)
        }
    );
    assert_eq!(repo.find_by_id(id + 100).await.unwrap(), None);
    assert!(matches!(
        repo.get(id + 100).await,
        Err(Error::NotFound { .. })
    ));
    assert!(repo.exists_by_id(id).await.unwrap());
    assert!(!repo.exists_by_id(id + 100).await.unwrap());
    assert_eq!(repo.count().await.unwrap(), 2);
    let older = User {
        age: 37,
        ..ada.clone()
    };
    assert_eq!(repo.update_by_id(&older).await.unwrap(), 1);
    assert_eq!(repo.get(id).await.unwrap().age, 37);
    // Writing the values already there still counts the row (MySQL: CLIENT_FOUND_ROWS).
    assert_eq!(repo.update_by_id(&older).await.unwrap(), 1);
    assert_eq!(repo.delete_by_id(id).await.unwrap(), 1);
    assert_eq!(repo.delete_by_id(id).await.unwrap(), 0);
    assert_eq!(repo.count().await.unwrap(), 1);
    assert_eq!(repo.get(id2).await.unwrap().email.as_deref(), Some("b@x"));
}

async_engine_test!(
    /// insert, get, find_by_id, exists, count, update_by_id, delete_by_id, and NotFound.
    crud
);

/// A plan run as one transaction (on a SQLite file: BEGIN, every statement and COMMIT in one call on the
/// worker thread): a statement that fails after others succeeded rolls them all back; one cancelled
/// mid-way leaves nothing behind; the one connection goes on serving either way.
async fn atomic_plans_are_all_or_nothing(t: &ADb) {
    let db = Database::open(
        t.target.options.clone(),
        PoolConfig {
            max_size: 1,
            ..PoolConfig::default()
        },
    )
    .await
    .unwrap();
    setup(&db).await;
    let repo = db.repository::<User>();
    repo.insert(&user("a", 1)).await.unwrap();
    // Two statements of two rows: the second collides with "a".
    let whole = BatchOptions {
        chunk_rows: Some(2),
        transaction: BatchTransaction::PerCall,
        ..BatchOptions::default()
    };
    let rows: Vec<User> = ["b", "c", "d", "a"].map(|n| user(n, 2)).to_vec();
    let err = repo.batch_insert(&rows, &whole).await.unwrap_err();
    assert_eq!(err.kind(), Some(DbErrorKind::UniqueViolation), "{err}");
    assert_eq!(
        names(&db).await,
        ["a"],
        "the first statement was rolled back"
    );

    // Cancelled while its statements run: nothing of it stays, and the next call works (on PostgreSQL the
    // 20,000 rows go through COPY: a connection cut off mid-COPY is closed, not pooled out of step).
    cancel_mid_way(&db, &repo, &whole, &t.target).await;
    assert_eq!(
        repo.batch_insert(&rows[..3], &whole)
            .await
            .unwrap()
            .inserted,
        3
    );
    assert_eq!(names(&db).await, ["a", "b", "c", "d"]);
}

/// Cuts a 20,000-row insert short at several points: each time every row is there or none, once the
/// server has ended the cut-off session.
async fn cancel_mid_way(
    db: &Database,
    repo: &tandem_async::Repository<'_, User, tandem_async::Database>,
    whole: &BatchOptions,
    target: &db::TestTarget,
) {
    let many: Vec<User> = (0..20_000).map(|i| user(&format!("x{i}"), 3)).collect();
    let mut cancelled = 0;
    let mut seen = Vec::new();
    for budget_us in [50, 200, 1_000, 5_000] {
        let call = repo.batch_insert(&many, whole);
        let session = session_id(db).await;
        let outcome = tokio::time::timeout(Duration::from_micros(budget_us), call).await;
        seen.push(match &outcome {
            Err(_) => format!("{budget_us} µs: cut short"),
            Ok(Ok(done)) => format!("{budget_us} µs: done, {} rows", done.inserted),
            Ok(Err(e)) => format!("{budget_us} µs: failed: {e}"),
        });
        if let Ok(done) = outcome {
            // Not cut short: it must have done all of it.
            let done =
                done.unwrap_or_else(|e| panic!("a call not cut short succeeds: {e}; {seen:#?}"));
            assert_eq!(done.inserted, 20_000);
            db.execute(&users::table.delete().filter(users::age.eq(3)))
                .await
                .unwrap();
        } else {
            cancelled += 1;
            settled(target, session).await;
            // A connection left out of step with its server can wait for a reply forever: bounded.
            let n = tokio::time::timeout(Duration::from_secs(10), repo.count())
                .await
                .expect("the next call answers after a cancelled one")
                .unwrap();
            assert!(n == 1 || n == 20_001, "all or nothing, not {n} rows");
            if n == 20_001 {
                db.execute(&users::table.delete().filter(users::age.eq(3)))
                    .await
                    .unwrap();
            }
        }
    }
    assert!(cancelled > 0, "at least one call was cut short: {seen:#?}");
}

/// The server's id of the session the pool's one connection has now (`None` on in-process SQLite).
async fn session_id(db: &Database) -> Option<i64> {
    let sql = match db.dialect() {
        Dialect::Postgres => "SELECT CAST(pg_backend_pid() AS BIGINT)",
        Dialect::MySql => "SELECT CAST(CONNECTION_ID() AS SIGNED)",
        Dialect::Sqlite => return None,
    };
    Some(db.fetch_one::<(i64,)>(&raw(sql, vec![])).await.unwrap().0)
}

/// Waits (10 s at most) until `session` is idle or gone. A call cut off after its COMMIT went out still
/// commits: tandem closes that connection at once, the server ends the session when it has done what it
/// was sent, and only then is the call's outcome settled. (In-process SQLite has no such lag.)
async fn settled(target: &db::TestTarget, session: Option<i64>) {
    let Some(id) = session else { return };
    // On the blocking admin connection, which must not run inside the async runtime.
    let working = || {
        std::thread::scope(|s| {
            s.spawn(|| tandem_test_support::pools::session_working(target, id))
                .join()
                .expect("look the session up")
        })
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while working() {
        assert!(
            std::time::Instant::now() < deadline,
            "the cut-off session never ended"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

async_engine_test!(atomic_plans_are_all_or_nothing);

async fn key_lookups_in_tx_and_checkout(t: &ADb) {
    setup(&t.db).await;
    let db = &t.db;
    let tx = db.begin(TxOptions::default()).await.unwrap();
    let id = tx
        .repository::<User>()
        .insert(&user("bo", 30))
        .await
        .unwrap();
    let seen = tx.repository::<User>().find_by_id(id).await.unwrap();
    let seen = seen.expect("the transaction's own write");
    assert_eq!((seen.name.as_str(), seen.age), ("bo", 30));
    tx.rollback().await.unwrap();
    assert_eq!(
        db.repository::<User>().find_by_id(id).await.unwrap(),
        None,
        "rolled back"
    );

    let conn = db.checkout().await.unwrap();
    let repo = conn.repository::<User>();
    let id = repo.insert(&user("cy", 31)).await.unwrap();
    assert_eq!(repo.find_by_id(id).await.unwrap().expect("cy").age, 31);
    assert_eq!(repo.find_by_id(id + 1000).await.unwrap(), None);
}
async_engine_test!(
    /// find_by_id inside a transaction sees its writes and not after a rollback; on a checked-out
    /// connection too (on SQLite both take the caller's-thread path of a key lookup).
    key_lookups_in_tx_and_checkout
);

async fn finders_and_pages(t: &ADb) {
    let db = &t.db;
    setup(db).await;
    let repo = db.repository::<User>();
    let people: Vec<User> = (0..25).map(|i| user(&format!("u{i:02}"), i % 5)).collect();
    let ids = repo.insert_all(&people).await.unwrap();
    assert_eq!(ids.len(), 25);
    // Increasing, and each the key of its own row: not necessarily consecutive (a Galera cluster, or any
    // server with auto_increment_increment > 1, spaces them).
    assert!(
        ids.windows(2).all(|w| w[1] > w[0]),
        "ids in insertion order: {ids:?}"
    );
    for (id, p) in ids.iter().zip(&people) {
        assert_eq!(repo.get(*id).await.unwrap().name, p.name);
    }
    let young: Vec<User> = repo
        .find_all(
            Find::all()
                .filter(users::age.lt(2))
                .order_by(users::name.desc())
                .limit(4)
                .offset(1),
        )
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    let young_names: Vec<&str> = young.iter().map(|u| u.name.as_str()).collect();
    assert_eq!(young_names, ["u20", "u16", "u15", "u11"]);
    let by = repo
        .find_by(Find::all().filter(users::age.eq(3)))
        .await
        .unwrap()
        .count()
        .await;
    assert_eq!(by, 5);
    assert_eq!(
        repo.count_by(Find::all().filter(users::age.ge(3)))
            .await
            .unwrap(),
        10
    );
    assert!(
        repo.exists_by(Find::all().filter(users::name.eq("u07")))
            .await
            .unwrap()
    );
    assert!(
        !repo
            .exists_by(Find::all().filter(users::name.eq("nobody")))
            .await
            .unwrap()
    );
    let page = repo.find_page(2, 10, Find::all()).await.unwrap();
    assert_eq!(
        (page.page, page.size, page.total, page.total_pages()),
        (2, 10, 25, 3)
    );
    assert_eq!(page.items.len(), 5);
    assert_eq!(page.items[0].name, "u20");
    let mut after = None;
    let mut seen = Vec::new();
    loop {
        let p = repo.find_cursor_page(after, 7, Find::all()).await.unwrap();
        seen.extend(p.items.iter().map(|u| u.id));
        match p.next {
            Some(k) => after = Some(k),
            None => break,
        }
    }
    assert_eq!(seen, ids);
}

async_engine_test!(
    /// find_all streams with filter, order, limit and offset; find_by, count_by, exists_by; pages and cursors.
    finders_and_pages
);

async fn ids_of_kept_rows_when_duplicates_are_skipped(t: &ADb) {
    let db = &t.db;
    setup(db).await;
    let repo = db.repository::<User>();
    let first: Vec<User> = (0..10).map(|i| user(&format!("d{i}"), i)).collect();
    repo.batch_insert(&first, &BatchOptions::default())
        .await
        .unwrap();
    let mixed: Vec<User> = (5..15).map(|i| user(&format!("d{i}"), i)).collect();
    let opts = BatchOptions {
        ignore_duplicates: true,
        return_ids: true,
        chunk_rows: Some(4),
        ..BatchOptions::default()
    };
    let r = repo.batch_insert(&mixed, &opts).await.unwrap();
    assert_eq!(r.inserted, 5);
    let mut kept = Vec::new();
    for i in 10..15 {
        let q = users::table
            .select(users::id)
            .filter(users::name.eq(format!("d{i}")));
        kept.push(db.fetch_one::<(i64,)>(&q).await.unwrap().0);
    }
    assert_eq!(r.ids, kept);
}

async_engine_test!(
    /// Ignoring duplicates and returning keys together: the keys of the rows kept, in insertion order.
    ids_of_kept_rows_when_duplicates_are_skipped
);

async fn batches_and_bulk_changes(t: &ADb) {
    let db = &t.db;
    setup(db).await;
    let repo = db.repository::<User>();
    let first: Vec<User> = (0..2_500).map(|i| user(&format!("n{i}"), i)).collect();
    let r = repo
        .batch_insert(
            &first,
            &BatchOptions {
                return_ids: true,
                ..BatchOptions::default()
            },
        )
        .await
        .unwrap();
    assert_eq!((r.inserted, r.ids.len()), (2_500, 2_500));
    assert!(r.ids.windows(2).all(|w| w[1] > w[0]));
    for k in [0, 1, 1_249, 2_499] {
        assert_eq!(repo.get(r.ids[k]).await.unwrap().name, first[k].name);
    }
    let again: Vec<User> = (2_400..2_600).map(|i| user(&format!("n{i}"), -1)).collect();
    let dup = repo
        .batch_insert(&again, &BatchOptions::default())
        .await
        .unwrap_err();
    assert_eq!(dup.kind(), Some(DbErrorKind::UniqueViolation), "{dup}");
    assert_eq!(repo.count().await.unwrap(), 2_500);
    check_unique_violation_source(db.dialect(), &dup);
    let ignored = repo
        .batch_insert(
            &again,
            &BatchOptions {
                ignore_duplicates: true,
                ..BatchOptions::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(ignored.inserted, 100);
    assert_eq!(repo.count().await.unwrap(), 2_600);
    let whole = BatchOptions {
        transaction: BatchTransaction::PerCall,
        ..BatchOptions::default()
    };
    let more: Vec<User> = (0..3).map(|i| user(&format!("m{i}"), 1)).collect();
    assert_eq!(repo.batch_insert(&more, &whole).await.unwrap().inserted, 3);
    assert_eq!(
        repo.batch_upsert(&[user("n0", 500), user("fresh", 501)], users::name)
            .await
            .unwrap(),
        2
    );
    let (age,): (i32,) = db
        .fetch_one(&users::table.select(users::age).filter(users::name.eq("n0")))
        .await
        .unwrap();
    assert_eq!(age, 500);
    assert_eq!(repo.count().await.unwrap(), 2_604);
    let changed = repo
        .update_all(|u| {
            u.set(users::age, users::age + 1000)
                .filter(users::age.between(10, 19))
        })
        .await
        .unwrap();
    assert_eq!(changed, 10);
    assert_eq!(repo.delete_all_by_ids(&r.ids[..100]).await.unwrap(), 100);
    assert_eq!(
        repo.delete_by(Find::all().filter(users::age.ge(1000)))
            .await
            .unwrap(),
        1_500
    );
    assert_eq!(repo.delete_all().await.unwrap(), 2_604 - 100 - 1_500);
}

async_engine_test!(
    /// batch_insert per chunk and per call, ignore duplicates, returned ids, upsert, update_all and deletes.
    batches_and_bulk_changes
);

async fn batch_beyond_parameter_limit(t: &ADb) {
    let db = &t.db;
    setup(db).await;
    let rows: Vec<Order> = (0..70_000)
        .map(|i| Order {
            id: 0,
            user_id: i,
            code: format!("c{i}"),
            total: 1.0,
            shipped: false,
        })
        .collect();
    let opts = BatchOptions {
        chunk_rows: None,
        allow_copy: false,
        ..BatchOptions::default()
    };
    assert_eq!(
        db.repository::<Order>()
            .batch_insert(&rows, &opts)
            .await
            .unwrap()
            .inserted,
        70_000
    );
    let (n, distinct): (i64, i64) = db
        .fetch_one(&orders::table.select((count_star(), count_distinct(orders::user_id))))
        .await
        .unwrap();
    assert_eq!((n, distinct), (70_000, 70_000));
}

async_engine_test!(
    /// More rows than one statement may bind are split and stored exactly once.
    batch_beyond_parameter_limit
);

/// The async side of the blocking test: on a session whose keys are 3 apart, the keys a multi-row insert
/// reports each read back their own row.
pub(crate) async fn keys_follow_auto_increment_increment_mysql() {
    let config = PoolConfig {
        max_size: 1,
        ..PoolConfig::default()
    };
    let t = adb(Dialect::MySql, "aincrement", config).await;
    let db = &t.db;
    setup(db).await;
    db.execute(&raw("SET SESSION auto_increment_increment = 3", vec![]))
        .await
        .unwrap();
    let repo = db.repository::<User>();
    let rows: Vec<User> = (0..25).map(|i| user(&format!("k{i}"), i)).collect();
    let opts = BatchOptions {
        return_ids: true,
        chunk_rows: Some(10),
        ..BatchOptions::default()
    };
    let r = repo.batch_insert(&rows, &opts).await.unwrap();
    assert!(
        r.ids.windows(2).take(9).all(|w| w[1] == w[0] + 3),
        "the session's keys are 3 apart: {:?}",
        r.ids
    );
    for (id, row) in r.ids.iter().zip(&rows) {
        assert_eq!(
            repo.get(*id).await.unwrap().name,
            row.name,
            "the row of key {id}"
        );
    }
}

/// On PostgreSQL a one-transaction batch goes through binary COPY and stores exactly the rows given.
pub(crate) async fn copy_path_postgres() {
    let t = adb(Dialect::Postgres, "acopy", PoolConfig::default()).await;
    setup(&t.db).await;
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
    assert_eq!(
        repo.batch_insert(&rows, &opts).await.unwrap().inserted,
        5_000
    );
    let back: Vec<Order> = repo
        .find_all(Find::all().order_by(orders::id.asc()))
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    for (got, want) in back.iter().zip(&rows) {
        assert_eq!(
            (got.user_id, &got.code, got.total, got.shipped),
            (want.user_id, &want.code, want.total, want.shipped)
        );
    }
    assert_eq!(back.len(), 5_000);
}

/// A key lookup on a rusqlite connection runs on the runtime's own thread only when SQLite can answer it
/// without waiting: while another connection's write keeps readers out, the lookup goes to its worker and
/// waits there, and the runtime's one thread goes on (a lookup that waited on it would hold the timer below
/// until the busy timeout ran out, and end in a busy error). Once the write commits, the lookup reads it.
/// (Readers of a WAL file never wait, so the file is turned back to a rollback journal, where a writer's
/// EXCLUSIVE lock keeps them out; that takes the pool's only connection.)
pub(crate) fn key_lookup_waits_for_a_lock_off_the_runtime_sqlite() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let one = PoolConfig {
            max_size: 1,
            ..PoolConfig::default()
        };
        let t = adb(Dialect::Sqlite, "key_lookup_lock", one).await;
        setup(&t.db).await;
        t.db.execute(&raw("PRAGMA journal_mode = DELETE", vec![]))
            .await
            .unwrap();
        let repo = t.db.repository::<User>();
        let id = repo.insert(&user("ann", 40)).await.unwrap();
        let found = repo.find_by_id(id).await.unwrap().expect("ann");
        assert_eq!((found.name.as_str(), found.age), ("ann", 40));

        let path = t.target.options.path.clone().expect("a file database");
        let holder = rusqlite::Connection::open(path).unwrap();
        holder
            .execute_batch(&format!(
                "BEGIN EXCLUSIVE; UPDATE users SET age = 41 WHERE id = {id}"
            ))
            .unwrap();
        let db = t.db.clone();
        let lookup = tokio::spawn(async move { db.repository::<User>().find_by_id(id).await });
        let started = std::time::Instant::now();
        tokio::time::sleep(Duration::from_millis(300)).await;
        let slept = started.elapsed();
        assert!(
            slept < tandem_core::tx::BUSY_TIMEOUT,
            "the runtime's thread was held {slept:?}: the lookup waited for the lock on it"
        );
        assert!(
            !lookup.is_finished(),
            "the lookup waits for the lock (on its worker) while the runtime's thread runs this timer"
        );
        holder.execute_batch("COMMIT").unwrap();
        let found = lookup.await.unwrap().unwrap().expect("ann, after the lock");
        assert_eq!(found.age, 41, "the write made under the lock");
        // And straight away again, here.
        assert_eq!(repo.find_by_id(id).await.unwrap().expect("ann").age, 41);
    });
}
