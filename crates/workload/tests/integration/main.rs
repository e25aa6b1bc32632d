//! The workload crate's integration tests, one module per subject, in one binary: one link
//! instead of one per file, and the helpers in `common` compiled once.

// Every test runs on the engine allocator, as the binary does: scheduler workers need it.
#[global_allocator]
static ALLOC: overtake_runtime::EngineAllocator = overtake_runtime::engine_allocator();

mod clients;
mod common;
mod locking;
mod policies;
mod preempted_runs;
mod q2;
mod tpcc;
