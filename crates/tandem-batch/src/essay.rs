//! The essay's job: `benchmark_source(id, name, value)` → `benchmark_target(id, source_name unique,
//! transformed_value)` with `upper(name)` and `value * 2`.

use tandem_sql::Table;

use crate::job::{BatchJob, ProcessError, Processed};

/// A source row: `("item-$i", i)`.
#[derive(Table, Debug, Clone, PartialEq)]
#[table(name = "benchmark_source")]
pub struct Source {
    /// Generated key.
    #[column(primary_key, auto_increment)]
    pub id: i64,
    /// `item-$i`.
    #[column(varchar = 255)]
    pub name: String,
    /// `i`.
    pub value: i32,
}

/// A target row.
#[derive(Table, Debug, Clone, PartialEq)]
#[table(name = "benchmark_target")]
pub struct Target {
    /// Generated key.
    #[column(primary_key, auto_increment)]
    pub id: i64,
    /// `upper(name)`, unique.
    #[column(varchar = 255, unique)]
    pub source_name: String,
    /// `value * 2`.
    pub transformed_value: i32,
}

/// Rows `1..=n` of the seed workload.
pub fn seed_rows(n: usize) -> Vec<Source> {
    (1..=n)
        .map(|i| Source {
            id: 0,
            name: format!("item-{i}"),
            value: i as i32,
        })
        .collect()
}

// ANCHOR: transform
/// The processor: `upper(name)`, `value * 2` (an overflow is a processor error, not a wrapped value).
pub fn transform(s: Source) -> Result<Processed<Target>, ProcessError> {
    let doubled = s
        .value
        .checked_mul(2)
        .ok_or_else(|| ProcessError::from(format!("{} * 2 overflows an INT", s.value)))?;
    Ok(Processed::Write(Target {
        id: 0,
        source_name: s.name.to_uppercase(),
        transformed_value: doubled,
    }))
}
// ANCHOR_END: transform

/// The essay's job with `parallelism` partitions. The parallelism is how a run goes, not which job it is:
/// runs with another parallelism are runs of the same job — refused while one runs, told it is completed
/// after, and, resuming a stopped run, keeping its partitions — rather than a second job writing the
/// same target.
pub fn job(parallelism: usize) -> BatchJob<Source, Target> {
    BatchJob::new("essay-e2e", transform).parallelism(parallelism)
}

/// The server doing the same work alone — the ceiling the job is measured against.
pub fn insert_select_sql() -> &'static str {
    "INSERT INTO benchmark_target (source_name, transformed_value) SELECT UPPER(name), value * 2 FROM benchmark_source"
}
