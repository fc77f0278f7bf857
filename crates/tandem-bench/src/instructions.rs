//! `instructions`: the client-side instructions per op of each variant of `e2e` and `point`, counted by
//! callgrind. The wall clock on a shared two-core machine moves ±30 % from run to run; an instruction count
//! is the same for the same binary and input whatever else the machine is doing, so a ratio of counts
//! tells a real 1.1× from noise. It counts this process only (the driver, tandem, the runtime), not the
//! database server's work, and not time spent waiting: it answers "how much does the client do per op",
//! beside the wall clock's "how long does an op take".
//!
//! Each variant runs twice, as this same program under `valgrind --tool=callgrind` with `--only` naming
//! it: e2e with one and three measured iterations (each after one warm-up), point for one and three
//! seconds. The difference of the two totals over the difference of their ops is the count per op —
//! starting the program, seeding the source and connecting cancel out.

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

use anyhow::Context as _;
use tandem_sql::Dialect;

/// The e2e variants counted, as `--only` and the results name them.
const E2E: [&str; 5] = [
    "raw-driver",
    "tandem-blocking",
    "raw-sqlx",
    "raw-async-driver",
    "tandem-async",
];

/// The point variants counted (`--only` names the raw drivers by kind).
const POINT: [&str; 6] = [
    "raw threads",
    "tandem-blocking threads",
    "raw sqlx tasks",
    "raw async driver",
    "tandem-async tasks",
    "tandem-async tasks on sqlx",
];

/// One program run under callgrind: its instruction total, and the results it wrote.
fn counted(args: &[String], out: &Path) -> anyhow::Result<(f64, serde_json::Value)> {
    let exe = std::env::current_exe()?;
    let file = out.join("callgrind.out");
    let status = Command::new("valgrind")
        .arg("--tool=callgrind")
        .arg("--quiet")
        .arg(format!("--callgrind-out-file={}", file.display()))
        .arg(&exe)
        .args(args)
        .arg("--out")
        .arg(out)
        .stdout(std::process::Stdio::null())
        .status()
        .context("running valgrind (Debian: apt install valgrind)")?;
    if !status.success() {
        anyhow::bail!(
            "{} {} under callgrind: {status}",
            exe.display(),
            args.join(" ")
        );
    }
    let text =
        std::fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
    // The total is the `summary:` line (older callgrind: `totals:`), first event: instructions.
    let total = text
        .lines()
        .find_map(|l| {
            l.strip_prefix("summary:")
                .or_else(|| l.strip_prefix("totals:"))
        })
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse::<f64>().ok())
        .with_context(|| format!("no instruction total in {}", file.display()))?;
    let results = std::fs::read_to_string(out.join("results.json"))?;
    Ok((total, serde_json::from_str(&results)?))
}

/// The selects a point run made (its one record's ops).
fn point_ops(results: &serde_json::Value) -> anyhow::Result<f64> {
    (results["records"].as_array().into_iter().flatten())
        .find(|r| r["scenario"] == "point")
        .and_then(|r| r["extra"].as_f64())
        .context("the point run recorded no selects")
}

/// One counted cell.
struct Count {
    scenario: &'static str,
    db: &'static str,
    variant: &'static str,
    per_op: f64,
}

/// Counts every variant on every engine of `dbs`, and writes the table.
pub fn run(dbs: &[Dialect], rows: usize, out: &Path) -> anyhow::Result<()> {
    let scratch = out.join("callgrind");
    std::fs::create_dir_all(&scratch)?;
    let mut counts = Vec::new();
    for &dialect in dbs {
        let db = dialect.name();
        let common = |only: &str| ["--db", db, "--only", only].map(String::from).to_vec();
        for variant in E2E {
            if dialect == Dialect::Sqlite
                && variant != "raw-driver"
                && !variant.starts_with("tandem")
            {
                continue;
            }
            let mut totals = Vec::new();
            for iterations in [1, 3] {
                let mut args = [
                    "e2e",
                    "--data-size",
                    &rows.to_string(),
                    "--parallelism",
                    "1",
                ]
                .map(String::from)
                .to_vec();
                args.extend(common(variant));
                args.extend(["--iterations".into(), iterations.to_string()]);
                totals.push(counted(&args, &scratch)?.0);
            }
            let per_op = (totals[1] - totals[0]) / 2.0;
            eprintln!("instructions: e2e {db} {variant}: {per_op:.0} per run");
            counts.push(Count {
                scenario: "e2e",
                db,
                variant,
                per_op,
            });
        }
        for variant in POINT {
            if dialect == Dialect::Sqlite
                && (variant == "raw async driver" || variant == "tandem-async tasks on sqlx")
            {
                continue;
            }
            let mut seen = Vec::new();
            for seconds in [1, 3] {
                let mut args = ["point", "--workers", "1", "--rounds", "1", "--seconds"]
                    .map(String::from)
                    .to_vec();
                args.push(seconds.to_string());
                args.extend(common(variant));
                let (total, results) = counted(&args, &scratch)?;
                seen.push((total, point_ops(&results)?));
            }
            let ops = seen[1].1 - seen[0].1;
            anyhow::ensure!(
                ops > 0.0,
                "point {db} {variant}: no more selects in 3 s than in 1 s"
            );
            let per_op = (seen[1].0 - seen[0].0) / ops;
            eprintln!("instructions: point {db} {variant}: {per_op:.0} per select");
            counts.push(Count {
                scenario: "point",
                db,
                variant,
                per_op,
            });
        }
    }
    let (md, csv) = tables(&counts, rows);
    std::fs::write(out.join("instructions.md"), &md)?;
    std::fs::write(out.join("instructions.csv"), csv)?;
    println!("{md}");
    Ok(())
}

/// The markdown page and the CSV of the counts; each tandem variant beside the raw driver it runs on.
fn tables(counts: &[Count], rows: usize) -> (String, String) {
    let mut csv = String::from("scenario,db,variant,instructions_per_op\n");
    for c in counts {
        let _ = writeln!(csv, "{},{},{},{:.0}", c.scenario, c.db, c.variant, c.per_op);
    }
    let find = |scenario: &str, db: &str, variant: &str| {
        (counts.iter())
            .find(|c| c.scenario == scenario && c.db == db && c.variant == variant)
            .map(|c| c.per_op)
    };
    let n = |v: Option<f64>| v.map_or("–".into(), |v| format!("{:.0}", v));
    let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => format!("{:.2}", a / b),
        _ => "–".into(),
    };
    let mut md = String::from(
        "# Instructions per op, client side (callgrind)\n\nGenerated by `tandem-bench instructions` (`just instructions`): each variant run twice under `valgrind --tool=callgrind`, the difference of the totals over the ops between the two runs. The same binary and input give the same count whatever else the machine does, so these ratios are not noise; they count the client process only (driver, tandem, runtime), not the server's work or time spent waiting.\n\n",
    );
    let _ = write!(
        md,
        "## e2e: one run of the batch job, {rows} rows, one partition (instructions per run)\n\n| engine | by hand, blocking driver | tandem blocking | blocking ÷ by hand | by hand, sqlx | by hand, other async driver | tandem async | async ÷ other async by hand |\n|---|--:|--:|--:|--:|--:|--:|--:|\n"
    );
    let mut dbs: Vec<&str> = counts.iter().map(|c| c.db).collect();
    dbs.dedup();
    for db in &dbs {
        let e = |v: &str| find("e2e", db, v);
        let _ = writeln!(
            md,
            "| {db} | {} | {} | {} | {} | {} | {} | {} |",
            n(e("raw-driver")),
            n(e("tandem-blocking")),
            ratio(e("tandem-blocking"), e("raw-driver")),
            n(e("raw-sqlx")),
            n(e("raw-async-driver")),
            n(e("tandem-async")),
            ratio(e("tandem-async"), e("raw-async-driver")),
        );
    }
    md.push_str("\n## point: one select by id (instructions per select, one worker)\n\n| engine | raw blocking driver | tandem blocking | blocking ÷ raw | other async driver | tandem async | async ÷ other async | raw sqlx | tandem async, driver=sqlx | driver=sqlx ÷ raw sqlx |\n|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n");
    for db in &dbs {
        let p = |v: &str| find("point", db, v);
        let _ = writeln!(
            md,
            "| {db} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            n(p("raw threads")),
            n(p("tandem-blocking threads")),
            ratio(p("tandem-blocking threads"), p("raw threads")),
            n(p("raw async driver")),
            n(p("tandem-async tasks")),
            ratio(p("tandem-async tasks"), p("raw async driver")),
            n(p("raw sqlx tasks")),
            n(p("tandem-async tasks on sqlx")),
            ratio(p("tandem-async tasks on sqlx"), p("raw sqlx tasks")),
        );
    }
    md.push_str("\nOther async driver: tokio-postgres on PostgreSQL, mysql_async on MariaDB — the drivers tandem async runs on by default; `driver=sqlx`: the same executor on sqlx's driver.\n");
    (md, csv)
}
