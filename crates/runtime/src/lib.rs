//! The lowest layer of Overtake: what a worker thread needs so that a transaction running on it can
//! be paused anywhere and resumed later, without the database knowing how.
//!
//! This crate knows nothing about databases. It provides mechanisms only; when to preempt, and for
//! what, is decided by `overtake-sched`. It is the only crate in the workspace allowed to contain
//! `unsafe` code, and every `unsafe` block here names the invariant it relies on.
//!
//! - [`region`]: non-preemptible regions ([`NoPreemptGuard`]): a per-worker nesting counter plus a
//!   `pending` flag. Code that holds a latch, is inside a library with thread-local state, or is
//!   half-way through a commit must not be paused; it runs inside a region, and a preemption that
//!   arrives meanwhile is deferred until the outermost region ends.
//! - [`alloc`]: a global-allocator wrapper that runs every allocation inside a region, because the
//!   allocator keeps per-thread state and internal locks that a paused context must never hold;
//!   small blocks freed on a thread are reused there newest first (`recycled_blocks`), while
//!   they are still in its cache.
//! - [`region_lock`]: mutexes, reader-writer locks and once-cells that can only be taken inside a
//!   region (the compiler checks it), so a paused context never holds one.
//! - [`critical`]: a mutex for application code in tasks, whose critical section is a region.
//! - [`context`]: stackful contexts a worker switches between; a context suspends itself and says
//!   why (yielded, preempted, parked).
//! - [`park`]: a task waits for an event without blocking its worker's thread; a wake from any
//!   thread hands it back to its scheduler.
//! - [`preempt`]: delivering a preemption request to a worker: a flag polled at every record
//!   access, and a signal whose handler injects a call into the running context; and, for tests,
//!   preemptions injected deterministically at chosen points ([`preempt::inject`]).
//! - [`stack`]: how much stack is left where code runs (a context's or the thread's), so deep
//!   recursion can refuse input instead of overflowing.
//! - [`cpu`]: what the processor offers (extended-state size, user interrupts).
//! - [`simd`]: running a numeric kernel with the widest vector instructions available, chosen at
//!   run time (AVX-512, AVX2 with FMA, or baseline SSE2).
//! - [`exit_hooks`]: hooks that run on each worker thread just before it exits.
//! - [`os`]: the operating system's particulars: a thread's cores, niceness, scheduling class
//!   and CPU usage ([`os::thread`]); CPU cgroups for session threads, which OS-level scheduler is
//!   loaded and the lock hints `overtake-ufs` reads ([`os::cgroup`], [`os::sched_ext`],
//!   [`os::bpf_map`]); the machine's run queue ([`os::load`]); process-wide memory settings
//!   that decide tail latency ([`os::memory`]).

pub mod alloc;
pub mod context;
pub mod cpu;
pub mod critical;
pub mod exit_hooks;
mod fp_control;
pub mod os;
pub mod padded;
pub mod park;
pub mod preempt;
pub mod prefetch;
mod recycled_blocks;
pub mod region;
pub mod region_lock;
mod running;
pub mod simd;
pub mod stack;

pub use alloc::{EngineAllocator, Mimalloc, RegionAlloc, engine_allocator};
pub use context::{Context, Resumed, Suspender, Suspension};
pub use critical::{CriticalGuard, CriticalMutex};
pub use padded::CachePadded;
pub use region::NoPreemptGuard;
pub use region_lock::{RegionMutex, RegionOnceLock, RegionRwLock};
