//! The sched crate's integration tests, one module per subject, in one binary: one link
//! instead of one per file, and the helpers in `common` compiled once.

// Every test runs on the engine allocator, as the binary does: scheduler workers need it.
#[global_allocator]
static ALLOC: overtake_runtime::EngineAllocator = overtake_runtime::engine_allocator();

mod application_code;
mod async_and_waiting;
mod common;
mod durable_commits;
mod reactors;
mod revocation;
mod scheduler;
