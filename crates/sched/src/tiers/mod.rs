//! Tiers and weights (UFS in the scheduler): time-sensitive work preempts background work, which
//! only uses what would otherwise idle; within a tier, groups share the workers in proportion to
//! their weights.
//!
//! The decisions are pure functions and bookkeeping here — [`shares`] (weighted virtual runtime
//! within a tier), [`queues`] (work of one level by group, taken in the order the shares give)
//! and [`placement`] (which worker new work goes to) — so that they are tested
//! without threads or clocks; the workers and the scheduler act on them. Must never read a clock
//! or touch a worker.

pub mod placement;
pub mod queues;
pub mod shares;

pub use placement::{Placement, WorkerView, place};
pub use queues::LevelQueues;
pub use shares::Shares;
