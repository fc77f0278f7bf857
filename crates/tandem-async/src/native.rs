//! The pool of tandem's own connections — the native drivers: rusqlite worker threads (`sqlite`),
//! tokio-postgres connections (`postgres`), mysql_async connections (`mysql`) — as opposed to sqlx's pools, which open, check and close their
//! connections themselves.
//!
//! deadpool keeps the idle connections (most recently used first), the slots and the waits, behind the
//! executor's [`Admission`] gate; an [`Opener`] says how one connection is opened and whether it is still
//! fit. Before an idle connection is reused it is closed instead when it is unfit, older than
//! `max_lifetime`, or idle past `idle_timeout` above `min_idle`. Each connection counts itself in the
//! pool's gauges from its opening to its end, so a checkout need not ask deadpool for the pool's size.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use deadpool::managed::{Metrics, PoolError, RecycleError, RecycleResult};

use tandem_core::observe::PoolGauges;
use tandem_core::{ConnectOptions, Error, Result};
use tandem_pool::{Admission, PoolConfig};

/// How one connection of a native pool is opened, and whether one is still fit to hand out.
pub(crate) trait Opener: Send + Sync + 'static {
    /// The connection.
    type Conn: Send;
    /// Opens one (within the pool's connect timeout: a failure is a typed connection error).
    fn open(&self) -> impl std::future::Future<Output = Result<Self::Conn>> + Send;
    /// Whether it can take another caller.
    fn fit(conn: &Self::Conn) -> bool;
    /// What the pool is, for its errors (`"the SQLite pool"`).
    const WHAT: &'static str;
    /// Whether an idle connection that may be on a server gone away still answers, checked within a
    /// bound of its own (a suspect one at checkout, see `Database::acquire_native`).
    #[cfg_attr(not(any(feature = "postgres", feature = "mysql")), allow(dead_code))]
    fn answers(conn: &mut Self::Conn) -> impl std::future::Future<Output = bool> + Send {
        let _ = conn;
        std::future::ready(true)
    }
}

/// Opens and checks connections for deadpool.
pub(crate) struct Manager<O> {
    opener: O,
    config: PoolConfig,
    created: Arc<AtomicU64>,
    /// The pool's metrics: each connection counts itself opened here, and closed when deadpool drops it
    /// (the count `idle_timeout`'s "above `min_idle`" reads too).
    gauges: Arc<PoolGauges>,
}

/// A pooled connection, counted in its pool's gauges from its start to its end (as the blocking pool's
/// connections count themselves). Set `unfit` and it is closed at its next checkout.
pub(crate) struct Counted<C> {
    pub(crate) conn: C,
    pub(crate) unfit: bool,
    gauges: Arc<PoolGauges>,
}

impl<C> std::ops::Deref for Counted<C> {
    type Target = C;
    fn deref(&self) -> &C {
        &self.conn
    }
}

impl<C> std::ops::DerefMut for Counted<C> {
    fn deref_mut(&mut self) -> &mut C {
        &mut self.conn
    }
}

impl<C> Drop for Counted<C> {
    fn drop(&mut self) {
        self.gauges.closed();
    }
}

impl<O: Opener> deadpool::managed::Manager for Manager<O> {
    type Type = Counted<O::Conn>;
    type Error = Error;

    async fn create(&self) -> Result<Counted<O::Conn>> {
        // Boxed: a driver's connect nests deep (a TLS handshake, a host walk), and every future that may
        // open a connection would carry it, past the compiler's default recursion limit for layouts.
        let conn = Box::pin(self.opener.open()).await?;
        self.created.fetch_add(1, Ordering::Relaxed);
        self.gauges.opened();
        Ok(Counted {
            conn,
            unfit: false,
            gauges: self.gauges.clone(),
        })
    }

    async fn recycle(&self, c: &mut Counted<O::Conn>, m: &Metrics) -> RecycleResult<Error> {
        let old = self.config.max_lifetime.is_some_and(|l| m.age() >= l);
        let idle_too_long = self.config.idle_timeout.is_some_and(|t| m.last_used() >= t)
            && self.gauges.open_count() > i64::from(self.config.effective_min_idle());
        if c.unfit || !O::fit(&c.conn) || old || idle_too_long {
            return Err(RecycleError::message(
                "closed: unfit, too old or idle too long",
            ));
        }
        Ok(())
    }
}

/// The connections of one database: a deadpool pool of `max_size`.
pub(crate) struct NativePool<O: Opener>(deadpool::managed::Pool<Manager<O>>);

/// A connection checked out of its pool; it goes back when dropped (an unfit one is closed at its next
/// checkout; [`deadpool::managed::Object::take`] closes it at once).
pub(crate) type Pooled<O> = deadpool::managed::Object<Manager<O>>;

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
        let manager = Manager {
            opener,
            created: admission.created_counter(),
            gauges: admission.gauges().clone(),
            config,
        };
        let (max, wanted) = (
            manager.config.effective_max_size() as usize,
            manager.config.effective_min_idle(),
        );
        let connect_timeout = manager.config.connect_timeout;
        let pool = deadpool::managed::Pool::builder(manager)
            .max_size(max)
            .queue_mode(deadpool::managed::QueueMode::Lifo)
            .runtime(deadpool::Runtime::Tokio1)
            .build()
            .map_err(|e| Error::Internal(format!("building {}: {e}", O::WHAT)))?;
        let pool = NativePool(pool);
        drop(pool.checkout(None).await?.expect("no wait bound"));
        let started = Instant::now();
        let more = (0..wanted).map(|_| pool.checkout(None));
        let failed = |opened: usize, cause: Error| Error::PoolWarmUp {
            opened: opened as u32,
            wanted,
            waited: started.elapsed(),
            last_error: Some(Box::new(cause)),
        };
        let warm = tokio::time::timeout(connect_timeout, futures_util::future::join_all(more))
            .await
            .map_err(|_| failed(1, Error::connect_timeout(options, connect_timeout)))?;
        let opened = warm.iter().filter(|w| matches!(w, Ok(Some(_)))).count();
        for w in warm {
            w.map_err(|e| failed(opened, e))?;
        }
        Ok(Arc::new(pool))
    }

    /// A connection within `wait` (`None`: as long as it takes), or `None` when none became free in time:
    /// an idle one, or a new one when none is idle.
    pub(crate) async fn checkout(&self, wait: Option<Duration>) -> Result<Option<Pooled<O>>> {
        let timeouts = deadpool::managed::Timeouts {
            wait,
            ..deadpool::managed::Timeouts::default()
        };
        // Boxed: the get may open a connection (connect, TLS), tens of KiB of state a caller's future would
        // carry inline for its whole life (see `Database::acquire_unobserved`).
        match Box::pin(self.0.timeout_get(&timeouts)).await {
            Ok(c) => Ok(Some(c)),
            Err(PoolError::Timeout(_)) => Ok(None),
            Err(PoolError::Backend(e)) => Err(e),
            Err(e) => Err(Error::Internal(format!("{}: {e}", O::WHAT))),
        }
    }

    /// An idle connection at once, with no clock read and no timer, or `None` when none is idle (then
    /// [`NativePool::checkout`] waits, or opens one). Asks deadpool only when the pool's own counts say a
    /// connection is idle: a non-waiting `timeout_get` would open one rather than report none.
    pub(crate) async fn checkout_idle(&self) -> Result<Option<Pooled<O>>> {
        if !self.0.manager().gauges.any_idle() {
            return Ok(None);
        }
        self.checkout(Some(Duration::ZERO)).await
    }

    /// Connections open and idle.
    pub(crate) fn state(&self) -> (u32, u32) {
        let s = self.0.status();
        (s.size as u32, s.available as u32)
    }
}
