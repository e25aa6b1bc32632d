//! What a worker keeps of each finished job: its timing in the statistics (and in the per-job
//! record when asked for), and for traced jobs where their time went (see `crate::trace`). Runs
//! inside regions; it must never block on anything but the statistics' region lock.

use std::sync::atomic::Ordering;
use std::time::Instant;

use overtake_runtime::NoPreemptGuard;

use super::WorkerCore;
use crate::job::{Executor, Outcome};
use crate::stats::{JobRecord, JobTiming};

impl<E: Executor> WorkerCore<E> {
    /// Keeps where the time of a traced job went (see `crate::trace`).
    pub(super) fn trace(
        &self,
        job: &E::Job,
        (arrival, enqueued, end): (Instant, Instant, Instant),
        times: &crate::task::TaskTimes,
    ) {
        let nanos = |d: std::time::Duration| d.as_nanos() as u64;
        let start = times.started;
        let delivery = self
            .paused_for_urgent
            .get()
            .filter(|&paused| paused >= enqueued && paused <= start)
            .map_or(0, |paused| nanos(paused - enqueued));
        let usage = &times.usage.usage;
        let running = end
            .saturating_duration_since(start)
            .saturating_sub(times.preempted)
            .saturating_sub(times.waited);
        let region = NoPreemptGuard::new();
        self.shared
            .stats
            .lock(&region)
            .traces
            .push(crate::trace::JobTrace {
                level: self.exec.priority(job).level(),
                latency_ns: nanos(end.saturating_duration_since(arrival)),
                queued_ns: nanos(start.saturating_duration_since(arrival)),
                delivery_ns: delivery,
                running_ns: nanos(running),
                cpu_ns: usage.cpu_ns,
                preempted_ns: nanos(times.preempted),
                waited_ns: nanos(times.waited),
                faults: usage.minor_faults + usage.major_faults,
                involuntary_switches: usage.involuntary_switches,
                longest_region_ns: times.usage.longest_region_ns,
            });
    }

    pub(super) fn record(
        &self,
        job: &E::Job,
        arrival: Instant,
        enqueued: Instant,
        times: crate::task::TaskTimes,
        end: Instant,
        outcome: &Outcome,
    ) {
        let timing = JobTiming {
            arrival,
            enqueued,
            start: times.started,
            end,
            preemptions: times.preemptions,
            preempted: times.preempted,
            waited: times.waited,
        };
        let (priority, kind) = (self.exec.priority(job), self.exec.kind(job));
        let group = self.exec.group(job);
        let region = NoPreemptGuard::new();
        let mut stats = self.shared.stats.lock(&region);
        stats.record((priority, kind, group), &timing, outcome);
        if self.config.record_jobs {
            let nanos = |d: std::time::Duration| d.as_nanos() as u64;
            stats.jobs.push(JobRecord {
                priority,
                kind,
                arrival_ns: self.clock.nanos(arrival) - 1,
                queued_ns: nanos(timing.start.saturating_duration_since(arrival)),
                latency_ns: nanos(end.saturating_duration_since(arrival)),
                preempted_ns: nanos(timing.preempted),
                status: outcome.status,
            });
        }
        drop(stats);
        drop(region);
        self.shared.finished.fetch_add(1, Ordering::Release);
    }
}
