//! The starvation monitor of PreemptDB's starvation-prevention policy.
//!
//! For the low-priority transaction running on a worker, `T_0` is when it started and `T_h` the
//! time spent on high-priority work that preempted it; at time `T_1` its starvation level is
//! `L = T_h / (T_1 - T_0)`. The dispatcher checks `L` before pushing high-priority work to the
//! worker, and the worker checks it after each high-priority transaction it runs in preemption.
//! Written by the worker, read by the dispatcher: atomics only.

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
    /// `T_h` in nanoseconds.
    high: AtomicU64,
}

impl StarvationMonitor {
    pub(crate) fn begin_low(&self, now: u64) {
        self.high.store(0, Ordering::Relaxed);
        self.started.store(now, Ordering::Release);
    }

    pub(crate) fn end_low(&self) {
        self.started.store(0, Ordering::Release);
    }

    pub(crate) fn add_high(&self, nanos: u64) {
        self.high.fetch_add(nanos, Ordering::Relaxed);
    }

    /// `L` at `now`, or `None` if no low-priority transaction is running.
    pub(crate) fn level(&self, now: u64) -> Option<f64> {
        let started = self.started.load(Ordering::Acquire);
        if started == 0 {
            return None;
        }
        let elapsed = now.saturating_sub(started).max(1);
        Some(self.high.load(Ordering::Relaxed) as f64 / elapsed as f64)
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
        m.add_high(100);
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
}
