//! Stage 6 — the reference solution.

use futures_util::TryStreamExt;
use tandem_async::{Database, Executor, Find, Result, TxOptions};
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
/// The sum of every balance, folded from the stream.
pub async fn total_balance(db: &Database) -> Result<i64> {
    let mut rows = db.repository::<Account>().find_all(Find::all()).await?;
    let mut total = 0i64;
    while let Some(account) = rows.try_next().await? {
        total += account.balance;
    }
    Ok(total)
}
// ANCHOR_END: total

// ANCHOR: transfer
/// Stage 4's transfer, async, with a transaction driven by hand.
pub async fn transfer(db: &Database, from: i64, to: i64, amount: i64) -> Result<(), TransferError> {
    let tx = db.begin(TxOptions::default()).await?;
    let repo = tx.repository::<Account>();
    let debited = repo
        .update_all(|u| {
            u.set(accounts::balance, accounts::balance - amount)
                .filter(accounts::id.eq(from).and(accounts::balance.ge(amount)))
        })
        .await?;
    if debited == 0 {
        let missing = !repo.exists_by_id(from).await?;
        // Nothing was written; dropping `tx` rolls back all the same.
        return Err(if missing {
            TransferError::NoAccount
        } else {
            TransferError::Insufficient
        });
    }
    let credited = repo
        .update_all(|u| {
            u.set(accounts::balance, accounts::balance + amount)
                .filter(accounts::id.eq(to))
        })
        .await?;
    if credited == 0 {
        tx.rollback().await?;
        return Err(TransferError::NoAccount);
    }
    tx.commit().await?;
    Ok(())
}
// ANCHOR_END: transfer
