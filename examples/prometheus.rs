//! tandem's metrics through `metrics-exporter-prometheus`: the application installs the recorder, both
//! executors record into it, and this prints the text a Prometheus scraper would read from `/metrics`.
//!
//! ```text
//! cargo run --example prometheus                       # SQLite in a temporary file
//! cargo run --example prometheus -- postgres://postgres@127.0.0.1:5432/test
//! ```
//!
//! A service would serve `handle.render()` on an HTTP route instead (or enable the exporter's own
//! `http-listener` feature); the names and labels are the same.

use futures_util::StreamExt;
use tandem::prelude::*;
use tandem_async::Executor as _;
use tandem_blocking::Executor as _;

/// A row to count.
#[derive(Table, Debug, Clone, PartialEq)]
#[table(name = "items", crate = "tandem::sql")]
pub struct Item {
    /// Generated key.
    #[column(primary_key, auto_increment)]
    pub id: i64,
    /// A label.
    #[column(varchar = 40)]
    pub label: String,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // ANCHOR: install
    // 1. The recorder first: tandem registers its metrics when a database opens.
    let recorder = metrics_exporter_prometheus::PrometheusBuilder::new().build_recorder();
    let handle = recorder.handle();
    metrics::set_global_recorder(recorder)?;
    // ANCHOR_END: install

    let dir = std::env::temp_dir().join(format!("tandem-prometheus-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let url = std::env::args()
        .nth(1)
        .unwrap_or_else(|| format!("sqlite:{}", dir.join("items.db").display()));

    // 2. The same work on both executors.
    let db = tandem::blocking::Database::connect(&url)?;
    db.execute(&items::table.drop_table())?;
    db.create_table(&items::table.create_table())?;
    let rows: Vec<Item> = (0..1_000)
        .map(|i| Item {
            id: 0,
            label: format!("item-{i}"),
        })
        .collect();
    db.repository::<Item>().insert_all(&rows)?;
    for id in 1..=100 {
        db.repository::<Item>().find_by_id(id)?;
    }
    db.transaction(|tx| tx.repository::<Item>().count())?;
    let streamed = db.fetch::<Item>(&items::table.select_all())?.count();

    let rt = tokio::runtime::Runtime::new()?;
    let streamed_async = rt.block_on(async {
        let adb = tandem::asynchronous::Database::connect(&url).await?;
        for id in 1..=100 {
            adb.repository::<Item>().find_by_id(id).await?;
        }
        adb.transaction(async |tx| tx.repository::<Item>().count().await)
            .await?;
        let stream = adb.fetch::<Item>(&items::table.select_all()).await?;
        Ok::<_, tandem::core::Error>(stream.count().await)
    })?;
    println!("# streamed {streamed} rows blocking, {streamed_async} async\n");

    // 3. What a scraper reads: tandem's series only (the recorder holds nothing else here).
    print!("{}", handle.render());
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}
