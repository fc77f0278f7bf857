//! Stage 4 — the reference solution.

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
/// Moves `amount` from `from` to `to` in one transaction.
pub fn transfer(db: &Database, from: i64, to: i64, amount: i64) -> Result<(), TransferError> {
    // The closure returns our own error type: any `Err` rolls the whole transaction back, and tandem's
    // errors convert into it with `?` (`From<tandem_blocking::Error>`).
    db.transaction(|tx| {
        let repo = tx.repository::<Account>();
        // Debit first, conditionally: the row lock it takes makes concurrent transfers wait their turn.
        let debited = repo.update_all(|u| {
            u.set(accounts::balance, accounts::balance - amount)
                .filter(accounts::id.eq(from).and(accounts::balance.ge(amount)))
        })?;
        if debited == 0 {
            return Err(if repo.exists_by_id(from)? {
                TransferError::Insufficient
            } else {
                TransferError::NoAccount
            });
        }
        let credited = repo.update_all(|u| {
            u.set(accounts::balance, accounts::balance + amount)
                .filter(accounts::id.eq(to))
        })?;
        if credited == 0 {
            // The debit above is rolled back with the rest.
            return Err(TransferError::NoAccount);
        }
        Ok(())
    })
}
// ANCHOR_END: transfer
