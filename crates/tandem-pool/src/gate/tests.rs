//! Deterministic tests of the gate: saturation, timeout, arrival order, who takes a freed permit, the
//! bound on passing a waiter over, cancellation, metrics.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::*;

fn gate(max_size: usize, max_pending: usize, timeout_ms: u64) -> Gate {
    Gate::new(GateConfig {
        max_size,
        max_pending,
        timeout: Duration::from_millis(timeout_ms),
    })
}

/// Waits until `n` acquires are queued.
fn until_waiting(g: &Gate, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while g.metrics().waiting != n {
        assert!(Instant::now() < deadline, "never saw {n} waiters");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// A full queue refuses at once with `Saturated`; the refusal is counted.
#[test]
fn saturation_fails_fast() {
    let g = gate(1, 1, 5_000);
    let held = g.acquire_blocking().unwrap();
    let waiter = {
        let g = g.clone();
        std::thread::spawn(move || g.acquire_blocking().map(drop))
    };
    until_waiting(&g, 1);
    let started = Instant::now();
    let err = g.acquire_blocking().unwrap_err();
    assert!(
        started.elapsed() < Duration::from_millis(50),
        "rejected at once"
    );
    assert_eq!(
        err,
        AdmissionError::Saturated {
            pending: 1,
            max_size: 1
        }
    );
    assert_eq!(g.metrics().counters.rejected, 1);
    drop(held);
    waiter.join().unwrap().unwrap();
}

/// No permit within the timeout is a `Timeout` carrying the wait; the waiter leaves the queue.
#[test]
fn timeout_carries_the_wait() {
    let g = gate(1, 4, 60);
    let _held = g.acquire_blocking().unwrap();
    let err = g.acquire_blocking().unwrap_err();
    let AdmissionError::Timeout { waited, max_size } = err else {
        panic!("expected a timeout, got {err}")
    };
    assert!(
        waited >= Duration::from_millis(60) && waited < Duration::from_secs(2),
        "{waited:?}"
    );
    assert_eq!(max_size, 1);
    let m = g.metrics();
    assert_eq!((m.waiting, m.counters.timed_out), (0, 1));
}

/// Waiters are served in arrival order, threads and tasks in the same queue.
#[test]
fn first_come_first_served() {
    let g = gate(1, 16, 5_000);
    let held = g.acquire_blocking().unwrap();
    let order = Arc::new(Mutex::new(Vec::new()));
    let rt = threaded_runtime();
    let mut threads = Vec::new();
    let mut tasks = Vec::new();
    for i in 0..8 {
        let (mine, order) = (g.clone(), order.clone());
        if i % 2 == 0 {
            threads.push(std::thread::spawn(move || {
                let p = mine.acquire_blocking().unwrap();
                order.lock().unwrap().push(i);
                drop(p);
            }));
        } else {
            tasks.push(rt.spawn(async move {
                let p = mine.acquire().await.unwrap();
                order.lock().unwrap().push(i);
                drop(p);
            }));
        }
        until_waiting(&g, i + 1);
    }
    drop(held);
    for t in threads {
        t.join().unwrap();
    }
    for t in tasks {
        rt.block_on(t).unwrap();
    }
    assert_eq!(*order.lock().unwrap(), (0..8).collect::<Vec<_>>());
}

/// A permit free now, without waiting or queueing (what a running caller's acquire does first).
fn take_now(g: &Gate) -> Option<Permit> {
    g.inner.take_available().then(|| g.permit())
}

/// A task's acquire that has joined the queue: polled once, by hand, so it looks only when the test says.
fn queued_task(
    rt: &tokio::runtime::Runtime,
    g: &Gate,
) -> std::pin::Pin<Box<impl Future<Output = Result<Permit, AdmissionError>> + use<>>> {
    let g = g.clone();
    let mut fut = Box::pin(async move { g.acquire().await });
    rt.block_on(async {
        assert!(poll_once(&mut fut).is_pending());
    });
    fut
}

fn poll_once<F: Future + Unpin>(fut: &mut F) -> std::task::Poll<F::Output> {
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    std::pin::Pin::new(fut).poll(&mut cx)
}

/// A runtime whose workers run spawned tasks while the test's thread sleeps or blocks.
fn threaded_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// A released permit goes back to the free count and the waiter is told; a caller running meanwhile
/// takes it first, and the waiter, looking, finds none and waits on — until the next release.
#[test]
fn a_running_caller_takes_a_freed_permit_before_a_told_waiter() {
    let rt = runtime();
    let g = gate(1, 4, 5_000);
    let held = g.acquire_blocking().unwrap();
    let mut waiter = queued_task(&rt, &g);
    drop(held);
    let (again, waited) = g.acquire_blocking_waited().unwrap();
    assert_eq!(waited, Duration::ZERO, "taken without queueing");
    rt.block_on(async { assert!(poll_once(&mut waiter).is_pending()) });
    assert_eq!(g.metrics().waiting, 1);
    drop(again);
    let got = rt.block_on(async { poll_once(&mut waiter) });
    assert!(matches!(got, std::task::Poll::Ready(Ok(_))));
    drop(got);
    let m = g.metrics();
    assert_eq!((m.in_use, m.waiting, m.counters.acquired), (0, 0, 3));
}

/// The waiter that has waited longest is passed over at most `FAIR_EVERY − 1` times in a row: the next
/// release grants it the permit, and nobody can take it first. A granted permit whose waiter is dropped
/// unread comes back to the free count, not counted as acquired.
#[test]
fn a_waiter_is_passed_over_at_most_fair_every_minus_one_times() {
    let rt = runtime();
    let g = gate(1, 4, 5_000);
    for dropped_unread in [true, false] {
        let mut held = Some(g.acquire_blocking().unwrap());
        let before = g.metrics().counters.acquired;
        let mut waiter = queued_task(&rt, &g);
        let mut passed_over = 0;
        loop {
            drop(held.take());
            match take_now(&g) {
                Some(p) if passed_over < 10 * FAIR_EVERY => {
                    passed_over += 1;
                    held = Some(p);
                }
                _ => break,
            }
        }
        assert_eq!(passed_over, FAIR_EVERY - 1);
        assert_eq!(g.metrics().in_use, 1, "granted to the waiter");
        if dropped_unread {
            drop(waiter);
            let back = take_now(&g).expect("the dropped waiter's permit came back");
            drop(back);
            let m = g.metrics();
            assert_eq!(m.counters.acquired, before + u64::from(passed_over) + 1);
        } else {
            let got = rt.block_on(async { poll_once(&mut waiter) });
            assert!(matches!(got, std::task::Poll::Ready(Ok(_))));
        }
        let m = g.metrics();
        assert_eq!((m.in_use, m.waiting), (0, 0));
    }
}

/// Two permits freed at once while two waiters wait: both are told, each takes one.
#[test]
fn permits_freed_together_reach_as_many_waiters() {
    let rt = runtime();
    let g = gate(2, 4, 5_000);
    let (a, b) = (g.acquire_blocking().unwrap(), g.acquire_blocking().unwrap());
    let mut first = queued_task(&rt, &g);
    let mut second = queued_task(&rt, &g);
    drop(a);
    drop(b);
    rt.block_on(async {
        assert!(matches!(
            poll_once(&mut second),
            std::task::Poll::Ready(Ok(_))
        ));
        assert!(matches!(
            poll_once(&mut first),
            std::task::Poll::Ready(Ok(_))
        ));
    });
    let m = g.metrics();
    assert_eq!((m.in_use, m.waiting), (0, 0));
}

/// A dropped async acquire frees its place and loses no permit, even when one was already on its way.
#[test]
fn cancelled_acquires_leak_nothing() {
    let rt = threaded_runtime();
    let g = gate(1, 4, 5_000);
    let held = g.acquire_blocking().unwrap();
    let task = {
        let g = g.clone();
        rt.spawn(async move { g.acquire().await.map(drop) })
    };
    until_waiting(&g, 1);
    task.abort();
    let _ = rt.block_on(task);
    // Its place is free at once: another waiter fits in a queue of one.
    assert_eq!(g.metrics().waiting, 0);
    let second = {
        let g = g.clone();
        rt.spawn(async move { g.acquire().await.map(drop) })
    };
    until_waiting(&g, 1);
    second.abort();
    let _ = rt.block_on(second);
    assert_eq!(g.metrics().counters.rejected, 0);
    drop(held);
    // The permit skipped the cancelled waiter (or came back from it): it is free again.
    let again = g.acquire_blocking().unwrap();
    assert_eq!(g.metrics().in_use, 1);
    drop(again);
    assert_eq!(g.metrics().in_use, 0);

    // A permit freed for a waiter that is dropped before it looks stays free too.
    let held = g.acquire_blocking().unwrap();
    let fut = {
        let g = g.clone();
        async move { g.acquire().await }
    };
    let mut fut = Box::pin(fut);
    let waker = std::task::Waker::noop();
    let mut cx = std::task::Context::from_waker(waker);
    rt.block_on(async {
        assert!(fut.as_mut().poll(&mut cx).is_pending());
    });
    until_waiting(&g, 1);
    drop(held); // the waiting future is told…
    drop(fut); // …and dropped before it looks
    let again = g.acquire_blocking().unwrap();
    drop(again);
    assert_eq!(g.metrics().in_use, 0);
}

/// Waiters that give up from the middle of the queue leave the others in arrival order, each still
/// found and served (the queue is searched by id, which needs it sorted).
#[test]
fn waiters_leaving_from_the_middle_keep_the_rest_in_order() {
    let rt = threaded_runtime();
    let g = gate(1, 16, 5_000);
    let held = g.acquire_blocking().unwrap();
    let order = Arc::new(Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for i in 0..6 {
        let (g2, order) = (g.clone(), order.clone());
        tasks.push(rt.spawn(async move {
            let permit = g2.acquire().await.unwrap();
            order.lock().unwrap().push(i);
            drop(permit);
        }));
        until_waiting(&g, i + 1);
    }
    let gone = [1, 3, 4];
    for i in gone {
        tasks[i].abort();
    }
    until_waiting(&g, 3);
    drop(held);
    for (i, task) in tasks.into_iter().enumerate() {
        assert_eq!(rt.block_on(task).is_ok(), !gone.contains(&i), "waiter {i}");
    }
    assert_eq!(*order.lock().unwrap(), [0, 2, 5]);
    assert_eq!(g.metrics().in_use, 0);
}

/// Metrics report holders, waiters, counters and wait percentiles.
#[test]
fn metrics_snapshot() {
    let g = gate(2, 8, 5_000);
    let a = g.acquire_blocking().unwrap();
    let b = g.acquire_blocking().unwrap();
    let waiter = {
        let g = g.clone();
        std::thread::spawn(move || g.acquire_blocking().map(drop))
    };
    until_waiting(&g, 1);
    let m = g.metrics();
    assert_eq!((m.size, m.in_use, m.waiting), (2, 2, 1));
    std::thread::sleep(Duration::from_millis(30));
    drop(a);
    waiter.join().unwrap().unwrap();
    drop(b);
    let m = g.metrics();
    assert_eq!(m.counters.acquired, 3);
    assert!(m.wait_p99 >= Duration::from_millis(30), "{:?}", m.wait_p99);
    assert_eq!(m.wait_p50, Duration::ZERO);
}

/// Threads and tasks hammering a small gate: every acquire is served (no wake-up is lost between the
/// lock-free path and the queue), nothing times out, and every permit comes back.
#[test]
fn no_lost_wakeups_under_contention() {
    let rt = threaded_runtime();
    let g = gate(2, 64, 10_000);
    const ROUNDS: usize = 2_000;
    let threads: Vec<_> = (0..6)
        .map(|_| {
            let g = g.clone();
            std::thread::spawn(move || {
                for _ in 0..ROUNDS {
                    drop(g.acquire_blocking().unwrap());
                }
            })
        })
        .collect();
    let tasks: Vec<_> = (0..6)
        .map(|_| {
            let g = g.clone();
            rt.spawn(async move {
                for i in 0..ROUNDS {
                    let p = g.acquire().await.unwrap();
                    if i % 7 == 0 {
                        tokio::task::yield_now().await;
                    }
                    drop(p);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    for t in tasks {
        rt.block_on(t).unwrap();
    }
    let m = g.metrics();
    assert_eq!(m.counters.acquired, 12 * ROUNDS as u64);
    assert_eq!((m.counters.timed_out, m.in_use, m.waiting), (0, 0, 0));
}
