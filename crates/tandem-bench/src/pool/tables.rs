//! The pool scenario's results read back: one cell found by its coordinates, the admission gate's cost
//! against the bare driver pool, and the printed tables.

use super::*;

/// The record of one pool cell.
pub fn find<'r>(
    results: &'r Results,
    scenario: &str,
    db: &str,
    pool: u32,
    variant: &str,
) -> Option<&'r Record> {
    results
        .records
        .iter()
        .find(|r| r.scenario == scenario && r.db == db && r.pool == pool && r.variant == variant)
}

/// The gate's cost at hold 0, as a fraction of the bare pool's throughput: (db, executor, cost).
pub fn gate_costs(results: &Results) -> Vec<(String, Executor, f64)> {
    let mut out = Vec::new();
    for r in results.records.iter().filter(|r| r.scenario == "pool") {
        for executor in [Executor::Blocking, Executor::Async] {
            if r.variant != variant(executor, Preset::Bare, 0) {
                continue;
            }
            let gated = find(
                results,
                "pool",
                &r.db,
                r.pool,
                &variant(executor, Preset::Default, 0),
            );
            if let (Some(bare), Some(gated)) = (r.detail("acquired_per_s"), gated) {
                let gated = gated.detail("acquired_per_s").unwrap_or(0.0);
                out.push((r.db.clone(), executor, 1.0 - gated / bare));
            }
        }
    }
    out
}

/// Prints the throughput and contention tables and the targets.
pub fn print(results: &Results) {
    let presets = [Preset::Bare, Preset::Default, Preset::HighThroughput];
    let thr: Vec<&Record> = results
        .records
        .iter()
        .filter(|r| r.scenario == "pool" && r.variant.contains(" bare "))
        .collect();
    if !thr.is_empty() {
        println!(
            "\npool throughput: {WORKERS} workers, max {THROUGHPUT_POOL}; one op = check out, SELECT 1, hold, give back (ops/s)"
        );
        println!(
            "{:<9} {:<9} {:>5} {:>9} {:>11} {:>11} {:>16} {:>10}",
            "db", "executor", "hold", "held p50", "bare", "default", "high-throughput", "gate cost"
        );
        for r in thr {
            let executor = if r.variant.starts_with("async") {
                Executor::Async
            } else {
                Executor::Blocking
            };
            let hold = r.detail("hold_ms").unwrap_or(0.0) as u64;
            let rate = |p: Preset| {
                find(results, "pool", &r.db, r.pool, &variant(executor, p, hold))
                    .and_then(|x| x.detail("acquired_per_s"))
            };
            let [bare, default, ht] = presets.map(rate);
            let cost = match (bare, default) {
                (Some(b), Some(d)) => format!("{:+.1}%", 100.0 * (1.0 - d / b)),
                _ => "-".into(),
            };
            let f = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.0}"));
            println!(
                "{:<9} {:<9} {:>3}ms {:>7.2}ms {:>11} {:>11} {:>16} {:>10}",
                r.db,
                executor.to_string(),
                hold,
                r.detail("hold_p50_ms").unwrap_or(0.0),
                f(bare),
                f(default),
                f(ht),
                cost
            );
        }
    }
    let crowd: Vec<&Record> = results
        .records
        .iter()
        .filter(|r| r.scenario == "pool-contention")
        .collect();
    if !crowd.is_empty() {
        println!(
            "\npool contention: {CROWD} workers; waits of completed acquires, rejections timed to their return"
        );
        println!(
            "{:<9} {:<32} {:>4} {:>11} {:>11} {:>9} {:>9} {:>9} {:>9} {:>10}",
            "db",
            "variant",
            "max",
            "acquired/s",
            "rejected/s",
            "timed out",
            "wait p50",
            "wait p99",
            "wait max",
            "reject p99"
        );
        for r in crowd {
            let d = |k: &str| r.detail(k).unwrap_or(0.0);
            println!(
                "{:<9} {:<32} {:>4} {:>11.0} {:>11.0} {:>9.0} {:>7.1}ms {:>7.1}ms {:>7.1}ms {:>8.3}ms",
                r.db,
                r.variant,
                r.pool,
                d("acquired_per_s"),
                d("rejected_per_s"),
                d("timed_out"),
                d("wait_p50_ms"),
                d("wait_p99_ms"),
                d("wait_max_ms"),
                d("reject_p99_ms"),
            );
        }
    }
    for (db, executor, cost) in gate_costs(results) {
        println!(
            "target  gate cost at hold 0 ≤ 5%: {db} {executor} {:+.1}% {}",
            100.0 * cost,
            if cost <= 0.05 { "met" } else { "MISSED" }
        );
    }
    let timeout_ms = PoolConfig::high_throughput(4).acquire_timeout.as_secs_f64() * 1e3;
    for r in results.records.iter().filter(|r| {
        r.scenario == "pool-contention"
            && r.pool == 4
            && r.variant.contains("high-throughput hold 10ms")
    }) {
        let (max, rej) = (
            r.detail("wait_max_ms").unwrap_or(0.0),
            r.detail("reject_p99_ms").unwrap_or(0.0),
        );
        println!(
            "target  overload (64 workers, max 4, hold 10 ms, high-throughput) {} {}: longest completed wait {max:.1} ms ≤ {timeout_ms:.0} ms {}; rejection p99 {rej:.3} ms < 1 ms {}",
            r.db,
            r.variant.split(' ').next().unwrap_or(""),
            if max <= timeout_ms { "met" } else { "MISSED" },
            if rej < 1.0 { "met" } else { "MISSED" }
        );
    }
}
