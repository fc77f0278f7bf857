//! The pool of tandem's own connections — the native drivers: rusqlite worker threads (`sqlite`),
//! tokio-postgres connections (`postgres`), mysql_async connections (`mysql`) — as opposed to sqlx's pools,
//! which open, check and close their connections themselves.
//!
//! The idle connections sit on a [`Shelf`] (`tandem-pool`); the executor's [`Admission`] gate — always on
//! for these pools, see [`Admission::bounding`] — is what keeps the connections in use at `max_size`. So a
//! checkout passes one gate, not two: the gate's permit is a right to a connection, an idle one or a new
//! one, and the pool has no waiting of its own. An [`Opener`] says how one connection is opened and whether
//! it is still fit.

use std::sync::Arc;
use std::time::Instant;

use tandem_core::{ConnectOptions, Error, Result};
use tandem_pool::{Admission, Lent, PoolConfig, Shelf};

/// How one connection of a native pool is opened, and whether one is still fit to hand out.
pub(crate) trait Opener: Send + Sync + 'static {
    /// The connection.
    type Conn: Send + 'static;
    /// Opens one (within the pool's connect timeout: a failure is a typed connection error).
    fn open(&self) -> impl std::future::Future<Output = Result<Self::Conn>> + Send;
    /// Whether it can take another caller.
    fn fit(conn: &Self::Conn) -> bool;
    /// Whether [`Opener::answers`] asks the connection anything: when it cannot say no, a checkout never
    /// checks (no timer, no box), `validate_on_checkout` or not.
    const ASKS: bool = true;
    /// Whether an idle connection that may be on a server gone away still answers, checked within a
    /// bound of its own (a suspect one at checkout, see `Database::acquire_native`).
    fn answers(conn: &mut Self::Conn) -> impl std::future::Future<Output = bool> + Send {
        let _ = conn;
        std::future::ready(true)
    }
}

/// The connections of one database: the idle ones, and how to open another.
pub(crate) struct NativePool<O: Opener> {
    opener: O,
    shelf: Arc<Shelf<O::Conn>>,
}

/// A connection checked out of its pool: it goes back when dropped (closed instead when it is unfit then;
/// `discard` closes it at once).
pub(crate) type Pooled<O> = Lent<<O as Opener>::Conn>;

impl<O: Opener> NativePool<O> {
    /// Opens one connection (so that a bad URL is an error here), then warms up to `min_idle` within
    /// `connect_timeout`. Idle connections are handed out most recently used first: a SQLite worker that
    /// just answered is still polling for its next call, a server connection's caches are warm; first in,
    /// first out kept every worker spinning, and `tandem-bench pool` (hold 0, more workers than tasks)
    /// measured it at about half the throughput.
    pub(crate) async fn open(
        opener: O,
        options: &ConnectOptions,
        config: PoolConfig,
        admission: &Admission,
    ) -> Result<Arc<NativePool<O>>> {
        let wanted = config.effective_min_idle();
        let connect_timeout = config.connect_timeout;
        let shelf = Shelf::new(
            &config,
            admission.gauges().clone(),
            admission.created_counter(),
            O::fit,
        );
        let pool = NativePool { opener, shelf };
        drop(pool.open_one().await?);
        let started = Instant::now();
        let more = (1..wanted).map(|_| pool.open_one());
        let failed = |opened: usize, cause: Error| Error::PoolWarmUp {
            opened: opened as u32,
            wanted,
            waited: started.elapsed(),
            last_error: Some(Box::new(cause)),
        };
        let warm = tokio::time::timeout(connect_timeout, futures_util::future::join_all(more))
            .await
            .map_err(|_| failed(1, Error::connect_timeout(options, connect_timeout)))?;
        let opened = 1 + warm.iter().filter(|w| w.is_ok()).count();
        for w in warm {
            drop(w.map_err(|e| failed(opened, e))?);
        }
        Ok(Arc::new(pool))
    }

    /// An idle connection at once — no timer, no clock read beyond what `max_lifetime` and `idle_timeout`
    /// ask — or `None` when none is idle (then the caller, holding the gate's permit, opens one).
    pub(crate) fn take_idle(&self) -> Option<Pooled<O>> {
        self.shelf.take()
    }

    /// A new connection (within the opener's connect timeout).
    pub(crate) async fn open_one(&self) -> Result<Pooled<O>> {
        // Boxed: a driver's connect nests deep (a TLS handshake, a host walk), tens of KiB of state a
        // caller's future would otherwise carry inline for its whole life (see
        // `Database::acquire_unobserved`).
        let conn = Box::pin(self.opener.open()).await?;
        Ok(self.shelf.lend_new(conn))
    }

    /// Connections open and idle.
    pub(crate) fn state(&self) -> (u32, u32) {
        self.shelf.state()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};
    use tandem_core::observe::PoolGauges;

    /// Connections numbered in the order they are opened.
    struct Numbered(AtomicU64);

    impl Opener for Numbered {
        type Conn = u64;
        async fn open(&self) -> Result<u64> {
            Ok(self.0.fetch_add(1, Ordering::Relaxed) + 1)
        }
        fn fit(_: &u64) -> bool {
            true
        }
    }

    /// Warm-up opens `min_idle` connections — not one more, though the first is opened alone to try the
    /// URL — and leaves them idle; a checkout then takes one of them, not a new one.
    #[test]
    fn warm_up_opens_min_idle() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let config = PoolConfig {
                min_idle: Some(3),
                ..PoolConfig::default()
            };
            let admission = Admission::bounding(&config, PoolGauges::none());
            let options = ConnectOptions::parse("sqlite::memory:").unwrap();
            let p = NativePool::open(Numbered(AtomicU64::new(0)), &options, config, &admission)
                .await
                .unwrap();
            assert_eq!(p.state(), (3, 3));
            assert!(*p.take_idle().unwrap() <= 3);
            assert_eq!(admission.created_counter().load(Ordering::Relaxed), 3);
        });
    }
}
