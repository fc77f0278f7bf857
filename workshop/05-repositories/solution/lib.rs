//! Stage 5 — the reference solution.

use tandem_blocking::{Find, Repository, Result};
use tandem_sql::prelude::*;

/// An account (given).
#[derive(Table, Debug, Clone, PartialEq)]
#[table(name = "accounts", index(balance))]
pub struct Account {
    /// Generated key.
    #[column(primary_key, auto_increment)]
    pub id: i64,
    /// Owner, unique.
    #[column(varchar = 50, unique)]
    pub owner: String,
    /// Balance in cents.
    pub balance: i64,
}

// ANCHOR: services
/// The accounts holding at least `min`, richest first.
pub fn rich(repo: &Repository<'_, Account>, min: i64) -> Result<Vec<Account>> {
    repo.find_all(
        Find::all()
            .filter(accounts::balance.ge(min))
            .order_by(accounts::balance.desc())
            .order_by(accounts::id.asc()),
    )?
    .collect()
}

/// Every id, page by page, with keyset paging.
pub fn id_pages(repo: &Repository<'_, Account>, size: u64) -> Result<Vec<Vec<i64>>> {
    let mut pages = Vec::new();
    let mut after = None;
    loop {
        let page = repo.find_cursor_page(after, size, Find::all())?;
        if !page.items.is_empty() {
            pages.push(page.items.iter().map(|a| a.id).collect());
        }
        match page.next {
            Some(next) => after = Some(next),
            None => return Ok(pages),
        }
    }
}

/// Raises every balance below `floor` to `floor`.
pub fn top_up(repo: &Repository<'_, Account>, floor: i64) -> Result<u64> {
    repo.update_all(|u| {
        u.set(accounts::balance, floor)
            .filter(accounts::balance.lt(floor))
    })
}
// ANCHOR_END: services
