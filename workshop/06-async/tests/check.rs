//! Stage 6's specification, on SQLite, and on PostgreSQL and MariaDB when they can be reached.

use tandem_async::Executor as _;
use workshop_06_async as stage;

use stage::{Account, TransferError, accounts, total_balance, transfer};
use tandem_async::{BatchOptions, Database, PoolConfig};
use tandem_sql::prelude::*;
use workshop_support::{ENGINES, db};

/// A fresh `accounts` table with these balances on each reachable engine; the ids in insertion order.
async fn engines(
    name: &'static str,
    balances: Vec<i64>,
) -> Vec<(Database, Vec<i64>, db::TestTarget)> {
    let mut out = Vec::new();
    for dialect in ENGINES {
        // The test-support admin client is blocking: off the runtime's threads.
        let Some(target) = tokio::task::spawn_blocking(move || db::target(dialect, name))
            .await
            .unwrap()
        else {
            continue;
        };
        let pool = PoolConfig {
            max_size: 8,
            ..PoolConfig::default()
        };
        let db = Database::open(target.options.clone(), pool).await.unwrap();
        db.create_table(&accounts::table.create_table())
            .await
            .unwrap();
        let rows: Vec<Account> = balances
            .iter()
            .enumerate()
            .map(|(i, b)| Account {
                id: 0,
                owner: format!("owner-{i}"),
                balance: *b,
            })
            .collect();
        let opts = BatchOptions {
            return_ids: true,
            ..BatchOptions::default()
        };
        let ids = if rows.is_empty() {
            Vec::new()
        } else {
            db.repository::<Account>()
                .batch_insert(&rows, &opts)
                .await
                .unwrap()
                .ids
        };
        out.push((db, ids, target));
    }
    out
}

async fn balances(db: &Database, ids: &[i64]) -> Vec<i64> {
    let repo = db.repository::<Account>();
    let mut out = Vec::new();
    for id in ids {
        out.push(repo.get(*id).await.unwrap().balance);
    }
    out
}

/// The streamed total equals the sum of what was inserted, on 20,000 rows and on none.
fn total_of_a_large_table() {
    runtime().block_on(async {
        let balances: Vec<i64> = (0..20_000).map(|i| i * 7 % 1_003).collect();
        let expected: i64 = balances.iter().sum();
        for (db, _, _t) in engines("w6total", balances).await {
            assert_eq!(
                total_balance(&db).await.unwrap(),
                expected,
                "{}",
                db.dialect()
            );
        }
        for (db, _, _t) in engines("w6empty", Vec::new()).await {
            assert_eq!(total_balance(&db).await.unwrap(), 0);
        }
    })
}

/// Transfers move money, refuse overdrafts and missing accounts, and roll back a debit to nowhere.
fn transfers_follow_the_rules() {
    runtime().block_on(async {
        for (db, ids, _t) in engines("w6rules", vec![100, 0]).await {
            transfer(&db, ids[0], ids[1], 30).await.unwrap();
            assert_eq!(balances(&db, &ids).await, [70, 30]);
            assert!(matches!(
                transfer(&db, ids[0], ids[1], 71).await,
                Err(TransferError::Insufficient)
            ));
            assert!(matches!(
                transfer(&db, 9_999, ids[1], 1).await,
                Err(TransferError::NoAccount)
            ));
            assert!(matches!(
                transfer(&db, ids[0], 9_999, 10).await,
                Err(TransferError::NoAccount)
            ));
            assert_eq!(
                balances(&db, &ids).await,
                [70, 30],
                "{}: nothing changed",
                db.dialect()
            );
        }
    })
}

/// Eight tasks transferring at once keep the books (as in stage 4, with tasks instead of threads).
fn concurrent_tasks_keep_the_books() {
    runtime().block_on(async {
        let start = vec![1_000i64; 6];
        for (db, ids, _t) in engines("w6tasks", start.clone()).await {
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
                        for _ in 0..30 {
                            let (a, b) = (next(6) as usize, next(6) as usize);
                            if a == b {
                                continue;
                            }
                            let amount = next(400) as i64 + 1;
                            match transfer(&db, ids[a], ids[b], amount).await {
                                Ok(()) => ok.push((a, b, amount)),
                                Err(TransferError::Insufficient) => {}
                                Err(TransferError::Db(e)) if e.is_retriable() => {}
                                Err(e) => panic!("{}: {e:?}", db.dialect()),
                            }
                        }
                        ok
                    })
                })
                .collect();
            let mut expected = start.clone();
            for t in tasks {
                for (a, b, amount) in t.await.unwrap() {
                    expected[a] -= amount;
                    expected[b] += amount;
                }
            }
            assert_eq!(balances(&db, &ids).await, expected, "{}", db.dialect());
        }
    })
}

/// The runtime each check runs on: two worker threads, as `#[tokio::test(flavor = "multi_thread")]` has.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

workshop_harness::checks!(
    total_of_a_large_table,
    transfers_follow_the_rules,
    concurrent_tasks_keep_the_books,
);
