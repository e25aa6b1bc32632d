//! Transaction scheduling for Overtake.
//!
//! Policy lives here: which transaction runs next on a worker, and when a running one is paused for
//! a more urgent one. Work carries a [`Priority`] (from `overtake-priority`, which the engine's
//! transactions carry too); this crate builds on the runtime's mechanisms (regions, contexts,
//! preemption delivery), which know nothing about policy, and not on the engine.
//!
//! - [`call`]: application code as jobs: a closure with a priority and a ticket for its result
//!   (which is also a `Future`). Most applications need only this and [`Scheduler`].
//! - [`Scheduler`]: the running service: workers and the handle any thread submits jobs to
//!   (bounded inboxes, "overloaded" or a bounded wait instead of unbounded queues, a live
//!   statistics snapshot, shutdown that drains).
//! - [`policy`]: `Wait`, `Cooperative`, `Preempt` and `Quantum`, and the service settings
//!   ([`SchedConfig`]).
//! - [`job`]: what is scheduled, for clients with their own job types (an [`Executor`] runs
//!   jobs; an [`Outcome`] says how each ended).
//! - [`timer`]: signals for preemption requests not taken up in time, and quantum expiries; the
//!   scheduler steps it on its own thread unless a client (a load generator) steps it.
//! - [`trace`]: where the slowest urgent jobs' time went (a diagnostic mode).
//! - [`reactor`]: I/O readiness a worker polls between tasks and sleeps in (the server's
//!   sockets), so that a session is served by the worker that runs its statements.
//! - [`stats`]: per-transaction timestamps turned into latency percentiles per class and per kind.
//!
//! Inside (not API): `inbox` (a worker's bounded queues of new jobs, one per level), `worker` (a
//! pinned thread whose loop always runs the most urgent ready task, preempting nestedly across
//! levels and resuming paused and woken tasks), `task` (its pooled contexts and ready queues),
//! `backstop` (the timer's part that signals), `starvation` (PreemptDB's level
//! `L = T_h / (T_1 - T_0)` per conflict period) and `watchdog` (reports a worker blocked in the
//! kernel while it runs a task).

#![forbid(unsafe_code)]

mod backstop;
pub mod call;
mod error;
mod inbox;
pub mod job;
pub mod os_threads;
mod pending;
pub mod policy;
pub mod reactor;
mod scheduler;
mod starvation;
pub mod stats;
mod task;
pub mod tiers;
pub mod timer;
pub mod trace;
mod watchdog;
mod worker;

pub use call::{Call, CallError, CallExecutor, Promise, Ticket};
pub use error::{ConfigError, SchedError};
pub use job::{Acknowledgement, Executor, IdleWork, JobError, LockOutcome, Outcome, Status};
pub use os_threads::{OsPlacementError, OsScheduling};
pub use overtake_priority::{Group, Priority, Tier, Weight};
pub use overtake_runtime::preempt::{Delivery, PreemptStats};
pub use policy::{Policy, SchedConfig};
pub use reactor::Reactor;
pub use stats::{
    Breakdown, ClassStats, GroupStats, JobRecord, JobTiming, LatencyHistogram, LatencySummary,
    RunStats,
};

pub use scheduler::{Overloaded, Scheduler, SchedulerReport, Shutdown, StartOptions};
pub use timer::{PreemptTimer, TimerStats};
pub use watchdog::BlockedWorker;
