//! [`Transaction`]: one connection inside BEGIN … COMMIT, used from async closures. Commit on `Ok`, rollback
//! on `Err`, on panic and when the future is dropped before it finishes; savepoints for nested calls.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use tandem_core::observe::TxSpan;
use tandem_core::plan::{Done, Outcome, Plan, Step};
use tandem_core::{Error, Result, TxOptions, tx};
use tandem_pool::Permit;
use tandem_sql::{Dialect, Rendered};
use tokio::sync::{Mutex, MutexGuard};

use crate::conn::{Conn, as_attempt, attempt};
use crate::slot::{Read, Slot, gone, lock_slot, run_in_slot, stream_from_slot};
use crate::stream::RowStream;

/// An open transaction. Methods take `&self`, so an async closure can hand it to several repositories.
pub struct Transaction {
    slot: Mutex<Slot>,
    dialect: Dialect,
    depth: AtomicU32,
    /// Set once COMMIT or ROLLBACK ran; a transaction dropped before that is rolled back in the background.
    ended: AtomicBool,
    opts: TxOptions,
    /// This writer's turn at the database's writer gate (a SQLite file), given back when the transaction
    /// ends.
    turn: std::sync::Mutex<Option<Permit>>,
    /// Its span (see `tandem_core::observe`), which its statements' futures run inside; ended with its
    /// outcome.
    span: std::sync::Mutex<TxSpan>,
    /// The same span, to instrument with.
    current: tracing::Span,
}

impl Transaction {
    pub(crate) async fn begin(
        mut conn: Conn,
        opts: &TxOptions,
        turn: Option<Permit>,
    ) -> Result<Transaction> {
        let dialect = conn.dialect();
        // From here until the transaction has ended, dropping the connection does not pool it as it is.
        conn.in_transaction = true;
        conn.health.retriable_seen = false;
        let mut span = TxSpan::begin(&conn.observer, opts, attempt());
        let current = span.span().clone();
        for sql in tx::begin(dialect, opts) {
            if let Err(e) = in_span!(current, conn.simple(&sql)) {
                span.failed();
                return Err(e);
            }
        }
        Ok(Transaction {
            span: std::sync::Mutex::new(span),
            current,
            slot: Mutex::new(Slot::Here(Box::new(conn))),
            dialect,
            depth: AtomicU32::new(0),
            ended: AtomicBool::new(false),
            opts: opts.clone(),
            turn: std::sync::Mutex::new(turn),
        })
    }

    pub(crate) async fn end(&self, opts: &TxOptions, commit: bool) -> Result<()> {
        // The rule of `tx::Closing`: a failed COMMIT (SQLite busy can leave the transaction open) is
        // rolled back before the connection is reused; if that fails too, the error keeps both.
        let mut closing = tx::Closing::new(self.dialect, opts, commit);
        while let Some(sql) = closing.next(|| None) {
            let result = self.simple(&sql).await;
            closing.record(result);
        }
        let (result, ended) = closing.finish(|| None);
        (self.span.lock().unwrap_or_else(|p| p.into_inner())).end(commit, &result);
        if ended
            && let Ok(mut slot) = self.conn().await
            && let Slot::Here(c) = &mut *slot
        {
            c.in_transaction = false;
        }
        self.ended.store(true, Ordering::SeqCst);
        if ended {
            // The next writer may begin now.
            self.turn.lock().unwrap_or_else(|p| p.into_inner()).take();
        }
        result
    }

    /// Whether one of this transaction's statements failed with a retriable error.
    pub(crate) async fn retriable_seen(&self) -> bool {
        match self.conn().await.as_deref() {
            Ok(Slot::Here(c)) => c.health.retriable_seen,
            _ => false,
        }
    }

    async fn conn(&self) -> Result<MutexGuard<'_, Slot>> {
        lock_slot(&self.slot).await
    }

    async fn simple(&self, sql: &str) -> Result<()> {
        let mut slot = self.conn().await?;
        match &mut *slot {
            Slot::Here(c) => in_span!(self.current, c.simple(sql)),
            _ => Err(gone()),
        }
    }

    /// The transaction's span, for the caller's work inside it.
    pub(crate) fn span(&self) -> &tracing::Span {
        &self.current
    }

    /// The engine.
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    pub(crate) async fn stream<T>(&self, r: Rendered) -> Result<RowStream<T>> {
        stream_from_slot(&self.slot, r).await
    }

    /// A nested transaction: a savepoint, released on `Ok`, rolled back to on `Err`; the outer transaction
    /// goes on either way. [`Transaction::try_transaction`] takes a closure with an error type of the
    /// caller's own.
    pub async fn transaction<T>(&self, f: impl AsyncFnMut(&Transaction) -> Result<T>) -> Result<T> {
        self.try_transaction(f).await
    }

    /// [`Transaction::transaction`] for a closure that returns an error type of the caller's own.
    pub async fn try_transaction<T, E: From<Error>>(
        &self,
        mut f: impl AsyncFnMut(&Transaction) -> Result<T, E>,
    ) -> Result<T, E> {
        let depth = self.depth.fetch_add(1, Ordering::SeqCst) + 1;
        if let Err(e) = self.simple(&tx::savepoint(depth)).await {
            self.depth.fetch_sub(1, Ordering::SeqCst);
            return Err(e.into());
        }
        let result = f(self).await;
        self.depth.fetch_sub(1, Ordering::SeqCst);
        self.end_savepoint(depth, result.is_ok()).await?;
        result
    }

    /// Releases the savepoint, or rolls back to it and releases it ([`tx::Closing::savepoint`]); only a
    /// failed release after success is an error.
    async fn end_savepoint(&self, depth: u32, ok: bool) -> Result<()> {
        let mut closing = tx::Closing::savepoint(depth, ok);
        while let Some(sql) = closing.next(|| None) {
            let result = self.simple(&sql).await;
            closing.record(result);
        }
        let (ended, _) = closing.finish(|| None);
        if ok { ended } else { Ok(()) }
    }

    pub(crate) async fn run_steps(&self, steps: &std::sync::Arc<[Step]>) -> Result<Vec<Outcome>> {
        let mut slot = self.conn().await?;
        let Slot::Here(c) = &mut *slot else {
            return Err(gone());
        };
        in_span!(self.current, c.run_steps(steps))
    }

    /// Runs a plan inside this transaction (several steps under a savepoint). Written without closures so
    /// that its future is `Send`.
    pub(crate) async fn run_plan<T>(&self, plan: Plan<T>) -> Result<T> {
        if !plan.needs_transaction() {
            let outcomes = self.run_steps(&plan.steps).await?;
            return plan.finish(outcomes);
        }
        let depth = self.depth.fetch_add(1, Ordering::SeqCst) + 1;
        let result = async {
            self.simple(&tx::savepoint(depth)).await?;
            let outcomes = self.run_steps(&plan.steps).await;
            self.end_savepoint(depth, outcomes.is_ok()).await?;
            outcomes
        }
        .await;
        self.depth.fetch_sub(1, Ordering::SeqCst);
        plan.finish(result?)
    }

    /// Commits the transaction (see [`crate::Database::begin`]).
    pub async fn commit(self) -> Result<()> {
        let opts = self.opts.clone();
        self.end(&opts, true).await
    }

    /// Rolls the transaction back (see [`crate::Database::begin`]).
    pub async fn rollback(self) -> Result<()> {
        let opts = self.opts.clone();
        self.end(&opts, false).await
    }
}

impl crate::Executor for Transaction {
    fn dialect(&self) -> Dialect {
        self.dialect
    }
}

impl crate::executor::sealed::Run for Transaction {
    async fn run_statement<S: crate::conn::Sink>(&self, r: Rendered, sink: &mut S) -> Result<Done> {
        in_span!(self.current, run_in_slot(&self.slot, &r, sink, Read::Any))
    }

    async fn run_key_read<S: crate::conn::Sink>(&self, r: Rendered, sink: &mut S) -> Result<Done> {
        in_span!(self.current, run_in_slot(&self.slot, &r, sink, Read::Key))
    }

    async fn run<T: Send>(&self, plan: Plan<T>) -> Result<T> {
        in_span!(self.current, self.run_plan(plan))
    }

    async fn stream_rendered<T: Send>(&self, r: Rendered) -> Result<RowStream<T>> {
        in_span!(self.current, self.stream(r))
    }
}

/// Runs `attempt` again while it fails with a retriable error (serialization failure, deadlock, lock
/// timeout, SQLite busy), at most `opts.max_attempts` times in all — the rule
/// [`crate::Database::transaction_with`] applies, for code that opens its transactions by hand with
/// [`crate::Database::begin`]. The closure returns a plain future, so when it is `Send` (it captures
/// `Sync` data only) the whole retry is `Send` and can run inside `tokio::spawn`, which the closure-taking
/// `transaction` cannot promise on stable Rust. Each attempt should begin its own transaction.
///
/// The error may be the caller's own type: an attempt is run again when it is tandem's [`Error`] and
/// retriable (as with [`crate::Database::try_transaction`], whose closure returns its own error type).
pub async fn retry<T, E, F, Fut>(opts: &TxOptions, mut attempt: F) -> std::result::Result<T, E>
where
    E: 'static,
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = std::result::Result<T, E>>,
{
    let mut attempts = tandem_core::Attempts::new(opts);
    loop {
        match as_attempt(attempts.made() + 1, attempt()).await {
            Err(e) if attempts.again(&e, false) => {
                tokio::time::sleep(attempts.pause()).await;
                continue;
            }
            other => return other,
        }
    }
}

impl Drop for Transaction {
    /// Dropped before COMMIT or ROLLBACK (the future was cancelled, or the closure panicked): the
    /// connection, here or still with a stream, is dropped inside its transaction, and `Conn`'s drop makes
    /// sure it does not go back to the pool that way (closed, or rolled back first).
    fn drop(&mut self) {
        if !self.ended.load(Ordering::SeqCst) {
            tracing::debug!(dialect = %self.dialect, "transaction dropped unfinished; its connection is reset");
        }
    }
}
