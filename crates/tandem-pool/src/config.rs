//! [`PoolConfig`]: the one set of pool settings both executors take, with the two presets bluetape4k-exposed
//! defines (`default()` and `high_throughput(max_size)`).

use std::time::Duration;

/// Pool settings, the same for the blocking (r2d2) and the async (sqlx) executor.
///
/// Every field is plain data with its default documented on it; build one with
/// `PoolConfig { max_size: 20, ..PoolConfig::default() }` or start from a preset.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolConfig {
    /// Most connections open at once. Default 10 (forced to 1 for SQLite in memory, where every connection
    /// is a database of its own).
    pub max_size: u32,
    /// Connections opened before the pool reports ready (warm-up), and kept idle afterwards. Default none.
    pub min_idle: Option<u32>,
    /// How long one acquire may wait, queue and connect included, before it fails with a timeout error.
    /// Default 30 s. Always finite: an acquire that could wait forever hides an overloaded database.
    pub acquire_timeout: Duration,
    /// Acquires allowed to wait at once; one more fails at once with a "saturated" error instead of joining
    /// the queue. Default `Some(1_000)`. `None` lets the queue grow without bound: acquires then queue inside the
    /// driver's pool (r2d2's and sqlx's own behaviour), which is there for comparison — or, on the async
    /// executor's own pools (its default drivers), in the gate, which is what bounds those pools.
    pub max_pending: Option<u32>,
    /// A connection idle for this long is closed (down to `min_idle`). Default 10 min; `None` keeps idle
    /// connections open. (The blocking executor keeps a SQLite connection with the thread that used it
    /// last; kept there, it counts as in use, so neither this nor `max_lifetime` closes it.)
    pub idle_timeout: Option<Duration>,
    /// A connection older than this is closed when it next comes back to the pool. Default 30 min; `None`
    /// keeps connections for ever.
    pub max_lifetime: Option<Duration>,
    /// How long opening one connection may take, handshake and authentication included (a server that
    /// accepts the TCP connection and never answers fails with a connect-timeout error naming it), and how
    /// long warm-up may take to open `min_idle` connections before building the pool fails. Default 10 s.
    /// A connection opened for an acquire also stays within what is left of `acquire_timeout`: past that,
    /// the acquire fails with its timeout error even when this is longer.
    pub connect_timeout: Duration,
    /// Check each connection with a round trip before handing it out, replacing one that fails. Default
    /// false: a connection that broke while in use is closed when it comes back, so only connections killed
    /// while idle reach a caller, once each, as a connection-lost error.
    pub validate_on_checkout: bool,
}

impl Default for PoolConfig {
    fn default() -> Self {
        PoolConfig {
            max_size: 10,
            min_idle: None,
            acquire_timeout: Duration::from_secs(30),
            max_pending: Some(1_000),
            idle_timeout: Some(Duration::from_secs(10 * 60)),
            max_lifetime: Some(Duration::from_secs(30 * 60)),
            connect_timeout: Duration::from_secs(10),
            validate_on_checkout: false,
        }
    }
}

impl PoolConfig {
    // ANCHOR: high_throughput
    /// The preset for services under load (bluetape4k-exposed's `R2dbcPoolConfig.highThroughput()`): `max_size`
    /// connections, warm-up of min(max_size, max(2 × CPUs, 16)), at most 4 × max_size acquires waiting,
    /// acquire timeout 3 s, idle timeout 5 min, lifetime 30 min, warm-up bounded at 5 s.
    pub fn high_throughput(max_size: u32) -> PoolConfig {
        let max_size = max_size.max(1);
        PoolConfig {
            max_size,
            min_idle: Some(warm_up_size(max_size, cpus())),
            acquire_timeout: Duration::from_secs(3),
            max_pending: Some(max_size.saturating_mul(4)),
            idle_timeout: Some(Duration::from_secs(5 * 60)),
            max_lifetime: Some(Duration::from_secs(30 * 60)),
            connect_timeout: Duration::from_secs(5),
            validate_on_checkout: false,
        }
    }
    // ANCHOR_END: high_throughput

    /// The size in force: at least one connection.
    pub fn effective_max_size(&self) -> u32 {
        self.max_size.max(1)
    }

    /// The warm-up in force: `min_idle`, never above the size.
    pub fn effective_min_idle(&self) -> u32 {
        self.min_idle.unwrap_or(0).min(self.effective_max_size())
    }

    /// The settings of a standby's pool beside this one: the same, with the wait for a connection bounded
    /// by the connect timeout (a read-only transaction goes back to the primary after it).
    pub fn for_standby(&self) -> PoolConfig {
        PoolConfig {
            acquire_timeout: self.acquire_timeout.min(self.connect_timeout),
            ..self.clone()
        }
    }
}

/// The high-throughput warm-up: min(max_size, max(2 × cpus, 16)).
pub fn warm_up_size(max_size: u32, cpus: u32) -> u32 {
    max_size.min(cpus.saturating_mul(2).max(16))
}

fn cpus() -> u32 {
    std::thread::available_parallelism().map_or(1, |n| u32::try_from(n.get()).unwrap_or(u32::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The high-throughput preset follows `R2dbcPoolConfig.highThroughput()`'s rules for every size.
    #[test]
    fn high_throughput_preset() {
        assert_eq!(warm_up_size(4, 2), 4);
        assert_eq!(warm_up_size(60, 2), 16);
        assert_eq!(warm_up_size(60, 16), 32);
        assert_eq!(warm_up_size(20, 16), 20);
        let c = PoolConfig::high_throughput(30);
        assert_eq!(c.max_size, 30);
        assert_eq!(c.min_idle, Some(warm_up_size(30, cpus())));
        assert_eq!(c.max_pending, Some(120));
        assert_eq!(c.acquire_timeout, Duration::from_secs(3));
        assert_eq!(c.idle_timeout, Some(Duration::from_secs(300)));
        assert_eq!(c.max_lifetime, Some(Duration::from_secs(1800)));
        // A zero size still gives a usable pool.
        assert_eq!(PoolConfig::high_throughput(0).max_size, 1);
        assert_eq!(PoolConfig::high_throughput(0).max_pending, Some(4));
    }

    /// The default bounds its queue and its waits.
    #[test]
    fn default_is_bounded() {
        let d = PoolConfig::default();
        assert_eq!(d.max_pending, Some(1_000));
        assert!(d.acquire_timeout < Duration::from_secs(60));
        assert_eq!(d.effective_min_idle(), 0);
        let odd = PoolConfig {
            max_size: 0,
            min_idle: Some(5),
            ..d
        };
        assert_eq!((odd.effective_max_size(), odd.effective_min_idle()), (1, 1));
    }
}
