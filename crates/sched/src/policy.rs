//! Scheduling policies and their settings.

use std::time::Duration;

use overtake_runtime::preempt::Delivery;

use crate::error::SchedError;

/// How a worker makes room for high-priority work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// Run to completion: high-priority work waits for the running transaction to finish, and is
    /// taken first at transaction boundaries.
    Wait,
    /// Like `Wait`, and a running transaction also yields to waiting high-priority work every
    /// `yield_interval` record accesses.
    Cooperative,
    /// Batched on-demand preemption: the dispatcher pushes a batch and asks once; the worker pauses
    /// the running transaction wherever it is, drains the batch in another context, and resumes it.
    Preempt,
    /// Aspen's policy for work whose priorities are unknown (all at one level): a task that has
    /// run for `quantum` is preempted, but only if other work waits (`skip_needless`), and new
    /// work runs before preempted work (`two_queues`).
    Quantum,
}

impl Policy {
    /// A short, stable name.
    pub fn name(self) -> &'static str {
        match self {
            Policy::Wait => "wait",
            Policy::Cooperative => "cooperative",
            Policy::Preempt => "preempt",
            Policy::Quantum => "quantum",
        }
    }
}

/// Everything the scheduler needs to know, besides the workload.
#[derive(Clone, Debug)]
pub struct SchedConfig {
    /// The policy.
    pub policy: Policy,
    /// Worker threads.
    pub workers: usize,
    /// Capacity of each worker's high-priority queue (the batch size per worker).
    pub hp_queue: usize,
    /// Capacity of each worker's low-priority queue.
    pub lp_queue: usize,
    /// Cooperative: record accesses between checks for waiting high-priority work.
    pub yield_interval: u32,
    /// Preempt: the starvation threshold. A worker running a low-priority transaction is only
    /// preempted (and only keeps serving high-priority work) while the starvation level
    /// `L = T_h / (T_1 - T_0)` is below it. 0 never preempts; values at or above 1 never limit.
    pub starvation_threshold: f64,
    /// Quantum: how long a task runs before it may be preempted for other waiting work.
    pub quantum: Duration,
    /// Quantum with two queues: a task paused by preemption this long (100 ms by default) runs
    /// before new work of its level, and then to its end. New work first is what keeps short requests short, as long
    /// as the queue of new work empties now and then; when it does not (an overload), paused requests would wait
    /// indefinitely, each holding a task context and a snapshot that keeps the collector from
    /// reclaiming, and the worker would spend more per request the longer that lasted (measured:
    /// a third of the offered requests lost at a load `wait` still served).
    pub paused_age_limit: Duration,
    /// Quantum: a task that was preempted before runs this many quanta per slice when it resumes
    /// (Aspen's longer quantum for the preempted queue: a long request is split into fewer
    /// slices, each of which costs a resumption with cold caches; new work still goes first).
    pub resumed_quanta: u32,
    /// Quantum: new work runs before preempted work of the same level (Aspen's two queues). Off:
    /// a preempted task goes to the back of one queue with the new work.
    pub two_queues: bool,
    /// Quantum: at the end of a quantum, preempt only if other work waits (off: always, as a
    /// plain timer interrupt would).
    pub skip_needless: bool,
    /// Preempt: how requests reach the worker.
    pub delivery: Delivery,
    /// Preempt with signals: how long the request flag may stay unacknowledged before SIGURG is
    /// sent as the backstop.
    pub signal_delay: Duration,
    /// How long to run.
    pub duration: Duration,
    /// If set, every worker is interrupted this often even without work for it (measures the
    /// mechanism's own cost).
    pub interrupt_interval: Option<Duration>,
    /// Stack size of each task context.
    pub stack_size: usize,
    /// Task contexts per worker: how many started transactions (running, paused or parked) a
    /// worker can hold at once. Contexts are created when first needed and reused.
    pub task_pool: usize,
    /// Pin workers to cores (and the dispatcher to the last core).
    pub pin: bool,
    /// Report a worker whose thread stays blocked in the kernel this long while it runs a task
    /// (application code that blocks: see [`crate::call`]); `None`: never.
    pub blocked_report: Option<Duration>,
    /// Record where each urgent job's time went, and every non-preemptible region's length
    /// ([`crate::trace`]). A diagnostic mode: it costs system calls per task slice.
    pub trace: bool,
}

impl Default for SchedConfig {
    fn default() -> Self {
        SchedConfig {
            policy: Policy::Preempt,
            workers: 1,
            hp_queue: 4,
            lp_queue: 1,
            yield_interval: 10_000,
            starvation_threshold: 100.0,
            quantum: Duration::from_micros(50),
            resumed_quanta: 4,
            paused_age_limit: Duration::from_millis(100),
            two_queues: true,
            skip_needless: true,
            delivery: Delivery::Signal,
            signal_delay: Duration::from_micros(10),
            duration: Duration::from_secs(10),
            interrupt_interval: None,
            stack_size: 1 << 20,
            task_pool: 1024,
            pin: true,
            blocked_report: Some(Duration::from_secs(1)),
            trace: false,
        }
    }
}

impl SchedConfig {
    /// Checks the settings, with a message for the first one that cannot work.
    pub fn validate(&self) -> Result<(), SchedError> {
        if self.workers == 0 {
            return Err(SchedError::InvalidConfig("at least one worker is needed"));
        }
        if self.hp_queue == 0 || self.lp_queue == 0 {
            return Err(SchedError::InvalidConfig("queue sizes must be at least 1"));
        }
        if self.policy == Policy::Cooperative && self.yield_interval == 0 {
            return Err(SchedError::InvalidConfig(
                "the cooperative yield interval must be at least 1 record access",
            ));
        }
        if self.starvation_threshold.is_nan() || self.starvation_threshold < 0.0 {
            return Err(SchedError::InvalidConfig(
                "the starvation threshold must be a number, 0 or more",
            ));
        }
        if self.task_pool == 0 {
            return Err(SchedError::InvalidConfig(
                "each worker needs at least one task context",
            ));
        }
        if self.stack_size < 64 * 1024 {
            return Err(SchedError::InvalidConfig(
                "worker stacks must be at least 64 KiB",
            ));
        }
        if self
            .blocked_report
            .is_some_and(|b| b < Duration::from_millis(10))
        {
            return Err(SchedError::InvalidConfig(
                "the blocked-worker report needs a bound of at least 10 ms",
            ));
        }
        if self.policy == Policy::Quantum && self.resumed_quanta == 0 {
            return Err(SchedError::InvalidConfig(
                "a resumed task needs at least one quantum",
            ));
        }
        if self.policy == Policy::Quantum && self.quantum.is_zero() {
            return Err(SchedError::InvalidConfig(
                "the quantum must be longer than zero",
            ));
        }
        if self.preempts() || self.interrupt_interval.is_some() {
            self.delivery.check()?;
        }
        Ok(())
    }

    /// Record accesses between polls of the request flag (0: never).
    pub(crate) fn poll_every(&self) -> u32 {
        match self.policy {
            Policy::Wait => 0,
            Policy::Cooperative => self.yield_interval,
            Policy::Preempt | Policy::Quantum => 1,
        }
    }

    /// True for the policies that interrupt a running task wherever it is (and so use signals
    /// with signal delivery).
    pub(crate) fn preempts(&self) -> bool {
        matches!(self.policy, Policy::Preempt | Policy::Quantum)
    }
}
