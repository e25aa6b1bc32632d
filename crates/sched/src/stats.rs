//! Latency statistics.
//!
//! Each worker records into its own histograms (no sharing on the hot path); the driver merges them
//! at the end. Values are recorded in nanoseconds with three significant digits, which keeps the
//! relative error of every percentile below 0.1% from 1 ns up to an hour.

use hdrhistogram::Histogram;
use overtake_priority::{Group, Priority};
use serde::Serialize;

use crate::job::JobError;

/// Largest recordable latency: one hour, in nanoseconds. Longer values are clamped (and show up as
/// the maximum).
const MAX_NANOS: u64 = 3_600_000_000_000;

/// A latency histogram in nanoseconds.
#[derive(Clone, Debug)]
pub struct LatencyHistogram {
    inner: Histogram<u64>,
    /// Zeros, counted apart: most jobs are never preempted or parked, and a plain counter keeps
    /// those zeros out of the 270 KB of counts, which every job's other records share the cache
    /// with. Folded in (as zeros: a class never preempted reads 0, not 1 ns) when read.
    zeros: u64,
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl LatencyHistogram {
    /// An empty histogram.
    pub fn new() -> Self {
        // Bounds are constants that hdrhistogram accepts (low >= 1, high >= 2 * low, 3 digits).
        let mut inner =
            Histogram::new_with_bounds(1, MAX_NANOS, 3).expect("valid histogram bounds");
        // The counts (270 KB) come from the allocator as untouched zero pages; writing them once
        // now takes every page fault here, at set-up, instead of in the middle of a measured run.
        inner.reset();
        LatencyHistogram { inner, zeros: 0 }
    }

    /// Records one latency.
    #[inline]
    pub fn record_nanos(&mut self, nanos: u64) {
        if nanos == 0 {
            self.zeros += 1;
        } else {
            self.inner.saturating_record(nanos);
        }
    }

    /// Records one latency.
    #[inline]
    pub fn record(&mut self, latency: std::time::Duration) {
        self.record_nanos(u64::try_from(latency.as_nanos()).unwrap_or(u64::MAX));
    }

    /// Adds every value of `other`.
    pub fn merge(&mut self, other: &LatencyHistogram) {
        // Both histograms have the same bounds, so adding cannot fail.
        let _ = self.inner.add(&other.inner);
        self.zeros += other.zeros;
    }

    /// Every value recorded, the zeros counted apart included.
    fn folded(&self) -> std::borrow::Cow<'_, Histogram<u64>> {
        if self.zeros == 0 {
            return std::borrow::Cow::Borrowed(&self.inner);
        }
        let mut all = self.inner.clone();
        all.saturating_record_n(0, self.zeros);
        std::borrow::Cow::Owned(all)
    }

    /// Number of values recorded.
    pub fn count(&self) -> u64 {
        self.inner.len() + self.zeros
    }

    /// The distribution as (microseconds, fraction of values at or below) points, one per
    /// distinct recorded value (at the histogram's three significant digits), increasing: the
    /// steps of a CDF figure. Empty if nothing was recorded.
    pub fn cdf(&self) -> Vec<(f64, f64)> {
        let all = self.folded();
        let total = all.len() as f64;
        let mut seen = 0u64;
        all.iter_recorded()
            .map(|v| {
                seen += v.count_at_value();
                (v.value_iterated_to() as f64 / 1_000.0, seen as f64 / total)
            })
            .collect()
    }

    /// Percentiles in microseconds.
    pub fn summary(&self) -> LatencySummary {
        let all = self.folded();
        if all.is_empty() {
            return LatencySummary::default();
        }
        let us = |nanos: u64| nanos as f64 / 1_000.0;
        let at = |q: f64| us(all.value_at_quantile(q));
        LatencySummary {
            count: all.len(),
            mean: all.mean() / 1_000.0,
            p50: at(0.50),
            p90: at(0.90),
            p95: at(0.95),
            p99: at(0.99),
            p999: at(0.999),
            max: us(all.max()),
        }
    }
}

/// Latency percentiles, in microseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
#[non_exhaustive]
pub struct LatencySummary {
    /// Number of values.
    pub count: u64,
    /// Mean.
    pub mean: f64,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// Largest value.
    pub max: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_a_known_distribution() {
        let mut h = LatencyHistogram::new();
        for us in 1..=1000u64 {
            h.record_nanos(us * 1_000);
        }
        let s = h.summary();
        assert_eq!(s.count, 1000);
        let close = |a: f64, b: f64| (a - b).abs() / b < 0.002;
        assert!(close(s.p50, 500.0), "{s:?}");
        assert!(close(s.p90, 900.0), "{s:?}");
        assert!(close(s.p99, 990.0), "{s:?}");
        assert!(close(s.p999, 999.0), "{s:?}");
        assert!(close(s.max, 1000.0), "{s:?}");
    }

    /// Zeros counted apart read back as if recorded in the histogram: same percentiles, mean,
    /// count and maximum, also after merging.
    #[test]
    fn zeros_counted_apart_read_as_recorded() {
        let values: Vec<u64> = (0..3000u64)
            .map(|i| if i % 3 == 0 { 0 } else { i * 997 % 50_000 })
            .collect();
        let (mut split, mut plain) = (
            LatencyHistogram::new(),
            Histogram::<u64>::new_with_bounds(1, MAX_NANOS, 3).expect("bounds"),
        );
        let mut other = LatencyHistogram::new();
        for (i, &v) in values.iter().enumerate() {
            if i % 2 == 0 {
                split.record_nanos(v);
            } else {
                other.record_nanos(v);
            }
            plain.saturating_record(v);
        }
        split.merge(&other);
        let expected = LatencyHistogram {
            inner: plain,
            zeros: 0,
        };
        assert_eq!(split.count(), 3000);
        assert_eq!(split.summary(), expected.summary());
        let mut only_zeros = LatencyHistogram::new();
        only_zeros.record_nanos(0);
        assert_eq!(only_zeros.summary().count, 1);
        assert_eq!(only_zeros.summary().max, 0.0, "a zero reads as zero");
        assert_eq!(only_zeros.summary().p99, 0.0);
    }

    #[test]
    fn the_breakdown_splits_each_job_into_queued_running_preempted_waiting_and_its_client() {
        use std::time::{Duration, Instant};
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let mut c = ClassStats::default();
        // Queued 1 ms, then 10 ms on the worker: 2 paused, 3 parked (2 of them waiting for its
        // client), 5 running.
        let timing = JobTiming {
            arrival: t0,
            enqueued: t0,
            start: t0 + ms(1),
            end: t0 + ms(11),
            preemptions: 1,
            preempted: ms(2),
            waited: ms(3),
        };
        let mut interactive = crate::job::Outcome::committed();
        interactive.client_wait = ms(2);
        c.record(&timing, &interactive);
        // A second job that only ran, for 1 ms.
        let quick = JobTiming {
            start: t0,
            end: t0 + ms(1),
            preemptions: 0,
            preempted: Duration::ZERO,
            waited: Duration::ZERO,
            ..timing
        };
        // A client wait it claims beyond what it was parked is not booked.
        let mut overclaimed = crate::job::Outcome::committed();
        overclaimed.client_wait = ms(7);
        c.record(&quick, &overclaimed);
        let b = c.breakdown();
        let close = |a: f64, b: f64| (a - b).abs() <= b * 0.002 + 0.01;
        assert!(close(b.queued, 500.0), "{b:?}");
        assert!(close(b.running, 3_000.0), "{b:?}");
        assert!(close(b.preempted, 1_000.0), "{b:?}");
        assert!(close(b.waiting, 500.0), "{b:?}");
        assert!(close(b.client, 1_000.0), "{b:?}");
        assert_eq!(ClassStats::default().breakdown(), Breakdown::default());
    }

    #[test]
    fn the_cdf_rises_to_one_in_steps_at_the_recorded_values() {
        let mut h = LatencyHistogram::new();
        assert!(h.cdf().is_empty());
        for us in [10, 10, 20, 40] {
            h.record_nanos(us * 1_000);
        }
        let cdf = h.cdf();
        let fractions: Vec<f64> = cdf.iter().map(|p| p.1).collect();
        assert_eq!(fractions, [0.5, 0.75, 1.0]);
        assert!((cdf[0].0 - 10.0).abs() < 0.01 && (cdf[2].0 - 40.0).abs() < 0.05);
    }

    #[test]
    fn merge_adds_counts_and_extremes() {
        let mut a = LatencyHistogram::new();
        let mut b = LatencyHistogram::new();
        a.record_nanos(5_000);
        b.record_nanos(7_000_000);
        b.record_nanos(u64::MAX); // clamped, not lost
        a.merge(&b);
        let s = a.summary();
        assert_eq!(s.count, 3);
        assert!(s.max >= 3_600_000_000.0 * 0.999);
        assert_eq!(LatencyHistogram::new().summary(), LatencySummary::default());
    }
}

/// What happened to the jobs of one class or kind.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct ClassStats {
    /// Jobs that committed.
    pub committed: u64,
    /// Jobs that rolled back on purpose.
    pub rolled_back: u64,
    /// Jobs that failed.
    pub failed: u64,
    /// Attempts aborted by conflicts (and retried).
    pub conflicts: u64,
    /// Attempts aborted by failed validation (and retried).
    pub validation_failures: u64,
    /// Attempts that ran promoted after repeated failures.
    pub promoted: u64,
    /// Time spent in failed attempts, in nanoseconds.
    pub wasted_nanos: u128,
    /// Attempts aborted as deadlock victims (two-phase locking).
    pub deadlocks: u64,
    /// Attempts aborted by a more urgent transaction's lock policy or a wait-depth limit.
    pub lock_aborts: u64,
    /// Lock requests that waited.
    pub lock_waits: u64,
    /// Their QueueTime (request to grant), summed, in nanoseconds.
    pub lock_queue_nanos: u128,
    /// Their WaitExcess (request until the holders then had released), summed, in nanoseconds.
    pub lock_excess_nanos: u128,
    /// The first error of a failed job.
    pub first_error: Option<JobError>,
    /// Times jobs of this class were paused by preemption.
    pub preemptions: u64,
    /// End-to-end latency (end - arrival) of committed jobs.
    pub latency: LatencyHistogram,
    /// Scheduling delay (start - arrival) of every started job.
    pub sched_delay: LatencyHistogram,
    /// Time each job spent paused by preemption.
    pub preempted: LatencyHistogram,
    /// Time each job spent running: end - start - preempted - parked. Its total over a run is the worker
    /// time the class consumed, switches into and out of its context included.
    pub running: LatencyHistogram,
    /// Sum of `running`, in nanoseconds (exact, where the histogram's mean is rounded).
    pub running_nanos: u128,
    /// Total time jobs of this class spent parked, waiting for an event, in nanoseconds.
    pub waited_nanos: u128,
    /// The part of `waited_nanos` jobs spent waiting for their client's next request
    /// (`Outcome::client_wait`), in nanoseconds.
    pub client_wait_nanos: u128,
    /// Commit to durable: how long each committed job waited for the log after its commit
    /// (recorded only where a `sync` log made it wait).
    pub durable_wait: LatencyHistogram,
}

/// Where the jobs of a class spent their time, mean microseconds per job (McWherter's question:
/// which resource was an urgent transaction waiting for?).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
#[non_exhaustive]
pub struct Breakdown {
    /// From arrival to first start (in queues: the dispatcher's and the worker's).
    pub queued: f64,
    /// Running on a worker (switches included).
    pub running: f64,
    /// Paused by more urgent work.
    pub preempted: f64,
    /// Parked, waiting for an event (a lock, the log, ...) other than the client.
    pub waiting: f64,
    /// Parked, waiting for the client's next request (a transaction block between statements).
    pub client: f64,
}

impl ClassStats {
    /// Mean time per job queued, running, preempted and waiting, in microseconds.
    pub fn breakdown(&self) -> Breakdown {
        let jobs = self.sched_delay.count().max(1) as f64;
        let mean_us = |nanos: u128| nanos as f64 / jobs / 1_000.0;
        Breakdown {
            queued: self.sched_delay.summary().mean,
            running: mean_us(self.running_nanos),
            preempted: self.preempted.summary().mean,
            waiting: mean_us(self.waited_nanos.saturating_sub(self.client_wait_nanos)),
            client: mean_us(self.client_wait_nanos),
        }
    }

    /// Lock requests that waited, per attempt made.
    pub fn lock_waits_per_attempt(&self) -> f64 {
        self.lock_waits as f64 / self.attempts().max(1) as f64
    }

    /// Mean QueueTime and WaitExcess per lock wait, in microseconds (their difference is the
    /// mean WaitRemainder: each wait's excess is at most its queue time).
    pub fn lock_wait_means_us(&self) -> (f64, f64) {
        let per_wait = |nanos: u128| nanos as f64 / self.lock_waits.max(1) as f64 / 1e3;
        (
            per_wait(self.lock_queue_nanos),
            per_wait(self.lock_excess_nanos),
        )
    }

    /// Attempts made: every job's final one plus those aborted and retried.
    pub fn attempts(&self) -> u64 {
        self.committed
            + self.rolled_back
            + self.failed
            + self.conflicts
            + self.validation_failures
            + self.deadlocks
            + self.lock_aborts
    }
}

/// The timestamps the scheduler keeps for one job.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct JobTiming {
    /// Entered the system.
    pub arrival: std::time::Instant,
    /// Put into a worker's queue (or taken by a worker's own feed).
    pub enqueued: std::time::Instant,
    /// Started on its worker.
    pub start: std::time::Instant,
    /// Finished (committed, rolled back or failed).
    pub end: std::time::Instant,
    /// Times it was paused.
    pub preemptions: u32,
    /// Total time it was paused by preemption.
    pub preempted: std::time::Duration,
    /// Total time it was parked, waiting for an event.
    pub waited: std::time::Duration,
}

impl JobTiming {
    /// A job that started when it arrived and ran to `end` without a pause or a wait, as far as
    /// anyone could tell: one a client ran on its own thread.
    pub fn ran(start: std::time::Instant, end: std::time::Instant) -> JobTiming {
        JobTiming {
            arrival: start,
            enqueued: start,
            start,
            end,
            preemptions: 0,
            preempted: std::time::Duration::ZERO,
            waited: std::time::Duration::ZERO,
        }
    }
}

impl ClassStats {
    pub(crate) fn record(&mut self, timing: &JobTiming, outcome: &crate::job::Outcome) {
        use crate::job::Status;
        match outcome.status {
            Status::Committed => {
                self.committed += 1;
                self.latency
                    .record(timing.end.saturating_duration_since(timing.arrival));
                if !outcome.durable_wait.is_zero() {
                    self.durable_wait.record(outcome.durable_wait);
                }
            }
            Status::RolledBack => self.rolled_back += 1,
            Status::Failed => {
                self.failed += 1;
                if self.first_error.is_none() {
                    self.first_error.clone_from(&outcome.error);
                }
            }
        }
        self.conflicts += u64::from(outcome.conflicts);
        self.validation_failures += u64::from(outcome.validation_failures);
        self.promoted += u64::from(outcome.promoted);
        self.wasted_nanos += outcome.wasted.as_nanos();
        let locks = &outcome.locks;
        self.deadlocks += u64::from(locks.deadlocks);
        self.lock_aborts += u64::from(locks.aborts);
        self.lock_waits += u64::from(locks.waits);
        self.lock_queue_nanos += locks.queue.as_nanos();
        self.lock_excess_nanos += locks.excess.as_nanos();
        self.preemptions += u64::from(timing.preemptions);
        self.sched_delay
            .record(timing.start.saturating_duration_since(timing.arrival));
        self.preempted.record(timing.preempted);
        let running = timing
            .end
            .saturating_duration_since(timing.start)
            .saturating_sub(timing.preempted)
            .saturating_sub(timing.waited);
        self.running.record(running);
        self.running_nanos += running.as_nanos();
        self.waited_nanos += timing.waited.as_nanos();
        // Measured by the job around its own waits, so never more than the scheduler saw parked.
        self.client_wait_nanos += outcome.client_wait.min(timing.waited).as_nanos();
    }

    /// Adds `other` into this.
    pub fn merge(&mut self, other: &ClassStats) {
        self.committed += other.committed;
        self.rolled_back += other.rolled_back;
        self.failed += other.failed;
        self.conflicts += other.conflicts;
        self.validation_failures += other.validation_failures;
        self.promoted += other.promoted;
        self.wasted_nanos += other.wasted_nanos;
        self.deadlocks += other.deadlocks;
        self.lock_aborts += other.lock_aborts;
        self.lock_waits += other.lock_waits;
        self.lock_queue_nanos += other.lock_queue_nanos;
        self.lock_excess_nanos += other.lock_excess_nanos;
        if self.first_error.is_none() {
            self.first_error.clone_from(&other.first_error);
        }
        self.preemptions += other.preemptions;
        self.latency.merge(&other.latency);
        self.durable_wait.merge(&other.durable_wait);
        self.sched_delay.merge(&other.sched_delay);
        self.preempted.merge(&other.preempted);
        self.running.merge(&other.running);
        self.running_nanos += other.running_nanos;
        self.waited_nanos += other.waited_nanos;
        self.client_wait_nanos += other.client_wait_nanos;
    }
}

/// Statistics of a run, per priority level and per job kind.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct RunStats {
    /// Per priority level, indexed by [`Priority::level`].
    pub levels: Vec<ClassStats>,
    /// Per job kind (indexed like the executor's kinds).
    pub kinds: Vec<ClassStats>,
    /// Per group (tier and weight), in the order each first ended a job.
    pub groups: Vec<(Group, GroupStats)>,
    /// Time the workers had nothing to run (spinning or asleep waiting for work), summed over
    /// workers, in nanoseconds. The rest of their time went to jobs and to the scheduler itself.
    pub idle_nanos: u64,
    /// Traced jobs above the lowest level (with [`SchedConfig::trace`](crate::SchedConfig::trace)).
    pub traces: Vec<crate::trace::JobTrace>,
    /// Lengths of the workers' non-preemptible regions (with tracing).
    pub regions: overtake_runtime::region::trace::RegionTrace,
    /// Every job, in the order each worker ended them (with
    /// [`SchedConfig::record_jobs`](crate::SchedConfig::record_jobs)).
    pub jobs: Vec<JobRecord>,
}

/// What a group's jobs did: how many ended how, the worker time they took (their share of the
/// CPU), and their latency. Leaner than [`ClassStats`]: it is kept beside the level's and the
/// kind's for every job.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct GroupStats {
    /// Jobs that committed.
    pub committed: u64,
    /// Jobs that rolled back on purpose.
    pub rolled_back: u64,
    /// Jobs that failed.
    pub failed: u64,
    /// Time its jobs ran (end - start - paused - parked), summed, in nanoseconds.
    pub running_nanos: u128,
    /// End-to-end latency (end - arrival) of committed jobs.
    pub latency: LatencyHistogram,
}

impl GroupStats {
    fn record(&mut self, timing: &JobTiming, outcome: &crate::job::Outcome) {
        use crate::job::Status;
        match outcome.status {
            Status::Committed => {
                self.committed += 1;
                self.latency
                    .record(timing.end.saturating_duration_since(timing.arrival));
            }
            Status::RolledBack => self.rolled_back += 1,
            Status::Failed => self.failed += 1,
        }
        self.running_nanos += timing
            .end
            .saturating_duration_since(timing.start)
            .saturating_sub(timing.preempted)
            .saturating_sub(timing.waited)
            .as_nanos();
    }

    /// Adds `other` into this.
    pub fn merge(&mut self, other: &GroupStats) {
        self.committed += other.committed;
        self.rolled_back += other.rolled_back;
        self.failed += other.failed;
        self.running_nanos += other.running_nanos;
        self.latency.merge(&other.latency);
    }
}

/// One job's timestamps and end, as recorded with
/// [`SchedConfig::record_jobs`](crate::SchedConfig::record_jobs): raw data for one's own figures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct JobRecord {
    /// Its priority level.
    pub priority: Priority,
    /// Its kind (an index into the executor's kinds).
    pub kind: usize,
    /// When it arrived, in nanoseconds since the scheduler started.
    pub arrival_ns: u64,
    /// From arrival to start, in nanoseconds.
    pub queued_ns: u64,
    /// From arrival to end, in nanoseconds.
    pub latency_ns: u64,
    /// Time it was paused by preemption, in nanoseconds.
    pub preempted_ns: u64,
    /// How it ended.
    pub status: crate::job::Status,
}

impl Default for RunStats {
    fn default() -> Self {
        RunStats {
            levels: vec![ClassStats::default(); Priority::LEVELS],
            kinds: Vec::new(),
            groups: Vec::new(),
            idle_nanos: 0,
            traces: Vec::new(),
            regions: Default::default(),
            jobs: Vec::new(),
        }
    }
}

impl RunStats {
    /// Empty statistics for an executor with `kinds` job kinds.
    pub fn with_kinds(kinds: usize) -> Self {
        RunStats {
            kinds: vec![ClassStats::default(); kinds],
            ..RunStats::default()
        }
    }

    /// The jobs of priority level `priority`.
    pub fn class(&self, priority: Priority) -> &ClassStats {
        &self.levels[priority.level()]
    }

    /// Records one job of `priority`, `kind` and `group` (a worker does for each job; a client
    /// running work on its own thread, outside the scheduler, may too).
    pub fn record(
        &mut self,
        (priority, kind, group): (Priority, usize, Group),
        timing: &JobTiming,
        outcome: &crate::job::Outcome,
    ) {
        self.levels[priority.level()].record(timing, outcome);
        if let Some(k) = self.kinds.get_mut(kind) {
            k.record(timing, outcome);
        }
        self.group_mut(group).record(timing, outcome);
    }

    /// The jobs of `group`, if any ended.
    pub fn group(&self, group: Group) -> Option<&GroupStats> {
        self.groups
            .iter()
            .find(|(g, _)| *g == group)
            .map(|(_, s)| s)
    }

    fn group_mut(&mut self, group: Group) -> &mut GroupStats {
        let at = match self.groups.iter().position(|(g, _)| *g == group) {
            Some(at) => at,
            None => {
                self.groups.push((group, GroupStats::default()));
                self.groups.len() - 1
            }
        };
        &mut self.groups[at].1
    }

    /// Adds `other` into this.
    pub fn merge(&mut self, other: &RunStats) {
        for (mine, theirs) in self.levels.iter_mut().zip(&other.levels) {
            mine.merge(theirs);
        }
        if self.kinds.len() < other.kinds.len() {
            self.kinds.resize(other.kinds.len(), ClassStats::default());
        }
        for (mine, theirs) in self.kinds.iter_mut().zip(&other.kinds) {
            mine.merge(theirs);
        }
        for (group, theirs) in &other.groups {
            self.group_mut(*group).merge(theirs);
        }
        self.idle_nanos += other.idle_nanos;
        self.traces.extend_from_slice(&other.traces);
        self.regions.merge(&other.regions);
        self.jobs.extend_from_slice(&other.jobs);
    }
}
