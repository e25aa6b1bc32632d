//! Application code as jobs: a closure with a priority ([`Call`]), run by a
//! [`Scheduler<Calls>`](crate::Scheduler), and a [`Ticket`] to wait for its result.
//!
//! ```
//! use overtake_engine::Priority;
//! use overtake_sched::{Calls, Scheduler, SchedConfig, Shutdown};
//! use std::sync::Arc;
//!
//! // Signal preemption needs every allocation inside a non-preemptible region.
//! #[global_allocator]
//! static ALLOC: overtake_runtime::EngineAllocator = overtake_runtime::engine_allocator();
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let config = SchedConfig { pin: false, ..SchedConfig::default() };
//! let scheduler = Scheduler::start(&config, Arc::new(Calls))?;
//! let ticket = scheduler.call(Priority::HIGH, || 6 * 7)?;
//! assert_eq!(ticket.wait()?, 42);
//! scheduler.shutdown(Shutdown::Drain)?;
//! # Ok(())
//! # }
//! ```
//!
//! Waiting on a ticket blocks an application thread; inside a task (a job that waits for another
//! job) it parks the task instead, so its worker keeps running other work. A call that is refused
//! ([`Overloaded`] gives the call back, to resubmit), dropped at shutdown, or panics, resolves its
//! ticket with a [`CallError`]: a panic in application code never takes a worker down.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use overtake_engine::Priority;
use overtake_runtime::park::{self, Unparker};
use overtake_runtime::{NoPreemptGuard, RegionMutex};

use crate::job::{Executor, Outcome};
use crate::scheduler::{Overloaded, Scheduler};

/// Why a call produced no result.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    /// It never ran: the scheduler shut down before starting it, or could not start it (every
    /// task context of its worker was in use).
    #[error("the call did not run: the scheduler shut down or could not start it")]
    NotRun,
    /// The application code panicked (the worker carried on).
    #[error("the call panicked: {0}")]
    Panicked(String),
}

enum Slot<R> {
    Pending(Option<Unparker>),
    Done(Result<R, CallError>),
    Taken,
}

struct Completion<R> {
    slot: RegionMutex<Slot<R>>,
}

impl<R> Completion<R> {
    fn complete(&self, result: Result<R, CallError>) {
        let region = NoPreemptGuard::new();
        let previous = std::mem::replace(&mut *self.slot.lock(&region), Slot::Done(result));
        drop(region);
        if let Slot::Pending(Some(waiter)) = previous {
            waiter.unpark();
        }
    }
}

/// The result side of a call, completed exactly once (by running, or by being dropped unrun).
struct Completer<R> {
    completion: Option<Arc<Completion<R>>>,
}

impl<R> Completer<R> {
    fn complete(mut self, result: Result<R, CallError>) {
        if let Some(c) = self.completion.take() {
            c.complete(result);
        }
    }
}

impl<R> Drop for Completer<R> {
    fn drop(&mut self) {
        if let Some(c) = self.completion.take() {
            c.complete(Err(CallError::NotRun));
        }
    }
}

/// The waiting side of a call.
pub struct Ticket<R> {
    completion: Arc<Completion<R>>,
}

impl<R> Ticket<R> {
    /// The call's result, waiting for it if need be (blocking an application thread, parking a
    /// task).
    pub fn wait(self) -> Result<R, CallError> {
        loop {
            let waiter = park::current_unparker();
            {
                let region = NoPreemptGuard::new();
                let mut slot = self.completion.slot.lock(&region);
                match std::mem::replace(&mut *slot, Slot::Taken) {
                    Slot::Done(result) => return result,
                    Slot::Pending(_) => *slot = Slot::Pending(Some(waiter)),
                    Slot::Taken => unreachable!("a ticket is waited for once"),
                }
            }
            park::park();
        }
    }

    /// The result if the call has finished, else the ticket back.
    pub fn try_take(self) -> Result<Result<R, CallError>, Self> {
        {
            let region = NoPreemptGuard::new();
            let mut slot = self.completion.slot.lock(&region);
            if matches!(*slot, Slot::Done(_))
                && let Slot::Done(result) = std::mem::replace(&mut *slot, Slot::Taken)
            {
                return Ok(result);
            }
        }
        Err(self)
    }
}

impl<R> std::fmt::Debug for Ticket<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ticket").finish_non_exhaustive()
    }
}

/// A closure to run as a transaction of some priority.
pub struct Call {
    priority: Priority,
    /// Runs the closure, completes the ticket, and says how it went for the statistics.
    run: Box<dyn FnOnce() -> Outcome + Send>,
}

impl Call {
    /// A call of `f` at `priority`, and the ticket for its result. The scheduler books it as
    /// committed (or failed, if it panics).
    pub fn new<R, F>(priority: Priority, f: F) -> (Call, Ticket<R>)
    where
        R: Send + 'static,
        F: FnOnce() -> R + Send + 'static,
    {
        Self::build(priority, f, |_| Outcome::committed())
    }

    /// A call of `f` at `priority` that says itself how it ended (committed, rolled back, failed,
    /// after how many retries): the scheduler books that, and the ticket gives it too.
    pub fn with_outcome<F>(priority: Priority, f: F) -> (Call, Ticket<Outcome>)
    where
        F: FnOnce() -> Outcome + Send + 'static,
    {
        Self::build(priority, f, Outcome::clone)
    }

    fn build<R, F>(priority: Priority, f: F, booked: fn(&R) -> Outcome) -> (Call, Ticket<R>)
    where
        R: Send + 'static,
        F: FnOnce() -> R + Send + 'static,
    {
        let completion = Arc::new(Completion {
            slot: RegionMutex::new(Slot::Pending(None)),
        });
        let completer = Completer {
            completion: Some(Arc::clone(&completion)),
        };
        let run = Box::new(move || match catch_unwind(AssertUnwindSafe(f)) {
            Ok(result) => {
                let outcome = booked(&result);
                completer.complete(Ok(result));
                outcome
            }
            Err(panic) => {
                let message = panic
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "a non-string panic".to_owned());
                completer.complete(Err(CallError::Panicked(message.clone())));
                Outcome::failed(format!("the call panicked: {message}"))
            }
        });
        (Call { priority, run }, Ticket { completion })
    }

    /// Its priority.
    pub fn priority(&self) -> Priority {
        self.priority
    }
}

impl std::fmt::Debug for Call {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Call")
            .field("priority", &self.priority)
            .finish_non_exhaustive()
    }
}

/// The executor of [`Call`]s.
#[derive(Clone, Copy, Debug, Default)]
pub struct Calls;

impl Executor for Calls {
    type Job = Call;

    fn kinds(&self) -> &[&'static str] {
        &["call"]
    }

    fn kind(&self, _: &Call) -> usize {
        0
    }

    fn priority(&self, job: &Call) -> Priority {
        job.priority
    }

    fn execute(&self, job: &mut Call, _worker: usize) -> Outcome {
        let run = std::mem::replace(
            &mut job.run,
            Box::new(|| Outcome::failed("a call ran twice".to_owned())),
        );
        run()
    }
}

impl Scheduler<Calls> {
    /// Submits `f` to run at `priority`; the ticket gives its result. If every worker's inbox for
    /// that priority is full, the call and its ticket come back in the error: submit the call
    /// again later ([`submit`](Scheduler::submit)) and wait on the same ticket.
    pub fn call<R, F>(
        &self,
        priority: Priority,
        f: F,
    ) -> Result<Ticket<R>, Overloaded<(Call, Ticket<R>)>>
    where
        R: Send + 'static,
        F: FnOnce() -> R + Send + 'static,
    {
        let (call, ticket) = Call::new(priority, f);
        match self.submit(call) {
            Ok(()) => Ok(ticket),
            Err(Overloaded(call)) => Err(Overloaded((call, ticket))),
        }
    }
}
