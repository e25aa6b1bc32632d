//! The lock manager: every lock's queue and every transaction's lock state, acting on the
//! policy's decisions. A transaction that must wait parks (`overtake_runtime::park`: a task's
//! worker runs other tasks meanwhile, a plain thread sleeps) and is woken by whoever grants it the
//! lock or aborts it. Holders a policy raises run at the waiter's level (`Unparker::raise_to`)
//! until they release everything.
//!
//! One latch (a `RegionMutex`) guards the whole table (`table`); it is only ever held inside a
//! non-preemptible region and never across a park, so a paused transaction never holds it.
//!
//! A transaction a policy dooms loses its locks at that moment (see `revocation`): its waiters are
//! granted without waiting for it to run, and it learns the abort at its next call. POW's holders
//! that run on are revoked the moment they block on a lock or are paused by preemption (a hook on
//! their parker, run by their scheduler at the pause); CR's reprieves end on time by a timer
//! thread (`reprieve`).
//!
//! Must never: return from `acquire` with the lock not granted and no abort reason, or leave a
//! released or revoked transaction in any queue.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use overtake_runtime::park::{current_unparker, park};
use overtake_runtime::{NoPreemptGuard, RegionMutex};

use super::os_hints::OsHints;
use super::policy::QueueOrder;
use super::revocation::Revocation;
use super::table::{Reprieve, Table, TxnEntry, WaitClock};
use super::{LockMode, LockPolicy, Request, TxnId, reprieve};

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
    /// It waited as long as its time limit allows (PostgreSQL's `lock_timeout`).
    Timeout,
    /// Its wait was interrupted: the statement was cancelled (see `acquire_within`).
    Interrupted,
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

/// See the module documentation.
pub(crate) struct LockManager {
    policy: LockPolicy,
    /// Shared with the hooks and the reprieve timer that act on it later (weakly).
    table: Arc<RegionMutex<Table>>,
    /// Where waits of transactions on OS threads are told to the OS scheduler, if anywhere.
    hints: Option<OsHints>,
}

impl Drop for LockManager {
    /// Wakes the reprieve timer, if one runs, so that it finds the table gone and ends.
    fn drop(&mut self) {
        let region = NoPreemptGuard::new();
        let timer = self.table.lock(&region).reprieve_timer.take();
        drop(region);
        if let Some(timer) = timer {
            timer.unpark();
        }
    }
}

impl LockManager {
    pub(crate) fn new(policy: LockPolicy) -> Self {
        let counts_blocking = matches!(policy, LockPolicy::Cats | LockPolicy::Wdl1);
        let manager = LockManager {
            policy,
            table: Arc::new(RegionMutex::new(Table {
                counts_blocking,
                ..Table::default()
            })),
            hints: None,
        };
        if matches!(policy, LockPolicy::ConditionalRestart { .. }) {
            // The timer starts parked now, not at the first reprieve (see `reprieve`).
            let region = NoPreemptGuard::new();
            reprieve::arm(&mut manager.table.lock(&region), &manager.table, policy);
        }
        manager
    }

    /// Tells waits of transactions on OS threads to an OS scheduler through `hints`.
    pub(crate) fn with_hints(mut self, hints: Option<OsHints>) -> Self {
        self.hints = hints;
        self
    }

    /// Registers transaction `id` (at `level`, begun as the `began`-th) on the current task or
    /// thread, which is what its waits park.
    #[cfg(test)]
    pub(crate) fn register(&self, id: TxnId, level: u8, began: u64) -> Arc<Revocation> {
        self.register_aged(id, level, Some(began)).1
    }

    /// Registers `id` as begun the `began`-th, or (`None`) as the youngest transaction yet.
    /// Returns its place in the begin order (a retry registered with its first attempt's keeps
    /// that attempt's age) and the revocation state it shares with the manager.
    pub(crate) fn register_aged(
        &self,
        id: TxnId,
        level: u8,
        began: Option<u64>,
    ) -> (u64, Arc<Revocation>) {
        let unparker = current_unparker();
        let region = NoPreemptGuard::new();
        let mut table = self.table.lock(&region);
        let began = began.unwrap_or(table.next_began);
        table.next_began = table.next_began.max(began + 1);
        let entry = TxnEntry::new(level, began, unparker);
        let revocation = Arc::clone(&entry.revocation);
        table.txns.insert(id, entry);
        (began, revocation)
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

    /// Waits (parked) until each of `ids` has ended or lost its locks (committed, rolled back or
    /// been revoked). The caller holds no locks.
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
                    if e.aborted().is_some() {
                        continue;
                    }
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

    /// Why `id`'s locks were revoked, if they were (tests).
    #[cfg(test)]
    pub(crate) fn aborted(&self, id: TxnId) -> Option<LockAbort> {
        let region = NoPreemptGuard::new();
        self.table
            .lock(&region)
            .txns
            .get(&id)
            .and_then(TxnEntry::aborted)
    }

    /// [`acquire_within`](Self::acquire_within) without a limit or the times (tests).
    #[cfg(test)]
    pub(crate) fn acquire(
        &self,
        id: TxnId,
        name: LockName,
        mode: LockMode,
    ) -> Result<(), LockAbort> {
        self.acquire_within(id, name, mode, None, None).map(|_| ())
    }

    /// Acquires `name` in `mode` for `id`, waiting (parked) as long as the policy says, or up
    /// to `limit` (then [`LockAbort::Timeout`]), or until `interrupt` is set and the task woken
    /// (then [`LockAbort::Interrupted`]: whoever sets it unparks the waiting task, and the flag
    /// is checked before each park, so a flag set before the wait began is seen too); says how
    /// long it waited (`None`: granted at once). On an error the transaction must roll back and
    /// call [`release_all`](Self::release_all).
    pub(crate) fn acquire_within(
        &self,
        id: TxnId,
        name: LockName,
        mode: LockMode,
        limit: Option<Duration>,
        interrupt: Option<&AtomicBool>,
    ) -> Result<Option<WaitTimes>, LockAbort> {
        if self.request(id, name, mode, true)? {
            return Ok(None);
        }
        if let Some(limit) = limit {
            self.limit_wait(id, name, limit);
        }
        loop {
            if interrupt.is_some_and(|f| f.load(Ordering::SeqCst)) {
                // Aborted as a timed-out wait is (dequeued, unparked): the check below ends it.
                let region = NoPreemptGuard::new();
                self.table
                    .lock(&region)
                    .abort(id, LockAbort::Interrupted, self.policy);
            }
            park();
            let region = NoPreemptGuard::new();
            let mut guard = self.table.lock(&region);
            let table = &mut *guard;
            table.expire_reprieves(self.policy);
            let e = table.txns.get_mut(&id).expect("registered");
            let ended = e.aborted().is_some() || e.waiting_on.is_none();
            if let (true, Some(hints)) = (ended, &self.hints) {
                hints.done(&e.unparker);
            }
            if let Some(reason) = e.aborted() {
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

    /// Acquires `name` in `mode` for `id` only if that needs no wait (PostgreSQL's `NOWAIT` and
    /// `SKIP LOCKED`): `Ok(false)`, with nothing queued and no policy acting on the holders, if
    /// a holder's mode conflicts or a waiter goes first.
    pub(crate) fn try_acquire(
        &self,
        id: TxnId,
        name: LockName,
        mode: LockMode,
    ) -> Result<bool, LockAbort> {
        self.request(id, name, mode, false)
    }

    /// The request under the latch: `Ok(true)` if granted, `Ok(false)` if `id` must park (or,
    /// unless `wait`, was not queued).
    fn request(
        &self,
        id: TxnId,
        name: LockName,
        mode: LockMode,
        wait: bool,
    ) -> Result<bool, LockAbort> {
        let region = NoPreemptGuard::new();
        let mut guard = self.table.lock(&region);
        let table = &mut *guard;
        let policy = self.policy;
        table.expire_reprieves(policy);
        if let Some(reason) = table.txns[&id].aborted() {
            return Err(reason);
        }
        let me = table.info(id);
        let (known, request, blockers) = table.change_queue(name, |queue, info| {
            // Known to the queue already: an upgrade (the transaction's lock list has the name).
            let known = queue.involves(id);
            let request = queue.request(&me, mode, policy, info);
            if !wait && matches!(request, Request::Wait(_)) {
                // Withdrawn at once: the queue is as it was before the request.
                let granted = queue.cancel_wait(id, policy, info);
                debug_assert!(granted.is_empty(), "withdrawing a new waiter grants nobody");
                return (known, None, Vec::new());
            }
            let request = Some(request);
            let blockers: Vec<TxnId> = queue
                .holders()
                .into_iter()
                .filter(|&(t, held)| t != id && !held.compatible(mode))
                .map(|(t, _)| t)
                .collect();
            (known, request, blockers)
        });
        let Some(request) = request else {
            return Ok(false);
        };
        let e = table.txns.get_mut(&id).expect("registered");
        if !known {
            e.locks.push(name);
        }
        let action = match request {
            Request::Granted => return Ok(true),
            Request::Abort => {
                e.restart_after = blockers;
                table.abort(id, LockAbort::WaitDepth, policy);
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
            table.abort(id, LockAbort::Preempted, policy);
            return Err(LockAbort::Preempted);
        }
        for victim in action.abort {
            table.abort(victim, LockAbort::Preempted, policy);
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
            self.doom(table, holder);
        }
        if let Some((reprieve, victims)) = action.abort_after {
            let deadline = Instant::now() + reprieve;
            table
                .reprieves
                .extend(victims.into_iter().map(|victim| Reprieve {
                    deadline,
                    victim,
                    lock: name,
                    waiter: None,
                }));
            reprieve::arm(table, &self.table, policy);
        }
        table.regrant(policy, &raised);
        raised.push(id);
        table.break_cycles(policy, Some(&raised));
        // Ask the requester's own state, not which victim was chosen last: breaking a later
        // cycle (through a raised holder) may choose another victim after this one.
        if let Some(reason) = table.txns[&id].aborted() {
            return Err(reason);
        }
        // Granted meanwhile (a victim's released locks or withdrawn wait unblocked this one)?
        let e = &table.txns[&id];
        if e.waiting_on.is_none() {
            return Ok(true);
        }
        if let (Some(hints), Some(wait)) = (&self.hints, &e.wait) {
            hints.waiting(table, &e.unparker, &wait.blockers);
        }
        Ok(false)
    }

    /// Makes `id`'s wait for `name`, which has just begun, end with [`LockAbort::Timeout`] if
    /// it lasts `limit`: the reprieve timer aborts it then (it is parked and makes no call).
    fn limit_wait(&self, id: TxnId, name: LockName, limit: Duration) {
        let region = NoPreemptGuard::new();
        let mut guard = self.table.lock(&region);
        let table = &mut *guard;
        let Some(since) = table
            .txns
            .get(&id)
            .and_then(|e| e.wait.as_ref())
            .map(|w| w.since)
        else {
            return; // Granted or aborted meanwhile: the loop that follows finds out.
        };
        table.reprieves.push(Reprieve {
            deadline: since + limit,
            victim: id,
            lock: name,
            waiter: Some(since),
        });
        reprieve::arm(table, &self.table, self.policy);
    }

    /// POW: `holder` runs on (raised) until it has to wait or is paused; then it is revoked. A
    /// holder already paused is revoked now.
    fn doom(&self, table: &mut Table, holder: TxnId) {
        let policy = self.policy;
        let Some(h) = table.txns.get_mut(&holder) else {
            return;
        };
        h.doomed = true;
        let weak: Weak<RegionMutex<Table>> = Arc::downgrade(&self.table);
        let hook = Box::new(move || {
            let Some(shared) = weak.upgrade() else {
                return;
            };
            let region = NoPreemptGuard::new();
            let mut table = shared.lock(&region);
            if table.txns.get(&holder).is_some_and(|e| e.doomed) {
                table.abort(holder, LockAbort::Preempted, policy);
            }
        });
        if h.unparker.when_paused(hook).is_err() && h.unparker.is_paused() {
            // Paused between the policy's look and now.
            table.abort(holder, LockAbort::Preempted, policy);
        }
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
        entry.unparker.clear_pause_hook();
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
        table.expire_reprieves(policy);
        // Fewer blocked transactions reorder queues under the contention order.
        table.regrant(policy, &[]);
        if policy.order() == QueueOrder::Contention {
            table.break_cycles(policy, None);
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
                    holders: table.holders(lock),
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

    /// The locks `id` holds or waits for (tests).
    #[cfg(test)]
    pub(crate) fn locks_of(&self, id: TxnId) -> Vec<LockName> {
        let region = NoPreemptGuard::new();
        self.table
            .lock(&region)
            .txns
            .get(&id)
            .map(|e| e.locks.clone())
            .unwrap_or_default()
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
                e.waiting_on,
                e.aborted(),
                e.locks
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lock(item: u64) -> LockName {
        LockName { space: 0, item }
    }

    /// A request that may not wait queues nothing and acts on no holder, even under POW, whose
    /// conflicts with a less urgent holder would otherwise doom it.
    #[test]
    fn a_request_that_may_not_wait_leaves_the_queue_and_holders_as_they_were() {
        use LockMode::{Exclusive as X, Shared as S};
        let m = LockManager::new(LockPolicy::Pow);
        let (low, high) = (1, 2);
        m.register(low, 0, low);
        m.register(high, 3, high);
        assert_eq!(m.acquire(low, lock(1), X), Ok(()));
        assert_eq!(m.try_acquire(high, lock(1), S), Ok(false));
        assert!(m.waits().is_empty());
        assert!(m.locks_of(high).is_empty());
        assert_eq!(m.aborted(low), None);
        assert_eq!(m.try_acquire(high, lock(2), X), Ok(true));
        m.release_all(low);
        assert_eq!(m.try_acquire(high, lock(1), X), Ok(true));
        assert_eq!(m.locks_of(high), [lock(2), lock(1)]);
    }

    /// The requester is told it was a deadlock victim whenever it was one, even when breaking a
    /// second cycle afterwards chose another victim last (it used to be told it was granted).
    #[test]
    fn a_requester_chosen_as_victim_learns_it_even_if_a_later_cycle_chose_another() {
        use LockMode::{Exclusive as X, Shared as S};
        const LOW: u8 = 0;
        const HIGH: u8 = 3;
        let (a, b, c, d, e) = (lock(1), lock(2), lock(3), lock(4), lock(5));
        let m = LockManager::new(LockPolicy::NPrioInherit);
        let (t1, y, t5, t6, r) = (1, 2, 5, 6, 9);
        for (id, level) in [(t1, LOW), (y, HIGH), (t5, LOW), (t6, LOW), (r, HIGH)] {
            m.register(id, level, id);
        }
        // A is shared by t1 and y; B held shared by r, which y asks for exclusive.
        assert_eq!(m.acquire(t1, a, S), Ok(()));
        assert_eq!(m.acquire(y, a, S), Ok(()));
        assert_eq!(m.acquire(r, b, S), Ok(()));
        assert_eq!(m.request(y, b, X, true), Ok(false));
        // t1 waits for E, shared by t5 and y; t5 and t6 hold C and D.
        assert_eq!(m.acquire(t5, e, S), Ok(()));
        assert_eq!(m.acquire(y, e, S), Ok(()));
        assert_eq!(m.acquire(t5, c, X), Ok(()));
        assert_eq!(m.acquire(t6, d, X), Ok(()));
        assert_eq!(m.request(t1, e, X, true), Ok(false));
        // A cycle t5 <-> t6 planted behind the manager's back, as if its detection had missed it:
        // t5 waits for d (t6's), t6 for c (t5's).
        {
            let region = NoPreemptGuard::new();
            let mut table = m.table.lock(&region);
            for (id, name) in [(t5, d), (t6, c)] {
                let me = table.info(id);
                let policy = m.policy;
                let request = table.change_queue(name, |q, info| q.request(&me, X, policy, info));
                assert!(matches!(request, Request::Wait(_)));
                let e = table.txns.get_mut(&id).expect("registered");
                e.locks.push(name);
                e.waiting_on = Some(name);
            }
        }
        // r asks for A (t1's and y's), raises t1 and closes r -> y -> r. From t1, the first
        // start, the search reaches that cycle through y first: r, the younger of two urgent
        // transactions, is its victim. From t1 it then finds t5 -> t6 -> t5, whose victim (t6)
        // is chosen last.
        assert_eq!(m.request(r, a, X, true), Err(LockAbort::Deadlock));
        assert_eq!(m.aborted(r), Some(LockAbort::Deadlock));
        assert_eq!(m.aborted(t6), Some(LockAbort::Deadlock));
        assert_eq!(m.aborted(t1), None, "the raised holder is in no cycle");
        assert!(
            m.locks_of(r).is_empty(),
            "the victim's locks are released at once"
        );
        assert_eq!(m.waiting_on(y), None, "r's B went to y");
        assert_eq!(m.waiting_on(t5), None, "t6's d went to t5");
        for id in [t1, y, t5, t6, r] {
            m.release_all(id);
        }
    }

    /// A holder raised to an urgent waiter's level is still the less urgent one when the two
    /// deadlock: it is the victim, never the waiter it inherited from (which the tie of their
    /// raised levels used to make the victim, being the younger).
    #[test]
    fn a_raised_holder_not_its_urgent_waiter_is_the_deadlock_victim() {
        use LockMode::Exclusive as X;
        const LOW: u8 = 0;
        const HIGH: u8 = 3;
        let (a, b) = (lock(1), lock(2));
        let m = LockManager::new(LockPolicy::NPrioInherit);
        let (holder, urgent) = (1, 2);
        m.register(holder, LOW, 1);
        m.register(urgent, HIGH, 2);
        assert_eq!(m.acquire(holder, a, X), Ok(()));
        assert_eq!(m.acquire(urgent, b, X), Ok(()));
        assert_eq!(
            m.request(urgent, a, X, true),
            Ok(false),
            "waits, raising the holder"
        );
        assert_eq!(m.request(holder, b, X, true), Err(LockAbort::Deadlock));
        assert_eq!(m.aborted(urgent), None);
        assert_eq!(
            m.waiting_on(urgent),
            None,
            "the victim's A went to the urgent one"
        );
        assert_eq!(m.locks_of(urgent), [b, a]);
        m.release_all(holder);
        m.release_all(urgent);
    }
}
