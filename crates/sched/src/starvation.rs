//! The starvation monitor of PreemptDB's starvation-prevention policy.
//!
//! The worker's monitor follows the task at the bottom of its preemption chain (the one running
//! when no other task is paused by preemption: typically the low-priority transaction). For it, `T_0` is when it started and `T_h` the
//! time spent on high-priority work that preempted it; at time `T_1` its starvation level is
//! `L = T_h / (T_1 - T_0)`. `T_h` includes the preemption in progress, if any: the worker checks
//! `L` after each high-priority transaction it runs in preemption, and those checks happen during
//! the preemption, so a level that only counted finished preemptions would never rise while one
//! lasts, and a stream of urgent work could keep the transaction paused indefinitely. With the
//! in-progress time counted, a threshold `F` leaves the low-priority transaction at least about
//! `1 - F` of the worker while it runs. The dispatcher checks `L` before pushing high-priority work
//! to the worker. Written by the worker, read by the dispatcher: atomics only.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// Nanoseconds since a shared epoch, so that instants fit in atomics.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Clock {
    epoch: Instant,
}

impl Clock {
    pub(crate) fn new(epoch: Instant) -> Self {
        Clock { epoch }
    }

    pub(crate) fn nanos(&self, at: Instant) -> u64 {
        at.saturating_duration_since(self.epoch).as_nanos() as u64 + 1
    }
}

/// `T_0` and `T_h` of one worker.
#[derive(Debug, Default)]
pub(crate) struct StarvationMonitor {
    /// `T_0` in clock nanoseconds, 0 while no low-priority transaction runs.
    started: AtomicU64,
    /// `T_h` of the preemptions that have ended, in nanoseconds.
    high: AtomicU64,
    /// When the preemption in progress began (clock nanoseconds), 0 if none.
    preempted_since: AtomicU64,
}

impl StarvationMonitor {
    #[cfg(test)]
    pub(crate) fn begin_low(&self, now: u64) {
        self.track(now, 0);
    }

    /// From now on the monitor follows a task that started at `started` and has been paused by
    /// preemption for `high` nanoseconds so far.
    pub(crate) fn track(&self, started: u64, high: u64) {
        self.high.store(high, Ordering::Relaxed);
        self.preempted_since.store(0, Ordering::Relaxed);
        self.started.store(started, Ordering::Release);
    }

    pub(crate) fn end_low(&self) {
        self.started.store(0, Ordering::Release);
    }

    /// The running low-priority transaction is paused for urgent work from `now` on.
    pub(crate) fn begin_preemption(&self, now: u64) {
        self.preempted_since.store(now, Ordering::Release);
    }

    /// The preemption that began with [`begin_preemption`](Self::begin_preemption) ends at `now`.
    /// `T_h` grows before the in-progress mark is cleared, so a concurrent reader may count the
    /// preemption twice for an instant (and hold back one push), never zero times.
    pub(crate) fn end_preemption(&self, now: u64) {
        let since = self.preempted_since.load(Ordering::Acquire);
        if since != 0 {
            self.high
                .fetch_add(now.saturating_sub(since), Ordering::Relaxed);
        }
        self.preempted_since.store(0, Ordering::Release);
    }

    /// `L` at `now`, or `None` if no low-priority transaction is running.
    pub(crate) fn level(&self, now: u64) -> Option<f64> {
        let started = self.started.load(Ordering::Acquire);
        if started == 0 {
            return None;
        }
        let since = self.preempted_since.load(Ordering::Acquire);
        let in_progress = if since == 0 {
            0
        } else {
            now.saturating_sub(since)
        };
        let high = self.high.load(Ordering::Relaxed) + in_progress;
        let elapsed = now.saturating_sub(started).max(1);
        Some(high as f64 / elapsed as f64)
    }

    /// Whether high-priority work may preempt the running low-priority transaction now.
    pub(crate) fn allows_preemption(&self, now: u64, threshold: f64) -> bool {
        self.level(now).is_none_or(|level| level < threshold)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn level_is_high_time_over_elapsed_time() {
        let m = StarvationMonitor::default();
        assert_eq!(m.level(10), None);
        assert!(
            m.allows_preemption(10, 0.0),
            "nothing to starve between transactions"
        );
        m.begin_low(1_000);
        assert_eq!(m.level(1_000 + 400), Some(0.0));
        assert!(
            !m.allows_preemption(1_400, 0.0),
            "threshold 0 never preempts a transaction"
        );
        m.begin_preemption(1_300);
        m.end_preemption(1_400);
        assert_eq!(m.level(1_400), Some(0.25));
        assert!(m.allows_preemption(1_400, 0.3));
        assert!(!m.allows_preemption(1_400, 0.25));
        m.end_low();
        assert_eq!(m.level(2_000), None);
        m.begin_low(3_000);
        assert_eq!(
            m.level(3_500),
            Some(0.0),
            "T_h restarts with each transaction"
        );
    }

    #[test]
    fn the_preemption_in_progress_counts() {
        let m = StarvationMonitor::default();
        m.begin_low(1_000);
        m.begin_preemption(1_100);
        // 900 of the 1,000 ns since the start went to urgent work, still going on.
        assert_eq!(m.level(2_000), Some(0.9));
        assert!(
            !m.allows_preemption(2_000, 0.5),
            "a long preemption is cut short"
        );
        m.end_preemption(2_000);
        assert_eq!(m.level(2_000), Some(0.9), "and counted once when it ends");
        assert_eq!(m.level(11_000), Some(0.09));
    }
}
