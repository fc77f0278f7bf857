//! Stage 4's specification. `just check 04` runs it on your `src/exercise.rs`, on SQLite, and on PostgreSQL
//! and MariaDB when they can be reached (`TANDEM_POSTGRES_URL`, `TANDEM_MYSQL_URL`; a server that does not
//! answer is reported and skipped — point the variable at a closed port to skip one on purpose). The
//! oracle is the database itself: what it holds after your executor ran.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Barrier, mpsc};
use std::time::{Duration, Instant};

use blocking::{
    ATTEMPTS, Database, DbErrorKind, Error, Executor, RETRY_PAUSE, TransferError, accounts,
    transfer,
};
use dialects::{GeneratedKey, Insert, Order, Select, Statement, Update};
use expressions::ColumnExt;
use tables::{Dialect, Table, Value, table};

table! {
    /// One of each type.
    things (id) {
        id: i64,
        name: String,
        n: i32,
        x: f64,
        on: bool,
        note: Option<String>,
    }
}

/// The same engine, as tandem names it.
fn tandem_dialect(d: Dialect) -> tandem_sql::Dialect {
    d.to_string().parse().expect("tandem knows every engine")
}

/// Runs `f` with a fresh database of at most `max` connections (a file, a schema or a database of its
/// own) on every engine that answers, with `T`'s table created in it.
fn on_engines<T: Table>(name: &str, max: usize, f: impl Fn(&Database, &str)) {
    for d in Dialect::ALL {
        let Some(target) = workshop_support::db::target_or_skip(tandem_dialect(d), name) else {
            continue;
        };
        let url = target.url();
        let db = Database::open(&url, max).unwrap_or_else(|e| panic!("{d}: open {url}: {e}"));
        db.execute(&sql(&T::schema().create_table(d)))
            .unwrap_or_else(|e| panic!("{d}: CREATE TABLE: {e}"));
        f(&db, &url);
    }
}

/// SQL without parameters, as a statement.
fn sql(text: &str) -> Statement {
    Statement {
        sql: text.to_owned(),
        params: vec![],
        key: GeneratedKey::None,
    }
}

type Thing = (i64, String, i32, f64, bool, Option<String>);

/// Inserts a row of `things` and returns its generated key, however the engine gives it back.
fn insert_thing(x: &impl Executor, t: &Thing) -> i64 {
    let st = Insert::into(things::table, vec!["name", "n", "x", "on", "note"])
        .row(vec![
            Value::Text(t.1.clone()),
            Value::I32(t.2),
            Value::F64(t.3),
            Value::Bool(t.4),
            t.5.clone().map_or(Value::Null, Value::Text),
        ])
        .returning_key()
        .render(x.dialect())
        .unwrap();
    match st.key {
        GeneratedKey::Returning => {
            let keys: Vec<(i64,)> = x
                .fetch(&st)
                .unwrap_or_else(|e| panic!("{}: {e}: {}", x.dialect(), st.sql));
            keys[0].0
        }
        _ => x
            .execute(&st)
            .unwrap_or_else(|e| panic!("{}: {e}: {}", x.dialect(), st.sql))
            .last_insert_id
            .expect("MySQL reports the key it generated"),
    }
}

fn names(x: &impl Executor) -> Vec<String> {
    let st = Select::from(things::table)
        .order_by(things::name, Order::Asc)
        .render(x.dialect())
        .unwrap();
    x.fetch::<Thing>(&st)
        .unwrap()
        .into_iter()
        .map(|t| t.1)
        .collect()
}

fn thing(name: &str) -> Thing {
    (0, name.to_owned(), 1, 0.5, true, None)
}

/// Values of every type go in and come back as they were — NULL, negative numbers, text with quotes and
/// accents, booleans (integers on SQLite and MySQL) — with the key the database generated; a row read
/// into the wrong shape or type is a typed error.
fn values_round_trip_on_every_engine() {
    on_engines::<things::table>("w4values", 2, |db, _| {
        let d = db.dialect();
        // Nothing inserted yet: the engines' "0" is no key.
        let touch = Update::table(things::table)
            .set(things::n, 1)
            .filter(things::id.eq(-1))
            .render(d)
            .unwrap();
        assert_eq!(
            db.execute(&touch).unwrap().last_insert_id,
            None,
            "{d}: a statement that generated no key (SQLite and MySQL report 0) has no last_insert_id"
        );
        let rows: Vec<Thing> = vec![
            (0, "ada".into(), 36, 1.5, true, None),
            (0, "o'brien ü".into(), -7, -0.25, false, Some("x\"y".into())),
            (0, String::new(), i32::MAX, 1e300, true, Some(String::new())),
        ];
        let mut expected = Vec::new();
        for r in &rows {
            let id = insert_thing(db, r);
            expected.push((id, r.1.clone(), r.2, r.3, r.4, r.5.clone()));
        }
        let ids: Vec<i64> = expected.iter().map(|t| t.0).collect();
        assert!(
            ids.windows(2).all(|w| w[0] < w[1]),
            "{d}: generated keys {ids:?}"
        );
        let all = Select::from(things::table)
            .order_by(things::id, Order::Asc)
            .render(d)
            .unwrap();
        let got: Vec<Thing> = db
            .fetch(&all)
            .unwrap_or_else(|e| panic!("{d}: {e}: {}", all.sql));
        assert_eq!(got, expected, "{d}: the rows as read back");
        let none: Option<Thing> = db
            .fetch_optional(
                &Select::from(things::table)
                    .filter(things::id.eq(-1))
                    .render(d)
                    .unwrap(),
            )
            .unwrap();
        assert_eq!(none, None, "{d}: no row");
        assert!(
            matches!(
                db.fetch::<(i64, String)>(&all),
                Err(Error::Columns {
                    expected: 2,
                    found: 6
                })
            ),
            "{d}: six columns read as two"
        );
        assert!(
            matches!(
                db.fetch::<(i64, i64, i32, f64, bool, Option<String>)>(&all),
                Err(Error::Decode(_))
            ),
            "{d}: a name read as a number"
        );
    });
}

/// The executor tells a unique violation from other failures, and neither is retriable.
fn errors_are_classified() {
    on_engines::<things::table>("w4errors", 2, |db, _| {
        let d = db.dialect();
        let id = insert_thing(db, &thing("a"));
        let again = Insert::into(things::table, vec!["id", "name", "n", "x", "on"])
            .row(vec![
                Value::I64(id),
                Value::Text("b".into()),
                Value::I32(1),
                Value::F64(0.0),
                Value::Bool(false),
            ])
            .render(d)
            .unwrap();
        let e = db.execute(&again).unwrap_err();
        assert_eq!(
            e.kind(),
            Some(DbErrorKind::UniqueViolation),
            "{d}: a duplicate key: {e}"
        );
        assert!(!e.is_retriable());
        let e = db.execute(&sql("SELEKT 1")).unwrap_err();
        assert_eq!(e.kind(), Some(DbErrorKind::Other), "{d}: bad SQL: {e}");
        assert!(!e.is_retriable());
        assert!(
            matches!(
                Database::open("oracle://nowhere", 1),
                Err(Error::Connect(_))
            ),
            "an unknown URL scheme"
        );
    });
}

/// `Ok` commits, `Err` rolls back, a failing savepoint undoes only its own work, a successful one is
/// kept, and a transaction sees its own uncommitted writes.
fn transactions_commit_roll_back_and_nest() {
    on_engines::<things::table>("w4tx", 2, |db, _| {
        let d = db.dialect();
        db.transaction(|tx| {
            insert_thing(tx, &thing("committed"));
            assert_eq!(
                names(tx),
                ["committed"],
                "{d}: a transaction reads its own writes"
            );
            Ok::<_, Error>(())
        })
        .unwrap();
        let r: Result<(), Error> = db.transaction(|tx| {
            insert_thing(tx, &thing("rolled back"));
            Err(Error::Connect("the closure failed".into()))
        });
        assert!(r.is_err());
        assert_eq!(names(db), ["committed"], "{d}: Err rolls back");

        db.transaction(|tx| {
            insert_thing(tx, &thing("outer"));
            let inner: Result<(), Error> = tx.transaction(|tx| {
                insert_thing(tx, &thing("inner, undone"));
                Err(Error::Connect("the inner part failed".into()))
            });
            assert!(inner.is_err());
            tx.transaction(|tx| {
                insert_thing(tx, &thing("inner, kept"));
                tx.transaction(|tx| {
                    insert_thing(tx, &thing("innermost, kept"));
                    Ok::<_, Error>(())
                })
            })?;
            Ok::<_, Error>(())
        })
        .unwrap();
        assert_eq!(
            names(db),
            ["committed", "inner, kept", "innermost, kept", "outer"],
            "{d}: a failed savepoint undoes only its own insert"
        );
    });
}

/// A panic inside a transaction rolls it back and unwinds on; the connection goes back to the pool
/// outside any transaction, so the pool can be used to the full again at once.
fn a_panic_rolls_back_and_leaves_the_pool_clean() {
    on_engines::<things::table>("w4panic", 2, |db, url| {
        let d = db.dialect();
        // The panic is expected: keep the default hook from printing it as if it were a failure.
        let hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        let caught = catch_unwind(AssertUnwindSafe(|| {
            let _ = db.transaction(|tx| {
                insert_thing(tx, &thing("never"));
                panic!("the closure panics mid-transaction");
                #[allow(unreachable_code)]
                Ok::<_, Error>(())
            });
        }));
        std::panic::set_hook(hook);
        assert!(caught.is_err(), "{d}: the panic goes on unwinding");
        assert_eq!(
            names(db),
            Vec::<String>::new(),
            "{d}: the insert was rolled back"
        );
        let status = db.pool().status();
        assert!(
            status.open <= 2 && status.idle == status.open,
            "{d}: every connection is back and idle: {status:?}"
        );
        // Both connections at once, each writing: none is stuck in the panicked transaction.
        let other = Database::open(url, 1).unwrap();
        std::thread::scope(|s| {
            for i in 0..2 {
                s.spawn(move || {
                    db.transaction(|tx| {
                        insert_thing(tx, &thing(&format!("after {i}")));
                        Ok::<_, Error>(())
                    })
                    .unwrap_or_else(|e| panic!("{d}: {e}"));
                });
            }
        });
        assert_eq!(names(&other), ["after 0", "after 1"], "{d}");
    });
}

/// The pool never opens more than its size, and a caller that cannot get a connection in time gets
/// `Error::PoolTimeout` instead of waiting forever.
fn the_pool_is_bounded_and_times_out() {
    on_engines::<things::table>("w4pool", 2, |first, url| {
        let d = first.dialect();
        let db = Database::open_with(url, 2, Duration::from_millis(300)).unwrap();
        let held = Arc::new(Barrier::new(3));
        let done = Arc::new(Barrier::new(3));
        std::thread::scope(|s| {
            for _ in 0..2 {
                let (db, held, done) = (&db, held.clone(), done.clone());
                s.spawn(move || {
                    let conn = db.pool().get().unwrap();
                    held.wait();
                    done.wait();
                    drop(conn);
                });
            }
            held.wait();
            assert_eq!(db.pool().status().open, 2);
            let e = db.pool().get().err();
            assert!(
                matches!(e, Some(Error::PoolTimeout { max: 2, .. })),
                "{d}: a third caller while two connections are lent: {e:?}"
            );
            done.wait();
        });
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    for _ in 0..10 {
                        db.fetch::<Thing>(
                            &Select::from(things::table).render(db.dialect()).unwrap(),
                        )
                        .unwrap();
                        assert!(db.pool().status().open <= 2, "never more than 2 open");
                    }
                });
            }
        });
        assert_eq!(db.pool().status().open, db.pool().status().idle);
    });
}

/// Eight threads transferring at once: every balance is what the successful transfers say, none is
/// negative, no money appears or vanishes; overdrafts and missing accounts change nothing.
fn money_is_neither_created_nor_lost() {
    on_engines::<accounts::table>("w4money", 8, |db, _| {
        let d = db.dialect();
        let start = [1_000i64; 6];
        let mut insert = Insert::into(accounts::table, vec!["owner", "balance"]);
        for (i, b) in start.iter().enumerate() {
            insert = insert.row(vec![Value::Text(format!("owner-{i}")), Value::I64(*b)]);
        }
        db.execute(&insert.render(d).unwrap()).unwrap();
        let all = Select::from(accounts::table)
            .order_by(accounts::id, Order::Asc)
            .render(d)
            .unwrap();
        let ids: Vec<i64> = db
            .fetch::<(i64, String, i64)>(&all)
            .unwrap()
            .into_iter()
            .map(|r| r.0)
            .collect();
        let balances = || -> Vec<i64> {
            db.fetch::<(i64, String, i64)>(&all)
                .unwrap()
                .into_iter()
                .map(|r| r.2)
                .collect()
        };
        assert!(matches!(
            transfer(db, ids[0], ids[1], 5_000),
            Err(TransferError::Insufficient)
        ));
        assert!(matches!(
            transfer(db, 9_999, ids[1], 10),
            Err(TransferError::NoAccount)
        ));
        assert!(matches!(
            transfer(db, ids[0], 9_999, 10),
            Err(TransferError::NoAccount)
        ));
        assert_eq!(
            balances(),
            start,
            "{d}: refused transfers change nothing (the debit to nowhere was rolled back)"
        );
        let done: Vec<Vec<(usize, usize, i64)>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8u64)
                .map(|t| {
                    let ids = &ids;
                    s.spawn(move || {
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
                            match transfer(db, ids[a], ids[b], amount) {
                                Ok(()) => ok.push((a, b, amount)),
                                Err(TransferError::Insufficient) => {}
                                Err(TransferError::Db(e)) if e.is_retriable() => {}
                                Err(e) => panic!("{d}: {e:?}"),
                            }
                        }
                        ok
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| workshop_support::joined(h.join()))
                .collect()
        });
        let mut expected = start.to_vec();
        for (a, b, amount) in done.into_iter().flatten() {
            expected[a] -= amount;
            expected[b] += amount;
        }
        let got = balances();
        assert_eq!(got, expected, "{d}: the ledger of successful transfers");
        assert_eq!(
            got.iter().sum::<i64>(),
            6_000,
            "{d}: no money created or lost"
        );
    });
}

/// Concurrent writers do not lose updates, and a transaction the database aborts as a deadlock runs again
/// and commits. (SQLite has one writer at a time: there the writers wait their turn instead.)
fn conflicts_are_waited_for_or_retried() {
    on_engines::<accounts::table>("w4retry", 4, |db, _| {
        let d = db.dialect();
        for owner in ["a", "b"] {
            let st = Insert::into(accounts::table, vec!["owner", "balance"])
                .row(vec![Value::Text(owner.into()), Value::I64(0)])
                .render(d)
                .unwrap();
            db.execute(&st).unwrap();
        }
        let add = |id: i64| {
            Update::table(accounts::table)
                .add(accounts::balance, 1)
                .filter(accounts::id.eq(id))
                .render(d)
                .unwrap()
        };
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..25 {
                        db.transaction(|tx| {
                            tx.execute(&add(1))?;
                            Ok::<_, Error>(())
                        })
                        .unwrap_or_else(|e| panic!("{d}: {e}"));
                    }
                });
            }
        });
        let total: Vec<(i64, String, i64)> = db
            .fetch(
                &Select::from(accounts::table)
                    .order_by(accounts::id, Order::Asc)
                    .render(d)
                    .unwrap(),
            )
            .unwrap();
        assert_eq!(total[0].2, 100, "{d}: 4 × 25 increments, none lost");
        if d == Dialect::Sqlite {
            return;
        }
        // Two transactions lock the two rows in opposite orders: the server aborts one.
        let both = Barrier::new(2);
        let outcomes: Vec<(u32, Result<(), Error>)> = std::thread::scope(|s| {
            let handles: Vec<_> = [(1, 2), (2, 1)]
                .into_iter()
                .map(|(first, second)| {
                    let (both, add) = (&both, &add);
                    s.spawn(move || {
                        let mut runs = 0;
                        let r = db.transaction(|tx| {
                            runs += 1;
                            tx.execute(&add(first))?;
                            if runs == 1 {
                                both.wait();
                            }
                            tx.execute(&add(second))?;
                            Ok::<_, Error>(())
                        });
                        (runs, r)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| workshop_support::joined(h.join()))
                .collect()
        });
        for (runs, r) in &outcomes {
            match r {
                Ok(()) => {}
                Err(e) if e.kind() == Some(DbErrorKind::Deadlock) && *runs >= ATTEMPTS => panic!(
                    "{d}: a transaction ran {runs} times and deadlocked every time ({e}): pause before \
                     a retry (RETRY_PAUSE, doubled each time), so that the transaction that won can finish \
                     before this one takes its first row again"
                ),
                Err(e) => panic!("{d}: the deadlock was not retried away (after {runs} runs): {e}"),
            }
        }
        let runs: Vec<u32> = outcomes.iter().map(|(runs, _)| *runs).collect();
        assert!(
            runs.iter().any(|r| *r > 1),
            "{d}: one of the deadlocked transactions ran again ({runs:?})"
        );
        let after: Vec<(i64, String, i64)> = db
            .fetch(
                &Select::from(accounts::table)
                    .order_by(accounts::id, Order::Asc)
                    .render(d)
                    .unwrap(),
            )
            .unwrap();
        assert_eq!(
            (after[0].2, after[1].2),
            (102, 2),
            "{d}: both transactions committed exactly once"
        );
    });
}

/// A statement the server fails as it fails a deadlock victim — PostgreSQL SQLSTATE 40P01, MariaDB error
/// 1213 — every time it runs: a conflict without the race.
fn forced_deadlock(d: Dialect) -> Statement {
    sql(match d {
        Dialect::Postgres => {
            "DO $$BEGIN RAISE EXCEPTION 'forced deadlock' USING ERRCODE = '40P01'; END$$"
        }
        _ => "SIGNAL SQLSTATE '40001' SET MYSQL_ERRNO = 1213, MESSAGE_TEXT = 'forced deadlock'",
    })
}

/// A transaction whose statement fails for good (not busy, not a deadlock, not a serialization failure)
/// runs once, on every engine. On the servers, a transaction whose statement fails as a deadlock every
/// time runs exactly `ATTEMPTS` times, each rerun at least `RETRY_PAUSE` after the failure before it, the
/// pause doubling each time, and returns the deadlock; one that fails once commits its second run (and
/// only that).
fn retries_pause_then_give_up() {
    on_engines::<accounts::table>("w4pause", 2, |db, _| {
        let d = db.dialect();
        let mut runs = 0;
        let r = db.transaction(|tx| {
            runs += 1;
            tx.execute(&sql("UPDATE accounts SET no_such_column = 1"))
                .map(drop)
        });
        assert!(
            r.is_err(),
            "{d}: an UPDATE of a column that does not exist fails"
        );
        assert_eq!(
            runs, 1,
            "{d}: a transaction whose statement fails for good (an unknown column) ran {runs} times: retry \
             only what `is_retriable` says may succeed the next time (busy, deadlock, serialization) — a \
             rerun cannot fix the others, and repeats whatever the closure did outside the database"
        );
        if d == Dialect::Sqlite {
            return;
        }
        let mut runs = 0;
        let mut failed_at: Option<Instant> = None;
        let mut gaps = Vec::new();
        let r = db.transaction(|tx| {
            runs += 1;
            if let Some(t) = failed_at.take() {
                gaps.push(t.elapsed());
            }
            let r = tx.execute(&forced_deadlock(d));
            failed_at = Some(Instant::now());
            r.map(drop)
        });
        match &r {
            Err(e) if e.kind() == Some(DbErrorKind::Deadlock) => {}
            other => panic!(
                "{d}: a transaction that deadlocks every time must end with the deadlock, got {other:?}"
            ),
        }
        assert_eq!(
            runs, ATTEMPTS,
            "{d}: a transaction that deadlocks every time runs ATTEMPTS times, then returns the deadlock"
        );
        for (i, gap) in gaps.iter().enumerate() {
            let pause = RETRY_PAUSE * 2u32.pow(i as u32);
            assert!(
                *gap >= pause,
                "{d}: run {} began {gap:?} after run {} deadlocked: pause before each retry, so that the \
                 transaction that won can finish first — RETRY_PAUSE before the first, doubled before each \
                 further one (here {pause:?}, before retry {})",
                i + 2,
                i + 1,
                i + 1
            );
        }
        let mut runs = 0;
        db.transaction(|tx| {
            runs += 1;
            let st = Insert::into(accounts::table, vec!["owner", "balance"])
                .row(vec![
                    Value::Text(format!("run {runs}")),
                    Value::I64(runs.into()),
                ])
                .render(d)?;
            tx.execute(&st)?;
            if runs == 1 {
                tx.execute(&forced_deadlock(d))?;
            }
            Ok::<_, Error>(())
        })
        .unwrap_or_else(|e| panic!("{d}: a deadlock once, then a clean run, must commit: {e}"));
        let rows: Vec<(i64, String, i64)> = db
            .fetch(&Select::from(accounts::table).render(d).unwrap())
            .unwrap();
        let owners: Vec<&str> = rows.iter().map(|r| r.1.as_str()).collect();
        assert_eq!(
            owners,
            ["run 2"],
            "{d}: only the second run's insert is kept (the first was rolled back)"
        );
    });
}

/// On SQLite, a transaction holds the write lock from its `BEGIN` (`BEGIN IMMEDIATE`): while your
/// transaction has run no statement yet, another connection cannot start writing.
fn sqlite_transactions_take_the_write_lock_at_begin() {
    on_engines::<accounts::table>("w4immediate", 2, |db, url| {
        if db.dialect() != Dialect::Sqlite {
            return;
        }
        let path = url
            .strip_prefix("sqlite://")
            .expect("a SQLite URL names its file");
        let other = rusqlite::Connection::open(path).expect("a second connection to the file");
        // An answer at once, lock or no lock (rusqlite's default busy timeout waits 5 s).
        other.busy_timeout(Duration::ZERO).unwrap();
        let mut other_began = None;
        db.transaction(|_| {
            other_began = Some(other.execute_batch("BEGIN IMMEDIATE; ROLLBACK"));
            Ok::<_, Error>(())
        })
        .unwrap();
        assert!(
            other_began
                .expect("the transaction ran its closure")
                .is_err(),
            "SQLite: another connection could start writing while your transaction was open: its BEGIN took \
             no lock. Begin with BEGIN IMMEDIATE (the book says why)"
        );
    });
}

/// On the servers, with the higher-keyed account locked by another transaction, a transfer in either
/// direction holds the lower-keyed row while it waits: it changes the rows in key order, so two opposite
/// transfers cannot wait for each other in a circle.
fn transfers_lock_rows_in_key_order() {
    on_engines::<accounts::table>("w4order", 4, |db, _| {
        let d = db.dialect();
        if d == Dialect::Sqlite {
            return;
        }
        let open = Insert::into(accounts::table, vec!["owner", "balance"])
            .row(vec![Value::Text("low".into()), Value::I64(100)])
            .row(vec![Value::Text("high".into()), Value::I64(100)])
            .render(d)
            .unwrap();
        db.execute(&open).unwrap();
        let all = Select::from(accounts::table)
            .order_by(accounts::id, Order::Asc)
            .render(d)
            .unwrap();
        let rows: Vec<(i64, String, i64)> = db.fetch(&all).unwrap();
        let (low, high) = (rows[0].0, rows[1].0);
        let touch = Update::table(accounts::table)
            .add(accounts::balance, 0)
            .filter(accounts::id.eq(high))
            .render(d)
            .unwrap();
        let lock_now = sql(&format!(
            "SELECT id FROM accounts WHERE id = {low} FOR UPDATE NOWAIT"
        ));
        for (from, to) in [(high, low), (low, high)] {
            let (locked, is_locked) = mpsc::channel();
            let (release, released) = mpsc::channel::<()>();
            let held_low = std::thread::scope(|s| {
                let touch = &touch;
                let holder = s.spawn(move || {
                    db.transaction(|tx| {
                        tx.execute(touch)?;
                        locked.send(()).unwrap();
                        let _ = released.recv();
                        Ok::<_, Error>(())
                    })
                });
                is_locked
                    .recv()
                    .expect("the holder locked the higher-keyed row");
                let moving = s.spawn(|| transfer(db, from, to, 1));
                // While the transfer waits for the higher-keyed row, is the lower-keyed one its?
                let deadline = Instant::now() + Duration::from_secs(5);
                let mut held_low = false;
                while !held_low && Instant::now() < deadline {
                    held_low = db.execute(&lock_now).is_err();
                    std::thread::sleep(Duration::from_millis(20));
                }
                release.send(()).unwrap();
                workshop_support::joined(holder.join()).unwrap();
                workshop_support::joined(moving.join())
                    .unwrap_or_else(|e| panic!("{d}: the transfer, once the lock was gone: {e:?}"));
                held_low
            });
            assert!(
                held_low,
                "{d}: a transfer from account {from} to {to}, while account {high} was locked by another \
                 transaction, waited for it without holding account {low}: it changes the rows in the \
                 order of the transfer. Change them in key order (lower id first), so that two opposite \
                 transfers cannot deadlock"
            );
        }
        let balances: Vec<i64> = db
            .fetch::<(i64, String, i64)>(&all)
            .unwrap()
            .into_iter()
            .map(|r| r.2)
            .collect();
        assert_eq!(balances, [100, 100], "{d}: one unit there and back");
    });
}

workshop_harness::checks!(
    values_round_trip_on_every_engine,
    errors_are_classified,
    transactions_commit_roll_back_and_nest,
    a_panic_rolls_back_and_leaves_the_pool_clean,
    the_pool_is_bounded_and_times_out,
    money_is_neither_created_nor_lost,
    conflicts_are_waited_for_or_retried,
    retries_pause_then_give_up,
    sqlite_transactions_take_the_write_lock_at_begin,
    transfers_lock_rows_in_key_order,
);
