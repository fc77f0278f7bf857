//! Given: your benchmark as a program. `bench [--quick] [--db sqlite,postgres,mysql] [--rows 1000,10000]
//! [--partitions 1,4] [--iterations 5]` measures the essay's two workloads on your two executors and on
//! tandem's, every operation verified, and prints your table beside the essay's figures. `--quick` is
//! SQLite, 1,000 and 10,000 rows, parallelism 1 and 4, three iterations: under a minute.
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
        for w in workloads {
            for side in Side::ALL {
                eprint!("{db} {w:?} {side} … ");
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
                "⚠ {} {:?}: {} runs at {ratio:.2} × {}: a gap this size is the executor's, not the \
                 model's — find it before comparing blocking with async on this line",
                c.engine, c.workload, c.side, theirs
            ));
        }
    }
    out
}
