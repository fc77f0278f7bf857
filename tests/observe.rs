//! The same spans from both executors: the same repository calls, and the same batch job, run once on the
//! blocking executor and once on the async one, on SQLite, PostgreSQL and MariaDB, give the same span tree
//! — names, parents, fields (values too, but for durations and waits) — statements of spawned partition
//! tasks included. A collecting subscriber (`tandem_test_support::spans`) keeps every span.

use tandem_async::Executor as _;
use tandem_batch::BatchJob;
use tandem_batch::essay::{self, Source, Target, benchmark_source, benchmark_target};
use tandem_batch::model::{batch_job_execution, batch_step_execution};
use tandem_blocking::{BatchOptions, Executor as _, PoolConfig};
use tandem_sql::prelude::*;
use tandem_sql::{Dialect, raw};
use tandem_test_support::schema::{User, user, users};
use tandem_test_support::spans::{Collector, Node};
use tandem_test_support::{db, harness};
use tracing::Instrument;

/// Fields whose values differ run to run; only their presence is compared.
const VOLATILE: &[&str] = &["duration_ms", "wait_ms"];

/// `db.system` as tandem reports it.
fn system(dialect: Dialect) -> &'static str {
    tandem_core::observe::system(dialect)
}

/// The spans named `name` in a tree.
fn named<'a>(tree: &'a Node, name: &str) -> Vec<&'a Node> {
    tree.walk()
        .into_iter()
        .filter(|n| n.span.name == name)
        .collect()
}

fn field<'a>(n: &'a Node, key: &str) -> &'a str {
    n.span
        .fields
        .get(key)
        .map(String::as_str)
        .unwrap_or_else(|| panic!("{} has no field {key}: {:?}", n.span.name, n.span.fields))
}

/// Fails with the lines each tree has and the other lacks, when the two differ.
fn assert_same_tree(blocking: &str, asynchronous: &str) {
    if blocking == asynchronous {
        return;
    }
    let (b, a): (Vec<&str>, Vec<&str>) =
        (blocking.lines().collect(), asynchronous.lines().collect());
    let only = |x: &[&str], y: &[&str]| -> Vec<String> {
        let mut y = y.to_vec();
        x.iter()
            .filter(|l| match y.iter().position(|m| m == *l) {
                Some(i) => {
                    y.remove(i);
                    false
                }
                None => true,
            })
            .map(|l| l.to_string())
            .collect()
    };
    panic!(
        "the span trees differ\nonly blocking:\n{}\nonly async:\n{}\n\nblocking:\n{blocking}",
        only(&b, &a).join("\n"),
        only(&a, &b).join("\n")
    );
}

/// Repository calls — an insert, a transaction of two calls, a key lookup, a count — on both executors.
fn repository(dialect: Dialect) {
    let collector = Collector::install();
    let t = db::open(dialect, "observe_repository", PoolConfig::default());
    let bdb = &t.db;
    bdb.create_table(&users::table.create_table()).unwrap();
    let (rt, adb) = t.async_twin(PoolConfig::default());

    let blocking = collector.case("same work");
    blocking.in_scope(|| {
        let repo = bdb.repository::<User>();
        let id = repo.insert(&user("ada", 36)).unwrap();
        bdb.transaction(|tx| {
            let r = tx.repository::<User>();
            r.insert(&user("grace", 45))?;
            r.update_by_id(&User {
                id,
                ..user("ada", 37)
            })
        })
        .unwrap();
        assert!(repo.find_by_id(id).unwrap().is_some());
        assert_eq!(repo.count().unwrap(), 2);
    });
    bdb.repository::<User>().delete_all().unwrap();

    let asynchronous = collector.case("same work");
    rt.block_on(
        async {
            let repo = adb.repository::<User>();
            let id = repo.insert(&user("ada", 36)).await.unwrap();
            adb.transaction(async |tx| {
                let r = tx.repository::<User>();
                r.insert(&user("grace", 45)).await?;
                r.update_by_id(&User {
                    id,
                    ..user("ada", 37)
                })
                .await
            })
            .await
            .unwrap();
            assert!(repo.find_by_id(id).await.unwrap().is_some());
            assert_eq!(repo.count().await.unwrap(), 2);
        }
        .instrument(asynchronous.clone()),
    );

    let (b, a) = (collector.tree(&blocking), collector.tree(&asynchronous));
    // What the tree must hold, before comparing: checkouts, statements with the conventions' fields, and
    // one transaction whose statements are its children.
    let statements = named(&b, "statement");
    assert!(statements.len() >= 6, "{}", b.canonical(VOLATILE));
    for s in &statements {
        assert_eq!(field(s, "db.system"), system(dialect));
        assert!(!field(s, "db.statement").is_empty());
        field(s, "rows");
        field(s, "duration_ms");
    }
    assert!(
        statements
            .iter()
            .any(|s| field(s, "db.operation") == "INSERT" && field(s, "rows") == "1")
    );
    assert!(!named(&b, "checkout").is_empty());
    let txs = named(&b, "transaction");
    assert_eq!(txs.len(), 1, "{}", b.canonical(VOLATILE));
    let tx = txs[0];
    assert_eq!(field(tx, "attempt"), "1");
    assert_eq!(field(tx, "outcome"), "commit");
    let inside: Vec<&str> = tx
        .children
        .iter()
        .filter(|c| c.span.name == "statement")
        .map(|c| field(c, "db.operation"))
        .collect();
    assert!(
        inside.contains(&"INSERT") && inside.contains(&"UPDATE") && inside.contains(&"COMMIT"),
        "the transaction's statements are its children: {inside:?}"
    );
    // No statement escapes its caller's span: every one has a parent inside the case.
    assert_same_tree(&b.canonical(VOLATILE), &a.canonical(VOLATILE));
}

/// Fresh source (`n` rows), target and job tables.
fn reset(db: &tandem_blocking::Database, n: usize) {
    for t in [
        benchmark_target::table.drop_table(),
        benchmark_source::table.drop_table(),
        batch_job_execution::table.drop_table(),
        batch_step_execution::table.drop_table(),
    ] {
        db.execute(&t).unwrap();
    }
    db.execute(&raw("DROP TABLE IF EXISTS batch_job_lock", vec![]))
        .unwrap();
    db.create_table(&benchmark_source::table.create_table())
        .unwrap();
    db.create_table(&benchmark_target::table.create_table())
        .unwrap();
    db.repository::<Source>()
        .batch_insert(&essay::seed_rows(n), &BatchOptions::default())
        .unwrap();
}

/// The essay's batch job, two partitions, on both runners.
fn batch(dialect: Dialect) {
    let collector = Collector::install();
    let t = db::open(dialect, "observe_batch", PoolConfig::default());
    let bdb = &t.db;
    let (rt, adb) = t.async_twin(PoolConfig::default());
    let job = || -> BatchJob<Source, Target> { essay::job(2).sizes(100, 50) };

    // Each pool asks a MySQL server once which collation its tables get: asked before, not in the trees.
    rt.block_on(adb.create_table(&benchmark_source::table.create_table()))
        .unwrap();
    reset(bdb, 300);
    let blocking = collector.case("same work");
    let report = blocking
        .in_scope(|| tandem_batch::blocking::run(bdb, &job()))
        .unwrap();
    assert_eq!(report.written, 300);

    reset(bdb, 300);
    let asynchronous = collector.case("same work");
    let report = rt
        .block_on(tandem_batch::asynchronous::run(&adb, &job()).instrument(asynchronous.clone()))
        .unwrap();
    assert_eq!(report.written, 300);

    let (b, a) = (collector.tree(&blocking), collector.tree(&asynchronous));
    let runs = named(&b, "batch.run");
    assert_eq!(runs.len(), 1);
    let partitions: Vec<&Node> = runs[0]
        .children
        .iter()
        .filter(|c| c.span.name == "batch.partition")
        .collect();
    assert_eq!(partitions.len(), 2, "{}", b.canonical(VOLATILE));
    for tree in [&b, &a] {
        for p in named(tree, "batch.partition") {
            let chunks = named(p, "batch.chunk");
            assert_eq!(chunks.len(), 3, "150 rows a partition, 50 a chunk");
            for c in chunks {
                let tx = named(c, "transaction");
                assert_eq!(tx.len(), 1);
                assert_eq!(field(tx[0], "outcome"), "commit");
                assert!(
                    named(tx[0], "statement")
                        .iter()
                        .any(|s| field(s, "db.operation") == "INSERT" && field(s, "rows") == "50"),
                    "the chunk's INSERT is in its transaction"
                );
            }
            // The partition's statements were run on another thread than the test's: its thread
            // (blocking), a runtime worker (async) — and still nest under the partition.
            let here = tandem_test_support::spans::this_thread();
            assert!(
                named(p, "statement").iter().any(|s| s.span.thread != here),
                "no statement of the partition ran off the test's thread"
            );
        }
    }
    // The async runner keeps its connections for the run, the blocking one checks one out per chunk: the
    // checkouts differ by design, everything else is the same.
    assert_same_tree(
        &b.without(&["checkout"]).canonical(VOLATILE),
        &a.without(&["checkout"]).canonical(VOLATILE),
    );
}

fn main() {
    let mut cases = harness::engines("spans_of_repository_calls", repository);
    cases.extend(harness::engines("spans_of_a_batch_job", batch));
    harness::main(cases);
}
