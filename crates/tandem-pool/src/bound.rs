//! [`WaitTimer`]: the bound on one wait for a server (`socket_timeout`), as both executors' drivers keep it
//! per connection.
//!
//! A fresh `tokio::time::timeout` for every wait puts an entry in the runtime's timer wheel under the
//! driver's lock and takes it out again under the same lock when the answer comes: a point read by id
//! made ~900 instructions fewer on mysql_async (of ~28,000) and ~350 fewer on tokio-postgres (of ~23,000)
//! with one timer per connection (callgrind, `just instructions`). A connection's waits follow one
//! another, each deadline later than the last, and tokio moves a registered timer's deadline later without
//! touching the wheel (one atomic exchange; the wheel, when the old deadline comes, files the timer again
//! for the new one). So each connection keeps one timer and moves it forward for each wait.

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;
use std::time::{Duration, Instant};

use tandem_core::DbError;

/// The timer of one connection's waits: made at the first wait that has to wait, on that runtime, and
/// moved forward for each one after. A connection lives on the runtime that opened it (its socket is
/// registered there), and so does its timer.
#[derive(Default)]
pub struct WaitTimer {
    sleep: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl std::fmt::Debug for WaitTimer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WaitTimer")
            .field("armed", &self.sleep.is_some())
            .finish()
    }
}

impl WaitTimer {
    /// `step`'s output, or `None` when it took longer than `bound` (the server said nothing for that
    /// long). A bound that ran out while this process was not running is given again (see
    /// [`DbError::waited_late`]).
    ///
    /// An answer already in (the next row of a result the driver has read) is taken without reading the
    /// clock or touching the timer: that is most waits of a result with many rows.
    pub async fn within<F: Future>(&mut self, bound: Duration, step: F) -> Option<F::Output> {
        let mut step = std::pin::pin!(step);
        if let Some(out) = tandem_core::poll::poll_once(step.as_mut()).await {
            return Some(out);
        }
        loop {
            let started = Instant::now();
            // The deadline on the runtime's clock (a test's paused clock included, as with tokio's own
            // `timeout`); a bound too long to add (a URL's `socket_timeout` of centuries) is as good as
            // none: thirty years, as `timeout` takes it.
            let from = tokio::time::Instant::now();
            let deadline = (from.checked_add(bound))
                .unwrap_or_else(|| from + Duration::from_secs(86_400 * 365 * 30));
            let sleep = match &mut self.sleep {
                Some(sleep) => {
                    sleep.as_mut().reset(deadline);
                    sleep
                }
                None => self
                    .sleep
                    .insert(Box::pin(tokio::time::sleep_until(deadline))),
            };
            // The timer is polled (its waker filed) once per wait, and again only if the task's waker
            // changed; on the other wake-ups of a wait (the connection's I/O) a look at whether it fired
            // is enough. A wait is often woken more than once (a MySQL read's packets; a PostgreSQL
            // wait whose connection wakes it from the runtime's I/O driver): each poll of the timer was
            // ~115 instructions (callgrind).
            let mut filed: Option<std::task::Waker> = None;
            let answered = std::future::poll_fn(|cx| {
                if let Poll::Ready(out) = step.as_mut().poll(cx) {
                    return Poll::Ready(Some(out));
                }
                if filed.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                    return match sleep.is_elapsed() {
                        true => Poll::Ready(None),
                        false => Poll::Pending,
                    };
                }
                // Outside the task's cooperative budget, as tokio's own `timeout` polls its timer: with
                // the budget spent (a task that just read a long result), a budgeted poll would return
                // `Pending` without arming the timer or filing the waker, and the wait would be unbounded.
                let mut unbudgeted = tokio::task::coop::unconstrained(sleep.as_mut());
                match Pin::new(&mut unbudgeted).poll(cx) {
                    Poll::Ready(()) => Poll::Ready(None),
                    Poll::Pending => {
                        filed = Some(cx.waker().clone());
                        Poll::Pending
                    }
                }
            })
            .await;
            match answered {
                Some(out) => return Some(out),
                None if DbError::waited_late(started.elapsed(), bound) => continue,
                None => return None,
            }
        }
    }

    /// [`WaitTimer::within`] with a timer of its own, for a wait on a connection that keeps none.
    pub async fn once<F: Future>(bound: Duration, step: F) -> Option<F::Output> {
        WaitTimer::default().within(bound, step).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bound of the waits under test.
    const BOUND: Duration = Duration::from_millis(100);

    /// A current-thread runtime with a clock, as a connection's waits run on.
    fn clocked() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap()
    }

    /// A wait whose bound ran out while this process was not running — here its thread blocked for 1.5 s
    /// inside a poll under the timer, as a stopped process would be — is not the server's silence: the
    /// step gets its bound again, and its answer, 50 ms later, is taken. A step that stays silent is
    /// reported after the bound; one that is ready at once is taken without a timer (no runtime with a
    /// clock is needed for it).
    #[test]
    fn a_late_timer_is_not_a_silent_server() {
        let (rt, bound) = (clocked(), BOUND);
        let answered = rt.block_on(WaitTimer::once(bound, async {
            tokio::task::yield_now().await;
            std::thread::sleep(Duration::from_millis(1_500));
            tokio::time::sleep(Duration::from_millis(50)).await;
            7
        }));
        assert_eq!(answered, Some(7));
        let silent = rt.block_on(WaitTimer::once(bound, std::future::pending::<()>()));
        assert_eq!(silent, None);
        let no_timer = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        assert_eq!(
            no_timer.block_on(WaitTimer::once(bound, async { 3 })),
            Some(3)
        );
    }

    /// One timer for many waits: each wait is bounded from its own start, not from the first one's. Ten
    /// waits of 60 ms each under a bound of 100 ms all get their answer (a timer left at the first wait's
    /// deadline would fire during the second); a silent step after them is still cut off at its bound;
    /// and a wait after that one — the timer has fired — is bounded again.
    #[test]
    fn one_timer_bounds_each_wait_from_its_start() {
        let (rt, bound) = (clocked(), BOUND);
        rt.block_on(async {
            let mut timer = WaitTimer::default();
            for i in 0..10 {
                let step = async move {
                    tokio::time::sleep(Duration::from_millis(60)).await;
                    i
                };
                assert_eq!(timer.within(bound, step).await, Some(i), "wait {i}");
            }
            let started = Instant::now();
            assert_eq!(
                timer.within(bound, std::future::pending::<()>()).await,
                None
            );
            let waited = started.elapsed();
            assert!(waited >= bound && waited < bound * 5, "waited {waited:?}");
            let late = async {
                tokio::time::sleep(Duration::from_millis(30)).await;
                1
            };
            assert_eq!(timer.within(bound, late).await, Some(1));
            let started = Instant::now();
            assert_eq!(
                timer.within(bound, std::future::pending::<()>()).await,
                None
            );
            assert!(started.elapsed() >= bound);
            // A bound past what the clock can add waits as if unbounded, without a panic.
            let answered = timer.within(Duration::MAX, async { 5 }).await;
            assert_eq!(answered, Some(5));
            let slow = async {
                tokio::time::sleep(Duration::from_millis(20)).await;
                6
            };
            assert_eq!(timer.within(Duration::MAX, slow).await, Some(6));
        });
    }

    /// A wait that begins with the task's cooperative budget spent — here by 200 reads from a channel in
    /// the same poll, as a task that just streamed a long result — is still bounded: the timer is armed
    /// and wakes the task at the bound. (Polled within the budget, the timer was never armed, and this
    /// wait never ended.)
    #[test]
    fn a_wait_with_the_budget_spent_is_still_bounded() {
        let (rt, bound) = (clocked(), BOUND);
        rt.block_on(async {
            let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<u32>();
            for i in 0..1_000 {
                tx.send(i).unwrap();
            }
            let mut timer = WaitTimer::default();
            let mut wait = Box::pin(timer.within(bound, std::future::pending::<()>()));
            let mut first = true;
            let spent_then_wait = std::future::poll_fn(|cx| {
                if std::mem::take(&mut first) {
                    for _ in 0..200 {
                        let _ = rx.poll_recv(cx);
                    }
                }
                wait.as_mut().poll(cx)
            });
            let started = Instant::now();
            let answered = tokio::time::timeout(bound * 20, spent_then_wait).await;
            assert_eq!(answered, Ok(None), "the wait was not bounded");
            assert!(started.elapsed() >= bound);
        });
    }
}
