//! The scheduler's error type: settings it refuses, and what can go wrong starting workers.

use std::io;

use overtake_runtime::preempt::Unavailable;
use thiserror::Error;

/// A setting of [`SchedConfig`](crate::SchedConfig) (or of the start options) that cannot work.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// `workers` is 0.
    #[error("at least one worker is needed")]
    NoWorkers,
    /// An inbox capacity is 0.
    #[error("inbox capacities must be at least 1")]
    EmptyInbox,
    /// `yield_interval` is 0 under the cooperative policy.
    #[error("the cooperative yield interval must be at least 1 record access")]
    NoYieldInterval,
    /// `starvation_threshold` is negative or not a number.
    #[error("the starvation threshold must be a number, 0 or more")]
    StarvationThreshold,
    /// `task_pool` is 0.
    #[error("each worker needs at least one task context")]
    NoTaskContexts,
    /// `awaiting_limit` is 0.
    #[error("each worker must be able to keep at least one job awaiting its acknowledgement")]
    NoAwaiting,
    /// `stack_size` is below 64 KiB.
    #[error("worker stacks must be at least 64 KiB")]
    StackTooSmall,
    /// `blocked_report` is below 10 ms.
    #[error("the blocked-worker report needs a bound of at least 10 ms")]
    BlockedReportTooShort,
    /// `quantum` is zero under the quantum policy.
    #[error("the quantum must be longer than zero")]
    NoQuantum,
    /// `resumed_quanta` is 0 under the quantum policy.
    #[error("a resumed task needs at least one quantum")]
    NoResumedQuanta,
    /// More idle-work sources than workers were given.
    #[error("more idle-work sources than workers")]
    TooManyIdleWork,
    /// More reactors than workers were given.
    #[error("more reactors than workers")]
    TooManyReactors,
}

/// Everything that can stop the scheduler from running.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum SchedError {
    /// A setting that cannot work.
    #[error(transparent)]
    InvalidConfig(#[from] ConfigError),
    /// The chosen preemption mechanism cannot be used here.
    #[error(transparent)]
    Unavailable(#[from] Unavailable),
    /// A worker thread could not be started.
    #[error("cannot start worker {index}: {source}")]
    SpawnWorker {
        /// The worker.
        index: usize,
        /// What the operating system said.
        source: io::Error,
    },
    /// A worker could not install its preemption handler.
    #[error("worker {index}: cannot install preemption: {source}")]
    RegisterWorker {
        /// The worker.
        index: usize,
        /// What the operating system said.
        source: io::Error,
    },
    /// A worker could not allocate a context's stack.
    #[error("worker {index}: cannot allocate a context stack: {source}")]
    ContextStack {
        /// The worker.
        index: usize,
        /// What the operating system said.
        source: io::Error,
    },
    /// A worker thread exited while it was being set up, without saying why.
    #[error("worker {0} exited during set-up")]
    WorkerExited(usize),
    /// A worker thread panicked (a bug; its message went to stderr).
    #[error("worker {0} panicked")]
    WorkerPanicked(usize),
}
