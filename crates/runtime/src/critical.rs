//! A mutex for application code that runs in preemptible tasks: its critical section is a
//! non-preemptible region.
//!
//! Code that a scheduler runs as a task may be paused at any instruction. If it is paused while
//! holding an ordinary mutex (`std::sync::Mutex`, `parking_lot`), a more urgent task of the same
//! worker that takes the same mutex blocks the worker's thread in the kernel, waiting for a
//! holder that can only run again on that very thread: the worker hangs. [`CriticalMutex`] opens a
//! region when it is locked and closes it when the guard is dropped, so its holder is never
//! paused: a preemption that arrives meanwhile is deferred to the end of the critical section, and
//! whoever waits for the mutex waits for a thread that is running.
//!
//! The price is the deferral: keep critical sections short (a preemption waits for them). Inside
//! one, the task cannot wait for anything that parks (a ticket, a lock wait of the engine): parking
//! inside a region panics rather than hang.
//!
//! Must never: let its holder be paused, or unlock after the region has ended.

use std::ops::{Deref, DerefMut};
use std::sync::{Mutex, MutexGuard, PoisonError, TryLockError};

use crate::region::NoPreemptGuard;

/// A mutual-exclusion lock whose holder is never preempted (see the module documentation).
///
/// A panic inside a critical section does not poison it: the next holder takes it over, as the
/// engine's own region locks do. Protect data whose invariants a panic could break some other way.
#[derive(Debug, Default)]
pub struct CriticalMutex<T> {
    inner: Mutex<T>,
}

/// Access to the data of a locked [`CriticalMutex`]; the critical section ends (the mutex is
/// unlocked, then the region left) when it is dropped.
#[must_use = "the critical section ends as soon as the guard is dropped"]
pub struct CriticalGuard<'a, T> {
    // Declared first, dropped first: the mutex is unlocked before the region ends, so the holder
    // cannot be paused with it locked.
    guard: MutexGuard<'a, T>,
    _region: NoPreemptGuard,
}

impl<T> CriticalMutex<T> {
    /// A new, unlocked mutex.
    pub const fn new(value: T) -> Self {
        CriticalMutex {
            inner: Mutex::new(value),
        }
    }

    /// Enters a non-preemptible region and locks, waiting for the holder (which is running: it
    /// is inside a region of its own).
    pub fn lock(&self) -> CriticalGuard<'_, T> {
        let region = NoPreemptGuard::new();
        let guard = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        CriticalGuard {
            guard,
            _region: region,
        }
    }

    /// Locks if nobody holds the mutex (the region is entered only if it does).
    pub fn try_lock(&self) -> Option<CriticalGuard<'_, T>> {
        let region = NoPreemptGuard::new();
        let guard = match self.inner.try_lock() {
            Ok(guard) => guard,
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
            Err(TryLockError::WouldBlock) => return None,
        };
        Some(CriticalGuard {
            guard,
            _region: region,
        })
    }

    /// The data, through exclusive access (no locking needed).
    pub fn get_mut(&mut self) -> &mut T {
        self.inner.get_mut().unwrap_or_else(PoisonError::into_inner)
    }

    /// The data, consuming the mutex.
    pub fn into_inner(self) -> T {
        self.inner
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl<T> Deref for CriticalGuard<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.guard
    }
}

impl<T> DerefMut for CriticalGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.guard
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::region;

    #[test]
    fn a_critical_section_is_a_region_and_ends_with_its_guard() {
        let m = CriticalMutex::new(1);
        assert_eq!(region::depth(), 0);
        {
            let mut g = m.lock();
            assert_eq!(region::depth(), 1, "the holder cannot be paused");
            *g += 1;
            assert!(m.try_lock().is_none(), "held");
            assert_eq!(
                region::depth(),
                1,
                "a failed try_lock leaves no region behind"
            );
        }
        assert_eq!(region::depth(), 0);
        let g = m.try_lock().expect("free again");
        assert_eq!(*g, 2);
        drop(g);
        assert_eq!(m.into_inner(), 2);
    }
}
