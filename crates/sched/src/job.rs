//! What the scheduler runs: jobs, how they are executed, and where they come from.
//!
//! The scheduler is generic: a workload supplies an [`Executor`] (how to run one job, which class
//! and kind it is) and [`Arrivals`] (when jobs arrive). The scheduler decides where and when each
//! job runs and measures what happened to it.

use std::time::{Duration, Instant};

use overtake_priority::Priority;

/// How a job ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Committed.
    Committed,
    /// Rolled back on purpose (e.g. TPC-C's invalid item); not retried.
    RolledBack,
    /// Failed (an error, or retries exhausted).
    Failed,
}

/// The result of executing one job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// How it ended.
    pub status: Status,
    /// Attempts aborted by write-write conflicts (and retried).
    pub conflicts: u32,
    /// Attempts aborted by failed serializable validation (and retried).
    pub validation_failures: u32,
    /// Attempts that ran promoted after repeated failures (non-preemptible, reserving what they
    /// write: see `overtake_engine::RetryPolicy::promote_after`).
    pub promoted: u32,
    /// Time spent in attempts that failed: work thrown away.
    pub wasted: Duration,
    /// Lock waits and lock aborts over its attempts (two-phase locking).
    pub locks: LockOutcome,
    /// What went wrong, for a failed job.
    pub error: Option<String>,
}

/// What a job's attempts met in a lock manager (zero outside two-phase locking).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LockOutcome {
    /// Attempts aborted as deadlock victims (and retried).
    pub deadlocks: u32,
    /// Attempts aborted by a more urgent transaction's lock policy or a wait-depth limit (and
    /// retried).
    pub aborts: u32,
    /// Lock requests that had to wait.
    pub waits: u32,
    /// Their time from request to grant (POW's QueueTime), summed.
    pub queue: Duration,
    /// Their time until the holders at request time had released (POW's WaitExcess), summed.
    pub excess: Duration,
}

impl Outcome {
    /// A job that committed on its first attempt.
    pub fn committed() -> Self {
        Outcome {
            status: Status::Committed,
            conflicts: 0,
            validation_failures: 0,
            promoted: 0,
            wasted: Duration::ZERO,
            locks: LockOutcome::default(),
            error: None,
        }
    }

    /// A job that failed at once because of `error`.
    pub fn failed(error: String) -> Self {
        Outcome {
            status: Status::Failed,
            error: Some(error),
            ..Outcome::committed()
        }
    }
}

/// Runs jobs. Shared by every worker.
pub trait Executor: Send + Sync + 'static {
    /// A unit of work.
    type Job: Send + 'static;

    /// Names of the job kinds, indexed by [`kind`](Self::kind) (for per-kind statistics).
    fn kinds(&self) -> &[&'static str];

    /// The kind of `job`.
    fn kind(&self, job: &Self::Job) -> usize;

    /// The priority class of `job`.
    fn priority(&self, job: &Self::Job) -> Priority;

    /// Runs `job` to completion on worker `worker` (retrying as the job's policy says). It may be
    /// paused and resumed any number of times while it runs.
    fn execute(&self, job: &mut Self::Job, worker: usize) -> Outcome;
}

/// Where jobs come from, as seen by the dispatcher.
pub trait Arrivals<J>: Send {
    /// Appends the high-priority jobs that have arrived by `now`, each with its arrival time, and
    /// returns when the next ones are due (`None`: no more).
    fn high(&mut self, now: Instant, out: &mut Vec<(J, Instant)>) -> Option<Instant>;

    /// A low-priority job for a worker's low-priority queue, which the dispatcher keeps full
    /// (`None`: there is no low-priority work of this kind).
    fn low(&mut self) -> Option<J>;
}

/// A worker-local source of low-priority work, asked when the worker has nothing queued (a closed
/// loop, like TPC-C terminals without think time).
pub type LocalFeed<J> = Box<dyn FnMut() -> Option<J> + Send>;

/// A job with the timestamps the scheduler keeps for it until it starts.
pub(crate) struct Scheduled<J> {
    pub(crate) job: J,
    /// When it arrived (entered the system).
    pub(crate) arrival: Instant,
    /// When it was put into a worker's queue.
    pub(crate) enqueued: Instant,
}
