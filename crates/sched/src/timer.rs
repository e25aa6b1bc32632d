//! The preemption timer: what must happen at a time rather than at an event. It sends SIGURG for
//! a preemption request a worker has not taken up within the signal delay (the backstop), and,
//! under the quantum policy, asks a worker whose task has run a quantum to make way when other
//! work waits.
//!
//! By default a running [`Scheduler`](crate::Scheduler) steps one itself, on its own thread that
//! sleeps between steps (the kernel's timer slack makes a step some tens of microseconds late). A
//! client that already spins in a loop of its own (an open-loop load generator) can take the
//! timer over ([`StartOptions::client_timer`](crate::StartOptions::client_timer) and
//! [`Scheduler::preempt_timer`](crate::Scheduler::preempt_timer)) and step it every round, which
//! keeps the signal delay and the quantum exact. It must never be stepped by two threads for one
//! scheduler (each would signal once per request).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::backstop::Backstop;
use crate::inbox::Inbox;
use crate::pending::Pending;
use crate::policy::{Policy, SchedConfig};
use crate::starvation::Clock;
use crate::worker::WorkerShared;

/// What a [`PreemptTimer`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TimerStats {
    /// Preemption requests raised through [`PreemptTimer::ask`] and by quantum expiries.
    pub requests: u64,
    /// Quantum: expiries that asked the worker to preempt its task.
    pub quantum_preemptions: u64,
    /// Quantum: expiries with nothing else waiting, where no preemption was asked for.
    pub quantum_skipped: u64,
}

/// The timer of one scheduler (see the module documentation).
pub struct PreemptTimer<J> {
    workers: Vec<Arc<WorkerShared>>,
    inboxes: Vec<Arc<Inbox<J>>>,
    pending: Arc<Pending<J>>,
    backstop: Backstop,
    /// Signals are sent for requests that need them: with signal delivery under a preempting
    /// policy, or once [`PreemptTimer::interrupt`] has been used.
    signal_delivery: bool,
    /// Quantum: its length in nanoseconds.
    quantum: Option<u64>,
    skip_needless: bool,
    /// Quantum: per worker, the slice it runs (its start) and when it is next checked.
    slices: Vec<(u64, u64)>,
    slice_running: bool,
    clock: Clock,
    stats: TimerStats,
    /// The workers' reactors, polled for a worker whose task keeps it busy (see
    /// `crate::reactor`); per worker, when its reactor was last polled here.
    reactors: crate::reactor::Reactors,
    polled: Vec<u64>,
}

impl<J> PreemptTimer<J> {
    pub(crate) fn new(
        config: &SchedConfig,
        workers: Vec<Arc<WorkerShared>>,
        inboxes: Vec<Arc<Inbox<J>>>,
        pending: Arc<Pending<J>>,
        epoch: Instant,
    ) -> Self {
        let signal_delivery = config.delivery == overtake_runtime::preempt::Delivery::Signal;
        let n = workers.len();
        PreemptTimer {
            workers,
            inboxes,
            pending,
            backstop: Backstop::new(n, config.signal_delay, signal_delivery && config.preempts()),
            signal_delivery,
            quantum: (config.policy == Policy::Quantum)
                .then(|| config.quantum.as_nanos().max(1) as u64),
            skip_needless: config.skip_needless,
            slices: vec![(0, 0); n],
            slice_running: false,
            clock: Clock::new(epoch),
            stats: TimerStats::default(),
            reactors: Vec::new(),
            polled: vec![0; n],
        }
    }

    /// The same, polling the workers' reactors for them while they are busy.
    pub(crate) fn with_reactors(mut self, reactors: crate::reactor::Reactors) -> Self {
        self.reactors = reactors;
        self
    }

    /// Polls the reactor of each worker whose task's slice has run [`ARRIVAL_CHECK`] (and as
    /// often after that), and asks the worker to make way if what arrived is more urgent than
    /// its task. Under the quantum policy, work of the task's own level that arrived is seen at
    /// the quantum's end, as any waiting work is.
    ///
    /// [`ARRIVAL_CHECK`]: crate::reactor::ARRIVAL_CHECK
    fn poll_busy_reactors(&mut self, now: Instant) {
        let check = crate::reactor::ARRIVAL_CHECK.as_nanos() as u64;
        let now_nanos = self.clock.nanos(now);
        for w in 0..self.reactors.len() {
            let Some(reactor) = &self.reactors[w] else {
                continue;
            };
            let worker = &self.workers[w];
            let started = worker.slice_started.load(Ordering::Relaxed);
            if started == 0 || now_nanos < started + check || now_nanos < self.polled[w] + check {
                continue;
            }
            self.polled[w] = now_nanos;
            reactor.poll(Duration::ZERO);
            let running = worker.running_level.load(Ordering::SeqCst);
            let urgent = overtake_priority::Priority::ALL
                .iter()
                .skip(usize::from(running).saturating_add(1))
                .any(|&p| self.inboxes[w].has(p));
            if running != crate::worker::IDLE && urgent {
                self.backstop.raise(w, &worker.target, now);
                self.stats.requests += 1;
            }
        }
    }

    /// True if worker `w` is busy with a task that something arriving through its reactor would
    /// outrank.
    fn arrival_may_preempt(&self, w: usize) -> bool {
        let Some(reactor) = &self.reactors[w] else {
            return false;
        };
        let worker = &self.workers[w];
        let running = worker.running_level.load(Ordering::Relaxed);
        worker.slice_started.load(Ordering::Relaxed) != 0
            && running != crate::worker::IDLE
            && usize::from(running) < reactor.most_urgent().level()
    }

    /// Asks worker `w` to make way for more urgent work (as a submitter's request does), and
    /// times the request from `now` for the backstop.
    pub fn ask(&mut self, w: usize, now: Instant) {
        self.backstop.raise(w, &self.workers[w].target, now);
        self.stats.requests += 1;
    }

    /// Asks every worker to switch, work or not, and signals those that do not take the request
    /// up in time, whatever the policy: for measuring what the mechanism itself costs.
    pub fn interrupt(&mut self, now: Instant) {
        self.backstop.signals |= self.signal_delivery;
        for w in 0..self.workers.len() {
            self.ask(w, now);
        }
    }

    /// Does what is due at `now`: quantum expiries (`client_waiting`: the client holds work not
    /// yet in any inbox, which counts as waiting for every worker), then signals for requests
    /// older than the signal delay.
    pub fn step(&mut self, now: Instant, client_waiting: bool) {
        self.slice_running = false;
        self.poll_busy_reactors(now);
        if let Some(q) = self.quantum {
            let now_nanos = self.clock.nanos(now);
            for w in 0..self.workers.len() {
                let worker = &self.workers[w];
                let started = worker.slice_started.load(Ordering::Relaxed);
                if started == 0 {
                    continue;
                }
                self.slice_running = true;
                let (slice, next_check) = &mut self.slices[w];
                if *slice != started {
                    // A resumed task's slice may be longer (`resumed_quanta`).
                    let slice_q = worker.slice_quantum.load(Ordering::Relaxed).max(q);
                    (*slice, *next_check) = (started, started + slice_q);
                }
                if now_nanos < *next_check {
                    continue;
                }
                *next_check = now_nanos + q;
                let waiting = client_waiting
                    || self.inboxes[w].queued() > 0
                    || worker.staged_from(overtake_priority::Priority::LOW) > 0
                    || overtake_priority::Priority::from_level(usize::from(
                        worker.running_level.load(Ordering::Relaxed),
                    ))
                    .is_some_and(|running| self.pending.has_from(running))
                    || worker.ready_tasks.load(Ordering::Relaxed) > 0
                    // Wakes not collected yet (a wake of the task's own level asks nothing of it).
                    || worker.wakes.any.load(Ordering::Relaxed);
                if self.skip_needless && !waiting {
                    self.stats.quantum_skipped += 1;
                } else {
                    self.backstop.raise(w, &worker.target, now);
                    self.stats.quantum_preemptions += 1;
                    self.stats.requests += 1;
                }
            }
        }
        self.backstop.step(&self.workers, now);
    }

    /// True while some request has not been taken up: the next step is due within the signal
    /// delay.
    pub fn outstanding(&self) -> bool {
        self.backstop.outstanding()
    }

    /// Quantum: true if, at the last step, some worker was running a slice (the next step is due
    /// within a quantum).
    pub fn slice_running(&self) -> bool {
        self.slice_running
    }

    /// When the next step is due at the latest, from the last one: the signal delay while a
    /// request is outstanding, the quantum while a slice runs, else `None` (nothing is due until
    /// a request is raised).
    pub fn next_step_within(&self) -> Option<Duration> {
        let quantum = self
            .quantum
            .filter(|_| self.slice_running)
            .map(Duration::from_nanos);
        // A busy worker whose task an arrival could preempt is looked at again an arrival check
        // later; one whose task nothing that can arrive outranks only at the quantum's step, if
        // there is one (a step more often costs the server a timer wake-up every check while
        // statements flow: measured, select-only pgbench lost 10-25%).
        let check = crate::reactor::ARRIVAL_CHECK;
        let quantum = if (0..self.reactors.len()).any(|w| self.arrival_may_preempt(w)) {
            Some(quantum.map_or(check, |q| q.min(check)))
        } else {
            quantum
        };
        let delay = self.outstanding().then_some(self.backstop.delay());
        match (quantum, delay) {
            (Some(q), Some(d)) => Some(q.min(d)),
            (q, d) => q.or(d),
        }
    }

    /// What it did so far.
    pub fn stats(&self) -> TimerStats {
        self.stats
    }
}
