//! Stage 4 — the blocking executor and transactions. Read `book/src/04-blocking.md`, then make
//! `just check 04` pass.
//!
//! Move money between accounts so that, whatever happens — an overdraft, a missing account, eight threads
//! at once — no money is created or lost.
// The starter's parameters are unused until you write the body.
#![allow(unused_variables)]

#[allow(unused_imports)]
// `Executor` brings `db.repository()` and `tx.execute()` into scope: you will need it
use tandem_blocking::{Database, Executor};
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
    /// Balance in cents; never below zero.
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
    Db(tandem_blocking::Error),
}

impl From<tandem_blocking::Error> for TransferError {
    fn from(e: tandem_blocking::Error) -> Self {
        TransferError::Db(e)
    }
}

// ANCHOR: transfer
/// TODO: moves `amount` cents from account `from` to account `to`, in one transaction
/// (`db.transaction(|tx| ..)`, whose closure may return `TransferError` itself: any `Err` rolls back):
/// both balances change, or neither does.
///
/// - `from` would go below zero: `Err(TransferError::Insufficient)`, nothing changed;
/// - `from` or `to` does not exist: `Err(TransferError::NoAccount)`, nothing changed;
/// - it must stay right with many threads transferring at once. A hint: read-check-write races; an
///   `UPDATE … WHERE balance >= amount` that reports how many rows it changed does not.
pub fn transfer(db: &Database, from: i64, to: i64, amount: i64) -> Result<(), TransferError> {
    todo!()
}
// ANCHOR_END: transfer
