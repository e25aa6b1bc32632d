//! Workloads for Overtake: TPC-C with the CH-benCHmark's analytic tables and Query 2, the mixed
//! workload of PreemptDB's evaluation, and the drivers that run them on the scheduler.
//!
//! Everything here uses the engine's public API only, as an application would.

#![forbid(unsafe_code)]

pub mod ack;
pub mod batch;
pub mod bimodal;
pub mod ch;
pub mod compute;
pub mod drivers;
pub mod exec;
pub mod hints;
pub mod holder;
pub mod mixed;
pub mod rng;
pub mod tpcc;
