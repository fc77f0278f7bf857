//! The short snippets the book shows, compiled with the workspace (`cargo test` builds every example) so
//! that the book cannot drift from the code: each sits between `ANCHOR` lines the book includes. Running
//! it (`cargo run --example book`) executes them against SQLite in memory.

use futures_util::TryStreamExt;
use tandem::blocking::{Find, Result};
use tandem::prelude::*;
use tandem_async::Executor as _;
use tandem_blocking::Executor as _;

/// A user (the README's declaration).
#[derive(Table, Debug, Clone, PartialEq)]
#[table(name = "users", crate = "tandem::sql")]
pub struct User {
    /// Generated key.
    #[column(primary_key, auto_increment)]
    pub id: i64,
    /// Name.
    #[column(varchar = 100)]
    pub name: String,
    /// Age in years.
    pub age: i32,
}

fn blocking() -> Result<usize> {
    // ANCHOR: blocking
    let db = tandem::blocking::Database::connect("sqlite::memory:")?;
    db.create_table(&users::table.create_table())?;
    let repo = db.repository::<User>();
    repo.insert(&User {
        id: 0,
        name: "ada".into(),
        age: 36,
    })?;
    let adults: Vec<User> = repo
        .find_all(
            Find::all()
                .filter(users::age.ge(18))
                .order_by(users::name.asc()),
        )? // an iterator
        .collect::<Result<_>>()?;
    // ANCHOR_END: blocking
    Ok(adults.len())
}

async fn asynchronous() -> Result<usize> {
    // ANCHOR: async
    let db = tandem::asynchronous::Database::connect("sqlite::memory:").await?;
    db.create_table(&users::table.create_table()).await?;
    let repo = db.repository::<User>();
    repo.insert(&User {
        id: 0,
        name: "ada".into(),
        age: 36,
    })
    .await?;
    let mut rows = repo.find_all(Find::all()).await?; // a Stream, read as it is polled
    let mut n = 0;
    while let Some(user) = rows.try_next().await? {
        n += usize::from(user.age >= 18);
    }
    // ANCHOR_END: async
    Ok(n)
}

fn main() -> Result<()> {
    let found = blocking()?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let streamed = rt.block_on(asynchronous())?;
    println!("blocking found {found} adult, async streamed {streamed}");
    Ok(())
}
