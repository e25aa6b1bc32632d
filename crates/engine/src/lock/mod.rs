//! Lock scheduling for the two-phase-locking mode: the queue of one lock, the policies that order
//! it and decide what a waiting request does to the holders, and deadlock detection.
//!
//! Everything in this file, `policy` and `deadlock` is a decision on state the caller passes in:
//! who gets the lock, who waits, who is aborted, whose priority is raised. `manager` acts on the
//! decisions (it parks a waiter on `overtake_runtime::park`, wakes the granted ones, raises
//! holders through `Unparker::raise_to`, revokes victims' locks: `table`, `revocation`, and ends
//! reprieves on time: `reprieve`); the transaction layer
//! (`txn::locking`) says which locks each access takes.
//!
//! Must never: grant a lock in a mode incompatible with a holder's, or lose a waiter.

mod deadlock;
mod manager;
mod os_hints;
mod policy;
mod reprieve;
mod revocation;
mod table;
#[cfg(test)]
mod tests;

pub(crate) use deadlock::{choose_victim, find_cycle};
pub(crate) use manager::{LockAbort, LockManager, LockName};
pub use os_hints::LockObserver;
pub(crate) use os_hints::OsHints;
pub(crate) use policy::ConflictAction;
pub use policy::LockPolicy;
use policy::QueueOrder;
pub(crate) use revocation::Revocation;

/// Identifies a transaction to the lock manager.
pub(crate) type TxnId = u64;

/// A lock mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LockMode {
    /// Readers share it.
    Shared,
    /// One writer, no readers.
    Exclusive,
}

impl LockMode {
    pub(crate) fn compatible(self, other: LockMode) -> bool {
        self == LockMode::Shared && other == LockMode::Shared
    }

    /// True if holding `self` gives what `wanted` asks for.
    fn covers(self, wanted: LockMode) -> bool {
        self == LockMode::Exclusive || wanted == LockMode::Shared
    }
}

/// What the lock manager is told about a transaction when it decides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TxnInfo {
    pub(crate) id: TxnId,
    /// Effective priority level (higher is more urgent), inheritance included.
    pub(crate) level: u8,
    /// The level it asked for, inheritance left out.
    pub(crate) asked: u8,
    /// Begin order: a larger value is a younger transaction.
    pub(crate) began: u64,
    /// Waiting for a lock right now.
    pub(crate) waiting: bool,
    /// Paused by CPU preemption right now.
    pub(crate) paused: bool,
    /// How many transactions wait for locks it holds.
    pub(crate) blocking: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Holder {
    txn: TxnId,
    mode: LockMode,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Waiter {
    txn: TxnId,
    mode: LockMode,
    /// Arrival order at this lock.
    seq: u64,
    /// Already holds the lock shared and asks for it exclusive.
    upgrade: bool,
}

/// Where a waiter stands in the policy's grant order (smaller first). Upgrades go first: their
/// holder blocks everyone behind them.
fn grant_key(policy: LockPolicy, w: &Waiter, info: &dyn Fn(TxnId) -> TxnInfo) -> (bool, u64, u64) {
    let key = match policy.order() {
        QueueOrder::Fifo => 0,
        QueueOrder::Priority => u64::MAX - u64::from(info(w.txn).level),
        QueueOrder::Contention => u64::MAX - info(w.txn).blocking as u64,
    };
    (!w.upgrade, key, w.seq)
}

/// The outcome of a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Request {
    /// Granted (or already held in a mode that covers it).
    Granted,
    /// Queued; the policy's action on the holders is to be carried out by the caller.
    Wait(ConflictAction),
    /// Not queued: the policy aborts the requester instead (WDL1).
    Abort,
}

/// The holders and waiters of one lock.
#[derive(Debug, Default)]
pub(crate) struct LockQueue {
    holders: Vec<Holder>,
    waiters: Vec<Waiter>,
    next_seq: u64,
}

impl LockQueue {
    /// `requester` asks for the lock in `mode` under `policy`; `info` describes any transaction
    /// the decision needs (holders, waiters).
    pub(crate) fn request(
        &mut self,
        requester: &TxnInfo,
        mode: LockMode,
        policy: LockPolicy,
        info: &dyn Fn(TxnId) -> TxnInfo,
    ) -> Request {
        let held = self.holders.iter().find(|h| h.txn == requester.id).copied();
        if held.is_some_and(|h| h.mode.covers(mode)) {
            return Request::Granted;
        }
        let upgrade = held.is_some();
        let conflicting: Vec<TxnInfo> = self
            .holders
            .iter()
            .filter(|h| h.txn != requester.id && !h.mode.compatible(mode))
            .map(|h| info(h.txn))
            .collect();
        // An upgrade goes ahead of every waiter (they wait for this holder anyway); a new request
        // also waits behind any waiter the policy puts first, so that it cannot starve them.
        let waiter_first = !upgrade
            && self
                .waiters
                .iter()
                .any(|w| self.ahead(policy, w, requester, info));
        if conflicting.is_empty() && !waiter_first {
            self.hold(requester.id, mode);
            return Request::Granted;
        }
        let action = policy.on_conflict(requester, &conflicting);
        if action.abort_requester {
            return Request::Abort;
        }
        self.waiters.push(Waiter {
            txn: requester.id,
            mode,
            seq: self.next_seq,
            upgrade,
        });
        self.next_seq += 1;
        Request::Wait(action)
    }

    /// Makes `txn` a holder in `mode` (an upgrade if it holds the lock already).
    fn hold(&mut self, txn: TxnId, mode: LockMode) {
        match self.holders.iter_mut().find(|h| h.txn == txn) {
            Some(h) => h.mode = mode,
            None => self.holders.push(Holder { txn, mode }),
        }
    }

    /// True if waiter `w` is to be granted before `requester` would be.
    fn ahead(
        &self,
        policy: LockPolicy,
        w: &Waiter,
        requester: &TxnInfo,
        info: &dyn Fn(TxnId) -> TxnInfo,
    ) -> bool {
        match policy.order() {
            QueueOrder::Fifo => true,
            QueueOrder::Priority => info(w.txn).level >= requester.level,
            QueueOrder::Contention => info(w.txn).blocking >= requester.blocking,
        }
    }

    /// Removes `txn` from the lock (as holder and as waiter: it committed or aborted) and grants
    /// what can now be granted, in the policy's order. Returns the transactions granted.
    pub(crate) fn release(
        &mut self,
        txn: TxnId,
        policy: LockPolicy,
        info: &dyn Fn(TxnId) -> TxnInfo,
    ) -> Vec<TxnId> {
        self.holders.retain(|h| h.txn != txn);
        self.cancel_wait(txn, policy, info)
    }

    /// Grants waiters from the front of the policy's order while they are compatible with the
    /// holders, stopping at the first that is not (so that it is not overtaken).
    pub(crate) fn grant_waiters(
        &mut self,
        policy: LockPolicy,
        info: &dyn Fn(TxnId) -> TxnInfo,
    ) -> Vec<TxnId> {
        let mut order: Vec<(usize, Waiter)> = self.waiters.iter().copied().enumerate().collect();
        order.sort_by_key(|&(_, w)| grant_key(policy, &w, info));
        let mut granted = Vec::new();
        for (_, w) in order {
            let compatible = self
                .holders
                .iter()
                .all(|h| h.txn == w.txn || h.mode.compatible(w.mode));
            if !compatible {
                break;
            }
            self.hold(w.txn, w.mode);
            granted.push(w.txn);
        }
        self.waiters.retain(|w| !granted.contains(&w.txn));
        granted
    }

    /// The transactions `txn` waits for at this lock: holders in a conflicting mode, and waiters
    /// in a conflicting mode that the policy grants before it.
    pub(crate) fn waits_for(
        &self,
        txn: TxnId,
        policy: LockPolicy,
        info: &dyn Fn(TxnId) -> TxnInfo,
    ) -> Vec<TxnId> {
        let Some(w) = self.waiters.iter().find(|w| w.txn == txn) else {
            return Vec::new();
        };
        let holders = self
            .holders
            .iter()
            .filter(|h| h.txn != txn && !h.mode.compatible(w.mode))
            .map(|h| h.txn);
        let mine = grant_key(policy, w, info);
        let ahead = self
            .waiters
            .iter()
            .filter(|o| {
                o.txn != txn && !o.mode.compatible(w.mode) && grant_key(policy, o, info) < mine
            })
            .map(|o| o.txn);
        holders.chain(ahead).collect()
    }

    /// Withdraws `txn`'s waiting request (it was aborted while waiting) and grants what that
    /// unblocks. Returns the transactions granted.
    pub(crate) fn cancel_wait(
        &mut self,
        txn: TxnId,
        policy: LockPolicy,
        info: &dyn Fn(TxnId) -> TxnInfo,
    ) -> Vec<TxnId> {
        self.waiters.retain(|w| w.txn != txn);
        self.grant_waiters(policy, info)
    }

    /// For each holder, how many other transactions wait at this lock (holders nobody waits for
    /// are left out).
    pub(crate) fn blocking_counts(&self) -> impl Iterator<Item = (TxnId, usize)> + '_ {
        self.holders.iter().filter_map(|h| {
            let n = self.waiters.iter().filter(|w| w.txn != h.txn).count();
            (n > 0).then_some((h.txn, n))
        })
    }

    /// True if `txn` holds the lock or waits for it.
    pub(crate) fn involves(&self, txn: TxnId) -> bool {
        self.holders.iter().any(|h| h.txn == txn) || self.waiters.iter().any(|w| w.txn == txn)
    }

    /// True if nobody holds or waits for the lock (its queue can be dropped).
    pub(crate) fn is_unused(&self) -> bool {
        self.holders.is_empty() && self.waiters.is_empty()
    }

    /// Holders and their modes (tests, lock snapshots).
    pub(crate) fn holders(&self) -> Vec<(TxnId, LockMode)> {
        self.holders.iter().map(|h| (h.txn, h.mode)).collect()
    }

    /// Waiting transactions, in arrival order (test failures).
    #[cfg(test)]
    pub(crate) fn waiting(&self) -> Vec<TxnId> {
        self.waiters.iter().map(|w| w.txn).collect()
    }
}
