//! What an operator sees of a batch job stuck on a row lock, on each executor: a thread dump of the process
//! (blocking), a tokio task dump (async), and beside each the spans open at that moment and the pool's
//! metrics. The book's "A job stuck on a row lock" (selection guide) shows the trimmed output; `just dumps` reproduces it.
//!
//! ```text
//! cargo run --example dumps -- blocking postgres://postgres@127.0.0.1:5432/test
//! RUSTFLAGS="--cfg tokio_unstable" cargo run --example dumps --features taskdump -- async <url>
//! ```
//!
//! The job is the essay's, two partitions, on PostgreSQL. Once its steps are recorded, another session
//! locks their rows (`SELECT … FOR UPDATE` in an open transaction): the next checkpoint of each partition
//! waits for that lock. After a second the example captures, then rolls the other session back and the
//! job completes. The thread dump comes from `gdb` (or `eu-stack`, elfutils), attached to this process;
//! the task dump from `Handle::dump`, which needs tokio built with `--cfg tokio_unstable` and its
//! `taskdump` feature (this package's `taskdump` feature turns it on; Linux x86_64 and aarch64).

use std::time::Duration;

use tandem::batch::essay::{self, Source, benchmark_source, benchmark_target};
use tandem::batch::model::{batch_job_execution, batch_step_execution};
use tandem::blocking::{BatchOptions, Database, Executor as _};
use tandem::prelude::*;
use tandem_test_support::spans::{Collector, Node};
use tracing::Instrument;

const ROWS: usize = 20_000;

fn reset(db: &Database) -> Result<(), Box<dyn std::error::Error>> {
    for t in [
        benchmark_target::table.drop_table(),
        benchmark_source::table.drop_table(),
        batch_job_execution::table.drop_table(),
        batch_step_execution::table.drop_table(),
    ] {
        db.execute(&t)?;
    }
    db.create_table(&benchmark_source::table.create_table())?;
    db.create_table(&benchmark_target::table.create_table())?;
    db.repository::<Source>()
        .batch_insert(&essay::seed_rows(ROWS), &BatchOptions::default())?;
    Ok(())
}

/// Another session: waits for the job's steps, locks their rows, holds them until told, rolls back.
fn blocker(
    url: String,
    release: std::sync::mpsc::Receiver<()>,
    locked: std::sync::mpsc::Sender<()>,
) {
    let db = Database::connect(&url).expect("the blocker connects");
    let steps = tandem::sql::raw("SELECT count(*) FROM batch_step_execution", vec![]);
    loop {
        if db.fetch_one::<(i64,)>(&steps).is_ok_and(|(n,)| n >= 2) {
            break;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let tx = db
        .begin(tandem::blocking::TxOptions::default())
        .expect("BEGIN");
    tx.execute(&tandem::sql::raw(
        "SELECT id FROM batch_step_execution FOR UPDATE",
        vec![],
    ))
    .expect("lock the step rows");
    let _ = locked.send(());
    let _ = release.recv();
    tx.rollback().expect("ROLLBACK");
}

/// Prints the spans open now, one tree per outermost span.
fn print_spans(collector: &Collector) {
    fn print(n: &Node, depth: usize) {
        let fields: Vec<String> = n
            .span
            .fields
            .iter()
            .filter(|(k, _)| !matches!(k.as_str(), "rows" | "duration_ms" | "error.kind"))
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        println!(
            "{:indent$}{} {{{}}}  [thread {}]",
            "",
            n.span.name,
            fields.join(", "),
            n.span.thread,
            indent = depth * 2
        );
        for c in &n.children {
            print(c, depth + 1);
        }
    }
    println!("== spans open now");
    for tree in collector.open_now() {
        print(&tree, 0);
    }
}

/// Prints tandem's pool and statement series from the exporter.
fn print_metrics(handle: &metrics_exporter_prometheus::PrometheusHandle) {
    println!("== metrics now (tandem_pool_*, statement counts)");
    for line in handle.render().lines() {
        let pool = line.starts_with("tandem_pool_") && !line.contains("quantile");
        let statements = line.starts_with("tandem_statement_duration_seconds_count")
            || line.starts_with("tandem_transactions_total");
        if pool || statements {
            println!("{line}");
        }
    }
}

/// The thread dump of this process, by a debugger attached to it. Its output goes to a file, not a pipe:
/// the debugger stops every thread of this process, the one that would read a pipe too, and a full
/// pipe would then stop the debugger. A debugger that may not attach (Yama's `ptrace_scope`, a container
/// without `CAP_SYS_PTRACE`) prints no thread: then what it said is shown, with what to change.
fn thread_dump() -> Result<(), Box<dyn std::error::Error>> {
    let pid = std::process::id().to_string();
    let out = std::env::temp_dir().join(format!("tandem-thread-dump-{pid}.txt"));
    let err = std::env::temp_dir().join(format!("tandem-thread-dump-{pid}.err"));
    println!("== thread dump (gdb -p {pid} -batch -ex \"thread apply all bt\")");
    let run = |program: &str, args: &[&str]| -> std::io::Result<String> {
        std::process::Command::new(program)
            .args(args)
            .stdout(std::fs::File::create(&out)?)
            .stderr(std::fs::File::create(&err)?)
            .status()?;
        std::fs::read_to_string(&out)
    };
    // No symbol server: nothing is fetched from the network.
    let gdb = [
        "-p",
        &pid,
        "-batch",
        "-iex",
        "set debuginfod enabled off",
        "-ex",
        "thread apply all bt",
    ];
    let dump = match run("gdb", &gdb) {
        Ok(dump) if dump.contains("Thread ") => Ok(dump),
        first => {
            match &first {
                Ok(_) => println!("(gdb printed no thread: {})", said(&err)),
                Err(e) => println!("(no gdb: {e})"),
            }
            println!("(trying eu-stack -p {pid}, from elfutils)");
            run("eu-stack", &["-p", &pid])
        }
    };
    let dump = dump.unwrap_or_else(|e| {
        println!("(no eu-stack: {e})");
        String::new()
    });
    if dump.trim().is_empty() {
        println!(
            "no thread dump{}.\n  Install gdb or elfutils. \"ptrace: Operation not \
             permitted\" means this process may not be traced by its child: `sysctl \
             kernel.yama.ptrace_scope=0` for the capture, or run as root, or give the container \
             CAP_SYS_PTRACE.",
            match said(&err).as_str() {
                "nothing on stderr" => String::new(),
                eu => format!(" (eu-stack: {eu})"),
            }
        );
    }
    print!("{dump}");
    let _ = std::fs::remove_file(&out);
    let _ = std::fs::remove_file(&err);
    Ok(())
}

/// The last lines a debugger wrote to its error file.
fn said(file: &std::path::Path) -> String {
    let text = std::fs::read_to_string(file).unwrap_or_default();
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    match lines.len() {
        0 => "nothing on stderr".into(),
        n => lines[n.saturating_sub(3)..].join(" / "),
    }
}

#[cfg(all(tokio_unstable, feature = "taskdump"))]
async fn task_dump() {
    println!("== tokio task dump (Handle::dump)");
    let dump = tokio::runtime::Handle::current().dump().await;
    for (i, task) in dump.tasks().iter().enumerate() {
        println!("-- task {i} ({:?})", task.id());
        println!("{}", task.trace());
    }
}

#[cfg(not(all(tokio_unstable, feature = "taskdump")))]
async fn task_dump() {
    println!("== tokio task dump: not in this build; run it with");
    println!(
        "   RUSTFLAGS=\"--cfg tokio_unstable\" cargo run --example dumps --features taskdump -- async <url>"
    );
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let side = args.next().unwrap_or_else(|| "blocking".into());
    let url = args
        .next()
        .unwrap_or_else(|| "postgres://postgres@127.0.0.1:5432/test".into());
    let collector = Collector::install();
    let recorder = metrics_exporter_prometheus::PrometheusBuilder::new().build_recorder();
    let handle = recorder.handle();
    metrics::set_global_recorder(recorder)?;

    let db = Database::connect(&url)?;
    reset(&db)?;
    let (release_tx, release) = std::sync::mpsc::channel();
    let (locked_tx, locked) = std::sync::mpsc::channel();
    let blocker = {
        let url = url.clone();
        std::thread::spawn(move || blocker(url, release, locked_tx))
    };
    let job = essay::job(2).sizes(500, 250);
    let request = tracing::info_span!("request", side = %side);
    match side.as_str() {
        "blocking" => {
            let runner = std::thread::Builder::new()
                .name("job".into())
                .spawn(move || request.in_scope(|| tandem::batch::blocking::run(&db, &job)))?;
            locked.recv()?;
            std::thread::sleep(Duration::from_secs(1));
            print_spans(&collector);
            print_metrics(&handle);
            thread_dump()?;
            release_tx.send(())?;
            let report = runner.join().expect("the job thread")?;
            println!("== job done: {} rows written", report.written);
        }
        "async" => {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()?;
            rt.block_on(async {
                let adb = tandem::asynchronous::Database::connect(&url).await?;
                let run = tokio::spawn(
                    async move { tandem::batch::asynchronous::run(&adb, &job).await }
                        .instrument(request),
                );
                tokio::task::spawn_blocking(move || locked.recv()).await??;
                tokio::time::sleep(Duration::from_secs(1)).await;
                print_spans(&collector);
                print_metrics(&handle);
                task_dump().await;
                release_tx.send(())?;
                let report = run.await??;
                println!("== job done: {} rows written", report.written);
                Ok::<_, Box<dyn std::error::Error>>(())
            })?;
        }
        other => return Err(format!("{other}: blocking or async").into()),
    }
    blocker.join().expect("the blocker thread");
    Ok(())
}
