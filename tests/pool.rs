//! Pools through both executors: saturation, timeouts, arrival order, cancellation, warm-up, validation and
//! recovery after every pool connection is killed on PostgreSQL and MariaDB; a SQLite file's queue of write
//! transactions. Threads wait on the blocking side, tokio tasks on the async side, in the same scenarios.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tandem_test_support::{db, harness, pools};

use pools::{Exec, Side, connections, kill_connections, until};
use tandem_blocking::Executor as _;
use tandem_core::{DbErrorKind, Error, TxOptions};
use tandem_pool::PoolConfig;
use tandem_sql::{Dialect, raw};

fn small(max_size: u32, max_pending: u32, timeout_ms: u64) -> PoolConfig {
    PoolConfig {
        max_size,
        max_pending: Some(max_pending),
        acquire_timeout: Duration::from_millis(timeout_ms),
        ..PoolConfig::default()
    }
}

/// Runs `f` on SQLite for each executor (the admission rules do not depend on the engine).
fn on_both_sides(name: &str, config: PoolConfig, f: impl Fn(&Exec)) {
    for side in [Side::Blocking, Side::Async] {
        let (exec, _target) = Exec::open(side, Dialect::Sqlite, name, config.clone());
        f(&exec);
    }
}

/// A full queue refuses the next acquire at once with a typed `PoolSaturated`, counted as rejected; the
/// queued waiter is still served.
fn saturated_pool_refuses_at_once() {
    on_both_sides("saturated", small(1, 1, 30_000), |exec| {
        let held = exec.hold();
        let waiter = exec.spawn_holding(|| ());
        until("one waiter", || exec.metrics().waiting == 1);
        let started = Instant::now();
        let err = exec.query().unwrap_err();
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "{:?}: refused without waiting for the 30 s timeout",
            exec.side
        );
        assert!(
            matches!(
                err,
                Error::PoolSaturated {
                    pending: 1,
                    max_size: 1
                }
            ),
            "{:?}: {err}",
            exec.side
        );
        held.release();
        waiter.join().unwrap();
        let m = exec.metrics();
        assert_eq!(
            (m.rejected, m.waiting, m.in_use),
            (1, 0, 0),
            "{:?}",
            exec.side
        );
    });
}

/// An acquire that gets nothing within the timeout fails with `PoolTimeout` carrying its wait; the pool
/// serves the next caller once the holder lets go.
fn timeout_carries_the_wait() {
    on_both_sides("timeout", small(1, 8, 150), |exec| {
        let held = exec.hold();
        let err = exec.query().unwrap_err();
        let Error::PoolTimeout { waited, max_size } = err else {
            panic!("{:?}: expected a timeout, got {err}", exec.side)
        };
        assert!(waited >= Duration::from_millis(150), "{waited:?}");
        assert_eq!(max_size, 1);
        assert_eq!(exec.metrics().timed_out, 1);
        held.release();
        assert_eq!(exec.query().unwrap(), 1);
    });
}

/// Waiters are served in the order they arrived.
fn waiters_are_served_in_arrival_order() {
    on_both_sides("fifo", small(1, 16, 30_000), |exec| {
        let held = exec.hold();
        let order = Arc::new(Mutex::new(Vec::new()));
        let waiters: Vec<_> = (0..6)
            .map(|i| {
                let order = order.clone();
                let w = exec.spawn_holding(move || order.lock().unwrap().push(i));
                until("the waiter queued", || exec.metrics().waiting == i + 1);
                w
            })
            .collect();
        held.release();
        for w in waiters {
            w.join().unwrap();
        }
        assert_eq!(
            *order.lock().unwrap(),
            (0..6).collect::<Vec<_>>(),
            "{:?}",
            exec.side
        );
    });
}

/// On a SQLite file, write transactions wait for their turn in arrival order, outside the pool (holding no
/// connection), and each starts as soon as the one before it ends; readers are not held up meanwhile.
fn sqlite_writers_take_turns_in_arrival_order() {
    on_both_sides("writers", small(8, 16, 30_000), |exec| {
        exec.execute("CREATE TABLE turns (i INTEGER NOT NULL)")
            .unwrap();
        let held = exec.hold_writer();
        let writers: Vec<_> = (0..6)
            .map(|i| {
                let w = exec.spawn_writing(
                    &format!("INSERT INTO turns (i) VALUES ({i})"),
                    TxOptions::default(),
                );
                until("the writer queued", || {
                    exec.metrics().writers_waiting == i + 1
                });
                w
            })
            .collect();
        let m = exec.metrics();
        assert_eq!(
            (m.in_use, m.waiting),
            (1, 0),
            "{:?}: waiting writers hold no connection and do not queue for one",
            exec.side
        );
        assert_eq!(exec.query().unwrap(), 1, "a reader goes past the queue");
        held.release();
        for w in writers {
            w.join().unwrap();
        }
        assert_eq!(
            exec.column("SELECT i FROM turns ORDER BY rowid").unwrap(),
            (0..6).collect::<Vec<_>>(),
            "{:?}",
            exec.side
        );
        assert_eq!(exec.metrics().writers_waiting, 0);
    });
}

/// A write transaction whose turn does not come within SQLite's busy timeout gets SQLite's own error for
/// that (`Busy`, retriable) instead of hanging; a read-only transaction does not queue at all.
fn sqlite_writer_wait_is_bounded() {
    on_both_sides("writer-timeout", small(4, 16, 30_000), |exec| {
        exec.execute("CREATE TABLE t (i INTEGER)").unwrap();
        let held = exec.hold_writer();
        let reader = exec.spawn_holding(|| ());
        reader.join().unwrap();
        let started = Instant::now();
        let err = exec
            .spawn_writing(
                "INSERT INTO t VALUES (1)",
                TxOptions::default().max_attempts(1),
            )
            .join()
            .unwrap_err();
        let waited = started.elapsed();
        assert_eq!(
            err.kind(),
            Some(DbErrorKind::Busy),
            "{:?}: {err}",
            exec.side
        );
        assert!(err.is_retriable());
        assert!(
            waited >= Duration::from_secs(5) && waited < Duration::from_secs(15),
            "{:?}: waited {waited:?}",
            exec.side
        );
        held.release();
        exec.spawn_writing("INSERT INTO t VALUES (2)", TxOptions::default())
            .join()
            .unwrap();
        assert_eq!(exec.column("SELECT i FROM t").unwrap(), [2]);
    });
}

/// A dropped async acquire gives its place in the queue up at once and leaks no connection.
fn cancelled_async_acquire_frees_its_place() {
    let (exec, _t) = Exec::open(Side::Async, Dialect::Sqlite, "cancel", small(1, 1, 30_000));
    let held = exec.hold();
    for _ in 0..3 {
        // Each time the queue (of one) is full, then the waiter is cancelled.
        let task = exec.spawn_abortable_query();
        until("one waiter", || exec.metrics().waiting == 1);
        task.abort();
        until("the place is free", || exec.metrics().waiting == 0);
    }
    // Also through a timeout wrapped around the call.
    exec.query_within(Duration::from_millis(50)).unwrap_err();
    assert_eq!(exec.metrics().waiting, 0);
    held.release();
    assert_eq!(exec.query().unwrap(), 1);
    let m = exec.metrics();
    assert_eq!((m.rejected, m.in_use, m.waiting), (0, 0, 0));
    // sqlx's pool (`driver=sqlx`) takes a connection back on a task of its own, a moment after the call.
    until("every connection is back in the pool", || {
        let m = exec.metrics();
        m.size == m.idle
    });
}

/// Warm-up opens `min_idle` connections before the pool reports ready: the server sees them at once.
fn warm_up_opens_min_idle_first() {
    for dialect in [Dialect::Sqlite, Dialect::Postgres, Dialect::MySql] {
        for side in [Side::Blocking, Side::Async] {
            let config = PoolConfig::high_throughput(6);
            assert_eq!(config.min_idle, Some(6));
            let (exec, target) = Exec::open(side, dialect, "warm", config);
            let m = exec.metrics();
            assert_eq!(m.size, 6, "{side:?} {dialect}: warm before ready");
            assert!(m.created >= 6, "{m:?}");
            if dialect != Dialect::Sqlite {
                assert_eq!(
                    connections(&target),
                    6,
                    "{side:?} {dialect}: the server sees them"
                );
            }
        }
    }
}

/// An unreachable server is a typed connection error when the pool is built; warm-up that cannot open its
/// connections in time is a typed `PoolWarmUp` that carries the cause.
fn warm_up_failures_are_typed() {
    for side in [Side::Blocking, Side::Async] {
        let err = Exec::connect(
            side,
            "postgres://postgres@127.0.0.1:1/test",
            PoolConfig::default(),
        )
        .unwrap_err();
        assert_eq!(
            err.kind(),
            Some(DbErrorKind::ConnectionLost),
            "{side:?}: {err}"
        );
        let err = Exec::connect(side, "mysql://root@127.0.0.1:1/test", PoolConfig::default())
            .unwrap_err();
        assert_eq!(
            err.kind(),
            Some(DbErrorKind::ConnectionLost),
            "{side:?}: {err}"
        );

        let target = db::target(Dialect::Postgres, "warmfail");
        // The first connection gets through to the server; every later one is accepted and left
        // unanswered. Warm-up fails with the cause: the connect timeout its connections ran into.
        let mut options = target.options.clone();
        options.port =
            tandem_test_support::proxy::start(&format!("{}:{}", options.host, options.port), |i| {
                i == 0
            })
            .port;
        options.host = "127.0.0.1".into();
        let config = PoolConfig {
            connect_timeout: Duration::from_millis(500),
            ..PoolConfig::high_throughput(16)
        };
        let err = match side {
            Side::Blocking => tandem_blocking::Database::open(options.clone(), config).map(drop),
            Side::Async => harness::runtime()
                .block_on(tandem_async::Database::open(options.clone(), config))
                .map(drop),
        }
        .unwrap_err();
        match &err {
            Error::PoolWarmUp {
                wanted: 16,
                opened,
                last_error: Some(cause),
                ..
            } if *opened < 16 => assert!(
                matches!(**cause, Error::ConnectTimeout { ref target, .. } if target.ends_with(&format!(":{}", options.port))),
                "{side:?}: {err}"
            ),
            _ => panic!("{side:?}: {err}"),
        }
        // The cause is the error's source too, for error reporters that walk the chain.
        let source = std::error::Error::source(&err).expect("a source");
        assert!(
            source
                .downcast_ref::<Box<Error>>()
                .is_some_and(|e| matches!(**e, Error::ConnectTimeout { .. })),
            "{side:?}: {source}"
        );
    }
}

/// With validation on checkout, connections killed while idle are replaced unseen: every call succeeds.
/// Without it, each dead connection fails one call with connection-lost and is then dropped.
fn validation_replaces_dead_connections() {
    for dialect in [Dialect::Postgres, Dialect::MySql] {
        for side in [Side::Blocking, Side::Async] {
            for validate in [true, false] {
                let config = PoolConfig {
                    max_size: 2,
                    min_idle: Some(2),
                    validate_on_checkout: validate,
                    ..PoolConfig::default()
                };
                let (exec, target) = Exec::open(side, dialect, "validate", config);
                let killed = kill_connections(&target);
                assert_eq!(killed, 2);
                let mut lost = 0;
                for _ in 0..10 {
                    match exec.query() {
                        Ok(1) => {}
                        Err(e) if e.kind() == Some(DbErrorKind::ConnectionLost) => lost += 1,
                        other => panic!("{side:?} {dialect}: {other:?}"),
                    }
                }
                let what = format!("{side:?} {dialect} validate={validate}");
                if validate {
                    assert_eq!(lost, 0, "{what}: no dead connection reached a caller");
                } else {
                    assert!(
                        lost <= killed,
                        "{what}: each dead connection fails once at most"
                    );
                }
                assert_eq!(exec.query().unwrap(), 1);
                assert!(
                    exec.metrics().created >= 3,
                    "{what}: replacements were opened"
                );
            }
        }
    }
}

/// An acquire that must open a connection is bounded by the acquire timeout, connecting included: with
/// one connection held and the server fallen silent (a proxy that accepts and never answers), the next
/// call fails with a timeout within the 400 ms acquire timeout, not after the 5 s connect timeout.
fn a_connect_is_bounded_by_the_acquire_timeout() {
    const ACQUIRE: Duration = Duration::from_millis(400);
    for dialect in [Dialect::Postgres, Dialect::MySql] {
        for side in [Side::Blocking, Side::Async] {
            let target = db::target(dialect, "connectbound");
            let upstream = target.options.target();
            let proxy = tandem_test_support::proxy::start(&upstream, |_| true);
            let url = target
                .url()
                .replacen(&upstream, &format!("127.0.0.1:{}", proxy.port), 1);
            let config = PoolConfig {
                max_size: 2,
                acquire_timeout: ACQUIRE,
                connect_timeout: Duration::from_secs(5),
                ..PoolConfig::default()
            };
            // The held connection is given back without a word to the silent server (a checkout, not a
            // transaction whose end would wait for an answer).
            let rt = harness::runtime();
            let select = raw("SELECT 1", vec![]);
            let (took, err) = match side {
                Side::Blocking => {
                    let db = tandem_blocking::Database::connect_with(&url, config).unwrap();
                    let _held = db.checkout().unwrap();
                    proxy.silence();
                    let started = Instant::now();
                    let err = db.fetch_one::<(i64,)>(&select).unwrap_err();
                    (started.elapsed(), err)
                }
                Side::Async => rt.block_on(async {
                    use tandem_async::Executor as _;
                    let db = tandem_async::Database::connect_with(&db::with_driver(&url), config)
                        .await
                        .unwrap();
                    let _held = db.checkout().await.unwrap();
                    proxy.silence();
                    let started = Instant::now();
                    let err = db.fetch_one::<(i64,)>(&select).await.unwrap_err();
                    (started.elapsed(), err)
                }),
            };
            assert!(
                matches!(
                    err,
                    Error::PoolTimeout { .. } | Error::ConnectTimeout { .. }
                ),
                "{side:?} {dialect}: a timeout, got {err:?}"
            );
            assert!(
                took < ACQUIRE + Duration::from_secs(1),
                "{side:?} {dialect}: the acquire timeout is {ACQUIRE:?}, the call failed after {took:?}"
            );
        }
    }
}

/// `pg_terminate_backend` of every pool connection while eight workers run: the pool drops the broken
/// connections, serves new ones, and the server ends up with exactly the connections the pool holds.
fn recovers_after_every_connection_is_terminated() {
    for dialect in [Dialect::Postgres, Dialect::MySql] {
        for side in [Side::Blocking, Side::Async] {
            let config = PoolConfig {
                validate_on_checkout: true,
                ..PoolConfig::high_throughput(4)
            };
            let (exec, target) = Exec::open(side, dialect, "recover", config);
            let exec = Arc::new(exec);
            let workers = pools::run_workers(&exec, 8, 40);
            std::thread::sleep(Duration::from_millis(20));
            let killed = kill_connections(&target);
            assert!(
                killed >= 4,
                "{side:?} {dialect}: warm-up opened 4, {killed} killed"
            );
            let outcome = workers.join();
            assert!(
                outcome
                    .errors
                    .iter()
                    .all(|e| e.kind() == Some(DbErrorKind::ConnectionLost)),
                "{side:?} {dialect}: only connection-lost errors: {:?}",
                outcome.errors
            );
            assert!(
                outcome.errors.len() <= killed,
                "{side:?} {dialect}: at most one failed call per killed connection ({} for {killed})",
                outcome.errors.len()
            );
            // Afterwards every call succeeds…
            let after = pools::run_workers(&exec, 8, 20).join();
            assert!(
                after.errors.is_empty(),
                "{side:?} {dialect}: {:?}",
                after.errors
            );
            // …and the server holds exactly what the pool holds: nothing leaked.
            until("the server and the pool agree", || {
                let m = exec.metrics();
                m.size <= 4 && connections(&target) == u64::from(m.size)
            });
            let m = exec.metrics();
            assert!(m.closed >= 1 && m.created >= 5, "{side:?} {dialect}: {m:?}");
        }
    }
}

/// The TEMP tables the connection running this sees: only that one connection sees them, so they tell
/// connections apart.
fn marks(exec: &impl tandem_blocking::Executor) -> Vec<String> {
    exec.fetch_all::<(String,)>(&raw(
        "SELECT name FROM temp.sqlite_master WHERE type = 'table' ORDER BY name",
        vec![],
    ))
    .unwrap()
    .into_iter()
    .map(|(n,)| n)
    .collect()
}

/// Blocking, on a SQLite file: a connection given back stays with the thread that used it. Three threads
/// take turns, each giving its connection back before the next checks out; every thread meets its own
/// connection again each turn, through a checkout and through the database, though two others were used
/// in between (a shared idle stack would hand each the connection the last thread gave back). The pool
/// counts kept connections idle; a connection closed on drop is not kept.
fn sqlite_connections_stay_with_their_thread() {
    let target = db::target(Dialect::Sqlite, "homes");
    let config = PoolConfig {
        min_idle: Some(4),
        ..small(4, 16, 5_000)
    };
    let db = tandem_blocking::Database::open(target.options.clone(), config).unwrap();
    // The main thread gives the turns: one thread at a time, told its round over a channel. (A failing
    // thread drops its channel, and the main thread's wait for it ends.)
    std::thread::scope(|s| {
        let threads: Vec<_> = (0..3)
            .map(|me| {
                let (go, turn) = std::sync::mpsc::channel::<usize>();
                let (saw, seen) = std::sync::mpsc::channel();
                let db = &db;
                s.spawn(move || {
                    for round in turn {
                        let c = db.checkout().unwrap();
                        if round == 0 {
                            c.simple(&format!("CREATE TEMP TABLE mark_{me} (x INTEGER)"))
                                .unwrap();
                        }
                        let through_checkout = marks(&c);
                        drop(c);
                        if saw.send((through_checkout, marks(db))).is_err() {
                            return;
                        }
                    }
                });
                (go, seen)
            })
            .collect();
        for round in 0..5 {
            for (me, (go, seen)) in threads.iter().enumerate() {
                go.send(round).unwrap();
                let mine = vec![format!("mark_{me}")];
                let (through_checkout, through_db) = seen
                    .recv_timeout(Duration::from_secs(30))
                    .expect("the thread answers");
                assert_eq!(
                    through_checkout, mine,
                    "thread {me}, round {round}: checkout"
                );
                assert_eq!(through_db, mine, "thread {me}, round {round}: database");
            }
        }
    });
    let m = db.pool_metrics();
    assert_eq!((m.size, m.idle, m.in_use), (4, 4, 0), "{m:?}");

    std::thread::scope(|s| {
        s.spawn(|| {
            let mut c = db.checkout().unwrap();
            assert_eq!(
                marks(&c),
                Vec::<String>::new(),
                "a new thread's own connection"
            );
            c.simple("CREATE TEMP TABLE mark_closed (x INTEGER)")
                .unwrap();
            c.close_on_drop();
            drop(c);
            let c = db.checkout().unwrap();
            assert!(
                !marks(&c).contains(&"mark_closed".to_string()),
                "closed, not kept"
            );
        });
    });
    // r2d2 replaces the closed connection on its own thread (`min_idle`), and counts it opened before it
    // joins the pool: `closed` (opened − open) reads 2 for that moment, then 1.
    until("one connection closed, and replaced", || {
        let m = db.pool_metrics();
        (m.closed, m.size) == (1, 4)
    });
}

/// Blocking, on a SQLite file: connections kept with their threads still serve every thread. With the
/// admission gate and without it (r2d2 alone), on a pool of two: one thread checks out both while two
/// other threads keep them; a thread waiting for a connection gets the one given back, though it would go
/// home; eight threads share two connections for 4,000 calls with none timing out and no connection
/// opened beyond the two.
fn sqlite_kept_connections_serve_every_thread() {
    for max_pending in [Some(64), None] {
        let target = db::target(Dialect::Sqlite, "homes_shared");
        let config = PoolConfig {
            max_size: 2,
            max_pending,
            acquire_timeout: Duration::from_secs(5),
            ..PoolConfig::default()
        };
        let db = tandem_blocking::Database::open(target.options.clone(), config).unwrap();
        // Two threads hold a connection each at once, then give them back: one home each.
        let at_home = |db: &tandem_blocking::Database| {
            let both_out = std::sync::Barrier::new(2);
            std::thread::scope(|s| {
                for _ in 0..2 {
                    s.spawn(|| {
                        let c = db.checkout().unwrap();
                        both_out.wait();
                        drop(c);
                    });
                }
            })
        };
        at_home(&db);
        let started = Instant::now();
        let both = (db.checkout().unwrap(), db.checkout().unwrap());
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "{max_pending:?}: took {:?}",
            started.elapsed()
        );

        let waiter = std::thread::spawn({
            let db = db.clone();
            move || {
                let started = Instant::now();
                let c = db.checkout();
                (c.map(drop), started.elapsed())
            }
        });
        match max_pending {
            Some(_) => until("the third checkout waits", || {
                db.pool_metrics().waiting == 1
            }),
            // r2d2's wait shows in no count.
            None => std::thread::sleep(Duration::from_millis(100)),
        }
        drop(both);
        let (got, waited) = waiter.join().unwrap();
        got.unwrap();
        assert!(
            waited < Duration::from_secs(2),
            "{max_pending:?}: waited {waited:?}"
        );

        at_home(&db);
        let before = db.pool_metrics().created;
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    for _ in 0..500 {
                        assert_eq!(
                            db.fetch_one::<(i64,)>(&raw("SELECT 1", vec![])).unwrap(),
                            (1,)
                        );
                    }
                });
            }
        });
        let m = db.pool_metrics();
        assert_eq!(
            (m.created, m.timed_out),
            (before, 0),
            "{max_pending:?}: {m:?}"
        );
        assert_eq!((m.size, m.idle), (2, 2), "{max_pending:?}: {m:?}");
    }
}

fn main() {
    harness::main(
        [
            vec![harness::Case::new(
                "saturated_pool_refuses_at_once",
                saturated_pool_refuses_at_once,
            )],
            vec![harness::Case::new(
                "timeout_carries_the_wait",
                timeout_carries_the_wait,
            )],
            vec![harness::Case::new(
                "waiters_are_served_in_arrival_order",
                waiters_are_served_in_arrival_order,
            )],
            vec![harness::Case::new(
                "cancelled_async_acquire_frees_its_place",
                cancelled_async_acquire_frees_its_place,
            )],
            vec![harness::Case::new(
                "sqlite_writers_take_turns_in_arrival_order",
                sqlite_writers_take_turns_in_arrival_order,
            )],
            vec![harness::Case::new(
                "sqlite_writer_wait_is_bounded",
                sqlite_writer_wait_is_bounded,
            )],
            vec![harness::Case::new(
                "sqlite_connections_stay_with_their_thread",
                sqlite_connections_stay_with_their_thread,
            )],
            vec![harness::Case::new(
                "sqlite_kept_connections_serve_every_thread",
                sqlite_kept_connections_serve_every_thread,
            )],
            vec![
                harness::Case::new("warm_up_opens_min_idle_first", warm_up_opens_min_idle_first)
                    .needs(&[Dialect::Postgres, Dialect::MySql]),
            ],
            vec![
                harness::Case::new("warm_up_failures_are_typed", warm_up_failures_are_typed)
                    .needs(&[Dialect::Postgres]),
            ],
            vec![
                harness::Case::new(
                    "validation_replaces_dead_connections",
                    validation_replaces_dead_connections,
                )
                .needs(&[Dialect::Postgres, Dialect::MySql]),
            ],
            vec![
                harness::Case::new(
                    "a_connect_is_bounded_by_the_acquire_timeout",
                    a_connect_is_bounded_by_the_acquire_timeout,
                )
                .needs(&[Dialect::Postgres, Dialect::MySql]),
            ],
            vec![
                harness::Case::new(
                    "recovers_after_every_connection_is_terminated",
                    recovers_after_every_connection_is_terminated,
                )
                .needs(&[Dialect::Postgres, Dialect::MySql]),
            ],
        ]
        .into_iter()
        .flatten()
        .collect(),
    );
}
