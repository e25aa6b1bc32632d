//! Epoch protection for lock-free reads of version chains, entered and left inside
//! non-preemptible regions.
//!
//! Record versions are freed by epoch-based reclamation (`sdd`): a version unlinked by a writer or
//! the collector is freed only after every thread that might still see it has left its epoch. `sdd`
//! keeps per-thread state, so entering and leaving an epoch must never be torn by a preemption; the
//! code that runs while the epoch is held (reading a row, the caller's closures) may be preempted,
//! because `sdd` counts nested guards per thread and another context's guards only nest inside ours.
//!
//! Must never be held across a transaction boundary or a voluntary context switch.

use overtake_runtime::NoPreemptGuard;
use sdd::Guard;

/// An entered epoch. Dropping it leaves the epoch (inside a region).
pub(crate) struct EpochGuard {
    guard: Option<Guard>,
}

impl EpochGuard {
    /// Enters an epoch.
    #[inline]
    #[track_caller]
    pub(crate) fn enter() -> Self {
        let _region = NoPreemptGuard::new();
        EpochGuard {
            guard: Some(Guard::new()),
        }
    }

    /// Leaves the epoch, runs `f`, and enters it again. For a point where the caller may be
    /// paused (a record access under a preemption request): a task paused inside an epoch keeps
    /// the memory every thread retires from being freed for as long as it stays paused (measured:
    /// a long scan paused for seconds under overload made memory grow and freed it in one burst
    /// later). References loaded under the old guard must not be used after this.
    #[inline]
    pub(crate) fn released_for(&mut self, f: impl FnOnce()) {
        {
            let _region = NoPreemptGuard::new();
            drop(self.guard.take());
        }
        f();
        let _region = NoPreemptGuard::new();
        self.guard = Some(Guard::new());
    }

    /// The `sdd` guard, for loads from version chains.
    #[inline]
    pub(crate) fn guard(&self) -> &Guard {
        match &self.guard {
            Some(g) => g,
            None => unreachable!("the guard is only taken in drop"),
        }
    }
}

impl Drop for EpochGuard {
    #[inline]
    fn drop(&mut self) {
        let _region = NoPreemptGuard::new();
        drop(self.guard.take());
    }
}

/// Epoch advances after which what a thread retired before them is freed (`sdd` frees a retired
/// chunk three epochs after it was retired).
const FREEING_ADVANCES: usize = 3;

/// Attempts at advancing the epoch before giving up (another thread inside an epoch holds it).
const ADVANCE_ATTEMPTS: usize = 10_000;

/// Frees now the memory this thread retired (unlinked versions, index nodes) that epoch-based
/// reclamation still holds, as far as other threads let the epoch advance. Call it when a thread
/// that ran transactions is about to exit: `sdd` hands an exited thread's reclamation state,
/// garbage included, to the next thread that starts, and a worker of the next run would then
/// free the previous run's garbage inside one of its transactions (measured: a 40-55 ms stall in
/// the second run of every `compare`). Returns whether the epoch advanced enough to free it all.
pub fn release_thread_garbage() -> bool {
    let _region = NoPreemptGuard::new();
    let mut epoch = Guard::new().epoch();
    let mut advances = 0;
    for _ in 0..ADVANCE_ATTEMPTS {
        let guard = Guard::new();
        guard.accelerate();
        let now = guard.epoch();
        drop(guard);
        if now != epoch {
            epoch = now;
            advances += 1;
            if advances > FREEING_ADVANCES {
                return true;
            }
        }
        std::hint::spin_loop();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    struct Flag(Arc<AtomicBool>);

    impl Drop for Flag {
        fn drop(&mut self) {
            self.0.store(true, Ordering::Release);
        }
    }

    #[test]
    fn what_a_thread_retired_is_freed_before_it_exits() {
        let freed = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&freed);
        let seen = Arc::clone(&freed);
        std::thread::spawn(move || {
            drop(sdd::Owned::new(Flag(flag))); // retired, not yet freed
            // Other tests' threads may hold the epoch for a moment: call again until it advances
            // (a generous bound only a broken release reaches).
            let give_up = std::time::Instant::now() + std::time::Duration::from_secs(60);
            while !seen.load(Ordering::Acquire) {
                assert!(std::time::Instant::now() < give_up, "never freed");
                release_thread_garbage();
            }
        })
        .join()
        .expect("thread");
        assert!(
            freed.load(Ordering::Acquire),
            "freed before the thread exited"
        );
    }
}
