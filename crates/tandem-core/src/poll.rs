//! The one piece of future plumbing both executors' drivers share: a step polled once before any timer
//! is set for it. A warm connection often has its answer already (rows buffered, a statement cached), and
//! a call that needs no wait then costs no timer: the bound on a wait (`socket_timeout`) is only armed
//! when there is a wait.

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;

/// Polls `f` once: its output if it is ready, `None` if it is not (its waker is registered all the same,
/// so a caller that goes on to await it is woken as usual).
pub async fn poll_once<F: Future>(mut f: Pin<&mut F>) -> Option<F::Output> {
    std::future::poll_fn(|cx| {
        Poll::Ready(match f.as_mut().poll(cx) {
            Poll::Ready(out) => Some(out),
            Poll::Pending => None,
        })
    })
    .await
}
