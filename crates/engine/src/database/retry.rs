//! How [`Database::run`](super::Database::run) retries, and what its attempts came to.

use std::time::Duration;

use crate::error::{AbortReason, Error, Result};
use crate::txn::LockStats;

/// How [`Database::run`](super::Database::run) retries.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RetryPolicy {
    /// Give up after this many attempts (0: never give up).
    pub max_attempts: u32,
    /// After this many failed attempts, run the next ones promoted (see [`Database::run`](super::Database::run)).
    /// `None`: never promote.
    pub promote_after: Option<u32>,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 1000,
            promote_after: None,
        }
    }
}

impl RetryPolicy {
    /// Retry until success.
    pub fn forever() -> Self {
        RetryPolicy {
            max_attempts: 0,
            promote_after: None,
        }
    }

    /// Never retry.
    pub fn never() -> Self {
        RetryPolicy {
            max_attempts: 1,
            promote_after: None,
        }
    }

    /// At most `attempts` attempts (0: no limit).
    pub fn attempts(mut self, attempts: u32) -> Self {
        self.max_attempts = attempts;
        self
    }

    /// The same policy, promoting attempts after `failures` failed ones.
    pub fn promoting_after(mut self, failures: u32) -> Self {
        self.promote_after = Some(failures);
        self
    }

    pub(super) fn exhausted(&self, tries: u32) -> bool {
        self.max_attempts != 0 && tries >= self.max_attempts
    }

    /// Exponential spin before the next attempt, so that conflicting transactions drift apart. It
    /// spins rather than sleeps: the thread may be an engine worker that must not block.
    pub(super) fn back_off(&self, tries: u32) {
        for _ in 0..(1u32 << tries.min(10)) {
            std::hint::spin_loop();
        }
    }
}

/// The outcome of [`Database::run`](super::Database::run).
#[derive(Debug)]
#[non_exhaustive]
pub struct Attempts<T> {
    /// The body's value, or the error that ended the attempts.
    pub result: Result<T>,
    /// Attempts aborted by write-write conflicts.
    pub conflicts: u32,
    /// Attempts aborted by failed serializable validation.
    pub validation_failures: u32,
    /// Attempts aborted as deadlock victims (two-phase locking).
    pub deadlocks: u32,
    /// Attempts aborted by a more urgent transaction's lock policy, or by a wait-depth limit
    /// (two-phase locking).
    pub lock_preemptions: u32,
    /// Attempts that ran promoted (see [`RetryPolicy::promote_after`]).
    pub promoted: u32,
    /// Time spent in attempts that failed: work thrown away.
    pub failed_time: Duration,
    /// Lock waits over all attempts (two-phase locking).
    pub locks: LockStats,
    /// How long the commit that ended them waited for its log record to be durable (zero in
    /// memory and under `async`; zero from [`Database::run_pipelined`](super::Database::run_pipelined),
    /// which does not wait).
    pub durable_wait: Duration,
    /// From [`Database::run_pipelined`](super::Database::run_pipelined), after a commit: what
    /// must resolve before it is acknowledged. `None` otherwise.
    pub acknowledgement: Option<crate::log::Acknowledgement>,
}

impl<T> Attempts<T> {
    /// Counts a failed attempt by its abort reason.
    pub(super) fn count(&mut self, e: &Error) {
        match e.abort_reason() {
            Some(AbortReason::Conflict) => self.conflicts += 1,
            Some(AbortReason::Validation) => self.validation_failures += 1,
            Some(AbortReason::Deadlock) => self.deadlocks += 1,
            Some(AbortReason::Preempted | AbortReason::WaitDepth) => self.lock_preemptions += 1,
            Some(
                AbortReason::UserRollback
                | AbortReason::TooLarge
                | AbortReason::LockTimeout
                | AbortReason::Interrupted
                | AbortReason::LogStopped,
            )
            | None => {}
        }
    }
}
