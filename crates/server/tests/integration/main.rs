//! The server crate's integration tests, one module per subject, in one binary: one link
//! instead of one per file, and the helpers in `common` compiled once.

// Every test runs on the engine allocator, as the binary does: scheduler workers need it.
#[global_allocator]
static ALLOC: overtake_runtime::EngineAllocator = overtake_runtime::engine_allocator();

mod binary_values;
mod class_times;
mod common;
mod copy;
mod differential;
mod foreign_keys;
mod kept;
mod locks;
mod portals;
mod privileges;
mod protocol_fuzz;
mod session_threads;
mod sessions;
mod slt_suite;
mod statistics;
mod streaming;
