//! The open-loop driver: a dispatcher thread that submits arrivals to the scheduler as they
//! fall due, whether or not earlier ones are done (PreemptDB's batches of urgent transactions
//! every interval, Aspen's Poisson stream), keeps every worker's background inbox full, and
//! reports what the machine could not serve.
//!
//! It is a client of the scheduler's public API. It places work itself (`Scheduler::submit_to`)
//! and steps the scheduler's preemption timer from its own loop, so that a worker is asked once
//! per batch (batched on-demand preemption) and signalled exactly when the signal delay has
//! passed. One thread (pinned to the last core when pinning is on) that collects urgent arrivals
//! (of any level above the lowest) and deals them round-robin into the workers' inboxes of their
//! levels. Under `Preempt` it skips a worker whose running low-priority transaction has reached
//! the starvation threshold; under `Cooperative` the request it raises is only checked at yield
//! points; under `Wait` it only fills inboxes. It must never run on a worker or block on one:
//! urgent jobs that find no room wait here, in arrival order, and their latency includes it.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use overtake_engine::Priority;
use overtake_sched::{
    BlockedWorker, Executor, IdleWork, Policy, PreemptStats, RunStats, SchedConfig, SchedError,
    Scheduler, Shutdown, StartOptions,
};

/// How late the dispatcher may collect an arrival before it counts as having fallen behind.
const LATE: Duration = Duration::from_millis(1);

/// Where jobs come from, as seen by the dispatcher.
pub trait Arrivals<J>: Send {
    /// Appends the urgent jobs that have arrived by `now`, each with its arrival time, and
    /// returns when the next ones are due (`None`: no more).
    fn high(&mut self, now: Instant, out: &mut Vec<(J, Instant)>) -> Option<Instant>;

    /// A background job for a worker's background inbox, which the dispatcher keeps full
    /// (`None`: there is no background work of this kind).
    fn low(&mut self) -> Option<J>;
}

/// No arrivals: every worker's work comes from its own source (a closed loop).
pub struct NoArrivals;

impl<J> Arrivals<J> for NoArrivals {
    fn high(&mut self, _: Instant, _: &mut Vec<(J, Instant)>) -> Option<Instant> {
        None
    }

    fn low(&mut self) -> Option<J> {
        None
    }
}

/// A benchmark run: the scheduler's service settings and how the driver uses them.
#[derive(Clone, Debug)]
pub struct RunConfig {
    /// The scheduler service.
    pub sched: SchedConfig,
    /// How long to run.
    pub duration: Duration,
    /// Urgent jobs dealt to one worker at a time (the batch of batched on-demand preemption):
    /// the capacity of each worker's urgent inbox in the run.
    pub batch: usize,
    /// Background jobs queued per worker ahead of the running one: the capacity of each
    /// worker's background inbox in the run (1: the next one is always ready, and no more).
    pub background_queue: usize,
    /// If set, every worker is asked to switch this often even without work for it (measures
    /// the mechanism's own cost).
    pub interrupt_interval: Option<Duration>,
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            sched: SchedConfig::default(),
            duration: Duration::from_secs(10),
            batch: 4,
            background_queue: 1,
            interrupt_interval: None,
        }
    }
}

impl RunConfig {
    /// The scheduler settings the run starts with: [`sched`](Self::sched) with the inboxes sized
    /// for the batch and the background queue.
    pub fn service(&self) -> SchedConfig {
        self.sched
            .clone()
            .inboxes(self.batch, self.background_queue)
    }

    /// Checks the settings as the run would use them.
    pub fn validate(&self) -> Result<(), SchedError> {
        self.service().validate()?;
        if self.interrupt_interval.is_some() {
            // Interrupting needs the mechanism even under a policy that would not preempt.
            self.sched.delivery.check()?;
        }
        Ok(())
    }
}

/// The result of [`run`].
#[derive(Clone, Debug)]
pub struct RunReport {
    /// The configuration that ran.
    pub config: RunConfig,
    /// Time from the first dispatch to the last worker's exit.
    pub elapsed: Duration,
    /// Per class and per kind.
    pub stats: RunStats,
    /// Names of the job kinds.
    pub kinds: Vec<&'static str>,
    /// Preemption machinery counters, summed over workers.
    pub preempt: PreemptStats,
    /// What the dispatcher saw.
    pub dispatch: DispatchStats,
    /// Workers found blocked in the kernel while running a task.
    pub blocked: Vec<BlockedWorker>,
}

/// Runs a workload for `config.duration`: a [`Scheduler`] whose client is the dispatcher
/// (arrivals) plus, per worker, an optional source of background work of its own (`feeds`, a
/// closed loop). Work still queued at the end is not started; started tasks finish. Without
/// feeds, a run whose arrivals run out ends as soon as all their work is done. `tick` is called
/// about ten times a second with the elapsed time.
pub fn run<E: Executor>(
    config: &RunConfig,
    executor: Arc<E>,
    arrivals: &mut dyn Arrivals<E::Job>,
    feeds: Vec<Option<IdleWork<E::Job>>>,
    tick: &dyn Fn(Duration),
) -> Result<RunReport, SchedError> {
    config.validate()?;
    let sched = config.service();
    let kinds = executor.kinds().to_vec();
    let ends_when_done = feeds.iter().all(Option::is_none);
    let scheduler = Scheduler::start_with(
        &sched,
        Arc::clone(&executor),
        StartOptions::default().idle_work(feeds).client_timer(),
    )?;
    if sched.pin {
        // The dispatcher mostly sleeps between arrivals: it shares its core without taking it
        // (service threads such as the log writer keep off workers' cores only).
        let cores = overtake_runtime::os::thread::available_cores();
        overtake_runtime::os::thread::confine_current_thread(cores.saturating_sub(1));
    }
    let start = Instant::now();
    let dispatch = Dispatcher {
        config,
        executor: &*executor,
        scheduler: &scheduler,
        arrivals,
        ends_when_done,
    }
    .run(start, start + config.duration, tick);
    let report = scheduler.shutdown(Shutdown::Abandon)?;
    Ok(RunReport {
        config: config.clone(),
        elapsed: start.elapsed(),
        stats: report.stats,
        kinds,
        preempt: report.preempt,
        dispatch,
        blocked: report.blocked,
    })
}

/// What the dispatcher observed.
#[derive(Clone, Copy, Debug, Default)]
pub struct DispatchStats {
    /// High-priority jobs that arrived during the run (the offered urgent load).
    pub arrived_high: u64,
    /// High-priority jobs the dispatcher collected more than a millisecond after they were due:
    /// the dispatcher itself fell behind (its core was busy), so their latency includes that.
    pub late_high: u64,
    /// High-priority jobs still waiting (here or in worker queues) when the run ended.
    pub unfinished_high: usize,
    /// Preemption requests raised (by the dispatcher and by quantum expiries).
    pub requests: u64,
    /// Times the dispatcher began holding urgent work back from a worker because its starvation
    /// level had reached the threshold (each stretch of holding back counts once).
    pub starvation_skips: u64,
    /// Quantum: quantum expiries that asked the worker to preempt its task.
    pub quantum_preemptions: u64,
    /// Quantum: quantum expiries with nothing else waiting, where no preemption was asked for.
    pub quantum_skipped: u64,
}

impl DispatchStats {
    /// Why this run's urgent latencies are not service latencies, if they are not: more than 1% of
    /// the offered urgent work was still unfinished at the end (the machine could not keep up, so
    /// what was measured is mostly queueing), or more than 1% of it was collected late by the
    /// dispatcher. Each warning is one line of text.
    pub fn warnings(&self) -> Vec<String> {
        self.warnings_about("urgent transactions")
    }

    /// [`Self::warnings`], naming what arrived `arrivals` (e.g. "requests" where the stream has
    /// no priorities).
    pub fn warnings_about(&self, arrivals: &str) -> Vec<String> {
        let mut out = Vec::new();
        let share = |n: u64| n as f64 * 100.0 / self.arrived_high.max(1) as f64;
        let unfinished = self.unfinished_high as u64;
        if unfinished * 100 > self.arrived_high {
            out.push(format!(
                "the machine could not keep up with the offered load: {unfinished} of {} \
                 {arrivals} ({:.1}%) were still waiting when the run ended, so the latencies \
                 shown are mostly queueing, not service",
                self.arrived_high,
                share(unfinished)
            ));
        }
        if self.late_high * 100 > self.arrived_high {
            out.push(format!(
                "the dispatcher fell behind: {} of {} {arrivals} ({:.1}%) were collected more \
                 than 1 ms after they were due (its core was busy), and their latencies include \
                 that delay",
                self.late_high,
                self.arrived_high,
                share(self.late_high)
            ));
        }
        out
    }
}

/// The dispatcher of one run.
struct Dispatcher<'a, E: Executor> {
    config: &'a RunConfig,
    executor: &'a E,
    scheduler: &'a Scheduler<E>,
    arrivals: &'a mut dyn Arrivals<E::Job>,
    /// The run ends as soon as the arrivals have no more work and everything handed over has
    /// finished (no worker has a feed of its own that could make more).
    ends_when_done: bool,
}

/// An urgent job waiting in the dispatcher for room.
struct Pending<J> {
    job: J,
    arrival: Instant,
}

impl<E: Executor> Dispatcher<'_, E> {
    /// Runs until `end` (or, with `ends_when_done`, until every arrival has been served); calls
    /// `tick` about ten times a second.
    fn run(&mut self, start: Instant, end: Instant, tick: &dyn Fn(Duration)) -> DispatchStats {
        let sched = &self.config.sched;
        let workers = self.scheduler.workers();
        let mut timer = self.scheduler.preempt_timer();
        let mut stats = DispatchStats::default();
        let mut pending: VecDeque<Pending<E::Job>> = VecDeque::new();
        let mut arrived: Vec<(E::Job, Instant)> = Vec::new();
        let mut pushed = vec![false; workers];
        // Workers the dispatcher is holding urgent work back from (starvation control).
        let mut holding_back = vec![false; workers];
        let mut next_high = Some(start);
        let mut next_interrupt = self.config.interrupt_interval.map(|i| start + i);
        let mut next_tick = start;
        let mut round_robin = 0;
        // A dispatcher sharing a core with a worker must not spin while idle.
        let own_core = sched.pin && workers < overtake_runtime::os::thread::available_cores();
        // Whether arrivals feed background inboxes (closed loops feed their workers themselves).
        let mut feeds_low = false;
        // Jobs handed to workers, and whether the background arrivals have run out.
        let mut handed_over: u64 = 0;
        let mut low_exhausted = false;
        loop {
            let now = Instant::now();
            if now >= end {
                break;
            }
            if self.ends_when_done
                && next_high.is_none()
                && low_exhausted
                && pending.is_empty()
                && self.scheduler.finished_jobs() >= handed_over
            {
                break;
            }
            if now >= next_tick {
                tick(now - start);
                next_tick = now + Duration::from_millis(100);
            }
            // Keep background inboxes full.
            for w in 0..workers {
                while !low_exhausted && self.scheduler.has_room(w, Priority::LOW) {
                    let Some(job) = self.arrivals.low() else {
                        low_exhausted = true;
                        break;
                    };
                    feeds_low = true;
                    match self.scheduler.submit_to(w, job, Instant::now()) {
                        Ok(()) => handed_over += 1,
                        Err(back) => {
                            drop(back);
                            break;
                        }
                    }
                }
            }
            // Collect arrivals that are due.
            if let Some(due) = next_high
                && now >= due
            {
                next_high = self.arrivals.high(now, &mut arrived);
                stats.arrived_high += arrived.len() as u64;
                for (job, arrival) in arrived.drain(..) {
                    if now.saturating_duration_since(arrival) > LATE {
                        stats.late_high += 1;
                    }
                    pending.push_back(Pending { job, arrival });
                }
            }
            // Deal waiting jobs round-robin.
            pushed.fill(false);
            let mut blocked = 0;
            while !pending.is_empty() && blocked < workers {
                let w = round_robin % workers;
                round_robin += 1;
                let allowed = self.scheduler.admits_urgent(w, Instant::now());
                if !allowed && !holding_back[w] {
                    stats.starvation_skips += 1;
                }
                holding_back[w] = !allowed;
                let level = pending
                    .front()
                    .map_or(Priority::HIGH, |j| self.executor.priority(&j.job));
                if !allowed || !self.scheduler.has_room(w, level) {
                    blocked += 1;
                    continue;
                }
                blocked = 0;
                while let Some(Pending { job, arrival }) = pending.pop_front() {
                    match self.scheduler.submit_to(w, job, arrival) {
                        Ok(()) => {
                            pushed[w] = true;
                            handed_over += 1;
                        }
                        Err(back) => {
                            pending.push_front(Pending {
                                job: back.into_inner(),
                                arrival,
                            });
                            break;
                        }
                    }
                }
            }
            // Ask once per worker that received work (batched on-demand preemption), and again
            // a worker whose protected task kept it while owed it and is owed no longer.
            if matches!(sched.policy, Policy::Preempt | Policy::Cooperative) {
                let now = Instant::now();
                for (w, was_pushed) in pushed.iter().enumerate() {
                    let ask = if *was_pushed {
                        self.scheduler.needs_preemption(w)
                    } else {
                        self.scheduler.owes_preemption(w, now)
                    };
                    if ask {
                        timer.ask(w, now);
                    }
                }
            }
            // The overhead experiment: interrupt everyone, work or not.
            if let Some(due) = next_interrupt
                && now >= due
            {
                timer.interrupt(now);
                next_interrupt = self.config.interrupt_interval.map(|i| due + i);
            }
            // Quantum expiries and signals for requests not taken up.
            timer.step(now, !pending.is_empty());
            let idle = Idle {
                own_core,
                work_waiting: !pending.is_empty() || timer.outstanding() || timer.slice_running(),
                arrivals_due: next_high.is_some() || next_interrupt.is_some() || feeds_low,
            };
            if idle.spins() {
                std::hint::spin_loop();
            } else {
                let next = [next_high, next_interrupt, Some(end), Some(next_tick)]
                    .into_iter()
                    .flatten()
                    .min()
                    .unwrap_or(end);
                let gap = next.saturating_duration_since(Instant::now());
                if gap > Duration::from_micros(200) {
                    std::thread::sleep(
                        (gap - Duration::from_micros(100)).min(Duration::from_millis(1)),
                    );
                }
            }
        }
        stats.unfinished_high = pending.len() + self.scheduler.urgent_queued();
        let timed = timer.stats();
        stats.requests = timed.requests;
        stats.quantum_preemptions = timed.quantum_preemptions;
        stats.quantum_skipped = timed.quantum_skipped;
        stats
    }
}

/// What the dispatcher knows when it has nothing to do this round.
struct Idle {
    /// It has a core no worker uses.
    own_core: bool,
    /// Jobs, a preemption request or a quantum wait for it.
    work_waiting: bool,
    /// Arrivals (urgent, interrupts, background refills) may need it at any moment.
    arrivals_due: bool,
}

impl Idle {
    /// Spin (rather than sleep until the next event is near) while work waits, or on an own core
    /// while arrivals may need serving at once. With nothing to serve (a closed loop, whose
    /// workers feed themselves) a spinning dispatcher only takes the machine's shared resources
    /// from the workers: measured 1.05x the throughput of `bench tpcc` with one worker when it
    /// sleeps instead.
    fn spins(&self) -> bool {
        self.work_waiting || (self.own_core && self.arrivals_due)
    }
}

#[cfg(test)]
mod tests {
    use super::{DispatchStats, Idle};

    #[test]
    fn an_idle_dispatcher_spins_only_for_what_it_must_serve() {
        let idle = |own_core, work_waiting, arrivals_due| Idle {
            own_core,
            work_waiting,
            arrivals_due,
        };
        assert!(
            idle(false, true, false).spins(),
            "waiting work is served at once"
        );
        assert!(idle(true, false, true).spins(), "arrivals on an own core");
        assert!(
            !idle(false, false, true).spins(),
            "a shared core is not spun on"
        );
        assert!(
            !idle(true, false, false).spins(),
            "a closed loop leaves the core alone"
        );
    }

    #[test]
    fn warnings_start_above_one_percent() {
        let served = DispatchStats {
            arrived_high: 4_000,
            unfinished_high: 40,
            late_high: 40,
            ..DispatchStats::default()
        };
        assert!(served.warnings().is_empty(), "1% is still a measurement");
        let overloaded = DispatchStats {
            unfinished_high: 1_537,
            ..served
        };
        let w = overloaded.warnings();
        assert_eq!(w.len(), 1);
        assert!(
            w[0].contains("could not keep up") && w[0].contains("1537 of 4000"),
            "{w:?}"
        );
        let behind = DispatchStats {
            late_high: 900,
            ..served
        };
        assert!(behind.warnings()[0].contains("fell behind"));
        assert!(
            DispatchStats::default().warnings().is_empty(),
            "no urgent work"
        );
    }
}
