//! Thread homes for SQLite connections: a connection a thread gives back stays with that thread, and the
//! thread's next checkout takes it without going through r2d2.
//!
//! Why: a SQLite connection is in-process state — its page cache, its prepared statements, SQLite's own
//! locks — so a connection that moves between threads (as r2d2's shared idle stack makes them do, on
//! every checkout) drags that state from core to core. Profiled on `tandem-bench point` (SQLite, eight
//! threads, select by id), the same statement ran slower per call through the pool than on a connection
//! each thread held, and the pool's own lock, clock reads and shared counters cost about as much again
//! (the figures: book chapter 4, "How tandem does it"). A server connection's state is on the server, so
//! server pools do not use homes.
//!
//! How: one home per connection the pool may open, each on its own cache line, given out to threads in
//! turn as they first use the database. A checkout looks in its home first,
//! then asks r2d2, then takes a connection from any other home; only then does it wait on r2d2. A
//! connection given back goes home unless its home is taken or an acquire is waiting, in which case it
//! goes back to r2d2, whose waiters it wakes.
//!
//! No acquire waits while a connection sits in a home: an acquire that is about to wait counts itself in
//! `waiting` and then looks in every home; a connection going home is put there and then `waiting` is
//! read (both behind `SeqCst` fences), so at least one of the two sees the other, and the connection goes
//! back to r2d2 or is taken.
//!
//! What a home costs in the pool's settings: a connection kept in a home counts as in use to r2d2, so
//! `idle_timeout` and `max_lifetime` do not close it while it is kept there; the pool never opens more
//! than `max_size` either way, and dropping the database closes them all.

use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering, fence};
use std::sync::{Mutex, PoisonError, TryLockError};

use crate::pool::Manager;

type Kept = r2d2::PooledConnection<Manager>;

/// A home, alone on its cache line (two homes used by threads on two cores must not share one).
#[repr(align(128))]
struct Home(Mutex<Option<Kept>>);

impl Home {
    /// The connection kept here, unless another thread is at this home right now.
    fn try_take(&self) -> Option<Kept> {
        match self.0.try_lock() {
            Ok(mut kept) => kept.take(),
            Err(TryLockError::Poisoned(p)) => p.into_inner().take(),
            Err(TryLockError::WouldBlock) => None,
        }
    }

    fn take(&self) -> Option<Kept> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).take()
    }
}

/// The homes of one SQLite database's connections.
pub(crate) struct Homes {
    homes: Box<[Home]>,
    /// The home the next new thread gets.
    next: AtomicUsize,
    /// Acquires that found no connection anywhere and are about to wait on r2d2.
    waiting: AtomicUsize,
}

thread_local! {
    /// The homes this thread used last (their address) and its home among them.
    static HOME: Cell<(usize, usize)> = const { Cell::new((0, 0)) };
}

impl Homes {
    /// Homes for a pool of at most `max_size` connections.
    pub(crate) fn new(max_size: u32) -> Homes {
        Homes {
            homes: (0..max_size.max(1))
                .map(|_| Home(Mutex::new(None)))
                .collect(),
            next: AtomicUsize::new(0),
            waiting: AtomicUsize::new(0),
        }
    }

    /// This thread's home: given out in turn to the threads that use these homes, so the first
    /// `max_size` threads have one each. A thread that goes back and forth between two databases gets a
    /// new one each time it changes (it only remembers the last database's).
    fn own(&self) -> usize {
        let me = self as *const Homes as usize;
        HOME.with(|h| {
            let (homes, own) = h.get();
            if homes == me {
                // (Modulo: a database dropped and another made at the same address may have fewer homes.)
                return own % self.homes.len();
            }
            let own = self.next.fetch_add(1, Ordering::Relaxed) % self.homes.len();
            h.set((me, own));
            own
        })
    }

    fn home(&self) -> &Home {
        &self.homes[self.own()]
    }

    /// The connection this thread gave back last, if it is still home.
    pub(crate) fn take_own(&self) -> Option<Kept> {
        self.home().try_take()
    }

    /// A connection kept in any home, looking in the next thread's first (so threads that find their own
    /// home empty do not all go to the same one).
    pub(crate) fn take_any(&self) -> Option<Kept> {
        let (to_own, past_own) = self.homes.split_at(self.own() + 1);
        past_own.iter().chain(to_own).find_map(Home::try_take)
    }

    /// For an acquire that found nothing: counts it as waiting, then looks in every home once more,
    /// blocking on each (a home being used is about to hold a connection, or to have lost it). With
    /// `None`, the caller waits on r2d2; it ends its wait with [`Waiting`]'s drop either way.
    pub(crate) fn before_waiting(&self) -> (Waiting<'_>, Option<Kept>) {
        self.waiting.fetch_add(1, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        let (before_own, from_own) = self.homes.split_at(self.own());
        let found = from_own.iter().chain(before_own).find_map(Home::take);
        (Waiting(self), found)
    }

    /// Gives a connection back: home, or, when its home is taken or an acquire waits, to r2d2 (by
    /// dropping it). The caller has checked that the connection may be used again.
    pub(crate) fn keep(&self, conn: Kept) {
        if self.waiting.load(Ordering::SeqCst) > 0 {
            return drop(conn);
        }
        let home = self.home();
        let mut slot = match home.0.try_lock() {
            Ok(slot) => slot,
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
            Err(TryLockError::WouldBlock) => return drop(conn),
        };
        if slot.is_some() {
            return drop(conn);
        }
        *slot = Some(conn);
        drop(slot);
        fence(Ordering::SeqCst);
        if self.waiting.load(Ordering::SeqCst) > 0 {
            // An acquire began waiting meanwhile and may have looked here before the connection came:
            // to r2d2 with it, which wakes that acquire. (If the acquire took it, nothing is left here.)
            drop(home.take());
        }
    }

    /// Connections kept in homes now (for the pool's idle count).
    pub(crate) fn kept(&self) -> u32 {
        self.homes
            .iter()
            .filter(|h| h.0.lock().unwrap_or_else(PoisonError::into_inner).is_some())
            .count() as u32
    }
}

/// An acquire counted as waiting, until dropped.
pub(crate) struct Waiting<'a>(&'a Homes);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.waiting.fetch_sub(1, Ordering::SeqCst);
    }
}
