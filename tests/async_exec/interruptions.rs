//! Work cut short: dropped streams, query futures and transactions, killed sessions, unreachable servers.

use super::*;
use tandem_test_support::statements as stmts;

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
            Ok(())
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
            Ok(())
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
pub(crate) async fn killed_mid_transaction_postgres() {
    let t = adb(Dialect::Postgres, "akilled", PoolConfig::default()).await;
    killed_mid_transaction(&t).await;
}

/// MariaDB `KILL` mid-transaction.
pub(crate) async fn killed_mid_transaction_mysql() {
    let t = adb(Dialect::MySql, "akilled", PoolConfig::default()).await;
    killed_mid_transaction(&t).await;
}

/// An unreachable server is a typed connection error at connect time, without the password.
pub(crate) async fn unreachable_server() {
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
    // The driver's own error is kept as the source, for what tandem does not classify.
    let Error::Database(lost) = &err else {
        panic!("{err:?}")
    };
    let driver = std::error::Error::source(lost).expect("the driver's error");
    assert!(!driver.to_string().is_empty(), "{driver:?}");
    assert!(matches!(
        Database::connect("oracle://x").await,
        Err(Error::InvalidUrl { .. })
    ));
}

/// tokio-postgres keeps no statements of its own: each of tandem's connections keeps what it prepared,
/// letting go of the one used least recently past 64: a statement used between every two of 150 distinct ones stays prepared all along, and each one let
/// go is closed on the server (`pg_prepared_statements`).
pub(crate) async fn hot_statements_stay_prepared_postgres() {
    let t = adb_with(
        Dialect::Postgres,
        |o| o.async_driver = tandem_core::AsyncDriver::Native,
        "ahot",
        PoolConfig::default(),
    )
    .await;
    let conn = t.db.checkout().await.unwrap();
    let (hot, answer) = stmts::interleaved().next().unwrap();
    assert_eq!(conn.fetch_one::<(i64,)>(&hot).await.unwrap().0, answer);
    let before: Vec<(String, String)> = conn.fetch_all(&stmts::prepared_statement()).await.unwrap();
    for (select, answer) in stmts::interleaved() {
        let (got,): (i64,) = conn.fetch_one(&select).await.unwrap();
        assert_eq!(got, answer, "{}", select.sql);
    }
    let after: Vec<(String, String)> = conn.fetch_all(&stmts::prepared_statement()).await.unwrap();
    stmts::check_postgres(&before, &after);
}

/// mysql_async's statement cache is off and each connection keeps its prepared statements itself: more
/// distinct statements than it keeps (64) on one connection all answer right, the first ones again after
/// they were let go, and the server holds no more of them open than the connection keeps — each one let
/// go was closed (the session's own `Com_stmt_prepare` and `Com_stmt_close` counters).
pub(crate) async fn statements_kept_and_closed_mysql() {
    let t = adb_with(
        Dialect::MySql,
        |o| o.async_driver = tandem_core::AsyncDriver::Native,
        "astmts",
        PoolConfig::default(),
    )
    .await;
    let conn = t.db.checkout().await.unwrap();
    let counters = || async {
        let rows: Vec<(String, String)> =
            conn.fetch_all(&stmts::counters_statement()).await.unwrap();
        stmts::counters(&rows)
    };
    let before = counters().await;
    for (select, answer) in stmts::calls() {
        let (got,): (i64,) = conn.fetch_one(&select).await.unwrap();
        assert_eq!(got, answer, "{}", select.sql);
    }
    stmts::check(before, counters().await);
}
