//! criterion: one playground run natively — parse both boxes, build the statement, render three dialects,
//! create the tables and sample rows in a fresh in-memory SQLite, run the query. The browser test prints the
//! same figure measured in headless Chromium (target: under 50 ms there).

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use tandem_playground::samples::{DEFAULT_SCHEMA, examples};

fn bench_run(c: &mut Criterion) {
    for id in ["adults", "totals_per_user", "insert_returning"] {
        let q = examples().into_iter().find(|e| e.id == id).unwrap().query;
        c.bench_function(&format!("playground_run/{id}"), |b| {
            b.iter(|| black_box(tandem_playground::run(DEFAULT_SCHEMA, &q)))
        });
    }
}

criterion_group!(benches, bench_run);
criterion_main!(benches);
