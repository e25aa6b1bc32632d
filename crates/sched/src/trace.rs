//! Where the slowest urgent jobs' time went ([`SchedConfig::trace`](crate::SchedConfig::trace)):
//! per job, its latency split into queueing (waiting for the worker to pause less urgent work,
//! and waiting behind other urgent work), running (on the CPU, or switched out by the operating
//! system), paused and parked time, with the page faults it took and the longest
//! non-preemptible region its worker ran while it ran; and, per run, the lengths of every
//! non-preemptible region and where the longest were opened.
//!
//! Tracing costs two system calls per slice of an urgent task and two clock reads per region, so
//! it is a diagnostic mode, off by default. Must never change what runs when.

use overtake_priority::Priority;
use overtake_runtime::os::thread::ThreadUsage;
use overtake_runtime::region::trace::RegionTrace;

/// One traced job.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct JobTrace {
    /// Its priority level.
    pub level: usize,
    /// Arrival to end.
    pub latency_ns: u64,
    /// Arrival to start.
    pub queued_ns: u64,
    /// The part of the queueing spent waiting for its worker to pause the less urgent task it
    /// was running (the preemption's delivery).
    pub delivery_ns: u64,
    /// Start to end, minus paused and parked time.
    pub running_ns: u64,
    /// CPU time of its worker's thread while it ran.
    pub cpu_ns: u64,
    /// Paused by more urgent work.
    pub preempted_ns: u64,
    /// Parked (waiting for a lock, a ticket).
    pub waited_ns: u64,
    /// Page faults while it ran (a first touch of fresh memory is one).
    pub faults: u64,
    /// Times the operating system switched its thread out while it ran.
    pub involuntary_switches: u64,
    /// The longest non-preemptible region its worker ran while it ran.
    pub longest_region_ns: u64,
}

/// What a task's slices accumulated (kept in its task slot while it lives).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct SliceUsage {
    pub(crate) usage: ThreadUsage,
    pub(crate) longest_region_ns: u64,
}

impl SliceUsage {
    /// Adds one slice: what the thread counted during it, and its longest region.
    pub(crate) fn add(&mut self, slice: &ThreadUsage, longest_region_ns: u64) {
        let u = &mut self.usage;
        u.minor_faults += slice.minor_faults;
        u.major_faults += slice.major_faults;
        u.involuntary_switches += slice.involuntary_switches;
        u.cpu_ns += slice.cpu_ns;
        self.longest_region_ns = self.longest_region_ns.max(longest_region_ns);
    }
}

/// Means over a group of traced jobs, in microseconds (counts as they are).
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct TraceMeans {
    /// Jobs in the group.
    pub jobs: usize,
    /// The group's shortest latency (its lower edge).
    pub latency_from_us: f64,
    /// Arrival to end.
    pub latency_us: f64,
    /// Waiting for the worker to pause less urgent work.
    pub delivery_us: f64,
    /// Queued behind other work of its level or above (queued minus delivery).
    pub behind_us: f64,
    /// Running on the CPU.
    pub on_cpu_us: f64,
    /// Running but switched out by the operating system (running minus CPU time).
    pub off_cpu_us: f64,
    /// Paused by more urgent work.
    pub preempted_us: f64,
    /// Parked.
    pub waited_us: f64,
    /// Page faults taken while running.
    pub faults: f64,
    /// Times the operating system switched the thread out.
    pub involuntary_switches: f64,
    /// The longest region its worker ran while it ran.
    pub longest_region_us: f64,
    /// The longest region any job of the group met.
    pub longest_region_max_us: f64,
}

fn means(jobs: &[&JobTrace]) -> TraceMeans {
    let n = jobs.len().max(1) as f64;
    let mean = |f: &dyn Fn(&JobTrace) -> u64| jobs.iter().map(|j| f(j) as f64).sum::<f64>() / n;
    let us = 1e3;
    TraceMeans {
        jobs: jobs.len(),
        latency_from_us: jobs.iter().map(|j| j.latency_ns).min().unwrap_or(0) as f64 / us,
        latency_us: mean(&|j| j.latency_ns) / us,
        delivery_us: mean(&|j| j.delivery_ns) / us,
        behind_us: mean(&|j| j.queued_ns.saturating_sub(j.delivery_ns)) / us,
        on_cpu_us: mean(&|j| j.cpu_ns.min(j.running_ns)) / us,
        off_cpu_us: mean(&|j| j.running_ns.saturating_sub(j.cpu_ns)) / us,
        preempted_us: mean(&|j| j.preempted_ns) / us,
        waited_us: mean(&|j| j.waited_ns) / us,
        faults: mean(&|j| j.faults),
        involuntary_switches: mean(&|j| j.involuntary_switches),
        longest_region_us: mean(&|j| j.longest_region_ns) / us,
        longest_region_max_us: jobs.iter().map(|j| j.longest_region_ns).max().unwrap_or(0) as f64
            / us,
    }
}

/// The tail report of one level: its slowest 1% of jobs against all of them.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct TailReport {
    /// The slowest 1%.
    pub slowest: TraceMeans,
    /// Every traced job of the level.
    pub all: TraceMeans,
}

/// The slowest 1% (at least one job) of the traced jobs of `level`, and all of them; `None` if
/// none was traced.
pub fn tail_report(traces: &[JobTrace], level: Priority) -> Option<TailReport> {
    let mut jobs: Vec<&JobTrace> = traces.iter().filter(|t| t.level == level.level()).collect();
    if jobs.is_empty() {
        return None;
    }
    jobs.sort_by_key(|j| std::cmp::Reverse(j.latency_ns));
    let slowest = (jobs.len() / 100).max(1);
    Some(TailReport {
        slowest: means(&jobs[..slowest]),
        all: means(&jobs),
    })
}

/// Regions at least this long are counted apart in reports: a preemption waits for them.
pub const LONG_REGION_US: u64 = 50;

/// Outermost regions of `regions` at least `floor_us` long (by whole histogram buckets, so from
/// the bucket that holds `floor_us`).
pub fn regions_at_least(regions: &RegionTrace, floor_us: u64) -> u64 {
    regions
        .buckets
        .iter()
        .enumerate()
        .filter(|&(i, _)| RegionTrace::bucket_floor_us(i + 1) > floor_us)
        .map(|(_, n)| n)
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(latency_us: u64, faults: u64) -> JobTrace {
        JobTrace {
            level: Priority::HIGH.level(),
            latency_ns: latency_us * 1_000,
            queued_ns: latency_us * 500,
            delivery_ns: latency_us * 100,
            running_ns: latency_us * 500,
            cpu_ns: latency_us * 400,
            faults,
            ..JobTrace::default()
        }
    }

    #[test]
    fn the_tail_is_the_slowest_hundredth_and_its_parts_add_up() {
        let mut traces: Vec<JobTrace> = (1..=200).map(|i| job(i, 0)).collect();
        traces.push(JobTrace {
            level: Priority::LOW.level(),
            ..job(10_000, 9)
        });
        let r = tail_report(&traces, Priority::HIGH).expect("traced");
        assert_eq!(r.slowest.jobs, 2, "1% of 200");
        assert_eq!(r.all.jobs, 200, "the low-priority job is not one of them");
        assert_eq!(r.slowest.latency_from_us, 199.0);
        assert_eq!(r.slowest.latency_us, 199.5);
        let s = r.slowest;
        assert!(
            (s.delivery_us + s.behind_us + s.on_cpu_us + s.off_cpu_us - s.latency_us).abs() < 1e-6
        );
        assert_eq!(tail_report(&traces, Priority::CRITICAL), None);
    }

    #[test]
    fn long_regions_are_counted_by_bucket() {
        let mut buckets = vec![0; overtake_runtime::region::TRACE_BUCKETS];
        buckets[0] = 100; // under 1 us
        buckets[6] = 3; // 32-64 us
        buckets[7] = 2; // 64-128 us
        let regions = RegionTrace {
            buckets,
            longest: Vec::new(),
        };
        assert_eq!(regions_at_least(&regions, LONG_REGION_US), 5);
        assert_eq!(regions_at_least(&regions, 64), 2);
    }
}
