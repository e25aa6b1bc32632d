//! The scheduler's error type: settings it refuses, and what can go wrong starting workers.

use std::io;

use overtake_runtime::preempt::Unavailable;
use thiserror::Error;

/// Everything that can stop the scheduler from running.
#[derive(Debug, Error)]
pub enum SchedError {
    /// A setting that cannot work.
    #[error("{0}")]
    InvalidConfig(&'static str),
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
    /// A worker thread panicked (a bug; its message went to stderr).
    #[error("worker {0} panicked")]
    WorkerPanicked(usize),
}
