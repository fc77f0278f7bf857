//! Stage 7 — a pool gate. Your code. Read `book/src/07-pools.md`, then make `just check 07` pass. The
//! types and the shape of the queue are given; you write how callers arrive, wait (a thread and a task
//! each their own way), give up, and how a permit is handed on.
// When you are done, delete this comment and the `#![allow(…)]` under it: they keep the compiler quiet
// while the bodies are `todo!()`s (unused parameters, imports, helpers); then its warnings are worth reading.
#![allow(
    unused_variables,
    unused_imports,
    unused_mut,
    dead_code,
    unreachable_code
)]

use std::collections::VecDeque;
use std::fmt;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

// ANCHOR: config
/// How a gate admits callers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GateConfig {
    /// Callers inside at once (the pool's size).
    pub max: usize,
    /// Callers waiting at most; the next one is refused at once.
    pub max_waiting: usize,
    /// How long a caller waits at most.
    pub deadline: Duration,
}

/// Why a caller was not let in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GateError {
    /// The queue was full: refused at once, without waiting.
    Saturated {
        /// How many were waiting.
        waiting: usize,
    },
    /// The caller waited its whole deadline.
    Timeout {
        /// How long it waited: its whole deadline, `GateConfig::deadline` (a caller's deadline runs from
        /// the moment it joins the line).
        waited: Duration,
    },
}

impl fmt::Display for GateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GateError::Saturated { waiting } => {
                write!(f, "{waiting} callers are already waiting: refused at once")
            }
            GateError::Timeout { waited } => write!(f, "nothing came free in {waited:?}"),
        }
    }
}

impl std::error::Error for GateError {}

/// The gate now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GateStatus {
    /// Callers inside (permits out).
    pub in_use: usize,
    /// Callers in the queue.
    pub waiting: usize,
}
// ANCHOR_END: config

// ANCHOR: gate
/// First come, first served admission for threads and tasks alike: at most `max` inside, at most
/// `max_waiting` in line, nobody waiting past the deadline.
///
/// Two kinds of lock: the gate's `state`, and each waiter's `granted`. Never hold both at once: `release`
/// lets go of `state` before it sets a waiter's flag, and a waiting thread lets go of its flag before it
/// calls `give_up`. Two threads taking them in opposite orders wait for each other for ever.
#[derive(Clone)]
pub struct Gate {
    inner: Arc<Inner>,
}

struct Inner {
    config: GateConfig,
    state: Mutex<State>,
}

struct State {
    in_use: usize,
    queue: VecDeque<Arc<Waiter>>,
}

/// One caller in line. The one who lets it in sets `granted` and wakes it, whichever way it waits: a
/// thread on the condition variable, a task on the `Notify`. Wake both with `notify_one`: a `Notify` keeps
/// one `notify_one` for a task that is not waiting yet, while `notify_waiters` wakes only tasks already
/// waiting — one between checking its flag and waiting would sleep to its deadline.
#[derive(Default)]
struct Waiter {
    granted: Mutex<bool>,
    thread: Condvar,
    task: Notify,
}

/// Being inside. Dropped, it lets the next caller in (or frees its place).
pub struct Permit {
    gate: Gate,
}

impl Drop for Permit {
    fn drop(&mut self) {
        self.gate.release();
    }
}

impl Gate {
    /// A gate admitting as `config` says.
    pub fn new(config: GateConfig) -> Gate {
        Gate {
            inner: Arc::new(Inner {
                config,
                state: Mutex::new(State {
                    in_use: 0,
                    queue: VecDeque::new(),
                }),
            }),
        }
    }

    /// How many are inside and waiting.
    pub fn status(&self) -> GateStatus {
        todo!("the gate's status")
    }

    /// Enters from a thread: at once if there is room and nobody waits, else in line until let in or the
    /// deadline passes.
    pub fn enter_blocking(&self) -> Result<Permit, GateError> {
        todo!("enter from a thread")
    }

    /// Enters from a task, as [`Gate::enter_blocking`] does from a thread. Dropping the future while it
    /// waits takes it out of line — and hands on a permit that reached it as it was dropped.
    ///
    /// The deadline: `tokio::time::timeout_at` takes a `tokio::time::Instant` (`tokio::time::Instant::now()
    /// + deadline`, or `tokio::time::Instant::from_std`), not a `std::time::Instant`.
    pub async fn enter(&self) -> Result<Permit, GateError> {
        todo!("enter from a task")
    }

    /// Comes to the gate: in at once, refused at once, or in line.
    fn arrive(&self) -> Result<Arrival, GateError> {
        todo!("come to the gate")
    }

    /// A waiter stops waiting. Still in line: it leaves the line (`Timeout`, with the whole deadline as
    /// `waited`). Not in line any more: a permit was handed to it in the meantime, and it is its own.
    fn give_up(&self, waiter: &Arc<Waiter>) -> Result<Permit, GateError> {
        todo!("leave the line, or keep a permit that arrived")
    }

    /// A permit comes back: straight to the first in line (the count inside does not change), or free.
    fn release(&self) {
        todo!("hand the permit on, or free it")
    }

    fn permit(&self) -> Permit {
        Permit { gate: self.clone() }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        lock(&self.inner.state)
    }
}

enum Arrival {
    In(Permit),
    InLine(Arc<Waiter>),
}

/// A task in line; dropped before it got in (its future was cancelled), it gives up its place.
///
/// Disarm it once the task is in or has given up by itself: set `waiter` to `None`. Armed, its `Drop`
/// calls `give_up` again — and for a task already let in, that hands its permit on a second time: one
/// caller too many gets in.
struct InLine<'g> {
    gate: &'g Gate,
    waiter: Option<Arc<Waiter>>,
}

impl Drop for InLine<'_> {
    fn drop(&mut self) {
        todo!("give up the place in line")
    }
}

/// A mutex's data even after a panic elsewhere: every change under these locks is a single step.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
// ANCHOR_END: gate
