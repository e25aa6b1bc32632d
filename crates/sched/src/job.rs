//! What the scheduler runs: jobs, how they are executed, and how they ended.
//!
//! The scheduler is generic: a client supplies an [`Executor`] (how to run one job, which class
//! and kind it is) and submits jobs. The scheduler decides where and when each job runs and
//! measures what happened to it.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use overtake_priority::{Group, Priority};

/// How a job ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Status {
    /// Committed.
    Committed,
    /// Rolled back on purpose (e.g. TPC-C's invalid item); not retried.
    RolledBack,
    /// Failed (an error, or retries exhausted).
    Failed,
}

/// Why a job failed.
#[derive(Clone, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JobError {
    /// Its worker had no task context for it: every one held a started task (paused or
    /// waiting). Raise [`SchedConfig::task_pool`](crate::SchedConfig::task_pool).
    #[error(
        "worker {worker}: all {limit} task contexts are in use by started transactions (paused or waiting); raise the pool size"
    )]
    NoTaskContext {
        /// The worker.
        worker: usize,
        /// Its contexts.
        limit: usize,
    },
    /// Its worker could not allocate a stack for a new task context.
    #[error("worker {worker}: no stack for a new task: {source}")]
    NoStack {
        /// The worker.
        worker: usize,
        /// What the operating system said.
        source: Arc<std::io::Error>,
    },
    /// The job's code panicked (the message, if it was a string).
    #[error("it panicked: {0}")]
    Panicked(String),
    /// The job ran and failed: the executor's own error.
    #[error(transparent)]
    Failed(Arc<dyn std::error::Error + Send + Sync>),
}

impl JobError {
    /// The executor's error `e`, as a job's failure.
    pub fn failed(e: impl std::error::Error + Send + Sync + 'static) -> Self {
        JobError::Failed(Arc::new(e))
    }
}

/// What a job that committed in memory waits for before it counts as done and its answer may
/// leave (ERMIA's pipelined commit): its log record durable, typically. The job's task ends at
/// once and frees its context; the worker keeps only this, polls it again whenever the waker it
/// polled with is woken (from any thread: the wake sets a flag, and for a job above the lowest
/// level raises the preemption request), and books the job when it resolves: its latency ends
/// then, the time counts as waiting, and an error fails the job. It is polled on the worker's
/// thread inside a non-preemptible region, possibly on a running task's stack: it must not
/// block or park.
pub type Acknowledgement = Pin<Box<dyn Future<Output = Result<(), JobError>> + Send>>;

/// The result of executing one job.
#[non_exhaustive]
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
    /// How long its commit waited for the log to make it durable (zero without a `sync` log).
    pub durable_wait: Duration,
    /// How long it was parked waiting for its client's next request (an interactive
    /// transaction: a server's transaction block between statements). Part of its parked time.
    pub client_wait: Duration,
    /// What went wrong, for a failed job.
    pub error: Option<JobError>,
    /// What it still waits for before it is done (see [`Acknowledgement`]); `None`: nothing.
    pub acknowledgement: Option<Acknowledgement>,
}

impl std::fmt::Debug for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Outcome")
            .field("status", &self.status)
            .field("conflicts", &self.conflicts)
            .field("validation_failures", &self.validation_failures)
            .field("promoted", &self.promoted)
            .field("wasted", &self.wasted)
            .field("locks", &self.locks)
            .field("durable_wait", &self.durable_wait)
            .field("client_wait", &self.client_wait)
            .field("error", &self.error)
            .field("acknowledgement", &self.acknowledgement.is_some())
            .finish()
    }
}

/// What a job's attempts met in a lock manager (zero outside two-phase locking).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
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
            durable_wait: Duration::ZERO,
            client_wait: Duration::ZERO,
            error: None,
            acknowledgement: None,
        }
    }

    /// A copy of everything but the acknowledgement (which only one can await).
    pub fn without_acknowledgement(&self) -> Outcome {
        Outcome {
            status: self.status,
            conflicts: self.conflicts,
            validation_failures: self.validation_failures,
            promoted: self.promoted,
            wasted: self.wasted,
            locks: self.locks,
            durable_wait: self.durable_wait,
            client_wait: self.client_wait,
            error: self.error.clone(),
            acknowledgement: None,
        }
    }

    /// A job that ended with `status` after the attempts and waits these counters describe
    /// (every field can be set afterwards: they are public).
    pub fn ended(status: Status) -> Self {
        Outcome {
            status,
            ..Outcome::committed()
        }
    }

    /// A job that failed at once because of `error`.
    pub fn failed(error: JobError) -> Self {
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

    /// The group `job` belongs to (its tier and weight; statistics are kept per group): by
    /// default its level's tier at the default weight.
    fn group(&self, job: &Self::Job) -> Group {
        Group::of(self.priority(job))
    }

    /// Runs `job` to completion on worker `worker` (retrying as the job's policy says). It may be
    /// paused and resumed any number of times while it runs.
    fn execute(&self, job: &mut Self::Job, worker: usize) -> Outcome;

    /// Whether `job` runs on the worker's own stack, between tasks, rather than as a task: for
    /// short work that is never paused and never parks (a session's protocol step). It needs no
    /// task context (so it runs while every context is held by parked tasks) and costs no
    /// switch. Its group's share is charged for it, but it is not booked in the statistics
    /// (it is not a transaction). False by default.
    fn runs_between_tasks(&self, _job: &Self::Job) -> bool {
        false
    }
}

/// A worker's own source of work, asked whenever the worker has nothing else to run (`None`:
/// nothing now). See [`StartOptions::idle_work`](crate::StartOptions::idle_work).
pub type IdleWork<J> = Box<dyn FnMut() -> Option<J> + Send>;

/// A job with the timestamps the scheduler keeps for it until it starts.
pub(crate) struct Scheduled<J> {
    pub(crate) job: J,
    /// When it arrived (entered the system).
    pub(crate) arrival: Instant,
    /// When it was put into a worker's queue.
    pub(crate) enqueued: Instant,
}

impl<J> Scheduled<J> {
    /// `job`, arrived and queued at `now`.
    pub(crate) fn at(job: J, now: Instant) -> Self {
        Scheduled {
            job,
            arrival: now,
            enqueued: now,
        }
    }
}
