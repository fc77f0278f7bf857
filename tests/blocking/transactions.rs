//! Transactions: their rules and options, retries of real conflicts, killed sessions, unreachable servers, a
//! blocking transaction run from async code.

use super::*;

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
                Ok(())
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
            Ok(())
        })
        .unwrap();
        assert_eq!(names(db), ["kept", "outer", "inner-ok"]);
    }
);

engine_test!(
    /// A transaction begun by hand: commit keeps its rows, rollback drops them, and one dropped unfinished
    /// is rolled back; each time its connection goes back to the pool, ready for the next call. A read-only
    /// one refuses writes.
    hand_begun_transactions,
    |t: &TestDb| {
        let db = &t.db;
        setup(db);
        let tx = db.begin(TxOptions::default()).unwrap();
        tx.repository::<User>().insert(&user("committed", 1)).unwrap();
        tx.commit().unwrap();
        let tx = db.begin(TxOptions::default()).unwrap();
        tx.repository::<User>().insert(&user("rolled back", 2)).unwrap();
        assert_eq!(tx.repository::<User>().count().unwrap(), 2, "the transaction sees its own row");
        tx.rollback().unwrap();
        {
            let tx = db.begin(TxOptions::default()).unwrap();
            tx.repository::<User>().insert(&user("dropped", 3)).unwrap();
        }
        assert_eq!(names(db), ["committed"]);
        let (open, idle) = db.pool_state();
        assert_eq!(open, idle, "every connection is back in the pool");

        let ro = db.begin(TxOptions::default().read_only()).unwrap();
        assert!(ro.repository::<User>().insert(&user("x", 4)).is_err());
        drop(ro);
        // The connection that refused the write serves the next writer normally.
        db.transaction(|tx| tx.repository::<User>().insert(&user("after", 5)).map(|_| ())).unwrap();
        assert_eq!(names(db), ["committed", "after"]);
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
            Ok(())
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
pub(crate) fn killed_mid_transaction_postgres() {
    let t = db::open(Dialect::Postgres, "killed", PoolConfig::default());
    killed_mid_transaction(&t);
}

/// MariaDB `KILL` mid-transaction.
pub(crate) fn killed_mid_transaction_mysql() {
    let t = db::open(Dialect::MySql, "killed", PoolConfig::default());
    killed_mid_transaction(&t);
}

/// An async service runs a blocking transaction on tokio's blocking pool and gets its result back, on every
/// engine (PostgreSQL's connections block on their own runtime there, without a thread per call).
pub(crate) fn bridge_from_async(dialect: Dialect) {
    harness::block_on(bridge(dialect))
}

async fn bridge(dialect: Dialect) {
    let t = tokio::task::spawn_blocking(move || db::open(dialect, "bridge", PoolConfig::default()))
        .await
        .unwrap();
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

/// Blocking calls made straight from async code — the anti-pattern `run_blocking` exists to avoid, which
/// a service may still do — work the same on every engine: they block their caller's thread and answer
/// (the PostgreSQL executor, which drives tokio-postgres on a runtime of its own, used to panic there),
/// on a current-thread runtime and on a multi-thread one; a pool opened and dropped in async code too.
pub(crate) fn blocking_calls_inside_async_code(dialect: Dialect) {
    let t = db::open(dialect, "inasync", PoolConfig::default());
    setup(&t.db);
    let current = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let multi = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    for (name, rt) in [("current-thread", &current), ("multi-thread", &multi)] {
        let db = t.db.clone();
        let options = t.target.options.clone();
        let found = rt.block_on(async move {
            let id = db.repository::<User>().insert(&user(name, 7))?;
            let found = db.transaction(|tx| tx.repository::<User>().get(id))?;
            // A pool of its own, opened, used and dropped on the runtime's thread.
            let own = Database::open(options, PoolConfig::default())?;
            assert_eq!(own.repository::<User>().get(id)?.name, name);
            drop(own);
            Ok::<_, Error>(found)
        });
        let found = found.unwrap_or_else(|e| panic!("{dialect:?} {name}: {e}"));
        assert_eq!((found.name.as_str(), found.age), (name, 7));
    }
}

/// An unreachable server is a typed connection error at connect time, naming the URL without its password.
pub(crate) fn unreachable_server() {
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
    // It says which server, and why: the URL and the operating system's refusal, as the async side does.
    let text = err.to_string();
    assert!(
        text.contains("cannot connect to postgres://u:***@127.0.0.1:1/none")
            && text.contains("refused"),
        "{text}"
    );
    assert!(matches!(
        Database::connect("oracle://x"),
        Err(Error::InvalidUrl { .. })
    ));
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
                    Ok(())
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
pub(crate) fn real_conflict_is_retried_postgres() {
    let t = db::open(Dialect::Postgres, "conflict", PoolConfig::default());
    real_conflict_is_retried(&t);
}

/// MariaDB: a deadlock is retried.
pub(crate) fn real_conflict_is_retried_mysql() {
    let t = db::open(Dialect::MySql, "conflict", PoolConfig::default());
    real_conflict_is_retried(&t);
}
