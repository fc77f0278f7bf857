//! Stage 6 — the async executor, streams and backpressure. Read `book/src/06-async.md`, then make
//! `just check 06` pass.
//!
//! The same accounts as stage 4, now from async code: a total read as a stream, and stage 4's transfer
//! with a transaction you drive by hand, which a spawned task can hold.
// The starter's parameters are unused until you write the bodies.
#![allow(unused_variables)]

use tandem_async::{Database, Result};
use tandem_sql::prelude::*;

/// An account (given).
#[derive(Table, Debug, Clone, PartialEq)]
#[table(name = "accounts")]
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

/// Why a transfer did not happen (given).
#[derive(Debug)]
pub enum TransferError {
    /// `from` holds less than `amount`.
    Insufficient,
    /// `from` or `to` does not exist.
    NoAccount,
    /// The database failed.
    Db(tandem_async::Error),
}

impl From<tandem_async::Error> for TransferError {
    fn from(e: tandem_async::Error) -> Self {
        TransferError::Db(e)
    }
}

// ANCHOR: total
/// TODO: the sum of every balance, read through the repository's `find_all` stream and added up as rows
/// arrive (`futures_util::TryStreamExt::try_next` in a loop, or `try_fold`). Do not collect the rows: the
/// stream reads from the server only as fast as you consume it, so memory stays flat for any table size.
pub async fn total_balance(db: &Database) -> Result<i64> {
    todo!()
}
// ANCHOR_END: total

// ANCHOR: transfer
/// TODO: stage 4's transfer, async: `db.begin(TxOptions::default()).await?`, the same conditional debit
/// and credit through `tx.repository::<Account>()`, then `tx.commit().await?`. A transaction dropped
/// without `commit` is rolled back — so returning early on an error is the rollback.
pub async fn transfer(db: &Database, from: i64, to: i64, amount: i64) -> Result<(), TransferError> {
    todo!()
}
// ANCHOR_END: transfer
