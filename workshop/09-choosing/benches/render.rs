//! Given: one micro-measure with criterion — rendering a 1,000-row INSERT of the seed workload and binding
//! its values, with your stage-3 renderer and with tandem's. `cargo bench -p workshop-09-choosing`.

use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;

fn render(c: &mut Criterion) {
    let mut g = c.benchmark_group("render 1000-row INSERT");
    g.bench_function("yours", |b| {
        b.iter(|| {
            let mut insert =
                dialects::Insert::into(batch::job::benchmark_source::table, vec!["name", "value"]);
            for i in 1..=1_000i64 {
                insert = insert.row(vec![
                    tables::Value::Text(format!("item-{i}")),
                    tables::Value::I64(i),
                ]);
            }
            black_box(insert.render(tables::Dialect::Postgres).unwrap())
        })
    });
    g.bench_function("tandem", |b| {
        use tandem::sql::Render as _;
        b.iter(|| {
            let rows: Vec<Vec<tandem::sql::Value>> = (1..=1_000i64)
                .map(|i| {
                    vec![
                        tandem::sql::Value::Text(format!("item-{i}")),
                        tandem::sql::Value::I64(i),
                    ]
                })
                .collect();
            let insert = tandem::sql::ast::Insert::values(
                tandem::sql::Ident::from_static("benchmark_source"),
                vec![
                    tandem::sql::Ident::from_static("name"),
                    tandem::sql::Ident::from_static("value"),
                ],
                rows,
            );
            black_box(insert.render(tandem::sql::Dialect::Postgres).unwrap())
        })
    });
    g.finish();
}

criterion_group!(benches, render);
criterion_main!(benches);
