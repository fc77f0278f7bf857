//! Given: your benchmark as a program. `bench [--quick] [--db sqlite,postgres,mysql] [--rows 1000,10000]
//! [--partitions 1,4] [--iterations 5]` measures the essay's two workloads on your two executors and on
//! tandem's, every operation verified, and prints your table beside the essay's figures. `--quick` is
//! SQLite, 1,000 and 10,000 rows, parallelism 1 and 4, three iterations: under a minute.
//!
//! `bench --service [--quick] [--db …]` runs chapter 9's service instead: `/db` and `/queries?q=20` from 16
//! and 256 connections on each of the four executors (a thread per connection for the blocking ones, a
//! tokio task per connection for the async ones), every answer checked; `--quick` is one second a load.
//!
//! Run it in release mode — debug builds measure the compiler, not the executors:
//! `cargo run --release -p workshop-09-choosing --bin bench -- --quick`.

use std::process::ExitCode;

use bench::workloads::{Side, Workload};
use bench::{measure, table};

fn list<T: std::str::FromStr>(args: &[String], flag: &str, default: Vec<T>) -> Vec<T> {
    args.iter()
        .position(|a| a == flag)
        .and_then(|i| args.get(i + 1))
        .map(|v| v.split(',').filter_map(|x| x.trim().parse().ok()).collect())
        .unwrap_or(default)
}

/// `url` in plain TCP unless it says otherwise: your executors speak no TLS, and tandem's would use it
/// where the server offers it (`sslmode=prefer` is the default) — a comparison gives both sides the same
/// transport.
fn plain_tcp(url: String, setting: &str) -> String {
    let key = setting.split('=').next().unwrap_or(setting);
    if url.contains(&format!("{key}=")) {
        return url;
    }
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}{setting}")
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let quick = args.iter().any(|a| a == "--quick");
    let dbs: Vec<String> = list(&args, "--db", vec!["sqlite".to_owned()]);
    let rows: Vec<u64> = list(&args, "--rows", vec![1_000, 10_000]);
    let partitions: Vec<usize> = list(&args, "--partitions", vec![1, 4]);
    let iterations = list(&args, "--iterations", vec![if quick { 3 } else { 5 }])[0];
    let service = args.iter().any(|a| a == "--service");
    let dir = std::env::temp_dir().join(format!("workshop-bench-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let mut cells = Vec::new();
    for db in &dbs {
        let url = match db.as_str() {
            "sqlite" => format!("sqlite://{}", dir.join("bench.db").display()),
            "postgres" => plain_tcp(
                std::env::var("TANDEM_POSTGRES_URL")
                    .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into()),
                "sslmode=disable",
            ),
            "mysql" => plain_tcp(
                std::env::var("TANDEM_MYSQL_URL")
                    .unwrap_or_else(|_| "mysql://root@127.0.0.1:3306/test".into()),
                "ssl-mode=DISABLED",
            ),
            other => {
                eprintln!("bench: unknown engine {other} (sqlite, postgres, mysql)");
                return ExitCode::from(2);
            }
        };
        if service {
            let took = if quick { 1 } else { 3 };
            if let Err(e) = run_service(db, &url, std::time::Duration::from_secs(took)) {
                eprintln!("failed: {e}");
                return ExitCode::FAILURE;
            }
            continue;
        }
        let mut workloads: Vec<Workload> =
            rows.iter().map(|&rows| Workload::Seed { rows }).collect();
        for &r in &rows {
            for &p in &partitions {
                workloads.push(Workload::EndToEnd {
                    rows: r,
                    partitions: p,
                });
            }
        }
        // The engine as the table names it (`SQLite`, not the `--db` word).
        let engine =
            blocking::drivers::dialect_of(&url).map_or_else(|_| db.clone(), |d| d.to_string());
        for w in workloads {
            for side in Side::ALL {
                eprint!("{engine} {w} {side} … ");
                match measure(&url, side, w, iterations) {
                    Ok(cell) => {
                        eprintln!(
                            "{:.1} ops/s, spread {:.0} %",
                            bench::ops_per_sec(&cell),
                            100.0 * bench::spread(&cell.samples)
                        );
                        cells.push(cell);
                    }
                    Err(e) => {
                        eprintln!("failed: {e}");
                        return ExitCode::FAILURE;
                    }
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    if service {
        return ExitCode::SUCCESS;
    }
    println!("{}", table(&cells));
    for line in far_off(&cells) {
        println!("{line}");
    }
    ExitCode::SUCCESS
}

/// Your sides more than twice as slow, or as fast, as tandem's side of the same model on the same cell: a
/// gap that size is your executor's (a statement prepared on every call, a pool that reconnects, …), not
/// the execution model's — look at it before reading the blocking ÷ async column as a verdict.
fn far_off(cells: &[bench::workloads::Cell]) -> Vec<String> {
    let rate = |engine, workload, side| {
        cells
            .iter()
            .find(|c| c.engine == engine && c.workload == workload && c.side == side)
            .map(bench::ops_per_sec)
    };
    let mut out = Vec::new();
    for c in cells {
        let theirs = match c.side {
            Side::MineBlocking => Side::TandemBlocking,
            Side::MineAsync => Side::TandemAsync,
            _ => continue,
        };
        let (Some(mine), Some(tandem)) = (
            rate(c.engine, c.workload, c.side),
            rate(c.engine, c.workload, theirs),
        ) else {
            continue;
        };
        let ratio = mine / tandem;
        if tandem > 0.0 && !(0.5..=2.0).contains(&ratio) {
            out.push(format!(
                "⚠ {} {}: {} runs at {ratio:.2} × {}: a gap this size is the executor's, not the \
                 model's — find it before comparing blocking with async on this line",
                c.engine, c.workload, c.side, theirs
            ));
        }
    }
    out
}

/// The service on `db`: each load on each side, every answer checked, then a table of right answers per
/// second and p99 latency, and yours ÷ tandem's for each model.
fn run_service(db: &str, url: &str, took: std::time::Duration) -> Result<(), String> {
    use bench::service::{WORLD_ROWS, drive, seed_world, serve};
    seed_world(url, WORLD_ROWS)?;
    let loads = [
        ("/db", 16),
        ("/db", 256),
        ("/queries?q=20", 16),
        ("/queries?q=20", 256),
    ];
    let mut rates = std::collections::HashMap::new();
    let mut lines = Vec::new();
    for side in Side::ALL {
        let server = serve(url, side, WORLD_ROWS)?;
        for (target, connections) in loads {
            eprint!("{db} service {target} × {connections} {side} … ");
            let load = drive(server.addr, target, connections, took, WORLD_ROWS);
            if load.errors > 0 {
                return Err(format!(
                    "{side}: {} wrong or failed answers; the first: {:?}",
                    load.errors, load.problems
                ));
            }
            eprintln!("{:.0} req/s", load.per_sec());
            rates.insert((side, target, connections), load.per_sec());
            lines.push((side, target, connections, load));
        }
    }
    println!(
        "\nservice on {db}: right answers per second, p99 in ms ({} s a load)",
        took.as_secs()
    );
    println!(
        "{:<15} {:>5}  {:>17} {:>17} {:>17} {:>17}  {:>9} {:>9}",
        "request",
        "conns",
        Side::MineBlocking,
        Side::MineAsync,
        Side::TandemBlocking,
        Side::TandemAsync,
        "blocking",
        "async"
    );
    println!("{:>62}{:>43}", "", "(mine ÷ tandem)");
    for (target, connections) in loads {
        let cell = |side| {
            lines
                .iter()
                .find(|l| l.0 == side && l.1 == target && l.2 == connections)
                .map(|l| {
                    format!(
                        "{:.0} ({:.1})",
                        l.3.per_sec(),
                        l.3.quantile(0.99).as_secs_f64() * 1e3
                    )
                })
                .unwrap_or_else(|| "-".into())
        };
        let ratio = |mine, theirs| match (
            rates.get(&(mine, target, connections)),
            rates.get(&(theirs, target, connections)),
        ) {
            (Some(m), Some(t)) if *t > 0.0 => format!("{:.2}", m / t),
            _ => "-".into(),
        };
        println!(
            "{:<15} {:>5}  {:>17} {:>17} {:>17} {:>17}  {:>9} {:>9}",
            target,
            connections,
            cell(Side::MineBlocking),
            cell(Side::MineAsync),
            cell(Side::TandemBlocking),
            cell(Side::TandemAsync),
            ratio(Side::MineBlocking, Side::TandemBlocking),
            ratio(Side::MineAsync, Side::TandemAsync),
        );
    }
    Ok(())
}
