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
use std::time::{Duration, Instant};

use overtake_runtime::park::{Raised, Unparker, current_unparker, park};
use overtake_runtime::{NoPreemptGuard, RegionMutex};

use super::policy::QueueOrder;
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
    /// The wait in progress, for its statistics.
    wait: Option<WaitClock>,
    /// Aborted rather than made to wait (WDL1): the holders it would have waited for, which its
    /// retry waits out (see [`LockManager::await_end`]).
    restart_after: Vec<TxnId>,
    /// Retries waiting for this transaction to end.
    watchers: Vec<Unparker>,
}

/// When a wait began, and who held the lock in a conflicting mode then (POW's WaitExcess ends
/// when the last of them has released).
struct WaitClock {
    since: Instant,
    blockers: Vec<TxnId>,
    excess: Option<Duration>,
}

/// How long one lock request waited (POW's statistics).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct WaitTimes {
    /// From the request to the grant (QueueTime).
    pub(crate) queue: Duration,
    /// From the request until every transaction holding the lock in a conflicting mode at the
    /// time of the request had released it (WaitExcess); at most `queue`.
    pub(crate) excess: Duration,
}

/// A conditional-restart victim: aborted if it still holds `lock` at `deadline`.
struct Reprieve {
    deadline: Instant,
    victim: TxnId,
    lock: LockName,
}

/// One transaction waiting for a lock, as [`LockManager::waits`] reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct WaitSnapshot {
    pub(crate) waiter: TxnId,
    /// Its effective level (inheritance included).
    pub(crate) level: u8,
    pub(crate) lock: LockName,
    /// Transactions holding the lock, with their modes.
    pub(crate) holders: Vec<(TxnId, LockMode)>,
    pub(crate) waited: Duration,
}

/// Hashes lock names and transaction ids, which are already well-mixed integers (a key's hash,
/// a pending stamp): one multiply per word instead of SipHash, which showed up at 5% of a
/// lock-bound run's samples.
#[derive(Default)]
struct WordHasher(u64);

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

type WordMap<K, V> = HashMap<K, V, std::hash::BuildHasherDefault<WordHasher>>;

#[derive(Default)]
struct Table {
    queues: WordMap<LockName, LockQueue>,
    txns: WordMap<TxnId, TxnEntry>,
    reprieves: Vec<Reprieve>,
    next_began: u64,
    /// The policy looks at how many transactions each one blocks (`cats`, `wdl1`): counting
    /// costs a walk of the transaction's locks, which a scan holding thousands cannot pay per
    /// request under the other policies.
    counts_blocking: bool,
    /// How many transactions wait directly for each transaction (when `counts_blocking`).
    blocking: WordMap<TxnId, usize>,
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
            paused: e.unparker.is_paused(),
            // Direct waits only, kept by `change_queue` (a queue being changed is out of the
            // count).
            blocking: self.blocking.get(&id).copied().unwrap_or(0),
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
        if let Some(on) = e.waiting_on.take() {
            let granted = self.change_queue(on, |queue, info| queue.cancel_wait(id, policy, info));
            self.wake_granted(on, &granted);
        }
    }

    /// Lets `change` modify the queue of `name` (created if missing), taken out of the map so that
    /// it can consult `info` about others; puts it back unless unused, and keeps the counts of
    /// how many transactions each one blocks in step with it.
    fn change_queue<R>(
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
    /// Grants whatever the queues' orders now allow. A raise (inheritance) or a change in how
    /// many transactions someone blocks (the contention order) reorders queues without any lock
    /// being released, and can put a compatible waiter first: without this it would wait for a
    /// release that has already happened.
    fn regrant(&mut self, policy: LockPolicy, raised: &[TxnId]) {
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
    /// (`None`: through any waiting transaction); returns the last victim.
    ///
    /// A new cycle must use a new edge, and a new edge always touches the transaction whose
    /// request or raise made it: a request adds edges from the requester, and to it from the
    /// waiters it goes ahead of; a raise moves the raised transaction ahead in the queue it waits
    /// in. A release under arrival or priority order adds none (whoever is granted was already
    /// ahead of, and conflicting with, those still waiting). Under the contention order any queue
    /// change can reorder any queue, so every waiter is a starting point there.
    fn break_cycles(&mut self, policy: LockPolicy, starts: Option<&[TxnId]>) -> Option<TxnId> {
        let mut last = None;
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
                return last;
            };
            self.abort(victim, LockAbort::Deadlock, policy);
            last = Some(victim);
        }
    }

    /// Aborts the conditional-restart victims whose reprieve has ended and that still hold the
    /// lock they were given it for.
    fn expire_reprieves(&mut self, policy: LockPolicy) {
        if self.reprieves.is_empty() {
            return;
        }
        let now = Instant::now();
        let (due, later): (Vec<Reprieve>, Vec<Reprieve>) = std::mem::take(&mut self.reprieves)
            .into_iter()
            .partition(|r| r.deadline <= now);
        self.reprieves = later;
        for r in due {
            let holds = self
                .queues
                .get(&r.lock)
                .is_some_and(|q| q.holders().iter().any(|&(t, _)| t == r.victim));
            if holds {
                self.abort(r.victim, LockAbort::Preempted, policy);
            }
        }
    }

    /// `released` has released everything: the waits it blocked since their start may have
    /// reached their WaitExcess.
    fn note_release(&mut self, released: TxnId) {
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
}

impl LockManager {
    /// The lock manager `concurrency` needs, if any.
    pub(crate) fn for_concurrency(concurrency: crate::db::Concurrency) -> Option<Self> {
        match concurrency {
            crate::db::Concurrency::Mvcc => None,
            crate::db::Concurrency::TwoPhaseLocking(policy) => Some(LockManager::new(policy)),
        }
    }

    pub(crate) fn new(policy: LockPolicy) -> Self {
        let counts_blocking = matches!(policy, LockPolicy::Cats | LockPolicy::Wdl1);
        LockManager {
            policy,
            table: RegionMutex::new(Table {
                counts_blocking,
                ..Table::default()
            }),
        }
    }

    /// Registers transaction `id` (at `level`, begun as the `began`-th) on the current task or
    /// thread, which is what its waits park.
    #[cfg(test)]
    pub(crate) fn register(&self, id: TxnId, level: u8, began: u64) {
        self.register_aged(id, level, Some(began));
    }

    /// Registers `id` as begun the `began`-th, or (`None`) as the youngest transaction yet.
    /// Returns its place in the begin order: a retry registered with its first attempt's keeps
    /// that attempt's age.
    pub(crate) fn register_aged(&self, id: TxnId, level: u8, began: Option<u64>) -> u64 {
        let unparker = current_unparker();
        let region = NoPreemptGuard::new();
        let mut table = self.table.lock(&region);
        let began = began.unwrap_or(table.next_began);
        table.next_began = table.next_began.max(began + 1);
        table.txns.insert(
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
                wait: None,
                restart_after: Vec::new(),
                watchers: Vec::new(),
            },
        );
        began
    }

    /// The holders `id` would have waited for when it was aborted instead of waiting (WDL1), for
    /// its retry to wait out: restarting at once would meet the same chain, and if the holder
    /// waits for a task paused on this worker, a retry that never gives the worker up would
    /// keep meeting it (Franaszek, Robinson and Thomasian's WDL delays restarts the same way).
    pub(crate) fn restart_after(&self, id: TxnId) -> Vec<TxnId> {
        let region = NoPreemptGuard::new();
        let mut table = self.table.lock(&region);
        table
            .txns
            .get_mut(&id)
            .map(|e| std::mem::take(&mut e.restart_after))
            .unwrap_or_default()
    }

    /// Waits (parked) until none of `ids` is registered any more: each has committed or rolled
    /// back. The caller holds no locks.
    pub(crate) fn await_end(&self, ids: &[TxnId]) {
        let me = current_unparker();
        loop {
            {
                let region = NoPreemptGuard::new();
                let mut table = self.table.lock(&region);
                let mut any_live = false;
                for id in ids {
                    let Some(e) = table.txns.get_mut(id) else {
                        continue;
                    };
                    any_live = true;
                    if !e.watchers.iter().any(|w| w.wakes_same(&me)) {
                        e.watchers.push(me.clone());
                    }
                }
                if !any_live {
                    return;
                }
            }
            park();
        }
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

    /// [`acquire_timed`](Self::acquire_timed) without the times (tests).
    #[cfg(test)]
    pub(crate) fn acquire(
        &self,
        id: TxnId,
        name: LockName,
        mode: LockMode,
    ) -> Result<(), LockAbort> {
        self.acquire_timed(id, name, mode).map(|_| ())
    }

    /// Acquires `name` in `mode` for `id`, waiting (parked) as long as the policy says, and says
    /// how long it waited (`None`: granted at once). On an error the transaction must roll back
    /// and call [`release_all`](Self::release_all).
    pub(crate) fn acquire_timed(
        &self,
        id: TxnId,
        name: LockName,
        mode: LockMode,
    ) -> Result<Option<WaitTimes>, LockAbort> {
        if self.request(id, name, mode)? {
            return Ok(None);
        }
        loop {
            park();
            let region = NoPreemptGuard::new();
            let mut guard = self.table.lock(&region);
            let table = &mut *guard;
            table.expire_reprieves(self.policy);
            let e = table.txns.get_mut(&id).expect("registered");
            if let Some(reason) = e.aborted {
                e.wait = None;
                return Err(reason);
            }
            if e.waiting_on.is_none() {
                let w = e.wait.take().expect("a wait was recorded");
                let queue = w.since.elapsed();
                return Ok(Some(WaitTimes {
                    queue,
                    excess: w.excess.unwrap_or(queue).min(queue),
                }));
            }
        }
    }

    /// The request under the latch: `Ok(true)` if granted, `Ok(false)` if `id` must park.
    fn request(&self, id: TxnId, name: LockName, mode: LockMode) -> Result<bool, LockAbort> {
        let region = NoPreemptGuard::new();
        let mut guard = self.table.lock(&region);
        let table = &mut *guard;
        table.expire_reprieves(self.policy);
        if let Some(reason) = table.txns[&id].aborted {
            return Err(reason);
        }
        let me = table.info(id);
        let policy = self.policy;
        let (known, request, blockers) = table.change_queue(name, |queue, info| {
            // Known to the queue already: an upgrade (the transaction's lock list has the name).
            let known = queue.involves(id);
            let request = queue.request(&me, mode, policy, info);
            let blockers: Vec<TxnId> = queue
                .holders()
                .into_iter()
                .filter(|&(t, held)| t != id && !held.compatible(mode))
                .map(|(t, _)| t)
                .collect();
            (known, request, blockers)
        });
        let e = table.txns.get_mut(&id).expect("registered");
        if !known {
            e.locks.push(name);
        }
        let action = match request {
            Request::Granted => return Ok(true),
            Request::Abort => {
                e.aborted = Some(LockAbort::WaitDepth);
                e.restart_after = blockers;
                return Err(LockAbort::WaitDepth);
            }
            Request::Wait(action) => action,
        };
        e.waiting_on = Some(name);
        e.wait = Some(WaitClock {
            since: Instant::now(),
            excess: blockers.is_empty().then_some(Duration::ZERO),
            blockers,
        });
        if e.doomed {
            // POW: a holder that blocked an urgent transaction and now waits itself.
            table.abort(id, LockAbort::Preempted, self.policy);
            return Err(LockAbort::Preempted);
        }
        for victim in action.abort {
            table.abort(victim, LockAbort::Preempted, self.policy);
        }
        let mut raised = Vec::new();
        for (holder, level) in action.raise {
            if let Some(h) = table.txns.get_mut(&holder)
                && level > h.level.max(h.raised_to)
            {
                h.raises.push(h.unparker.raise_to(level));
                h.raised_to = level;
                raised.push(holder);
            }
        }
        for holder in action.doom {
            if let Some(h) = table.txns.get_mut(&holder) {
                h.doomed = true;
            }
        }
        // The lock manager keeps no timer: a reprieve is enforced at the first call into it after
        // the reprieve ends (any transaction's request, wake or release, the victim's included).
        if let Some((reprieve, victims)) = action.abort_after {
            let deadline = Instant::now() + reprieve;
            table
                .reprieves
                .extend(victims.into_iter().map(|victim| Reprieve {
                    deadline,
                    victim,
                    lock: name,
                }));
        }
        table.regrant(self.policy, &raised);
        raised.push(id);
        if table.break_cycles(self.policy, Some(&raised)) == Some(id) {
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
        let policy = self.policy;
        for &name in &entry.locks {
            let granted = table.change_queue(name, |queue, info| queue.release(id, policy, info));
            table.wake_granted(name, &granted);
        }
        table.blocking.remove(&id);
        for watcher in &entry.watchers {
            watcher.unpark();
        }
        table.note_release(id);
        table.reprieves.retain(|r| r.victim != id);
        table.expire_reprieves(self.policy);
        // Fewer blocked transactions reorder queues under the contention order.
        table.regrant(self.policy, &[]);
        if self.policy.order() == QueueOrder::Contention {
            table.break_cycles(self.policy, None);
        }
        // The raises lent to it are withdrawn here, inside the region.
        drop(entry);
    }

    /// Every transaction waiting for a lock now: who, for what, behind whom, since when (like
    /// PostgreSQL's `pg_locks`).
    pub(crate) fn waits(&self) -> Vec<WaitSnapshot> {
        let region = NoPreemptGuard::new();
        let table = self.table.lock(&region);
        let mut out: Vec<WaitSnapshot> = table
            .txns
            .iter()
            .filter_map(|(&waiter, e)| {
                let lock = e.waiting_on?;
                Some(WaitSnapshot {
                    waiter,
                    level: e.level.max(e.raised_to),
                    lock,
                    holders: table
                        .queues
                        .get(&lock)
                        .map(|q| q.holders())
                        .unwrap_or_default(),
                    waited: e
                        .wait
                        .as_ref()
                        .map_or(Duration::ZERO, |w| w.since.elapsed()),
                })
            })
            .collect();
        out.sort_by_key(|w| std::cmp::Reverse(w.waited));
        out
    }

    /// The policy this manager schedules by.
    pub(crate) fn policy(&self) -> LockPolicy {
        self.policy
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
