//! Transaction scheduling for Overtake.
//!
//! Policy lives here: which transaction runs next on a worker, and when a running one is paused for
//! a more urgent one. This crate builds on the engine (transactions carry a
//! [`Priority`](overtake_engine::Priority)) and on the runtime's mechanisms (regions, contexts,
//! preemption delivery); neither of those knows anything about policy.
//!
//! What exists so far is the measurement side every policy is judged by: [`stats`] turns
//! per-transaction timings into latency percentiles per class and per transaction type.

pub mod stats;

pub use stats::{LatencyHistogram, LatencySummary};
