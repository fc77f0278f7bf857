//! Stage 4's specification, on SQLite, and on PostgreSQL and MariaDB when they can be reached.

use tandem_blocking::Executor as _;
#[cfg(not(feature = "solution"))]
use workshop_04_blocking as stage;
#[cfg(feature = "solution")]
#[allow(dead_code)] // items of the solution no test calls (given types, the entity's own impls)
#[path = "../solution/lib.rs"]
mod stage;

use stage::{Account, TransferError, accounts, transfer};
use tandem_blocking::{Database, PoolConfig};
use tandem_sql::prelude::*;
use workshop_support::{ENGINES, db};

/// Runs `f` on a fresh `accounts` table on every reachable engine, with accounts holding `balances`.
fn on_engines(name: &str, balances: &[i64], f: impl Fn(&Database, &[i64])) {
    for dialect in ENGINES {
        let Some(target) = db::target(dialect, name) else {
            continue;
        };
        let pool = PoolConfig {
            max_size: 8,
            ..PoolConfig::default()
        };
        let db = Database::open(target.options.clone(), pool).unwrap();
        db.create_table(&accounts::table.create_table()).unwrap();
        let repo = db.repository::<Account>();
        let ids: Vec<i64> = balances
            .iter()
            .enumerate()
            .map(|(i, b)| {
                repo.insert(&Account {
                    id: 0,
                    owner: format!("owner-{i}"),
                    balance: *b,
                })
                .unwrap()
            })
            .collect();
        f(&db, &ids);
    }
}

fn balances(db: &Database, ids: &[i64]) -> Vec<i64> {
    let repo = db.repository::<Account>();
    ids.iter()
        .map(|id| repo.get(*id).unwrap().balance)
        .collect()
}

/// A transfer moves the amount: one balance down, the other up.
fn moves_money() {
    on_engines("w4move", &[100, 0], |db, ids| {
        transfer(db, ids[0], ids[1], 30).unwrap();
        assert_eq!(balances(db, ids), [70, 30], "{}", db.dialect());
    });
}

/// An overdraft is refused and changes nothing.
fn overdraft_changes_nothing() {
    on_engines("w4over", &[100, 0], |db, ids| {
        assert!(matches!(
            transfer(db, ids[0], ids[1], 101),
            Err(TransferError::Insufficient)
        ));
        assert_eq!(balances(db, ids), [100, 0], "{}", db.dialect());
    });
}

/// A missing account on either side is refused, and the debit of a transfer to nowhere is rolled back.
fn missing_accounts_change_nothing() {
    on_engines("w4missing", &[100, 0], |db, ids| {
        assert!(matches!(
            transfer(db, 9_999, ids[1], 10),
            Err(TransferError::NoAccount)
        ));
        assert!(matches!(
            transfer(db, ids[0], 9_999, 10),
            Err(TransferError::NoAccount)
        ));
        assert_eq!(
            balances(db, ids),
            [100, 0],
            "{}: the debit was rolled back",
            db.dialect()
        );
    });
}

/// Eight threads transferring at once: every balance is what the successful transfers say, none is
/// negative, no money appears or vanishes. A transfer may give up on a deadlock or serialization failure the
/// executor could not retry away; it must then have changed nothing either.
fn concurrent_transfers_keep_the_books() {
    let start = [1_000i64; 6];
    on_engines("w4threads", &start, |db, ids| {
        let done: Vec<Vec<(usize, usize, i64)>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8u64)
                .map(|t| {
                    s.spawn(move || {
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
                            match transfer(db, ids[a], ids[b], amount) {
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
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let mut expected = start.to_vec();
        for (a, b, amount) in done.into_iter().flatten() {
            expected[a] -= amount;
            expected[b] += amount;
        }
        let got = balances(db, ids);
        assert_eq!(
            got,
            expected,
            "{}: the ledger of successful transfers",
            db.dialect()
        );
        assert!(got.iter().all(|b| *b >= 0));
        assert_eq!(got.iter().sum::<i64>(), 6_000);
    });
}

workshop_harness::checks!(
    moves_money,
    overdraft_changes_nothing,
    missing_accounts_change_nothing,
    concurrent_transfers_keep_the_books,
);
