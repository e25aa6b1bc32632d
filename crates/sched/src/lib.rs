//! Transaction scheduling for Overtake.
//!
//! Policy lives here: which transaction runs next on a worker, and when a running one is paused for
//! a more urgent one. This crate builds on the engine (transactions carry a
//! [`Priority`](overtake_engine::Priority)) and on the runtime's mechanisms (regions, contexts,
//! preemption delivery); neither of those knows anything about policy.
//!
//! - [`job`]: what is scheduled (an [`Executor`] runs jobs, [`Arrivals`] says when they arrive).
//! - [`policy`]: `Wait`, `Cooperative` and `Preempt`, and their settings.
//! - `queues`: a worker's bounded single-producer single-consumer queues of new jobs, one per
//!   priority level.
//! - `task`: a worker's started transactions: pooled contexts, states, per-level ready queues.
//! - `worker`: a pinned thread whose loop always runs the most urgent ready task, preempting
//!   (nestedly, across levels) and resuming tasks, and resuming parked tasks when woken.
//! - `dispatcher`: admission and placement, preemption requests and the signal backstop.
//! - `starvation`: PreemptDB's starvation level `L = T_h / (T_1 - T_0)`.
//! - [`stats`]: per-transaction timestamps turned into latency percentiles per class and per kind.
//!
//! [`run`] runs a workload under a policy and reports.

#![forbid(unsafe_code)]

mod dispatcher;
mod error;
pub mod job;
pub mod policy;
mod queues;
mod starvation;
pub mod stats;
mod task;
mod worker;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

pub use dispatcher::DispatchStats;
pub use error::SchedError;
pub use job::{Arrivals, Executor, LocalFeed, Outcome, Status};
pub use overtake_runtime::preempt::{Delivery, PreemptStats};
pub use policy::{Policy, SchedConfig};
pub use stats::{Breakdown, ClassStats, JobTiming, LatencyHistogram, LatencySummary, RunStats};

use dispatcher::Dispatcher;
use starvation::Clock;
use worker::{WorkerSetup, WorkerShared, run_worker};

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
}

/// Runs a workload under `config` for `config.duration`. `feeds` gives each worker an optional
/// local source of low-priority work (a closed loop); `tick` is called about ten times a second
/// with the elapsed time.
pub fn run<E: Executor>(
    config: &SchedConfig,
    executor: Arc<E>,
    arrivals: &mut dyn Arrivals<E::Job>,
    mut feeds: Vec<Option<LocalFeed<E::Job>>>,
    tick: &dyn Fn(Duration),
) -> Result<RunReport, SchedError> {
    config.validate()?;
    // Read the usable cores before anything is pinned (see `overtake_runtime::worker`).
    let cores = overtake_runtime::worker::available_cores();
    feeds.resize_with(config.workers, || None);
    let workers: Vec<Arc<WorkerShared>> = (0..config.workers)
        .map(|_| Arc::new(WorkerShared::new()))
        .collect();
    let (mut outlets, inlets): (Vec<_>, Vec<_>) = (0..config.workers)
        .map(|_| queues::worker_queues(config.hp_queue, config.lp_queue))
        .unzip();
    let stop = Arc::new(AtomicBool::new(false));
    let epoch = Instant::now();
    let kinds = executor.kinds().to_vec();
    let mut handles = Vec::with_capacity(config.workers);
    for (index, (feed, queues)) in feeds.into_iter().zip(inlets).enumerate() {
        let setup = WorkerSetup {
            index,
            shared: Arc::clone(&workers[index]),
            queues,
            exec: Arc::clone(&executor),
            config: config.clone(),
            epoch,
            stop: Arc::clone(&stop),
            feed,
        };
        let handle = std::thread::Builder::new()
            .name(format!("worker-{index}"))
            .spawn(move || run_worker(setup))
            .map_err(|source| SchedError::SpawnWorker { index, source })?;
        handles.push(handle);
    }
    if config.pin {
        overtake_runtime::worker::pin_current_thread(cores.saturating_sub(1));
    }
    // Workers are ready (registered, so that signals find them, and set up) before the clock
    // starts.
    while workers.iter().any(|w| !w.ready.load(Ordering::Acquire)) {
        std::thread::yield_now();
        if handles.iter().any(|h| h.is_finished()) {
            break;
        }
    }
    let start = Instant::now();
    let level_of = |job: &E::Job| executor.priority(job);
    let dispatch = Dispatcher {
        config,
        workers: &workers,
        queues: &mut outlets,
        arrivals,
        level_of: &level_of,
        clock: Clock::new(epoch),
    }
    .run(start, start + config.duration, tick);
    stop.store(true, Ordering::Relaxed);
    let mut stats = RunStats::default();
    let mut first_error = None;
    for (index, handle) in handles.into_iter().enumerate() {
        match handle.join() {
            Ok(Ok(s)) => stats.merge(&s),
            Ok(Err(e)) => {
                first_error.get_or_insert(e);
            }
            Err(_) => {
                first_error.get_or_insert(SchedError::WorkerPanicked(index));
            }
        }
    }
    if let Some(e) = first_error {
        return Err(e);
    }
    let mut preempt = PreemptStats::default();
    for w in &workers {
        preempt += w.target.stats();
    }
    Ok(RunReport {
        config: config.clone(),
        elapsed: start.elapsed(),
        stats,
        kinds,
        preempt,
        dispatch,
    })
}
