//! Starvation control: PreemptDB's starvation level `L = T_h / (T_1 - T_0)`, extended from one
//! low-priority transaction to the low-priority class under sustained overload.
//!
//! PreemptDB measures `L` for the low-priority transaction in progress: `T_0` is its start, `T_h`
//! the time spent on urgent work that preempted it, and a threshold `F` decides two things: whether
//! the dispatcher pushes more urgent work to the worker, and whether the worker, after an urgent
//! transaction, goes back to the paused one. That bounds a transaction that is already running. It
//! does not bound the class: a worker that takes queued urgent work first at every transaction
//! boundary never starts the next low-priority transaction while urgent work keeps coming.
//!
//! Here `L` is measured per worker over a *conflict period*: time during which the worker has both
//! protected work (the least urgent level that has work: a paused or ready task, or a queued job)
//! and more urgent work. `T_0` is the period's start and `T_h` the time the worker spent running
//! the more urgent work in it, the interval in progress included (checks happen during it, and a
//! level that only counted finished intervals would never rise while one lasts). The same `L`
//! decides all three places: the dispatcher's push, the preemption of the protected task, and
//! the choice at a transaction boundary between the most urgent work and the protected work (a
//! paused task first, else a new job). So with threshold `F < 1` the protected class keeps about
//! `1 - F` of a worker it would otherwise fill, whatever the urgent load; `F = 0` never runs
//! urgent work while protected work waits; `F >= 1` never limits (urgent work always first).
//!
//! A period ends when the conflict does. A long one is rebased to its recent past (`HORIZON`),
//! keeping `L`: a low-priority transaction that ran alone for minutes does not buy the urgent
//! class minutes of the worker when urgent work starts arriving.
//!
//! Written by the worker, read by the dispatcher: atomics only. A reader may see a rebase half
//! done (the new start with the old `T_h`) and decide one push wrongly; never more.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use overtake_priority::Priority;

/// How much of a long conflict period the level remembers: about the last 50-100 ms.
const HORIZON: u64 = 100_000_000;

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

/// True if `threshold` limits anything (thresholds at or above 1 never do).
pub(crate) fn limits(threshold: f64) -> bool {
    threshold < 1.0
}

/// True if, at starvation level `level` (`None`: no conflict period yet), the protected work is
/// owed the worker now: it runs (or keeps running) instead of the more urgent work.
pub(crate) fn protected_owed(threshold: f64, level: Option<f64>) -> bool {
    limits(threshold) && level.unwrap_or(0.0) >= threshold
}

/// At a transaction boundary with work waiting at levels `lowest` up to `highest`, the level
/// that runs next.
pub(crate) fn boundary_choice(
    threshold: f64,
    level: Option<f64>,
    lowest: Priority,
    highest: Priority,
) -> Priority {
    if lowest < highest && protected_owed(threshold, level) {
        lowest
    } else {
        highest
    }
}

/// `T_0` and `T_h` of one worker's conflict period.
#[derive(Debug, Default)]
pub(crate) struct StarvationMonitor {
    /// `T_0` in clock nanoseconds, 0 while no period is open.
    started: AtomicU64,
    /// `T_h` of the urgent intervals that have ended, in nanoseconds.
    high: AtomicU64,
    /// When the urgent interval in progress began (clock nanoseconds), 0 if none.
    urgent_since: AtomicU64,
}

impl StarvationMonitor {
    /// Opens a period at `now` unless one is open.
    fn open(&self, now: u64) {
        if self.started.load(Ordering::Relaxed) == 0 {
            self.high.store(0, Ordering::Relaxed);
            self.urgent_since.store(0, Ordering::Relaxed);
            self.started.store(now, Ordering::Release);
        }
    }

    /// Ends the urgent interval in progress, if any, adding it to `T_h`.
    fn end_urgent(&self, now: u64) {
        let since = self.urgent_since.load(Ordering::Relaxed);
        if since != 0 {
            // `T_h` grows before the in-progress mark is cleared, so a reader may count the
            // interval twice for an instant (and hold back one push), never zero times.
            self.high
                .fetch_add(now.saturating_sub(since), Ordering::Relaxed);
            self.urgent_since.store(0, Ordering::Release);
        }
    }

    /// Keeps a long period to its recent past, with the same level.
    fn rebase(&self, now: u64) {
        let started = self.started.load(Ordering::Relaxed);
        let elapsed = now.saturating_sub(started);
        if started == 0 || elapsed <= HORIZON {
            return;
        }
        let high = self.high.load(Ordering::Relaxed);
        let kept = HORIZON / 2;
        let scaled = (u128::from(high) * u128::from(kept) / u128::from(elapsed)) as u64;
        self.high.store(scaled, Ordering::Relaxed);
        self.started.store(now - kept, Ordering::Release);
    }

    /// More urgent work runs while protected work waits.
    pub(crate) fn urgent_runs(&self, now: u64) {
        self.open(now);
        if self.urgent_since.load(Ordering::Relaxed) == 0 {
            self.rebase(now);
            self.urgent_since.store(now, Ordering::Release);
        }
    }

    /// Protected work runs while more urgent work waits.
    pub(crate) fn protected_runs(&self, now: u64) {
        self.open(now);
        self.end_urgent(now);
        self.rebase(now);
    }

    /// No conflict: the period (if any) ends.
    pub(crate) fn close(&self) {
        self.started.store(0, Ordering::Release);
        self.urgent_since.store(0, Ordering::Relaxed);
        self.high.store(0, Ordering::Relaxed);
    }

    /// `L` at `now`, or `None` while no period is open.
    pub(crate) fn level(&self, now: u64) -> Option<f64> {
        let started = self.started.load(Ordering::Acquire);
        if started == 0 {
            return None;
        }
        let since = self.urgent_since.load(Ordering::Acquire);
        let in_progress = if since == 0 {
            0
        } else {
            now.saturating_sub(since)
        };
        let high = self.high.load(Ordering::Relaxed) + in_progress;
        let elapsed = now.saturating_sub(started).max(1);
        Some((high as f64 / elapsed as f64).min(1.0))
    }

    /// Whether more urgent work may be pushed to (and preempt) the worker at `now`.
    /// `running_protected`: it runs work of the least urgent level (with no period open yet, that
    /// work has had nothing taken from it; otherwise there is nothing to protect).
    pub(crate) fn allows_urgent(&self, now: u64, threshold: f64, running_protected: bool) -> bool {
        match self.level(now) {
            Some(level) => !protected_owed(threshold, Some(level)),
            None => !(running_protected && protected_owed(threshold, None)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_boundary_choice_follows_the_level_against_the_threshold() {
        let (low, high) = (Priority::LOW, Priority::HIGH);
        // Under the threshold the most urgent work runs; at or over it, the protected work.
        assert_eq!(boundary_choice(0.5, Some(0.4), low, high), high);
        assert_eq!(boundary_choice(0.5, Some(0.5), low, high), low);
        assert_eq!(boundary_choice(0.5, Some(0.9), low, high), low);
        // No period yet: nothing has been spent on urgent work.
        assert_eq!(boundary_choice(0.5, None, low, high), high);
        // 0 gives the protected work everything; 1 and above never limit.
        assert_eq!(boundary_choice(0.0, None, low, high), low);
        assert_eq!(boundary_choice(0.0, Some(0.0), low, high), low);
        assert_eq!(boundary_choice(1.0, Some(1.0), low, high), high);
        assert_eq!(boundary_choice(100.0, Some(1.0), low, high), high);
        // Work of one level only: no conflict.
        assert_eq!(boundary_choice(0.0, Some(1.0), high, high), high);
        // Three levels: the least urgent one is protected.
        assert_eq!(
            boundary_choice(0.25, Some(0.3), low, Priority::CRITICAL),
            low
        );
    }

    #[test]
    fn the_level_is_urgent_time_over_the_period_with_the_interval_in_progress() {
        let m = StarvationMonitor::default();
        assert_eq!(m.level(10), None);
        assert!(m.allows_urgent(10, 0.5, true), "no conflict, no limit");
        assert!(
            !m.allows_urgent(10, 0.0, true),
            "threshold 0 owes the protected work everything"
        );
        assert!(m.allows_urgent(10, 0.0, false), "unless none runs");
        m.protected_runs(1_000);
        assert_eq!(m.level(1_400), Some(0.0));
        m.urgent_runs(1_400);
        // 600 of the 1,000 ns since the start went to urgent work, still going on.
        assert_eq!(m.level(2_000), Some(0.6));
        assert!(
            !m.allows_urgent(2_000, 0.5, false),
            "a long interval is cut short"
        );
        m.urgent_runs(2_000);
        assert_eq!(m.level(2_000), Some(0.6), "one interval, not two");
        m.protected_runs(2_000);
        assert_eq!(m.level(2_000), Some(0.6), "counted once when it ends");
        assert_eq!(m.level(3_000), Some(0.3));
        m.close();
        assert_eq!(m.level(4_000), None);
        m.urgent_runs(5_000);
        assert_eq!(
            m.level(5_500),
            Some(1.0),
            "a new period starts from nothing"
        );
    }

    #[test]
    fn a_long_period_is_rebased_to_its_recent_past_with_the_same_level() {
        let m = StarvationMonitor::default();
        m.protected_runs(1);
        // Ten horizons of protected work alone, then urgent work.
        let later = 1 + 10 * HORIZON;
        m.urgent_runs(later);
        assert_eq!(m.level(later), Some(0.0));
        // Half a horizon of urgent work now weighs as much as the half horizon kept before it.
        let half = HORIZON / 2;
        assert_eq!(m.level(later + half), Some(0.5));
        m.protected_runs(later + half);
        assert_eq!(m.level(later + half), Some(0.5));
    }
}
