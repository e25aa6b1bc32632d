//! The conditional-restart policy's clock: a thread that ends reprieves when they are due, so a
//! less urgent holder that keeps a lock past its reprieve loses it on time even if it makes no
//! call into the lock manager (a long computation) and nobody else does either (the urgent
//! waiter is parked).
//!
//! One thread per lock manager of the CR policy, started with the manager and parked between
//! reprieves: a thread that already exists is woken in tens of microseconds, while one started at
//! the first reprieve, on a busy machine, waited milliseconds for its first turn. It is an ordinary thread, never a worker, and takes the manager's latch only inside
//! a region, like any caller. It holds the table weakly: a dropped lock manager wakes it to end.
//!
//! Must never: end a reprieve early, or keep a dropped lock table alive.

use std::sync::{Arc, Weak};
use std::time::Instant;

use overtake_runtime::{NoPreemptGuard, RegionMutex};

use super::LockPolicy;
use super::table::Table;

/// Makes sure reprieves in `table` (locked by the caller) end on time: starts the timer thread
/// if none runs, or wakes it to look at a new, earlier deadline.
pub(super) fn arm(table: &mut Table, shared: &Arc<RegionMutex<Table>>, policy: LockPolicy) {
    if let Some(timer) = &table.reprieve_timer {
        timer.unpark();
        return;
    }
    let weak = Arc::downgrade(shared);
    let spawned = std::thread::Builder::new()
        .name("lock-reprieves".into())
        .spawn(move || run(&weak, policy));
    // Without a thread (the system refused one), reprieves still end at the first call into the
    // manager after they are due, as they did before the timer existed.
    if let Ok(handle) = spawned {
        table.reprieve_timer = Some(handle.thread().clone());
    }
}

fn run(table: &Weak<RegionMutex<Table>>, policy: LockPolicy) {
    loop {
        let Some(shared) = table.upgrade() else {
            return;
        };
        let next = {
            let region = NoPreemptGuard::new();
            shared.lock(&region).expire_reprieves(policy)
        };
        drop(shared);
        // Woken early when a reprieve is added (it may end sooner) or the manager is dropped;
        // spurious wakes only loop.
        match next {
            Some(next) => std::thread::park_timeout(next.saturating_duration_since(Instant::now())),
            None => std::thread::park(),
        }
    }
}
