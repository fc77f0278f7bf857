//! Stage 9's specification: the figures against a plain oracle, the guide against its table.

use workshop_09_choosing as stage;

use std::time::Duration;

use proptest::prelude::*;
use stage::{Model, Workload, choose, median, ops_per_sec};

proptest! {
    /// The median is the middle of the sorted samples, whatever their order.
    fn median_is_the_middle(mut ms in proptest::collection::vec(0u64..10_000, 1..50)) {
        let samples: Vec<Duration> = ms.iter().map(|m| Duration::from_micros(*m)).collect();
        ms.sort();
        let n = ms.len();
        let expected = if n % 2 == 1 { ms[n / 2] * 2 } else { ms[n / 2 - 1] + ms[n / 2] };
        // Compared in half-microseconds, so the mean of two middles is exact.
        let got = median(&samples).unwrap();
        prop_assert_eq!(got.as_nanos() * 2, u128::from(expected) * 1_000);
    }
}

/// No samples, no median; one outlier does not move it.
fn median_edges() {
    assert_eq!(median(&[]), None);
    let ms = |v: &[u64]| {
        v.iter()
            .map(|m| Duration::from_millis(*m))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        median(&ms(&[10, 11, 10_000])),
        Some(Duration::from_millis(11))
    );
}

/// Operations per second, with the edges.
fn throughput() {
    assert_eq!(ops_per_sec(500, Duration::from_millis(250)), 2_000.0);
    assert_eq!(ops_per_sec(0, Duration::ZERO), 0.0);
    assert_eq!(ops_per_sec(3, Duration::ZERO), f64::INFINITY);
}

/// The guide's table, row by row.
fn the_selection_guide() {
    let w = |concurrent_requests, async_stack, batch_heavy, team_knows_threads| Workload {
        concurrent_requests,
        async_stack,
        batch_heavy,
        team_knows_threads,
    };
    let table = [
        (w(50, true, true, true), Model::Async),
        (w(50, false, true, false), Model::Blocking),
        (w(5_000, false, true, false), Model::Blocking),
        (w(5_000, false, false, true), Model::Async),
        (w(1_000, false, false, true), Model::Blocking),
        (w(200, false, false, false), Model::Async),
        (w(200, false, false, true), Model::Blocking),
    ];
    for (workload, model) in table {
        assert_eq!(choose(&workload), model, "{workload:?}");
    }
}

workshop_harness::checks!(
    median_is_the_middle,
    median_edges,
    throughput,
    the_selection_guide,
);
