//! criterion micro benchmarks: rendering and binding the statements the executors send most.
//!
//! - `insert_chunk_1000x3`: a 1,000-row, 3-column INSERT (the seed workload's chunk) rendered for each dialect
//!   from owned rows; target well under 100 µs.
//! - `insert_chunk_1000_entities`: what `batch_insert` pays per 1,000-entity chunk: parameters built
//!   from entities, statement text from a template rendered once.
//! - `filtered_select`: a typical typed SELECT (filter, order, limit) built and rendered.
//! - `decode_rows_1000`: 1,000 rows of `(i64, String, i32)` decoded from values, as both executors do.

use std::hint::black_box;
use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use tandem_batch::essay::{Source, benchmark_source};
use tandem_sql::ast::Insert;
use tandem_sql::prelude::*;
use tandem_sql::{Ident, Row, Value};

/// Rows per chunk, as in the essay's seed benchmark.
const CHUNK: usize = 1_000;

fn chunk_rows() -> Vec<Vec<Value>> {
    (0..CHUNK)
        .map(|i| {
            vec![
                Value::I64(i as i64),
                Value::Text(format!("item-{i}")),
                Value::I32(i as i32),
            ]
        })
        .collect()
}

fn bench_insert(c: &mut Criterion) {
    let mut group = c.benchmark_group("insert_chunk_1000x3");
    let cols = vec![
        Ident::new("id").unwrap(),
        Ident::new("name").unwrap(),
        Ident::new("value").unwrap(),
    ];
    for dialect in Dialect::ALL {
        group.bench_function(dialect.name(), |b| {
            b.iter_batched(
                chunk_rows,
                |rows| {
                    let insert = Insert::values(benchmark_source::table::NAME, cols.clone(), rows);
                    black_box(insert.into_rendered(dialect).unwrap())
                },
                criterion::BatchSize::SmallInput,
            )
        });
    }
    group.finish();
    // What the repository's batch path pays per chunk: the statement text comes from a template rendered
    // once, so only the parameters are built (here from entities, as `batch_insert` does).
    let mut group = c.benchmark_group("insert_chunk_1000_entities");
    let entities: Vec<Source> = (0..CHUNK)
        .map(|i| Source {
            id: 0,
            name: format!("item-{i}"),
            value: i as i32,
        })
        .collect();
    for dialect in Dialect::ALL {
        let shape = Insert::values(
            benchmark_source::table::NAME,
            Source::insert_columns().to_vec(),
            Vec::new(),
        );
        let mut template = tandem_sql::batch::InsertTemplate::new(dialect, shape);
        group.bench_function(dialect.name(), |b| {
            b.iter(|| {
                let mut params = Vec::with_capacity(CHUNK * 2);
                for e in &entities {
                    e.write_insert_values(&mut params);
                }
                black_box(template.statement(params).unwrap())
            })
        });
    }
    group.finish();
}

fn bench_select(c: &mut Criterion) {
    let mut group = c.benchmark_group("filtered_select");
    for dialect in Dialect::ALL {
        group.bench_function(dialect.name(), |b| {
            b.iter(|| {
                let q = benchmark_source::table
                    .select((
                        benchmark_source::id,
                        benchmark_source::name,
                        benchmark_source::value,
                    ))
                    .filter(
                        benchmark_source::value
                            .between(black_box(10), black_box(5_000))
                            .and(benchmark_source::name.like(black_box("item-1%"))),
                    )
                    .order_by(benchmark_source::id.asc())
                    .limit(500);
                black_box(q.render(dialect).unwrap())
            })
        });
    }
    group.finish();
}

fn bench_decode(c: &mut Criterion) {
    let columns: Arc<[String]> =
        Arc::from(vec!["id".to_owned(), "name".to_owned(), "value".to_owned()]);
    let rows: Vec<Row> = chunk_rows()
        .into_iter()
        .map(|v| Row::new(columns.clone(), v))
        .collect();
    c.bench_function("decode_rows_1000/tuple", |b| {
        b.iter_batched(
            || rows.clone(),
            |rows| {
                for r in rows {
                    black_box(<(i64, String, i32)>::from_row(r).unwrap());
                }
            },
            criterion::BatchSize::SmallInput,
        )
    });
    c.bench_function("decode_rows_1000/entity", |b| {
        b.iter_batched(
            || rows.clone(),
            |rows| {
                for r in rows {
                    black_box(Source::from_row(r).unwrap());
                }
            },
            criterion::BatchSize::SmallInput,
        )
    });
}

criterion_group!(benches, bench_insert, bench_select, bench_decode);
criterion_main!(benches);
