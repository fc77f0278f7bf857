//! Streaming 200,000 rows to a slow consumer does not grow the process's memory with the row count, on
//! either executor: the producer waits for the consumer, a bounded number of rows at a time. (Its own test
//! binary, so no other test's allocations share the process.)

use tandem_test_support::schema as support;
use tandem_test_support::{db, harness};

use futures_util::StreamExt;
use support::{User, users};
use tandem_async::Executor as _;
use tandem_blocking::Executor as _;
use tandem_core::{BatchOptions, Find};
use tandem_pool::PoolConfig;
use tandem_sql::Dialect;
use tandem_sql::prelude::*;

const ROWS: usize = 200_000;
/// What materialising the result would cost at least (200,000 users of ~60 bytes of values each).
const BOUND_BYTES: i64 = 6 << 20;

/// Resident set size of this process, in bytes, as the OS reports it (`memory-stats`).
fn rss() -> i64 {
    memory_stats::memory_stats()
        .expect("the OS reports this process's memory")
        .physical_mem as i64
}

fn seed(db: &tandem_blocking::Database) {
    db.create_table(&users::table.create_table()).unwrap();
    let rows: Vec<User> = (0..ROWS)
        .map(|i| User {
            id: 0,
            name: format!("user-{i:08}-{}", "x".repeat(24)),
            age: i as i32,
            email: None,
        })
        .collect();
    db.repository::<User>()
        .batch_insert(&rows, &BatchOptions::default())
        .unwrap();
}

/// Reads every row slowly (a pause every 500 rows), returning the count and the peak RSS growth seen after
/// the first 10,000 rows.
fn consume_blocking(db: &tandem_blocking::Database) -> (usize, i64) {
    let mut stream = db.repository::<User>().find_all(Find::all()).unwrap();
    let mut n = 0;
    let mut base = 0;
    let mut peak = 0;
    for u in stream.by_ref() {
        u.unwrap();
        n += 1;
        if n == 10_000 {
            base = rss();
        }
        if n % 500 == 0 {
            std::thread::sleep(std::time::Duration::from_micros(300));
            if n > 10_000 {
                peak = peak.max(rss() - base);
            }
        }
    }
    (n, peak)
}

async fn consume_async(db: &tandem_async::Database) -> (usize, i64) {
    let mut stream = db.repository::<User>().find_all(Find::all()).await.unwrap();
    let mut n = 0;
    let mut base = 0;
    let mut peak = 0;
    while let Some(u) = stream.next().await {
        u.unwrap();
        n += 1;
        if n == 10_000 {
            base = rss();
        }
        if n % 500 == 0 {
            tokio::time::sleep(std::time::Duration::from_micros(300)).await;
            if n > 10_000 {
                peak = peak.max(rss() - base);
            }
        }
    }
    (n, peak)
}

fn check(dialect: Dialect) {
    let target = db::target(dialect, "memory");
    let blocking =
        tandem_blocking::Database::open(target.options.clone(), PoolConfig::default()).unwrap();
    seed(&blocking);
    let (n, growth) = consume_blocking(&blocking);
    eprintln!(
        "{dialect} blocking: {n} rows streamed, RSS growth {} KiB",
        growth / 1024
    );
    assert_eq!(n, ROWS);
    assert!(
        growth < BOUND_BYTES,
        "{dialect} blocking stream grew RSS by {growth} bytes"
    );

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (n, growth) = rt.block_on(async {
        let db = tandem_async::Database::open(target.options.clone(), PoolConfig::default())
            .await
            .unwrap();
        consume_async(&db).await
    });
    eprintln!(
        "{dialect} async: {n} rows streamed, RSS growth {} KiB",
        growth / 1024
    );
    assert_eq!(n, ROWS);
    assert!(
        growth < BOUND_BYTES,
        "{dialect} async stream grew RSS by {growth} bytes"
    );
}

/// SQLite, then PostgreSQL and MariaDB when reachable, one after the other in one test so measurements do
/// not overlap.
fn slow_consumers_hold_bounded_memory() {
    check(Dialect::Sqlite);
    check(Dialect::Postgres);
    check(Dialect::MySql);
}

fn main() {
    harness::main(
        [vec![
            harness::Case::new(
                "slow_consumers_hold_bounded_memory",
                slow_consumers_hold_bounded_memory,
            )
            .needs(&[Dialect::Postgres, Dialect::MySql]),
        ]]
        .into_iter()
        .flatten()
        .collect(),
    );
}
