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
    /// The level as SQL spells it (`READ COMMITTED`, …).
    pub fn sql(self) -> &'static str {
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
    /// PostgreSQL: how long each statement of the transaction waits for a lock before it fails with
    /// [`crate::DbErrorKind::LockTimeout`] (`SET LOCAL lock_timeout`, this transaction only); `None`: the
    /// connection's (the URL's `lock_timeout`, else none). MySQL/MariaDB have no per-transaction setting:
    /// the URL's `lock_timeout` or the server's default (50 s) applies; SQLite waits its busy timeout.
    pub lock_timeout: Option<std::time::Duration>,
    /// MySQL/MariaDB on a Galera cluster: the transaction begins with a causality wait
    /// (`SET STATEMENT wsrep_sync_wait = 1 FOR START TRANSACTION`), so it sees everything the cluster
    /// committed before it began — rows and tables — on whichever node it runs. (A per-statement
    /// `wsrep_sync_wait` does not wait inside a transaction: the transaction's own start must.) Only for a
    /// server that takes `SET STATEMENT` (MariaDB, Percona); ignored on the other engines.
    pub causal: bool,
    /// PostgreSQL: how long the transaction may sit idle between its statements before the server ends
    /// its session, and with it the transaction and its locks (`SET LOCAL
    /// idle_in_transaction_session_timeout`): a client that stops inside a transaction (stopped, paused,
    /// cut off) then holds its row locks at most this long. `None`: the server's setting. MySQL/MariaDB
    /// have no per-transaction setting; SQLite holds no server session.
    pub idle_timeout: Option<std::time::Duration>,
}

impl Default for TxOptions {
    fn default() -> Self {
        TxOptions {
            isolation: None,
            read_only: false,
            max_attempts: 3,
            lock_timeout: None,
            causal: false,
            idle_timeout: None,
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

    /// Bounds each lock wait of the transaction on PostgreSQL (see [`TxOptions::lock_timeout`]; at least
    /// one millisecond).
    pub fn lock_timeout(mut self, limit: std::time::Duration) -> Self {
        self.lock_timeout = Some(limit.max(std::time::Duration::from_millis(1)));
        self
    }

    /// Bounds how long the transaction may sit idle on PostgreSQL (see [`TxOptions::idle_timeout`]; at
    /// least one millisecond).
    pub fn idle_timeout(mut self, limit: std::time::Duration) -> Self {
        self.idle_timeout = Some(limit.max(std::time::Duration::from_millis(1)));
        self
    }

    /// Begins the transaction with a causality wait on a Galera cluster (see [`TxOptions::causal`]).
    pub fn causal(mut self) -> Self {
        self.causal = true;
        self
    }

    /// Sets the attempt bound (at least 1).
    pub fn max_attempts(mut self, attempts: u32) -> Self {
        self.max_attempts = attempts.max(1);
        self
    }

    /// Whether attempt number `attempt` (1-based) that failed with `err` should be run again: when that
    /// error is tandem's and retriable, or when one of the transaction's statements (BEGIN and COMMIT
    /// included) failed with a retriable error during the attempt (`seen_retriable`) — the closure's error
    /// then comes from it, whatever type it was turned into.
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

/// The attempts of a retried transaction: the one place that counts them, applies
/// [`TxOptions::should_retry_any`] and logs a rerun. Every retry loop of both executors is
/// `loop { match attempt() { Err(e) if attempts.again(&e, seen) => continue, other => return other } }`.
#[derive(Debug)]
pub struct Attempts<'a> {
    opts: &'a TxOptions,
    done: u32,
}

impl<'a> Attempts<'a> {
    /// No attempt made yet.
    pub fn new(opts: &'a TxOptions) -> Self {
        Attempts { opts, done: 0 }
    }

    /// Counts an attempt that failed with `err` (whatever its type; `seen_retriable`: one of its
    /// statements failed retriably) and says whether to run another.
    pub fn again<E: 'static>(&mut self, err: &E, seen_retriable: bool) -> bool {
        self.done += 1;
        let again = self.opts.should_retry_any(err, seen_retriable, self.done);
        if again {
            tracing::debug!(attempt = self.done, "retrying transaction");
        }
        again
    }

    /// Attempts made so far.
    pub fn made(&self) -> u32 {
        self.done
    }

    /// How long to wait before the next attempt: 1 ms after the first failure, doubling up to 64 ms, each
    /// time between half and one and a half of that at random. Two transactions that keep conflicting —
    /// two Galera nodes updating one row, whose commits abort each other's open transactions — would
    /// otherwise retry in lockstep and starve one of them.
    pub fn pause(&self) -> std::time::Duration {
        use std::hash::{BuildHasher, Hasher};
        let base = 1_000_u64 << self.done.saturating_sub(1).min(6);
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u32(self.done);
        let jitter = h.finish() % base;
        std::time::Duration::from_micros(base / 2 + jitter)
    }
}

/// How long a SQLite file database's connection waits for the write lock (`PRAGMA busy_timeout`), and a
/// write transaction for its turn at the writer gate (`tandem_pool::WriterGate`).
pub const BUSY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// The statements that open a transaction with `opts` on `dialect`, in order, each sent as one simple query
/// (an element may hold several statements where the engine runs them in one round trip: PostgreSQL).
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
            // One simple query, one round trip: PostgreSQL runs the statements of a simple query in order,
            // and the transaction BEGIN opens is the one SET LOCAL scopes.
            if let Some(limit) = opts.lock_timeout {
                sql.push_str(&format!("; SET LOCAL lock_timeout = {}", limit.as_millis()));
            }
            if let Some(limit) = opts.idle_timeout {
                sql.push_str(&format!(
                    "; SET LOCAL idle_in_transaction_session_timeout = {}",
                    limit.as_millis()
                ));
            }
            vec![sql]
        }
        Dialect::MySql => {
            let mut out = Vec::new();
            // Applies to the next transaction only.
            if let Some(level) = opts.isolation {
                out.push(format!("SET TRANSACTION ISOLATION LEVEL {}", level.sql()));
            }
            let start = if opts.read_only {
                "START TRANSACTION READ ONLY"
            } else {
                "START TRANSACTION"
            };
            out.push(match opts.causal {
                true => format!("SET STATEMENT wsrep_sync_wait = 1 FOR {start}"),
                false => start.into(),
            });
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

/// The end of a transaction — COMMIT or ROLLBACK — as the statements to run and the rule for what their
/// results mean, without running anything: each executor, blocking or async, runs the statements
/// [`Closing::next`] gives and hands each result to [`Closing::record`]. The rule, written once:
/// - every statement of the end runs, whatever an earlier one did, and the first failure is the error;
/// - a COMMIT that fails can leave the transaction open (SQLite busy), so a ROLLBACK follows it — unless
///   the driver says no transaction is open — and when that fails too the error keeps both
///   ([`Error::RollbackAfterCommit`]);
/// - the transaction is over for sure when the last statements run all succeeded, or the driver says none
///   is open; when it is not, the connection must not be reused.
#[derive(Debug)]
pub struct Closing {
    todo: std::vec::IntoIter<String>,
    /// Committing: the ROLLBACK that follows a COMMIT that fails.
    after_failed_commit: Option<Vec<String>>,
    /// The first failure of the statements run so far in this phase.
    failed: Option<Error>,
    /// Whether every statement of this phase so far succeeded.
    all_ok: bool,
    /// The COMMIT's failure, once the ROLLBACK that follows it has begun.
    commit_failed: Option<Error>,
}

impl Closing {
    /// The end of a transaction begun with `opts` on `dialect`: COMMIT when `commit`, ROLLBACK otherwise.
    pub fn new(dialect: Dialect, opts: &TxOptions, commit: bool) -> Self {
        Closing::of(
            end(dialect, opts, commit),
            commit.then(|| end(dialect, opts, false)),
        )
    }

    /// The end of the savepoint of `depth` ([`end_savepoint`]): released after work that succeeded
    /// (`ok`), rolled back to and released after work that failed. The outer transaction goes on either
    /// way; after failed work, the work's error is the one to report, not these statements'.
    pub fn savepoint(depth: u32, ok: bool) -> Self {
        Closing::of(end_savepoint(depth, ok), None)
    }

    fn of(statements: Vec<String>, after_failed_commit: Option<Vec<String>>) -> Self {
        Closing {
            todo: statements.into_iter(),
            after_failed_commit,
            failed: None,
            all_ok: true,
            commit_failed: None,
        }
    }

    /// The next statement to run, `None` when the end is done. `open` asks the driver whether a
    /// transaction is still open (`None` when it cannot tell); it is called only after a failed COMMIT.
    pub fn next(&mut self, open: impl FnOnce() -> Option<bool>) -> Option<String> {
        if let Some(sql) = self.todo.next() {
            return Some(sql);
        }
        if self.all_ok {
            return None;
        }
        // The COMMIT failed: roll back, unless the driver knows the transaction is over already.
        let rollback = self.after_failed_commit.take()?;
        self.commit_failed = self.failed.take();
        self.all_ok = true;
        if open() != Some(false) {
            self.todo = rollback.into_iter();
        }
        self.todo.next()
    }

    /// The result of the statement [`Closing::next`] gave last.
    pub fn record(&mut self, result: crate::Result<()>) {
        if let Err(e) = result {
            self.all_ok = false;
            self.failed.get_or_insert(e);
        }
    }

    /// What the end came to: `Ok`, the first failure, or a failed COMMIT with what its ROLLBACK did; and
    /// whether the transaction is over for sure (`open` as in [`Closing::next`], asked only when a
    /// statement failed).
    pub fn finish(self, open: impl FnOnce() -> Option<bool>) -> (crate::Result<()>, bool) {
        let over = self.all_ok || open() == Some(false);
        let rollback = self.failed.map_or(Ok(()), Err);
        let result = match self.commit_failed {
            Some(commit) => Err(Error::commit_failed(commit, rollback)),
            None => rollback,
        };
        (result, over)
    }
}

/// Runs `work` in one transaction with `opts` on a blocking connection: the statements of [`begin`], the
/// work, then its [`Closing`] — COMMIT when it succeeded, ROLLBACK when it failed (whose own failure
/// leaves the work's error as the one reported). The flag says whether the transaction is over for sure;
/// when it is not, the connection must not be reused. The one sequence of every synchronous path (the
/// blocking executor's, and the async executor's SQLite worker threads).
///
/// The transaction's statements run inside `span` (entered here), which records the outcome.
pub fn run_atomically<C: crate::plan::Runner + ?Sized, R>(
    conn: &mut C,
    dialect: Dialect,
    opts: &TxOptions,
    span: &mut crate::observe::TxSpan,
    work: impl FnOnce(&mut C) -> crate::Result<R>,
) -> (crate::Result<R>, bool) {
    let entered = span.span().clone();
    let _in = entered.enter();
    let work = begin(dialect, opts)
        .iter()
        .try_for_each(|sql| conn.simple(sql))
        .and_then(|()| work(conn));
    let committing = work.is_ok();
    let mut closing = Closing::new(dialect, opts, committing);
    while let Some(sql) = closing.next(|| conn.in_transaction()) {
        let result = conn.simple(&sql);
        closing.record(result);
    }
    let (ended, over) = closing.finish(|| conn.in_transaction());
    span.end(committing, &ended);
    (work.and_then(|value| ended.map(|()| value)), over)
}

/// `SAVEPOINT` for nesting level `depth` (1 for the first nested transaction).
pub fn savepoint(depth: u32) -> String {
    format!("SAVEPOINT tandem_sp_{depth}")
}

/// Releases (commits) the savepoint of `depth`.
fn release_savepoint(depth: u32) -> String {
    format!("RELEASE SAVEPOINT tandem_sp_{depth}")
}

/// Rolls back to the savepoint of `depth`.
fn rollback_to_savepoint(depth: u32) -> String {
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

    fn test_span(dialect: Dialect) -> crate::observe::TxSpan {
        let url = match dialect {
            Dialect::Sqlite => "sqlite::memory:",
            Dialect::Postgres => "postgres://127.0.0.1/test",
            Dialect::MySql => "mysql://127.0.0.1/test",
        };
        let options = crate::ConnectOptions::parse(url).expect("a valid URL");
        let observer = crate::observe::Observer::new(crate::observe::Side::Blocking, &options);
        crate::observe::TxSpan::begin(&observer, &TxOptions::default(), 1)
    }

    /// A connection whose plain statements fail as told, and that logs what it was sent.
    struct Scripted {
        sent: Vec<String>,
        fail: &'static [&'static str],
        open: Option<bool>,
    }

    impl crate::plan::Runner for Scripted {
        fn run(
            &mut self,
            _: &tandem_sql::Rendered,
            _: &mut crate::plan::Sink<'_>,
        ) -> crate::Result<crate::plan::Done> {
            unreachable!("run_atomically sends only plain statements here")
        }
        fn simple(&mut self, sql: &str) -> crate::Result<()> {
            self.sent.push(sql.to_owned());
            if self.fail.contains(&sql) {
                let kind = if sql == "COMMIT" {
                    crate::DbErrorKind::Busy
                } else {
                    crate::DbErrorKind::Other
                };
                return Err(Error::Database(crate::DbError {
                    dialect: Dialect::Sqlite,
                    kind,
                    code: None,
                    message: format!("{sql} refused"),
                    constraint: None,
                    source: None,
                }));
            }
            Ok(())
        }
        fn in_transaction(&mut self) -> Option<bool> {
            self.open
        }
    }

    fn scripted(fail: &'static [&'static str], open: Option<bool>) -> Scripted {
        Scripted {
            sent: Vec::new(),
            fail,
            open,
        }
    }

    /// run_atomically: BEGIN, the work, COMMIT; ROLLBACK after failed work; after a failed COMMIT a
    /// ROLLBACK, whose own failure is kept beside the COMMIT's (and leaves the transaction possibly open).
    #[test]
    fn run_atomically_ends_every_transaction_it_can() {
        let opts = TxOptions::default();
        let mut c = scripted(&[], None);
        let (r, over) = run_atomically(
            &mut c,
            Dialect::Postgres,
            &opts,
            &mut test_span(Dialect::Postgres),
            |_| Ok(7),
        );
        assert_eq!((r.unwrap(), over), (7, true));
        assert_eq!(c.sent, ["BEGIN", "COMMIT"]);

        let mut c = scripted(&[], None);
        let (r, over) = run_atomically(
            &mut c,
            Dialect::Postgres,
            &opts,
            &mut test_span(Dialect::Postgres),
            |_| Err::<(), _>(Error::RowNotFound),
        );
        assert!(matches!(r, Err(Error::RowNotFound)) && over);
        assert_eq!(c.sent, ["BEGIN", "ROLLBACK"]);

        // COMMIT refused (busy), ROLLBACK works: the COMMIT's error, retriable; the transaction is over.
        let mut c = scripted(&["COMMIT"], None);
        let (r, over) = run_atomically(
            &mut c,
            Dialect::Postgres,
            &opts,
            &mut test_span(Dialect::Postgres),
            |_| Ok(()),
        );
        let e = r.unwrap_err();
        assert!(
            matches!(e, Error::Database(_)) && e.is_retriable() && over,
            "{e}"
        );
        assert_eq!(c.sent, ["BEGIN", "COMMIT", "ROLLBACK"]);

        // Both refused: both kept, the COMMIT's kind decides, the COMMIT is the source; not over.
        let mut c = scripted(&["COMMIT", "ROLLBACK"], None);
        let (r, over) = run_atomically(
            &mut c,
            Dialect::Postgres,
            &opts,
            &mut test_span(Dialect::Postgres),
            |_| Ok(()),
        );
        let e = r.unwrap_err();
        assert!(!over);
        assert!(e.is_retriable(), "{e}");
        assert!(
            e.to_string().contains("COMMIT refused") && e.to_string().contains("ROLLBACK refused")
        );
        let Error::RollbackAfterCommit { commit, rollback } = &e else {
            panic!("{e:?}")
        };
        assert!(commit.to_string().contains("COMMIT") && rollback.to_string().contains("ROLLBACK"));
        let source = std::error::Error::source(&e).expect("the COMMIT's error is the source");
        assert!(source.to_string().contains("COMMIT refused"));

        // A driver that knows the failed COMMIT ended the transaction: no ROLLBACK is sent.
        let mut c = scripted(&["COMMIT"], Some(false));
        let (r, over) = run_atomically(
            &mut c,
            Dialect::Sqlite,
            &opts,
            &mut test_span(Dialect::Sqlite),
            |_| Ok(()),
        );
        assert!(r.is_err() && over);
        assert_eq!(c.sent, ["BEGIN IMMEDIATE", "COMMIT"]);
    }

    /// Closing on its own (a hand-driven `rollback()`): every statement runs, the first failure is the
    /// error, and the transaction counts as over only when they all worked or the driver says so.
    #[test]
    fn closing_a_rollback_reports_its_failure() {
        let read_only = TxOptions::default().read_only();
        let mut c = scripted(&["PRAGMA query_only = OFF"], None);
        let mut closing = Closing::new(Dialect::Sqlite, &read_only, false);
        while let Some(sql) = closing.next(|| unreachable!("asked only after a failed COMMIT")) {
            let r = crate::plan::Runner::simple(&mut c, &sql);
            closing.record(r);
        }
        assert_eq!(c.sent, ["PRAGMA query_only = OFF", "ROLLBACK"], "both ran");
        let (r, over) = closing.finish(|| None);
        assert!(
            r.unwrap_err()
                .to_string()
                .contains("PRAGMA query_only = OFF refused")
        );
        assert!(!over);
        let mut closing = Closing::new(Dialect::Postgres, &TxOptions::default(), false);
        assert_eq!(closing.next(|| None).as_deref(), Some("ROLLBACK"));
        closing.record(Err(Error::RowNotFound));
        assert_eq!(closing.next(|| None), None);
        assert!(
            closing.finish(|| Some(false)).1,
            "the driver says it is over"
        );
    }

    /// A savepoint's end: every statement runs, and the first failure is the error.
    #[test]
    fn closing_a_savepoint_runs_every_statement() {
        let mut c = scripted(&["ROLLBACK TO SAVEPOINT tandem_sp_2"], None);
        let mut closing = Closing::savepoint(2, false);
        while let Some(sql) = closing.next(|| unreachable!("no COMMIT here")) {
            let r = crate::plan::Runner::simple(&mut c, &sql);
            closing.record(r);
        }
        assert_eq!(
            c.sent,
            [
                "ROLLBACK TO SAVEPOINT tandem_sp_2",
                "RELEASE SAVEPOINT tandem_sp_2"
            ]
        );
        let (r, over) = closing.finish(|| None);
        assert!(r.is_err() && !over);
        let mut released = Closing::savepoint(1, true);
        assert_eq!(
            released.next(|| None).as_deref(),
            Some("RELEASE SAVEPOINT tandem_sp_1")
        );
        released.record(Ok(()));
        assert_eq!(released.next(|| None), None);
        assert!(matches!(released.finish(|| None), (Ok(()), true)));
    }

    /// Attempts: a retriable failure runs again until the bound, anything else never; a caller's own error
    /// runs again only when a statement failed retriably during the attempt.
    #[test]
    fn attempts_follow_the_rule() {
        let deadlock = Error::Database(crate::DbError {
            dialect: Dialect::MySql,
            kind: crate::DbErrorKind::Deadlock,
            code: Some("1213".into()),
            message: "deadlock".into(),
            constraint: None,
            source: None,
        });
        let opts = TxOptions::default().max_attempts(3);
        let mut a = Attempts::new(&opts);
        assert!(a.again(&deadlock, false));
        assert!(a.again(&deadlock, false));
        assert!(!a.again(&deadlock, false), "the third failure is the last");
        assert_eq!(a.made(), 3);
        let mut a = Attempts::new(&opts);
        assert!(!a.again(&Error::RowNotFound, false));
        #[derive(Debug)]
        struct Mine;
        let mut a = Attempts::new(&opts);
        assert!(!a.again(&Mine, false));
        assert!(a.again(&Mine, true));
        let once = TxOptions::default().max_attempts(1);
        assert!(!Attempts::new(&once).again(&deadlock, true));
        // Pauses grow, with jitter, and stay bounded.
        let many = TxOptions::default().max_attempts(20);
        let mut a = Attempts::new(&many);
        a.again(&deadlock, false);
        let first = a.pause();
        assert!(
            first >= std::time::Duration::from_micros(500)
                && first < std::time::Duration::from_micros(1_500)
        );
        for _ in 0..15 {
            a.again(&deadlock, false);
        }
        let late = a.pause();
        assert!(
            late >= std::time::Duration::from_millis(32)
                && late < std::time::Duration::from_millis(96)
        );
    }

    /// Each engine gets its own spelling of isolation, read-only and a lock bound.
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
        // A lock bound for the transaction: PostgreSQL only, scoped to it by SET LOCAL.
        let bounded = TxOptions::default().lock_timeout(std::time::Duration::from_secs(30));
        assert_eq!(
            begin(Dialect::Postgres, &bounded),
            ["BEGIN; SET LOCAL lock_timeout = 30000"]
        );
        assert_eq!(begin(Dialect::MySql, &bounded), ["START TRANSACTION"]);
        assert_eq!(begin(Dialect::Sqlite, &bounded), ["BEGIN IMMEDIATE"]);
        // A causal start: MySQL/MariaDB (Galera) only.
        let causal = TxOptions::default().causal();
        assert_eq!(
            begin(Dialect::MySql, &causal),
            ["SET STATEMENT wsrep_sync_wait = 1 FOR START TRANSACTION"]
        );
        assert_eq!(begin(Dialect::Postgres, &causal), ["BEGIN"]);
        // An idle bound: PostgreSQL only, in the same round trip.
        let idle = bounded.idle_timeout(std::time::Duration::from_secs(5));
        assert_eq!(
            begin(Dialect::Postgres, &idle),
            [
                "BEGIN; SET LOCAL lock_timeout = 30000; SET LOCAL idle_in_transaction_session_timeout = 5000"
            ]
        );
        assert_eq!(begin(Dialect::MySql, &idle), ["START TRANSACTION"]);
    }
}
