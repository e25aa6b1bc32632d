//! Lock hints for an OS-level scheduler (`overtake-ufs`): while a transaction running on a plain OS
//! thread (a session thread) waits for a lock, the scheduler's hint map says which thread holds
//! it, so that a background holder runs as time-sensitive until the waiter has the lock and
//! nothing else on the CPU can keep it from releasing the lock. Transactions that are tasks on
//! workers share their thread with others and get no hints: inheritance in `overtake-sched`
//! serves them.
//!
//! Hints are advice: a map that is full or gone loses the hint, never the lock request. Must
//! never leave a hint behind a wait that ended (granted or aborted).

use std::sync::Arc;

use overtake_runtime::bpf_map::HintMap;
use overtake_runtime::park::Unparker;

use super::TxnId;
use super::table::Table;

/// The map the lock manager writes hints to.
#[derive(Clone, Debug)]
pub(crate) struct OsHints {
    map: Arc<HintMap>,
}

impl OsHints {
    pub(crate) fn new(map: Arc<HintMap>) -> Self {
        OsHints { map }
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
            // A lost hint only costs the boost (see the module documentation).
            let _ = self.map.set(tid as u32, holder as u32);
        }
    }

    /// `waiter`'s wait ended.
    pub(super) fn done(&self, waiter: &Unparker) {
        if let Some(tid) = waiter.os_thread_id() {
            let _ = self.map.clear(tid as u32);
        }
    }
}
