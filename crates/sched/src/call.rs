//! Application code as jobs: a closure with a priority ([`Call`]), run by a
//! [`Scheduler<CallExecutor>`](crate::Scheduler), and a [`Ticket`] to wait for its result.
//!
//! ```
//! use overtake_sched::Priority;
//! use overtake_sched::{CallExecutor, Scheduler, SchedConfig, Shutdown};
//! use std::sync::Arc;
//!
//! // Signal preemption needs every allocation inside a non-preemptible region.
//! #[global_allocator]
//! static ALLOC: overtake_runtime::EngineAllocator = overtake_runtime::engine_allocator();
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let config = SchedConfig::default().pin(false);
//! let scheduler = Scheduler::start(&config, Arc::new(CallExecutor))?;
//! let ticket = scheduler.call(Priority::HIGH, || 6 * 7)?;
//! assert_eq!(ticket.wait()?, 42);
//! scheduler.shutdown(Shutdown::Drain)?;
//! # Ok(())
//! # }
//! ```
//!
//! In async code a ticket is a future: awaiting it leaves the async runtime's thread free.
//!
//! ```
//! # use overtake_sched::Priority;
//! # use overtake_sched::{CallExecutor, Scheduler, SchedConfig, Shutdown};
//! # use std::sync::Arc;
//! # #[global_allocator]
//! # static ALLOC: overtake_runtime::EngineAllocator = overtake_runtime::engine_allocator();
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let config = SchedConfig::default().pin(false);
//! let scheduler = Arc::new(Scheduler::start(&config, Arc::new(CallExecutor))?);
//! let runtime = tokio::runtime::Runtime::new()?;
//! let s = Arc::clone(&scheduler);
//! // A request handler: an urgent lookup and a background report, both awaited.
//! let handler = async move {
//!     let urgent = s.call(Priority::HIGH, || 6 * 7)?;
//!     let report = s.call(Priority::LOW, || (1..=1_000u64).sum::<u64>())?;
//!     Ok::<_, Box<dyn std::error::Error>>((urgent.await?, report.await?))
//! };
//! assert_eq!(runtime.block_on(handler)?, (42, 500_500));
//! Arc::into_inner(scheduler).expect("last handle").shutdown(Shutdown::Drain)?;
//! # Ok(())
//! # }
//! ```
//!
//! Waiting on a ticket blocks an application thread; inside a task (a job that waits for another
//! job) it parks the task instead, so its worker keeps running other work. A call that is refused
//! ([`Overloaded`] gives the call back, to resubmit), dropped at shutdown, or panics, resolves its
//! ticket with a [`CallError`]: a panic in application code never takes a worker down.
//!
//! # What code in a call may do
//!
//! A call runs as a task that a more urgent call may pause at any instruction and resume later on
//! the same thread. So code in a call must not hold, across a point where it could be paused,
//! anything a more urgent call may need:
//!
//! - **Locks shared between calls**: use [`CriticalMutex`](overtake_runtime::CriticalMutex). Its
//!   critical section cannot be paused (a preemption waits for its end), so whoever waits for it
//!   waits for a running thread. A `std::sync::Mutex` (or `parking_lot`, or any lock that blocks
//!   the thread) held by a paused call hangs the worker as soon as a more urgent call on it takes
//!   the same lock: that call blocks the thread in the kernel, waiting for a holder that can only
//!   run on that very thread. Keep critical sections short.
//! - **A call that must not be paused at all** (it holds an external resource, or calls a library
//!   that keeps thread-local state across calls): submit it with
//!   [`Scheduler::call_non_preemptible`]; urgent work then waits for its end.
//! - **Waiting**: wait for another call's [`Ticket`] (it parks the task, the worker runs other
//!   work), never by blocking the thread (`sleep`, a blocking channel receive, a blocking socket
//!   read): a blocked thread runs nothing else, paused tasks included.
//! - Nothing may park inside a `CriticalMutex` section or a non-preemptible call: that panics
//!   rather than hang.
//!
//! The unsafe path is loud, not silent: a worker whose thread stays blocked in the kernel while it
//! runs a call (longer than [`SchedConfig::blocked_report`](crate::SchedConfig::blocked_report),
//! one second by default) is reported on stderr and in
//! [`SchedulerReport::blocked`](crate::SchedulerReport::blocked), with the paused tasks and the
//! likely cause.
//!
//! ```
//! use overtake_sched::Priority;
//! use overtake_runtime::CriticalMutex;
//! use overtake_sched::{CallExecutor, Scheduler, SchedConfig, Shutdown};
//! use std::sync::Arc;
//!
//! #[global_allocator]
//! static ALLOC: overtake_runtime::EngineAllocator = overtake_runtime::engine_allocator();
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let config = SchedConfig::default().pin(false);
//! let scheduler = Scheduler::start(&config, Arc::new(CallExecutor))?;
//! let totals = Arc::new(CriticalMutex::new(0u64));
//! let t = Arc::clone(&totals);
//! let background = scheduler.call(Priority::LOW, move || {
//!     for n in 0..1_000 {
//!         *t.lock() += n; // a preemption waits for the end of this statement's section
//!     }
//! })?;
//! let t = Arc::clone(&totals);
//! let urgent = scheduler.call(Priority::HIGH, move || *t.lock())?;
//! let seen = urgent.wait()?;
//! background.wait()?;
//! assert!(seen <= 499_500);
//! assert_eq!(*totals.lock(), 499_500);
//! scheduler.shutdown(Shutdown::Drain)?;
//! # Ok(())
//! # }
//! ```

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use overtake_priority::{Group, Priority};
use overtake_runtime::park::{self, Unparker};
use overtake_runtime::{NoPreemptGuard, RegionMutex};

use crate::job::{Executor, JobError, Outcome};
use crate::scheduler::{Overloaded, Scheduler};

/// Why a call produced no result.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
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
    Pending(Option<Waiter>),
    Done(Result<R, CallError>),
    Taken,
}

/// Who waits for a pending call.
enum Waiter {
    /// A thread or task blocked in [`Ticket::wait`].
    Parked(Unparker),
    /// An async task polling the ticket as a future.
    Polled(Waker),
}

struct Completion<R> {
    slot: RegionMutex<Slot<R>>,
}

impl<R> Completion<R> {
    fn complete(&self, result: Result<R, CallError>) {
        let region = NoPreemptGuard::new();
        let previous = std::mem::replace(&mut *self.slot.lock(&region), Slot::Done(result));
        drop(region);
        match previous {
            Slot::Pending(Some(Waiter::Parked(waiter))) => waiter.unpark(),
            Slot::Pending(Some(Waiter::Polled(waker))) => {
                // An async runtime's wake takes its own locks (a std mutex on its run queue):
                // never let a preemption pause this task between taking and releasing them.
                let _region = NoPreemptGuard::new();
                waker.wake();
            }
            _ => {}
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

/// The completing side of a [`Ticket`] that no call completes: whoever holds it delivers the
/// value. A task that waits for something other than a call (a client's next statement, for a
/// transaction that spans several) waits on the ticket and parks, holding its worker for no one;
/// the promise's holder, on any thread, wakes it. Dropping the promise unfulfilled resolves the
/// ticket with [`CallError::NotRun`].
pub struct Promise<R> {
    completer: Completer<R>,
}

impl<R> Promise<R> {
    /// A promise and the ticket it completes.
    pub fn new() -> (Promise<R>, Ticket<R>) {
        let completion = Arc::new(Completion {
            slot: RegionMutex::new(Slot::Pending(None)),
        });
        let promise = Promise {
            completer: Completer {
                completion: Some(Arc::clone(&completion)),
            },
        };
        (promise, Ticket { completion })
    }

    /// Delivers `value` to the ticket (waking its waiter).
    pub fn fulfil(self, value: R) {
        self.completer.complete(Ok(value));
    }
}

impl<R> std::fmt::Debug for Promise<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Promise").finish_non_exhaustive()
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
                    Slot::Pending(_) => *slot = Slot::Pending(Some(Waiter::Parked(waiter))),
                    Slot::Taken => panic!("a ticket's result was already taken"),
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

/// A ticket is also a future, for async applications: awaiting it does not block the thread.
/// Polling it after it has returned its result panics.
impl<R> Future for Ticket<R> {
    type Output = Result<R, CallError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let region = NoPreemptGuard::new();
        let mut slot = self.completion.slot.lock(&region);
        match std::mem::replace(&mut *slot, Slot::Taken) {
            Slot::Done(result) => Poll::Ready(result),
            Slot::Pending(_) => {
                *slot = Slot::Pending(Some(Waiter::Polled(cx.waker().clone())));
                Poll::Pending
            }
            Slot::Taken => panic!("a ticket polled after it returned its result"),
        }
    }
}

impl<R> std::fmt::Debug for Ticket<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ticket").finish_non_exhaustive()
    }
}

/// What a call that does not say how it ended is booked as: committed.
fn committed<R>(result: R) -> (R, Outcome) {
    (result, Outcome::committed())
}

/// A closure to run as a transaction of some priority.
pub struct Call {
    priority: Priority,
    /// Its group, if it was given one ([`in_group`](Call::in_group)).
    group: Option<Group>,
    /// Runs the closure, completes the ticket, and says how it went for the statistics.
    run: Box<dyn FnOnce() -> Outcome + Send>,
    /// It runs between tasks ([`Call::between_tasks`]).
    between_tasks: bool,
}

impl Call {
    /// A call of `f` at `priority`, and the ticket for its result. The scheduler books it as
    /// committed (or failed, if it panics).
    pub fn new<R, F>(priority: Priority, f: F) -> (Call, Ticket<R>)
    where
        R: Send + 'static,
        F: FnOnce() -> R + Send + 'static,
    {
        Self::build(priority, f, committed, false)
    }

    /// A call of `f` at `priority` that says how it ended besides its result: the scheduler
    /// books the outcome (its status, lock waits, log and client waits), the ticket gives the
    /// result. For a server's statements, whose results are rows but whose waits are worth
    /// knowing per class. A panic is booked as a failure, as for [`Call::new`].
    pub fn reporting<R, F>(priority: Priority, f: F) -> (Call, Ticket<R>)
    where
        R: Send + 'static,
        F: FnOnce() -> (R, Outcome) + Send + 'static,
    {
        Self::build(priority, f, |(result, outcome)| (result, outcome), false)
    }

    /// A call of `f` at `priority` that is never paused: it runs to its end inside a
    /// non-preemptible region (a preemption request waits for it). For code that must not be
    /// paused at all; it must not park (wait for a ticket) either.
    pub fn non_preemptible<R, F>(priority: Priority, f: F) -> (Call, Ticket<R>)
    where
        R: Send + 'static,
        F: FnOnce() -> R + Send + 'static,
    {
        Self::build(priority, f, committed, true)
    }

    /// A call of `f` at `priority` that runs on its worker's own stack, between tasks, to its
    /// end (`Executor::runs_between_tasks`): never paused, and it must not park either (a wait
    /// in it panics). For short work that every task context being held must not stop (a
    /// server's protocol step, which runs a session's statements as calls of their own).
    pub fn between_tasks<R, F>(priority: Priority, f: F) -> (Call, Ticket<R>)
    where
        R: Send + 'static,
        F: FnOnce() -> R + Send + 'static,
    {
        let (mut call, ticket) = Self::build(priority, f, committed, true);
        call.between_tasks = true;
        (call, ticket)
    }

    /// A call of `f` at `priority` that says itself how it ended (committed, rolled back, failed,
    /// after how many retries): the scheduler books that, and the ticket gives it too. An
    /// acknowledgement in the outcome is the ticket holder's to await; the scheduler books the
    /// call when its closure returns.
    pub fn with_outcome<F>(priority: Priority, f: F) -> (Call, Ticket<Outcome>)
    where
        F: FnOnce() -> Outcome + Send + 'static,
    {
        Self::build(
            priority,
            f,
            |outcome| {
                let booked = outcome.without_acknowledgement();
                (outcome, booked)
            },
            false,
        )
    }

    /// `booked` splits what `f` returns into the ticket's result and the outcome the scheduler
    /// books; `pinned`: the whole call, its result delivered included, runs in one region.
    fn build<T, R, F>(
        priority: Priority,
        f: F,
        booked: fn(T) -> (R, Outcome),
        pinned: bool,
    ) -> (Call, Ticket<R>)
    where
        T: 'static,
        R: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        let completion = Arc::new(Completion {
            slot: RegionMutex::new(Slot::Pending(None)),
        });
        let completer = Completer {
            completion: Some(Arc::clone(&completion)),
        };
        let run = Box::new(move || {
            let _region = pinned.then(NoPreemptGuard::new);
            Self::finish(catch_unwind(AssertUnwindSafe(f)), completer, booked)
        });
        (
            Call {
                priority,
                group: None,
                run,
                between_tasks: false,
            },
            Ticket { completion },
        )
    }

    /// Delivers the result of a call's closure and says how the call ended.
    fn finish<T, R>(
        ran: std::thread::Result<T>,
        completer: Completer<R>,
        booked: fn(T) -> (R, Outcome),
    ) -> Outcome {
        match ran {
            Ok(returned) => {
                let (result, outcome) = booked(returned);
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
                Outcome::failed(JobError::Panicked(message))
            }
        }
    }

    /// Its priority.
    pub fn priority(&self) -> Priority {
        self.priority
    }

    /// This call in `group`: its priority moves into the group's tier if it lies outside it
    /// (a background call runs at the lowest level; a time-sensitive one above it).
    pub fn in_group(mut self, group: Group) -> Call {
        self.priority = group.level_for(self.priority);
        self.group = Some(group);
        self
    }

    /// Its group: the one it was put in, else its level's tier at the default weight.
    pub fn group(&self) -> Group {
        self.group.unwrap_or_else(|| Group::of(self.priority))
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
pub struct CallExecutor;

impl Executor for CallExecutor {
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

    fn group(&self, job: &Call) -> Group {
        job.group()
    }

    fn runs_between_tasks(&self, job: &Call) -> bool {
        job.between_tasks
    }

    fn execute(&self, job: &mut Call, _worker: usize) -> Outcome {
        let run = std::mem::replace(
            &mut job.run,
            Box::new(|| Outcome::failed(JobError::Panicked("a call ran twice".to_owned()))),
        );
        run()
    }
}

impl Scheduler<CallExecutor> {
    /// Submits `f` to run at `priority`; the ticket gives its result. If every worker's inbox for
    /// that priority is full, the call and its ticket come back in the error: submit the call
    /// again later ([`submit`](Scheduler::submit)) and wait on the same ticket.
    ///
    /// `f` may be paused at any instruction by more urgent work and resumed later on the same
    /// thread: it must not hold a lock that blocks the thread (`std::sync::Mutex`) across code
    /// that may be paused. See [the module documentation](crate::call) for what code in a call
    /// may do, and [`CriticalMutex`](overtake_runtime::CriticalMutex) for locks it can share.
    pub fn call<R, F>(
        &self,
        priority: Priority,
        f: F,
    ) -> Result<Ticket<R>, Overloaded<(Call, Ticket<R>)>>
    where
        R: Send + 'static,
        F: FnOnce() -> R + Send + 'static,
    {
        self.submit_call(Call::new(priority, f), None)
    }

    /// Like [`call`](Self::call), but `f` is never paused: more urgent work on its worker waits
    /// for its end ([`Call::non_preemptible`]).
    pub fn call_non_preemptible<R, F>(
        &self,
        priority: Priority,
        f: F,
    ) -> Result<Ticket<R>, Overloaded<(Call, Ticket<R>)>>
    where
        R: Send + 'static,
        F: FnOnce() -> R + Send + 'static,
    {
        self.submit_call(Call::non_preemptible(priority, f), None)
    }

    /// Like [`call`](Self::call), but waits up to `timeout` for room in an inbox
    /// ([`submit_waiting`](Scheduler::submit_waiting)) before giving the call back.
    pub fn call_waiting<R, F>(
        &self,
        priority: Priority,
        f: F,
        timeout: Duration,
    ) -> Result<Ticket<R>, Overloaded<(Call, Ticket<R>)>>
    where
        R: Send + 'static,
        F: FnOnce() -> R + Send + 'static,
    {
        self.submit_call(Call::new(priority, f), Some(timeout))
    }

    /// Submits a call made with [`Call::new`] (and perhaps [`Call::in_group`]) at once, or
    /// waiting up to `timeout` for room in an inbox; a refused call comes back with its ticket.
    pub fn submit_call<R>(
        &self,
        (call, ticket): (Call, Ticket<R>),
        timeout: Option<Duration>,
    ) -> Result<Ticket<R>, Overloaded<(Call, Ticket<R>)>> {
        let submitted = match timeout {
            None => self.submit(call),
            Some(timeout) => self.submit_waiting(call, timeout),
        };
        match submitted {
            Ok(()) => Ok(ticket),
            Err(refused) => Err(Overloaded::new((refused.into_inner(), ticket))),
        }
    }
}
