//! criterion micro benchmarks of admission control, on one thread, without the noise of a contended run:
//!
//! - `gate_acquire_release`: a permit taken and given back on a gate with free permits (the path a healthy
//!   pool runs all day: one compare-and-swap and one add).
//! - `checkout_sqlite_memory`: a connection checked out of the blocking executor's pool and given back,
//!   without admission control (`bare`, r2d2 alone) and with it (`gated`): the difference is the gate's
//!   cost per acquire; `…_select_1` adds the `SELECT 1` of the essay's "hold 0" op. `tandem-bench pool` measures the same under 8 threads and with real servers.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use tandem_blocking::{Database, Executor, PoolConfig};
use tandem_pool::{Gate, GateConfig};

fn bench_gate(c: &mut Criterion) {
    let gate = Gate::new(GateConfig {
        max_size: 16,
        max_pending: 64,
        timeout: Duration::from_secs(3),
    });
    c.bench_function("gate_acquire_release", |b| {
        b.iter(|| drop(black_box(gate.acquire_blocking().unwrap())))
    });
}

fn bench_checkout(c: &mut Criterion) {
    let mut group = c.benchmark_group("checkout_sqlite_memory");
    for (name, max_pending) in [("bare", None), ("gated", Some(1_000))] {
        let db = Database::connect_with(
            "sqlite::memory:",
            PoolConfig {
                max_pending,
                ..PoolConfig::default()
            },
        )
        .unwrap();
        group.bench_function(name, |b| b.iter(|| drop(black_box(db.checkout().unwrap()))));
        // The essay's "hold 0" op: check out, `SELECT 1`, give back.
        let select = tandem_sql::raw("SELECT 1", vec![]);
        group.bench_function(format!("{name}_select_1"), |b| {
            b.iter(|| {
                let c = db.checkout().unwrap();
                let one: (i64,) = c.fetch_one(&select).unwrap();
                black_box(one)
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench_gate, bench_checkout);
criterion_main!(benches);
