//! The blocking runner: partitions on OS threads, each chunk one transaction with its checkpoint, the
//! lease kept by a thread of its own. The decisions are `job`'s (see `job::flow`, `job::partition`) and
//! `lock`'s; this is their I/O on `tandem-blocking`.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Instant;
use tandem_blocking::Executor as _;

use tandem_blocking::{Database, PooledConnection};
use tandem_sql::FromRow;
use tandem_sql::ast::CreateTable;
use tandem_sql::prelude::*;

use crate::job::spans;
use crate::runner::*;

/// Creates the job repository tables if they are missing (and touches nothing when they are there).
pub fn prepare(db: &Database) -> tandem_core::Result<()> {
    let (present,): (i64,) =
        db.fetch_one(&tables_present_statement(db.dialect(), &REPOSITORY_TABLES))?;
    if present == 2 {
        return Ok(());
    }
    db.create_table(&jx::table.create_table())?;
    db.create_table(&sx::table.create_table())
}

/// Creates `table` (with its indexes) unless a table of that name is there: a read first, so that a
/// program that prepares its target table before each run issues no DDL once it exists — on a Galera
/// cluster every DDL statement waits for the whole cluster, a frozen node included.
pub fn create_missing(db: &Database, table: &CreateTable) -> tandem_core::Result<()> {
    let name = table.table.name.as_str();
    let (present,): (i64,) = db.fetch_one(&tables_present_statement(db.dialect(), &[name]))?;
    match present {
        1 => Ok(()),
        _ => db.create_table(table),
    }
}

/// Runs (or resumes) `job` on `db`. Fails with [`JobError::AlreadyRunning`] when another run of the same
/// job (name and parameters) is under way, here or in another process.
pub fn run<S, T>(db: &Database, job: &BatchJob<S, T>) -> Result<JobReport, JobError>
where
    S: Entity<Key = i64> + FromRow + Send,
    T: Entity + Sync,
{
    let span = spans::run(job);
    let _in = span.enter();
    // The lock first: it needs no table, and two processes creating the tables at once can collide
    // (PostgreSQL's CREATE TABLE IF NOT EXISTS is not safe against a concurrent twin).
    let locked = lock(db, job)?;
    let result = run_locked(db, job, &locked);
    // The lease and the session lock given back before returning, so a rerun right after does not find
    // them held — within a bound: the lock session's node may be the one that froze.
    locked.finish(release_wait(job.lock_lease));
    result
}

fn run_locked<S, T>(
    db: &Database,
    job: &BatchJob<S, T>,
    locked: &Locked,
) -> Result<JobReport, JobError>
where
    S: Entity<Key = i64> + FromRow + Send,
    T: Entity + Sync,
{
    let started = Instant::now();
    // The lock statement said whether the tables are there; SQLite's lock did not.
    if !locked.tables {
        prepare(db)?;
    }
    let failed_rows = AtomicU64::new(0);
    let run = RunContext {
        job,
        failed_rows: &failed_rows,
        lease: &locked.lease,
        reads: locked.reads,
    };
    let start = start(db, run)?;
    let results: Vec<Result<PartitionReport, JobError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (start.steps.iter())
            .map(|step| {
                // Each partition's thread runs inside its span, a child of the run's.
                let span = spans::partition(step);
                scope.spawn(move || span.in_scope(|| run_step(db, run, step)))
            })
            .collect();
        (handles.into_iter().zip(&start.steps))
            .map(|(h, step)| {
                h.join().unwrap_or_else(|payload| {
                    Err(panicked(step, tandem_core::tx::panic_message(&*payload)))
                })
            })
            .collect()
    });
    let short = match counts_fall_short(&start, &results) {
        true => {
            let plan = shortfall_plan(db.dialect(), run, &start.steps)?;
            db.run_atomically(&run.write_options(), plan).ok()
        }
        false => None,
    };
    let ending = end_run(
        db.dialect(),
        run,
        &start,
        started,
        results,
        short.as_deref(),
    )?;
    let (plan, settle) = ending.split();
    let recorded = record(db, &run.bookkeeping_options(), plan);
    if recorded.is_ok() {
        run.lease.given_back();
    }
    settle.after(run, recorded)
}

/// A run's hold on its job: the lock, the lease's state (and the thread that keeps it), how the run
/// reads, and whether the lock statement found the job repository's tables.
struct Locked {
    /// A SQLite lock (released when dropped); server locks live with their keeper.
    _local: Option<LocalLock>,
    keeper: Option<Keeper>,
    lease: Arc<LeaseState>,
    reads: Reads,
    tables: bool,
}

impl Locked {
    /// Gives the lease and the session lock back, waiting at most `bound` for it.
    fn finish(self, bound: std::time::Duration) {
        if let Some(keeper) = self.keeper {
            keeper.finish(bound);
        }
    }
}

/// Takes the job's run lock (see [`crate::lock`]): on SQLite its local lock; on a server its session lock
/// and its lease, kept from then on by a [`Keeper`].
fn lock<S, T>(db: &Database, job: &BatchJob<S, T>) -> Result<Locked, JobError> {
    let statement = match lock_plan(db.options(), db.pool_id(), job)? {
        LockPlan::Local(local) => {
            return Ok(Locked {
                _local: Some(local),
                keeper: None,
                lease: Arc::new(LeaseState::default()),
                reads: Reads::default(),
                tables: false,
            });
        }
        LockPlan::Server { statement } => statement,
    };
    let dialect = db.dialect();
    // Closed when dropped holding the lock (see `LockSession`).
    let mut session = LockSession::new(db.checkout()?);
    let reads = match dialect {
        Dialect::MySql => Reads::of_mysql(&session.fetch_all(&server_probe())?),
        _ => Reads::default(),
    };
    // Sent as it is: see `tables_statement`.
    let mut found = LockFound::from(session.fetch_one::<LockRow>(&statement)?);
    if reads.causal && found.taken {
        found.tables_seen(session.fetch_one(&reads.statement(tables_statement()))?);
    }
    // A session that took nothing goes back to the pool — but on PostgreSQL its idle bound was set with
    // the attempt: such a session is closed instead.
    if !found.taken && dialect == Dialect::MySql {
        session.released();
    }
    let taken = match refused(job, &found, &db.options().target()) {
        Some(refusal) => Err(refusal),
        None => take_lease(db, &session, job, reads, &found),
    };
    let lease = match taken {
        Ok(lease) => lease,
        Err(e) => {
            // Given back before the refusal, as at a run's end: a rerun right after must not find the
            // lock still held by this session while it closes.
            if found.taken {
                give_back(&mut session, dialect, job_key(job));
            }
            return Err(e);
        }
    };
    let keeper = Keeper::start(db, session, lease.clone(), reads, job_key(job))?;
    Ok(Locked {
        _local: None,
        keeper: Some(keeper),
        lease,
        reads,
        tables: found.repository_tables,
    })
}

/// With the session lock held: bounds the lock session by the server, makes sure the lease table is
/// there, and takes the lease in a transaction the server (or the cluster) serialises.
fn take_lease<S, T>(
    db: &Database,
    session: &PooledConnection,
    job: &BatchJob<S, T>,
    reads: Reads,
    found: &LockFound,
) -> Result<Arc<LeaseState>, JobError> {
    let dialect = db.dialect();
    if let Some(bound) = session_bound_statement(dialect, job.lock_lease) {
        session.execute(&bound)?;
    }
    if !found.lease_table {
        created_anyway(session.execute(&lease_table()))?;
    }
    let claim = LeaseClaim::new(dialect, job, found.node.clone());
    let held = db.transaction_with(reads.tx(job.bookkeeping_options()), |tx| {
        let row =
            tx.fetch_optional(&reads.bounded(lease_read(dialect, claim.key), claim.length))?;
        match claim.write(row) {
            LeaseWrite::Write(write) => tx
                .execute(&reads.bounded(write, claim.length))
                .map(|_| None),
            LeaseWrite::Held(node, ms_left) => Ok(Some((node, ms_left))),
        }
    });
    lease_taken(held, &claim)?;
    Ok(Arc::new(LeaseState::leased(
        dialect,
        claim.length,
        claim.key,
        &claim.owner,
    )))
}

/// Gives the session lock back on `session` and puts its idle limit back; it then goes back to the pool,
/// or — when that failed — is closed (the server drops the lock with the session).
fn give_back(session: &mut LockSession<PooledConnection>, dialect: Dialect, key: u64) {
    if (session_release_statements(dialect, key).iter()).all(|s| session.execute(s).is_ok()) {
        session.released();
    }
}

/// The thread that keeps a run's lease: every third of a lease it renews it on the lock session (which
/// keeps that session within its idle limit), for one lease after the run's last progress; once the run
/// made none for a whole lease it gives the session lock back and renews no more. At the run's end it
/// gives the lease and the session lock back.
struct Keeper {
    /// Dropped to tell the keeper the run is over.
    stop: Option<std::sync::mpsc::Sender<()>>,
    /// Signalled once the keeper gave everything back.
    done: std::sync::mpsc::Receiver<()>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Keeper {
    fn start(
        db: &Database,
        session: LockSession<PooledConnection>,
        lease: Arc<LeaseState>,
        reads: Reads,
        key: u64,
    ) -> Result<Keeper, JobError> {
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let (finished, done) = std::sync::mpsc::channel::<()>();
        let db = db.clone();
        let thread = std::thread::Builder::new()
            .name("tandem-lease".into())
            .spawn(move || {
                keep(&db, session, &lease, reads, key, stopped);
                let _ = finished.send(());
            })
            .map_err(|source| tandem_core::Error::Thread {
                what: "the job's lease keeper thread",
                source,
            })?;
        Ok(Keeper {
            stop: Some(stop),
            done,
            thread: Some(thread),
        })
    }

    /// Tells the keeper the run is over, and waits at most `bound` for it to give everything back. Past
    /// it the keeper is left to finish on its own (its statement is bounded by `socket_timeout`; a session
    /// that fails is closed, and the server drops its lock with it).
    fn finish(mut self, bound: std::time::Duration) {
        drop(self.stop.take());
        if self.done.recv_timeout(bound).is_ok()
            && let Some(thread) = self.thread.take()
        {
            let _ = thread.join();
        }
    }
}

impl Drop for Keeper {
    fn drop(&mut self) {
        drop(self.stop.take());
    }
}

/// The keeper's loop, until `stopped` says the run is over; then the lease and the session lock go back.
fn keep(
    db: &Database,
    session: LockSession<PooledConnection>,
    lease: &LeaseState,
    reads: Reads,
    key: u64,
    stopped: std::sync::mpsc::Receiver<()>,
) {
    let dialect = db.dialect();
    let turn = lease.turn().unwrap_or(std::time::Duration::from_secs(1));
    let mut session = Some(session);
    while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(turn) {
        let Some(s) = session.as_mut() else {
            continue;
        };
        match lease.renewal() {
            Some(Renewal::Renew(renew)) => match s.execute(&reads.bounded(renew, turn * 3)) {
                Ok(1) => continue,
                // Another run holds the lease now.
                Ok(_) => lease.set_lost(),
                // The session is gone (its node, or the connection): nothing to renew on.
                Err(e) => {
                    tracing::warn!(error = %e, "the lease keeper lost its lock session");
                    session = None;
                    continue;
                }
            },
            Some(Renewal::Stalled) => tracing::warn!(
                "the run made no progress for a whole lease: its session lock goes back, and the next \
                 run may take the job over"
            ),
            None => continue,
        }
        give_back(s, dialect, key);
        session = None;
    }
    let release = lease.still_held().map(|r| reads.bounded(r, turn * 3));
    if let Some(release) = release {
        let _ = match &session {
            Some(s) => s.execute(&release),
            None => db.execute(&release),
        };
    }
    if let Some(mut s) = session {
        give_back(&mut s, dialect, key);
    }
}

/// Creates the run: what it reads and decides (one plan), then its execution row and its steps in one
/// transaction, which begins with the lease's guard (read as the run reads, so on a Galera cluster the
/// INSERTs after it run on a node that has applied everything before). A run that stops at any point
/// leaves either all of its writes or none of them.
fn start<S: Entity, T>(db: &Database, run: RunContext<'_, S, T>) -> Result<Start, JobError> {
    let job = run.job;
    let opts = run.bookkeeping_options();
    let reads = db.run_atomically(&opts, start_reads(db.dialect(), run)?);
    let writes = run
        .lease
        .fenced(job, reads.map_err(JobError::from))?
        .decide(job)?;
    let guard = (run.lease.guard()).map(|g| run.reads.bounded(g, job.lock_lease));
    let started = db.transaction_with(opts, |tx| {
        if let Some(guard) = &guard
            && tx.execute(guard)? == 0
        {
            return Err(tandem_core::Error::Fenced {
                what: LeaseState::guarded_what(job),
            });
        }
        let execution = tx.repository::<JobExecution>().insert(&writes.execution)?;
        let (steps, resumed) = writes.steps(execution);
        // An empty source has no partitions: its run completes at once.
        let ids = if steps.is_empty() {
            Vec::new()
        } else {
            tx.repository::<StepExecution>().insert_all(&steps)?
        };
        Ok(writes.started(execution, steps, ids, resumed))
    });
    run.lease.fenced(job, started.map_err(JobError::from))
}

fn run_step<S, T>(
    db: &Database,
    run: RunContext<'_, S, T>,
    step: &StepExecution,
) -> Result<PartitionReport, JobError>
where
    S: Entity<Key = i64> + FromRow + Send,
    T: Entity + Sync,
{
    let opts = run.write_options();
    let mut p = match Partition::open(run, step, db.dialect()) {
        Ok(p) => p,
        Err(completed) => return Ok(completed),
    };
    // Where the partition reads ahead (see `Partition::reads_ahead`), the next page is read on a thread of
    // its own while this page's chunks are written: one reader per partition for all its pages, so that it
    // keeps one connection (on SQLite, its thread's home, with its prepared statements).
    let ahead = p.reads_ahead();
    let result = std::thread::scope(|scope| -> Result<(), JobError> {
        let (ask, asked) = std::sync::mpsc::channel();
        let (answer, answered) = std::sync::mpsc::sync_channel(1);
        let reader = ahead.then(|| {
            // Its reads are the partition's: inside the partition's span.
            let span = tracing::Span::current();
            scope.spawn(move || {
                let _in = span.enter();
                for page in asked {
                    if answer.send(db.fetch_all::<S>(&page)).is_err() {
                        return;
                    }
                }
            })
        });
        let stopped = || panicked(step, "the page reader stopped".into());
        let written = (|| -> Result<(), JobError> {
            let mut page = db.fetch_all::<S>(&p.page(p.after()))?;
            loop {
                let Some(chunks) = p.process(page)? else {
                    return Ok(());
                };
                let next = p.page(p.next_after(&chunks));
                let next = if ahead && !p.last_page() {
                    ask.send(next).map_err(|_| stopped())?;
                    Next::Reading(())
                } else {
                    Next::Unread(next)
                };
                for chunk in chunks {
                    let span = spans::chunk(&chunk);
                    let _in = span.enter();
                    let written = match p.write(&chunk)? {
                        ChunkWrite::Plan(plan) => db.run_atomically(&opts, plan).map(|n| (n, 0)),
                        ChunkWrite::ByHand => db.transaction_with(opts.clone(), |tx| {
                            if let Some(first) = p.first() {
                                tx.execute(&first)?;
                            }
                            let inserted = if chunk.rows.is_empty() {
                                0
                            } else {
                                tx.repository::<T>()
                                    .batch_insert(&chunk.rows, &p.opts)?
                                    .inserted
                            };
                            let (checkpoint, counts) = p.checkpoint(&chunk, inserted);
                            tx.execute(&checkpoint)?;
                            if let Some(guard) = p.guard()
                                && tx.execute(&guard)? == 0
                            {
                                return Err(p.refused());
                            }
                            Ok(counts)
                        }),
                    };
                    let counts = match p.written(written.map_err(JobError::from)) {
                        Err(e) if !matches!(e, JobError::LockLost { .. }) => {
                            return Err(still_owned(db, run, e));
                        }
                        counts => counts?,
                    };
                    p.wrote(&chunk, counts);
                    if let Some(d) = p.delay() {
                        std::thread::sleep(d);
                    }
                }
                if p.ended() {
                    return Ok(());
                }
                page = match next {
                    Next::Reading(()) => answered.recv().map_err(|_| stopped())??,
                    Next::Unread(next) => db.fetch_all::<S>(&next)?,
                };
            }
        })();
        // The reader ends once asked for nothing more (after a read still under way, never cut short).
        drop(ask);
        match reader.map(|r| r.join()) {
            Some(Err(payload)) => Err(panicked(step, tandem_core::tx::panic_message(&*payload))),
            _ => written,
        }
    });
    let (plan, settle) = p.end(result)?.split();
    settle.after(run, record(db, &run.bookkeeping_options(), plan))
}

/// A chunk's write failed with `error`: when the run's lease is another run's now, that is why (see
/// [`LeaseState::ownership`]).
fn still_owned<S, T>(db: &Database, run: RunContext<'_, S, T>, error: JobError) -> JobError {
    let owned = (run.lease.ownership())
        .and_then(|q| db.fetch_one::<(i64,)>(&run.reads.statement(q)).ok())
        .map(|(n,)| n > 0);
    run.lease.failed(run.job, error, owned)
}

/// Runs the plan that records an ending, if there is one to run.
fn record(
    db: &Database,
    opts: &tandem_core::TxOptions,
    plan: Option<tandem_core::Plan<()>>,
) -> tandem_core::Result<()> {
    plan.map_or(Ok(()), |plan| db.run_atomically(opts, plan))
}

impl CloseOnDrop for PooledConnection {
    fn close_on_drop(&mut self) {
        PooledConnection::close_on_drop(self);
    }
}
