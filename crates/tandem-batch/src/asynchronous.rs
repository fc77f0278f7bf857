//! The async runner: partitions as tokio tasks, each chunk one transaction with its checkpoint, the lease
//! kept by a task of its own. The decisions are `job`'s (see `job::flow`, `job::partition`) and `lock`'s;
//! this is their I/O on `tandem-async`. Transactions are begun and committed by hand (with
//! `tandem_async::retry`) rather than through closures: a task's future must be `Send`, which an
//! async-closure transaction cannot promise on stable Rust.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Instant;
use tandem_async::Executor as _;

use tandem_async::{Database, PooledConnection, TxOptions, retry};
use tandem_core::Plan;
use tandem_sql::FromRow;
use tandem_sql::ast::CreateTable;
use tandem_sql::prelude::*;
use tracing::Instrument;

use crate::job::spans;
use crate::runner::*;

/// Creates the job repository tables if they are missing (and touches nothing when they are there).
pub async fn prepare(db: &Database) -> tandem_core::Result<()> {
    let (present,): (i64,) = db
        .fetch_one(&tables_present_statement(db.dialect(), &REPOSITORY_TABLES))
        .await?;
    if present == 2 {
        return Ok(());
    }
    db.create_table(&jx::table.create_table()).await?;
    db.create_table(&sx::table.create_table()).await
}

/// Creates `table` (with its indexes) unless a table of that name is there: a read first, so that a
/// program that prepares its target table before each run issues no DDL once it exists — on a Galera
/// cluster every DDL statement waits for the whole cluster, a frozen node included.
pub async fn create_missing(db: &Database, table: &CreateTable) -> tandem_core::Result<()> {
    let name = table.table.name.as_str();
    let (present,): (i64,) = db
        .fetch_one(&tables_present_statement(db.dialect(), &[name]))
        .await?;
    match present {
        1 => Ok(()),
        _ => db.create_table(table).await,
    }
}

/// Runs (or resumes) `job` on `db`; partitions run as tasks on the current tokio runtime. Fails with
/// [`JobError::AlreadyRunning`] when another run of the same job (name and parameters) is under way, here or
/// in another process.
pub async fn run<S, T>(db: &Database, job: &BatchJob<S, T>) -> Result<JobReport, JobError>
where
    S: Entity<Key = i64> + FromRow + Send + 'static,
    T: Entity + Sync + 'static,
{
    run_in_span(db, job).instrument(spans::run(job)).await
}

async fn run_in_span<S, T>(db: &Database, job: &BatchJob<S, T>) -> Result<JobReport, JobError>
where
    S: Entity<Key = i64> + FromRow + Send + 'static,
    T: Entity + Sync + 'static,
{
    // The lock first: it needs no table, and two processes creating the tables at once can collide
    // (PostgreSQL's CREATE TABLE IF NOT EXISTS is not safe against a concurrent twin).
    let locked = lock(db, job).await?;
    let result = run_locked(db, job, &locked).await;
    // The lease and the session lock given back before returning, so a rerun right after does not find
    // them held — within a bound: the lock session's node may be the one that froze. (If this future is
    // dropped instead, the keeper's task is aborted and its session closed: the server drops the lock
    // with it, and the lease is taken over at once on that node, within one lease elsewhere.)
    locked.finish(release_wait(job.lock_lease)).await;
    result
}

async fn run_locked<S, T>(
    db: &Database,
    job: &BatchJob<S, T>,
    locked: &Locked,
) -> Result<JobReport, JobError>
where
    S: Entity<Key = i64> + FromRow + Send + 'static,
    T: Entity + Sync + 'static,
{
    let started = Instant::now();
    // The lock statement said whether the tables are there; SQLite's lock did not.
    if !locked.tables {
        prepare(db).await?;
    }
    let failed_rows = Arc::new(AtomicU64::new(0));
    let reads = locked.reads;
    let run = RunContext {
        job,
        failed_rows: &failed_rows,
        lease: &locked.lease,
        reads,
    };
    let start = start(db, run).await?;
    let tasks: Vec<_> = (start.steps.iter().cloned())
        .map(|step| {
            let (db, job, failed_rows, lease) = (
                db.clone(),
                job.clone(),
                failed_rows.clone(),
                locked.lease.clone(),
            );
            // Each partition's task runs inside its span, a child of the run's: the span follows the
            // task onto whichever worker thread polls it.
            let span = spans::partition(&step);
            let partition = async move {
                let run = RunContext {
                    job: &job,
                    failed_rows: &failed_rows,
                    lease: &lease,
                    reads,
                };
                run_step(&db, run, &step).await
            };
            tokio::spawn(partition.instrument(span))
        })
        .collect();
    let mut results = Vec::with_capacity(tasks.len());
    for (task, step) in tasks.into_iter().zip(&start.steps) {
        results.push(task.await.unwrap_or_else(|e| {
            Err(panicked(
                step,
                match e.is_panic() {
                    true => tandem_core::tx::panic_message(&*e.into_panic()),
                    false => "the task was cancelled".into(),
                },
            ))
        }));
    }
    let short = match counts_fall_short(&start, &results) {
        true => {
            let plan = shortfall_plan(db.dialect(), run, &start.steps)?;
            db.run_atomically(&run.write_options(), plan).await.ok()
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
    let recorded = record(db, &run.bookkeeping_options(), plan).await;
    if recorded.is_ok() {
        run.lease.given_back();
    }
    settle.after(run, recorded)
}

/// A run's hold on its job: the lock, the lease's state (and the task that keeps it), how the run reads,
/// and whether the lock statement found the job repository's tables.
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
    async fn finish(self, bound: std::time::Duration) {
        if let Some(keeper) = self.keeper {
            keeper.finish(bound).await;
        }
    }
}

/// Takes the job's run lock (see [`crate::lock`]): on SQLite its local lock; on a server its session lock
/// and its lease, kept from then on by a [`Keeper`].
async fn lock<S, T>(db: &Database, job: &BatchJob<S, T>) -> Result<Locked, JobError> {
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
    let mut session = LockSession::new(db.checkout().await?);
    let reads = match dialect {
        Dialect::MySql => Reads::of_mysql(&session.fetch_all(&server_probe()).await?),
        _ => Reads::default(),
    };
    // Sent as it is: see `tables_statement`.
    let row: LockRow = session.fetch_one(&statement).await?;
    let mut found = LockFound::from(row);
    if reads.causal && found.taken {
        let tables = (session.fetch_one(&reads.statement(tables_statement()))).await?;
        found.tables_seen(tables);
    }
    // A session that took nothing goes back to the pool — but on PostgreSQL its idle bound was set with
    // the attempt: such a session is closed instead.
    if !found.taken && dialect == Dialect::MySql {
        session.released();
    }
    let taken = match refused(job, &found, &db.options().target()) {
        Some(refusal) => Err(refusal),
        None => take_lease(db, &session, job, reads, &found).await,
    };
    let lease = match taken {
        Ok(lease) => lease,
        Err(e) => {
            // Given back before the refusal, as at a run's end: a rerun right after must not find the
            // lock still held by this session while it closes.
            if found.taken {
                give_back(&mut session, dialect, job_key(job)).await;
            }
            return Err(e);
        }
    };
    let keeper = Keeper::start(db, session, lease.clone(), reads, job_key(job));
    Ok(Locked {
        _local: None,
        keeper: Some(keeper),
        lease,
        reads,
        tables: found.repository_tables,
    })
}

/// With the session lock held: bounds the lock session by the server, makes sure the lease table is
/// there, and takes the lease in a transaction the server (or the cluster) serialises (begun by hand, so
/// that the future stays `Send`).
async fn take_lease<S, T>(
    db: &Database,
    session: &PooledConnection,
    job: &BatchJob<S, T>,
    reads: Reads,
    found: &LockFound,
) -> Result<Arc<LeaseState>, JobError> {
    let dialect = db.dialect();
    if let Some(bound) = session_bound_statement(dialect, job.lock_lease) {
        session.execute(&bound).await?;
    }
    if !found.lease_table {
        created_anyway(session.execute(&lease_table()).await)?;
    }
    let claim = LeaseClaim::new(dialect, job, found.node.clone());
    let opts = reads.tx(job.bookkeeping_options());
    let held = retry(&opts, || async {
        let tx = db.begin(opts.clone()).await?;
        let row = (tx.fetch_optional(&reads.bounded(lease_read(dialect, claim.key), claim.length)))
            .await?;
        let held = match claim.write(row) {
            LeaseWrite::Write(write) => tx
                .execute(&reads.bounded(write, claim.length))
                .await
                .map(|_| None)?,
            LeaseWrite::Held(node, ms_left) => Some((node, ms_left)),
        };
        tx.commit().await.map(|()| held)
    })
    .await;
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
async fn give_back(session: &mut LockSession<PooledConnection>, dialect: Dialect, key: u64) {
    for statement in session_release_statements(dialect, key) {
        if session.execute(&statement).await.is_err() {
            return;
        }
    }
    session.released();
}

/// The task that keeps a run's lease: every third of a lease it renews it on the lock session (which
/// keeps that session within its idle limit), for one lease after the run's last progress; once the run
/// made none for a whole lease it gives the session lock back and renews no more. At the run's end it
/// gives the lease and the session lock back. Aborted when dropped (a run's future dropped midway): its
/// session is then closed.
struct Keeper {
    /// Dropped to tell the keeper the run is over.
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Keeper {
    fn start(
        db: &Database,
        session: LockSession<PooledConnection>,
        lease: Arc<LeaseState>,
        reads: Reads,
        key: u64,
    ) -> Keeper {
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let db = db.clone();
        let task =
            tokio::spawn(async move { keep(&db, session, &lease, reads, key, stopped).await });
        Keeper {
            stop: Some(stop),
            task: Some(task),
        }
    }

    /// Tells the keeper the run is over, and waits at most `bound` for it to give everything back. Past
    /// it the keeper's task is left to finish on its own (its statement is bounded by `socket_timeout`;
    /// a session that fails is closed, and the server drops its lock with it).
    async fn finish(mut self, bound: std::time::Duration) {
        drop(self.stop.take());
        if let Some(task) = self.task.take() {
            // Dropped unfinished at the timeout: the task goes on, detached.
            let _ = tokio::time::timeout(bound, task).await;
        }
    }
}

impl Drop for Keeper {
    fn drop(&mut self) {
        // Still here only when the run's future was dropped before `finish`.
        if let Some(task) = &self.task {
            task.abort();
        }
    }
}

/// The keeper's loop, until `stopped` says the run is over; then the lease and the session lock go back.
async fn keep(
    db: &Database,
    session: LockSession<PooledConnection>,
    lease: &LeaseState,
    reads: Reads,
    key: u64,
    mut stopped: tokio::sync::oneshot::Receiver<()>,
) {
    let dialect = db.dialect();
    let turn = lease.turn().unwrap_or(std::time::Duration::from_secs(1));
    let mut session = Some(session);
    loop {
        // The run is over once the sender is dropped (or sends).
        if tokio::time::timeout(turn, &mut stopped).await.is_ok() {
            break;
        }
        let Some(s) = session.as_mut() else {
            continue;
        };
        match lease.renewal() {
            Some(Renewal::Renew(renew)) => {
                match s.execute(&reads.bounded(renew, turn * 3)).await {
                    Ok(1) => continue,
                    // Another run holds the lease now.
                    Ok(_) => lease.set_lost(),
                    // The session is gone (its node, or the connection): nothing to renew on.
                    Err(e) => {
                        tracing::warn!(error = %e, "the lease keeper lost its lock session");
                        session = None;
                        continue;
                    }
                }
            }
            Some(Renewal::Stalled) => tracing::warn!(
                "the run made no progress for a whole lease: its session lock goes back, and the next \
                 run may take the job over"
            ),
            None => continue,
        }
        give_back(s, dialect, key).await;
        session = None;
    }
    let release = lease.still_held().map(|r| reads.bounded(r, turn * 3));
    if let Some(release) = release {
        let _ = match &session {
            Some(s) => s.execute(&release).await,
            None => db.execute(&release).await,
        };
    }
    if let Some(mut s) = session {
        give_back(&mut s, dialect, key).await;
    }
}

/// Where a partition's statements run: on a connection it keeps for its run, or on the pool (a checkout
/// each).
enum Via {
    Kept(PooledConnection),
    Pool(Database),
}

impl Via {
    /// A connection from `db` to keep, or the pool itself.
    async fn take(db: &Database, keep: bool) -> tandem_core::Result<Via> {
        Ok(match keep {
            true => Via::Kept(db.checkout().await?),
            false => Via::Pool(db.clone()),
        })
    }

    async fn fetch_all<S: FromRow + Send>(
        &self,
        page: &impl Render,
    ) -> tandem_core::Result<Vec<S>> {
        match self {
            Via::Kept(conn) => conn.fetch_all(page).await,
            Via::Pool(db) => db.fetch_all(page).await,
        }
    }

    async fn run_atomically<R>(&self, opts: &TxOptions, plan: Plan<R>) -> tandem_core::Result<R> {
        match self {
            Via::Kept(conn) => conn.run_atomically(opts, plan).await,
            Via::Pool(db) => db.run_atomically(opts, plan).await,
        }
    }
}

/// Creates the run: what it reads and decides (one plan), then its execution row and its steps in one
/// transaction, which begins with the lease's guard (read as the run reads, so on a Galera cluster the
/// INSERTs after it run on a node that has applied everything before). A run that stops at any point
/// leaves either all of its writes or none of them.
async fn start<S: Entity, T>(db: &Database, run: RunContext<'_, S, T>) -> Result<Start, JobError> {
    let job = run.job;
    let opts = run.bookkeeping_options();
    let reads = db
        .run_atomically(&opts, start_reads(db.dialect(), run)?)
        .await;
    let writes = run
        .lease
        .fenced(job, reads.map_err(JobError::from))?
        .decide(job)?;
    let guard = (run.lease.guard()).map(|g| run.reads.bounded(g, job.lock_lease));
    let started = retry(&opts, || async {
        let tx = db.begin(opts.clone()).await?;
        if let Some(guard) = &guard
            && tx.execute(guard).await? == 0
        {
            return Err(tandem_core::Error::Fenced {
                what: LeaseState::guarded_what(job),
            });
        }
        let execution = tx
            .repository::<JobExecution>()
            .insert(&writes.execution)
            .await?;
        let (steps, resumed) = writes.steps(execution);
        // An empty source has no partitions: its run completes at once.
        let ids = if steps.is_empty() {
            Vec::new()
        } else {
            tx.repository::<StepExecution>().insert_all(&steps).await?
        };
        tx.commit().await?;
        Ok::<_, tandem_core::Error>(writes.started(execution, steps, ids, resumed))
    })
    .await;
    run.lease.fenced(job, started.map_err(JobError::from))
}

async fn run_step<S, T>(
    db: &Database,
    run: RunContext<'_, S, T>,
    step: &StepExecution,
) -> Result<PartitionReport, JobError>
where
    S: Entity<Key = i64> + FromRow + Send + 'static,
    T: Entity + Sync + 'static,
{
    let opts = run.write_options();
    let mut p = match Partition::open(run, step, db.dialect()) {
        Ok(p) => p,
        Err(completed) => return Ok(completed),
    };
    // Where the partition reads ahead (see `Partition::reads_ahead`), the next page is read in a task of
    // its own while this page's chunks are written. A read left running when the step fails finishes on
    // its own; it is never cut short mid-statement.
    let ahead = p.reads_ahead();
    let keep = p.kept_connections(db.config().max_size);
    let result = async {
        // The connections the partition keeps for its run (see `Partition::kept_connections`): they go
        // back to the pool at the end of this block, before the step is recorded as ended through the pool
        // (a lost connection must not keep the step from being ended).
        let writer = Via::take(db, keep >= 1).await?;
        let mut reader = Some(Via::take(db, keep >= 2).await?);
        let mut page = writer.fetch_all::<S>(&p.page(p.after())).await?;
        loop {
            let Some(chunks) = p.process(page)? else {
                return Ok(());
            };
            let next = p.page(p.next_after(&chunks));
            // Where the partition reads ahead, the next page is read in a task of its own while this
            // page's chunks are written; the task hands its connection back with the rows. A read left
            // running when the step fails finishes on its own; it is never cut short mid-statement.
            let next = match reader.take() {
                Some(on) if ahead && !p.last_page() => {
                    // Its read is the partition's: inside the partition's span.
                    let read = async move {
                        let rows = on.fetch_all::<S>(&next).await;
                        (on, rows)
                    };
                    Next::Reading(tokio::spawn(read.instrument(tracing::Span::current())))
                }
                kept => {
                    reader = kept;
                    Next::Unread(next)
                }
            };
            for chunk in chunks {
                let span = spans::chunk(&chunk);
                let write = span.in_scope(|| p.write(&chunk))?;
                let written = async {
                    match write {
                        ChunkWrite::Plan(plan) => {
                            writer.run_atomically(&opts, plan).await.map(|n| (n, 0))
                        }
                        ChunkWrite::ByHand => {
                            retry(&opts, || async {
                                let tx = db.begin(opts.clone()).await?;
                                if let Some(first) = p.first() {
                                    tx.execute(&first).await?;
                                }
                                let inserted = if chunk.rows.is_empty() {
                                    0
                                } else {
                                    let r = tx.repository::<T>();
                                    r.batch_insert(&chunk.rows, &p.opts).await?.inserted
                                };
                                let (checkpoint, counts) = p.checkpoint(&chunk, inserted);
                                tx.execute(&checkpoint).await?;
                                if let Some(guard) = p.guard()
                                    && tx.execute(&guard).await? == 0
                                {
                                    return Err(p.refused());
                                }
                                tx.commit().await.map(|()| counts)
                            })
                            .await
                        }
                    }
                }
                .instrument(span.clone())
                .await;
                let counts = match span.in_scope(|| p.written(written.map_err(JobError::from))) {
                    Err(e) if !matches!(e, JobError::LockLost { .. }) => {
                        return Err(still_owned(db, run, e).await);
                    }
                    counts => counts?,
                };
                p.wrote(&chunk, counts);
                if let Some(d) = p.delay() {
                    tokio::time::sleep(d).await;
                }
            }
            if p.ended() {
                return Ok(());
            }
            page = match next {
                Next::Reading(reading) => {
                    let (on, rows) =
                        (reading.await).map_err(|e| panicked(step, format!("a page read: {e}")))?;
                    reader = Some(on);
                    rows?
                }
                Next::Unread(next) => writer.fetch_all::<S>(&next).await?,
            };
        }
    }
    .await;
    let (plan, settle) = p.end(result)?.split();
    settle.after(run, record(db, &run.bookkeeping_options(), plan).await)
}

/// A chunk's write failed with `error`: when the run's lease is another run's now, that is why (see
/// [`LeaseState::ownership`]).
async fn still_owned<S, T>(db: &Database, run: RunContext<'_, S, T>, error: JobError) -> JobError {
    let owned = match run.lease.ownership() {
        Some(q) => (db.fetch_one::<(i64,)>(&run.reads.statement(q)).await)
            .ok()
            .map(|(n,)| n > 0),
        None => None,
    };
    run.lease.failed(run.job, error, owned)
}

/// Runs the plan that records an ending, if there is one to run.
async fn record(
    db: &Database,
    opts: &TxOptions,
    plan: Option<Plan<()>>,
) -> tandem_core::Result<()> {
    match plan {
        Some(plan) => db.run_atomically(opts, plan).await,
        None => Ok(()),
    }
}

impl CloseOnDrop for PooledConnection {
    fn close_on_drop(&mut self) {
        PooledConnection::close_on_drop(self);
    }
}
