//! The engine crate's integration tests, one module per subject, in one binary: one link
//! instead of one per file, and the helpers in `common` compiled once.

// Every test runs on the engine allocator, as the binary does: scheduler workers need it.
#[global_allocator]
static ALLOC: overtake_runtime::EngineAllocator = overtake_runtime::engine_allocator();

mod api;
mod checkpoints;
mod common;
mod concurrency;
mod durability;
mod failpoints;
mod full_disk;
mod held_answers;
mod hermitage;
mod isolation;
mod model;
mod paused_writers;
mod pipelined_commit;
mod preemption_windows;
mod read_committed;
mod reclamation;
mod record_ids;
mod savepoints;
mod table_locks;
mod two_phase;
mod two_phase_locking;
mod update_range;
