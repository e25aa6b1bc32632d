//! Policies, observed through the order in which jobs finish (never through timing thresholds).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use overtake_runtime::preempt::record_access;
use overtake_sched::Priority;
use overtake_sched::{Delivery, Executor, Outcome, Policy, SchedConfig};
use overtake_workload::drivers::open_loop::{self, Arrivals, RunConfig, RunReport};

// Signal preemption is only enabled where allocation runs inside regions (as in the binary).
/// A long low-priority job that either touches "records" (polls) or only computes, and a short
/// high-priority job. Each records the order in which it finished.
enum Job {
    Long {
        polls: bool,
        run: Duration,
        finished: Arc<AtomicU64>,
    },
    Short {
        finished: Arc<AtomicU64>,
        /// Busy time before finishing.
        run: Duration,
    },
}

struct Synthetic {
    order: AtomicU64,
    /// The finishing order of the last short job (0: none yet).
    last_short: AtomicU64,
    /// When the long job started (clock nanoseconds since `epoch`; 0 before).
    long_started: Arc<AtomicU64>,
    epoch: Instant,
}

impl Executor for Synthetic {
    type Job = Job;

    fn kinds(&self) -> &[&'static str] {
        &["long", "short"]
    }

    fn kind(&self, job: &Job) -> usize {
        match job {
            Job::Long { .. } => 0,
            Job::Short { .. } => 1,
        }
    }

    fn priority(&self, job: &Job) -> Priority {
        match job {
            Job::Long { .. } => Priority::LOW,
            Job::Short { .. } => Priority::HIGH,
        }
    }

    fn execute(&self, job: &mut Job, _worker: usize) -> Outcome {
        match job {
            Job::Long {
                polls,
                run,
                finished,
            } => {
                self.long_started
                    .store(self.epoch.elapsed().as_nanos() as u64 + 1, Ordering::SeqCst);
                let until = Instant::now() + *run;
                let mut x = 1u64;
                while Instant::now() < until {
                    for _ in 0..1_000 {
                        x = std::hint::black_box(
                            x.wrapping_mul(6364136223846793005).wrapping_add(1),
                        );
                        if *polls {
                            record_access();
                        }
                    }
                }
                finished.store(
                    self.order.fetch_add(1, Ordering::SeqCst) + 1,
                    Ordering::SeqCst,
                );
            }
            Job::Short { finished, run } => {
                let until = Instant::now() + *run;
                while Instant::now() < until {
                    std::hint::spin_loop();
                }
                let order = self.order.fetch_add(1, Ordering::SeqCst) + 1;
                finished.store(order, Ordering::SeqCst);
                self.last_short.store(order, Ordering::SeqCst);
            }
        }
        Outcome::committed()
    }
}

/// One long job at the start (after an optional burst of short ones); one short job 20 ms after
/// the long one has started running.
struct OneOfEach {
    burst: Vec<Job>,
    long: Option<Job>,
    short: Option<Job>,
    long_started: Arc<AtomicU64>,
    epoch: Instant,
}

impl Arrivals<Job> for OneOfEach {
    fn high(&mut self, now: Instant, out: &mut Vec<(Job, Instant)>) -> Option<Instant> {
        out.extend(self.burst.drain(..).map(|job| (job, now)));
        let started = self.long_started.load(Ordering::SeqCst);
        if started == 0 {
            return Some(now + Duration::from_millis(1));
        }
        let due = self.epoch + Duration::from_nanos(started) + Duration::from_millis(20);
        if now < due {
            return Some(due);
        }
        if let Some(job) = self.short.take() {
            out.push((job, due));
        }
        None
    }

    fn low(&mut self) -> Option<Job> {
        self.long.take()
    }
}

/// Runs one long and one short job; returns (long finished at, short finished at, report).
fn race(config: &RunConfig, polls: bool) -> (u64, u64, RunReport) {
    race_after_burst(config, polls, 0)
}

/// Like [`race`], with `burst` short jobs arriving first (they run before the long one).
fn race_after_burst(config: &RunConfig, polls: bool, burst: usize) -> (u64, u64, RunReport) {
    let long_done = Arc::new(AtomicU64::new(0));
    let short_done = Arc::new(AtomicU64::new(0));
    let long_started = Arc::new(AtomicU64::new(0));
    let epoch = Instant::now();
    let mut arrivals = OneOfEach {
        // Long enough that the dispatcher's signal for the burst lands while it is being drained.
        burst: (0..burst)
            .map(|_| Job::Short {
                finished: Arc::new(AtomicU64::new(0)),
                run: Duration::from_micros(200),
            })
            .collect(),
        long_started: Arc::clone(&long_started),
        epoch,
        long: Some(Job::Long {
            polls,
            run: Duration::from_millis(400),
            finished: Arc::clone(&long_done),
        }),
        short: Some(Job::Short {
            finished: Arc::clone(&short_done),
            run: Duration::ZERO,
        }),
    };
    let report = open_loop::run(
        config,
        Arc::new(Synthetic {
            order: AtomicU64::new(0),
            last_short: AtomicU64::new(0),
            long_started,
            epoch,
        }),
        &mut arrivals,
        Vec::new(),
        &|_| {},
    )
    .expect("run");
    (
        long_done.load(Ordering::SeqCst),
        short_done.load(Ordering::SeqCst),
        report,
    )
}

/// Asserts that both jobs finished, `first` before `second` (finishing orders start at 1, so a job
/// that never finished, 0, fails rather than looking early).
#[track_caller]
fn finished_in_order(first: u64, second: u64, what: &str) {
    assert!(
        first > 0 && second > 0,
        "both finished ({first}, {second}): {what}"
    );
    assert!(first < second, "{what} ({first} vs {second})");
}

/// A run ends when its jobs are done (its arrivals run out): the duration only bounds a hang.
fn config(policy: Policy, delivery: Delivery) -> RunConfig {
    RunConfig {
        sched: SchedConfig::default()
            .policy(policy)
            .delivery(delivery)
            .workers(1)
            .pin(false),
        duration: Duration::from_secs(120),
        ..RunConfig::default()
    }
}

#[test]
fn preemption_by_signal_overtakes_pure_computation() {
    let (long, short, report) = race(&config(Policy::Preempt, Delivery::Signal), false);
    finished_in_order(short, long, "the urgent job finished first");
    assert_eq!(report.stats.class(Priority::LOW).preemptions, 1);
    assert!(report.preempt.injected >= 1, "{:?}", report.preempt);
}

#[test]
fn a_signal_still_comes_after_a_burst_of_urgent_work() {
    // The burst is larger than the urgent queue, so the dispatcher refills it (and re-raises the
    // request) while the worker drains it; none of that may leave a stale request behind that
    // would keep the next urgent job from being signalled.
    let (long, short, report) =
        race_after_burst(&config(Policy::Preempt, Delivery::Signal), false, 64);
    assert_eq!(
        report.stats.class(Priority::HIGH).committed,
        65,
        "every urgent job ran"
    );
    finished_in_order(
        short,
        long,
        &format!(
            "the urgent job finished first (preemption {:?}, dispatch {:?}, long preempted {} \
             times)",
            report.preempt,
            report.dispatch,
            report.stats.class(Priority::LOW).preemptions
        ),
    );
    // Burst jobs the dispatcher had not yet handed over when the long job started preempt it too.
    assert!(report.stats.class(Priority::LOW).preemptions >= 1);
    assert!(report.preempt.injected >= 1, "{:?}", report.preempt);
}

#[test]
fn preemption_by_polling_overtakes_record_access() {
    let (long, short, report) = race(&config(Policy::Preempt, Delivery::Poll), true);
    finished_in_order(short, long, "the urgent job finished first");
    assert_eq!(report.stats.class(Priority::LOW).preemptions, 1);
    assert_eq!(report.preempt.signals_sent, 0, "polling sends no signal");
}

#[test]
fn waiting_does_not_overtake() {
    let (long, short, report) = race(&config(Policy::Wait, Delivery::Signal), false);
    finished_in_order(long, short, "under Wait the urgent job waits");
    assert_eq!(report.stats.class(Priority::LOW).preemptions, 0);
}

#[test]
fn cooperation_overtakes_only_code_that_reaches_a_yield_point() {
    let mut c = config(Policy::Cooperative, Delivery::Signal);
    c.sched.yield_interval = 1_000;
    let (long, short, _) = race(&c, true);
    finished_in_order(short, long, "yields at record accesses let it through");
    let (long, short, _) = race(&c, false);
    finished_in_order(long, short, "pure computation never yields");
}

#[test]
fn starvation_threshold_zero_never_preempts() {
    let mut c = config(Policy::Preempt, Delivery::Signal);
    c.sched.starvation_threshold = 0.0;
    let (long, short, report) = race(&c, true);
    finished_in_order(long, short, "the urgent job waited for the boundary");
    assert_eq!(report.stats.class(Priority::LOW).preemptions, 0);
    assert_eq!(report.preempt.injected, 0);
    assert!(report.dispatch.starvation_skips > 0);
}

/// One long job at the start; once it runs, a short job every millisecond for the rest of the run.
struct Flood {
    long: Option<Job>,
    long_started: Arc<AtomicU64>,
    epoch: Instant,
    next: Option<Instant>,
    short_run: Duration,
}

impl Arrivals<Job> for Flood {
    fn high(&mut self, now: Instant, out: &mut Vec<(Job, Instant)>) -> Option<Instant> {
        let started = self.long_started.load(Ordering::SeqCst);
        if started == 0 {
            return Some(now + Duration::from_millis(1));
        }
        let first = self.epoch + Duration::from_nanos(started) + Duration::from_millis(1);
        let mut due = *self.next.get_or_insert(first);
        while due <= now {
            out.push((
                Job::Short {
                    finished: Arc::new(AtomicU64::new(0)),
                    run: self.short_run,
                },
                due,
            ));
            due += Duration::from_millis(1);
        }
        self.next = Some(due);
        Some(due)
    }

    fn low(&mut self) -> Option<Job> {
        self.long.take()
    }
}

#[test]
fn the_starvation_threshold_bounds_a_preemption_in_progress() {
    // Urgent work arrives at twice the rate the worker can serve it, so the urgent queue never
    // empties: only the starvation level can end a preemption. Counting the preemption in
    // progress, a threshold of 0.5 leaves the 200 ms computation about half the worker, and it
    // finishes (after ~400 ms) while urgent jobs keep finishing after it for the rest of the 3 s
    // run; counting only finished preemptions, the first one lasted until the urgent arrivals
    // stopped. Whether the dispatcher also held work back depends on when its thread ran, so
    // only the worker's side is asserted.
    let long_done = Arc::new(AtomicU64::new(0));
    let long_started = Arc::new(AtomicU64::new(0));
    let epoch = Instant::now();
    let mut c = config(Policy::Preempt, Delivery::Signal);
    c.sched.starvation_threshold = 0.5;
    c.duration = Duration::from_secs(3);
    let executor = Arc::new(Synthetic {
        order: AtomicU64::new(0),
        last_short: AtomicU64::new(0),
        long_started: Arc::clone(&long_started),
        epoch,
    });
    let mut arrivals = Flood {
        long: Some(Job::Long {
            polls: false,
            run: Duration::from_millis(200),
            finished: Arc::clone(&long_done),
        }),
        long_started,
        epoch,
        next: None,
        short_run: Duration::from_millis(2),
    };
    let report = open_loop::run(
        &c,
        Arc::clone(&executor),
        &mut arrivals,
        Vec::new(),
        &|_| {},
    )
    .expect("run");
    let long = long_done.load(Ordering::SeqCst);
    let last_short = executor.last_short.load(Ordering::SeqCst);
    finished_in_order(
        long,
        last_short,
        "the computation finished while urgent work kept coming",
    );
    assert!(
        report.stats.class(Priority::LOW).preemptions >= 1,
        "it was preempted"
    );
    // Twice the urgent work the worker can do: the report must not pass the backlog off as
    // latency.
    let warnings = report.dispatch.warnings();
    assert!(
        warnings.iter().any(|w| w.contains("could not keep up")),
        "{warnings:?}"
    );
}

#[test]
fn bad_settings_are_refused() {
    let mut c = config(Policy::Cooperative, Delivery::Poll);
    c.sched.yield_interval = 0;
    assert!(c.sched.validate().is_err());
    let mut c = config(Policy::Preempt, Delivery::Poll);
    c.sched.starvation_threshold = f64::NAN;
    assert!(c.sched.validate().is_err());
    c.sched.starvation_threshold = 1.0;
    c.sched.workers = 0;
    assert!(c.sched.validate().is_err());
    let c = config(Policy::Preempt, Delivery::Uintr);
    assert!(c.sched.validate().is_err(), "no user interrupts here");
}
