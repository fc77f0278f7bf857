//! Stage 7's specification: the configuration, then the pool it builds under a crowd of requests — on
//! SQLite, and on PostgreSQL and MariaDB when they can be reached.

use workshop_07_pools as stage;

use std::sync::Mutex;
use std::time::Duration;

use stage::{Response, respond, service_pool};
use tandem_blocking::{Database, Error, PoolConfig};
use workshop_support::{ENGINES, db};

/// The configuration says what the chapter asks, for small and large pools.
fn configuration() {
    for max in [1u32, 2, 7, 40] {
        let c = service_pool(max);
        let d = PoolConfig::default();
        assert_eq!(c.max_size, max);
        assert_eq!(c.min_idle, Some((max / 2).max(1)), "max {max}");
        assert_eq!(c.max_pending, Some(2 * max));
        assert_eq!(c.acquire_timeout, Duration::from_millis(500));
        assert!(c.validate_on_checkout);
        assert_eq!(
            (c.idle_timeout, c.max_lifetime),
            (d.idle_timeout, d.max_lifetime)
        );
    }
    assert_eq!(service_pool(0).max_size, 1, "at least one connection");
}

/// Each error gets its answer.
fn answers() {
    let saturated = Error::PoolSaturated {
        pending: 8,
        max_size: 4,
    };
    assert_eq!(respond(&saturated), Response::ServiceUnavailable);
    let slow = Error::PoolTimeout {
        waited: Duration::from_millis(2_500),
        max_size: 4,
    };
    assert_eq!(
        respond(&slow),
        Response::RetryAfter(Duration::from_millis(2_500))
    );
    let fast = Error::PoolTimeout {
        waited: Duration::from_millis(500),
        max_size: 4,
    };
    assert_eq!(respond(&fast), Response::RetryAfter(Duration::from_secs(1)));
    assert_eq!(respond(&Error::RowNotFound), Response::InternalError);
}

/// Thirty requests at once against `service_pool(2)`, each holding its connection 300 ms: two are
/// served at once, four wait, the rest are refused at once — and every refusal is answered 503.
fn a_crowd_meets_the_pool() {
    for dialect in ENGINES {
        let Some(target) = db::target(dialect, "w7crowd") else {
            continue;
        };
        let db = Database::open(target.options.clone(), service_pool(2)).unwrap();
        assert_eq!(db.pool_metrics().size, 1, "{dialect}: warm before ready");
        let answers = Mutex::new(Vec::new());
        std::thread::scope(|s| {
            for _ in 0..30 {
                s.spawn(|| {
                    let answer = match db.checkout() {
                        Ok(conn) => {
                            std::thread::sleep(Duration::from_millis(300));
                            drop(conn);
                            None
                        }
                        Err(e) => Some(respond(&e)),
                    };
                    answers.lock().unwrap().push(answer);
                });
            }
        });
        let answers = answers.into_inner().unwrap();
        let served = answers.iter().filter(|a| a.is_none()).count();
        let shed = answers
            .iter()
            .filter(|a| **a == Some(Response::ServiceUnavailable))
            .count();
        let m = db.pool_metrics();
        assert_eq!(
            m.rejected as usize, shed,
            "{dialect}: every refusal was answered 503: {m:?}"
        );
        assert!(
            shed >= 20,
            "{dialect}: most of the crowd was turned away at once ({shed})"
        );
        assert!(served >= 2, "{dialect}: the pool still served ({served})");
        assert!(m.size <= 2, "{dialect}: never more than two connections");
    }
}

workshop_harness::checks!(configuration, answers, a_crowd_meets_the_pool,);
