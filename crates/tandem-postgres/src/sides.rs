//! The two sides of a wait — the call's own future and the connection's I/O — each polled with a waker of
//! its own, so that a wake-up polls only the side it came for, and a side woken by the other while the
//! wait is being polled is polled before the poll returns (unless the call is done by then; a side that
//! wakes itself is left to the scheduler, see [`Sides::poll`]).
//!
//! The second is the one that counts: the answer the connection's I/O hands over (which wakes the call)
//! is taken in the same poll, where the task's own waker would send the whole task through the scheduler
//! and down the caller's stack of futures once more. A point read is polled twice, not three times.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::task::{Context, Poll, Wake, Waker};

use futures_util::task::AtomicWaker;

/// The call's own future was woken.
const STEP: u8 = 1;
/// The connection's I/O was woken.
const CONNECTION: u8 = 2;
/// The wait is being polled: a side woken now by the other is polled before the poll returns, and the task
/// is not woken.
const POLLING: u8 = 4;

/// The wakers a connection's waits hand to their two sides in place of the task's own; made once per
/// connection.
pub(crate) struct Sides {
    shared: Arc<Shared>,
    step: Waker,
    connection: Waker,
}

/// What the two side wakers share with the wait.
#[derive(Default)]
struct Shared {
    /// [`STEP`], [`CONNECTION`]: woken since last polled; [`POLLING`].
    state: AtomicU8,
    /// The task's waker, for a side woken while the wait is not being polled.
    task: AtomicWaker,
}

/// One side's waker: marks its side woken, and wakes the task unless the wait is being polled.
struct Side {
    shared: Arc<Shared>,
    bit: u8,
}

impl Wake for Side {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        let before = self.shared.state.fetch_or(self.bit, Ordering::AcqRel);
        if before & POLLING == 0 {
            self.shared.task.wake();
        }
    }
}

impl Sides {
    pub(crate) fn new() -> Sides {
        let shared = Arc::new(Shared::default());
        let side = |bit| {
            Waker::from(Arc::new(Side {
                shared: shared.clone(),
                bit,
            }))
        };
        Sides {
            step: side(STEP),
            connection: side(CONNECTION),
            shared,
        }
    }

    /// A new wait: both sides are polled first.
    pub(crate) fn start(&self) {
        self.shared
            .state
            .store(STEP | CONNECTION, Ordering::Release);
    }

    /// One poll of a wait: the call's future `step` (it queues its request, later takes its answer), then
    /// `connection`'s I/O (it sends the request and hands the answer over), each only when woken since it
    /// was last polled, until neither was. A side that woke itself while polled and is not ready (tokio's
    /// cooperative budget spent) is not polled again in this poll: the task is woken and the poll returns
    /// `Pending`. A connection that ended (the server closed it, or it failed) is
    /// dropped and not polled again: the call then fails as closed.
    pub(crate) fn poll<T, C>(
        &self,
        mut step: Pin<&mut impl Future<Output = T>>,
        connection: &mut Option<Pin<Box<C>>>,
        cx: &mut Context<'_>,
    ) -> Poll<T>
    where
        C: Future + ?Sized,
    {
        let state = &self.shared.state;
        self.shared.task.register(cx.waker());
        state.fetch_or(POLLING, Ordering::AcqRel);
        loop {
            // Each side's bit is taken just before that side is polled: the call's request, queued while
            // the call is polled, wakes the connection, which is polled next anyway — not once more.
            let mut polled = false;
            if state.fetch_and(!STEP, Ordering::AcqRel) & STEP != 0 {
                polled = true;
                if let Poll::Ready(out) = step.as_mut().poll(&mut Context::from_waker(&self.step)) {
                    state.fetch_and(!POLLING, Ordering::AcqRel);
                    return Poll::Ready(out);
                }
                if state.load(Ordering::Acquire) & STEP != 0 {
                    return self.yield_now(cx);
                }
            }
            if state.fetch_and(!CONNECTION, Ordering::AcqRel) & CONNECTION != 0
                && let Some(c) = connection
            {
                polled = true;
                let mut io = Context::from_waker(&self.connection);
                if c.as_mut().poll(&mut io).is_ready() {
                    *connection = None;
                    state.fetch_or(STEP, Ordering::AcqRel);
                } else if state.load(Ordering::Acquire) & CONNECTION != 0 {
                    return self.yield_now(cx);
                }
            }
            if !polled {
                // Neither side woken since its bit was taken: the poll ends, and from now on a side's
                // wake-up wakes the task; one that came in between is seen here and polled.
                let before = state.fetch_and(!POLLING, Ordering::AcqRel);
                if before & (STEP | CONNECTION) == 0 {
                    return Poll::Pending;
                }
                state.fetch_or(POLLING, Ordering::AcqRel);
            }
        }
    }

    /// A side woke itself while it was polled and is not ready: tokio's cooperative budget is spent (a
    /// socket read then wakes its waker and returns `Pending`, and only the task's next poll gets a new
    /// budget; outside a scheduler, under `Runtime::block_on`, that wake-up is not deferred), or another
    /// thread woke it meanwhile. Polling it again here could spin without end: the task is woken instead,
    /// its bit left set for the next poll.
    fn yield_now<T>(&self, cx: &mut Context<'_>) -> Poll<T> {
        self.shared.state.fetch_and(!POLLING, Ordering::AcqRel);
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::sync::atomic::AtomicUsize;

    use super::*;

    /// Counts the task's wake-ups.
    #[derive(Default)]
    struct Task(AtomicUsize);

    impl Wake for Task {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// A task that counts its wake-ups, and its waker.
    fn task() -> (Arc<Task>, Waker) {
        let task = Arc::new(Task::default());
        (task.clone(), Waker::from(task))
    }

    /// A call waiting for its answer: ready once `answered`, its waker kept in `waker` meanwhile.
    #[derive(Default)]
    struct Call {
        answered: std::sync::atomic::AtomicBool,
        waker: Mutex<Option<Waker>>,
        polls: AtomicUsize,
    }

    impl Call {
        fn answer(&self) {
            self.answered.store(true, Ordering::SeqCst);
            if let Some(w) = self.waker.lock().unwrap().take() {
                w.wake();
            }
        }

        fn future(self: &Arc<Self>) -> impl Future<Output = &'static str> + use<> {
            let call = self.clone();
            std::future::poll_fn(move |cx| {
                call.polls.fetch_add(1, Ordering::SeqCst);
                if call.answered.load(Ordering::SeqCst) {
                    return Poll::Ready("answer");
                }
                *call.waker.lock().unwrap() = Some(cx.waker().clone());
                Poll::Pending
            })
        }
    }

    type Connection = Pin<Box<dyn Future<Output = ()> + Send>>;

    /// A connection whose I/O answers `call` on its `answer_on`th poll, counting its polls in `polls`.
    fn connection(call: Arc<Call>, answer_on: usize, polls: Arc<AtomicUsize>) -> Connection {
        Box::pin(std::future::poll_fn(move |_| {
            if polls.fetch_add(1, Ordering::SeqCst) + 1 == answer_on {
                call.answer();
            }
            Poll::Pending
        }))
    }

    #[test]
    fn an_answer_handed_over_while_polled_is_taken_in_the_same_poll() {
        let sides = Sides::new();
        let call = Arc::new(Call::default());
        let polls = Arc::new(AtomicUsize::new(0));
        let mut io = Some(connection(call.clone(), 1, polls.clone()));
        let (task, waker) = task();
        let mut step = std::pin::pin!(call.future());
        sides.start();
        let out = sides.poll(step.as_mut(), &mut io, &mut Context::from_waker(&waker));
        assert_eq!(out, Poll::Ready("answer"));
        assert_eq!(call.polls.load(Ordering::SeqCst), 2);
        assert_eq!(
            task.0.load(Ordering::SeqCst),
            0,
            "the call's wake-up, inside the poll, must not wake the task"
        );
    }

    #[test]
    fn a_wake_up_polls_only_its_side_and_wakes_the_task_once() {
        let sides = Sides::new();
        let call = Arc::new(Call::default());
        let polls = Arc::new(AtomicUsize::new(0));
        let mut io = Some(connection(call.clone(), usize::MAX, polls.clone()));
        let (task, waker) = task();
        let mut cx = Context::from_waker(&waker);
        let mut step = std::pin::pin!(call.future());
        sides.start();
        assert!(sides.poll(step.as_mut(), &mut io, &mut cx).is_pending());
        assert_eq!(
            (
                call.polls.load(Ordering::SeqCst),
                polls.load(Ordering::SeqCst)
            ),
            (1, 1)
        );
        // Answered from outside (another thread's I/O): the task is woken, and its poll takes the answer
        // without polling the connection.
        call.answer();
        assert_eq!(task.0.load(Ordering::SeqCst), 1);
        assert_eq!(
            sides.poll(step.as_mut(), &mut io, &mut cx),
            Poll::Ready("answer")
        );
        assert_eq!(
            (
                call.polls.load(Ordering::SeqCst),
                polls.load(Ordering::SeqCst)
            ),
            (2, 1)
        );
        // A connection woken from outside is polled, the call is not.
        let mut step = std::pin::pin!(call.future());
        sides.start();
        call.answered.store(false, Ordering::SeqCst);
        assert!(sides.poll(step.as_mut(), &mut io, &mut cx).is_pending());
        assert_eq!(
            (
                call.polls.load(Ordering::SeqCst),
                polls.load(Ordering::SeqCst)
            ),
            (3, 2)
        );
        sides.connection.wake_by_ref();
        assert_eq!(task.0.load(Ordering::SeqCst), 2);
        assert!(sides.poll(step.as_mut(), &mut io, &mut cx).is_pending());
        assert_eq!(
            (
                call.polls.load(Ordering::SeqCst),
                polls.load(Ordering::SeqCst)
            ),
            (3, 3)
        );
    }

    #[test]
    fn a_request_queued_by_the_call_polls_the_connection_once() {
        // The connection keeps its waker where the call's request wakes it, as tokio-postgres' request
        // channel does; the call queues a request on its first poll.
        let sides = Sides::new();
        let polls = Arc::new(AtomicUsize::new(0));
        let filed: Arc<Mutex<Option<Waker>>> = Arc::default();
        let (io_polls, io_filed) = (polls.clone(), filed.clone());
        let mut io: Option<Connection> = Some(Box::pin(std::future::poll_fn(move |cx| {
            io_polls.fetch_add(1, Ordering::SeqCst);
            *io_filed.lock().unwrap() = Some(cx.waker().clone());
            Poll::Pending
        })));
        let (task, waker) = task();
        let mut cx = Context::from_waker(&waker);
        for wait in 1..=3 {
            let queued = filed.clone();
            let mut step = std::pin::pin!(std::future::poll_fn(move |_| {
                if let Some(w) = queued.lock().unwrap().as_ref() {
                    w.wake_by_ref();
                }
                Poll::<()>::Pending
            }));
            sides.start();
            assert!(sides.poll(step.as_mut(), &mut io, &mut cx).is_pending());
            assert_eq!(
                polls.load(Ordering::SeqCst),
                wait,
                "one connection poll per wait"
            );
        }
        assert_eq!(task.0.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn a_side_that_wakes_itself_goes_back_to_the_scheduler() {
        // tokio's socket read with the task's budget spent, outside a scheduler: it wakes its waker at
        // once and returns `Pending`, and only the task's next poll brings a new budget.
        let sides = Sides::new();
        let call = Arc::new(Call::default());
        let polls = Arc::new(AtomicUsize::new(0));
        let io_polls = polls.clone();
        let mut io: Option<Connection> = Some(Box::pin(std::future::poll_fn(move |cx| {
            let n = io_polls.fetch_add(1, Ordering::SeqCst) + 1;
            assert!(n < 100, "the connection was polled {n} times in a row");
            cx.waker().wake_by_ref();
            Poll::Pending
        })));
        let (task, waker) = task();
        let mut cx = Context::from_waker(&waker);
        let mut step = std::pin::pin!(call.future());
        sides.start();
        assert!(sides.poll(step.as_mut(), &mut io, &mut cx).is_pending());
        assert_eq!(polls.load(Ordering::SeqCst), 1);
        assert_eq!(
            task.0.load(Ordering::SeqCst),
            1,
            "the task is woken to poll it again"
        );
        // The next poll (a new budget) polls it again, once.
        assert!(sides.poll(step.as_mut(), &mut io, &mut cx).is_pending());
        assert_eq!(polls.load(Ordering::SeqCst), 2);
        assert_eq!(
            call.polls.load(Ordering::SeqCst),
            1,
            "the call was not woken"
        );
    }

    #[test]
    fn an_ended_connection_is_dropped_and_the_call_polled_again() {
        let sides = Sides::new();
        let call = Arc::new(Call::default());
        let mut io: Option<Connection> = Some(Box::pin(std::future::ready(())));
        let (task, waker) = task();
        let mut step = std::pin::pin!(call.future());
        sides.start();
        assert!(
            sides
                .poll(step.as_mut(), &mut io, &mut Context::from_waker(&waker))
                .is_pending()
        );
        assert!(io.is_none());
        assert_eq!(
            task.0.load(Ordering::SeqCst),
            0,
            "polled again in the same poll"
        );
        assert_eq!(call.polls.load(Ordering::SeqCst), 2);
    }
}
