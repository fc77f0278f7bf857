//! Nodes that lag: a job started right after its source was loaded through another node, its connections
//! spread over the nodes at random, must decide on what the cluster committed — never on what one node has
//! applied so far. And what those causal reads cost.

use super::*;

/// A node made to lag: `FLUSH TABLES WITH READ LOCK` on it desyncs it and pauses what it applies, while
/// it still answers reads — the other nodes commit on, and it falls behind until the lock goes.
struct Lag {
    release: Option<std::sync::mpsc::Sender<()>>,
    holder: Option<std::thread::JoinHandle<()>>,
}

impl Lag {
    /// Node `node` lags from now until the returned value is dropped, `hold` at most.
    fn start(node: usize, hold: Duration) -> Lag {
        let (taken, locked) = std::sync::mpsc::channel();
        let (release, released) = std::sync::mpsc::channel::<()>();
        let holder = std::thread::spawn(move || {
            let db =
                tandem_blocking::Database::connect_with(&node_url(node, "test"), quick()).unwrap();
            let conn = db.checkout().unwrap();
            conn.simple("FLUSH TABLES WITH READ LOCK").unwrap();
            taken.send(()).unwrap();
            let _ = released.recv_timeout(hold);
            conn.simple("UNLOCK TABLES").unwrap();
        });
        locked.recv().unwrap();
        Lag {
            release: Some(release),
            holder: Some(holder),
        }
    }
}

impl Drop for Lag {
    fn drop(&mut self) {
        drop(self.release.take());
        if let Some(h) = self.holder.take() {
            let _ = h.join();
        }
    }
}

/// 20 starts of the essay job (4 partitions, 4,000 rows), each right after its source was loaded through
/// another node, its connections spread over the three nodes at random (`load_balance_hosts=random`), the two
/// runners taking turns; in half of the starts a node lags (see [`Lag`]) from before the load until a
/// second and a half into the run — node 2 or 3 for the blocking runner, the async pool's node for the
/// async one — and the run creates its job tables while it does. Every start
/// completes with the exact target on every node: a run's reads — bounds, counts, pages, the tables it
/// looks for, the lease — wait until their node has applied what the cluster committed, so a lagging
/// node never ends a partition early or finds a table missing.
pub(crate) fn galera_lagging_nodes() {
    let _one = GALERA.lock().unwrap_or_else(|e| e.into_inner());
    let cdb = ClusterDb::new("lagging");
    let on: Vec<_> = (0..galera_nodes().len())
        .map(|n| tandem_blocking::Database::connect_with(&node_url(n, &cdb.name), quick()).unwrap())
        .collect();
    let url = cluster_url(&cdb.name, "?load_balance_hosts=random");
    let db = tandem_blocking::Database::connect_with(&url, quick()).unwrap();
    let rt = harness::runtime();
    let adb = rt.block_on(connect_async(&url, quick())).unwrap();
    // sqlx's pool is on one node (tandem points it at one server when it opens): the async starts hold
    // that node back, so that the async runner meets the lag too.
    let (async_port,): (i64,) = rt
        .block_on(tandem_async::Executor::fetch_one(
            &adb,
            &raw("SELECT CAST(@@port AS SIGNED)", vec![]),
        ))
        .unwrap();
    let async_node = (galera_nodes().iter())
        .position(|(_, p)| i64::from(*p) == async_port)
        .unwrap();
    let rows = 4_000;
    let mut times = Vec::new();
    for start in 0..20 {
        let use_async = start % 2 == 1;
        let lagging = (start % 4 >= 2).then_some(match use_async {
            true => async_node,
            false => 1 + (start / 4) % 2,
        });
        // The source goes in through a node that is not held back.
        let loader = if lagging == Some(0) { 1 } else { 0 };
        let what = format!(
            "start {}: {} runner, {}, source loaded through node {}",
            start + 1,
            if use_async { "async" } else { "blocking" },
            lagging.map_or("no node held back".into(), |n| format!(
                "node {} lagging",
                n + 1
            )),
            loader + 1
        );
        // No job tables: the run creates them, so its DDL is tested too.
        reset(&on[loader], 0);
        let lag = lagging.map(|n| Lag::start(n, Duration::from_millis(1_500)));
        on[loader]
            .repository::<Source>()
            .batch_insert(
                &essay::seed_rows(rows),
                &tandem_blocking::BatchOptions::default(),
            )
            .unwrap();
        let started = Instant::now();
        let job = essay::job(4);
        let report = if use_async {
            rt.block_on(tandem_batch::asynchronous::run(&adb, &job))
        } else {
            tandem_batch::blocking::run(&db, &job)
        }
        .unwrap_or_else(|e| panic!("{what}: {e}"));
        let took = started.elapsed();
        drop(lag);
        assert_eq!(
            (report.read, report.written),
            (rows as u64, rows as u64),
            "{what}"
        );
        eprintln!("{what}: completed in {took:?}");
        times.push(took);
        check_every_node(&cdb.name, rows, &what);
    }
    times.sort();
    eprintln!(
        "lagging: 20 starts, median {:?}, max {:?}",
        times[times.len() / 2],
        times[times.len() - 1]
    );
}

/// Sums a global status counter over the three nodes.
fn cluster_status(name: &str) -> i64 {
    (0..galera_nodes().len())
        .map(|node| {
            let db =
                tandem_blocking::Database::connect_with(&node_url(node, "test"), quick()).unwrap();
            status(&db, name).parse::<i64>().unwrap_or(0)
        })
        .sum()
}

/// What causal reads cost a 10,000-row job (4 partitions, spread at random over the nodes), both runners:
/// the causal waits the servers counted (`wsrep_causal_reads`), the statements the job sent (`Questions`
/// less the counting's own), the job's time, and — in the same run, on one node — the time a causal
/// statement costs over the same statement read plainly. Causal reads add no round trip: the wait is
/// inside each statement. Printed for the results; asserted only as far as it must hold (every job exact).
pub(crate) fn galera_causal_read_cost() {
    let _one = GALERA.lock().unwrap_or_else(|e| e.into_inner());
    let cdb = ClusterDb::new("causalcost");
    let url = cluster_url(&cdb.name, "?load_balance_hosts=random");
    let db = tandem_blocking::Database::connect_with(&url, quick()).unwrap();
    let rt = harness::runtime();
    let adb = rt.block_on(connect_async(&url, quick())).unwrap();
    let rows = 10_000;
    for use_async in db::runners() {
        let side = if use_async { "async" } else { "blocking" };
        reset(&db, rows);
        tandem_batch::blocking::prepare(&db).unwrap();
        let (waits, asked) = (
            cluster_status("wsrep_causal_reads"),
            cluster_status("Questions"),
        );
        let started = Instant::now();
        let job = essay::job(4);
        let report = if use_async {
            rt.block_on(tandem_batch::asynchronous::run(&adb, &job))
        } else {
            tandem_batch::blocking::run(&db, &job)
        }
        .unwrap_or_else(|e| panic!("{side}: {e}"));
        let took = started.elapsed();
        assert_eq!(report.written, rows as u64);
        // The counting itself: the second look's own status query on each node is a question too.
        let waits = cluster_status("wsrep_causal_reads") - waits;
        let asked = cluster_status("Questions") - asked - galera_nodes().len() as i64;
        eprintln!(
            "causal cost, {side} runner: 10,000 rows in {took:?}; {asked} statements, {waits} of them \
             reads counted as causal (wsrep_causal_reads)"
        );
        check_every_node(&cdb.name, rows, &format!("causal cost, {side}"));
    }
    // The same point read, 2,000 times each way on node 1, alternating in blocks of 100.
    let one = tandem_blocking::Database::connect_with(&node_url(0, &cdb.name), quick()).unwrap();
    let plain = "SELECT name FROM benchmark_source WHERE id = ?";
    let causal = format!("SET STATEMENT wsrep_sync_wait = 7 FOR {plain}");
    let mut spent = [Duration::ZERO; 2];
    for block in 0..40 {
        let (which, sql) = match block % 2 {
            0 => (0, plain.to_owned()),
            _ => (1, causal.clone()),
        };
        let at = Instant::now();
        for i in 0..100_i64 {
            one.fetch_all::<(String,)>(&raw(sql.clone(), vec![(1 + i).into()]))
                .unwrap();
        }
        spent[which] += at.elapsed();
    }
    let each = spent.map(|d| d / 2_000);
    eprintln!(
        "causal cost, per statement on one node: plain {:?}, causal {:?} (+{:?})",
        each[0],
        each[1],
        each[1].saturating_sub(each[0])
    );
}
