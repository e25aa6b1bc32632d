//! Scheduling policies and their settings.

use std::time::Duration;

use overtake_runtime::preempt::Delivery;

use crate::error::{ConfigError, SchedError};

/// How a worker makes room for high-priority work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Policy {
    /// Run to completion: high-priority work waits for the running transaction to finish, and is
    /// taken first at transaction boundaries.
    Wait,
    /// Like `Wait`, and a running transaction also yields to waiting high-priority work every
    /// `yield_interval` record accesses.
    Cooperative,
    /// Batched on-demand preemption: a worker given work more urgent than its running transaction
    /// is asked once; it pauses the running transaction wherever it is, drains the urgent work in
    /// another context, and resumes it.
    Preempt,
    /// Aspen's policy for work whose priorities are unknown (all at one level): a task that has
    /// run for `quantum` is preempted, but only if other work waits (`skip_needless`), and new
    /// work runs before preempted work (`two_queues`). Where levels differ, more urgent work
    /// preempts at once, as under `Preempt`: levels are strict, and work of one level shares a
    /// worker in quanta (so one long task does not hold up every other task of its level).
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

/// How the scheduler service runs: its workers, its policy and the policy's parameters, and its
/// inboxes. Start from [`Default`] and change what you need, with the setters or by assigning
/// the public fields:
///
/// ```
/// use overtake_sched::{Policy, SchedConfig};
/// let config = SchedConfig::default().workers(2).policy(Policy::Preempt);
/// assert_eq!(config.workers, 2);
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct SchedConfig {
    /// The policy.
    pub policy: Policy,
    /// Worker threads.
    pub workers: usize,
    /// Capacity of each worker's inbox for each level above the lowest: jobs admitted but not
    /// started. A submission that finds every worker's inbox full is refused
    /// ([`Overloaded`](crate::Overloaded)) or waits ([`submit_waiting`](crate::Scheduler::submit_waiting)).
    pub urgent_inbox: usize,
    /// Capacity of each worker's inbox for the lowest level (background work).
    pub background_inbox: usize,
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
    /// Stack size of each task context.
    pub stack_size: usize,
    /// Task contexts per worker: how many started transactions (running, paused or parked) a
    /// worker can hold at once. Contexts are created when first needed and reused.
    pub task_pool: usize,
    /// Jobs per worker that ended in memory and await their acknowledgements (pipelined
    /// commit: see [`Acknowledgement`](crate::Acknowledgement)). They hold no context; at this
    /// many, the worker starts no new job until one resolves (a slow disk holds work back in
    /// the inbox rather than in memory).
    pub awaiting_limit: usize,
    /// Pin workers to cores, one each.
    pub pin: bool,
    /// Report a worker whose thread stays blocked in the kernel this long while it runs a task
    /// (application code that blocks: see [`crate::call`]); `None`: never.
    pub blocked_report: Option<Duration>,
    /// How long a worker with nothing to do spins before it sleeps until work arrives (200 µs by
    /// default: a job arriving meanwhile starts without a wake-up). A server whose network
    /// threads and clients share the workers' cores spins less: the spinning takes their CPU.
    pub idle_spin: Duration,
    /// Spin only on a core to spare: while every other worker sleeps and the machine runs no
    /// more threads than it has cores (a worker that goes idle otherwise sleeps at once). Where
    /// clients share the workers' cores (a server on a small machine), a spinning worker would
    /// take a core from a client; on a spare core, one worker serving one client's requests in
    /// turn meets each with no wake-up (measured: a fifth off a point SELECT's latency at one
    /// client).
    pub idle_spin_alone: bool,
    /// While a worker runs a task of the lowest level, its thread runs at the operating system's
    /// weakest weight (nice 19), back at 0 for anything more urgent: on a machine whose cores
    /// it shares with network threads and clients, those then get a core at once rather than
    /// their share of it. Costs a system call when a worker changes between the lowest level and
    /// another; ignored if the process may not raise a thread's priority back.
    pub os_background: bool,
    /// Record where each urgent job's time went, and every non-preemptible region's length
    /// ([`crate::trace`]). A diagnostic mode: it costs system calls per task slice.
    pub trace: bool,
    /// Keep a [`JobRecord`](crate::JobRecord) of every job in the statistics (raw per-job
    /// latencies, e.g. for one's own figures). Costs memory in proportion to the jobs run.
    pub record_jobs: bool,
}

impl Default for SchedConfig {
    fn default() -> Self {
        SchedConfig {
            policy: Policy::Preempt,
            workers: 1,
            urgent_inbox: 256,
            background_inbox: 256,
            yield_interval: 10_000,
            starvation_threshold: 100.0,
            quantum: Duration::from_micros(50),
            resumed_quanta: 4,
            paused_age_limit: Duration::from_millis(100),
            idle_spin: Duration::from_micros(200),
            idle_spin_alone: false,
            os_background: false,
            two_queues: true,
            skip_needless: true,
            delivery: Delivery::Signal,
            signal_delay: Duration::from_micros(10),
            stack_size: 1 << 20,
            task_pool: 1024,
            awaiting_limit: 4096,
            pin: true,
            blocked_report: Some(Duration::from_secs(1)),
            trace: false,
            record_jobs: false,
        }
    }
}

impl SchedConfig {
    /// Checks the settings, with a message for the first one that cannot work.
    pub fn validate(&self) -> Result<(), SchedError> {
        if self.workers == 0 {
            return Err(ConfigError::NoWorkers.into());
        }
        if self.urgent_inbox == 0 || self.background_inbox == 0 {
            return Err(ConfigError::EmptyInbox.into());
        }
        if self.policy == Policy::Cooperative && self.yield_interval == 0 {
            return Err(ConfigError::NoYieldInterval.into());
        }
        if self.starvation_threshold.is_nan() || self.starvation_threshold < 0.0 {
            return Err(ConfigError::StarvationThreshold.into());
        }
        if self.task_pool == 0 {
            return Err(ConfigError::NoTaskContexts.into());
        }
        if self.awaiting_limit == 0 {
            return Err(ConfigError::NoAwaiting.into());
        }
        if self.stack_size < 64 * 1024 {
            return Err(ConfigError::StackTooSmall.into());
        }
        if self
            .blocked_report
            .is_some_and(|b| b < Duration::from_millis(10))
        {
            return Err(ConfigError::BlockedReportTooShort.into());
        }
        if self.policy == Policy::Quantum && self.resumed_quanta == 0 {
            return Err(ConfigError::NoResumedQuanta.into());
        }
        if self.policy == Policy::Quantum && self.quantum.is_zero() {
            return Err(ConfigError::NoQuantum.into());
        }
        if self.preempts() {
            self.delivery.check()?;
        }
        Ok(())
    }

    /// Sets [`policy`](Self::policy).
    pub fn policy(mut self, policy: Policy) -> Self {
        self.policy = policy;
        self
    }

    /// Sets [`workers`](Self::workers).
    pub fn workers(mut self, workers: usize) -> Self {
        self.workers = workers;
        self
    }

    /// Sets both inbox capacities ([`urgent_inbox`](Self::urgent_inbox),
    /// [`background_inbox`](Self::background_inbox)).
    pub fn inboxes(mut self, urgent: usize, background: usize) -> Self {
        self.urgent_inbox = urgent;
        self.background_inbox = background;
        self
    }

    /// Sets [`delivery`](Self::delivery).
    pub fn delivery(mut self, delivery: Delivery) -> Self {
        self.delivery = delivery;
        self
    }

    /// Sets [`starvation_threshold`](Self::starvation_threshold).
    pub fn starvation_threshold(mut self, threshold: f64) -> Self {
        self.starvation_threshold = threshold;
        self
    }

    /// Sets [`quantum`](Self::quantum).
    pub fn quantum(mut self, quantum: Duration) -> Self {
        self.quantum = quantum;
        self
    }

    /// Sets [`yield_interval`](Self::yield_interval).
    pub fn yield_interval(mut self, accesses: u32) -> Self {
        self.yield_interval = accesses;
        self
    }

    /// Sets [`signal_delay`](Self::signal_delay).
    pub fn signal_delay(mut self, delay: Duration) -> Self {
        self.signal_delay = delay;
        self
    }

    /// Sets [`stack_size`](Self::stack_size).
    pub fn stack_size(mut self, bytes: usize) -> Self {
        self.stack_size = bytes;
        self
    }

    /// Sets [`os_background`](Self::os_background).
    pub fn os_background(mut self, on: bool) -> Self {
        self.os_background = on;
        self
    }

    /// Sets [`idle_spin`](Self::idle_spin).
    pub fn idle_spin(mut self, spin: Duration) -> Self {
        self.idle_spin = spin;
        self
    }

    /// Sets [`idle_spin_alone`](Self::idle_spin_alone).
    pub fn idle_spin_alone(mut self, alone: bool) -> Self {
        self.idle_spin_alone = alone;
        self
    }

    /// Sets [`pin`](Self::pin).
    pub fn pin(mut self, pin: bool) -> Self {
        self.pin = pin;
        self
    }

    /// Sets [`task_pool`](Self::task_pool).
    pub fn task_pool(mut self, contexts: usize) -> Self {
        self.task_pool = contexts;
        self
    }

    /// Sets [`blocked_report`](Self::blocked_report).
    pub fn blocked_report(mut self, after: Option<Duration>) -> Self {
        self.blocked_report = after;
        self
    }

    /// Sets [`trace`](Self::trace).
    pub fn trace(mut self, on: bool) -> Self {
        self.trace = on;
        self
    }

    /// Sets [`record_jobs`](Self::record_jobs).
    pub fn record_jobs(mut self, on: bool) -> Self {
        self.record_jobs = on;
        self
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
    pub fn preempts(&self) -> bool {
        matches!(self.policy, Policy::Preempt | Policy::Quantum)
    }
}
