//! Stage 5's specification, on SQLite, and on PostgreSQL and MariaDB when they can be reached. The
//! expected answers are computed in Rust from the rows the test inserted.

use tandem_blocking::Executor as _;
#[cfg(not(feature = "solution"))]
use workshop_05_repositories as stage;
#[cfg(feature = "solution")]
#[allow(dead_code)] // items of the solution no test calls (given types, the entity's own impls)
#[path = "../solution/lib.rs"]
mod stage;

use stage::{Account, accounts, id_pages, rich, top_up};
use tandem_blocking::{BatchOptions, Database, PoolConfig};
use tandem_sql::prelude::*;
use workshop_support::{ENGINES, db};

/// 157 accounts with balances that repeat (so ties happen), on every reachable engine.
fn on_engines(name: &str, f: impl Fn(&Database, &[Account])) {
    for dialect in ENGINES {
        let Some(target) = db::target(dialect, name) else {
            continue;
        };
        let db = Database::open(target.options.clone(), PoolConfig::default()).unwrap();
        db.create_table(&accounts::table.create_table()).unwrap();
        let rows: Vec<Account> = (0..157)
            .map(|i| Account {
                id: 0,
                owner: format!("owner-{i:03}"),
                balance: (i * 37 % 11) * 100,
            })
            .collect();
        let repo = db.repository::<Account>();
        let opts = BatchOptions {
            return_ids: true,
            ..BatchOptions::default()
        };
        let ids = repo.batch_insert(&rows, &opts).unwrap().ids;
        let stored: Vec<Account> = rows
            .into_iter()
            .zip(ids)
            .map(|(a, id)| Account { id, ..a })
            .collect();
        f(&db, &stored);
    }
}

/// `rich` returns exactly the accounts at or above the floor, richest first, ties by id.
fn rich_accounts_in_order() {
    on_engines("w5rich", |db, all| {
        let mut expected: Vec<Account> = all.iter().filter(|a| a.balance >= 600).cloned().collect();
        expected.sort_by(|a, b| b.balance.cmp(&a.balance).then(a.id.cmp(&b.id)));
        assert_eq!(
            rich(&db.repository(), 600).unwrap(),
            expected,
            "{}",
            db.dialect()
        );
        assert!(rich(&db.repository(), 10_000).unwrap().is_empty());
    });
}

/// Keyset pages: every id once, in order, `size` per page but the last.
fn keyset_pages_cover_every_row_once() {
    on_engines("w5pages", |db, all| {
        let mut ids: Vec<i64> = all.iter().map(|a| a.id).collect();
        ids.sort();
        for size in [1u64, 10, 50, 157, 500] {
            let pages = id_pages(&db.repository(), size).unwrap();
            let flat: Vec<i64> = pages.iter().flatten().copied().collect();
            assert_eq!(flat, ids, "{} size {size}", db.dialect());
            let (last, full) = pages.split_last().unwrap();
            assert!(full.iter().all(|p| p.len() as u64 == size));
            assert!(!last.is_empty() && last.len() as u64 <= size);
        }
    });
}

/// `top_up` changes exactly the accounts below the floor, to the floor, in one statement.
fn top_up_raises_the_poor_only() {
    on_engines("w5topup", |db, all| {
        let below = all.iter().filter(|a| a.balance < 300).count() as u64;
        assert_eq!(
            top_up(&db.repository(), 300).unwrap(),
            below,
            "{}",
            db.dialect()
        );
        let repo = db.repository::<Account>();
        for a in all {
            assert_eq!(repo.get(a.id).unwrap().balance, a.balance.max(300));
        }
        assert_eq!(
            top_up(&db.repository(), 300).unwrap(),
            0,
            "a second top-up changes nothing"
        );
    });
}

workshop_harness::checks!(
    rich_accounts_in_order,
    keyset_pages_cover_every_row_once,
    top_up_raises_the_poor_only,
);
