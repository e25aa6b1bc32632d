//! The lock table: every lock's queue and every registered transaction's lock state, and the
//! state changes the lock manager makes under its latch: revoking a transaction's locks, granting
//! what a release frees, regranting after a reorder, breaking deadlock cycles, ending reprieves.
//!
//! Everything here runs with the manager's latch held, inside a non-preemptible region, and never
//! waits: a transaction that must wait is parked by the manager after the latch is released.
//!
//! Must never: leave a revoked transaction holding or waiting for a lock, or lose a waiter.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use overtake_runtime::park::{Raised, Unparker};

use super::policy::QueueOrder;
use super::revocation::Revocation;
use super::{
    LockAbort, LockMode, LockName, LockPolicy, LockQueue, TxnId, TxnInfo, choose_victim, find_cycle,
};

pub(super) struct TxnEntry {
    pub(super) level: u8,
    pub(super) began: u64,
    pub(super) unparker: Unparker,
    /// Locks held or waited for.
    pub(super) locks: Vec<LockName>,
    pub(super) waiting_on: Option<LockName>,
    /// Shared with the transaction: set when its locks are revoked.
    pub(super) revocation: Arc<Revocation>,
    /// POW: aborted when it next has to wait, or is paused.
    pub(super) doomed: bool,
    /// Raises lent by waiters, withdrawn when this transaction releases everything.
    pub(super) raises: Vec<Raised>,
    pub(super) raised_to: u8,
    /// The wait in progress, for its statistics.
    pub(super) wait: Option<WaitClock>,
    /// Aborted rather than made to wait (WDL1): the holders it would have waited for, which its
    /// retry waits out (see `LockManager::await_end`).
    pub(super) restart_after: Vec<TxnId>,
    /// Retries waiting for this transaction to end (or to lose its locks).
    pub(super) watchers: Vec<Unparker>,
}

impl TxnEntry {
    pub(super) fn new(level: u8, began: u64, unparker: Unparker) -> Self {
        TxnEntry {
            level,
            began,
            unparker,
            locks: Vec::new(),
            waiting_on: None,
            revocation: Arc::default(),
            doomed: false,
            raises: Vec::new(),
            raised_to: 0,
            wait: None,
            restart_after: Vec::new(),
            watchers: Vec::new(),
        }
    }

    /// Why its locks were revoked, if they were.
    pub(super) fn aborted(&self) -> Option<LockAbort> {
        self.revocation.revoked()
    }
}

/// When a wait began, and who held the lock in a conflicting mode then (POW's WaitExcess ends
/// when the last of them has released).
pub(super) struct WaitClock {
    pub(super) since: Instant,
    pub(super) blockers: Vec<TxnId>,
    pub(super) excess: Option<Duration>,
}

/// A conditional-restart victim: aborted if it still holds `lock` at `deadline`; or (`waiter`)
/// a wait with a time limit: aborted if `victim` still waits for `lock` at `deadline`, in the
/// wait that began at `waiter`'s instant.
pub(super) struct Reprieve {
    pub(super) deadline: Instant,
    pub(super) victim: TxnId,
    pub(super) lock: LockName,
    pub(super) waiter: Option<Instant>,
}

/// Hashes lock names and transaction ids, which are already well-mixed integers (a key's hash,
/// a pending stamp): one multiply per word instead of SipHash, which showed up at 5% of a
/// lock-bound run's samples.
#[derive(Default)]
pub(super) struct WordHasher(u64);

impl std::hash::Hasher for WordHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u64(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x517C_C1B7_2722_0A95);
    }
}

pub(super) type WordMap<K, V> = HashMap<K, V, std::hash::BuildHasherDefault<WordHasher>>;

#[derive(Default)]
pub(super) struct Table {
    pub(super) queues: WordMap<LockName, LockQueue>,
    pub(super) txns: WordMap<TxnId, TxnEntry>,
    pub(super) reprieves: Vec<Reprieve>,
    pub(super) next_began: u64,
    /// The policy looks at how many transactions each one blocks (`cats`, `wdl1`): counting
    /// costs a walk of the transaction's locks, which a scan holding thousands cannot pay per
    /// request under the other policies.
    pub(super) counts_blocking: bool,
    /// How many transactions wait directly for each transaction (when `counts_blocking`).
    pub(super) blocking: WordMap<TxnId, usize>,
    /// The thread that ends reprieves on time, if one runs (see `reprieve`).
    pub(super) reprieve_timer: Option<std::thread::Thread>,
}

impl Table {
    pub(super) fn info(&self, id: TxnId) -> TxnInfo {
        let e = &self.txns[&id];
        TxnInfo {
            id,
            level: e.level.max(e.raised_to),
            asked: e.level,
            began: e.began,
            waiting: e.waiting_on.is_some(),
            paused: e.unparker.is_paused(),
            // Direct waits only, kept by `change_queue` (a queue being changed is out of the
            // count).
            blocking: self.blocking.get(&id).copied().unwrap_or(0),
        }
    }

    /// Revokes `id`'s locks for `reason`: marks it aborted, withdraws its wait, releases every
    /// lock it holds (granting what that frees), withdraws the raises lent to it and wakes it
    /// (it learns the reason at its next call). Nothing needs undoing: its writes are buffered.
    /// Returns false, changing nothing, if it is unknown, revoked already, or committing (it
    /// releases everything itself in a moment).
    pub(super) fn abort(&mut self, id: TxnId, reason: LockAbort, policy: LockPolicy) -> bool {
        let Some(e) = self.txns.get_mut(&id) else {
            return false;
        };
        if !e.revocation.revoke(reason) {
            return false;
        }
        e.unparker.unpark();
        e.unparker.clear_pause_hook();
        e.doomed = false;
        e.raised_to = 0;
        let raises = std::mem::take(&mut e.raises);
        let watchers = std::mem::take(&mut e.watchers);
        let waiting_on = e.waiting_on.take();
        let locks = std::mem::take(&mut e.locks);
        if let Some(on) = waiting_on {
            let granted = self.change_queue(on, |queue, info| queue.cancel_wait(id, policy, info));
            self.wake_granted(on, &granted);
        }
        for name in locks {
            let granted = self.change_queue(name, |queue, info| queue.release(id, policy, info));
            self.wake_granted(name, &granted);
        }
        self.blocking.remove(&id);
        self.note_release(id);
        self.reprieves.retain(|r| r.victim != id);
        for watcher in &watchers {
            watcher.unpark();
        }
        // Withdrawn inside the region, as `release_all` does.
        drop(raises);
        true
    }

    /// Lets `change` modify the queue of `name` (created if missing), taken out of the map so that
    /// it can consult `info` about others; puts it back unless unused, and keeps the counts of
    /// how many transactions each one blocks in step with it.
    pub(super) fn change_queue<R>(
        &mut self,
        name: LockName,
        change: impl FnOnce(&mut LockQueue, &dyn Fn(TxnId) -> TxnInfo) -> R,
    ) -> R {
        let mut queue = self.queues.remove(&name).unwrap_or_default();
        if self.counts_blocking {
            for (t, n) in queue.blocking_counts() {
                if let Some(count) = self.blocking.get_mut(&t) {
                    *count -= n;
                }
            }
        }
        let result = change(&mut queue, &|t| self.info(t));
        if self.counts_blocking {
            for (t, n) in queue.blocking_counts() {
                *self.blocking.entry(t).or_default() += n;
            }
        }
        if !queue.is_unused() {
            self.queues.insert(name, queue);
        }
        result
    }

    /// Grants `granted` their locks (at `name`) and wakes them.
    pub(super) fn wake_granted(&mut self, name: LockName, granted: &[TxnId]) {
        for id in granted {
            if let Some(e) = self.txns.get_mut(id) {
                debug_assert_eq!(e.waiting_on, Some(name));
                e.waiting_on = None;
                e.unparker.unpark();
            }
        }
    }

    /// Grants whatever the queues' orders now allow. A raise (inheritance) or a change in how
    /// many transactions someone blocks (the contention order) reorders queues without any lock
    /// being released, and can put a compatible waiter first: without this it would wait for a
    /// release that has already happened.
    pub(super) fn regrant(&mut self, policy: LockPolicy, raised: &[TxnId]) {
        let names: Vec<LockName> = if policy.order() == QueueOrder::Contention {
            // Every queue with a waiter.
            let mut names: Vec<LockName> =
                self.txns.values().filter_map(|e| e.waiting_on).collect();
            names.sort_unstable_by_key(|n| (n.space, n.item));
            names.dedup();
            names
        } else {
            // Under arrival and priority orders only a raised transaction's own wait can move.
            raised
                .iter()
                .filter_map(|t| self.txns.get(t)?.waiting_on)
                .collect()
        };
        for name in names {
            let granted = self.change_queue(name, |queue, info| queue.grant_waiters(policy, info));
            self.wake_granted(name, &granted);
        }
    }

    /// Aborts deadlock victims until no cycle of the waits-for graph passes through `starts`
    /// (`None`: through any waiting transaction).
    ///
    /// A new cycle must use a new edge, and a new edge always touches the transaction whose
    /// request or raise made it: a request adds edges from the requester, and to it from the
    /// waiters it goes ahead of; a raise moves the raised transaction ahead in the queue it waits
    /// in. A release under arrival or priority order adds none (whoever is granted was already
    /// ahead of, and conflicting with, those still waiting). Under the contention order any queue
    /// change can reorder any queue, so every waiter is a starting point there.
    pub(super) fn break_cycles(&mut self, policy: LockPolicy, starts: Option<&[TxnId]>) {
        let every_waiter = starts.is_none() || policy.order() == QueueOrder::Contention;
        loop {
            let waits_for = |t: TxnId| -> Vec<TxnId> {
                let Some(on) = self.txns.get(&t).and_then(|e| e.waiting_on) else {
                    return Vec::new();
                };
                self.queues[&on].waits_for(t, policy, &|u| self.info(u))
            };
            let candidates: Vec<TxnId> = if every_waiter {
                self.txns
                    .iter()
                    .filter(|(_, e)| e.waiting_on.is_some())
                    .map(|(&t, _)| t)
                    .collect()
            } else {
                starts.unwrap_or_default().to_vec()
            };
            let victim = find_cycle(&candidates, &waits_for)
                .and_then(|cycle| choose_victim(&cycle, &|t| self.info(t)));
            let Some(victim) = victim else {
                return;
            };
            // Every member of a cycle waits, so none is committing: the abort always happens.
            let aborted = self.abort(victim, LockAbort::Deadlock, policy);
            assert!(aborted, "deadlock victim {victim} could not be aborted");
        }
    }

    /// Aborts the conditional-restart victims whose reprieve has ended and that still hold the
    /// lock they were given it for. Returns when the next reprieve ends, if one is left.
    pub(super) fn expire_reprieves(&mut self, policy: LockPolicy) -> Option<Instant> {
        if self.reprieves.is_empty() {
            return None;
        }
        let now = Instant::now();
        let (due, later): (Vec<Reprieve>, Vec<Reprieve>) = std::mem::take(&mut self.reprieves)
            .into_iter()
            .partition(|r| r.deadline <= now);
        self.reprieves = later;
        for r in due {
            if let Some(since) = r.waiter {
                let still_waits = self.txns.get(&r.victim).is_some_and(|e| {
                    e.waiting_on == Some(r.lock)
                        && e.wait.as_ref().is_some_and(|w| w.since == since)
                });
                if still_waits {
                    self.abort(r.victim, LockAbort::Timeout, policy);
                }
                continue;
            }
            let holds = self
                .queues
                .get(&r.lock)
                .is_some_and(|q| q.holders().iter().any(|&(t, _)| t == r.victim));
            if holds {
                self.abort(r.victim, LockAbort::Preempted, policy);
            }
        }
        self.reprieves.iter().map(|r| r.deadline).min()
    }

    /// `released` has released everything: the waits it blocked since their start may have
    /// reached their WaitExcess.
    pub(super) fn note_release(&mut self, released: TxnId) {
        for e in self.txns.values_mut() {
            if let Some(w) = &mut e.wait
                && w.excess.is_none()
            {
                w.blockers.retain(|&b| b != released);
                if w.blockers.is_empty() {
                    w.excess = Some(w.since.elapsed());
                }
            }
        }
    }

    /// Holders and their modes of `lock` (snapshots).
    pub(super) fn holders(&self, lock: LockName) -> Vec<(TxnId, LockMode)> {
        self.queues
            .get(&lock)
            .map(|q| q.holders())
            .unwrap_or_default()
    }
}
