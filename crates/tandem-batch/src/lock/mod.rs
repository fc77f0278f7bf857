//! One run of a job at a time. Two processes (or two tasks) starting the same job — same name and
//! parameters — must not both run it: the second gets [`JobError::AlreadyRunning`].
//!
//! The lock must also disappear by itself when its holder dies without a word (killed process, dropped
//! connection), or the job could never be resumed. So it is tied to something the operating system or the
//! server releases on death:
//! - PostgreSQL: a session advisory lock (`pg_try_advisory_lock`), MySQL/MariaDB: a named lock
//!   (`GET_LOCK`), both held by one connection checked out for the whole run and closed at its end, so
//!   the server drops the lock with the session — also when the process is killed;
//! - SQLite file: an exclusive lock on a file beside the database (`<db>.batch-<key>.lock`, left in place
//!   between runs), released by the OS when the file is closed or the process dies;
//! - SQLite in memory: the database lives and dies with this process, so a process-wide registry suffices.
//!
//! While it holds the lock, a run knows that every run of the job still recorded as STARTED stopped
//! without finishing, and may mark it FAILED and resume from its checkpoints.
//!
//! On a MySQL/MariaDB cluster (Galera, or several primaries), `GET_LOCK` is one node's: the same job
//! started on two nodes would take two locks. So a MySQL run also takes a **lease**: a row of
//! `batch_job_lock` (job key, owner, node, expiry), which the cluster certifies like any write — of two
//! nodes taking it at once, one commit fails (Galera: 1213) and that run finds the row taken. The lease
//! expires unless renewed; the run renews it every third of its length ([`crate::BatchJob::lock_lease`],
//! default 30 s) **while it makes progress** — a run none of whose partitions read a page or wrote a chunk
//! for a whole lease (stuck on a frozen server, say, while its renewing thread reaches another node) stops
//! renewing — and stops before its next chunk when it could not renew or stopped
//! ([`crate::JobError::LockLost`]). A lease whose holder is dead or stuck is taken over:
//! - at once on the holder's own node (the run there holds `GET_LOCK`, so a lease left by a run on this
//!   node belongs to a dead session), and when the run ended and released it;
//! - elsewhere once it expires, at most `lock_lease` after the holder stopped renewing (at most two leases
//!   after it stopped making progress).

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use tandem_core::ConnectOptions;
use tandem_sql::{Dialect, RawSql, Value, raw};

use crate::job::{BatchJob, JobError};

/// A stable 64-bit key for a job's name and parameters (FNV-1a), the same in every process and version.
pub(crate) fn job_key<S, T>(job: &BatchJob<S, T>) -> u64 {
    fnv1a(format!("tandem-batch\0{}\0{}", job.name, job.params_text()).as_bytes())
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The statement that tries to take a server engine's lock without waiting: one row, `1` when taken, and
/// the node the session is on (`host:port` as the server knows itself; MySQL/MariaDB, for the lease — ''
/// on PostgreSQL). Both engines' locks are server-wide (PostgreSQL: per database), while the job repository
/// lives in one schema or database, so the lock's name includes where the job tables are.
///
/// Its row: whether the lock was taken (1 or 0), the server's `host:port` (MySQL: the lease's node), and —
/// so that a run does not ask in round trips of their own — how many of the job repository's two tables
/// are there, and whether the lease table is (see [`LockRow`]).
pub(crate) fn server_lock_statement(dialect: Dialect, key: u64) -> Option<RawSql> {
    match dialect {
        Dialect::Postgres => Some(raw(
            "SELECT CAST(CASE WHEN pg_try_advisory_lock(hashtextextended(COALESCE(current_schema(), ''), $1)) \
             THEN 1 ELSE 0 END AS BIGINT), '', CAST((to_regclass('batch_job_execution') IS NOT NULL)::int \
             + (to_regclass('batch_step_execution') IS NOT NULL)::int AS BIGINT), CAST(1 AS BIGINT)",
            vec![Value::I64(key as i64)],
        )),
        // Lock names are at most 64 characters; this one is 62.
        Dialect::MySql => Some(raw(
            "SELECT CAST(COALESCE(GET_LOCK(CONCAT('tandem-batch-', ?, '-', MD5(COALESCE(DATABASE(), ''))), 0), 0) \
             AS SIGNED), CONCAT(@@hostname, ':', @@port), \
             (SELECT CAST(COUNT(*) AS SIGNED) FROM information_schema.tables WHERE table_schema = DATABASE() \
             AND table_name IN ('batch_job_execution', 'batch_step_execution')), \
             (SELECT CAST(COUNT(*) AS SIGNED) FROM information_schema.tables WHERE table_schema = DATABASE() \
             AND table_name = 'batch_job_lock')",
            vec![Value::Text(format!("{key:016x}"))],
        )),
        Dialect::Sqlite => None,
    }
}

/// The row of [`server_lock_statement`].
pub(crate) type LockRow = (i64, String, i64, i64);

/// Whether the row of [`server_lock_statement`] found the job repository's tables and the lease table.
pub(crate) fn tables_found((_, _, repository, lease): &LockRow) -> (bool, bool) {
    (*repository == 2, *lease == 1)
}

/// How a run takes its job's lock: a SQLite lock, taken already; or a server lock to take on a connection
/// of its own, and — on MySQL/MariaDB — a lease beside it (see the module docs).
pub(crate) enum LockPlan {
    Local(LocalLock),
    Server { statement: RawSql, leased: bool },
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
    let statement =
        server_lock_statement(options.dialect, job_key(job)).expect("server engines lock");
    Ok(LockPlan::Server {
        statement,
        leased: options.dialect == Dialect::MySql,
    })
}

/// The statement that releases the lock [`server_lock_statement`] took (same name).
pub(crate) fn server_unlock_statement(dialect: Dialect, key: u64) -> RawSql {
    match dialect {
        Dialect::Postgres => raw(
            "SELECT pg_advisory_unlock(hashtextextended(COALESCE(current_schema(), ''), $1))",
            vec![Value::I64(key as i64)],
        ),
        _ => raw(
            "SELECT RELEASE_LOCK(CONCAT('tandem-batch-', ?, '-', MD5(COALESCE(DATABASE(), ''))))",
            vec![Value::Text(format!("{key:016x}"))],
        ),
    }
}

/// The lease table (MySQL/MariaDB), created beside the job tables when missing.
pub(crate) fn lease_table() -> RawSql {
    raw(
        "CREATE TABLE IF NOT EXISTS batch_job_lock (job_key VARCHAR(64) NOT NULL PRIMARY KEY, \
         owner VARCHAR(64) NOT NULL, node VARCHAR(200) NOT NULL, expires_at BIGINT NOT NULL)",
        vec![],
    )
}

/// The server's clock in milliseconds: leases are judged by the cluster's clocks, not the clients'.
const NOW_MS: &str = "CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)";

fn lease_key(key: u64) -> Value {
    Value::Text(format!("{key:016x}"))
}

/// The lease row, locked for the rest of the transaction: owner, node, expiry and the server's now.
pub(crate) fn lease_read(key: u64) -> RawSql {
    raw(
        format!(
            "SELECT owner, node, expires_at, {NOW_MS} FROM batch_job_lock WHERE job_key = ? FOR UPDATE"
        ),
        vec![lease_key(key)],
    )
}

/// Takes a free lease.
pub(crate) fn lease_insert(key: u64, owner: &str, node: &str, lease: Duration) -> RawSql {
    raw(
        format!(
            "INSERT INTO batch_job_lock (job_key, owner, node, expires_at) VALUES (?, ?, ?, {NOW_MS} + ?)"
        ),
        vec![
            lease_key(key),
            Value::Text(owner.into()),
            Value::Text(node.into()),
            Value::I64(lease.as_millis() as i64),
        ],
    )
}

/// Takes over a lease from its dead or expired holder `from`.
pub(crate) fn lease_take_over(
    key: u64,
    from: &str,
    owner: &str,
    node: &str,
    lease: Duration,
) -> RawSql {
    raw(
        format!(
            "UPDATE batch_job_lock SET owner = ?, node = ?, expires_at = {NOW_MS} + ? \
             WHERE job_key = ? AND owner = ?"
        ),
        vec![
            Value::Text(owner.into()),
            Value::Text(node.into()),
            Value::I64(lease.as_millis() as i64),
            lease_key(key),
            Value::Text(from.into()),
        ],
    )
}

/// Renews a lease this owner holds: one row affected, or none when it was taken over.
pub(crate) fn lease_renew(key: u64, owner: &str, lease: Duration) -> RawSql {
    raw(
        format!(
            "UPDATE batch_job_lock SET expires_at = {NOW_MS} + ? WHERE job_key = ? AND owner = ?"
        ),
        vec![
            Value::I64(lease.as_millis() as i64),
            lease_key(key),
            Value::Text(owner.into()),
        ],
    )
}

/// Gives a lease back.
pub(crate) fn lease_release(key: u64, owner: &str) -> RawSql {
    raw(
        "DELETE FROM batch_job_lock WHERE job_key = ? AND owner = ?",
        vec![lease_key(key), Value::Text(owner.into())],
    )
}

/// A name for this run as a lease owner, unique across processes and machines in practice.
pub(crate) fn new_owner() -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    format!(
        "{:x}-{:x}-{:x}",
        std::process::id(),
        crate::model::now_ms(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// What to do about the lease row, as read by [`lease_read`].
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum LeaseStep {
    /// No row: insert one.
    Insert,
    /// Its holder is dead or its lease expired: take it over from this owner.
    TakeOver(String),
    /// A live run on another node holds it, for this many more milliseconds at least.
    Held { node: String, ms_left: i64 },
}

/// The rule: a lease on this node belongs to a dead session (this run holds the node's `GET_LOCK`); an
/// expired one to a run that stopped renewing; any other is held.
pub(crate) fn lease_step(row: Option<(String, String, i64, i64)>, my_node: &str) -> LeaseStep {
    match row {
        None => LeaseStep::Insert,
        Some((owner, node, expires_at, now)) if node == my_node || expires_at <= now => {
            LeaseStep::TakeOver(owner)
        }
        Some((_, node, expires_at, now)) => LeaseStep::Held {
            node,
            ms_left: expires_at - now,
        },
    }
}

/// What a run's partitions and its lease keeper share: whether the lease is lost (set when it could not be
/// renewed in time, or was not renewed because the run stalled; the run stops before its next chunk), and
/// when the run last made progress (a page read, a chunk written), which the keeper renews on.
#[derive(Debug)]
pub(crate) struct LeaseLost {
    lost: AtomicBool,
    origin: std::time::Instant,
    /// Milliseconds from `origin` to the last progress.
    progress_ms: AtomicU64,
    /// The lease's length; `None` for a run that holds no lease (its lock is not one that expires).
    lease: Option<Duration>,
    /// The lease's job key and owner, which every chunk's transaction checks ([`LeaseLost::fence`]).
    holder: Option<(u64, String)>,
}

impl Default for LeaseLost {
    fn default() -> Self {
        LeaseLost {
            lost: AtomicBool::new(false),
            origin: std::time::Instant::now(),
            progress_ms: AtomicU64::new(0),
            lease: None,
            holder: None,
        }
    }
}

impl LeaseLost {
    /// The state of a run that holds a lease of `length` on job `key` as `owner`, taken now.
    pub(crate) fn leased(length: Duration, key: u64, owner: &str) -> Self {
        LeaseLost {
            lease: Some(length),
            holder: Some((key, owner.to_owned())),
            ..LeaseLost::default()
        }
    }

    /// The guard a chunk's transaction ends with when the run holds a lease: the lease's renewal
    /// ([`lease_renew`]), which matches the row only while this run owns it, and keeps it locked to
    /// COMMIT. A chunk of a run whose lease was taken over is rolled back; a takeover on the same server
    /// waits for the chunk, and on a Galera cluster the two writes to the row are certified against each
    /// other: of a chunk and a takeover on two nodes, one commit fails. A lease that expired while the
    /// cluster stalled (a node being evicted) but that no run took over is renewed, and the run goes on.
    pub(crate) fn fence(&self) -> Option<RawSql> {
        let (key, owner) = self.holder.as_ref()?;
        Some(lease_renew(*key, owner, self.lease?))
    }

    /// A chunk's checkpoint (see `checkpoint_statement`) and the lease guard in one statement, one round
    /// trip instead of two: MySQL's multi-table UPDATE changes step `step_id`'s row only while the lease
    /// row is this run's, renews the lease, and keeps that row locked to COMMIT. Once the lease was taken
    /// over it changes no row, and the chunk is refused like by [`LeaseLost::fence`]. `None` for a run
    /// without a lease.
    pub(crate) fn fenced_checkpoint(
        &self,
        step_id: i64,
        chunk: crate::job::ChunkCounts,
        written: u64,
        skipped: u64,
    ) -> Option<RawSql> {
        let (key, owner) = self.holder.as_ref()?;
        Some(raw(
            format!(
                "UPDATE batch_step_execution s STRAIGHT_JOIN batch_job_lock l ON l.job_key = ? AND l.owner = ? \
                 SET s.checkpoint = ?, s.read_count = s.read_count + ?, s.write_count = s.write_count + ?, \
                 s.skip_count = s.skip_count + ?, s.chunk_count = s.chunk_count + 1, \
                 l.expires_at = {NOW_MS} + ? WHERE s.id = ?"
            ),
            vec![
                lease_key(*key),
                Value::Text(owner.clone()),
                Value::I64(chunk.last_key),
                Value::I64(chunk.read as i64),
                Value::I64(written as i64),
                Value::I64(skipped as i64),
                Value::I64(self.lease?.as_millis() as i64),
                Value::I64(step_id),
            ],
        ))
    }

    /// What a chunk's write said, as the run takes it: a chunk refused by its lease guard means the lease
    /// is lost ([`JobError::LockLost`]), and the run writes nothing more.
    pub(crate) fn fenced<X, S, T>(
        &self,
        job: &BatchJob<S, T>,
        written: Result<X, JobError>,
    ) -> Result<X, JobError> {
        match written {
            Err(JobError::Database(tandem_core::Error::Fenced { .. })) => {
                self.set();
                Err(lock_lost(job))
            }
            other => other,
        }
    }

    /// Whether the run has stopped earning its lease: no partition moved on (read a page, wrote a chunk)
    /// for a whole lease. Its keeper then stops renewing, so the lease expires and another run — on another
    /// node — can take the job over within one lease, as the lock promises; and no partition writes again,
    /// since the lease may have lapsed meanwhile (a run stuck on a frozen server, or in a chunk slower than
    /// the lease, stops before its next chunk once it wakes).
    pub(crate) fn stalled(&self) -> bool {
        self.lease.is_some_and(|length| self.idle() >= length)
    }

    pub(crate) fn set(&self) {
        self.lost.store(true, Ordering::SeqCst);
    }

    /// A partition moved on: read a page, or wrote a chunk.
    pub(crate) fn progressed(&self) {
        let now = self.origin.elapsed().as_millis() as u64;
        self.progress_ms.fetch_max(now, Ordering::Relaxed);
    }

    /// How long since any partition last moved on (since the lease was taken, before the first).
    pub(crate) fn idle(&self) -> Duration {
        let last = Duration::from_millis(self.progress_ms.load(Ordering::Relaxed));
        self.origin.elapsed().saturating_sub(last)
    }

    /// [`JobError::LockLost`] once the lease is lost, or the run stalled (see [`LeaseLost::stalled`]).
    pub(crate) fn check<S, T>(&self, job: &BatchJob<S, T>) -> Result<(), JobError> {
        if self.stalled() {
            self.set();
        }
        if self.lost.load(Ordering::SeqCst) {
            return Err(lock_lost(job));
        }
        Ok(())
    }
}

fn lock_lost<S, T>(job: &BatchJob<S, T>) -> JobError {
    JobError::LockLost {
        name: job.name.clone(),
        params: job.params_text(),
    }
}

/// The error for a lock someone else holds.
pub(crate) fn already_running<S, T>(job: &BatchJob<S, T>) -> JobError {
    JobError::AlreadyRunning {
        name: job.name.clone(),
        params: job.params_text(),
    }
}

/// A held run lock: a SQLite one, or the session that holds a server engine's.
pub(crate) enum RunLock<C: CloseOnDrop> {
    Local(#[allow(dead_code)] LocalLock),
    Server(Box<LockSession<C>>),
}

/// A pooled connection that can be told to close when dropped instead of going back to the pool.
pub(crate) trait CloseOnDrop {
    fn close_on_drop(&mut self);
}

/// The connection whose session holds a server run lock. Dropped while it holds the lock (a run's future
/// dropped midway, an unlock that failed), it is closed, and the server drops the lock with the session;
/// once the lock is released on it ([`LockSession::released`]) it goes back to the pool like any other:
/// a run that ends normally costs its pool no new connection (a connection, on PostgreSQL a new server
/// process, per run was most of a run's fixed cost).
pub(crate) struct LockSession<C: CloseOnDrop> {
    conn: C,
    holds: bool,
}

impl<C: CloseOnDrop> LockSession<C> {
    pub(crate) fn new(conn: C) -> Self {
        LockSession { conn, holds: true }
    }

    /// The lock was released on this session: it holds nothing the pool must not hand out.
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

static IN_MEMORY: Mutex<Option<HashSet<(u64, u64)>>> = Mutex::new(None);

/// A SQLite job's lock; released when dropped.
#[derive(Debug)]
pub(crate) enum LocalLock {
    /// The locked file (unlocked when closed).
    File(#[allow(dead_code)] std::fs::File),
    /// The registry entry of an in-memory database: (pool, job key).
    Memory(u64, u64),
}

impl Drop for LocalLock {
    fn drop(&mut self) {
        if let LocalLock::Memory(pool, key) = self {
            let mut held = IN_MEMORY.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(set) = held.as_mut() {
                set.remove(&(*pool, *key));
            }
        }
    }
}

/// Takes a SQLite job's lock; `Ok(None)` for server engines, whose lock is taken on a connection.
pub(crate) fn local_lock<S, T>(
    options: &ConnectOptions,
    pool_id: u64,
    job: &BatchJob<S, T>,
) -> Result<Option<LocalLock>, JobError> {
    if options.dialect != Dialect::Sqlite {
        return Ok(None);
    }
    let key = job_key(job);
    let Some(db_path) = &options.path else {
        let mut held = IN_MEMORY.lock().unwrap_or_else(|e| e.into_inner());
        if !held.get_or_insert_with(HashSet::new).insert((pool_id, key)) {
            return Err(already_running(job));
        }
        return Ok(Some(LocalLock::Memory(pool_id, key)));
    };
    let path = PathBuf::from(format!("{db_path}.batch-{key:016x}.lock"));
    let io = |source| JobError::LockFile {
        path: path.clone(),
        source,
    };
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(io)?;
    match file.try_lock() {
        Ok(()) => Ok(Some(LocalLock::File(file))),
        Err(std::fs::TryLockError::WouldBlock) => Err(already_running(job)),
        Err(std::fs::TryLockError::Error(e)) => Err(io(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(name: &str) -> BatchJob<(), ()> {
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

    /// A file lock excludes a second holder, in the same process too, until the first is dropped.
    #[test]
    fn file_lock_excludes_until_dropped() {
        let dir = std::env::temp_dir().join(format!("tandem-lock-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let db = dir.join("jobs.db");
        let options = ConnectOptions::parse(&format!("sqlite://{}", db.display())).unwrap();
        let first = local_lock(&options, 1, &job("a")).unwrap();
        assert!(matches!(first, Some(LocalLock::File(_))));
        assert!(matches!(
            local_lock(&options, 2, &job("a")),
            Err(JobError::AlreadyRunning { .. })
        ));
        // Another job on the same file is not blocked.
        let other = local_lock(&options, 1, &job("b")).unwrap();
        drop(first);
        assert!(local_lock(&options, 2, &job("a")).unwrap().is_some());
        drop(other);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// The lease rule: a free lease is taken; one left on this node, or expired, is taken over; a live
    /// one elsewhere is held, with the time it has left.
    #[test]
    fn lease_steps() {
        let row = |node: &str, expires_at: i64| {
            Some(("o1".to_owned(), node.to_owned(), expires_at, 1_000))
        };
        assert_eq!(lease_step(None, "a:1"), LeaseStep::Insert);
        assert_eq!(
            lease_step(row("a:1", 5_000), "a:1"),
            LeaseStep::TakeOver("o1".into())
        );
        assert_eq!(
            lease_step(row("b:2", 1_000), "a:1"),
            LeaseStep::TakeOver("o1".into())
        );
        assert_eq!(
            lease_step(row("b:2", 5_000), "a:1"),
            LeaseStep::Held {
                node: "b:2".into(),
                ms_left: 4_000
            }
        );
        assert_ne!(new_owner(), new_owner());
    }

    /// In memory, the registry is per pool: the same job on another pool is another database.
    #[test]
    fn memory_lock_is_per_pool() {
        let options = ConnectOptions::parse("sqlite::memory:").unwrap();
        let first = local_lock(&options, 7, &job("m")).unwrap();
        assert!(matches!(
            local_lock(&options, 7, &job("m")),
            Err(JobError::AlreadyRunning { .. })
        ));
        let other_pool = local_lock(&options, 8, &job("m")).unwrap();
        drop(first);
        assert!(local_lock(&options, 7, &job("m")).unwrap().is_some());
        drop(other_pool);
    }
}
