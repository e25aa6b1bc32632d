//! Lock hints for an OS-level scheduler: while a transaction running on a plain OS thread (a
//! session thread) waits for a lock, a [`LockObserver`] is told which thread holds it, so that
//! the scheduler (`overtake-ufs`, through its hint map) can run a background holder as
//! time-sensitive until the waiter has the lock. Transactions that are tasks on workers share
//! their thread with others and get no hints: inheritance in `overtake-sched` serves them.
//!
//! Hints are advice: an observer that cannot take one loses the hint, never the lock request.
//! Must never leave a hint behind a wait that ended (granted or aborted).

use std::sync::Arc;

use overtake_runtime::park::Unparker;

use super::TxnId;
use super::table::Table;

/// What the lock manager tells an OS-level scheduler about lock waits between OS threads
/// (kernel thread ids). Called inside the lock manager's region: it must not block.
pub trait LockObserver: Send + Sync + std::fmt::Debug {
    /// Thread `waiter` waits for a lock thread `holder` holds.
    fn waiting(&self, waiter: u32, holder: u32);
    /// Thread `waiter` no longer waits.
    fn done(&self, waiter: u32);
}

/// The observer the lock manager tells of its waits.
#[derive(Clone, Debug)]
pub(crate) struct OsHints {
    observer: Arc<dyn LockObserver>,
}

impl OsHints {
    pub(crate) fn new(observer: Arc<dyn LockObserver>) -> Self {
        OsHints { observer }
    }

    /// `waiter` waits for a lock the transactions `blockers` hold: names the first of them that
    /// runs on a thread of its own.
    pub(super) fn waiting(&self, table: &Table, waiter: &Unparker, blockers: &[TxnId]) {
        let Some(tid) = waiter.os_thread_id() else {
            return;
        };
        let holder = blockers
            .iter()
            .filter_map(|b| table.txns.get(b))
            .find_map(|h| h.unparker.os_thread_id());
        if let Some(holder) = holder {
            self.observer.waiting(tid as u32, holder as u32);
        }
    }

    /// `waiter`'s wait ended.
    pub(super) fn done(&self, waiter: &Unparker) {
        if let Some(tid) = waiter.os_thread_id() {
            self.observer.done(tid as u32);
        }
    }
}
