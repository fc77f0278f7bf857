//! Stage 7's specification. `just check 07` runs it on your `src/exercise.rs`. The gate is checked on its
//! own (order, bounds, deadlines, cancellation — threads and tasks alike), then in front of your two
//! executors: 64 workers against a pool of 4, on SQLite and on the servers that answer.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use blocking::Executor as _;
use gate::{Gate, GateConfig, GateError, GateStatus};
use tables::Dialect;

fn gate(max: usize, max_waiting: usize, deadline_ms: u64) -> Gate {
    Gate::new(GateConfig {
        max,
        max_waiting,
        deadline: Duration::from_millis(deadline_ms),
    })
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Waits (a little) until the gate shows `waiting` callers in line.
fn until_waiting(g: &Gate, waiting: usize) {
    let start = Instant::now();
    while g.status().waiting < waiting {
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "{waiting} callers never got in line: {:?}",
            g.status()
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Callers get in while there is room; permits count in and out.
fn a_gate_with_room_lets_callers_in() {
    let g = gate(2, 4, 1_000);
    let a = g.enter_blocking().unwrap();
    let b = runtime().block_on(g.enter()).unwrap();
    assert_eq!(
        g.status(),
        GateStatus {
            in_use: 2,
            waiting: 0
        }
    );
    drop(a);
    assert_eq!(
        g.status(),
        GateStatus {
            in_use: 1,
            waiting: 0
        }
    );
    drop(b);
    assert_eq!(
        g.status(),
        GateStatus {
            in_use: 0,
            waiting: 0
        }
    );
}

/// First come, first served: threads and tasks that lined up one after another get in in that order.
fn callers_get_in_in_arrival_order() {
    let g = gate(1, 64, 10_000);
    let rt = runtime();
    let held = g.enter_blocking().unwrap();
    let order = Arc::new(Mutex::new(Vec::new()));
    let mut threads = Vec::new();
    let mut tasks = Vec::new();
    for i in 0..16 {
        let (g2, order) = (g.clone(), order.clone());
        if i % 2 == 0 {
            threads.push(std::thread::spawn(move || {
                let _p = g2.enter_blocking().unwrap();
                order.lock().unwrap().push(i);
                std::thread::sleep(Duration::from_millis(2));
            }));
        } else {
            tasks.push(rt.spawn(async move {
                let _p = g2.enter().await.unwrap();
                order.lock().unwrap().push(i);
                tokio::time::sleep(Duration::from_millis(2)).await;
            }));
        }
        until_waiting(&g, i + 1);
    }
    drop(held);
    threads
        .into_iter()
        .for_each(|t| workshop_support::joined(t.join()));
    rt.block_on(async {
        for t in tasks {
            t.await.unwrap();
        }
    });
    assert_eq!(
        *order.lock().unwrap(),
        (0..16).collect::<Vec<_>>(),
        "the order they got in"
    );
}

/// A full line refuses the next caller at once with `Saturated`, thread or task; the line never grows
/// past its bound.
fn a_full_line_refuses_at_once() {
    // No room in line at all: whoever finds no permit is refused. The deadline (5 s) only tells a refusal
    // from a wait: a gate that lets callers line up past `max_waiting` answers Timeout after it.
    let no_line = gate(1, 0, 5_000);
    let only = no_line.enter_blocking().unwrap();
    let start = Instant::now();
    assert_eq!(
        no_line.enter_blocking().err(),
        Some(GateError::Saturated { waiting: 0 }),
        "a thread that finds no permit at a gate with no room in line (max_waiting 0), after {:?}: \
         refused at once, not put in line",
        start.elapsed()
    );
    let start = Instant::now();
    assert_eq!(
        runtime().block_on(no_line.enter()).err(),
        Some(GateError::Saturated { waiting: 0 }),
        "a task that finds no permit at a gate with no room in line (max_waiting 0), after {:?}: \
         refused at once, not put in line",
        start.elapsed()
    );
    drop(only);
    assert!(no_line.enter_blocking().is_ok(), "a free permit is taken");

    let g = gate(4, 8, 5_000);
    let held: Vec<_> = (0..4).map(|_| g.enter_blocking().unwrap()).collect();
    let waiting: Vec<_> = (0..8)
        .map(|i| {
            let g2 = g.clone();
            let t = std::thread::spawn(move || g2.enter_blocking().map(drop));
            until_waiting(&g, i + 1);
            t
        })
        .collect();
    let start = Instant::now();
    let refused = g.enter_blocking().err();
    assert_eq!(
        refused,
        Some(GateError::Saturated { waiting: 8 }),
        "a ninth thread while eight wait in a line of eight, after {:?}: refused at once",
        start.elapsed()
    );
    let async_refused = runtime().block_on(g.enter()).err();
    assert_eq!(
        async_refused,
        Some(GateError::Saturated { waiting: 8 }),
        "a ninth task while eight wait in a line of eight, after {:?}: refused at once",
        start.elapsed()
    );
    assert!(
        start.elapsed() < Duration::from_secs(1),
        "refused after {:?}: a refusal must not wait",
        start.elapsed()
    );
    assert_eq!(
        g.status(),
        GateStatus {
            in_use: 4,
            waiting: 8
        }
    );
    drop(held);
    for t in waiting {
        workshop_support::joined(t.join()).unwrap();
    }
    assert_eq!(
        g.status(),
        GateStatus {
            in_use: 0,
            waiting: 0
        }
    );
}

/// A caller that waited its deadline gets `Timeout` and leaves the line, thread or task.
fn a_waiter_times_out() {
    let g = gate(1, 4, 100);
    let _held = g.enter_blocking().unwrap();
    let deadline = Duration::from_millis(100);
    let start = Instant::now();
    assert_eq!(
        g.enter_blocking().err(),
        Some(GateError::Timeout { waited: deadline }),
        "a thread: Timeout, with its whole deadline as `waited`"
    );
    assert!(start.elapsed() >= deadline, "waited its deadline");
    let start = Instant::now();
    assert_eq!(
        runtime().block_on(g.enter()).err(),
        Some(GateError::Timeout { waited: deadline }),
        "a task: Timeout, with its whole deadline as `waited`"
    );
    assert!(start.elapsed() >= deadline);
    assert_eq!(g.status().waiting, 0, "the line is empty again");
}

/// A waiter's deadline runs from when it came to the gate, however often it is woken before its turn:
/// here the second in line is still waiting when the first is let in — a gate that wakes every waiter on
/// each release wakes it then — and it gives up 400 ms after it arrived, not 400 ms after that wake-up.
/// Threads, then tasks.
fn a_woken_waiter_keeps_its_deadline() {
    let deadline = Duration::from_millis(400);
    let g = gate(1, 4, 400);
    let held = g.enter_blocking().unwrap();
    let (second, waited) = std::thread::scope(|s| {
        let g = &g;
        let first = s.spawn(move || {
            let permit = g.enter_blocking();
            // Holds the gate until well past the second's deadline.
            std::thread::sleep(Duration::from_millis(600));
            permit.is_ok()
        });
        until_waiting(g, 1);
        let second = s.spawn(move || {
            let arrived = Instant::now();
            (g.enter_blocking().err(), arrived.elapsed())
        });
        until_waiting(g, 2);
        std::thread::sleep(Duration::from_millis(300));
        drop(held);
        let out = workshop_support::joined(second.join());
        assert!(
            workshop_support::joined(first.join()),
            "the first in line got in"
        );
        out
    });
    kept_its_deadline("thread", second, waited, deadline);
    let rt = runtime();
    let g = gate(1, 4, 400);
    let (second, waited) = rt.block_on(async {
        let held = g.enter().await.unwrap();
        let first = {
            let g = g.clone();
            tokio::spawn(async move {
                let permit = g.enter().await;
                tokio::time::sleep(Duration::from_millis(600)).await;
                permit.is_ok()
            })
        };
        until_waiting_async(&g, 1).await;
        let second = {
            let g = g.clone();
            tokio::spawn(async move {
                let arrived = Instant::now();
                (g.enter().await.err(), arrived.elapsed())
            })
        };
        until_waiting_async(&g, 2).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        drop(held);
        let out = second.await.unwrap();
        assert!(first.await.unwrap(), "the first task in line got in");
        out
    });
    kept_its_deadline("task", second, waited, deadline);
}

/// The second in line of [`a_woken_waiter_keeps_its_deadline`] (a thread or a task: `who`) gave up with
/// `Timeout`, about `deadline` after it arrived (it waited `waited`).
fn kept_its_deadline(who: &str, second: Option<GateError>, waited: Duration, deadline: Duration) {
    match second {
        Some(GateError::Timeout { .. }) => {}
        None => panic!(
            "a {who} second in line, deadline {deadline:?}, got in {waited:?} after it arrived, when the \
             first left: it should have given up at its deadline. A deadline that starts again on each \
             wake-up never ends while wake-ups keep coming"
        ),
        Some(e) => {
            panic!("a {who} second in line while the first holds the gate: {e:?}, not Timeout")
        }
    }
    assert_eq!(
        second,
        Some(GateError::Timeout { waited: deadline }),
        "a {who} second in line while the first holds the gate past its deadline"
    );
    assert!(
        waited < deadline + Duration::from_millis(200),
        "a {who} with a deadline of {deadline:?} gave up {waited:?} after it arrived: its deadline \
         started again when it was woken (as the first in line got in, 300 ms after it arrived). Fix \
         the deadline once, when the {who} arrives, and wait for what is left of it"
    );
}

/// [`until_waiting`], from a task.
async fn until_waiting_async(g: &Gate, waiting: usize) {
    let start = Instant::now();
    while g.status().waiting < waiting {
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "{waiting} tasks never got in line: {:?}",
            g.status()
        );
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// Tasks cancelled while in line leave it; a permit that reaches a task as it is cancelled goes on to the
/// next: after any number of cancellations every permit comes back.
fn cancelled_waiters_leak_no_permit() {
    let rt = runtime();
    let g = gate(2, 64, 10_000);
    rt.block_on(async {
        let held: Vec<_> = vec![g.enter().await.unwrap(), g.enter().await.unwrap()];
        let tasks: Vec<_> = (0..20)
            .map(|_| {
                let g = g.clone();
                tokio::spawn(async move {
                    let _p = g.enter().await.unwrap();
                    tokio::time::sleep(Duration::from_millis(1)).await;
                })
            })
            .collect();
        while g.status().waiting < 20 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        for t in tasks.iter().step_by(2) {
            t.abort();
        }
        drop(held);
        for t in tasks {
            let _ = t.await;
        }
        // Cancellations racing with hand-overs: a waiter cancelled just as the permit reaches it. Nothing
        // else holds a permit between rounds: one that does not come back within two seconds was lost.
        let enter = async |round: u64| match tokio::time::timeout(Duration::from_secs(2), g.enter()).await
        {
            Ok(Ok(p)) => p,
            Ok(Err(e)) => panic!("round {round}: {e:?} from a gate nobody else holds"),
            Err(_) => panic!(
                "round {round}: no permit within 2 s from a gate of two that nobody holds ({:?}): a \
                 permit was lost — {}",
                g.status(),
                if round == 0 {
                    "when a waiter was cancelled (ten of the twenty tasks in line were aborted)"
                } else {
                    "when a waiter was cancelled just as the permit reached it (every other round)"
                }
            ),
        };
        for i in 0..200u64 {
            let p = enter(i).await;
            let p2 = enter(i).await;
            let g2 = g.clone();
            let waiter = tokio::spawn(async move { g2.enter().await.map(drop) });
            while g.status().waiting < 1 {
                tokio::task::yield_now().await;
            }
            drop(p);
            if i % 2 == 0 {
                waiter.abort();
            }
            let _ = waiter.await;
            drop(p2);
        }
    });
    assert_eq!(
        g.status(),
        GateStatus {
            in_use: 0,
            waiting: 0
        },
        "every permit came back"
    );
    let a = g.enter_blocking().unwrap();
    let b = g.enter_blocking().unwrap();
    drop((a, b));
}

/// The same engine, as tandem names it.
fn tandem_dialect(d: Dialect) -> tandem_sql::Dialect {
    d.to_string().parse().expect("tandem knows every engine")
}

/// 64 threads through the gate to your blocking executor, then 64 tasks to your async one, each with a
/// pool of 4: never more than 4 inside, nobody fails with a generous line; with a line of 8, the rest are
/// refused at once and nobody times out.
fn sixty_four_workers_against_four_connections() {
    for d in Dialect::ALL {
        let Some(target) = workshop_support::db::target_or_skip(tandem_dialect(d), "w7crowd")
        else {
            continue;
        };
        let url = target.url();
        let st = dialects::Statement {
            sql: "SELECT 1".into(),
            params: vec![],
            key: dialects::GeneratedKey::None,
        };
        let inside = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let enter = || {
            let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
            most.fetch_max(now, Ordering::SeqCst);
        };
        let leave = || {
            inside.fetch_sub(1, Ordering::SeqCst);
        };

        let db = blocking::Database::open(&url, 4).unwrap();
        for (max_waiting, all_in) in [(64, true), (8, false)] {
            let g = gate(4, max_waiting, 10_000);
            let (ok, refused) = std::thread::scope(|s| {
                let handles: Vec<_> = (0..64)
                    .map(|_| {
                        s.spawn(|| match g.enter_blocking() {
                            Ok(_p) => {
                                enter();
                                for _ in 0..3 {
                                    db.fetch_values(&st).unwrap_or_else(|e| panic!("{d}: {e}"));
                                }
                                std::thread::sleep(Duration::from_millis(2));
                                leave();
                                (1, 0)
                            }
                            Err(GateError::Saturated { .. }) => (0, 1),
                            Err(e) => panic!("{d}: {e}"),
                        })
                    })
                    .collect();
                handles
                    .into_iter()
                    .map(|h| workshop_support::joined(h.join()))
                    .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
            });
            assert_eq!(ok + refused, 64);
            assert!(
                !all_in || ok == 64,
                "{d}: with room in line everyone gets in"
            );
            assert!(
                all_in || refused > 0,
                "{d}: a line of 8 for 64 refuses some"
            );
            assert_eq!(
                g.status(),
                GateStatus {
                    in_use: 0,
                    waiting: 0
                }
            );
        }

        let rt = runtime();
        rt.block_on(async {
            let adb = asynchronous::Database::open(&url, 4).await.unwrap();
            let g = gate(4, 64, 10_000);
            let tasks: Vec<_> = (0..64)
                .map(|_| {
                    let (g, adb, st) = (g.clone(), adb.clone(), st.clone());
                    let (inside, most) = (inside.clone(), most.clone());
                    tokio::spawn(async move {
                        let _p = g.enter().await.unwrap_or_else(|e| panic!("{e}"));
                        let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(now, Ordering::SeqCst);
                        for _ in 0..3 {
                            adb.fetch_values(&st).await.unwrap();
                        }
                        tokio::time::sleep(Duration::from_millis(2)).await;
                        inside.fetch_sub(1, Ordering::SeqCst);
                    })
                })
                .collect();
            for t in tasks {
                t.await.unwrap_or_else(|e| panic!("{d}: {e}"));
            }
        });
        assert!(
            most.load(Ordering::SeqCst) <= 4,
            "{d}: {} callers were inside at once",
            most.load(Ordering::SeqCst)
        );
    }
}

workshop_harness::checks!(
    a_gate_with_room_lets_callers_in,
    callers_get_in_in_arrival_order,
    a_full_line_refuses_at_once,
    a_waiter_times_out,
    a_woken_waiter_keeps_its_deadline,
    cancelled_waiters_leak_no_permit,
    sixty_four_workers_against_four_connections,
);
