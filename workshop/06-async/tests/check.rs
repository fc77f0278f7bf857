//! Stage 6's specification. `just check 06` runs it on your `src/exercise.rs`, on SQLite, and on PostgreSQL
//! and MariaDB when they can be reached. The oracles: what the database holds afterwards, the process's
//! resident memory while a million rows stream, and a timer that must keep ticking while SQLite works.

use std::time::{Duration, Instant};

use asynchronous::{Database, Pool, Transaction, transfer};
use blocking::{ATTEMPTS, DbErrorKind, Error, RETRY_PAUSE, TransferError, accounts};
use dialects::{GeneratedKey, Insert, Order, Select, Statement};
use futures_util::StreamExt;
use futures_util::future::join;
use tables::{Dialect, Table, Value};
use workshop_support::LockProbe;

/// The same engine, as tandem names it.
fn tandem_dialect(d: Dialect) -> tandem_sql::Dialect {
    d.to_string().parse().expect("tandem knows every engine")
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn sql(text: &str) -> Statement {
    Statement {
        sql: text.to_owned(),
        params: vec![],
        key: GeneratedKey::None,
    }
}

/// Runs `f` on a fresh database of at most `max` connections with the `accounts` table, on every engine
/// that answers.
fn on_engines<F, Fut>(name: &str, max: usize, f: F)
where
    F: Fn(Database, String) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    for d in Dialect::ALL {
        let Some(target) = workshop_support::db::target_or_skip(tandem_dialect(d), name) else {
            continue;
        };
        let url = target.url();
        runtime().block_on(async {
            let db = Database::open(&url, max)
                .await
                .unwrap_or_else(|e| panic!("{d}: open {url}: {e}"));
            db.execute(&sql(&<accounts::table as Table>::schema().create_table(d)))
                .await
                .unwrap_or_else(|e| panic!("{d}: CREATE TABLE: {e}"));
            f(db, url).await;
        });
    }
}

/// Accounts with these balances; their keys in order.
async fn open_accounts(db: &Database, balances: &[i64]) -> Vec<i64> {
    let d = db.dialect();
    let mut insert = Insert::into(accounts::table, vec!["owner", "balance"]);
    for (i, b) in balances.iter().enumerate() {
        insert = insert.row(vec![Value::Text(format!("owner-{i}")), Value::I64(*b)]);
    }
    db.execute(&insert.render(d).unwrap()).await.unwrap();
    ledger(db).await.into_iter().map(|r| r.0).collect()
}

/// Every account's key and balance, in key order.
async fn ledger(db: &Database) -> Vec<(i64, i64)> {
    let st = Select::from(accounts::table)
        .order_by(accounts::id, Order::Asc)
        .render(db.dialect())
        .unwrap();
    db.fetch::<(i64, String, i64)>(&st)
        .await
        .unwrap_or_else(|e| panic!("{}: {e}", db.dialect()))
        .into_iter()
        .map(|r| (r.0, r.2))
        .collect()
}

/// Statements, keys and typed rows work as on the blocking side: `RETURNING` or `LAST_INSERT_ID`,
/// NULL and text and numbers round trip, a duplicate key is a `UniqueViolation`.
fn statements_run_on_every_engine() {
    on_engines("w6run", 2, async |db, _| {
        let d = db.dialect();
        let st = Insert::into(accounts::table, vec!["owner", "balance"])
            .row(vec![Value::Text("o'brien ü".into()), Value::I64(-5)])
            .returning_key()
            .render(d)
            .unwrap();
        let id = match st.key {
            GeneratedKey::Returning => db.fetch::<(i64,)>(&st).await.unwrap()[0].0,
            _ => db.execute(&st).await.unwrap().last_insert_id.unwrap(),
        };
        assert_eq!(ledger(&db).await, [(id, -5)], "{d}");
        let name: Vec<(String, Option<String>)> = db
            .fetch(&sql("SELECT owner, NULL FROM accounts"))
            .await
            .unwrap();
        assert_eq!(name, [("o'brien ü".to_owned(), None)], "{d}");
        let again = Insert::into(accounts::table, vec!["id", "owner", "balance"])
            .row(vec![Value::I64(id), Value::Text("x".into()), Value::I64(0)])
            .render(d)
            .unwrap();
        let e = db.execute(&again).await.unwrap_err();
        assert_eq!(e.kind(), Some(DbErrorKind::UniqueViolation), "{d}: {e}");
        assert!(matches!(
            db.fetch::<(i64,)>(&sql("SELECT id, owner FROM accounts"))
                .await,
            Err(Error::Columns { .. })
        ));
    });
}

/// A million rows stream through with flat memory: the process grows by less than 48 MiB while they
/// pass (held at once they would take well over 100 MiB), and every row arrives once.
fn a_million_rows_stream_in_flat_memory() {
    on_engines("w6stream", 2, async |db, _| {
        let d = db.dialect();
        db.execute(&sql("CREATE TABLE digits (d INTEGER NOT NULL)"))
            .await
            .unwrap();
        db.execute(&sql(
            "INSERT INTO digits (d) VALUES (0), (1), (2), (3), (4), (5), (6), (7), (8), (9)",
        ))
        .await
        .unwrap();
        let pad = "x".repeat(100);
        let query = format!(
            "SELECT a.d + 10 * b.d + 100 * c.d + 1000 * e.d + 10000 * f.d + 100000 * g.d, '{pad}' \
             FROM digits a, digits b, digits c, digits e, digits f, digits g"
        );
        let before = rss();
        let mut peak = before;
        let mut rows = db.stream(sql(&query)).await.unwrap();
        let (mut count, mut sum) = (0u64, 0i64);
        while let Some(row) = rows.next().await {
            let row = row.unwrap_or_else(|e| panic!("{d}: {e}"));
            let n = match &row[0] {
                Value::I64(n) => *n,
                Value::I32(n) => i64::from(*n),
                other => panic!("{d}: {other:?}"),
            };
            assert_eq!(row[1], Value::Text(pad.clone()));
            count += 1;
            sum += n;
            if count % 20_000 == 0 {
                peak = peak.max(rss());
            }
        }
        assert_eq!(
            (count, sum),
            (1_000_000, 499_999_500_000),
            "{d}: every row once"
        );
        let grew = peak.saturating_sub(before);
        assert!(
            grew < 48 << 20,
            "{d}: the process grew by {} MiB while the rows streamed: are they buffered somewhere?",
            grew >> 20
        );
    });
}

/// Resident memory now, in bytes.
fn rss() -> usize {
    memory_stats::memory_stats().map_or(0, |m| m.physical_mem)
}

/// `commit` keeps the writes; a transaction dropped without `commit` (or rolled back) leaves none, and its
/// connection goes back to work.
fn transactions_commit_or_roll_back_when_dropped() {
    on_engines("w6tx", 1, async |db, _| {
        let d = db.dialect();
        let ids = open_accounts(&db, &[100, 0]).await;
        let pay = |amount: i64| {
            dialects::Update::table(accounts::table)
                .add(accounts::balance, amount)
                .filter(expressions::ColumnExt::eq(accounts::id, ids[1]))
                .render(d)
                .unwrap()
        };
        let mut tx = db.begin().await.unwrap();
        tx.execute(&pay(1)).await.unwrap();
        tx.commit().await.unwrap();
        let mut tx = db.begin().await.unwrap();
        tx.execute(&pay(10)).await.unwrap();
        drop(tx);
        let mut tx: Transaction = db.begin().await.unwrap();
        tx.execute(&pay(100)).await.unwrap();
        tx.rollback().await.unwrap();
        assert_eq!(
            ledger(&db).await,
            [(ids[0], 100), (ids[1], 1)],
            "{d}: only the committed payment (one connection: the dropped one was cleaned before reuse)"
        );
    });
}

/// Polls `fut` until it has been suspended `n` times, then drops it: a cancellation at its `n`-th await
/// point (`None`), whatever the timer's resolution; its output if it finished first.
async fn cancelled_at<F: std::future::Future>(n: u32, fut: F) -> Option<F::Output> {
    let mut fut = std::pin::pin!(fut);
    let mut suspended = 0;
    std::future::poll_fn(|cx| match fut.as_mut().poll(cx) {
        std::task::Poll::Ready(v) => std::task::Poll::Ready(Some(v)),
        std::task::Poll::Pending => {
            suspended += 1;
            if suspended == n {
                std::task::Poll::Ready(None)
            } else {
                std::task::Poll::Pending
            }
        }
    })
    .await
}

/// A transfer cancelled at each of its await points in turn — while BEGIN runs, between statements,
/// while COMMIT runs — is rolled back at once (its locks are gone before the connection is next lent),
/// leaves every pooled connection usable (the next transfers on both succeed) and no transfer half done.
fn cancelled_futures_leave_the_pool_usable() {
    on_engines("w6cancel", 2, async |db, url| {
        let d = db.dialect();
        let ids = open_accounts(&db, &[10_000, 10_000]).await;
        let probe = LockProbe::new(&url);
        // Where a future suspends depends on how fast the other side answers (a SQLite worker may have
        // answered before the future looks, and a busy machine makes that common): sweeps over the await
        // points, at least four, until four cuts were made or forty sweeps are done.
        let mut cuts = 0;
        let mut sweeps = 0;
        while sweeps < 4 || (cuts < 4 && sweeps < 40) {
            sweeps += 1;
            for n in 1.. {
                if let Some(r) = cancelled_at(n, transfer(&db, ids[0], ids[1], 1)).await {
                    r.unwrap_or_else(|e| panic!("{d}: a transfer left to finish: {e:?}"));
                    break;
                }
                cuts += 1;
                // Rolled back at once: within a second, and before anything else borrows a connection, no
                // transaction holds a lock on the accounts (on SQLite: the write lock).
                let mut free = false;
                for _ in 0..50 {
                    let (probe, ids) = (probe.clone(), ids.clone());
                    free = tokio::task::spawn_blocking(move || probe.free("accounts", &ids))
                        .await
                        .unwrap();
                    if free {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                assert!(
                    free,
                    "{d}: a transfer cancelled at its await point {n} still held its locks a second later. \
                     Two ways to get there: the connection went back not marked \"in a transaction\" — mark \
                     it before BEGIN is sent, since a future dropped while BEGIN runs leaves the transaction \
                     open — or its rollback waits until the connection is next lent (Pooled's Drop must \
                     spawn it at once)"
                );
                // Both connections, at once: each can run a whole transfer, so neither was left inside a
                // transaction or a half-read result.
                let (a, b) = join(
                    transfer(&db, ids[1], ids[0], 1),
                    transfer(&db, ids[0], ids[1], 1),
                )
                .await;
                for r in [a, b] {
                    if let Err(e) = r {
                        panic!(
                            "{d}: after a transfer cancelled at its await point {n}, the next transfer \
                             failed: {e:?} — a connection was lent again with a transaction still open: \
                             mark it \"in a transaction\" before BEGIN is sent, not after"
                        );
                    }
                }
                // (A transfer cancelled while its COMMIT was on the wire may have committed: the two reads
                // can see it or not, but never half of it.)
                let (a, b) = join(ledger(&db), ledger(&db)).await;
                for seen in [a, b] {
                    let total: i64 = seen.iter().map(|r| r.1).sum();
                    assert_eq!(
                        total, 20_000,
                        "{d}: cancelled at await point {n}: no half transfer"
                    );
                }
            }
        }
        assert!(
            cuts >= 4,
            "{d}: in {sweeps} transfers run to the end, only {cuts} were cut at an await point: a transfer \
             must await its statements (send them and await the answer), not run them to the end in one poll"
        );
        let mut rows = db.stream(sql("SELECT id FROM accounts")).await.unwrap();
        rows.next().await;
        drop(rows);
        let (a, b) = join(ledger(&db), ledger(&db)).await;
        assert_eq!(a.len() + b.len(), 4, "{d}: a stream dropped half-read");
        // A cleanup may still be running: give it a moment, then every connection must be back.
        for _ in 0..100 {
            if db.pool().status().in_use == 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let status = db.pool().status();
        assert_eq!(
            status.in_use, 0,
            "{d}: every connection went back: {status:?}"
        );
    });
}

/// A statement the server fails as it fails a deadlock victim — PostgreSQL SQLSTATE 40P01, MariaDB error
/// 1213 — every time it runs: a conflict without the race.
fn forced_deadlock(d: Dialect) -> dialects::Statement {
    sql(match d {
        Dialect::Postgres => {
            "DO $$BEGIN RAISE EXCEPTION 'forced deadlock' USING ERRCODE = '40P01'; END$$"
        }
        _ => "SIGNAL SQLSTATE '40001' SET MYSQL_ERRNO = 1213, MESSAGE_TEXT = 'forced deadlock'",
    })
}

/// `Database::transaction` with an async closure: `Ok` commits, `Err` rolls back; on the servers a
/// deadlock reruns the whole closure after a pause of at least `RETRY_PAUSE`, and one that deadlocks
/// every time runs `ATTEMPTS` times and returns the deadlock.
fn the_transaction_closure_commits_rolls_back_and_retries() {
    on_engines("w6closure", 2, async |db, _| {
        let d = db.dialect();
        let ids = open_accounts(&db, &[100, 100]).await;
        let pay = move |amount: i64| {
            dialects::Update::table(accounts::table)
                .add(accounts::balance, amount)
                .filter(expressions::ColumnExt::eq(accounts::id, ids[1]))
                .render(d)
                .unwrap()
        };
        db.transaction(async |tx: &mut Transaction| tx.execute(&pay(1)).await.map(drop))
            .await
            .unwrap_or_else(|e| panic!("{d}: a transaction whose closure returns Ok: {e}"));
        let refused: Result<(), Error> = db
            .transaction(async |tx: &mut Transaction| {
                tx.execute(&pay(10)).await?;
                Err(Error::Connect("refused by the closure".into()))
            })
            .await;
        assert!(refused.is_err(), "{d}: the closure's error comes back");
        assert_eq!(
            ledger(&db).await[1].1,
            101,
            "{d}: Ok committed, Err rolled back"
        );
        if d == Dialect::Sqlite {
            return;
        }
        let mut runs = 0u32;
        db.transaction(async |tx: &mut Transaction| {
            runs += 1;
            tx.execute(&pay(100)).await?;
            if runs == 1 {
                tx.execute(&forced_deadlock(d)).await?;
            }
            Ok::<_, Error>(())
        })
        .await
        .unwrap_or_else(|e| panic!("{d}: a deadlock once, then a clean run, must commit: {e}"));
        assert_eq!(runs, 2, "{d}: the closure ran again after the deadlock");
        assert_eq!(
            ledger(&db).await[1].1,
            201,
            "{d}: only the second run's payment is kept"
        );
        let (mut runs, mut failed_at, mut gaps) = (0u32, None::<Instant>, Vec::new());
        let r = db
            .transaction(async |tx: &mut Transaction| {
                runs += 1;
                if let Some(t) = failed_at.take() {
                    gaps.push(t.elapsed());
                }
                let r = tx.execute(&forced_deadlock(d)).await;
                failed_at = Some(Instant::now());
                r.map(drop)
            })
            .await;
        assert!(
            matches!(&r, Err(e) if e.kind() == Some(DbErrorKind::Deadlock)),
            "{d}: a transaction that deadlocks every time ends with the deadlock, got {r:?}"
        );
        assert_eq!(runs, ATTEMPTS, "{d}: it runs ATTEMPTS times");
        for (i, gap) in gaps.iter().enumerate() {
            assert!(
                *gap >= RETRY_PAUSE,
                "{d}: run {} began {gap:?} after run {} deadlocked: pause RETRY_PAUSE ({RETRY_PAUSE:?}, \
                 doubled each time) before a retry",
                i + 2,
                i + 1
            );
        }
    });
}

/// Stage 4's money test with eight tasks: the balances are what the successful transfers say.
fn money_is_neither_created_nor_lost() {
    on_engines("w6money", 8, async |db, _| {
        let d = db.dialect();
        let start = [1_000i64; 6];
        let ids = open_accounts(&db, &start).await;
        assert!(matches!(
            transfer(&db, ids[0], ids[1], 5_000).await,
            Err(TransferError::Insufficient)
        ));
        assert!(matches!(
            transfer(&db, ids[0], -1, 10).await,
            Err(TransferError::NoAccount)
        ));
        let tasks: Vec<_> = (0..8u64)
            .map(|t| {
                let (db, ids) = (db.clone(), ids.clone());
                tokio::spawn(async move {
                    let mut seed = 0x2545_f491_4f6c_dd1d ^ (t + 1);
                    let mut next = move |n: u64| {
                        seed ^= seed << 13;
                        seed ^= seed >> 7;
                        seed ^= seed << 17;
                        seed % n
                    };
                    let mut ok = Vec::new();
                    for _ in 0..20 {
                        let (a, b) = (next(6) as usize, next(6) as usize);
                        if a == b {
                            continue;
                        }
                        let amount = next(400) as i64 + 1;
                        match transfer(&db, ids[a], ids[b], amount).await {
                            Ok(()) => ok.push((a, b, amount)),
                            Err(TransferError::Insufficient) => {}
                            Err(TransferError::Db(e)) if e.is_retriable() => {}
                            Err(e) => panic!("{e:?}"),
                        }
                    }
                    ok
                })
            })
            .collect();
        let mut expected = start.to_vec();
        for t in tasks {
            for (a, b, amount) in t.await.unwrap_or_else(|e| panic!("{d}: {e}")) {
                expected[a] -= amount;
                expected[b] += amount;
            }
        }
        let got: Vec<i64> = ledger(&db).await.into_iter().map(|r| r.1).collect();
        assert_eq!(got, expected, "{d}: the ledger of successful transfers");
    });
}

/// The pool lends at most its size and says `PoolTimeout` to a caller that waited too long.
fn the_pool_is_bounded_and_times_out() {
    on_engines("w6pool", 2, async |_, url| {
        let db = Database::open_with(&url, 2, Duration::from_millis(200))
            .await
            .unwrap();
        let d = db.dialect();
        let a = db.pool().get().await.unwrap();
        let b = db.pool().get().await.unwrap();
        assert!(
            matches!(
                db.pool().get().await,
                Err(Error::PoolTimeout { max: 2, .. })
            ),
            "{d}: a third caller while two are lent"
        );
        drop((a, b));
        let tasks: Vec<_> = (0..16)
            .map(|_| {
                let db = db.clone();
                tokio::spawn(async move {
                    for _ in 0..5 {
                        ledger(&db).await;
                        assert!(db.pool().status().in_use <= 2);
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
    });
}

/// SQLite runs on the worker threads, never on the runtime's: with one runtime thread, a timer keeps
/// ticking while a slow SQLite query runs.
fn sqlite_never_blocks_the_runtime() {
    let target =
        workshop_support::db::target_or_skip(tandem_sql::Dialect::Sqlite, "w6block").unwrap();
    let url = target.url();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let db = Database::open(&url, 1).await.unwrap();
        let slow = sql(
            "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 3000000) \
             SELECT count(*) FROM c",
        );
        let ticker = tokio::spawn(async {
            let mut worst = Duration::ZERO;
            let mut last = Instant::now();
            for _ in 0..40 {
                tokio::time::sleep(Duration::from_millis(5)).await;
                worst = worst.max(last.elapsed());
                last = Instant::now();
            }
            worst
        });
        // The ticker is running before the query starts: a query that blocks this thread then stops it.
        tokio::time::sleep(Duration::from_millis(20)).await;
        let started = Instant::now();
        let n: Vec<(i64,)> = db.fetch(&slow).await.unwrap();
        let query_took = started.elapsed();
        assert_eq!(n, [(3_000_000,)]);
        let worst = ticker.await.unwrap();
        assert!(
            worst < query_took / 2 || query_took < Duration::from_millis(100),
            "the runtime's only thread stalled for {worst:?} while a {query_took:?} SQLite query ran: \
             either the query ran on it, or the caller blocked it waiting for the worker's answer (a \
             std channel's `recv`). Run the query on the worker and await its answer (a tokio oneshot)"
        );
    });
}

/// A `get` that took its slot and then failed to open a connection — or was dropped while opening one —
/// gives the slot back: a pool of one whose only connect failed is not full. No database needed: the
/// "server" here accepts each connection and closes it 300 ms later without a word.
fn a_failed_or_dropped_open_frees_its_slot() {
    let server = workshop_support::NoLogin::start(Duration::from_millis(300));
    let url = format!("postgres://w6@127.0.0.1:{}/w6", server.port());
    runtime().block_on(async {
        let pool = Pool::new(&url, 1, Duration::from_secs(2));
        let expect_connect = |what: &str, got: Result<(), Error>| match got {
            Err(Error::Connect(_)) => {}
            Err(Error::PoolTimeout { .. }) => panic!(
                "{what}: PoolTimeout from a pool of one with no connection lent — a `get` before it \
                 kept its slot. Give the slot back whenever a `get` ends without a connection: when \
                 opening fails, and when the future is dropped while opening"
            ),
            other => panic!(
                "{what}: the server never lets anyone log in, so opening fails: expected \
                 Err(Error::Connect(..)), got {other:?}"
            ),
        };
        expect_connect("the first get", pool.get().await.map(drop));
        expect_connect("a second get, after the first failed", pool.get().await.map(drop));
        assert_eq!(
            pool.status().in_use,
            0,
            "no connection is lent after two failed opens"
        );
        let dropped = tokio::time::timeout(Duration::from_millis(50), pool.get()).await;
        assert!(
            dropped.is_err(),
            "a get whose connect takes 300 ms is still under way after 50 ms"
        );
        assert_eq!(
            pool.status().in_use,
            0,
            "a get dropped while it was opening a connection holds no slot"
        );
        expect_connect("a get after one was dropped while opening", pool.get().await.map(drop));
    });
    assert_eq!(
        server.accepted(),
        4,
        "connections the server saw: one per get"
    );
}

/// A COMMIT the database refuses is an error, from `commit` and from `transaction` — here a foreign key
/// checked at COMMIT is still violated (SQLite and PostgreSQL; MariaDB checks every key at once, so this
/// check skips it) — and the connection comes back usable: the next statement commits on its own.
fn a_failed_commit_is_an_error() {
    on_engines("w6commit", 1, async |db, url| {
        let d = db.dialect();
        if d == Dialect::MySql {
            return;
        }
        let mut setup = vec![
            "CREATE TABLE owners (id BIGINT PRIMARY KEY)",
            "CREATE TABLE pets (id BIGINT PRIMARY KEY, \
             owner BIGINT REFERENCES owners (id) DEFERRABLE INITIALLY DEFERRED)",
        ];
        if d == Dialect::Sqlite {
            // Per connection; the pool's one connection is every transaction's here.
            setup.push("PRAGMA foreign_keys = ON");
        }
        for ddl in setup {
            db.execute(&sql(ddl))
                .await
                .unwrap_or_else(|e| panic!("{d}: {e}: {ddl}"));
        }
        let mut tx = db
            .begin()
            .await
            .unwrap_or_else(|e| panic!("{d}: begin: {e}"));
        tx.execute(&sql("INSERT INTO pets (id, owner) VALUES (1, 7)"))
            .await
            .unwrap_or_else(|e| panic!("{d}: a pet, its owner checked only at COMMIT: {e}"));
        let r = tx.commit().await;
        assert!(
            r.is_err(),
            "{d}: the COMMIT of a pet whose owner does not exist (the foreign key is checked at COMMIT) \
             fails, and `commit` must say so: got {r:?}"
        );
        let r = db
            .transaction(async |tx| {
                tx.execute(&sql("INSERT INTO pets (id, owner) VALUES (2, 8)"))
                    .await?;
                Ok::<_, Error>(())
            })
            .await;
        assert!(
            r.is_err(),
            "{d}: a transaction whose COMMIT failed is an error: got {r:?}"
        );
        db.execute(&sql("INSERT INTO owners (id) VALUES (7)"))
            .await
            .unwrap_or_else(|e| panic!("{d}: a statement after the failed COMMITs: {e}"));
        let other = Database::open(&url, 1)
            .await
            .unwrap_or_else(|e| panic!("{d}: a second database: {e}"));
        let counts: Vec<(i64, i64)> = other
            .fetch(&sql(
                "SELECT (SELECT count(*) FROM owners), (SELECT count(*) FROM pets)",
            ))
            .await
            .unwrap_or_else(|e| panic!("{d}: {e}"));
        assert_eq!(
            counts,
            [(1, 0)],
            "{d}: (owners, pets) another connection reads: neither pet was committed, and the owner \
             inserted after them was"
        );
    });
}

workshop_harness::checks!(
    statements_run_on_every_engine,
    transactions_commit_or_roll_back_when_dropped,
    cancelled_futures_leave_the_pool_usable,
    the_transaction_closure_commits_rolls_back_and_retries,
    money_is_neither_created_nor_lost,
    the_pool_is_bounded_and_times_out,
    a_failed_or_dropped_open_frees_its_slot,
    a_failed_commit_is_an_error,
    sqlite_never_blocks_the_runtime;
    // Measures this process's memory: in a process of its own, so that no other check's rows count.
    alone: a_million_rows_stream_in_flat_memory,
);
