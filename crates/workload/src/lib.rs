//! Workloads for Overtake: TPC-C with the CH-benCHmark's analytic tables and Query 2, and the
//! drivers that run them.
//!
//! Everything here uses the engine's public API only, as an application would.

pub mod ch;
pub mod rng;
pub mod tpcc;
