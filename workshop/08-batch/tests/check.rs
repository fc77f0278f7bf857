//! Stage 8's specification. `just check 08` runs it on your `src/exercise.rs`, on SQLite, and on PostgreSQL
//! and MariaDB when they can be reached. The oracle is the target table: after any number of runs, killed
//! (SIGKILL) at random moments and started again, it must hold exactly the transformed source rows, each
//! once.

use std::process::{Command, Stdio};
use std::time::Duration;

use batch::job::{
    COMPLETED, Job, batch_job_execution, batch_step_execution, benchmark_source, benchmark_target,
    ensure_tables, transform,
};
use batch::{run_async, run_blocking, split};
use blocking::{Database, Executor};
use dialects::{Insert, Order, Select};
use proptest::prelude::*;
use tables::{Dialect, Value};
use workshop_harness::proptest_config;

/// A step row: key, run, partition, first and last key, checkpoint, rows written, status.
type StepRow = (i64, i64, i32, i64, i64, i64, i64, String);

/// The same engine, as tandem names it.
fn tandem_dialect(d: Dialect) -> tandem_sql::Dialect {
    d.to_string().parse().expect("tandem knows every engine")
}

proptest! {
    #![proptest_config(proptest_config(256))]

    /// Partitions cover every key of `[lo, hi]` exactly once, contiguous and in order, sizes within one of
    /// each other, never more partitions than keys.
    fn split_covers_every_key_once(lo in -1_000i64..1_000, len in -3i64..300, n in 0usize..12) {
        let hi = lo + len - 1;
        let parts = split(lo, hi, n);
        if hi < lo {
            prop_assert!(parts.is_empty(), "no keys, no partitions: {:?}", parts);
            return Ok(());
        }
        let keys = (hi - lo + 1) as usize;
        prop_assert_eq!(parts.len(), n.max(1).min(keys), "how many partitions");
        prop_assert_eq!(parts[0].0, lo, "the first partition starts at lo: {:?}", parts);
        prop_assert_eq!(parts[parts.len() - 1].1, hi, "the last partition ends at hi: {:?}", parts);
        for w in parts.windows(2) {
            prop_assert_eq!(w[1].0, w[0].1 + 1, "contiguous: {:?}", parts);
        }
        let sizes: Vec<i64> = parts.iter().map(|(a, b)| b - a + 1).collect();
        prop_assert!(sizes.iter().all(|s| *s >= 1), "no partition is empty: {:?}", parts);
        prop_assert!(sizes.iter().max().unwrap() - sizes.iter().min().unwrap() <= 1, "sizes {:?}", sizes);
    }
}

/// Even the widest range splits without overflow.
fn split_handles_the_whole_range() {
    let parts = split(i64::MIN, i64::MAX, 3);
    assert_eq!(
        parts.len(),
        3,
        "partitions of the whole i64 range: {parts:?}"
    );
    assert_eq!(
        parts[0].0,
        i64::MIN,
        "the first starts at i64::MIN: {parts:?}"
    );
    assert_eq!(parts[2].1, i64::MAX, "the last ends at i64::MAX: {parts:?}");
}

/// A fresh database on every engine that answers, with the job's tables and `rows` source rows (keys
/// from 1, with gaps: every seventh key is missing).
fn on_engines(name: &str, rows: i64, f: impl Fn(&Database, &str)) {
    for d in Dialect::ALL {
        let Some(target) = workshop_support::db::target_or_skip(tandem_dialect(d), name) else {
            continue;
        };
        let url = target.url();
        let db = Database::open(&url, 8).unwrap_or_else(|e| panic!("{d}: {e}"));
        ensure_tables(&db).unwrap_or_else(|e| panic!("{d}: {e}"));
        let mut insert = Insert::into(benchmark_source::table, vec!["id", "name", "value"]);
        let mut any = false;
        for i in (1..=rows + rows / 6)
            .filter(|i| i % 7 != 0)
            .take(rows as usize)
        {
            insert = insert.row(vec![
                Value::I64(i),
                Value::Text(format!("item-{i}")),
                Value::I64(i * 3 - 100),
            ]);
            any = true;
        }
        if any {
            for st in insert.render_chunks(d).unwrap() {
                db.execute(&st).unwrap();
            }
        }
        f(&db, &url);
    }
}

/// The target holds exactly the transformed source rows, each once; every partition and the run completed.
fn exactly_once(db: &Database, context: &str) {
    let d = db.dialect();
    let source: Vec<(i64, String, i64)> = db
        .fetch(
            &Select::from(benchmark_source::table)
                .order_by(benchmark_source::id, Order::Asc)
                .render(d)
                .unwrap(),
        )
        .unwrap();
    let target: Vec<(i64, String, i64)> = db
        .fetch(
            &Select::from(benchmark_target::table)
                .order_by(benchmark_target::id, Order::Asc)
                .render(d)
                .unwrap(),
        )
        .unwrap();
    let expected: Vec<(i64, String, i64)> = source
        .iter()
        .map(|(id, name, value)| transform(*id, name, *value))
        .collect();
    assert_eq!(
        target.len(),
        expected.len(),
        "{d}, {context}: {} target rows for {} source rows",
        target.len(),
        expected.len()
    );
    assert!(
        target == expected,
        "{d}, {context}: the target is not the transformed source"
    );
    let steps: Vec<StepRow> = db
        .fetch(&Select::from(batch_step_execution::table).render(d).unwrap())
        .unwrap();
    assert!(
        steps.iter().all(|s| s.7 == COMPLETED),
        "{d}, {context}: every partition completed"
    );
    let written: i64 = steps.iter().map(|s| s.6).sum();
    let held = expected.len() as i64;
    assert!(
        written <= held,
        "{d}: the step rows count {written} rows written, the target holds {held}: rows were \
         counted twice — a later run counted again a chunk whose checkpoint had committed: it resumed \
         before the checkpoint, or a chunk counts the rows it read rather than the rows it inserted\n{context}"
    );
    assert!(
        written >= held,
        "{d}: the step rows count {written} rows written, the target holds {held}: rows were \
         committed that no checkpoint counted — a chunk committed without its checkpoint, whose rerun found \
         its rows already there (the chunk's rows and its checkpoint belong in one transaction)\n{context}"
    );
    let runs: Vec<(i64, String, String)> = db
        .fetch(&Select::from(batch_job_execution::table).render(d).unwrap())
        .unwrap();
    assert!(
        runs.iter().all(|r| r.2 == COMPLETED),
        "{d}, {context}: the run completed"
    );
}

/// Both runners, with one and four partitions, write every row once, say so in their report, and a rerun
/// finds the job completed.
fn the_job_writes_every_row_once() {
    for (runner, partitions) in [("blocking", 1), ("blocking", 4), ("async", 1), ("async", 4)] {
        on_engines("w8once", 3_000, |db, url| {
            let job = Job {
                partitions,
                ..Job::new("essay")
            };
            let report = run(db, url, runner, &job);
            assert_eq!(
                (report.read, report.written, report.resumed),
                (3_000, 3_000, false),
                "{}: {runner} runner, {partitions} partitions — (rows read, rows written, resumed?) of a \
                 first run over 3,000 source rows",
                db.dialect()
            );
            exactly_once(db, &format!("{runner}, {partitions} partitions"));
            let again = run(db, url, runner, &job);
            assert!(again.already_completed, "a rerun finds the job completed");
        });
    }
}

/// A job over an empty source completes at once, with nothing written.
fn an_empty_source_completes() {
    on_engines("w8empty", 0, |db, url| {
        let report = run(db, url, "blocking", &Job::new("empty"));
        assert_eq!(
            (report.read, report.written),
            (0, 0),
            "(rows read, rows written) of a job over an empty source"
        );
        exactly_once(db, "an empty source");
    });
}

/// A source whose smallest key is `i64::MIN` (no checkpoint can come before it) is refused by both
/// runners with a `DecodeError` naming it, before anything is written — never an overflow.
fn a_key_at_i64_min_is_refused() {
    on_engines("w8min", 3, |db, url| {
        let d = db.dialect();
        let st = Insert::into(benchmark_source::table, vec!["id", "name", "value"])
            .row(vec![
                Value::I64(i64::MIN),
                Value::Text("the lowest".into()),
                Value::I64(1),
            ])
            .render(d)
            .unwrap();
        db.execute(&st).unwrap();
        let job = Job::new("lowest");
        let refused = |r: Result<batch::job::Report, blocking::Error>, runner: &str| match r {
            Err(blocking::Error::Decode(e)) if e.found == Value::I64(i64::MIN) => {}
            other => panic!(
                "{d} {runner}: a source starting at i64::MIN must be refused with a DecodeError naming \
                 it, got {other:?}"
            ),
        };
        refused(run_blocking(db, &job), "blocking");
        refused(run_async_at(url, &job), "async");
        let runs: Vec<(i64, String, String)> = db
            .fetch(&Select::from(batch_job_execution::table).render(d).unwrap())
            .unwrap();
        assert!(
            runs.is_empty(),
            "{d}: nothing written for a refused source: {runs:?}"
        );
    });
}

/// The writes a trigger refuses in [`a_failed_write_stops_the_job_and_loses_nothing`]: what, the table,
/// the event, and the condition (on the row `NEW`, and `OLD` for an update).
const REFUSALS: [(&str, &str, &str, &str); 3] = [
    (
        "a chunk's row (key 1,500)",
        "benchmark_target",
        "INSERT",
        "NEW.id = 1500",
    ),
    (
        "a checkpoint (past key 1,500)",
        "batch_step_execution",
        "UPDATE",
        "NEW.checkpoint <> OLD.checkpoint AND NEW.checkpoint >= 1500",
    ),
    (
        "the run's step rows",
        "batch_step_execution",
        "INSERT",
        "1 = 1",
    ),
];

/// Makes the database refuse a write — `event` on `table` where `when` holds — with a trigger; with
/// `when` `None`, drops it. Through a connection of stage 4's `Conn` (`batch`: MySQL cannot prepare a
/// CREATE TRIGGER).
fn refuse(url: &str, table: &str, event: &str, when: Option<&str>) {
    let mut conn = blocking::drivers::connect(url).unwrap_or_else(|e| panic!("{url}: {e}"));
    let d = conn.dialect();
    let sql = match (d, when) {
        (Dialect::Sqlite, Some(w)) => format!(
            "CREATE TRIGGER refuse BEFORE {event} ON {table} FOR EACH ROW WHEN {w} \
             BEGIN SELECT RAISE(ABORT, 'refused by the check'); END"
        ),
        (Dialect::Postgres, Some(w)) => format!(
            "CREATE OR REPLACE FUNCTION refuse_write() RETURNS trigger LANGUAGE plpgsql AS \
             $$BEGIN RAISE EXCEPTION 'refused by the check'; END$$; \
             CREATE TRIGGER refuse BEFORE {event} ON {table} FOR EACH ROW WHEN ({w}) \
             EXECUTE FUNCTION refuse_write()"
        ),
        (Dialect::MySql, Some(w)) => format!(
            "CREATE TRIGGER refuse BEFORE {event} ON {table} FOR EACH ROW BEGIN IF {w} THEN \
             SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'refused by the check'; END IF; END"
        ),
        (Dialect::Postgres, None) => format!("DROP TRIGGER refuse ON {table}"),
        (_, None) => "DROP TRIGGER refuse".to_owned(),
    };
    conn.batch(&sql)
        .unwrap_or_else(|e| panic!("{d}: {e}: {sql}"));
}

/// A job fails on its own when a write fails: a chunk's rows, a checkpoint, the run's step rows — here a
/// trigger refuses one of them. The job must end with that error (not go on to the next chunk, not report
/// success); once the trigger is gone, a rerun finishes it exactly once — which it can only if the chunk
/// and its checkpoint were one transaction, and the run and its step rows another. Both runners.
fn a_failed_write_stops_the_job_and_loses_nothing() {
    for (what, table, event, when) in REFUSALS {
        for runner in ["blocking", "async"] {
            on_engines("w8refused", 3_000, |db, url| {
                let d = db.dialect();
                refuse(url, table, event, Some(when));
                let job = Job::new("essay");
                if let Ok(report) = try_run(db, url, runner, &job) {
                    panic!(
                        "{d}, {runner} runner: the database refused {what}, yet the job ended with \
                         Ok({report:?}). A failed write must stop the job with its error: a job that goes \
                         on has lost those rows, and one that reports success will not be run again"
                    );
                }
                refuse(url, table, event, None);
                let again = run(db, url, runner, &job);
                exactly_once(
                    db,
                    &format!(
                        "{runner} runner: {what} refused, the job failed, then a rerun {again:?}"
                    ),
                );
            });
        }
    }
}

/// Each page starts after the last key of the page before (keyset paging), not after a count of rows read
/// (`OFFSET`): with a row the job has already copied deleted from the source while the job runs (a trigger
/// on the target fires at the 15th row written, pages of 10), every row still in the source at the end is
/// in the target. Paged by position, the deleted row moves every later row one place up, the next page
/// starts one row late, and that row is never copied. Both runners.
fn pages_follow_keys_not_positions() {
    for runner in ["blocking", "async"] {
        on_engines("w8keyset", 100, |db, url| {
            let d = db.dialect();
            let keys = keys_of(db, benchmark_source::table);
            let (copied, trigger_at) = (keys[4], keys[14]);
            let delete = format!("DELETE FROM benchmark_source WHERE id = {copied}");
            let sql = match d {
                Dialect::Sqlite => format!(
                    "CREATE TRIGGER shift AFTER INSERT ON benchmark_target FOR EACH ROW \
                     WHEN NEW.id = {trigger_at} BEGIN {delete}; END"
                ),
                Dialect::Postgres => format!(
                    "CREATE OR REPLACE FUNCTION shift() RETURNS trigger LANGUAGE plpgsql AS \
                     $$BEGIN {delete}; RETURN NULL; END$$; \
                     CREATE TRIGGER shift AFTER INSERT ON benchmark_target FOR EACH ROW \
                     WHEN (NEW.id = {trigger_at}) EXECUTE FUNCTION shift()"
                ),
                Dialect::MySql => format!(
                    "CREATE TRIGGER shift AFTER INSERT ON benchmark_target FOR EACH ROW \
                     BEGIN IF NEW.id = {trigger_at} THEN {delete}; END IF; END"
                ),
            };
            let mut conn = blocking::drivers::connect(url).unwrap_or_else(|e| panic!("{url}: {e}"));
            conn.batch(&sql)
                .unwrap_or_else(|e| panic!("{d}: {e}: {sql}"));
            let job = Job {
                page: 10,
                ..Job::new("essay")
            };
            run(db, url, runner, &job);
            let copied_ids = keys_of(db, benchmark_target::table);
            let missed: Vec<i64> = keys_of(db, benchmark_source::table)
                .into_iter()
                .filter(|k| copied_ids.binary_search(k).is_err())
                .collect();
            assert!(
                missed.is_empty(),
                "{d}, {runner} runner: source rows never copied: keys {missed:?}, after key {copied} (already \
                 copied) was deleted from the source while the job ran. Start each page after the last key \
                 read (`id > last`), not at a count of rows (`OFFSET`): a row deleted before the cursor moves \
                 the others up, and paging by position skips one"
            );
        });
    }
}

/// The keys of `table` (the job's source or target: key, name, value), in order.
fn keys_of<T: tables::Table>(db: &Database, table: T) -> Vec<i64> {
    let st = Select::from(table).render(db.dialect()).unwrap();
    let mut keys: Vec<i64> = db
        .fetch::<(i64, String, i64)>(&st)
        .unwrap()
        .into_iter()
        .map(|r| r.0)
        .collect();
    keys.sort_unstable();
    keys
}

/// The async runner on a database of its own at `url`, on a two-worker runtime of its own.
fn run_async_at(url: &str, job: &Job) -> Result<batch::job::Report, blocking::Error> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            let adb = asynchronous::Database::open(url, 8).await.unwrap();
            run_async(&adb, job).await
        })
}

/// The job on `runner` ("blocking", or the async runner on a database of its own at `url`).
fn try_run(
    db: &Database,
    url: &str,
    runner: &str,
    job: &Job,
) -> Result<batch::job::Report, blocking::Error> {
    match runner {
        "blocking" => run_blocking(db, job),
        _ => run_async_at(url, job),
    }
}

/// [`try_run`], which must succeed.
fn run(db: &Database, url: &str, runner: &str, job: &Job) -> batch::job::Report {
    try_run(db, url, runner, job).unwrap_or_else(|e| panic!("{} {runner}: {e}", db.dialect()))
}

/// Rows written so far by the job's partitions, as their step rows say (none before the run has begun).
fn progress(db: &Database) -> i64 {
    let st = Select::from(batch_step_execution::table)
        .render(db.dialect())
        .unwrap();
    db.fetch::<StepRow>(&st)
        .map(|steps| steps.iter().map(|s| s.6).sum())
        .unwrap_or(0)
}

/// The job as a separate process, killed with SIGKILL in the middle of its work — just after it starts,
/// then at random points between a tenth and nine tenths of the rows, either runner, four partitions —
/// then run to its end: no row lost, none written twice.
fn a_killed_job_resumes_exactly_once() {
    const ROWS: i64 = 30_000;
    on_engines("w8kill", ROWS, |db, url| {
        let d = db.dialect();
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |t| u64::from(t.subsec_nanos()) | 1);
        let mut rng = seed;
        let mut next = |n: u64| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng % n
        };
        // Fractions of the rows after which each run is killed, rising; the first run dies as it starts.
        let mut at: Vec<i64> = (0..4)
            .map(|_| (10 + next(80) as i64) * ROWS / 100)
            .collect();
        at.sort();
        at.insert(0, 0);
        let mut kills = Vec::new();
        for (attempt, target) in at.into_iter().enumerate() {
            let runner = if attempt % 2 == 0 {
                "blocking"
            } else {
                "async"
            };
            let mut child = Command::new(env!("CARGO_BIN_EXE_batch-job"))
                .args([url, runner, "4"])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .expect("start the job");
            let started = std::time::Instant::now();
            let mut done = progress(db);
            while done < target && started.elapsed() < Duration::from_secs(30) {
                if child.try_wait().ok().flatten().is_some() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(2));
                done = progress(db);
            }
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            kills.push((runner, done, out.status.code()));
            if let Some(code) = out.status.code().filter(|c| *c != 0) {
                panic!(
                    "{d}: the job failed on its own ({code}): {}",
                    String::from_utf8_lossy(&out.stderr)
                );
            }
        }
        assert!(
            kills.iter().filter(|k| k.2.is_none()).count() >= 3,
            "{d}: the job finished before most kills could interrupt it: {kills:?}"
        );
        // What the killed runs committed: the last run may find more (a COMMIT still on its way to
        // the server as its client died), never less.
        let done_before = progress(db);
        let last = run(
            db,
            url,
            "blocking",
            &Job {
                partitions: 4,
                ..Job::new("essay")
            },
        );
        let left = ROWS - done_before;
        assert!(
            last.already_completed || last.read as i64 <= left,
            "{d}: the last run read {} rows, but the checkpoints left only {left} unwritten: it read \
             rows again from before a checkpoint. Resume each partition after its checkpoint, not from \
             its first key",
            last.read
        );
        eprintln!("{d}: killed after {kills:?}, then {last:?}");
        let context =
            format!("killed after these many rows {kills:?} (seed {seed}), finished with {last:?}");
        assert!(
            last.resumed || last.already_completed,
            "{d}: the last run resumes the killed one: {context}"
        );
        exactly_once(db, &context);
    });
}

workshop_harness::checks!(
    split_covers_every_key_once,
    split_handles_the_whole_range,
    a_key_at_i64_min_is_refused,
    the_job_writes_every_row_once,
    an_empty_source_completes,
    a_failed_write_stops_the_job_and_loses_nothing,
    pages_follow_keys_not_positions,
    a_killed_job_resumes_exactly_once,
);
