//! What a run of the job says to the server: statements, prepares and round trips, counted on the wire by a
//! proxy in front of the server, for both runners.

use super::*;
use tandem_test_support::proxy::{self, Traffic, Wire};

/// The test database's URL with the server's `host:port` replaced by the proxy's.
fn through(t: &db::TestDb, port: u16) -> tandem_core::ConnectOptions {
    let mut options = t.target.options.clone();
    // Plain TCP: the proxy reads the protocol.
    options.tls = tandem_core::TlsMode::Disable;
    options.hosts = vec![("127.0.0.1".into(), port)];
    options.on_host(0)
}

/// One run of the essay job over `rows` rows, at `parallelism`, after two runs that warmed the pools (as a
/// job that runs again and again would find them): what it sent.
pub(crate) fn traffic_of_a_run(
    dialect: Dialect,
    rows: usize,
    parallelism: usize,
) -> [(&'static str, Traffic); 2] {
    let t = db::open(dialect, "trips", PoolConfig::default());
    reset(&t.db, rows);
    tandem_batch::blocking::prepare(&t.db).unwrap();
    let wire = match dialect {
        Dialect::Postgres => Wire::Postgres,
        _ => Wire::MySql,
    };
    let proxy = proxy::counting(&t.target.options.target(), wire);
    let options = through(&t, proxy.port);
    let db = Database::open(options.clone(), PoolConfig::default()).unwrap();
    let rt = harness::runtime();
    let adb = rt
        .block_on(tandem_async::Database::open(options, PoolConfig::default()))
        .unwrap();
    let job = essay::job(parallelism);
    ["blocking", "async"].map(|side| {
        let mut last = Traffic::default();
        // Two runs warm the pools; the third is counted. Inside a run, sqlx gives a connection back in a
        // task of its own, and an acquire made before that task ran opens a connection: seen in two
        // of ten CI runs, at random, one connection once. So a counted run that opened one is run
        // again, twice at most: a pool that leaks (a session that never goes back) opens one every
        // time and still fails the test.
        for run in 0..5 {
            if run >= 3 && last.connections == 0 {
                break;
            }
            for table in [
                "benchmark_target",
                "batch_job_execution",
                "batch_step_execution",
            ] {
                t.db.execute(&raw(format!("DELETE FROM {table}"), vec![]))
                    .unwrap();
            }
            // A job that runs again and again finds its pool settled: every connection of the last run
            // back and idle.
            let _ = settle(|| (db.pool_state(), adb.pool_state()));
            proxy.take_traffic();
            run_job(side == "async", (&rt, &adb), &db, &job).unwrap();
            last = proxy.take_traffic();
        }
        assert_target(&t.db, &expected(1..=rows));
        assert!(
            settle(|| (db.pool_state(), adb.pool_state())),
            "{side}: every connection back in its pool after the runs (blocking {:?}, async {:?} open \
             and idle): a session the job never gave back",
            db.pool_state(),
            adb.pool_state()
        );
        (side, last)
    })
}

/// Waits (5 s at most) until both pools hold every connection idle: `state` gives each pool's (open, idle).
/// Whether they did: a session that never goes back to its pool keeps one in use for good.
fn settle(state: impl Fn() -> ((u32, u32), (u32, u32))) -> bool {
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let ((open, idle), (a_open, a_idle)) = state();
        if open == idle && a_open == a_idle {
            return true;
        }
        if std::time::Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// What a run says to the server, counted on the wire, both runners, at one partition: the same
/// statements (the plans are shared), no new connection once the pool is warm (the run lock's session goes
/// back to the pool after its unlock), a run's bookkeeping in a fixed number of statements, and five
/// statements per chunk: the page read, BEGIN, the INSERT, the checkpoint (with the lease's guard in it),
/// COMMIT — the last chunk's transaction ending the step too. Four partitions are counted and
/// printed.
/// `TANDEM_TRIPS=1` prints each run's statements.
pub fn round_trips_per_run(dialect: Dialect) {
    // Statements of a run over an empty source (the listing TANDEM_TRIPS=1 prints shows the statements
    // prepared, not those run again): PostgreSQL: the session lock (which also bounds the lock session and
    // says whether the tables are there), the lease (a transaction of its own: 4), three transactions
    // ending or beginning with the lease's guard — what the start reads (8), its writes (4), the run's end
    // with the lease given back as its guard (4) — and the unlock; MySQL adds the Galera probe and the
    // lock session's bound, gives the session back in two statements, and has no multi-statement BEGIN.
    // On a Galera node (`just galera-suites`) a run asks for its tables again, causally, once its lock is
    // taken: one statement more.
    let bookkeeping = match dialect {
        Dialect::Postgres => 22,
        _ => 25 + u64::from(on_galera(dialect)),
    };
    let chunks = 10_000 / essay::job(1).page_size;
    let mut seen = Vec::new();
    for (rows, p) in [(0, 1), (10_000, 1), (10_000, 4)] {
        let runs = traffic_of_a_run(dialect, rows, p);
        for (side, t) in &runs {
            println!(
                "{dialect:?} rows {rows} p{p} {side}: {} round trips, {} statements, {} prepares, {} connections",
                t.round_trips, t.statements, t.prepares, t.connections
            );
            if std::env::var_os("TANDEM_TRIPS").is_some() {
                for text in &t.texts {
                    println!("    {}", text.chars().take(160).collect::<String>());
                }
            }
            // (With several partitions a pool may still grow under load: a connection asked for while
            // another is on its way back.) On sqlx even one partition may: sqlx gives a connection back
            // in a task of its own, and an acquire made before that task ran opens another — seen in
            // every counted run once compiles ran beside the suite in CI. One is let through there; a
            // session that never goes back is caught all the same, by the pools' settling after the
            // runs. tandem's own pools give a connection back before the call returns: none.
            let sqlx_return =
                *side == "async" && db::async_driver() == tandem_core::AsyncDriver::Sqlx;
            if p == 1 {
                assert!(
                    t.connections <= u64::from(sqlx_return),
                    "{side}: a warm pool makes no new connection: {} made",
                    t.connections
                );
            }
        }
        let [(_, blocking), (_, asynchronous)] = &runs;
        // (Partitions running at once may find a chunk's transaction chosen as a deadlock victim and run
        // it again — seen on MariaDB at four partitions: three statements more on one side or the
        // other — so the runners are compared at one partition.)
        if p == 1 {
            assert_eq!(
                blocking.statements, asynchronous.statements,
                "rows {rows}: the same statements on both runners"
            );
        }
        seen.push(blocking.statements);
    }
    assert!(
        seen[0] <= bookkeeping,
        "an empty run's bookkeeping: {} statements",
        seen[0]
    );
    // Beyond the chunks: the step row's INSERT at the start (an empty source has no partition), and the
    // step's end, in the last chunk's transaction: its last page reaches the top of the key range, so no
    // empty page is read and no transaction of its own ends the step.
    assert!(
        seen[1] <= seen[0] + 5 * chunks + 2,
        "10,000 rows in {chunks} chunks: {} statements, {} for the empty run",
        seen[1],
        seen[0]
    );
}

/// Whether the test server is a Galera node.
fn on_galera(dialect: Dialect) -> bool {
    let t = db::open(dialect, "galera", PoolConfig::default());
    let rows: Vec<(String, String)> =
        t.db.fetch_all(&raw("SHOW VARIABLES LIKE 'wsrep\\_on'", vec![]))
            .unwrap();
    rows.iter().any(|(_, v)| v == "ON")
}

pub fn round_trips_per_run_postgres() {
    round_trips_per_run(Dialect::Postgres);
}

pub fn round_trips_per_run_mysql() {
    round_trips_per_run(Dialect::MySql);
}
