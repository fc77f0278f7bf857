//! Stage 4's specification. `just check 04` runs it on your `src/exercise.rs`, on SQLite, and on PostgreSQL
//! and MariaDB when they can be reached (`TANDEM_POSTGRES_URL`, `TANDEM_MYSQL_URL`; a server that does not
//! answer is reported and skipped — point the variable at a closed port to skip one on purpose). The
//! oracle is the database itself: what it holds after your executor ran.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Barrier, mpsc};
use std::time::{Duration, Instant};

use blocking::drivers::{self, Conn};
use blocking::{
    ATTEMPTS, Database, DbErrorKind, Error, Executor, Pool, PoolStatus, RETRY_PAUSE, TransferError,
    accounts, transfer,
};
use dialects::{GeneratedKey, Insert, Order, Select, Statement, Update};
use expressions::ColumnExt;
use tables::{Dialect, SqlValue, Table, Value, table};

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

/// Runs `f` on one connection of your `Conn` — no pool, no `Database` yet — to a fresh database on every
/// engine that answers, with `T`'s table created in it.
fn on_connections<T: Table>(name: &str, f: impl Fn(&mut Conn)) {
    for d in Dialect::ALL {
        let Some(target) = workshop_support::db::target_or_skip(tandem_dialect(d), name) else {
            continue;
        };
        let url = target.url();
        let mut conn =
            drivers::connect(&url).unwrap_or_else(|e| panic!("{d}: connect to {url}: {e}"));
        conn.batch(&T::schema().create_table(d))
            .unwrap_or_else(|e| panic!("{d}: CREATE TABLE: {e}"));
        f(&mut conn);
    }
}

/// A fresh SQLite file's URL (SQLite is always there).
fn sqlite_url(name: &str) -> (workshop_support::db::TestTarget, String) {
    let target = workshop_support::db::target_or_skip(tandem_sql::Dialect::Sqlite, name)
        .expect("SQLite needs no server");
    let url = target.url();
    (target, url)
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

/// Your `Conn` alone (sections 1 and 2 of the chapter): a statement says how many rows it changed and —
/// SQLite, MySQL — which key it generated (PostgreSQL's comes back as a row, through `RETURNING`); a query
/// gives every row's values in column order; `batch` runs `BEGIN` and `ROLLBACK`, and the ROLLBACK undoes
/// the insert between them.
fn one_connection_runs_statements_and_reads_rows() {
    on_connections::<things::table>("w4conn", |conn| {
        let d = conn.dialect();
        let insert = |name: &str, n: i32| {
            Insert::into(things::table, vec!["name", "n", "x", "on"])
                .row(vec![
                    Value::Text(name.to_owned()),
                    Value::I32(n),
                    Value::F64(0.5),
                    Value::Bool(true),
                ])
                .returning_key()
                .render(d)
                .unwrap()
        };
        let mut expected = Vec::new();
        for (name, n) in [("ada", 36), ("o'brien ü", -7)] {
            let st = insert(name, n);
            let key = match st.key {
                GeneratedKey::Returning => {
                    let rows = conn
                        .query(&st)
                        .unwrap_or_else(|e| panic!("{d}: {e}: {}", st.sql));
                    assert_eq!(rows.len(), 1, "{d}: one row back from {}", st.sql);
                    i64::from_value(rows[0][0].clone())
                        .unwrap_or_else(|e| panic!("{d}: the key RETURNING gave: {e}"))
                }
                _ => {
                    let done = conn
                        .execute(&st)
                        .unwrap_or_else(|e| panic!("{d}: {e}: {}", st.sql));
                    assert_eq!(done.rows_affected, 1, "{d}: rows_affected of one INSERT");
                    done.last_insert_id.unwrap_or_else(|| {
                        panic!("{d}: last_insert_id of an INSERT that generated a key")
                    })
                }
            };
            expected.push((key, name.to_owned(), n));
        }
        let all = Select::from(things::table)
            .order_by(things::id, Order::Asc)
            .render(d)
            .unwrap();
        let read = |conn: &mut Conn| -> Vec<(i64, String, i32)> {
            let rows = conn
                .query(&all)
                .unwrap_or_else(|e| panic!("{d}: {e}: {}", all.sql));
            rows.into_iter()
                .map(|row| {
                    assert_eq!(
                        row.len(),
                        6,
                        "{d}: a row of `things` has six values: {row:?}"
                    );
                    let decoded = (
                        i64::from_value(row[0].clone()),
                        String::from_value(row[1].clone()),
                        i32::from_value(row[2].clone()),
                    );
                    match decoded {
                        (Ok(id), Ok(name), Ok(n)) => (id, name, n),
                        _ => panic!("{d}: (id, name, n) of {row:?}"),
                    }
                })
                .collect()
        };
        assert_eq!(
            read(conn),
            expected,
            "{d}: (id, name, n) of each row as read back, keys as the inserts reported them"
        );
        let all_n = Update::table(things::table)
            .set(things::n, 0)
            .render(d)
            .unwrap();
        let changed = conn
            .execute(&all_n)
            .unwrap_or_else(|e| panic!("{d}: {e}: {}", all_n.sql));
        assert_eq!(
            changed.rows_affected, 2,
            "{d}: rows_affected of an UPDATE of both rows"
        );
        conn.batch("BEGIN")
            .unwrap_or_else(|e| panic!("{d}: BEGIN: {e}"));
        let st = insert("rolled back", 1);
        match st.key {
            GeneratedKey::Returning => conn.query(&st).map(drop),
            _ => conn.execute(&st).map(drop),
        }
        .unwrap_or_else(|e| panic!("{d}: an insert after BEGIN: {e}"));
        conn.batch("ROLLBACK")
            .unwrap_or_else(|e| panic!("{d}: ROLLBACK: {e}"));
        assert_eq!(
            read(conn).len(),
            2,
            "{d}: the insert between BEGIN and ROLLBACK was undone"
        );
    });
}

/// Values of every type go in and come back as they were — NULL, negative numbers, text with quotes and
/// accents, booleans (integers on SQLite and MySQL) — with the key the database generated; a row read
/// into the wrong shape or type is a typed error; a URL of no known engine is `Error::Connect`.
fn values_round_trip_on_every_engine() {
    assert!(
        matches!(
            Database::open("oracle://nowhere", 1),
            Err(Error::Connect(_))
        ),
        "an unknown URL scheme"
    );
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

/// Your classification, on failures of your `Conn`: a unique violation is told from other failures, and
/// neither is retriable.
fn errors_are_classified() {
    on_connections::<things::table>("w4errors", |conn| {
        let d = conn.dialect();
        let row = Insert::into(things::table, vec!["id", "name", "n", "x", "on"])
            .row(vec![
                Value::I64(7),
                Value::Text("b".into()),
                Value::I32(1),
                Value::F64(0.0),
                Value::Bool(false),
            ])
            .render(d)
            .unwrap();
        conn.execute(&row)
            .unwrap_or_else(|e| panic!("{d}: {e}: {}", row.sql));
        let e = conn.execute(&row).unwrap_err();
        assert_eq!(
            e.kind(),
            Some(DbErrorKind::UniqueViolation),
            "{d}: a duplicate key: {e}"
        );
        assert!(!e.is_retriable(), "{d}: a duplicate key is not retriable");
        // A UNIQUE column that is not the key: SQLite reports it with another extended code (2067) than
        // a duplicate primary key (1555).
        for ddl in [
            "DROP TABLE IF EXISTS w4unique",
            "CREATE TABLE w4unique (id INTEGER PRIMARY KEY, email VARCHAR(40) UNIQUE)",
        ] {
            conn.batch(ddl)
                .unwrap_or_else(|e| panic!("{d}: {e}: {ddl}"));
        }
        conn.execute(&sql("INSERT INTO w4unique (id, email) VALUES (1, 'a')"))
            .unwrap_or_else(|e| panic!("{d}: {e}"));
        let e = conn
            .execute(&sql("INSERT INTO w4unique (id, email) VALUES (2, 'a')"))
            .unwrap_err();
        assert_eq!(
            e.kind(),
            Some(DbErrorKind::UniqueViolation),
            "{d}: a duplicate in a UNIQUE column that is not the key: {e}"
        );
        let e = conn.execute(&sql("SELEKT 1")).unwrap_err();
        assert_eq!(e.kind(), Some(DbErrorKind::Other), "{d}: bad SQL: {e}");
        assert!(!e.is_retriable(), "{d}: bad SQL is not retriable");
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

/// Your pool counts a connection as open from the moment it decides to open one — under the lock, before
/// connecting — so eight callers arriving together at a pool of two never open more than two at a time;
/// and a connect that fails gives its place back at once, so that the next caller tries instead of waiting
/// for `PoolTimeout`. No database needed: the "server" here accepts each connection and closes it 200 ms
/// later without a word, so every connect fails, slowly.
fn the_pool_never_opens_more_than_its_size() {
    let server = workshop_support::NoLogin::start(Duration::from_millis(200));
    let pool = Pool::new(
        &format!("postgres://w4@127.0.0.1:{}/w4", server.port()),
        2,
        Duration::from_secs(4),
    );
    let together = Barrier::new(8);
    let outcomes: Vec<Result<(), Error>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|_| {
                s.spawn(|| {
                    together.wait();
                    pool.get().map(drop)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| workshop_support::joined(h.join()))
            .collect()
    });
    let peak = server.peak();
    assert!(
        peak <= 2,
        "eight callers at once, a pool of 2: {peak} connections were being opened at the same time. \
         Count a connection as open when you decide to open it — raise the count under the lock, before \
         connecting — or callers that arrive together all see room and all connect"
    );
    for outcome in &outcomes {
        match outcome {
            Err(Error::Connect(_)) => {}
            Err(Error::PoolTimeout { .. }) => panic!(
                "a caller got PoolTimeout while no connection was open: after a failed connect, either \
                 its place stayed in the count (so after two failures the pool believed itself full) or \
                 no waiter was woken to use it. When connecting fails, lower the count and wake a waiter"
            ),
            other => panic!(
                "the server never lets anyone log in, so every caller's connect fails: expected \
                 Err(Error::Connect(..)), got {other:?}"
            ),
        }
    }
    assert_eq!(
        server.accepted(),
        8,
        "connections the server saw: each of the eight callers connects once"
    );
    assert_eq!(
        pool.status(),
        PoolStatus { open: 0, idle: 0 },
        "every connect failed: none is open"
    );
}

/// A connection given back unbroken stays open and idle, and is lent again; one marked broken is closed
/// when dropped and no longer counted, so that its place in the pool is free for a new one.
fn a_broken_connection_is_closed_and_frees_its_place() {
    let (_file, url) = sqlite_url("w4broken");
    let pool = Pool::new(&url, 1, Duration::from_millis(300));
    drop(pool.get().unwrap_or_else(|e| panic!("SQLite: {e}")));
    assert_eq!(
        pool.status(),
        PoolStatus { open: 1, idle: 1 },
        "a connection given back stays open, idle"
    );
    let mut conn = pool.get().unwrap_or_else(|e| panic!("SQLite: {e}"));
    assert_eq!(
        pool.status(),
        PoolStatus { open: 1, idle: 0 },
        "the idle connection is lent again, not a new one opened"
    );
    conn.mark_broken();
    drop(conn);
    assert_eq!(
        pool.status(),
        PoolStatus { open: 0, idle: 0 },
        "a connection marked broken is closed when dropped, and the count of open connections goes \
         down — else its place is lost for good and the pool shrinks with every broken connection"
    );
    pool.get().unwrap_or_else(|e| {
        panic!("a pool of one whose only connection was broken and closed opens a new one: {e}")
    });
}

/// A transaction whose ROLLBACK fails closes its connection instead of lending it again: it is in a state
/// nobody should inherit. On the servers the closure ends its own session (as a server restart or a cut
/// network would) and the ROLLBACK finds the connection dead; on SQLite the closure commits behind the
/// executor's back and the ROLLBACK finds no transaction.
fn a_connection_that_cannot_roll_back_is_closed() {
    on_engines::<things::table>("w4norollback", 1, |db, _| {
        let d = db.dialect();
        let (end_it, kept) = match d {
            Dialect::Sqlite => ("COMMIT", vec!["left behind"]),
            Dialect::Postgres => ("SELECT pg_terminate_backend(pg_backend_pid())", vec![]),
            Dialect::MySql => ("KILL CONNECTION_ID()", vec![]),
        };
        let r: Result<(), Error> = db.transaction(|tx| {
            insert_thing(tx, &thing("left behind"));
            let _ = tx.execute(&sql(end_it));
            Err(Error::Connect("the closure gives up".into()))
        });
        assert!(r.is_err(), "{d}: the closure's error is the transaction's");
        assert_eq!(
            db.pool().status(),
            PoolStatus { open: 0, idle: 0 },
            "{d}: the transaction's ROLLBACK failed (after `{end_it}` in the closure) and its connection \
             went back to the pool: mark a connection whose ROLLBACK fails broken, so that it is closed"
        );
        assert_eq!(
            names(db),
            kept,
            "{d}: what the next connection reads (after `{end_it}`)"
        );
    });
}

/// A COMMIT that fails is rolled back. SQLite keeps the transaction open when its COMMIT fails (here a
/// foreign key checked at COMMIT is still violated): a connection given back in the middle of it runs the
/// next caller's statements inside it, and they are never committed. (PostgreSQL and MariaDB end a
/// transaction whose COMMIT failed themselves: this check runs on SQLite.)
fn a_failed_commit_is_rolled_back() {
    on_engines::<things::table>("w4commit", 1, |db, url| {
        if db.dialect() != Dialect::Sqlite {
            return;
        }
        for ddl in [
            "CREATE TABLE owners (id INTEGER PRIMARY KEY)",
            "CREATE TABLE pets (id INTEGER PRIMARY KEY, \
             owner INTEGER REFERENCES owners (id) DEFERRABLE INITIALLY DEFERRED)",
            // Per connection, and the pool's one connection is the transaction's too.
            "PRAGMA foreign_keys = ON",
        ] {
            db.execute(&sql(ddl))
                .unwrap_or_else(|e| panic!("SQLite: {e}: {ddl}"));
        }
        let r = db.transaction(|tx| {
            tx.execute(&sql("INSERT INTO pets (id, owner) VALUES (1, 7)"))?;
            Ok::<_, Error>(())
        });
        assert!(
            r.is_err(),
            "SQLite: a pet of an owner that does not exist, the foreign key checked at COMMIT: the \
             COMMIT fails, and the transaction with it"
        );
        db.execute(&sql("INSERT INTO owners (id) VALUES (7)"))
            .unwrap_or_else(|e| panic!("SQLite: a statement after the failed transaction: {e}"));
        let path = url
            .strip_prefix("sqlite://")
            .expect("a SQLite URL names its file");
        let other = rusqlite::Connection::open(path).expect("a second connection to the file");
        let count = |table: &str| -> i64 {
            other
                .query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0))
                .unwrap_or_else(|e| panic!("SQLite: count {table}: {e}"))
        };
        assert_eq!(
            (count("owners"), count("pets")),
            (1, 0),
            "SQLite, (owners, pets) another connection reads: the insert after the failed COMMIT was \
             not committed — the connection went back to the pool still inside the transaction, and the \
             next statement ran in it. Roll back after a failed COMMIT"
        );
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
                Err(e) => panic!(
                    "{d}: the deadlock was not retried away (after {runs} run{}): {e}",
                    if *runs == 1 { "" } else { "s" }
                ),
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
    one_connection_runs_statements_and_reads_rows,
    errors_are_classified,
    the_pool_never_opens_more_than_its_size,
    a_broken_connection_is_closed_and_frees_its_place,
    values_round_trip_on_every_engine,
    transactions_commit_roll_back_and_nest,
    a_panic_rolls_back_and_leaves_the_pool_clean,
    the_pool_is_bounded_and_times_out,
    a_connection_that_cannot_roll_back_is_closed,
    a_failed_commit_is_rolled_back,
    money_is_neither_created_nor_lost,
    conflicts_are_waited_for_or_retried,
    retries_pause_then_give_up,
    sqlite_transactions_take_the_write_lock_at_begin,
    transfers_lock_rows_in_key_order,
);
