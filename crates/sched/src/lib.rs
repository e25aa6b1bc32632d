//! Transaction scheduling for Overtake.
//!
//! Policy lives here: which transaction runs next on a worker, and when a running one is paused for
//! a more urgent one. Work carries a [`Priority`] (from `overtake-priority`, which the engine's
//! transactions carry too); this crate builds on the runtime's mechanisms (regions, contexts,
//! preemption delivery), which know nothing about policy, and not on the engine.
//!
//! - [`job`]: what is scheduled (an [`Executor`] runs jobs, [`Arrivals`] says when they arrive).
//! - [`policy`]: `Wait`, `Cooperative` and `Preempt`, and their settings.
//! - [`call`]: application code as jobs: a closure with a priority and a ticket for its result.
//! - [`Scheduler`]: the running service: workers and the handle any thread submits jobs to
//!   (bounded inboxes, "overloaded" instead of unbounded queues, shutdown that drains).
//! - `inbox`: a worker's bounded multi-producer queues of new jobs, one per priority level.
//! - `backstop`: SIGURG for preemption requests not taken up within the signal delay.
//! - `task`: a worker's started transactions: pooled contexts, states, per-level ready queues.
//! - `worker`: a pinned thread whose loop always runs the most urgent ready task, preempting
//!   (nestedly, across levels) and resuming tasks, and resuming parked tasks when woken.
//! - `dispatcher`: the open-loop client of a scheduler: arrivals, placement, batched requests.
//! - `starvation`: PreemptDB's starvation level `L = T_h / (T_1 - T_0)`, per conflict period.
//! - `watchdog`: reports a worker blocked in the kernel while it runs a task.
//! - [`trace`]: where the slowest urgent jobs' time went (a diagnostic mode).
//! - [`stats`]: per-transaction timestamps turned into latency percentiles per class and per kind.
//!
//! [`run`] runs a workload under a policy and reports.

#![forbid(unsafe_code)]

mod backstop;
pub mod call;
mod dispatcher;
mod error;
mod inbox;
pub mod job;
pub mod policy;
mod scheduler;
mod starvation;
pub mod stats;
mod task;
pub mod trace;
mod watchdog;
mod worker;

use std::sync::Arc;
use std::time::{Duration, Instant};

pub use call::{Call, CallError, Calls, Ticket};
pub use dispatcher::DispatchStats;
pub use error::SchedError;
pub use job::{Arrivals, Executor, LocalFeed, LockOutcome, Outcome, Status};
pub use overtake_priority::Priority;
pub use overtake_runtime::preempt::{Delivery, PreemptStats};
pub use policy::{Policy, SchedConfig};
pub use stats::{Breakdown, ClassStats, JobTiming, LatencyHistogram, LatencySummary, RunStats};

use dispatcher::Dispatcher;
pub use scheduler::{Overloaded, Scheduler, SchedulerReport, Shutdown};
use starvation::Clock;
pub use watchdog::BlockedWorker;

/// The result of [`run`].
#[derive(Clone, Debug)]
pub struct RunReport {
    /// The configuration that ran.
    pub config: SchedConfig,
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

/// Runs a workload under `config` for `config.duration`: a [`Scheduler`] whose client is the
/// open-loop dispatcher (arrivals) plus, per worker, an optional local source of background work
/// (`feeds`, a closed loop). Work still queued at the end is not started; started tasks finish.
/// Without feeds, a run whose arrivals run out ends as soon as all their work is done.
/// `tick` is called about ten times a second with the elapsed time.
pub fn run<E: Executor>(
    config: &SchedConfig,
    executor: Arc<E>,
    arrivals: &mut dyn Arrivals<E::Job>,
    feeds: Vec<Option<LocalFeed<E::Job>>>,
    tick: &dyn Fn(Duration),
) -> Result<RunReport, SchedError> {
    let kinds = executor.kinds().to_vec();
    let ends_when_done = feeds.iter().all(Option::is_none);
    let scheduler = Scheduler::start_with(config, executor, feeds, false)?;
    if config.pin {
        let cores = overtake_runtime::os_thread::available_cores();
        overtake_runtime::os_thread::pin_current_thread(cores.saturating_sub(1));
    }
    let start = Instant::now();
    let dispatch = Dispatcher {
        config,
        scheduler: &scheduler,
        arrivals,
        clock: Clock::new(scheduler.epoch()),
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
