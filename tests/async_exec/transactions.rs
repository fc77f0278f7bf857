//! Transactions: their rules and options, retries of real conflicts, streams inside them, `Send` futures.

use super::*;

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
            Ok(())
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
        Ok(())
    })
    .await
    .unwrap();
    assert_eq!(names(db).await, ["kept", "outer", "inner-ok"]);
}

async_engine_test!(
    /// Commit on Ok; rollback on Err and on panic leaves no row; a rolled-back savepoint keeps the outer work.
    transaction_rules
);

/// Waits (up to 5 s) for a background rollback to land.
pub(crate) async fn wait_for<F: std::future::Future<Output = bool>>(mut check: impl FnMut() -> F) {
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
            Ok(n)
        })
        .await
        .unwrap();
    assert_eq!(n, 3_000);
}

async_engine_test!(
    /// A stream read inside a transaction gives the connection back to it.
    streams_in_transactions
);

/// Repository calls and transaction futures can be spawned on tokio (they are `Send`), as web handlers need.
pub(crate) async fn futures_are_send() {
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
                    Ok(())
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
pub(crate) async fn spawned_conflict_is_retried_postgres() {
    let t = adb(Dialect::Postgres, "sconflict", PoolConfig::default()).await;
    spawned_conflict_is_retried(&t).await;
}

/// MariaDB: the same.
pub(crate) async fn spawned_conflict_is_retried_mysql() {
    let t = adb(Dialect::MySql, "sconflict", PoolConfig::default()).await;
    spawned_conflict_is_retried(&t).await;
}

/// PostgreSQL: a real conflict is retried.
pub(crate) async fn real_conflict_is_retried_postgres() {
    let t = adb(Dialect::Postgres, "aconflict", PoolConfig::default()).await;
    real_conflict_is_retried(&t).await;
}

/// MariaDB: a real deadlock is retried.
pub(crate) async fn real_conflict_is_retried_mysql() {
    let t = adb(Dialect::MySql, "aconflict", PoolConfig::default()).await;
    real_conflict_is_retried(&t).await;
}
