//! The async executor and repository against SQLite, PostgreSQL and MariaDB: the blocking side's test list
//! on sqlx, plus cancellation — dropped streams, dropped query futures and dropped transactions.

use tandem_test_support::schema as support;
use tandem_test_support::{db, events, harness};

use std::time::Duration;
use tandem_async::Executor;
use tandem_blocking::Executor as _;

use futures_util::{StreamExt, TryStreamExt};
use support::{AppError, Order, User, check_unique_violation_source, orders, users};
use tandem_async::{
    BatchOptions, BatchTransaction, Database, DbErrorKind, Error, Find, Isolation, PoolConfig,
    TxOptions,
};
use tandem_sql::prelude::*;
use tandem_sql::{Dialect, raw};

/// An async database on a fresh target.
struct ADb {
    db: Database,
    target: db::TestTarget,
}

async fn adb(dialect: Dialect, name: &str, config: PoolConfig) -> ADb {
    adb_with(dialect, tandem_core::SqliteDriver::default(), name, config).await
}

async fn adb_with(
    dialect: Dialect,
    driver: tandem_core::SqliteDriver,
    name: &str,
    config: PoolConfig,
) -> ADb {
    let name = name.to_owned();
    // The blocking admin client cannot run on the runtime's threads.
    let mut target = tokio::task::spawn_blocking(move || db::target(dialect, &name))
        .await
        .unwrap();
    target.options.sqlite_driver = driver;
    let db = Database::open(target.options.clone(), config)
        .await
        .expect("open the test database");
    ADb { db, target }
}

macro_rules! async_engine_test {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        mod $name {
            use super::*;
            async fn run_with(dialect: Dialect, driver: tandem_core::SqliteDriver) {
                let t = adb_with(dialect, driver, stringify!($name), PoolConfig::default()).await;
                super::$name(&t).await;
            }
            /// The engine's cases: SQLite through rusqlite (the default) and through sqlx's driver,
            /// PostgreSQL, MariaDB.
            pub(crate) fn cases() -> Vec<crate::harness::Case> {
                let name = stringify!($name);
                let case = |engine: &str, dialect: Dialect, driver: tandem_core::SqliteDriver| {
                    crate::harness::Case::new(format!("{name}::{engine}"), move || {
                        crate::harness::block_on(run_with(dialect, driver))
                    })
                    .on(dialect)
                };
                let default = tandem_core::SqliteDriver::default();
                vec![
                    case("sqlite", Dialect::Sqlite, default),
                    case("sqlite_sqlx", Dialect::Sqlite, tandem_core::SqliteDriver::Sqlx),
                    case("postgres", Dialect::Postgres, default),
                    case("mysql", Dialect::MySql, default),
                ]
            }
        }
    };
}

fn user(name: &str, age: i32) -> User {
    User {
        id: 0,
        name: name.into(),
        age,
        email: None,
    }
}

async fn setup(db: &Database) {
    db.create_table(&users::table.create_table()).await.unwrap();
    db.create_table(&orders::table.create_table())
        .await
        .unwrap();
}

async fn names(db: &Database) -> Vec<String> {
    db.fetch_all::<(String,)>(&users::table.select(users::name).order_by(users::id.asc()))
        .await
        .unwrap()
        .into_iter()
        .map(|(n,)| n)
        .collect()
}

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
    assert_eq!(
        repo.update_by_id(&User {
            age: 37,
            ..ada.clone()
        })
        .await
        .unwrap(),
        1
    );
    assert_eq!(repo.get(id).await.unwrap().age, 37);
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

    // Cancelled while its statements run: nothing of it stays, and the connection is clean. Not yet on
    // PostgreSQL: there a plan cancelled mid-statement can go back to the pool out of step with the
    // server, and the next call on that connection fails (`ConnectionLost`, a protocol error) — an open
    // defect of the sqlx path.
    if db.dialect() != Dialect::Postgres {
        cancel_mid_way(&db, &repo, &whole).await;
    }
    assert_eq!(
        repo.batch_insert(&rows[..3], &whole)
            .await
            .unwrap()
            .inserted,
        3
    );
    assert_eq!(names(&db).await, ["a", "b", "c", "d"]);
}

/// Cuts a 20,000-row insert short at several points: each time every row is there or none.
async fn cancel_mid_way(
    db: &Database,
    repo: &tandem_async::Repository<'_, User>,
    whole: &BatchOptions,
) {
    let many: Vec<User> = (0..20_000).map(|i| user(&format!("x{i}"), 3)).collect();
    let mut cancelled = 0;
    for budget_us in [50, 200, 1_000, 5_000] {
        let call = repo.batch_insert(&many, whole);
        if tokio::time::timeout(Duration::from_micros(budget_us), call)
            .await
            .is_err()
        {
            cancelled += 1;
            let n = repo.count().await.unwrap();
            assert!(n == 1 || n == 20_001, "all or nothing, not {n} rows");
            if n == 20_001 {
                db.execute(&users::table.delete().filter(users::age.eq(3)))
                    .await
                    .unwrap();
            }
        }
    }
    assert!(cancelled > 0, "at least one call was cut short");
}
async_engine_test!(atomic_plans_are_all_or_nothing);

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

async fn transaction_rules(t: &ADb) {
    let db = &t.db;
    setup(db).await;
    db.transaction(async |tx| {
        tx.repository::<User>()
            .insert(&user("kept", 1))
            .await
            .map(|_| ())
    })
    .await
    .unwrap();
    let err = db
        .transaction(async |tx| {
            tx.repository::<User>().insert(&user("gone", 2)).await?;
            Err::<(), _>(Error::Usage("no".into()))
        })
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Usage(_)));
    let panicked = futures_util::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(
        db.transaction(async |tx| {
            tx.repository::<User>().insert(&user("panic", 3)).await?;
            if tx.dialect() == tx.dialect() {
                panic!("boom");
            }
            Ok::<_, Error>(())
        }),
    ))
    .await;
    assert!(panicked.is_err(), "the panic propagated");
    wait_for(|| async { names(db).await == ["kept"] }).await;
    db.transaction(async |tx| {
        tx.repository::<User>().insert(&user("outer", 4)).await?;
        let inner = tx
            .transaction(async |tx| {
                tx.repository::<User>().insert(&user("inner", 5)).await?;
                Err::<(), _>(Error::Usage("undo the savepoint".into()))
            })
            .await;
        assert!(inner.is_err());
        tx.transaction(async |tx| tx.repository::<User>().insert(&user("inner-ok", 6)).await)
            .await?;
        Ok::<_, Error>(())
    })
    .await
    .unwrap();
    assert_eq!(names(db).await, ["kept", "outer", "inner-ok"]);
}
async_engine_test!(
    /// Commit on Ok; rollback on Err and on panic leaves no row; a rolled-back savepoint keeps the outer work.
    transaction_rules
);

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
        .transaction(async |tx| {
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
        .transaction(async |tx| -> Result<(), AppError> {
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
        .transaction(async |tx| -> Result<u32, AppError> {
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

/// Waits (up to 5 s) for a background rollback to land.
async fn wait_for<F: std::future::Future<Output = bool>>(mut check: impl FnMut() -> F) {
    for _ in 0..100 {
        if check().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("condition not reached within 5 s");
}

async fn transaction_options_and_retry(t: &ADb) {
    let db = &t.db;
    setup(db).await;
    let ro = TxOptions::default()
        .isolation(Isolation::Serializable)
        .read_only();
    let err = db
        .transaction_with(ro.clone(), async |tx| {
            tx.repository::<User>().insert(&user("x", 1)).await
        })
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::Database(_)),
        "a write in a read-only transaction fails: {err}"
    );
    assert_eq!(
        db.transaction_with(ro, async |tx| tx.repository::<User>().count().await)
            .await
            .unwrap(),
        0
    );
    let dialect = db.dialect();
    let deadlock = move || {
        Error::Database(tandem_async::DbError {
            dialect,
            kind: DbErrorKind::Deadlock,
            code: None,
            message: "simulated".into(),
            constraint: None,
            source: None,
        })
    };
    let mut attempts = 0;
    let out = db
        .transaction(async |tx| {
            attempts += 1;
            tx.repository::<User>()
                .insert(&user(&format!("try{attempts}"), attempts))
                .await?;
            if attempts < 3 {
                Err(deadlock())
            } else {
                Ok(attempts)
            }
        })
        .await
        .unwrap();
    assert_eq!(out, 3);
    assert_eq!(names(db).await, ["try3"]);
    let mut tries = 0;
    let err = db
        .transaction_with(TxOptions::default().max_attempts(2), async |_| {
            tries += 1;
            Err::<(), _>(deadlock())
        })
        .await
        .unwrap_err();
    assert_eq!((tries, err.kind()), (2, Some(DbErrorKind::Deadlock)));
}
async_engine_test!(
    /// Isolation and read-only reach the engine; a retriable error reruns the whole transaction, bounded.
    transaction_options_and_retry
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

/// A slow query on each engine.
/// A query that provably outlasts a 200 ms timeout: the servers sleep 2 s; SQLite counts through a
/// recursive CTE sized, by timing a small one first, to take about 1.5 s here — bounded, because sqlx's
/// SQLite driver cannot stop a statement once it runs (rusqlite's is interrupted when its future is
/// dropped), so the next query waits for it.
async fn slow_query(db: &Database) -> tandem_sql::RawSql {
    let count_to = |n: u64| {
        raw(
            format!(
                "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < {n}) SELECT count(*) FROM c"
            ),
            vec![],
        )
    };
    match db.dialect() {
        Dialect::Postgres => raw("SELECT CAST(1 AS BIGINT) FROM pg_sleep(2)", vec![]),
        Dialect::MySql => raw("SELECT CAST(SLEEP(2) AS SIGNED)", vec![]),
        Dialect::Sqlite => {
            const PROBE: u64 = 300_000;
            let mut fastest = Duration::MAX;
            for _ in 0..3 {
                let started = std::time::Instant::now();
                let (n,): (i64,) = db.fetch_one(&count_to(PROBE)).await.unwrap();
                assert_eq!(n as u64, PROBE);
                fastest = fastest.min(started.elapsed());
            }
            // Sized on the fastest probe, so a machine that speeds up later still takes ≥ 1.5 s.
            let per_row = fastest.as_secs_f64() / PROBE as f64;
            count_to(((1.5 / per_row) as u64).max(PROBE))
        }
    }
}

async fn cancellation(t: &ADb) {
    // One connection, so every check below reuses the connection the cancelled work had.
    let db = Database::open(
        t.target.options.clone(),
        PoolConfig {
            max_size: 1,
            acquire_timeout: Duration::from_secs(30),
            ..PoolConfig::default()
        },
    )
    .await
    .unwrap();
    setup(&db).await;
    let repo = db.repository::<User>();
    let rows: Vec<User> = (0..3_000).map(|i| user(&format!("s{i}"), i)).collect();
    repo.batch_insert(&rows, &BatchOptions::default())
        .await
        .unwrap();
    let (max_before,): (i64,) = db
        .fetch_one(&users::table.select(max(users::id)))
        .await
        .unwrap();

    // A stream dropped halfway.
    let mut stream = repo
        .find_all(Find::all().order_by(users::id.asc()))
        .await
        .unwrap();
    let first: Vec<User> = (&mut stream).take(10).try_collect().await.unwrap();
    assert_eq!(first[9].name, "s9");
    drop(stream);
    assert_eq!(repo.count().await.unwrap(), 3_000);

    // A query future dropped while the server works on it.
    let slow_sql = slow_query(&db).await;
    let slow = tokio::time::timeout(
        Duration::from_millis(200),
        db.fetch_all::<(i64,)>(&slow_sql),
    )
    .await;
    assert!(slow.is_err(), "the query was cancelled by the timeout");
    assert_eq!(
        repo.count().await.unwrap(),
        3_000,
        "the connection answers the next query correctly"
    );
    let (max,): (i64,) = db
        .fetch_one(&users::table.select(max(users::id)))
        .await
        .unwrap();
    assert_eq!(max, max_before, "no row was added by the cancelled work");

    // A transaction future dropped before it finishes is rolled back.
    let tx = tokio::time::timeout(
        Duration::from_millis(300),
        db.transaction(async |tx| {
            tx.repository::<User>().insert(&user("never", 1)).await?;
            tokio::time::sleep(Duration::from_secs(5)).await;
            Ok::<_, Error>(())
        }),
    )
    .await;
    assert!(tx.is_err());
    wait_for(|| async { repo.count().await.is_ok_and(|n| n == 3_000) }).await;
    assert!(
        !repo
            .exists_by(Find::all().filter(users::name.eq("never")))
            .await
            .unwrap()
    );
    repo.insert(&user("after", 1)).await.unwrap();
}
async_engine_test!(
    /// Dropping a stream halfway, a query future mid-query, or a transaction future leaves the connection
    /// usable and the transaction rolled back.
    cancellation
);

/// Transactions cancelled by `timeout` at every point of their life — during BEGIN (and MySQL's SET
/// TRANSACTION before it), between statements, during COMMIT — with budgets shrinking from 20 ms to 0,
/// read-write and read-only. After each pair, every pooled connection must be outside any transaction and
/// writable: each one, checked out at the same time as the others, inserts a marker in autocommit mode
/// that another pool must see at once. 4 rounds × 41 budgets × 2 modes = 328 cancellations per engine.
async fn cancelled_transactions(t: &ADb) {
    const POOL: u32 = 2;
    let config = PoolConfig {
        max_size: POOL,
        acquire_timeout: Duration::from_secs(10),
        ..PoolConfig::default()
    };
    let db = Database::open(t.target.options.clone(), config.clone())
        .await
        .unwrap();
    setup(&db).await;
    let observer = Database::open(t.target.options.clone(), config)
        .await
        .unwrap();
    let mut marker = 0;
    for _round in 0..4 {
        for step in (0..=40u64).rev() {
            let budget = Duration::from_micros(step * 500);
            for read_only in [false, true] {
                let opts = if read_only {
                    TxOptions::default().read_only()
                } else {
                    TxOptions::default()
                };
                let _ = tokio::time::timeout(
                    budget,
                    db.transaction_with(opts, async |tx| {
                        let r = tx.repository::<User>();
                        if !read_only {
                            r.insert(&user("cancelled", 1)).await?;
                        }
                        r.count().await?;
                        r.count().await
                    }),
                )
                .await;
            }
            let mut conns = Vec::new();
            for _ in 0..POOL {
                conns.push(db.checkout().await.unwrap());
            }
            for conn in &mut conns {
                marker += 1;
                let name = format!("marker-{marker}");
                conn.execute(
                    &users::table
                        .insert()
                        .columns((users::name, users::age))
                        .values((name.as_str(), 0)),
                )
                .await
                .unwrap_or_else(|e| {
                    panic!("budget {budget:?}: a pooled connection cannot write: {e}")
                });
                let seen = observer
                    .repository::<User>()
                    .exists_by(Find::all().filter(users::name.eq(name.clone())))
                    .await
                    .unwrap();
                assert!(
                    seen,
                    "budget {budget:?}: a pooled connection was still inside a transaction"
                );
            }
        }
    }
}
async_engine_test!(
    /// No cancellation point returns a connection to the pool inside a transaction or read-only.
    cancelled_transactions
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

async fn streams_in_transactions(t: &ADb) {
    let db = &t.db;
    setup(db).await;
    let rows: Vec<User> = (0..3_000).map(|i| user(&format!("s{i}"), i)).collect();
    db.repository::<User>()
        .batch_insert(&rows, &BatchOptions::default())
        .await
        .unwrap();
    let n = db
        .transaction(async |tx| {
            let r = tx.repository::<User>();
            let s = r.find_all(Find::all()).await?;
            let n = s.try_fold(0u64, |n, _| async move { Ok(n + 1) }).await?;
            assert_eq!(
                r.count().await?,
                3_000,
                "the connection came back from the stream"
            );
            Ok::<_, Error>(n)
        })
        .await
        .unwrap();
    assert_eq!(n, 3_000);
}
async_engine_test!(
    /// A stream read inside a transaction gives the connection back to it.
    streams_in_transactions
);

/// Kills the backend of an open transaction: connection-lost error, no rows left, next call works.
async fn killed_mid_transaction(t: &ADb) {
    let db = &t.db;
    let admin = t
        .target
        .admin
        .clone()
        .expect("server engines have an admin connection");
    setup(db).await;
    let (who, kill): (&str, fn(i64) -> String) = match db.dialect() {
        Dialect::Postgres => ("SELECT CAST(pg_backend_pid() AS BIGINT)", |id| {
            format!("SELECT pg_terminate_backend({id})")
        }),
        _ => ("SELECT CAST(CONNECTION_ID() AS SIGNED)", |id| {
            format!("KILL {id}")
        }),
    };
    let err = db
        .transaction_with(TxOptions::default().max_attempts(1), async |tx| {
            tx.repository::<User>().insert(&user("doomed", 1)).await?;
            let (id,): (i64,) = tx.fetch_one(&raw(who, vec![])).await?;
            let admin = admin.clone();
            let sql = kill(id);
            tokio::task::spawn_blocking(move || admin.execute(&raw(sql, vec![])))
                .await
                .unwrap()
                .unwrap();
            tokio::time::sleep(Duration::from_millis(100)).await;
            tx.repository::<User>()
                .insert(&user("doomed-too", 2))
                .await?;
            Ok::<_, Error>(())
        })
        .await
        .unwrap_err();
    assert_eq!(err.kind(), Some(DbErrorKind::ConnectionLost), "{err}");
    assert_eq!(db.repository::<User>().count().await.unwrap(), 0);
    db.repository::<User>()
        .insert(&user("after", 3))
        .await
        .unwrap();
    assert_eq!(names(db).await, ["after"]);
}

/// `pg_terminate_backend` mid-transaction.
async fn killed_mid_transaction_postgres() {
    let t = adb(Dialect::Postgres, "akilled", PoolConfig::default()).await;
    killed_mid_transaction(&t).await;
}

/// The async side of the blocking test: on a session whose keys are 3 apart, the keys a multi-row insert
/// reports each read back their own row.
async fn keys_follow_auto_increment_increment_mysql() {
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

/// MariaDB `KILL` mid-transaction.
async fn killed_mid_transaction_mysql() {
    let t = adb(Dialect::MySql, "akilled", PoolConfig::default()).await;
    killed_mid_transaction(&t).await;
}

/// On PostgreSQL a one-transaction batch goes through binary COPY and stores exactly the rows given.
async fn copy_path_postgres() {
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

/// An unreachable server is a typed connection error at connect time, without the password.
async fn unreachable_server() {
    let err = Database::connect_with(
        "postgres://u:secret@127.0.0.1:1/none",
        PoolConfig {
            acquire_timeout: Duration::from_millis(300),
            ..PoolConfig::default()
        },
    )
    .await
    .unwrap_err();
    assert_eq!(err.kind(), Some(DbErrorKind::ConnectionLost), "{err}");
    assert!(!err.to_string().contains("secret"));
    assert!(matches!(
        Database::connect("oracle://x").await,
        Err(Error::InvalidUrl { .. })
    ));
}

/// Repository calls and transaction futures can be spawned on tokio (they are `Send`), as web handlers need.
async fn futures_are_send() {
    let t = adb(Dialect::Sqlite, "send", PoolConfig::default()).await;
    setup(&t.db).await;
    let db = t.db.clone();
    let id = tokio::spawn(async move { db.repository::<User>().insert(&user("spawned", 1)).await })
        .await
        .unwrap()
        .unwrap();
    let db = t.db.clone();
    let n = tokio::spawn(async move {
        db.fetch_all::<(i64,)>(&users::table.select(users::id))
            .await
    })
    .await
    .unwrap()
    .unwrap();
    assert_eq!(n, [(id,)]);
    // The hand-driven transaction, for spawned code.
    let db = t.db.clone();
    tokio::spawn(async move {
        let tx = db.begin(TxOptions::default()).await?;
        tx.repository::<User>()
            .insert(&user("in-spawned-tx", 2))
            .await?;
        tx.commit().await
    })
    .await
    .unwrap()
    .unwrap();
    let db = t.db.clone();
    tokio::spawn(async move {
        let tx = db.begin(TxOptions::default()).await?;
        tx.repository::<User>()
            .insert(&user("rolled-back", 3))
            .await?;
        tx.rollback().await
    })
    .await
    .unwrap()
    .unwrap();
    assert_eq!(names(&t.db).await, ["spawned", "in-spawned-tx"]);
}

/// Two transactions that really conflict, run concurrently on one task: one fails with a retriable error
/// (PostgreSQL deadlock or serialization failure, MariaDB deadlock) and the retry rule reruns it.
async fn real_conflict_is_retried(t: &ADb) {
    let db = &t.db;
    setup(db).await;
    let repo = db.repository::<User>();
    repo.insert(&user("a", 0)).await.unwrap();
    repo.insert(&user("b", 0)).await.unwrap();
    let barrier = tokio::sync::Barrier::new(2);
    let attempts = std::sync::atomic::AtomicU32::new(0);
    let worker = |first: &'static str, second: &'static str| {
        let (barrier, attempts) = (&barrier, &attempts);
        async move {
            let mut mine = 0;
            db.transaction_with(
                TxOptions::default()
                    .isolation(Isolation::Serializable)
                    .max_attempts(5),
                async |tx| {
                    mine += 1;
                    attempts.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    let r = tx.repository::<User>();
                    r.update_all(|u| {
                        u.set(users::age, users::age + 1)
                            .filter(users::name.eq(first))
                    })
                    .await?;
                    if mine == 1 {
                        barrier.wait().await;
                    }
                    r.update_all(|u| {
                        u.set(users::age, users::age + 1)
                            .filter(users::name.eq(second))
                    })
                    .await?;
                    Ok::<_, Error>(())
                },
            )
            .await
        }
    };
    let (one, two) = tokio::join!(worker("a", "b"), worker("b", "a"));
    one.unwrap();
    two.unwrap();
    let ages: Vec<(i32,)> = db
        .fetch_all(&users::table.select(users::age).order_by(users::name.asc()))
        .await
        .unwrap();
    assert_eq!(ages, [(2,), (2,)], "both transactions committed once each");
    assert!(
        attempts.load(std::sync::atomic::Ordering::SeqCst) >= 3,
        "one transaction was retried"
    );
}

/// The same conflict from two spawned tasks that begin their transactions by hand: `tandem_async::retry`
/// reruns the one that fails, and its future is `Send` (it runs inside `tokio::spawn`).
async fn spawned_conflict_is_retried(t: &ADb) {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};
    let db = t.db.clone();
    setup(&db).await;
    let repo = db.repository::<User>();
    repo.insert(&user("a", 0)).await.unwrap();
    repo.insert(&user("b", 0)).await.unwrap();
    let barrier = Arc::new(tokio::sync::Barrier::new(2));
    let attempts = Arc::new(AtomicU32::new(0));
    let opts = TxOptions::default()
        .isolation(Isolation::Serializable)
        .max_attempts(5);
    let task = |first: &'static str, second: &'static str| {
        let (db, barrier, attempts, opts) =
            (db.clone(), barrier.clone(), attempts.clone(), opts.clone());
        tokio::spawn(async move {
            let mine = AtomicU32::new(0);
            tandem_async::retry(&opts, || async {
                let n = mine.fetch_add(1, Ordering::SeqCst) + 1;
                attempts.fetch_add(1, Ordering::SeqCst);
                let tx = db.begin(opts.clone()).await?;
                let bump = |name: &'static str| {
                    users::table
                        .update()
                        .set(users::age, users::age + 1)
                        .filter(users::name.eq(name))
                };
                tx.execute(&bump(first)).await?;
                if n == 1 {
                    barrier.wait().await;
                }
                tx.execute(&bump(second)).await?;
                tx.commit().await
            })
            .await
        })
    };
    let (one, two) = (task("a", "b"), task("b", "a"));
    one.await.unwrap().unwrap();
    two.await.unwrap().unwrap();
    let ages: Vec<(i32,)> = db
        .fetch_all(&users::table.select(users::age).order_by(users::name.asc()))
        .await
        .unwrap();
    assert_eq!(ages, [(2,), (2,)], "both transactions committed once each");
    assert!(attempts.load(Ordering::SeqCst) >= 3, "one was retried");
}

/// PostgreSQL: spawned, hand-begun transactions in conflict are retried.
async fn spawned_conflict_is_retried_postgres() {
    let t = adb(Dialect::Postgres, "sconflict", PoolConfig::default()).await;
    spawned_conflict_is_retried(&t).await;
}

/// MariaDB: the same.
async fn spawned_conflict_is_retried_mysql() {
    let t = adb(Dialect::MySql, "sconflict", PoolConfig::default()).await;
    spawned_conflict_is_retried(&t).await;
}

/// PostgreSQL: a real conflict is retried.
async fn real_conflict_is_retried_postgres() {
    let t = adb(Dialect::Postgres, "aconflict", PoolConfig::default()).await;
    real_conflict_is_retried(&t).await;
}

/// MariaDB: a real deadlock is retried.
async fn real_conflict_is_retried_mysql() {
    let t = adb(Dialect::MySql, "aconflict", PoolConfig::default()).await;
    real_conflict_is_retried(&t).await;
}

fn main() {
    harness::main(
        [
            crud::cases(),
            atomic_plans_are_all_or_nothing::cases(),
            finders_and_pages::cases(),
            batches_and_bulk_changes::cases(),
            ids_of_kept_rows_when_duplicates_are_skipped::cases(),
            batch_beyond_parameter_limit::cases(),
            transaction_rules::cases(),
            transaction_options_and_retry::cases(),
            own_error_type::cases(),
            typed_loads::cases(),
            one_function_for_both::cases(),
            temporal_and_uuid_values::cases(),
            bad_input::cases(),
            cancellation::cases(),
            cancelled_transactions::cases(),
            text_semantics::cases(),
            streams_in_transactions::cases(),
            vec![
                harness::Case::new("killed_mid_transaction_postgres", move || {
                    harness::block_on(killed_mid_transaction_postgres())
                })
                .needs(&[Dialect::Postgres]),
            ],
            vec![
                harness::Case::new("killed_mid_transaction_mysql", move || {
                    harness::block_on(killed_mid_transaction_mysql())
                })
                .needs(&[Dialect::MySql]),
            ],
            vec![
                harness::Case::new("keys_follow_auto_increment_increment_mysql", move || {
                    harness::block_on(keys_follow_auto_increment_increment_mysql())
                })
                .needs(&[Dialect::MySql]),
            ],
            vec![
                harness::Case::new("copy_path_postgres", move || {
                    harness::block_on(copy_path_postgres())
                })
                .needs(&[Dialect::Postgres]),
            ],
            vec![harness::Case::new("unreachable_server", move || {
                harness::block_on(unreachable_server())
            })],
            vec![harness::Case::new("futures_are_send", move || {
                harness::block_on(futures_are_send())
            })],
            vec![
                harness::Case::new("real_conflict_is_retried_postgres", move || {
                    harness::block_on(real_conflict_is_retried_postgres())
                })
                .needs(&[Dialect::Postgres]),
            ],
            vec![
                harness::Case::new("real_conflict_is_retried_mysql", move || {
                    harness::block_on(real_conflict_is_retried_mysql())
                })
                .needs(&[Dialect::MySql]),
            ],
            vec![
                harness::Case::new("spawned_conflict_is_retried_postgres", move || {
                    harness::block_on(spawned_conflict_is_retried_postgres())
                })
                .needs(&[Dialect::Postgres]),
            ],
            vec![
                harness::Case::new("spawned_conflict_is_retried_mysql", move || {
                    harness::block_on(spawned_conflict_is_retried_mysql())
                })
                .needs(&[Dialect::MySql]),
            ],
        ]
        .into_iter()
        .flatten()
        .collect(),
    );
}
