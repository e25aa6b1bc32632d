//! The dispatcher: admits jobs and places them on workers.
//!
//! One thread (pinned to the last core when pinning is on) that keeps every worker's
//! background queue full, collects urgent arrivals (of any level above the lowest), and deals them
//! round-robin into the workers' queues of their levels. Under `Preempt` it skips a worker whose running low-priority
//! transaction has reached the starvation threshold, asks each worker it pushed to once (batched
//! on-demand preemption), and, with signal delivery, sends SIGURG if a request is still not taken
//! up after the signal delay. Under `Cooperative` it only raises the flag, which the worker checks
//! at its yield points. Under `Wait` it only fills queues.
//!
//! High-priority jobs that find no room wait here, in arrival order; their latency includes it.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use overtake_priority::Priority;
use overtake_runtime::preempt::Delivery;

use crate::backstop::Backstop;
use crate::job::{Arrivals, Executor, Scheduled};
use crate::policy::{Policy, SchedConfig};
use crate::scheduler::Scheduler;
use crate::starvation::Clock;

/// How late the dispatcher may collect an arrival before it counts as having fallen behind.
const LATE: Duration = Duration::from_millis(1);

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
    /// Preemption requests raised.
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

/// The open-loop client of a [`Scheduler`]: it submits arrivals to chosen workers itself and
/// steps the signal backstop from its own loop.
pub(crate) struct Dispatcher<'a, E: Executor> {
    pub(crate) config: &'a SchedConfig,
    pub(crate) scheduler: &'a Scheduler<E>,
    pub(crate) arrivals: &'a mut dyn Arrivals<E::Job>,
    pub(crate) clock: Clock,
    /// The run ends as soon as the arrivals have no more work and everything handed over has
    /// finished (no worker has a local feed that could make more).
    pub(crate) ends_when_done: bool,
}

impl<E: Executor> Dispatcher<'_, E> {
    /// Runs until `end` (or, with `ends_when_done`, until every arrival has been served); calls
    /// `tick` about ten times a second.
    pub(crate) fn run(
        &mut self,
        start: Instant,
        end: Instant,
        tick: &dyn Fn(Duration),
    ) -> DispatchStats {
        let shared = self.scheduler.worker_shared();
        let workers = shared.len();
        let mut stats = DispatchStats::default();
        let mut pending: VecDeque<Scheduled<E::Job>> = VecDeque::new();
        let mut arrived: Vec<(E::Job, Instant)> = Vec::new();
        let signals = self.config.delivery == Delivery::Signal
            && (self.config.preempts() || self.config.interrupt_interval.is_some());
        let mut backstop = Backstop::new(workers, self.config.signal_delay, signals);
        let mut pushed = vec![false; workers];
        // Workers the dispatcher is holding urgent work back from (starvation control).
        let mut holding_back = vec![false; workers];
        let quantum = (self.config.policy == Policy::Quantum)
            .then(|| self.config.quantum.as_nanos().max(1) as u64);
        // Quantum: the slice each worker runs (its start) and when it is next checked.
        let mut slices = vec![(0u64, 0u64); workers];
        let mut next_high = Some(start);
        let mut next_interrupt = self.config.interrupt_interval.map(|i| start + i);
        let mut next_tick = start;
        let mut round_robin = 0;
        // A dispatcher sharing a core with a worker must not spin while idle.
        let own_core = self.config.pin && workers < overtake_runtime::os_thread::available_cores();
        // Whether arrivals feed background queues (closed loops feed their workers themselves).
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
                && shared
                    .iter()
                    .map(|w| w.finished.load(Ordering::Acquire))
                    .sum::<u64>()
                    >= handed_over
            {
                break;
            }
            if now >= next_tick {
                tick(now - start);
                next_tick = now + Duration::from_millis(100);
            }
            // Keep background queues full.
            for w in 0..workers {
                while !low_exhausted && !self.scheduler.is_full(w, Priority::LOW) {
                    let Some(job) = self.arrivals.low() else {
                        low_exhausted = true;
                        break;
                    };
                    feeds_low = true;
                    let at = Instant::now();
                    match self.scheduler.push(
                        w,
                        Scheduled {
                            job,
                            arrival: at,
                            enqueued: at,
                        },
                    ) {
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
                    pending.push_back(Scheduled {
                        job,
                        arrival,
                        enqueued: arrival,
                    });
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
                    .map_or(Priority::HIGH, |j| self.scheduler.level_of(&j.job));
                if !allowed || self.scheduler.is_full(w, level) {
                    blocked += 1;
                    continue;
                }
                blocked = 0;
                while let Some(mut job) = pending.pop_front() {
                    job.enqueued = Instant::now();
                    match self.scheduler.push(w, job) {
                        Ok(()) => {
                            pushed[w] = true;
                            handed_over += 1;
                        }
                        Err(back) => {
                            pending.push_front(back);
                            break;
                        }
                    }
                }
            }
            // Ask once per worker that received work (batched on-demand preemption), and again
            // a worker whose protected task kept it while owed it and is owed no longer.
            if matches!(self.config.policy, Policy::Preempt | Policy::Cooperative) {
                let now = Instant::now();
                for (w, was_pushed) in pushed.iter().enumerate() {
                    let ask = if *was_pushed {
                        self.scheduler.needs_request(w)
                    } else {
                        self.scheduler.owes_a_request(w, now)
                    };
                    if ask {
                        backstop.raise(w, &shared[w].target, now);
                        stats.requests += 1;
                    }
                }
            }
            // The overhead experiment: interrupt everyone, work or not.
            if let Some(due) = next_interrupt
                && now >= due
            {
                for (w, worker) in shared.iter().enumerate() {
                    backstop.raise(w, &worker.target, now);
                    stats.requests += 1;
                }
                next_interrupt = self.config.interrupt_interval.map(|i| due + i);
            }
            // Quantum: a task that has run a quantum is asked to make way, if anything waits.
            let mut slice_running = false;
            if let Some(q) = quantum {
                let now_nanos = self.clock.nanos(now);
                for (w, worker) in shared.iter().enumerate() {
                    let started = worker.slice_started.load(Ordering::Relaxed);
                    if started == 0 {
                        continue;
                    }
                    slice_running = true;
                    let (slice, next_check) = &mut slices[w];
                    if *slice != started {
                        // A resumed task's slice may be longer (`resumed_quanta`).
                        let slice_q = worker.slice_quantum.load(Ordering::Relaxed).max(q);
                        (*slice, *next_check) = (started, started + slice_q);
                    }
                    if now_nanos < *next_check {
                        continue;
                    }
                    *next_check = now_nanos + q;
                    let waiting = !pending.is_empty()
                        || self.scheduler.queued(w) > 0
                        || worker.ready_tasks.load(Ordering::Relaxed) > 0;
                    if self.config.skip_needless && !waiting {
                        stats.quantum_skipped += 1;
                    } else {
                        backstop.raise(w, &worker.target, now);
                        stats.quantum_preemptions += 1;
                        stats.requests += 1;
                    }
                }
            }
            backstop.step(shared, now);
            let idle = Idle {
                own_core,
                work_waiting: !pending.is_empty() || backstop.outstanding() || slice_running,
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
