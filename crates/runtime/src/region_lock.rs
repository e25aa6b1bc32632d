//! Lock-like primitives that can only be taken inside a non-preemptible region.
//!
//! The rule Overtake stands on is that a paused transaction holds nothing an urgent one needs. A
//! `Mutex` locked by a context that is then preempted would make the urgent context of the same
//! worker wait for it forever (the holder can only run again after the urgent work is done); a
//! `OnceLock` being initialised by a paused context does the same to anyone touching the cell.
//!
//! These wrappers make the rule a compile-time property: taking the lock (or initialising the cell)
//! requires a borrow of the [`NoPreemptGuard`] of an open region, and the lock's guard borrows it
//! for as long as it is held. The region cannot end while the lock is held, so the holder cannot be
//! preempted while holding it, and a waiter only ever waits for a thread that is running.
//!
//! They never switch contexts themselves. A holder must not switch voluntarily either; the runtime
//! defers every preemption request that arrives inside a region (polled or signalled) to the
//! region's end, so nothing on the engine's paths does.

use std::sync::{
    Mutex, MutexGuard, OnceLock, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard,
    TryLockError,
};

use crate::region::NoPreemptGuard;

/// A mutual-exclusion lock taken only inside a region (see the module documentation).
///
/// A poisoned lock is taken over: the data these locks protect (queues, free lists, buffers) stays
/// consistent across a panic of an operation that only pushes or pops.
#[derive(Debug, Default)]
pub struct RegionMutex<T> {
    inner: Mutex<T>,
}

impl<T> RegionMutex<T> {
    /// A new, unlocked mutex.
    pub const fn new(value: T) -> Self {
        RegionMutex {
            inner: Mutex::new(value),
        }
    }

    /// Locks, waiting for the holder, which is inside a region of its own and therefore running.
    pub fn lock<'a>(&'a self, _region: &'a NoPreemptGuard) -> MutexGuard<'a, T> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Locks if nobody holds the lock.
    pub fn try_lock<'a>(&'a self, _region: &'a NoPreemptGuard) -> Option<MutexGuard<'a, T>> {
        match self.inner.try_lock() {
            Ok(guard) => Some(guard),
            Err(TryLockError::Poisoned(p)) => Some(p.into_inner()),
            Err(TryLockError::WouldBlock) => None,
        }
    }

    /// The data, through exclusive access (no locking needed).
    pub fn get_mut(&mut self) -> &mut T {
        self.inner.get_mut().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A reader-writer lock taken only inside a region (see the module documentation).
#[derive(Debug, Default)]
pub struct RegionRwLock<T> {
    inner: RwLock<T>,
}

impl<T> RegionRwLock<T> {
    /// A new, unlocked lock.
    pub const fn new(value: T) -> Self {
        RegionRwLock {
            inner: RwLock::new(value),
        }
    }

    /// Shared access.
    pub fn read<'a>(&'a self, _region: &'a NoPreemptGuard) -> RwLockReadGuard<'a, T> {
        self.inner.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// Exclusive access.
    pub fn write<'a>(&'a self, _region: &'a NoPreemptGuard) -> RwLockWriteGuard<'a, T> {
        self.inner.write().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A cell initialised at most once, and only inside a region (see the module documentation).
/// Reading an initialised cell is one atomic load and needs no region.
#[derive(Debug, Default)]
pub struct RegionOnceLock<T> {
    inner: OnceLock<T>,
}

impl<T> RegionOnceLock<T> {
    /// An empty cell.
    pub const fn new() -> Self {
        RegionOnceLock {
            inner: OnceLock::new(),
        }
    }

    /// The value, if the cell has been initialised.
    #[inline]
    pub fn get(&self) -> Option<&T> {
        self.inner.get()
    }

    /// The value, initialising the cell with `init` first if it is empty. A thread that finds the
    /// cell being initialised waits for the initialiser, which is running inside its own region.
    pub fn get_or_init(&self, _region: &NoPreemptGuard, init: impl FnOnce() -> T) -> &T {
        self.inner.get_or_init(init)
    }

    /// Sets the value if the cell is empty; otherwise hands `value` back.
    pub fn set(&self, _region: &NoPreemptGuard, value: T) -> Result<(), T> {
        self.inner.set(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::region;

    #[test]
    fn locks_are_held_inside_the_region_that_took_them() {
        let m = RegionMutex::new(vec![1]);
        {
            let region = NoPreemptGuard::new();
            let mut guard = m.lock(&region);
            guard.push(2);
            assert!(!region::is_preemptible());
            assert!(m.try_lock(&region).is_none(), "held");
        }
        assert!(region::is_preemptible());
        let region = NoPreemptGuard::new();
        assert_eq!(*m.lock(&region), vec![1, 2]);

        let rw = RegionRwLock::new(5);
        {
            let a = rw.read(&region);
            let b = rw.read(&region);
            assert_eq!(*a + *b, 10);
        }
        *rw.write(&region) = 6;
        assert_eq!(*rw.read(&region), 6);

        let cell = RegionOnceLock::new();
        assert_eq!(cell.get(), None);
        assert_eq!(*cell.get_or_init(&region, || 7), 7);
        assert_eq!(cell.set(&region, 8), Err(8));
        assert_eq!(cell.get(), Some(&7));
    }

    #[test]
    fn a_poisoned_mutex_is_taken_over() {
        let m = std::sync::Arc::new(RegionMutex::new(0));
        let m2 = std::sync::Arc::clone(&m);
        let _ = std::thread::spawn(move || {
            let region = NoPreemptGuard::new();
            let _guard = m2.lock(&region);
            panic!("poison it");
        })
        .join();
        let region = NoPreemptGuard::new();
        *m.lock(&region) += 1;
        assert_eq!(*m.try_lock(&region).expect("free"), 1);
    }
}
