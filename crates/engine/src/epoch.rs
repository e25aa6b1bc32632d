//! Epoch protection for lock-free reads, entered and left inside non-preemptible regions.
//!
//! Two epoch-based reclamation schemes protect what readers traverse without locks: `sdd` for record
//! version chains, `crossbeam-epoch` for the index skip lists. Memory unlinked by a writer is freed
//! only after every thread that might still see it has left its epoch. Both keep per-thread state,
//! so entering and leaving must never be torn by a preemption; the code that runs while the epoch is
//! held (reading a row, the caller's closures) may be preempted, because both count nested guards
//! per thread and another context's guards only nest inside ours.
//!
//! Must never be held across a transaction boundary or a voluntary context switch.

use overtake_runtime::NoPreemptGuard;

/// An entered epoch (both schemes). Dropping it leaves them (inside a region).
pub(crate) struct EpochGuard {
    guards: Option<(sdd::Guard, crossbeam_epoch::Guard)>,
}

impl EpochGuard {
    /// Enters an epoch.
    #[inline]
    pub(crate) fn enter() -> Self {
        let _region = NoPreemptGuard::new();
        EpochGuard {
            guards: Some((sdd::Guard::new(), crossbeam_epoch::pin())),
        }
    }

    /// The guard for loads from record version chains.
    #[inline]
    pub(crate) fn guard(&self) -> &sdd::Guard {
        match &self.guards {
            Some((versions, _)) => versions,
            None => unreachable!("the guards are only taken in drop"),
        }
    }

    /// The guard for index operations.
    #[inline]
    pub(crate) fn index(&self) -> &crossbeam_epoch::Guard {
        match &self.guards {
            Some((_, index)) => index,
            None => unreachable!("the guards are only taken in drop"),
        }
    }
}

impl Drop for EpochGuard {
    #[inline]
    fn drop(&mut self) {
        let _region = NoPreemptGuard::new();
        drop(self.guards.take());
    }
}
