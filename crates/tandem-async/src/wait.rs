//! One wait for a server, bounded by the runtime's timer: the async executor's `socket_timeout` (the
//! blocking one's is the socket's own timeouts, or its connection's own runtime).

use std::future::Future;
use std::time::{Duration, Instant};

use tandem_core::DbError;

/// `step`'s output, or `None` when it took longer than `bound` (the server said nothing for that long). A
/// bound that ran out while this process was not running is given again (see [`DbError::waited_late`]).
///
/// An answer already in (the next row of a result the driver has read) is taken without a timer: reading
/// the clock and putting a timer in the runtime's wheel, then taking it out, is most of what a wait costs
/// when there is nothing to wait for.
pub(crate) async fn within<F: Future>(bound: Duration, step: F) -> Option<F::Output> {
    let mut step = std::pin::pin!(step);
    if let Some(out) = tandem_core::poll::poll_once(step.as_mut()).await {
        return Some(out);
    }
    loop {
        let started = Instant::now();
        match tokio::time::timeout(bound, step.as_mut()).await {
            Ok(out) => return Some(out),
            Err(_) if DbError::waited_late(started.elapsed(), bound) => continue,
            Err(_) => return None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A wait whose bound ran out while this process was not running — here its thread blocked for 1.5 s
    /// inside a poll under the timer, as a stopped process would be — is not the server's silence: the
    /// step gets its bound again, and its answer, 50 ms later, is taken. A step that stays silent is
    /// reported after the bound; one that is ready at once is taken without a timer (no runtime with a
    /// clock is needed for it).
    #[test]
    fn a_late_timer_is_not_a_silent_server() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        let bound = Duration::from_millis(100);
        let answered = rt.block_on(within(bound, async {
            tokio::task::yield_now().await;
            std::thread::sleep(Duration::from_millis(1_500));
            tokio::time::sleep(Duration::from_millis(50)).await;
            7
        }));
        assert_eq!(answered, Some(7));
        let silent = rt.block_on(within(bound, std::future::pending::<()>()));
        assert_eq!(silent, None);
        let no_timer = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        assert_eq!(no_timer.block_on(within(bound, async { 3 })), Some(3));
    }
}
