//! What both executors tell an operator, written once: the same `tracing` spans and the same `metrics`
//! from the blocking and the async side, so a team reads one set of names whichever model it runs.
//!
//! # Spans
//! | name | level | fields |
//! |---|---|---|
//! | `checkout` | DEBUG | `db.system`, `wait_ms` (how long the acquire waited for a connection) |
//! | `transaction` | DEBUG | `db.system`, `isolation`, `read_only`, `attempt` (1 for the first), `outcome` (`commit`, `rollback`, `failed`, `abandoned`) |
//! | `statement` | DEBUG | `db.system`, `db.operation`, `db.statement` (the text, placeholders only: never a value), `rows`, `duration_ms`, `error.kind` |
//! | `batch.run`, `batch.partition`, `batch.chunk` | INFO | see `tandem-batch` |
//!
//! `db.system`, `db.operation` and `db.statement` are OpenTelemetry's database conventions. A statement's
//! span is a child of the span current where it was called: a transaction's, a batch chunk's, the caller's
//! request span. On the async side it follows the future across `.await` and into the tasks tandem
//! spawns (a batch run's partitions), as a thread's current span does on the blocking side. A statement
//! slower than [`ConnectOptions::slow_statement`] (`slow_statement=` in the URL; off by default) is logged
//! at WARN with its text, like sqlx's slow-statement log.
//!
//! # Metrics
//! Through the `metrics` facade: the application installs the recorder (an exporter) it likes, before it
//! opens its databases. Without one, every record is a no-op. Labels: `executor` (`blocking` or
//! `async`), `db_system`; for statements `db_operation`; for pools `pool` (the pool's number in the
//! process). The names are the constants below.
//!
//! Nothing here does I/O; the executors call it around their own.

use std::sync::Arc;
use std::time::{Duration, Instant};

use metrics::{Counter, Gauge, Histogram, Label, Unit};
use tandem_sql::Dialect;
use tracing::Span;

use crate::error::Error;
use crate::options::ConnectOptions;
use crate::tx::TxOptions;

/// `tandem_statement_duration_seconds`: a histogram of statement durations, from the call to the last row.
pub const STATEMENT_DURATION: &str = "tandem_statement_duration_seconds";
/// `tandem_statement_errors_total`: statements that failed, by `error_kind`.
pub const STATEMENT_ERRORS: &str = "tandem_statement_errors_total";
/// `tandem_statement_slow_total`: statements slower than the slow-statement threshold.
pub const STATEMENT_SLOW: &str = "tandem_statement_slow_total";
/// `tandem_transactions_total`: transaction attempts, by `outcome`.
pub const TRANSACTIONS: &str = "tandem_transactions_total";
/// `tandem_pool_size`: connections open.
pub const POOL_SIZE: &str = "tandem_pool_size";
/// `tandem_pool_idle`: connections open and idle in the pool.
pub const POOL_IDLE: &str = "tandem_pool_idle";
/// `tandem_pool_in_use`: connections checked out.
pub const POOL_IN_USE: &str = "tandem_pool_in_use";
/// `tandem_pool_waiting`: acquires waiting in the admission queue.
pub const POOL_WAITING: &str = "tandem_pool_waiting";
/// `tandem_pool_acquire_wait_seconds`: a histogram of how long acquires waited for a connection.
pub const POOL_ACQUIRE_WAIT: &str = "tandem_pool_acquire_wait_seconds";
/// `tandem_pool_acquire_timeouts_total`: acquires that waited past the acquire timeout.
pub const POOL_TIMEOUTS: &str = "tandem_pool_acquire_timeouts_total";
/// `tandem_pool_acquire_rejected_total`: acquires refused at once, the admission queue being full.
pub const POOL_REJECTED: &str = "tandem_pool_acquire_rejected_total";
/// `tandem_stream_rows_buffered`: rows a stream's producer read that its consumer has not taken yet.
pub const STREAM_BUFFERED: &str = "tandem_stream_rows_buffered";
/// `tandem_stream_producer_wait_seconds`: a histogram, one sample per stream, of how long its producer
/// waited for the consumer to make room (the backpressure: time the database connection sat idle
/// because the reader was slower).
pub const STREAM_PRODUCER_WAIT: &str = "tandem_stream_producer_wait_seconds";

/// Which executor runs the work: the `executor` label of every metric.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// `tandem-blocking`: drivers on threads.
    Blocking,
    /// `tandem-async`: drivers on tokio.
    Async,
}

impl Side {
    /// The label value: `blocking` or `async`.
    pub fn name(self) -> &'static str {
        match self {
            Side::Blocking => "blocking",
            Side::Async => "async",
        }
    }
}

/// OpenTelemetry's `db.system` for an engine: `postgresql`, `mysql` (MariaDB too) or `sqlite`.
pub fn system(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::Postgres => "postgresql",
        Dialect::MySql => "mysql",
        Dialect::Sqlite => "sqlite",
    }
}

/// The operations a statement span and the duration histogram name: a statement's first keyword.
const OPERATIONS: [&str; 18] = [
    "SELECT",
    "INSERT",
    "UPDATE",
    "DELETE",
    "BEGIN",
    "START",
    "COMMIT",
    "ROLLBACK",
    "SAVEPOINT",
    "RELEASE",
    "SET",
    "CREATE",
    "DROP",
    "ALTER",
    "WITH",
    "COPY",
    "PRAGMA",
    "OTHER",
];

/// An operation's letters as they sit in the first bytes of a statement (little-endian), with the mask
/// that compares them whatever their case: ASCII letters differ from their lower case by the 0x20 bit
/// only, and no other byte masked with 0xDF equals a letter.
const fn prefix(word: &str) -> (u128, u128) {
    let bytes = word.as_bytes();
    let (mut key, mut mask) = (0u128, 0u128);
    let mut i = 0;
    while i < bytes.len() {
        key |= (bytes[i] as u128) << (8 * i);
        mask |= 0xDF << (8 * i);
        i += 1;
    }
    (key, mask)
}

/// Every operation but `OTHER`: key, mask and length (see [`prefix`]).
const PREFIXES: [(u128, u128, usize); 17] = {
    let mut out = [(0u128, 0u128, 0usize); 17];
    let mut i = 0;
    while i < out.len() {
        let (key, mask) = prefix(OPERATIONS[i]);
        out[i] = (key, mask, OPERATIONS[i].len());
        i += 1;
    }
    out
};

/// The index in [`OPERATIONS`] of `sql`'s first keyword (`OTHER` for any other). Run for every statement,
/// so it compares the first 16 bytes at once with each operation's letters (see [`prefix`]) and checks
/// the keyword ends there: about 60 instructions for a SELECT, where comparing byte by byte took 180.
fn operation_index(sql: &str) -> usize {
    let bytes = sql.as_bytes();
    let start = bytes
        .iter()
        .position(|b| !(b.is_ascii_whitespace() || *b == b'('))
        .unwrap_or(bytes.len());
    let rest = &bytes[start..];
    let mut short = [0u8; 17];
    let head: &[u8; 17] = match rest.first_chunk::<17>() {
        Some(head) => head,
        None => {
            short[..rest.len()].copy_from_slice(rest);
            &short
        }
    };
    let (word, _) = head.split_first_chunk::<16>().expect("17 bytes");
    let word = u128::from_le_bytes(*word);
    let index = PREFIXES
        .iter()
        .position(|(key, mask, len)| {
            word & mask == *key && !(head[*len].is_ascii_alphanumeric() || head[*len] == b'_')
        })
        .unwrap_or(OPERATIONS.len() - 1);
    match OPERATIONS[index] {
        "SET" => statement_settings(&sql[start..]).map_or(index, operation_index),
        _ => index,
    }
}

/// The statement after MariaDB's per-statement settings (`SET STATEMENT a = 1, b = 2 FOR SELECT …`: a
/// batch run's causal reads and lock bounds), whose operation is the statement's.
fn statement_settings(sql: &str) -> Option<&str> {
    let head = sql.get(..13)?;
    if !head.eq_ignore_ascii_case("SET STATEMENT") {
        return None;
    }
    let upper = sql.to_ascii_uppercase();
    upper.find(" FOR ").map(|at| &sql[at + 5..])
}

/// Whether spans are made at all: only once a `tracing` subscriber has been installed. Before that, every
/// span is `Span::none()` — not even the `log` fallback some drivers turn on in `tracing` evaluates its
/// fields.
fn tracing_on() -> bool {
    tracing::dispatcher::has_been_set()
}

/// `db.operation` of a statement: its first keyword in capitals (`SELECT`, `INSERT`, `BEGIN`, …), `OTHER`
/// for a keyword outside that short list (which keeps the metric's label set bounded).
pub fn operation(sql: &str) -> &'static str {
    OPERATIONS[operation_index(sql)]
}

/// Names the metrics for an exporter (units and help text). Called whenever a database opens; harmless
/// to call again.
pub fn describe_metrics() {
    use metrics::{describe_counter, describe_gauge, describe_histogram};
    describe_histogram!(
        STATEMENT_DURATION,
        Unit::Seconds,
        "Statement durations, from the call to the last row"
    );
    describe_counter!(STATEMENT_ERRORS, "Statements that failed, by error kind");
    describe_counter!(
        STATEMENT_SLOW,
        "Statements slower than the slow-statement threshold"
    );
    describe_counter!(TRANSACTIONS, "Transaction attempts, by outcome");
    describe_gauge!(POOL_SIZE, "Connections open");
    describe_gauge!(POOL_IDLE, "Connections open and idle");
    describe_gauge!(POOL_IN_USE, "Connections checked out");
    describe_gauge!(POOL_WAITING, "Acquires waiting in the admission queue");
    describe_histogram!(
        POOL_ACQUIRE_WAIT,
        Unit::Seconds,
        "How long acquires waited for a connection"
    );
    describe_counter!(
        POOL_TIMEOUTS,
        "Acquires that waited past the acquire timeout"
    );
    describe_counter!(
        POOL_REJECTED,
        "Acquires refused at once: the admission queue was full"
    );
    describe_gauge!(
        STREAM_BUFFERED,
        "Rows read by streams' producers and not yet taken by their consumers"
    );
    describe_histogram!(
        STREAM_PRODUCER_WAIT,
        Unit::Seconds,
        "Per stream: how long its producer waited for the consumer (backpressure)"
    );
}

/// The labels every metric of one database carries.
fn labels(side: Side, dialect: Dialect) -> Vec<Label> {
    vec![
        Label::new("executor", side.name()),
        Label::new("db_system", system(dialect)),
    ]
}

/// The metric handles of one pool, registered when its database opens (with no recorder installed they
/// do nothing, at the cost of a branch), and the two counts its gauges are set from: connections open
/// (the blocking pool counts each one it opens and closes; the async one reads its driver pool's count at
/// each checkout) and connections checked out (counted at checkout and return). Idle is the difference,
/// and the three are set together under one lock, so a scrape never sees one update's size beside another's
/// idle count (two threads returning and closing at once would otherwise interleave their three sets).
#[derive(Debug)]
pub struct PoolGauges {
    /// [`POOL_SIZE`]
    pub size: Gauge,
    /// [`POOL_IDLE`]
    pub idle: Gauge,
    /// [`POOL_IN_USE`]
    pub in_use: Gauge,
    /// [`POOL_WAITING`]
    pub waiting: Gauge,
    /// [`POOL_ACQUIRE_WAIT`]
    pub acquire_wait: Histogram,
    /// [`POOL_TIMEOUTS`]
    pub timeouts: Counter,
    /// [`POOL_REJECTED`]
    pub rejected: Counter,
    /// Connections open and connections checked out.
    counts: std::sync::Mutex<(i64, i64)>,
}

impl PoolGauges {
    /// The handles for a pool of `side` on `dialect`, labelled also with the pool's number in this
    /// process (`pool`: 1 for the first opened), so that two pools' gauges never overwrite each other.
    pub fn new(side: Side, dialect: Dialect) -> Self {
        static POOLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        describe_metrics();
        let mut l = labels(side, dialect);
        let n = POOLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        l.push(Label::new("pool", n.to_string()));
        PoolGauges {
            size: metrics::gauge!(POOL_SIZE, l.clone()),
            idle: metrics::gauge!(POOL_IDLE, l.clone()),
            in_use: metrics::gauge!(POOL_IN_USE, l.clone()),
            waiting: metrics::gauge!(POOL_WAITING, l.clone()),
            acquire_wait: metrics::histogram!(POOL_ACQUIRE_WAIT, l.clone()),
            timeouts: metrics::counter!(POOL_TIMEOUTS, l.clone()),
            rejected: metrics::counter!(POOL_REJECTED, l),
            counts: Default::default(),
        }
    }

    /// Handles that record nothing (a pool built outside an executor, in tests).
    pub fn none() -> Self {
        PoolGauges {
            size: Gauge::noop(),
            idle: Gauge::noop(),
            in_use: Gauge::noop(),
            waiting: Gauge::noop(),
            acquire_wait: Histogram::noop(),
            timeouts: Counter::noop(),
            rejected: Counter::noop(),
            counts: Default::default(),
        }
    }

    /// The counts, poisoned or not (they are two integers: a panic elsewhere cannot leave them torn).
    fn counts(&self) -> std::sync::MutexGuard<'_, (i64, i64)> {
        self.counts.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Changes the counts and sets the three gauges from them before another change can. A connection in
    /// use is open: the size reported is never below the count in use, even when the open count lags (a
    /// driver pool's own count sampled while it was still opening one, as sqlx's can be; a connection
    /// counted closed a moment before it is counted back), so `size = idle + in_use` in every scrape.
    fn update(&self, change: impl FnOnce(&mut (i64, i64))) {
        let mut counts = self.counts();
        change(&mut counts);
        let (open, busy) = *counts;
        self.size.set(open.max(busy) as f64);
        self.in_use.set(busy as f64);
        self.idle.set((open - busy).max(0) as f64);
    }

    /// A connection was opened.
    pub fn opened(&self) {
        self.update(|c| c.0 += 1);
    }

    /// A connection was closed.
    pub fn closed(&self) {
        self.update(|c| c.0 -= 1);
    }

    /// The driver pool says it holds `open` connections (for pools that cannot count their own).
    pub fn open_now(&self, open: u32) {
        self.update(|c| c.0 = i64::from(open));
    }

    /// Connections open, by these counts.
    pub fn open_count(&self) -> i64 {
        self.counts().0
    }

    /// Whether, by these counts, a connection is open and not in use (a hint: another checkout may take
    /// it first).
    pub fn any_idle(&self) -> bool {
        let (open, busy) = *self.counts();
        open > busy
    }

    /// A connection was checked out.
    pub fn checked_out(&self) {
        self.update(|c| c.1 += 1);
    }

    /// A connection came back.
    pub fn returned(&self) {
        self.update(|c| c.1 -= 1);
    }
}

/// What a database's connections report through: its executor, engine, slow-statement threshold and
/// metric handles. Cheap to clone (one `Arc`).
#[derive(Clone)]
pub struct Observer(Arc<Inner>);

struct Inner {
    side: Side,
    dialect: Dialect,
    slow: Option<Duration>,
    durations: Vec<Histogram>,
    labels: Vec<Label>,
    buffered: Gauge,
    producer_wait: Histogram,
}

impl std::fmt::Debug for Observer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Observer")
            .field("side", &self.0.side)
            .field("dialect", &self.0.dialect)
            .field("slow", &self.0.slow)
            .finish()
    }
}

impl Observer {
    /// The observer of a database of `side` opened with `options`.
    pub fn new(side: Side, options: &ConnectOptions) -> Self {
        describe_metrics();
        let labels = labels(side, options.dialect);
        let durations = OPERATIONS
            .iter()
            .map(|op| {
                let mut l = labels.clone();
                l.push(Label::new("db_operation", *op));
                metrics::histogram!(STATEMENT_DURATION, l)
            })
            .collect();
        Observer(Arc::new(Inner {
            side,
            dialect: options.dialect,
            slow: options.slow_statement,
            durations,
            buffered: metrics::gauge!(STREAM_BUFFERED, labels.clone()),
            producer_wait: metrics::histogram!(STREAM_PRODUCER_WAIT, labels.clone()),
            labels,
        }))
    }

    /// The executor.
    pub fn side(&self) -> Side {
        self.0.side
    }

    /// The engine.
    pub fn dialect(&self) -> Dialect {
        self.0.dialect
    }

    /// Starts a statement's span (a child of the current span) and clock. End it with
    /// [`Statement::finish`]; on the async side, run the driver's future inside [`Statement::span`].
    pub fn statement<'a>(&self, sql: &'a str) -> Statement<'a> {
        self.statement_since(sql, Instant::now())
    }

    /// [`Observer::statement`] for a statement that began at `started` and already ran (a driver that
    /// decides whether to run it and runs it in one call): its span holds no other span.
    pub fn statement_since<'a>(&self, sql: &'a str, started: Instant) -> Statement<'a> {
        let op = operation_index(sql);
        let o = &self.0;
        let span = match tracing_on() {
            true => tracing::debug_span!(
                "statement",
                db.system = system(o.dialect),
                db.operation = OPERATIONS[op],
                db.statement = sql,
                rows = tracing::field::Empty,
                duration_ms = tracing::field::Empty,
                error.kind = tracing::field::Empty,
            ),
            false => Span::none(),
        };
        Statement {
            sql,
            op: op as u8,
            span,
            started,
        }
    }

    /// The account of one stream's buffered rows (see [`Buffered`]).
    pub fn stream(&self) -> Buffered {
        Buffered {
            observer: self.clone(),
            account: Arc::new((
                std::sync::atomic::AtomicI64::new(0),
                std::sync::atomic::AtomicU8::new(2),
            )),
        }
    }

    /// Counts a transaction attempt's outcome.
    fn transaction_ended(&self, outcome: &'static str) {
        let mut l = self.0.labels.clone();
        l.push(Label::new("outcome", outcome));
        metrics::counter!(TRANSACTIONS, l).increment(1);
    }
}

/// One stream's rows between its producer and its consumer, kept in the [`STREAM_BUFFERED`] gauge: the
/// producer counts a batch in before it hands it over ([`Buffered::produced`]), the consumer counts it out
/// as it takes it ([`Buffered::consumed`]). Each side says when it is done; the last one counts out
/// whatever was never taken (a stream dropped early). The producer's wait for the consumer goes to
/// [`STREAM_PRODUCER_WAIT`]. Clones share the account: one for each side.
#[derive(Clone)]
pub struct Buffered {
    observer: Observer,
    account: Arc<(std::sync::atomic::AtomicI64, std::sync::atomic::AtomicU8)>,
}

impl Buffered {
    /// `rows` were handed over.
    pub fn produced(&self, rows: i64) {
        use std::sync::atomic::Ordering::Relaxed;
        self.account.0.fetch_add(rows, Relaxed);
        self.observer.0.buffered.increment(rows as f64);
    }

    /// The consumer took `rows`.
    pub fn consumed(&self, rows: i64) {
        use std::sync::atomic::Ordering::Relaxed;
        self.account.0.fetch_sub(rows, Relaxed);
        self.observer.0.buffered.decrement(rows as f64);
    }

    /// The producer is done; it `waited` for the consumer this long in all.
    pub fn producer_done(&self, waited: Duration) {
        self.observer.0.producer_wait.record(waited.as_secs_f64());
        self.done();
    }

    /// The consumer is done (the stream ended or was dropped).
    pub fn consumer_done(&self) {
        self.done();
    }

    fn done(&self) {
        use std::sync::atomic::Ordering::AcqRel;
        if self.account.1.fetch_sub(1, AcqRel) == 1 {
            let left = self.account.0.swap(0, AcqRel);
            self.observer.0.buffered.decrement(left as f64);
        }
    }
}

/// A statement under way: its span and clock (see [`Observer::statement`]). It borrows only the
/// statement's text, so the connection that made it stays free to run it; [`Statement::finish`] takes
/// the observer again.
#[must_use = "a statement's span records its outcome in `finish`"]
pub struct Statement<'a> {
    sql: &'a str,
    op: u8,
    span: Span,
    started: Instant,
}

impl Statement<'_> {
    /// The span: entered around a blocking driver call, instrumenting an async one.
    pub fn span(&self) -> &Span {
        &self.span
    }

    /// Records what the statement did: `rows` (read, or else affected), its duration, the error kind if it
    /// failed; counts it in the metrics; warns if it was slow.
    pub fn finish<T>(self, observer: &Observer, result: &crate::Result<T>, rows: u64) {
        let took = self.started.elapsed();
        let o = &observer.0;
        o.durations[usize::from(self.op)].record(took.as_secs_f64());
        let (executor, db) = (o.side.name(), system(o.dialect));
        if !self.span.is_disabled() {
            self.span.record("rows", rows);
            self.span
                .record("duration_ms", took.as_secs_f64() * 1_000.0);
        }
        if let Err(e) = result {
            let kind = error_kind(e);
            self.span.record("error.kind", kind);
            let labels = [
                ("executor", executor),
                ("db_system", db),
                ("error_kind", kind),
            ];
            metrics::counter!(STATEMENT_ERRORS, &labels).increment(1);
        }
        if let Some(limit) = o.slow
            && took >= limit
        {
            metrics::counter!(STATEMENT_SLOW, "executor" => executor, "db_system" => db)
                .increment(1);
            let _in = self.span.enter();
            tracing::warn!(
                db.system = db,
                db.statement = self.sql,
                elapsed_ms = took.as_millis() as u64,
                slow_statement_ms = limit.as_millis() as u64,
                "slow statement"
            );
        }
    }
}

/// A `checkout` span (see the module's table): around an acquire, a child of the current span. Record
/// the wait with [`checked_out`].
pub fn checkout_span(dialect: Dialect) -> Span {
    if !tracing_on() {
        return Span::none();
    }
    tracing::debug_span!(
        "checkout",
        db.system = system(dialect),
        wait_ms = tracing::field::Empty
    )
}

/// Records on a [`checkout_span`] how long the acquire waited.
pub fn checked_out(span: &Span, waited: Duration) {
    if !span.is_disabled() {
        span.record("wait_ms", waited.as_secs_f64() * 1_000.0);
    }
}

/// The `error.kind` of a failure: the database's kind (`unique_violation`, `deadlock`, `no_answer`, …) or
/// the kind of tandem's own error.
pub fn error_kind(e: &Error) -> &'static str {
    match e.kind() {
        Some(kind) => kind.name(),
        None => e.variant_name(),
    }
}

/// A transaction attempt's span (see the module's table): opened where its BEGIN is sent, ended with
/// its outcome.
#[derive(Debug)]
pub struct TxSpan {
    span: Span,
    observer: Option<Observer>,
    ended: bool,
}

impl TxSpan {
    /// A span for attempt `attempt` (1-based) of a transaction with `opts`, a child of the current span.
    pub fn begin(observer: &Observer, opts: &TxOptions, attempt: u32) -> Self {
        let span = match tracing_on() {
            true => tracing::debug_span!(
                "transaction",
                db.system = system(observer.dialect()),
                isolation = opts.isolation.map_or("default", |i| i.sql()),
                read_only = opts.read_only,
                attempt,
                outcome = tracing::field::Empty,
            ),
            false => Span::none(),
        };
        TxSpan {
            span,
            observer: Some(observer.clone()),
            ended: false,
        }
    }

    /// The span, to enter (blocking) or instrument with (async) while the transaction's statements run.
    pub fn span(&self) -> &Span {
        &self.span
    }

    /// Records how the attempt ended: `commit` or `rollback` when its closing statements succeeded
    /// (`committing` says which they were), `failed` when they did not.
    pub fn end(&mut self, committing: bool, ended: &crate::Result<()>) {
        let outcome = match (ended, committing) {
            (Err(_), _) => "failed",
            (Ok(()), true) => "commit",
            (Ok(()), false) => "rollback",
        };
        self.record(outcome);
    }

    /// Records an attempt that failed before its end (its BEGIN failed): `failed`.
    pub fn failed(&mut self) {
        self.record("failed");
    }

    fn record(&mut self, outcome: &'static str) {
        if self.ended {
            return;
        }
        self.ended = true;
        self.span.record("outcome", outcome);
        if let Some(o) = &self.observer {
            o.transaction_ended(outcome);
        }
    }
}

impl Drop for TxSpan {
    /// A transaction dropped without an end (a cancelled future, a panic): `abandoned`.
    fn drop(&mut self) {
        self.record("abandoned");
    }
}

/// A blocking [`crate::Runner`] whose statements report through an [`Observer`]: for the paths that drive
/// a connection by its bare runner (the async executor's SQLite worker threads run whole transactions
/// there), so that their statements get the same spans and metrics as every other.
pub struct Observed<'a, R: ?Sized> {
    /// The connection.
    pub runner: &'a mut R,
    /// Where it reports.
    pub observer: &'a Observer,
}

impl<R: crate::Runner + ?Sized> crate::Runner for Observed<'_, R> {
    fn run(
        &mut self,
        r: &tandem_sql::Rendered,
        sink: &mut crate::plan::Sink<'_>,
    ) -> crate::Result<crate::Done> {
        observe_run(self.observer, &r.sql, |sink| self.runner.run(r, sink), sink)
    }

    fn simple(&mut self, sql: &str) -> crate::Result<()> {
        let s = self.observer.statement(sql);
        let result = s.span().in_scope(|| self.runner.simple(sql));
        s.finish(self.observer, &result, 0);
        result
    }

    fn in_transaction(&mut self) -> Option<bool> {
        self.runner.in_transaction()
    }

    fn run_borrowed(
        &mut self,
        statement: &tandem_sql::batch::BorrowedStatement<'_>,
    ) -> crate::Result<crate::Done> {
        let s = self.observer.statement(&statement.sql);
        let result = s.span().in_scope(|| self.runner.run_borrowed(statement));
        let rows = result.as_ref().map_or(0, |d| d.affected);
        s.finish(self.observer, &result, rows);
        result
    }

    fn copy_in(&mut self, copy: &crate::CopyIn) -> crate::Result<u64> {
        let sql = copy.statement();
        let s = self.observer.statement(&sql);
        let result = s.span().in_scope(|| self.runner.copy_in(copy));
        let rows = *result.as_ref().unwrap_or(&0);
        s.finish(self.observer, &result, rows);
        result
    }
}

/// Runs one statement on a blocking driver (`run` gets the sink to feed) under its span, counting the rows
/// handed to `sink`: the one wrapper of every synchronous statement path.
pub fn observe_run(
    observer: &Observer,
    sql: &str,
    run: impl FnOnce(&mut crate::plan::Sink<'_>) -> crate::Result<crate::Done>,
    sink: &mut crate::plan::Sink<'_>,
) -> crate::Result<crate::Done> {
    let s = observer.statement(sql);
    if s.span().is_disabled() {
        // No span to record rows on: the sink as it is.
        let result = run(sink);
        let rows = result.as_ref().map_or(0, |d| d.affected);
        s.finish(observer, &result, rows);
        return result;
    }
    let mut read = 0u64;
    let result = s.span().in_scope(|| {
        run(&mut |cells| {
            read += 1;
            sink(cells)
        })
    });
    let rows = match &result {
        Ok(done) if read == 0 => done.affected,
        _ => read,
    };
    s.finish(observer, &result, rows);
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A recorder that keeps each gauge's last value, by metric name (one pool per test).
    #[derive(Default)]
    struct LastValues(std::sync::Mutex<std::collections::HashMap<String, Arc<LastValue>>>);

    #[derive(Default)]
    struct LastValue(std::sync::atomic::AtomicU64);

    impl metrics::GaugeFn for LastValue {
        fn increment(&self, _: f64) {
            unreachable!("the pool's gauges are only set")
        }
        fn decrement(&self, _: f64) {
            unreachable!("the pool's gauges are only set")
        }
        fn set(&self, value: f64) {
            self.0
                .store(value.to_bits(), std::sync::atomic::Ordering::SeqCst);
        }
    }

    impl LastValues {
        fn get(&self, name: &str) -> f64 {
            let all = self.0.lock().unwrap();
            f64::from_bits(all[name].0.load(std::sync::atomic::Ordering::SeqCst))
        }
    }

    impl metrics::Recorder for LastValues {
        fn describe_counter(&self, _: metrics::KeyName, _: Option<Unit>, _: metrics::SharedString) {
        }
        fn describe_gauge(&self, _: metrics::KeyName, _: Option<Unit>, _: metrics::SharedString) {}
        fn describe_histogram(
            &self,
            _: metrics::KeyName,
            _: Option<Unit>,
            _: metrics::SharedString,
        ) {
        }
        fn register_counter(&self, _: &metrics::Key, _: &metrics::Metadata<'_>) -> Counter {
            Counter::noop()
        }
        fn register_gauge(&self, key: &metrics::Key, _: &metrics::Metadata<'_>) -> Gauge {
            let mut all = self.0.lock().unwrap();
            let value = all.entry(key.name().to_string()).or_default();
            Gauge::from_arc(Arc::clone(value))
        }
        fn register_histogram(&self, _: &metrics::Key, _: &metrics::Metadata<'_>) -> Histogram {
            Histogram::noop()
        }
    }

    /// Threads opening, checking out, returning and closing at once leave gauges that agree with each
    /// other and with the counts at every moment a reader can look (here: holding the counts' lock, as
    /// no scraper can, to see each update whole), whatever order the updates ran in.
    #[test]
    fn pool_gauges_agree_under_concurrent_updates() {
        use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
        let recorder = LastValues::default();
        let gauges = metrics::with_local_recorder(&recorder, || {
            PoolGauges::new(Side::Async, Dialect::Sqlite)
        });
        let writing = AtomicBool::new(true);
        let mut looks = 0u64;
        std::thread::scope(|s| {
            let writers: Vec<_> = (0..3)
                .map(|_| {
                    s.spawn(|| {
                        for _ in 0..20_000 {
                            gauges.opened();
                            gauges.checked_out();
                            gauges.returned();
                            gauges.closed();
                        }
                    })
                })
                .collect();
            s.spawn(|| {
                for w in writers {
                    w.join().unwrap();
                }
                writing.store(false, SeqCst);
            });
            while writing.load(SeqCst) {
                let counts = gauges.counts();
                let (size, idle, in_use) = (
                    recorder.get(POOL_SIZE),
                    recorder.get(POOL_IDLE),
                    recorder.get(POOL_IN_USE),
                );
                assert_eq!(
                    (size, in_use, idle),
                    (
                        counts.0 as f64,
                        counts.1 as f64,
                        (counts.0 - counts.1) as f64
                    ),
                    "after {looks} looks"
                );
                drop(counts);
                looks += 1;
            }
        });
        assert_eq!(
            (recorder.get(POOL_SIZE), recorder.get(POOL_IN_USE)),
            (0.0, 0.0),
            "all returned and closed"
        );
        assert!(looks > 0, "the reader looked while the writers ran");
    }

    /// A driver pool's count that lags behind a checkout (sampled at 0 while one connection is in use)
    /// is reported as at least the connections in use: size = idle + in use still.
    #[test]
    fn pool_size_is_never_below_in_use() {
        let recorder = LastValues::default();
        let gauges = metrics::with_local_recorder(&recorder, || {
            PoolGauges::new(Side::Async, Dialect::Sqlite)
        });
        gauges.open_now(0);
        gauges.checked_out();
        let look = || {
            (
                recorder.get(POOL_SIZE),
                recorder.get(POOL_IDLE),
                recorder.get(POOL_IN_USE),
            )
        };
        assert_eq!(look(), (1.0, 0.0, 1.0));
        gauges.open_now(2);
        assert_eq!(look(), (2.0, 1.0, 1.0));
        gauges.returned();
        assert_eq!(look(), (2.0, 2.0, 0.0));
    }

    #[test]
    fn operation_is_the_first_keyword() {
        for (sql, expected) in [
            ("SELECT 1", "SELECT"),
            ("  insert INTO t VALUES (?)", "INSERT"),
            ("(SELECT a FROM t) UNION (SELECT a FROM u)", "SELECT"),
            ("WITH x AS (SELECT 1) SELECT * FROM x", "WITH"),
            ("START TRANSACTION READ ONLY", "START"),
            // A simple query of several statements is named by its first.
            ("BEGIN; SET LOCAL lock_timeout = 5", "BEGIN"),
            ("VACUUM", "OTHER"),
            ("", "OTHER"),
            ("SAVEPOINT tandem_sp_1", "SAVEPOINT"),
            // A longer word is not the keyword.
            ("savepoints", "OTHER"),
            ("SET_x = 1", "OTHER"),
            // Only letters match letters.
            ("sel\x05ct 1", "OTHER"),
            // A keyword that ends the text.
            ("COMMIT", "COMMIT"),
            ("DROP TABLE IF EXISTS t", "DROP"),
            ("ROLLBACK TO SAVEPOINT tandem_sp_1", "ROLLBACK"),
            // MariaDB's per-statement settings name the statement they wrap.
            (
                "SET STATEMENT wsrep_sync_wait = 7, innodb_lock_wait_timeout = 30 FOR INSERT INTO t VALUES (?)",
                "INSERT",
            ),
            (
                "set statement wsrep_sync_wait = 1 for start transaction",
                "START",
            ),
            ("SET STATEMENT x = 1", "SET"),
            ("SET SESSION wait_timeout = 30", "SET"),
        ] {
            assert_eq!(operation(sql), expected, "{sql:?}");
        }
    }

    #[test]
    fn error_kinds_are_snake_case() {
        let db = Error::Database(crate::DbError::no_answer(
            Dialect::Postgres,
            "the server",
            Duration::from_secs(1),
        ));
        assert_eq!(error_kind(&db), "no_answer");
        assert_eq!(error_kind(&Error::RowNotFound), "row_not_found");
    }
}
