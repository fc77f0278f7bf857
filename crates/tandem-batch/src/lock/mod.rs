//! One run of a job at a time. Two processes (or two tasks) starting the same job — same name and
//! parameters — must not both run it: the second gets [`JobError::AlreadyRunning`].
//!
//! # One lock semantics, on every node and engine
//!
//! The lock must disappear by itself when its holder dies without a word (killed process, dropped
//! connection) or stops making progress (stopped, stuck, cut off), or the job could never be resumed; and
//! it must mean the same wherever the next run starts. On the server engines it has two parts:
//! - the **lease**, the authority: a row of `batch_job_lock` (job key, owner, node, expiry by the server's
//!   clock), taken in a transaction the server (or a Galera cluster, by certification) serialises against
//!   any other taker. It expires one lease ([`crate::BatchJob::lock_lease`], default 30 s) after the run
//!   last made progress (read a page, wrote a chunk), unless given back first; once expired, a run on any
//!   node takes it over.
//! - a **session lock** beside it, held by one connection of the run (the *lock session*) for the whole
//!   run: PostgreSQL's `pg_try_advisory_lock`, MySQL/MariaDB's `GET_LOCK` (one node's). It excludes a
//!   second run on the same server at once, and tells a run that takes it that a lease left on its own
//!   node belongs to a session that is gone: such a lease is taken over at once, without waiting for it
//!   to expire. The lock session is bounded by the server itself: its idle limit (`wait_timeout`,
//!   `idle_session_timeout`) is set to the lease, and the run's lease keeper renews the lease *on that
//!   session* every third of a lease — so a process that is stopped (SIGSTOP, a paused VM) loses its
//!   session, and its session lock, within one lease, as it loses its lease on every other node. A run
//!   that stops making progress while its process lives gives its session lock back itself, once its
//!   lease has run out.
//!
//! So a run that stops making progress loses the job within one lease wherever the next run starts: at
//! once on its own node when its process died, one lease after its last progress otherwise.
//!
//! # Fencing: one rule for a run that lost its lease
//!
//! A run may go on after losing its lease without knowing it (stopped, then continued). Every write of a
//! leased run — each chunk, and all of its bookkeeping: its start, each partition's end, its end — is
//! made in a transaction that ends with the lease's **guard**: an UPDATE of the lease row that matches
//! only while this run owns it, renews it, and keeps the row locked to COMMIT. A run whose lease was
//! taken over commits nothing more: the transaction is rolled back and the run stops with
//! [`JobError::LockLost`], its error logged, never written over the record of the run that replaced it.
//! That is the only rule: a run whose lease expired but that nobody took over goes on when it wakes (its
//! guard renews the lease); one whose lease was taken over stops at its next write.
//!
//! SQLite needs neither: an exclusive lock on a file beside the database (`<db>.batch-<key>.lock`),
//! released by the OS when the file is closed or the process dies; in memory, a process-wide registry.

mod lease;
mod local;

use std::time::Duration;

use tandem_core::ConnectOptions;
use tandem_sql::{Dialect, RawSql, Value, raw};

use crate::job::{BatchJob, JobError};

pub(crate) use lease::*;
pub(crate) use local::*;

/// A stable 64-bit key for a job's name and parameters (FNV-1a), the same in every process and version.
pub(crate) fn job_key<S, T>(job: &BatchJob<S, T>) -> u64 {
    fnv1a(format!("tandem-batch\0{}\0{}", job.name, job.params_text()).as_bytes())
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// MySQL/MariaDB: what the run needs to know of the server before its first statement that must read
/// causally — whether it is a Galera node (`wsrep_on`) and which server it is (`version`: MariaDB takes
/// per-statement settings) — in a plain `SHOW VARIABLES`, which every MySQL and MariaDB server answers
/// (with no row for a variable it does not have). Read by [`crate::job::Reads::of_mysql`].
pub(crate) fn server_probe() -> RawSql {
    raw(
        "SHOW VARIABLES WHERE Variable_name IN ('wsrep_on', 'version')",
        vec![],
    )
}

/// The statement that tries to take a server engine's session lock without waiting. Its row
/// ([`LockRow`]): whether the lock was taken (1 or 0); the node the session is on, as the lease names it
/// (`host:port` as the server knows itself; on PostgreSQL the server's address and port, '' over a Unix
/// socket); how many of the job repository's two tables are there and whether the lease table is (so
/// that a run does not ask in round trips of their own); and whether the server takes no writes (a
/// PostgreSQL standby in recovery, a MySQL server in `read_only`).
///
/// Both engines' locks are server-wide (PostgreSQL: per database), while the job repository lives in one
/// schema or database, so the lock's name includes where the job tables are.
///
/// On PostgreSQL the same statement bounds the session's idleness by the lease
/// ([`session_bound_statement`]: a sixth column, not read), so a session that did not take the lock is
/// closed rather than handed back to the pool; MySQL bounds it in a statement of its own, once the lock is
/// taken.
pub(crate) fn server_lock_statement(dialect: Dialect, key: u64, lease: Duration) -> Option<RawSql> {
    match dialect {
        Dialect::Postgres => Some(raw(
            "SELECT CAST(CASE WHEN pg_try_advisory_lock(hashtextextended(COALESCE(current_schema(), ''), $1)) \
             THEN 1 ELSE 0 END AS BIGINT), \
             COALESCE(host(inet_server_addr()) || ':' || inet_server_port(), ''), \
             CAST((to_regclass('batch_job_execution') IS NOT NULL)::int \
             + (to_regclass('batch_step_execution') IS NOT NULL)::int AS BIGINT), \
             CAST((to_regclass('batch_job_lock') IS NOT NULL)::int AS BIGINT), \
             CAST(pg_is_in_recovery()::int AS BIGINT), \
             (SELECT set_config('idle_session_timeout', $2, false) FROM pg_settings \
             WHERE name = 'idle_session_timeout')",
            vec![
                Value::I64(key as i64),
                Value::Text(lease.as_millis().max(1).to_string()),
            ],
        )),
        // Lock names are at most 64 characters; this one is 62.
        Dialect::MySql => Some(raw(
            "SELECT CAST(COALESCE(GET_LOCK(CONCAT('tandem-batch-', ?, '-', MD5(COALESCE(DATABASE(), ''))), 0), 0) \
             AS SIGNED), CONCAT(@@hostname, ':', @@port), \
             (SELECT CAST(COUNT(*) AS SIGNED) FROM information_schema.tables WHERE table_schema = DATABASE() \
             AND table_name IN ('batch_job_execution', 'batch_step_execution')), \
             (SELECT CAST(COUNT(*) AS SIGNED) FROM information_schema.tables WHERE table_schema = DATABASE() \
             AND table_name = 'batch_job_lock'), \
             CAST(@@read_only AS SIGNED)",
            vec![Value::Text(format!("{key:016x}"))],
        )),
        Dialect::Sqlite => None,
    }
}

/// On a Galera node, where the lock statement is sent as it is — its session lock is the node's own, and
/// a twin start on a node whose lock is taken is refused at once, without waiting on a cluster that may
/// have a node frozen — the tables it found are asked again causally, once the lock is taken: how many
/// of the job repository's two tables are there, and whether the lease table is.
pub(crate) fn tables_statement() -> RawSql {
    raw(
        "SELECT (SELECT CAST(COUNT(*) AS SIGNED) FROM information_schema.tables \
         WHERE table_schema = DATABASE() AND table_name IN ('batch_job_execution', 'batch_step_execution')), \
         (SELECT CAST(COUNT(*) AS SIGNED) FROM information_schema.tables WHERE table_schema = DATABASE() \
         AND table_name = 'batch_job_lock')",
        vec![],
    )
}

impl LockFound {
    /// The counts of [`tables_statement`], read causally, in place of the lock statement's.
    pub(crate) fn tables_seen(&mut self, (repository, lease): (i64, i64)) {
        self.repository_tables = repository == 2;
        self.lease_table = lease == 1;
    }
}

/// The row of [`server_lock_statement`]: taken, node, repository tables, lease table, read-only (and on
/// PostgreSQL the idle bound set, not read: [`LockRow`] takes the first five columns).
pub(crate) type LockRow = (i64, String, i64, i64, i64);

/// What the row of [`server_lock_statement`] says.
pub(crate) struct LockFound {
    /// The session lock was taken.
    pub taken: bool,
    /// The node the lock session is on.
    pub node: String,
    /// Both job repository tables are there.
    pub repository_tables: bool,
    /// The lease table is there.
    pub lease_table: bool,
    /// The server takes no writes.
    pub read_only: bool,
}

impl From<LockRow> for LockFound {
    fn from((taken, node, repository, lease, read_only): LockRow) -> Self {
        LockFound {
            taken: taken == 1,
            node,
            repository_tables: repository == 2,
            lease_table: lease == 1,
            read_only: read_only != 0,
        }
    }
}

/// How a run takes its job's lock: a SQLite lock, taken already; or a session lock and a lease, taken on
/// a connection of the run's own (see the module docs).
pub(crate) enum LockPlan {
    Local(LocalLock),
    Server { statement: RawSql },
}

/// The lock plan of `job` on the database `options` name (`pool_id`: which in-memory SQLite database).
pub(crate) fn lock_plan<S, T>(
    options: &ConnectOptions,
    pool_id: u64,
    job: &BatchJob<S, T>,
) -> Result<LockPlan, JobError> {
    if let Some(local) = local_lock(options, pool_id, job)? {
        return Ok(LockPlan::Local(local));
    }
    let statement = server_lock_statement(options.dialect, job_key(job), job.lock_lease)
        .expect("server engines lock");
    Ok(LockPlan::Server { statement })
}

/// The statement that bounds the lock session's idleness by the server itself: past one `lease` without a
/// statement (the keeper renews on it every third of one) the server closes it, and drops its session
/// lock. MySQL's `wait_timeout` counts whole seconds (rounded up). (PostgreSQL's `idle_session_timeout`,
/// from version 14 — on older servers nothing is set — is set by the lock statement itself.) `None` on
/// PostgreSQL.
pub(crate) fn session_bound_statement(dialect: Dialect, lease: Duration) -> Option<RawSql> {
    (dialect == Dialect::MySql).then(|| {
        raw(
            format!(
                "SET SESSION wait_timeout = {}",
                lease.as_millis().div_ceil(1000).max(1)
            ),
            vec![],
        )
    })
}

/// What gives the session lock back and puts the session's idle limit back as it was, so that the
/// connection can go back to the pool: one statement on PostgreSQL, two on MySQL.
pub(crate) fn session_release_statements(dialect: Dialect, key: u64) -> Vec<RawSql> {
    match dialect {
        Dialect::Postgres => vec![raw(
            "SELECT pg_advisory_unlock(hashtextextended(COALESCE(current_schema(), ''), $1)), \
             (SELECT set_config('idle_session_timeout', reset_val, false) FROM pg_settings \
             WHERE name = 'idle_session_timeout')",
            vec![Value::I64(key as i64)],
        )],
        _ => vec![
            raw(
                "SELECT RELEASE_LOCK(CONCAT('tandem-batch-', ?, '-', MD5(COALESCE(DATABASE(), ''))))",
                vec![Value::Text(format!("{key:016x}"))],
            ),
            raw("SET SESSION wait_timeout = @@GLOBAL.wait_timeout", vec![]),
        ],
    }
}

/// The error for a lock someone else holds.
pub(crate) fn already_running<S, T>(job: &BatchJob<S, T>) -> JobError {
    JobError::AlreadyRunning {
        name: job.name.clone(),
        params: job.params_text(),
    }
}

/// The error for a run that lost its lease.
pub(crate) fn lock_lost<S, T>(job: &BatchJob<S, T>) -> JobError {
    JobError::LockLost {
        name: job.name.clone(),
        params: job.params_text(),
    }
}

/// A pooled connection that can be told to close when dropped instead of going back to the pool.
pub(crate) trait CloseOnDrop {
    fn close_on_drop(&mut self);
}

/// The connection whose session holds a server run lock. Dropped while it holds the lock (a run's future
/// dropped midway, a release that failed or did not finish in time), it is closed, and the server drops
/// the lock with the session; once the lock is released on it ([`LockSession::released`]) it goes back
/// to the pool like any other: a run that ends normally costs its pool no new connection (a connection,
/// on PostgreSQL a new server process, per run was most of a run's fixed cost).
pub(crate) struct LockSession<C: CloseOnDrop> {
    conn: C,
    holds: bool,
}

impl<C: CloseOnDrop> LockSession<C> {
    pub(crate) fn new(conn: C) -> Self {
        LockSession { conn, holds: true }
    }

    /// The lock was released on this session, and its idle limit put back: it holds nothing the pool must
    /// not hand out.
    pub(crate) fn released(&mut self) {
        self.holds = false;
    }
}

impl<C: CloseOnDrop> std::ops::Deref for LockSession<C> {
    type Target = C;
    fn deref(&self) -> &C {
        &self.conn
    }
}

impl<C: CloseOnDrop> Drop for LockSession<C> {
    fn drop(&mut self) {
        if self.holds {
            self.conn.close_on_drop();
        }
    }
}

/// How long a run waits at its end for its lease and session lock to be given back (on the lock
/// session, which may be on a node that froze): a third of the lease, at least 100 ms. Past it the run
/// returns; the release finishes (or fails, and the server drops the lock with the session) on its own,
/// and the lease expires within one lease at the latest.
pub(crate) fn release_wait(lease: Duration) -> Duration {
    (lease / 3).max(Duration::from_millis(100))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn job(name: &str) -> BatchJob<(), ()> {
        BatchJob {
            name: name.into(),
            params: vec![("b".into(), "2".into()), ("a".into(), "1".into())],
            page_size: 1,
            chunk_size: 1,
            parallelism: 1,
            ignore_duplicates: false,
            skip_policy: Default::default(),
            chunk_delay: None,
            lock_lease: Duration::from_secs(30),
            write_attempts: 10,
            processor: std::sync::Arc::new(|_| Ok(crate::Processed::Skip)),
        }
    }

    /// The key depends on name and parameters only (not their order), and is FNV-1a: the same in every
    /// process and build (the published test vectors).
    #[test]
    fn keys_are_stable() {
        let mut reordered = job("essay");
        reordered.params.reverse();
        assert_eq!(job_key(&job("essay")), job_key(&reordered));
        assert_ne!(job_key(&job("essay")), job_key(&job("essay2")));
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a(b"foobar"), 0x8594_4171_f739_67e8);
    }

    /// The lock session's idle limit is the lease, in each engine's unit: MySQL whole seconds rounded up
    /// (never 0, which it refuses), PostgreSQL milliseconds.
    #[test]
    fn session_bounds() {
        let mysql = |ms| {
            let bound = session_bound_statement(Dialect::MySql, Duration::from_millis(ms));
            tandem_sql::Render::render(&bound.unwrap(), Dialect::MySql)
                .unwrap()
                .sql
        };
        assert_eq!(mysql(30_000), "SET SESSION wait_timeout = 30");
        assert_eq!(mysql(1_500), "SET SESSION wait_timeout = 2");
        assert_eq!(mysql(10), "SET SESSION wait_timeout = 1");
        assert!(session_bound_statement(Dialect::Postgres, Duration::from_secs(1)).is_none());
        let pg = server_lock_statement(Dialect::Postgres, 1, Duration::from_millis(2_500)).unwrap();
        let pg = tandem_sql::Render::render(&pg, Dialect::Postgres).unwrap();
        assert_eq!(pg.params[1], Value::Text("2500".into()));
        assert_eq!(
            release_wait(Duration::from_secs(30)),
            Duration::from_secs(10)
        );
        assert_eq!(
            release_wait(Duration::from_millis(90)),
            Duration::from_millis(100)
        );
    }
}
