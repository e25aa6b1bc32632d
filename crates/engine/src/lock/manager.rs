//! The lock manager: every lock's queue and every transaction's lock state, acting on the
//! policy's decisions. A transaction that must wait parks (`overtake_runtime::park`: a task's
//! worker runs other tasks meanwhile, a plain thread sleeps) and is woken by whoever grants it the
//! lock or aborts it. Holders a policy raises run at the waiter's level (`Unparker::raise_to`)
//! until they release everything.
//!
//! One latch (a `RegionMutex`) guards the whole table; it is only ever held inside a
//! non-preemptible region and never across a park, so a paused transaction never holds it. A
//! transaction aborted by someone else learns it at its next `acquire` (or when its wait ends);
//! the 2PL transaction layer also checks [`LockManager::aborted`] at commit.
//!
//! Must never: return from `acquire` with the lock not granted and no abort reason, or leave a
//! released transaction in any queue.

use std::collections::HashMap;

use overtake_runtime::park::{Raised, Unparker, current_unparker, park};
use overtake_runtime::{NoPreemptGuard, RegionMutex};

use super::{LockMode, LockPolicy, LockQueue, Request, TxnId, TxnInfo, choose_victim, find_cycle};

/// Names a lock: a table (or index) and a record or key within it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct LockName {
    pub(crate) space: u64,
    pub(crate) item: u64,
}

/// Why a lock request ended a transaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LockAbort {
    /// It closed a cycle of waits and was chosen as the victim (or was chosen from another's).
    Deadlock,
    /// A more urgent transaction's policy aborted it (PAbort, POW, CR).
    Preempted,
    /// Waiting would have made a chain of waits too long (WDL1).
    WaitDepth,
}

struct TxnEntry {
    level: u8,
    began: u64,
    unparker: Unparker,
    /// Locks held or waited for.
    locks: Vec<LockName>,
    waiting_on: Option<LockName>,
    aborted: Option<LockAbort>,
    /// POW: aborted when it next has to wait.
    doomed: bool,
    /// Raises lent by waiters, withdrawn when this transaction releases everything.
    raises: Vec<Raised>,
    raised_to: u8,
}

#[derive(Default)]
struct Table {
    queues: HashMap<LockName, LockQueue>,
    txns: HashMap<TxnId, TxnEntry>,
}

/// See the module documentation.
pub(crate) struct LockManager {
    policy: LockPolicy,
    table: RegionMutex<Table>,
}

impl Table {
    fn info(&self, id: TxnId) -> TxnInfo {
        let e = &self.txns[&id];
        TxnInfo {
            id,
            level: e.level.max(e.raised_to),
            began: e.began,
            waiting: e.waiting_on.is_some(),
            paused: false,
            blocking: e
                .locks
                .iter()
                .filter(|name| e.waiting_on != Some(**name))
                // Only direct waits on the holders (a queue being decided on is out of the map).
                .filter_map(|name| self.queues.get(name))
                .map(|q| q.waiting_while_held_by(id))
                .sum(),
        }
    }

    /// Marks `id` aborted, withdraws its wait if it waits (granting what that unblocks) and wakes
    /// it; it releases its locks itself, with `release_all`.
    fn abort(&mut self, id: TxnId, reason: LockAbort, policy: LockPolicy) {
        let Some(e) = self.txns.get_mut(&id) else {
            return;
        };
        if e.aborted.is_some() {
            return;
        }
        e.aborted = Some(reason);
        e.unparker.unpark();
        if let Some(on) = e.waiting_on.take()
            && let Some(mut queue) = self.queues.remove(&on)
        {
            let granted = queue.cancel_wait(id, policy, &|t| self.info(t));
            self.queues.insert(on, queue);
            self.wake_granted(on, &granted);
        }
    }

    /// Grants `granted` their locks (at `name`) and wakes them.
    fn wake_granted(&mut self, name: LockName, granted: &[TxnId]) {
        for id in granted {
            if let Some(e) = self.txns.get_mut(id) {
                debug_assert_eq!(e.waiting_on, Some(name));
                e.waiting_on = None;
                e.unparker.unpark();
            }
        }
    }
}

impl Table {
    /// Grants whatever each queue's order now allows. A raise (inheritance) or a change in how
    /// many transactions someone blocks (the contention order) reorders queues without any lock
    /// being released, and can put a compatible waiter first: without this it would wait for a
    /// release that has already happened.
    fn regrant_all(&mut self, policy: LockPolicy) {
        let names: Vec<LockName> = self.queues.keys().copied().collect();
        for name in names {
            let Some(mut queue) = self.queues.remove(&name) else {
                continue;
            };
            let granted = queue.grant_waiters(policy, &|t| self.info(t));
            self.queues.insert(name, queue);
            self.wake_granted(name, &granted);
        }
    }

    /// Aborts deadlock victims until the waits-for graph has no cycle; returns the last victim.
    /// Every waiting transaction is a starting point, not only the one that just began to wait:
    /// under priority and contention orders a raise or a release reorders a queue, which can close
    /// a cycle among transactions that were already waiting.
    fn break_cycles(&mut self, policy: LockPolicy) -> Option<TxnId> {
        let mut last = None;
        loop {
            let waits_for = |t: TxnId| -> Vec<TxnId> {
                let Some(on) = self.txns.get(&t).and_then(|e| e.waiting_on) else {
                    return Vec::new();
                };
                self.queues[&on].waits_for(t, policy, &|u| self.info(u))
            };
            let victim = self
                .txns
                .iter()
                .filter(|(_, e)| e.waiting_on.is_some())
                .find_map(|(&t, _)| find_cycle(t, &waits_for))
                .and_then(|cycle| choose_victim(&cycle, &|t| self.info(t)));
            let Some(victim) = victim else {
                return last;
            };
            self.abort(victim, LockAbort::Deadlock, policy);
            last = Some(victim);
        }
    }
}

impl LockManager {
    pub(crate) fn new(policy: LockPolicy) -> Self {
        LockManager {
            policy,
            table: RegionMutex::new(Table::default()),
        }
    }

    /// Registers transaction `id` (at `level`, begun as the `began`-th) on the current task or
    /// thread, which is what its waits park.
    pub(crate) fn register(&self, id: TxnId, level: u8, began: u64) {
        let unparker = current_unparker();
        let region = NoPreemptGuard::new();
        self.table.lock(&region).txns.insert(
            id,
            TxnEntry {
                level,
                began,
                unparker,
                locks: Vec::new(),
                waiting_on: None,
                aborted: None,
                doomed: false,
                raises: Vec::new(),
                raised_to: 0,
            },
        );
    }

    /// Why `id` was aborted by others, if it was.
    pub(crate) fn aborted(&self, id: TxnId) -> Option<LockAbort> {
        let region = NoPreemptGuard::new();
        self.table
            .lock(&region)
            .txns
            .get(&id)
            .and_then(|e| e.aborted)
    }

    /// Acquires `name` in `mode` for `id`, waiting (parked) as long as the policy says. On an
    /// error the transaction must roll back and call [`release_all`](Self::release_all).
    pub(crate) fn acquire(
        &self,
        id: TxnId,
        name: LockName,
        mode: LockMode,
    ) -> Result<(), LockAbort> {
        if self.request(id, name, mode)? {
            return Ok(());
        }
        loop {
            park();
            let region = NoPreemptGuard::new();
            let table = self.table.lock(&region);
            let e = &table.txns[&id];
            if let Some(reason) = e.aborted {
                return Err(reason);
            }
            if e.waiting_on.is_none() {
                return Ok(());
            }
        }
    }

    /// The request under the latch: `Ok(true)` if granted, `Ok(false)` if `id` must park.
    fn request(&self, id: TxnId, name: LockName, mode: LockMode) -> Result<bool, LockAbort> {
        let region = NoPreemptGuard::new();
        let mut guard = self.table.lock(&region);
        let table = &mut *guard;
        if let Some(reason) = table.txns[&id].aborted {
            return Err(reason);
        }
        let me = table.info(id);
        let mut queue = table.queues.remove(&name).unwrap_or_default();
        let request = queue.request(&me, mode, self.policy, &|t| table.info(t));
        table.queues.insert(name, queue);
        let e = table.txns.get_mut(&id).expect("registered");
        if !e.locks.contains(&name) {
            e.locks.push(name);
        }
        let action = match request {
            Request::Granted => return Ok(true),
            Request::Abort => {
                e.aborted = Some(LockAbort::WaitDepth);
                return Err(LockAbort::WaitDepth);
            }
            Request::Wait(action) => action,
        };
        e.waiting_on = Some(name);
        if e.doomed {
            // POW: a holder that blocked an urgent transaction and now waits itself.
            table.abort(id, LockAbort::Preempted, self.policy);
            return Err(LockAbort::Preempted);
        }
        for victim in action.abort {
            table.abort(victim, LockAbort::Preempted, self.policy);
        }
        for (holder, level) in action.raise {
            if let Some(h) = table.txns.get_mut(&holder)
                && level > h.level.max(h.raised_to)
            {
                h.raises.push(h.unparker.raise_to(level));
                h.raised_to = level;
            }
        }
        for holder in action.doom {
            if let Some(h) = table.txns.get_mut(&holder) {
                h.doomed = true;
            }
        }
        // Reprieves need a clock the lock manager does not keep: the 2PL layer's timer aborts
        // `abort_after` victims that still hold the lock when the reprieve ends.
        table.regrant_all(self.policy);
        if table.break_cycles(self.policy) == Some(id) {
            return Err(LockAbort::Deadlock);
        }
        // Granted meanwhile (a victim's withdrawn wait unblocked this one)?
        Ok(table.txns[&id].waiting_on.is_none())
    }

    /// Releases every lock of `id` (it committed or rolled back), grants what that frees and
    /// forgets `id`.
    pub(crate) fn release_all(&self, id: TxnId) {
        let region = NoPreemptGuard::new();
        let mut guard = self.table.lock(&region);
        let table = &mut *guard;
        let Some(entry) = table.txns.remove(&id) else {
            return;
        };
        for name in &entry.locks {
            let Some(mut queue) = table.queues.remove(name) else {
                continue;
            };
            let granted = queue.release(id, self.policy, &|t| table.info(t));
            table.wake_granted(*name, &granted);
            if !queue.is_unused() {
                table.queues.insert(*name, queue);
            }
        }
        // Fewer blocked transactions reorder queues under the contention order.
        table.regrant_all(self.policy);
        table.break_cycles(self.policy);
        // The raises lent to it are withdrawn here, inside the region.
        drop(entry);
    }

    /// What `id` waits for (tests).
    #[cfg(test)]
    pub(crate) fn waiting_on(&self, id: TxnId) -> Option<LockName> {
        let region = NoPreemptGuard::new();
        self.table
            .lock(&region)
            .txns
            .get(&id)
            .and_then(|e| e.waiting_on)
    }

    /// Every lock's holders and waiters, and what each transaction waits on (test failures).
    #[cfg(test)]
    pub(crate) fn dump(&self) -> String {
        let region = NoPreemptGuard::new();
        let table = self.table.lock(&region);
        let mut out = String::new();
        for (name, q) in &table.queues {
            out += &format!(
                "{name:?}: holders {:?} waiting {:?}\n",
                q.holders(),
                q.waiting()
            );
        }
        for (id, e) in &table.txns {
            out += &format!(
                "txn {id}: waiting on {:?}, aborted {:?}, locks {:?}\n",
                e.waiting_on, e.aborted, e.locks
            );
        }
        out
    }
}
