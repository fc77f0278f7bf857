//! The essay's source table, `benchmark_source(id BIGINT auto-increment, name VARCHAR(255), value INT)`.

use tandem_sql::Table;

/// One seeded row: `("item-$i", i)`.
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
