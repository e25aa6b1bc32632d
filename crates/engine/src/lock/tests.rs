//! Grant orders and abort decisions on hand-built lock queues, policy by policy.

use std::collections::HashMap;
use std::time::Duration;

use super::*;

const LOW: u8 = 0;
const HIGH: u8 = 3;

/// Transactions 1..=n with the given levels, begun in id order, running, blocking no one.
struct Txns(HashMap<TxnId, TxnInfo>);

impl Txns {
    fn new(levels: &[(TxnId, u8)]) -> Self {
        Txns(
            levels
                .iter()
                .map(|&(id, level)| {
                    let info = TxnInfo {
                        id,
                        level,
                        began: id,
                        waiting: false,
                        paused: false,
                        blocking: 0,
                    };
                    (id, info)
                })
                .collect(),
        )
    }

    fn with(mut self, id: TxnId, change: impl FnOnce(&mut TxnInfo)) -> Self {
        change(self.0.get_mut(&id).expect("known transaction"));
        self
    }

    fn info(&self) -> impl Fn(TxnId) -> TxnInfo + '_ {
        |id| self.0[&id]
    }

    fn request(&self, q: &mut LockQueue, id: TxnId, mode: LockMode, policy: LockPolicy) -> Request {
        q.request(&self.0[&id], mode, policy, &self.info())
    }
}

use LockMode::{Exclusive as X, Shared as S};

fn waits(action: ConflictAction) -> Request {
    Request::Wait(action)
}

#[test]
fn standard_shares_shared_locks_and_grants_in_arrival_order() {
    let t = Txns::new(&[(1, LOW), (2, LOW), (3, HIGH), (4, LOW)]);
    let p = LockPolicy::Standard;
    let mut q = LockQueue::default();
    assert_eq!(t.request(&mut q, 1, S, p), Request::Granted);
    assert_eq!(t.request(&mut q, 2, S, p), Request::Granted);
    assert_eq!(t.request(&mut q, 3, X, p), waits(ConflictAction::default()));
    // Compatible with the holders, but behind a waiter: no overtaking.
    assert_eq!(t.request(&mut q, 4, S, p), waits(ConflictAction::default()));
    assert_eq!(
        q.release(1, p, &t.info()),
        Vec::<TxnId>::new(),
        "2 still holds it"
    );
    assert_eq!(q.release(2, p, &t.info()), vec![3]);
    assert_eq!(q.holders(), vec![(3, X)]);
    assert_eq!(q.release(3, p, &t.info()), vec![4]);
    assert!(q.waiting().is_empty());
}

#[test]
fn nprio_grants_the_most_urgent_waiter_first_and_lets_it_pass_less_urgent_ones() {
    let t = Txns::new(&[(1, LOW), (2, LOW), (3, HIGH), (4, HIGH)]);
    let p = LockPolicy::NPrio;
    let mut q = LockQueue::default();
    assert_eq!(t.request(&mut q, 1, X, p), Request::Granted);
    assert!(matches!(t.request(&mut q, 2, X, p), Request::Wait(_)));
    assert!(matches!(t.request(&mut q, 3, X, p), Request::Wait(_)));
    assert_eq!(q.release(1, p, &t.info()), vec![3], "urgent before earlier");
    assert_eq!(q.release(3, p, &t.info()), vec![2]);
    // A shared request compatible with the holder passes a less urgent waiter under NPrio,
    // not under Standard.
    let mut q = LockQueue::default();
    assert_eq!(t.request(&mut q, 1, S, p), Request::Granted);
    assert!(matches!(t.request(&mut q, 2, X, p), Request::Wait(_)));
    assert_eq!(t.request(&mut q, 4, S, p), Request::Granted);
    let mut q = LockQueue::default();
    let p = LockPolicy::Standard;
    assert_eq!(t.request(&mut q, 1, S, p), Request::Granted);
    assert!(matches!(t.request(&mut q, 2, X, p), Request::Wait(_)));
    assert!(matches!(t.request(&mut q, 4, S, p), Request::Wait(_)));
}

#[test]
fn an_upgrade_is_granted_to_a_sole_holder_and_otherwise_goes_first() {
    let t = Txns::new(&[(1, LOW), (2, LOW), (3, HIGH)]);
    for p in [LockPolicy::Standard, LockPolicy::NPrio] {
        let mut q = LockQueue::default();
        assert_eq!(t.request(&mut q, 1, S, p), Request::Granted);
        assert_eq!(t.request(&mut q, 1, X, p), Request::Granted, "{p:?}");
        assert_eq!(q.holders(), vec![(1, X)]);
        assert_eq!(t.request(&mut q, 1, S, p), Request::Granted, "X covers S");

        let mut q = LockQueue::default();
        assert_eq!(t.request(&mut q, 1, S, p), Request::Granted);
        assert_eq!(t.request(&mut q, 2, S, p), Request::Granted);
        assert!(matches!(t.request(&mut q, 3, X, p), Request::Wait(_)));
        assert!(matches!(t.request(&mut q, 1, X, p), Request::Wait(_)));
        assert_eq!(q.waits_for(1), vec![2]);
        assert_eq!(
            q.release(2, p, &t.info()),
            vec![1],
            "{p:?}: the upgrade first"
        );
        assert_eq!(q.holders(), vec![(1, X)]);
        assert_eq!(q.release(1, p, &t.info()), vec![3]);
    }
}

#[test]
fn nprio_inherit_raises_only_less_urgent_holders_to_the_waiters_level() {
    let t = Txns::new(&[(1, LOW), (2, HIGH), (3, 2)]);
    let p = LockPolicy::NPrioInherit;
    let mut q = LockQueue::default();
    t.request(&mut q, 1, S, p);
    t.request(&mut q, 2, S, p);
    let expected = ConflictAction {
        raise: vec![(1, 2)],
        ..ConflictAction::default()
    };
    assert_eq!(t.request(&mut q, 3, X, p), waits(expected));
}

#[test]
fn pabort_aborts_the_less_urgent_holders_at_once() {
    let t = Txns::new(&[(1, LOW), (2, HIGH), (3, 2)]);
    let p = LockPolicy::PAbort;
    let mut q = LockQueue::default();
    t.request(&mut q, 1, S, p);
    t.request(&mut q, 2, S, p);
    let expected = ConflictAction {
        abort: vec![1],
        ..ConflictAction::default()
    };
    assert_eq!(t.request(&mut q, 3, X, p), waits(expected));
    // The victim's rollback releases the lock; the more urgent holder still blocks.
    assert_eq!(q.release(1, p, &t.info()), Vec::<TxnId>::new());
    assert_eq!(q.release(2, p, &t.info()), vec![3]);
}

#[test]
fn pow_aborts_a_holder_only_if_it_waits_and_otherwise_raises_and_dooms_it() {
    // The paper's example: L1 waits for another lock, L2 runs (and will block later), L3 runs;
    // here a holder paused by CPU preemption counts as waiting too.
    let t = Txns::new(&[(1, LOW), (2, LOW), (3, LOW), (4, HIGH)])
        .with(1, |i| i.waiting = true)
        .with(3, |i| i.paused = true);
    let p = LockPolicy::Pow;
    let mut q = LockQueue::default();
    for l in 1..=3 {
        assert_eq!(t.request(&mut q, l, S, p), Request::Granted);
    }
    let expected = ConflictAction {
        abort: vec![1, 3],
        raise: vec![(2, HIGH)],
        doom: vec![2],
        ..ConflictAction::default()
    };
    assert_eq!(t.request(&mut q, 4, X, p), waits(expected));
    // An equally urgent holder is neither aborted nor raised.
    let t = Txns::new(&[(1, HIGH), (2, HIGH)]).with(1, |i| i.waiting = true);
    let mut q = LockQueue::default();
    t.request(&mut q, 1, X, p);
    assert_eq!(t.request(&mut q, 2, X, p), waits(ConflictAction::default()));
}

#[test]
fn conditional_restart_gives_less_urgent_holders_a_reprieve() {
    let reprieve = Duration::from_micros(300);
    let t = Txns::new(&[(1, LOW), (2, HIGH)]);
    let p = LockPolicy::ConditionalRestart { reprieve };
    let mut q = LockQueue::default();
    t.request(&mut q, 1, X, p);
    let expected = ConflictAction {
        abort_after: Some((reprieve, vec![1])),
        ..ConflictAction::default()
    };
    assert_eq!(t.request(&mut q, 2, X, p), waits(expected));
}

#[test]
fn wdl1_breaks_every_wait_chain_of_three_at_its_middle() {
    let p = LockPolicy::Wdl1;
    // 3 -> 2 (the holder) -> elsewhere: the waiting holder goes.
    let t = Txns::new(&[(1, LOW), (2, HIGH), (3, LOW)]).with(2, |i| i.waiting = true);
    let mut q = LockQueue::default();
    t.request(&mut q, 2, X, p);
    let expected = ConflictAction {
        abort: vec![2],
        ..ConflictAction::default()
    };
    assert_eq!(
        t.request(&mut q, 3, X, p),
        waits(expected),
        "priorities ignored"
    );
    // Someone waits for 1, which would now wait: 1 goes instead, and is not queued.
    let t = Txns::new(&[(1, HIGH), (2, LOW)]).with(1, |i| i.blocking = 1);
    let mut q = LockQueue::default();
    t.request(&mut q, 2, X, p);
    assert_eq!(t.request(&mut q, 1, X, p), Request::Abort);
    assert!(q.waiting().is_empty());
}

#[test]
fn cats_grants_first_the_waiter_that_blocks_the_most() {
    let t = Txns::new(&[(1, LOW), (2, HIGH), (3, LOW), (4, LOW)])
        .with(3, |i| i.blocking = 5)
        .with(4, |i| i.blocking = 2);
    let p = LockPolicy::Cats;
    let mut q = LockQueue::default();
    t.request(&mut q, 1, X, p);
    for w in 2..=4 {
        assert!(matches!(t.request(&mut q, w, X, p), Request::Wait(_)));
    }
    assert_eq!(q.release(1, p, &t.info()), vec![3]);
    assert_eq!(q.release(3, p, &t.info()), vec![4]);
    assert_eq!(q.release(4, p, &t.info()), vec![2]);
}

#[test]
fn a_waiter_that_gives_up_leaves_the_queue() {
    let t = Txns::new(&[(1, LOW), (2, LOW), (3, LOW)]);
    let p = LockPolicy::Standard;
    let mut q = LockQueue::default();
    t.request(&mut q, 1, X, p);
    t.request(&mut q, 2, X, p);
    t.request(&mut q, 3, S, p);
    assert_eq!(q.release(2, p, &t.info()), Vec::<TxnId>::new());
    assert_eq!(q.waiting(), vec![3]);
    assert_eq!(q.release(1, p, &t.info()), vec![3]);
}

#[test]
fn a_deadlock_is_found_from_the_transaction_that_closed_it_and_its_victim_is_least_urgent() {
    let t = Txns::new(&[(1, HIGH), (2, LOW), (3, LOW)]);
    let p = LockPolicy::Standard;
    let (mut a, mut b, mut c) = (
        LockQueue::default(),
        LockQueue::default(),
        LockQueue::default(),
    );
    t.request(&mut a, 1, X, p);
    t.request(&mut b, 2, X, p);
    t.request(&mut c, 3, X, p);
    t.request(&mut b, 1, X, p); // 1 waits for 2
    t.request(&mut c, 2, S, p); // 2 waits for 3
    let queues = [&a, &b, &c];
    let waits_for =
        |txn: TxnId| -> Vec<TxnId> { queues.iter().flat_map(|q| q.waits_for(txn)).collect() };
    assert_eq!(find_cycle(1, &waits_for), None, "no cycle yet");
    t.request(&mut a, 3, X, p); // 3 waits for 1: closed
    let queues = [&a, &b, &c];
    let waits_for =
        |txn: TxnId| -> Vec<TxnId> { queues.iter().flat_map(|q| q.waits_for(txn)).collect() };
    let cycle = find_cycle(3, &waits_for).expect("a cycle through 3");
    assert_eq!(cycle, vec![3, 1, 2]);
    // Both 2 and 3 are least urgent; 3 began last.
    assert_eq!(choose_victim(&cycle, &t.info()), Some(3));
    let t = t.with(3, |i| i.level = HIGH);
    assert_eq!(choose_victim(&cycle, &t.info()), Some(2));
}
