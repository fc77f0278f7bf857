//! The lease: its table and statements on each server engine, the rule for taking it, and what a run's
//! partitions and its keeper share about it ([`LeaseState`]): when the run last made progress, whether the
//! lease was taken over, and the guard every write of the run ends with.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tandem_sql::{Dialect, RawSql, Value, raw};

use crate::job::{BatchJob, ChunkCounts, JobError};

/// A statement written with `?` placeholders, in `dialect`'s spelling (`$1`, `$2`, … on PostgreSQL). The
/// lease statements hold no `?` but their placeholders.
fn statement(dialect: Dialect, sql: &str, params: Vec<Value>) -> RawSql {
    if dialect != Dialect::Postgres {
        return raw(sql, params);
    }
    let mut out = String::with_capacity(sql.len() + 8);
    let mut n = 0;
    for c in sql.chars() {
        if c == '?' {
            n += 1;
            out.push_str(&format!("${n}"));
        } else {
            out.push(c);
        }
    }
    raw(out, params)
}

/// The server's clock in milliseconds: leases are judged by the servers' clocks, never the clients'.
fn now_ms(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::Postgres => "CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)",
        _ => "CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)",
    }
}

fn lease_key(key: u64) -> Value {
    Value::Text(format!("{key:016x}"))
}

fn ms(d: Duration) -> Value {
    Value::I64(i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// The lease table, created beside the job tables when missing (the same on both engines).
pub(crate) fn lease_table() -> RawSql {
    raw(
        "CREATE TABLE IF NOT EXISTS batch_job_lock (job_key VARCHAR(64) NOT NULL PRIMARY KEY, \
         owner VARCHAR(64) NOT NULL, node VARCHAR(200) NOT NULL, expires_at BIGINT NOT NULL)",
        vec![],
    )
}

/// The lease row, locked for the rest of the transaction: owner, node, expiry and the server's now.
pub(crate) fn lease_read(dialect: Dialect, key: u64) -> RawSql {
    statement(
        dialect,
        &format!(
            "SELECT owner, node, expires_at, {} FROM batch_job_lock WHERE job_key = ? FOR UPDATE",
            now_ms(dialect)
        ),
        vec![lease_key(key)],
    )
}

/// Takes a free lease.
pub(crate) fn lease_insert(
    dialect: Dialect,
    key: u64,
    owner: &str,
    node: &str,
    lease: Duration,
) -> RawSql {
    statement(
        dialect,
        &format!(
            "INSERT INTO batch_job_lock (job_key, owner, node, expires_at) VALUES (?, ?, ?, {} + ?)",
            now_ms(dialect)
        ),
        vec![
            lease_key(key),
            Value::Text(owner.into()),
            Value::Text(node.into()),
            ms(lease),
        ],
    )
}

/// Takes over a lease from its dead or expired holder `from`.
pub(crate) fn lease_take_over(
    dialect: Dialect,
    key: u64,
    from: &str,
    owner: &str,
    node: &str,
    lease: Duration,
) -> RawSql {
    statement(
        dialect,
        &format!(
            "UPDATE batch_job_lock SET owner = ?, node = ?, expires_at = {} + ? \
             WHERE job_key = ? AND owner = ?",
            now_ms(dialect)
        ),
        vec![
            Value::Text(owner.into()),
            Value::Text(node.into()),
            ms(lease),
            lease_key(key),
            Value::Text(from.into()),
        ],
    )
}

/// Renews a lease this owner holds, to expire `left` from now: one row affected, or none when it was taken
/// over. Also the guard of a write done by hand (see [`LeaseState::guard`]).
pub(crate) fn lease_renew(dialect: Dialect, key: u64, owner: &str, left: Duration) -> RawSql {
    statement(
        dialect,
        &format!(
            "UPDATE batch_job_lock SET expires_at = {} + ? WHERE job_key = ? AND owner = ?",
            now_ms(dialect)
        ),
        vec![ms(left), lease_key(key), Value::Text(owner.into())],
    )
}

/// Gives a lease back (nothing when it was taken over meanwhile).
pub(crate) fn lease_release(dialect: Dialect, key: u64, owner: &str) -> RawSql {
    statement(
        dialect,
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
    /// Its holder is gone or its lease expired: take it over from this owner.
    TakeOver(String),
    /// A run elsewhere holds it, for this many more milliseconds at least.
    Held { node: String, ms_left: i64 },
}

/// The rule: a lease on this node belongs to a session that is gone (this run holds the node's session
/// lock, which the holder's session would still hold); an expired one to a run that stopped making
/// progress; any other is held.
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

/// What a run's partitions, its bookkeeping and its lease keeper share about the lease: whether it was
/// taken over (a guard matched no row, or a renewal found another owner: the run writes nothing more),
/// and when the run last made progress (a page read, a chunk written), which renewals are counted from.
/// A run without a lease (SQLite) has a state that is never lost and guards nothing.
#[derive(Debug)]
pub(crate) struct LeaseState {
    lost: AtomicBool,
    /// Given back with the run's end ([`LeaseState::given_back`]).
    returned: AtomicBool,
    origin: Instant,
    /// Milliseconds from `origin` to the last progress.
    progress_ms: AtomicU64,
    /// The lease: its engine, job key, owner and length; `None` for a run that holds no lease.
    held: Option<Held>,
}

#[derive(Debug)]
struct Held {
    dialect: Dialect,
    key: u64,
    owner: String,
    length: Duration,
}

/// What the keeper does at one of its turns.
#[derive(Debug)]
pub(crate) enum Renewal {
    /// Renew with this statement (on the lock session): the lease then ends one lease after the run's last
    /// progress.
    Renew(RawSql),
    /// The run made no progress for a whole lease: no more renewals, and the session lock goes back, so
    /// that the next run — on this node or another — takes the job over.
    Stalled,
}

impl Default for LeaseState {
    fn default() -> Self {
        LeaseState {
            lost: AtomicBool::new(false),
            returned: AtomicBool::new(false),
            origin: Instant::now(),
            progress_ms: AtomicU64::new(0),
            held: None,
        }
    }
}

impl LeaseState {
    /// The state of a run that holds a lease of `length` on job `key` as `owner`, taken now.
    pub(crate) fn leased(dialect: Dialect, length: Duration, key: u64, owner: &str) -> Self {
        LeaseState {
            held: Some(Held {
                dialect,
                key,
                owner: owner.to_owned(),
                length,
            }),
            ..LeaseState::default()
        }
    }

    /// The guard a leased run's write ends with: the lease's renewal, which matches the row only while
    /// this run owns it, renews it for a whole lease (the write is progress), and keeps the row locked to
    /// COMMIT. A write of a run whose lease was taken over is rolled back; a takeover on the same server
    /// waits for the write, and on a Galera cluster the two writes to the row are certified against each
    /// other: of a write and a takeover on two nodes, one commit fails. A lease that expired but that no
    /// run took over is renewed, and the run goes on. `None` for a run without a lease.
    pub(crate) fn guard(&self) -> Option<RawSql> {
        let h = self.held.as_ref()?;
        Some(lease_renew(h.dialect, h.key, &h.owner, h.length))
    }

    /// What the guard checks, for [`tandem_core::Error::Fenced`].
    pub(crate) fn guarded_what<S, T>(job: &BatchJob<S, T>) -> String {
        format!("the lease of job {:?}", job.name)
    }

    /// A chunk's checkpoint (see `checkpoint_statement`) and the guard in one statement, one round trip
    /// instead of two: it changes step `step_id`'s row only while the lease row is this run's, renews the
    /// lease, and keeps that row locked to COMMIT (MySQL: a multi-table UPDATE; PostgreSQL: the lease's
    /// UPDATE in a WITH, the step's UPDATE only where it returned its row). Once the lease was taken over
    /// it changes no row, and the chunk is refused like by [`LeaseState::guard`]. `None` for a run
    /// without a lease.
    pub(crate) fn guarded_checkpoint(
        &self,
        step_id: i64,
        chunk: ChunkCounts,
        written: u64,
        skipped: u64,
    ) -> Option<RawSql> {
        let h = self.held.as_ref()?;
        let counts = [
            Value::I64(chunk.last_key),
            Value::I64(chunk.read as i64),
            Value::I64(written as i64),
            Value::I64(skipped as i64),
        ];
        let lease = [lease_key(h.key), Value::Text(h.owner.clone()), ms(h.length)];
        let now = now_ms(h.dialect);
        Some(match h.dialect {
            Dialect::Postgres => statement(
                h.dialect,
                &format!(
                    "WITH held AS (UPDATE batch_job_lock SET expires_at = {now} + ? \
                     WHERE job_key = ? AND owner = ? RETURNING 1) \
                     UPDATE batch_step_execution SET checkpoint = ?, read_count = read_count + ?, \
                     write_count = write_count + ?, skip_count = skip_count + ?, \
                     chunk_count = chunk_count + 1 WHERE id = ? AND EXISTS (SELECT 1 FROM held)"
                ),
                [lease[2].clone(), lease[0].clone(), lease[1].clone()]
                    .into_iter()
                    .chain(counts)
                    .chain([Value::I64(step_id)])
                    .collect(),
            ),
            _ => statement(
                h.dialect,
                &format!(
                    "UPDATE batch_step_execution s STRAIGHT_JOIN batch_job_lock l \
                     ON l.job_key = ? AND l.owner = ? \
                     SET s.checkpoint = ?, s.read_count = s.read_count + ?, \
                     s.write_count = s.write_count + ?, s.skip_count = s.skip_count + ?, \
                     s.chunk_count = s.chunk_count + 1, l.expires_at = {now} + ? WHERE s.id = ?"
                ),
                [lease[0].clone(), lease[1].clone()]
                    .into_iter()
                    .chain(counts)
                    .chain([lease[2].clone(), Value::I64(step_id)])
                    .collect(),
            ),
        })
    }

    /// What a write said, as the run takes it: a write refused by its guard means the lease was taken over
    /// ([`JobError::LockLost`]), and the run writes nothing more.
    pub(crate) fn fenced<X, S, T>(
        &self,
        job: &BatchJob<S, T>,
        written: Result<X, JobError>,
    ) -> Result<X, JobError> {
        match written {
            Err(JobError::Database(tandem_core::Error::Fenced { .. })) => {
                self.set_lost();
                Err(super::lock_lost(job))
            }
            other => other,
        }
    }

    /// One row, one number: 1 while this run owns the lease, 0 once another run took it over (or it was
    /// given back). Asked after a write failed for another reason than its guard — a chunk refused for a
    /// duplicate key, say — to tell a run that lost its lease (another run wrote those rows meanwhile) from
    /// one that met a real error.
    pub(crate) fn ownership(&self) -> Option<RawSql> {
        let h = self.held.as_ref()?;
        let bigint = match h.dialect {
            Dialect::MySql => "SIGNED",
            _ => "BIGINT",
        };
        Some(statement(
            h.dialect,
            &format!(
                "SELECT CAST(COUNT(*) AS {bigint}) FROM batch_job_lock WHERE job_key = ? AND owner = ?"
            ),
            vec![lease_key(h.key), Value::Text(h.owner.clone())],
        ))
    }

    /// A write that failed with `error` when [`LeaseState::ownership`] said `owned`: a run that no longer
    /// owns its lease stops with [`JobError::LockLost`], its error logged (never recorded).
    pub(crate) fn failed<S, T>(
        &self,
        job: &BatchJob<S, T>,
        error: JobError,
        owned: Option<bool>,
    ) -> JobError {
        match owned {
            Some(false) => {
                tracing::warn!(
                    error = %error,
                    "a write failed after the run's lease was taken over: the run stops"
                );
                self.set_lost();
                super::lock_lost(job)
            }
            _ => error,
        }
    }

    /// The keeper's turn: the renewal to make, or the run has stalled (no progress for a whole lease).
    /// `None` for a run without a lease.
    pub(crate) fn renewal(&self) -> Option<Renewal> {
        let h = self.held.as_ref()?;
        let left = h.length.saturating_sub(self.idle());
        Some(match left.is_zero() {
            true => Renewal::Stalled,
            false => Renewal::Renew(lease_renew(h.dialect, h.key, &h.owner, left)),
        })
    }

    /// How often the keeper takes its turn: a third of the lease.
    pub(crate) fn turn(&self) -> Option<Duration> {
        self.held.as_ref().map(|h| h.length / 3)
    }

    /// The statement that gives the lease back: the guard of the run's end (see `end_run`), or what the
    /// keeper runs at the end of a run whose end could not be recorded.
    pub(crate) fn release(&self) -> Option<RawSql> {
        let h = self.held.as_ref()?;
        Some(lease_release(h.dialect, h.key, &h.owner))
    }

    /// The run's end was recorded, and with it the lease given back (or it was another's already).
    pub(crate) fn given_back(&self) {
        self.returned.store(true, Ordering::SeqCst);
    }

    /// The release still to make when the run is over: none once given back with the run's end.
    pub(crate) fn still_held(&self) -> Option<RawSql> {
        match self.returned.load(Ordering::SeqCst) {
            true => None,
            false => self.release(),
        }
    }

    /// The lease was taken over: the run writes nothing more.
    pub(crate) fn set_lost(&self) {
        self.lost.store(true, Ordering::SeqCst);
    }

    /// A partition moved on: read a page, or wrote a chunk.
    pub(crate) fn progressed(&self) {
        let now = self.origin.elapsed().as_millis() as u64;
        self.progress_ms.fetch_max(now, Ordering::Relaxed);
    }

    /// How long since any partition last moved on (since the lease was taken, before the first).
    fn idle(&self) -> Duration {
        let last = Duration::from_millis(self.progress_ms.load(Ordering::Relaxed));
        self.origin.elapsed().saturating_sub(last)
    }

    /// [`JobError::LockLost`] once the lease was taken over: another partition's write was refused by its
    /// guard, or a renewal found another owner. (Only what the lease row says counts; a run whose lease
    /// merely expired goes on, and its next write's guard decides.)
    pub(crate) fn check<S, T>(&self, job: &BatchJob<S, T>) -> Result<(), JobError> {
        match self.lost.load(Ordering::SeqCst) {
            true => Err(super::lock_lost(job)),
            false => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tandem_sql::Render;

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

    /// The same statements on both engines, each in its own placeholder style and with its own clock.
    #[test]
    fn statements_in_each_spelling() {
        let pg = lease_renew(Dialect::Postgres, 1, "o", Duration::from_secs(2))
            .render(Dialect::Postgres)
            .unwrap();
        assert_eq!(
            pg.sql,
            "UPDATE batch_job_lock SET expires_at = CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 \
             AS BIGINT) + $1 WHERE job_key = $2 AND owner = $3"
        );
        assert_eq!(pg.params[0], Value::I64(2_000));
        let my = lease_release(Dialect::MySql, 1, "o")
            .render(Dialect::MySql)
            .unwrap();
        assert_eq!(
            my.sql,
            "DELETE FROM batch_job_lock WHERE job_key = ? AND owner = ?"
        );
        let held = LeaseState::leased(Dialect::Postgres, Duration::from_secs(5), 7, "me");
        let counts = ChunkCounts {
            last_key: 42,
            read: 10,
            skipped: 1,
        };
        let fenced = held
            .guarded_checkpoint(3, counts, 9, 0)
            .unwrap()
            .render(Dialect::Postgres)
            .unwrap();
        assert!(
            fenced.sql.contains("$8") && !fenced.sql.contains('?'),
            "{}",
            fenced.sql
        );
        assert_eq!(fenced.params.len(), 8);
        assert_eq!(fenced.params[7], Value::I64(3));
        assert!(LeaseState::default().guard().is_none());
    }

    /// The keeper renews for what is left of a lease since the last progress, and calls the run stalled
    /// once a whole lease has passed without any.
    #[test]
    fn renewals_count_from_the_last_progress() {
        let state = LeaseState::leased(Dialect::MySql, Duration::from_millis(300), 1, "o");
        state.progressed();
        match state.renewal() {
            Some(Renewal::Renew(r)) => {
                let left = match r.render(Dialect::MySql).unwrap().params[0] {
                    Value::I64(ms) => ms,
                    ref other => panic!("{other:?}"),
                };
                assert!((200..=300).contains(&left), "{left}");
            }
            other => panic!("{other:?}"),
        }
        std::thread::sleep(Duration::from_millis(320));
        assert!(matches!(state.renewal(), Some(Renewal::Stalled)));
        state.progressed();
        assert!(matches!(state.renewal(), Some(Renewal::Renew(_))));
        assert!(LeaseState::default().renewal().is_none());
    }
}
