//! Transaction options and the SQL that starts, nests and ends transactions on each engine, and the retry
//! rule. Both executors run exactly these statements.

use tandem_sql::Dialect;

use crate::error::Error;

/// Isolation levels. SQLite transactions are always serializable; the level is accepted and ignored there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Isolation {
    /// `READ UNCOMMITTED`
    ReadUncommitted,
    /// `READ COMMITTED` (PostgreSQL's default)
    ReadCommitted,
    /// `REPEATABLE READ` (MySQL's default)
    RepeatableRead,
    /// `SERIALIZABLE`
    Serializable,
}

impl Isolation {
    fn sql(self) -> &'static str {
        match self {
            Isolation::ReadUncommitted => "READ UNCOMMITTED",
            Isolation::ReadCommitted => "READ COMMITTED",
            Isolation::RepeatableRead => "REPEATABLE READ",
            Isolation::Serializable => "SERIALIZABLE",
        }
    }
}

/// How a transaction runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TxOptions {
    /// Isolation level; `None` keeps the engine's default.
    pub isolation: Option<Isolation>,
    /// Read-only transaction (writes fail).
    pub read_only: bool,
    /// How many times the whole transaction runs at most when it fails with a retriable error
    /// (serialization failure, deadlock, lock timeout, SQLite busy). Default 3; 1 means no retry.
    pub max_attempts: u32,
}

impl Default for TxOptions {
    fn default() -> Self {
        TxOptions {
            isolation: None,
            read_only: false,
            max_attempts: 3,
        }
    }
}

impl TxOptions {
    /// Sets the isolation level.
    pub fn isolation(mut self, level: Isolation) -> Self {
        self.isolation = Some(level);
        self
    }

    /// Makes the transaction read-only.
    pub fn read_only(mut self) -> Self {
        self.read_only = true;
        self
    }

    /// Sets the attempt bound (at least 1).
    pub fn max_attempts(mut self, attempts: u32) -> Self {
        self.max_attempts = attempts.max(1);
        self
    }

    /// Whether attempt number `attempt` (1-based) that failed with `err` should be run again.
    pub fn should_retry(&self, err: &Error, attempt: u32) -> bool {
        attempt < self.max_attempts && err.is_retriable()
    }

    /// [`TxOptions::should_retry`] for a transaction whose closure returns its own error type: the attempt
    /// is run again when that error is tandem's and retriable, or when one of the transaction's statements
    /// (BEGIN and COMMIT included) failed with a retriable error during the attempt (`seen_retriable`) —
    /// the closure's error then comes from it, whatever type it was turned into.
    pub fn should_retry_any<E: 'static>(
        &self,
        err: &E,
        seen_retriable: bool,
        attempt: u32,
    ) -> bool {
        let ours = (err as &dyn std::any::Any)
            .downcast_ref::<Error>()
            .is_some_and(Error::is_retriable);
        attempt < self.max_attempts && (ours || seen_retriable)
    }
}

/// The statements that open a transaction with `opts` on `dialect`, in order.
pub fn begin(dialect: Dialect, opts: &TxOptions) -> Vec<String> {
    match dialect {
        Dialect::Postgres => {
            let mut sql = String::from("BEGIN");
            if let Some(level) = opts.isolation {
                sql.push_str(" ISOLATION LEVEL ");
                sql.push_str(level.sql());
            }
            if opts.read_only {
                sql.push_str(" READ ONLY");
            }
            vec![sql]
        }
        Dialect::MySql => {
            let mut out = Vec::new();
            // Applies to the next transaction only.
            if let Some(level) = opts.isolation {
                out.push(format!("SET TRANSACTION ISOLATION LEVEL {}", level.sql()));
            }
            out.push(
                if opts.read_only {
                    "START TRANSACTION READ ONLY"
                } else {
                    "START TRANSACTION"
                }
                .into(),
            );
            out
        }
        Dialect::Sqlite => {
            if opts.read_only {
                // A deferred transaction takes no write lock; `query_only` makes writes fail like elsewhere.
                // Set inside the transaction (and cleared before it ends, see `end`), so a connection with
                // `query_only` on is always inside a transaction: ending an abandoned transaction (a
                // cancelled future) resets both, and a pool can tell by the cheap autocommit check.
                vec!["BEGIN DEFERRED".into(), "PRAGMA query_only = ON".into()]
            } else {
                // IMMEDIATE takes the write lock up front, so a writer waits (busy timeout) instead of failing
                // later with a lock upgrade it cannot get.
                vec!["BEGIN IMMEDIATE".into()]
            }
        }
    }
}

/// The statements that end a transaction (`COMMIT` or `ROLLBACK`), undoing what `begin` set.
pub fn end(dialect: Dialect, opts: &TxOptions, commit: bool) -> Vec<String> {
    let mut out = Vec::with_capacity(2);
    if dialect == Dialect::Sqlite && opts.read_only {
        out.push("PRAGMA query_only = OFF".into());
    }
    out.push(if commit { "COMMIT" } else { "ROLLBACK" }.to_owned());
    out
}

/// `SAVEPOINT` for nesting level `depth` (1 for the first nested transaction).
pub fn savepoint(depth: u32) -> String {
    format!("SAVEPOINT tandem_sp_{depth}")
}

/// Releases (commits) the savepoint of `depth`.
pub fn release_savepoint(depth: u32) -> String {
    format!("RELEASE SAVEPOINT tandem_sp_{depth}")
}

/// Rolls back to the savepoint of `depth`.
pub fn rollback_to_savepoint(depth: u32) -> String {
    format!("ROLLBACK TO SAVEPOINT tandem_sp_{depth}")
}

/// The statements that end the savepoint of `depth`: released when its work succeeded (a failure to
/// release is the caller's error); rolled back to and then released when it failed (the outer transaction
/// goes on; failures of these are ignored, the work's own error is what the caller reports).
pub fn end_savepoint(depth: u32, ok: bool) -> Vec<String> {
    if ok {
        vec![release_savepoint(depth)]
    } else {
        vec![rollback_to_savepoint(depth), release_savepoint(depth)]
    }
}

/// The message of a panic payload, for [`Error::Panicked`].
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "non-string panic payload".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each engine gets its own spelling of isolation and read-only.
    #[test]
    fn begin_statements() {
        let opts = TxOptions::default()
            .isolation(Isolation::Serializable)
            .read_only();
        assert_eq!(
            begin(Dialect::Postgres, &opts),
            ["BEGIN ISOLATION LEVEL SERIALIZABLE READ ONLY"]
        );
        assert_eq!(
            begin(Dialect::MySql, &opts),
            [
                "SET TRANSACTION ISOLATION LEVEL SERIALIZABLE",
                "START TRANSACTION READ ONLY"
            ]
        );
        assert_eq!(
            begin(Dialect::Sqlite, &opts),
            ["BEGIN DEFERRED", "PRAGMA query_only = ON"]
        );
        assert_eq!(
            end(Dialect::Sqlite, &opts, true),
            ["PRAGMA query_only = OFF", "COMMIT"]
        );
        assert_eq!(
            begin(Dialect::Sqlite, &TxOptions::default()),
            ["BEGIN IMMEDIATE"]
        );
        assert_eq!(TxOptions::default().max_attempts(0).max_attempts, 1);
    }
}
