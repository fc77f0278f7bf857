//! The metrics both executors record, as a Prometheus scraper reads them: a recorder from
//! `metrics-exporter-prometheus` is installed for the process, the same work runs on the blocking and the
//! async executor, and the exporter's text must hold the same pool, statement, transaction and stream
//! metrics for both — and a provoked acquire timeout counted on each.

use std::time::Duration;

use futures_util::StreamExt;
use tandem_async::Executor as _;
use tandem_blocking::{Executor as _, PoolConfig};
use tandem_sql::Dialect;
use tandem_sql::prelude::*;
use tandem_test_support::schema::{User, users};
use tandem_test_support::{db, harness};

/// The process's exporter handle (one recorder per process).
fn exporter() -> &'static metrics_exporter_prometheus::PrometheusHandle {
    static ONE: std::sync::OnceLock<metrics_exporter_prometheus::PrometheusHandle> =
        std::sync::OnceLock::new();
    ONE.get_or_init(|| {
        let recorder = metrics_exporter_prometheus::PrometheusBuilder::new().build_recorder();
        let handle = recorder.handle();
        metrics::set_global_recorder(recorder).expect("the only recorder of this process");
        handle
    })
}

/// The value of the sample `name` whose labels include all of `labels` (`key="value"` each), if any.
fn sample(text: &str, name: &str, labels: &[String]) -> Option<f64> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.rsplit_once(' '))
        .filter(|(series, _)| {
            let (n, rest) = series.split_once('{').unwrap_or((series, ""));
            n == name && labels.iter().all(|l| rest.contains(l.as_str()))
        })
        .filter_map(|(_, v)| v.parse::<f64>().ok())
        .reduce(f64::max)
}

fn run(dialect: Dialect) {
    let handle = exporter();
    let t = db::open(dialect, "metrics_text", PoolConfig::default());
    t.db.create_table(&users::table.create_table()).unwrap();
    let users = (0..600).map(|i| User {
        id: 0,
        name: format!("user-{i}"),
        age: i,
        email: None,
    });
    t.db.repository::<User>()
        .insert_all(&users.collect::<Vec<_>>())
        .unwrap();

    // The same work on each executor: reads, a transaction, a stream read to its end.
    // A second stream is dropped after its first row: what it left buffered is counted out.
    let blocking = |db: &tandem_blocking::Database| {
        let repo = db.repository::<User>();
        assert_eq!(repo.count().unwrap(), 600);
        db.transaction(|tx| tx.repository::<User>().count())
            .unwrap();
        assert_eq!(
            db.fetch::<User>(&users::table.select_all())
                .unwrap()
                .count(),
            600
        );
        let mut early = db.fetch::<User>(&users::table.select_all()).unwrap();
        assert!(early.next().is_some());
    };
    blocking(&t.db);
    let (rt, adb) = t.async_twin(PoolConfig::default());
    rt.block_on(async {
        let repo = adb.repository::<User>();
        assert_eq!(repo.count().await.unwrap(), 600);
        adb.transaction(async |tx| tx.repository::<User>().count().await)
            .await
            .unwrap();
        let rows = tandem_async::Executor::fetch::<User>(&adb, &users::table.select_all())
            .await
            .unwrap();
        assert_eq!(rows.count().await, 600);
        let mut early = adb.fetch::<User>(&users::table.select_all()).await.unwrap();
        assert!(early.next().await.is_some());
    });

    // An acquire that times out, on each: a pool of one whose connection is held.
    let tight = PoolConfig {
        max_size: 1,
        min_idle: Some(1),
        acquire_timeout: Duration::from_millis(50),
        ..PoolConfig::default()
    };
    let small = tandem_blocking::Database::open(t.target.options.clone(), tight.clone()).unwrap();
    let held = small.checkout().unwrap();
    assert!(small.fetch_all::<User>(&users::table.select_all()).is_err());
    drop(held);
    rt.block_on(async {
        let small = tandem_async::Database::open(t.target.options.clone(), tight)
            .await
            .unwrap();
        let held = small.checkout().await.unwrap();
        let all = users::table.select_all();
        assert!(small.fetch_all::<User>(&all).await.is_err());
        drop(held);
    });

    let system = format!("db_system=\"{}\"", tandem_core::observe::system(dialect));
    // Every connection is back and every stream closed (an async stream's producer task hands its
    // connection back a moment after its last rows): nothing in use, nothing buffered.
    let settled = |text: &str| {
        ["blocking", "async"].iter().all(|executor| {
            let l = [format!("executor=\"{executor}\""), system.clone()];
            sample(text, "tandem_pool_in_use", &l) == Some(0.0)
                && sample(text, "tandem_stream_rows_buffered", &l) == Some(0.0)
        })
    };
    let waited = std::time::Instant::now();
    let mut text = handle.render();
    while !settled(&text) && waited.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
        text = handle.render();
    }
    assert!(
        settled(&text),
        "connections left in use or rows left buffered:\n{text}"
    );
    // Every pool of this engine agrees: open = idle + in use. (The other engines' tests run beside this
    // one in the same process and record into the same exporter: their pools may be mid-statement.)
    for line in text
        .lines()
        .filter(|l| l.starts_with("tandem_pool_size{") && l.contains(system.as_str()))
    {
        let (series, size) = line.rsplit_once(' ').unwrap();
        let labels = &series["tandem_pool_size".len()..];
        let of = |name: &str| -> f64 {
            let wanted = format!("{name}{labels} ");
            let line = text.lines().find(|l| l.starts_with(&wanted));
            line.and_then(|l| l.rsplit_once(' ')?.1.parse().ok())
                .unwrap_or_else(|| panic!("no {wanted}in\n{text}"))
        };
        let size: f64 = size.parse().unwrap();
        assert_eq!(
            size,
            of("tandem_pool_idle") + of("tandem_pool_in_use"),
            "{labels}\n{text}"
        );
    }
    for executor in ["blocking", "async"] {
        let on = |more: &[&str]| -> Vec<String> {
            let mut l = vec![format!("executor=\"{executor}\""), system.clone()];
            l.extend(more.iter().map(|m| m.to_string()));
            l
        };
        let has = |name: &str, more: &[&str], at_least: f64| {
            let got = sample(&text, name, &on(more));
            assert!(
                got.is_some_and(|v| v >= at_least),
                "{name} {:?}: {got:?} (want at least {at_least})\n{text}",
                on(more)
            );
        };
        has(
            "tandem_statement_duration_seconds_count",
            &["db_operation=\"SELECT\""],
            3.0,
        );
        has(
            "tandem_statement_duration_seconds_count",
            &["db_operation=\"COMMIT\""],
            1.0,
        );
        has("tandem_transactions_total", &["outcome=\"commit\""], 1.0);
        has("tandem_pool_acquire_wait_seconds_count", &[], 4.0);
        has("tandem_pool_acquire_timeouts_total", &[], 1.0);
        has("tandem_stream_producer_wait_seconds_count", &[], 1.0);
        for gauge in [
            "tandem_pool_size",
            "tandem_pool_idle",
            "tandem_pool_in_use",
            "tandem_pool_waiting",
            "tandem_stream_rows_buffered",
        ] {
            has(gauge, &[], 0.0);
        }
    }
}

fn main() {
    harness::main(harness::engines("metrics_of_both_executors", run));
}
