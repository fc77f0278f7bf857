//! Stage 5 — repositories. Read `book/src/05-repositories.md`, then make `just check 05` pass.
//!
//! A repository gives an entity its everyday queries without writing SQL: find, page, count, update,
//! delete. Write three small services on top of one.
// The starter's parameters are unused until you write the bodies.
#![allow(unused_variables)]

use tandem_blocking::{Repository, Result};
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
/// TODO: the accounts holding at least `min`, richest first (ties by id), as read through `find_all` (a
/// streaming iterator: collect it).
pub fn rich(repo: &Repository<'_, Account>, min: i64) -> Result<Vec<Account>> {
    todo!()
}

/// TODO: every account id, page by page, with keyset paging (`find_cursor_page`, `size` rows a page):
/// one `Vec` of ids per page, in id order. Keyset pages stay correct and fast however deep you go, where
/// `OFFSET` pages rescan what they skip.
pub fn id_pages(repo: &Repository<'_, Account>, size: u64) -> Result<Vec<Vec<i64>>> {
    todo!()
}

/// TODO: raises every balance below `floor` to `floor`, in one statement (`update_all`); returns how many
/// accounts changed.
pub fn top_up(repo: &Repository<'_, Account>, floor: i64) -> Result<u64> {
    todo!()
}
// ANCHOR_END: services
