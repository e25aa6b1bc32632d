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
    pub(crate) fn enter() -> Self {
        let _region = NoPreemptGuard::new();
        EpochGuard {
            guard: Some(Guard::new()),
        }
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
