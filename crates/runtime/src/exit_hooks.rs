//! Hooks that run on each worker thread just before it exits, so a layer above the scheduler
//! that keeps per-thread state (the engine's reclamation garbage) can hand it back without the
//! scheduler, which owns the threads, knowing about it. Must never run a hook inside a context:
//! the scheduler calls [`worker_exiting`] after the thread's last task.

use crate::region::NoPreemptGuard;
use crate::region_lock::RegionMutex;

/// Functions every worker thread calls just before it exits (see [`at_worker_exit`]).
static EXIT_HOOKS: RegionMutex<Vec<fn()>> = RegionMutex::new(Vec::new());

/// Registers `hook` to run on every worker thread just before it exits (once per hook, however
/// often it is registered). A layer above the scheduler that keeps per-thread state a worker must
/// hand back before its thread goes (the engine's reclamation garbage) registers here, so the
/// scheduler that owns the threads needs to know nothing about it.
pub fn at_worker_exit(hook: fn()) {
    let region = NoPreemptGuard::new();
    let mut hooks = EXIT_HOOKS.lock(&region);
    if !hooks.iter().any(|h| std::ptr::fn_addr_eq(*h, hook)) {
        hooks.push(hook);
    }
}

/// Runs the hooks registered with [`at_worker_exit`]; a scheduler calls it on each worker thread
/// after the thread's last task, outside any context.
pub fn worker_exiting() {
    let hooks = {
        let region = NoPreemptGuard::new();
        EXIT_HOOKS.lock(&region).clone()
    };
    for hook in hooks {
        hook();
    }
}

#[cfg(test)]
mod exit_hook_tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    static CALLS: AtomicUsize = AtomicUsize::new(0);

    fn count() {
        CALLS.fetch_add(1, Ordering::Relaxed);
    }

    #[test]
    fn a_hook_registered_twice_runs_once_per_exit() {
        super::at_worker_exit(count);
        super::at_worker_exit(count);
        let before = CALLS.load(Ordering::Relaxed);
        std::thread::spawn(super::worker_exiting).join().unwrap();
        assert_eq!(CALLS.load(Ordering::Relaxed) - before, 1);
    }
}
