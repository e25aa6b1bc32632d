//! The operating system's particulars, kept apart from the mechanisms of this crate (contexts,
//! preemption, regions, park): what a thread is given by the kernel (cores, niceness, scheduling
//! class, timer slack, CPU usage), CPU cgroups, which OS-level scheduler is loaded, the BPF map of
//! lock hints `overtake-ufs` reads, the machine's run queue, and process-wide memory settings.
//!
//! A module tree of `runtime` rather than a crate of its own because its system calls are
//! `unsafe` and the workspace keeps `unsafe` in this crate. It offers what the kernel can do and
//! reports what it refused; it must never decide when to use it (that is `sched`'s policy), and it
//! must never know about transactions.

pub mod bpf_map;
pub mod cgroup;
pub mod load;
pub mod memory;
pub mod sched_ext;
pub mod thread;
