//! Waiting for the writer: a commit's record (by LSN) or every commit up to a timestamp (a
//! reader's, by timestamp) becoming durable, or the log stopping.
//!
//! Two kinds of waiter: a task or thread that parks until the writer unparks it
//! ([`Progress::wait`]), and a [`Waker`] registered by a polled acknowledgement
//! (`log::acknowledgement`), which lets a task end at its in-memory commit while its worker
//! keeps only the acknowledgement. Every wake runs inside the writer's region: a waker must
//! not block (a scheduler's sets a flag and unparks a thread).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::Waker;

use overtake_runtime::NoPreemptGuard;
use overtake_runtime::park::{self, Unparker};

use super::{Shared, count};

/// Who waits, and how to wake it.
pub(super) enum Waiter {
    /// A parked task or thread.
    Parked(Unparker),
    /// A polled acknowledgement.
    Polled(Waker),
}

impl Waiter {
    pub(super) fn wake(&self) {
        match self {
            Waiter::Parked(unparker) => unparker.unpark(),
            Waiter::Polled(waker) => waker.wake_by_ref(),
        }
    }

    fn is(&self, me: &Unparker) -> bool {
        matches!(self, Waiter::Parked(u) if u.wakes_same(me))
    }
}

/// What a waiter waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Target {
    /// The log durable up to this LSN (a commit's record ends there).
    Lsn(u64),
    /// Every commit at or before this timestamp durable (what a reader read).
    Ts(u64),
}

/// The writer's progress, to wait on: kept by an acknowledgement after the transaction (and
/// its borrow of the database) ended.
#[derive(Clone)]
pub(crate) struct Progress(pub(super) Arc<Shared>);

impl Progress {
    /// Whether `target` is durable.
    pub(crate) fn reached(&self, target: Target) -> bool {
        match target {
            Target::Lsn(lsn) => self.0.durable.load(Ordering::Acquire) >= lsn,
            Target::Ts(ts) => self.0.durable_ts.load(Ordering::Acquire) >= ts,
        }
    }

    /// Why the log stopped, if it has.
    pub(crate) fn stopped(&self) -> Option<&str> {
        self.0.stopped.get().map(String::as_str)
    }

    /// Asks for a flush at once (an urgent commit's); returns when it asked, for
    /// [`note_urgent`](Self::note_urgent).
    pub(crate) fn ask_urgent(&self) -> u64 {
        self.0.ask_for_urgent_flush();
        self.0.nanos()
    }

    /// Has `waker` woken once `target` is durable or the log stops. The caller looks again
    /// after registering (the writer may have passed `target` before it did).
    pub(crate) fn register(&self, target: Target, waker: Waker) {
        self.push(target, Waiter::Polled(waker));
    }

    fn push(&self, target: Target, waiter: Waiter) {
        let region = NoPreemptGuard::new();
        match target {
            Target::Lsn(lsn) => self.0.waiters.lock(&region).push((lsn, waiter)),
            Target::Ts(ts) => self.0.ts_waiters.lock(&region).push((ts, waiter)),
        }
    }

    /// An urgent commit that asked for its flush at `asked` (see `ask_urgent`) found its record
    /// ending at `lsn` durable now: counts the time from asking to the flush that passed it, and
    /// from then until now (if that flush is still remembered).
    pub(crate) fn note_urgent(&self, lsn: u64, asked: u64) {
        let shared = &self.0;
        let now = shared.nanos();
        let region = NoPreemptGuard::new();
        let published = {
            let published = shared.published.lock(&region);
            // Ordered by LSN: the first flush that reached ours.
            let i = published.partition_point(|&(durable, _)| durable < lsn);
            published.get(i).map(|&(_, at)| at.max(asked))
        };
        drop(region);
        if let Some(published) = published {
            count(&shared.asked_to_durable, published - asked);
            count(&shared.durable_to_resumed, now.saturating_sub(published));
        }
    }

    /// Parks until `target` is durable, or returns why the log stopped. `urgent`: flush at
    /// once rather than at the end of the interval. Must not be called inside a region.
    pub(crate) fn wait(&self, target: Target, urgent: bool) -> Result<(), String> {
        if self.reached(target) {
            return Ok(());
        }
        let asked = urgent.then(|| self.ask_urgent());
        let me = park::current_unparker();
        self.push(target, Waiter::Parked(me.clone()));
        loop {
            // Returning leaves its entry for the writer to drop at the next flush (an unpark
            // then is a spurious wake, which parking allows): cheaper than a second latch here.
            if self.reached(target) {
                if let (Some(asked), Target::Lsn(lsn)) = (asked, target) {
                    self.note_urgent(lsn, asked);
                }
                return Ok(());
            }
            if let Some(why) = self.stopped() {
                let why = why.to_owned();
                let region = NoPreemptGuard::new();
                let waiters = match target {
                    Target::Lsn(_) => &self.0.waiters,
                    Target::Ts(_) => &self.0.ts_waiters,
                };
                waiters.lock(&region).retain(|(_, w)| !w.is(&me));
                return Err(why);
            }
            park::park();
        }
    }
}
