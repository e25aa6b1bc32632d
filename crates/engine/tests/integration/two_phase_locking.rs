//! The two-phase-locking mode: the Hermitage anomalies (see hermitage.rs) under locks, where a
//! conflicting step blocks until the holder ends instead of failing, plus deadlocks, the
//! preemptive policies on real transactions, and lock statistics.
//!
//! Every test starts from `test(id, value)` = {(1, 10), (2, 20)} with an index on `value`. Each
//! transaction runs in its own session (thread); a step that waits for a lock is seen waiting in
//! the lock table, and the test goes on with the others, as Hermitage does with two terminals.

use crate::common;

use std::ops::ControlFlow;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;

use common::sessions::{Outcome, Progress, Session};
use overtake_engine::{
    AbortReason, Concurrency, Database, Error, Isolation, KeyRange, LockPolicy, Options, Priority,
    RetryPolicy, ScanOptions, Table, Transaction,
};

use common::steps::{aborted, committed, done, insert, read, write};
use common::{HERMITAGE_ID as ID, HERMITAGE_VALUE as VALUE};

fn setup(policy: LockPolicy) -> (Database, Arc<Table>) {
    let db = Database::in_memory({
        let mut options = Options::default();
        options.concurrency = Concurrency::TwoPhaseLocking(policy);
        options
    });
    let t = common::hermitage_table(&db);
    (db, t)
}

/// A step: the values of every row whose value satisfies `predicate` (a scan of the table), as
/// id, value pairs flattened.
fn select_where(
    t: &Arc<Table>,
    predicate: fn(i64) -> bool,
) -> impl for<'a, 'b> FnOnce(&'a mut Transaction<'b>) -> Outcome + Send + use<> {
    let t = Arc::clone(t);
    move |txn| {
        let mut out = Vec::new();
        txn.scan(&t, &KeyRange::all(), ScanOptions::forward(), |r| {
            if predicate(r.int(VALUE)) {
                out.extend([r.int(ID), r.int(VALUE)]);
            }
            ControlFlow::Continue(())
        })?;
        Ok(out)
    }
}

/// A step: `select id from test where value = ?`, through the index.
fn ids_with_value(
    t: &Arc<Table>,
    value: i64,
) -> impl for<'a, 'b> FnOnce(&'a mut Transaction<'b>) -> Outcome + Send + use<> {
    let t = Arc::clone(t);
    move |txn| {
        let by_value = t.index("by_value").expect("index");
        let range = KeyRange::prefix(t.index_key(by_value).int(value).prefix().expect("prefix"));
        let mut out = Vec::new();
        txn.scan_index(&t, by_value, &range, ScanOptions::forward(), |r| {
            out.push(r.int(ID));
            ControlFlow::Continue(())
        })?;
        Ok(out)
    }
}

/// A step: `update test set value = value + 10` (every row, through a scan).
fn add_ten_to_all(
    t: &Arc<Table>,
) -> impl for<'a, 'b> FnOnce(&'a mut Transaction<'b>) -> Outcome + Send + use<> {
    let t = Arc::clone(t);
    move |txn| {
        txn.update_range(&t, &KeyRange::all(), ScanOptions::forward(), |r| {
            let v = r.as_ref().int(VALUE);
            r.int(VALUE, v + 10);
        })?;
        Ok(Vec::new())
    }
}

/// Two low-priority sessions, `t1` begun first (the older).
fn two_sessions<'scope, 'env>(
    s: &'scope std::thread::Scope<'scope, 'env>,
    db: &'env Database,
) -> (Session<'scope>, Session<'scope>) {
    (
        Session::begin(s, db, Priority::LOW),
        Session::begin(s, db, Priority::LOW),
    )
}

const STANDARD: LockPolicy = LockPolicy::Standard;

#[test]
fn g0_write_cycles_serialize_the_writers() {
    let (db, t) = setup(STANDARD);
    std::thread::scope(|s| {
        let (mut t1, mut t2) = two_sessions(s, &db);
        assert_eq!(t1.run(&db, write(&t, 1, 11)), done(&[]));
        assert_eq!(t2.run(&db, write(&t, 1, 12)), Progress::Blocked);
        assert_eq!(t1.run(&db, write(&t, 2, 21)), done(&[]));
        assert_eq!(t1.commit(&db), done(&[]));
        assert_eq!(t2.unblocked(), Ok(vec![]));
        assert_eq!(t2.run(&db, write(&t, 2, 22)), done(&[]));
        assert_eq!(t2.commit(&db), done(&[]));
        t1.close();
        t2.close();
    });
    assert_eq!(committed(&db, &t), [(1, 12), (2, 22)]);
}

#[test]
fn g1a_a_reader_waits_out_a_write_that_rolls_back() {
    let (db, t) = setup(STANDARD);
    std::thread::scope(|s| {
        let (mut t1, mut t2) = two_sessions(s, &db);
        assert_eq!(t1.run(&db, write(&t, 1, 101)), done(&[]));
        assert_eq!(t2.run(&db, select_where(&t, |_| true)), Progress::Blocked);
        t1.close(); // rolls back
        assert_eq!(t2.unblocked(), Ok(vec![1, 10, 2, 20]));
        assert_eq!(t2.commit(&db), done(&[]));
        t2.close();
    });
}

#[test]
fn g1b_a_reader_sees_only_the_final_write() {
    let (db, t) = setup(STANDARD);
    std::thread::scope(|s| {
        let (mut t1, mut t2) = two_sessions(s, &db);
        assert_eq!(t1.run(&db, write(&t, 1, 101)), done(&[]));
        assert_eq!(t2.run(&db, read(&t, 1)), Progress::Blocked);
        assert_eq!(t1.run(&db, write(&t, 1, 11)), done(&[]));
        assert_eq!(t1.commit(&db), done(&[]));
        assert_eq!(t2.unblocked(), Ok(vec![11]));
        assert_eq!(t2.commit(&db), done(&[]));
        t1.close();
        t2.close();
    });
}

#[test]
fn g1c_circular_reads_deadlock_and_the_younger_goes() {
    let (db, t) = setup(STANDARD);
    std::thread::scope(|s| {
        let (mut t1, mut t2) = two_sessions(s, &db);
        assert_eq!(t1.run(&db, write(&t, 1, 11)), done(&[]));
        assert_eq!(t2.run(&db, write(&t, 2, 22)), done(&[]));
        assert_eq!(t1.run(&db, read(&t, 2)), Progress::Blocked);
        // Closing the cycle: t2 is the younger, so it is the victim, and t1 reads 20.
        assert_eq!(
            t2.run(&db, read(&t, 1)),
            Progress::Done(aborted(AbortReason::Deadlock))
        );
        assert_eq!(t1.unblocked(), Ok(vec![20]));
        assert_eq!(t1.commit(&db), done(&[]));
        t1.close();
        t2.close();
    });
    assert_eq!(committed(&db, &t), [(1, 11), (2, 20)]);
}

#[test]
fn otv_a_reader_sees_all_of_one_writer() {
    let (db, t) = setup(STANDARD);
    std::thread::scope(|s| {
        let (mut t1, mut t2) = two_sessions(s, &db);
        assert_eq!(t1.run(&db, write(&t, 1, 11)), done(&[]));
        assert_eq!(t1.run(&db, write(&t, 2, 19)), done(&[]));
        assert_eq!(t2.run(&db, write(&t, 1, 12)), Progress::Blocked);
        assert_eq!(t1.commit(&db), done(&[]));
        assert_eq!(t2.unblocked(), Ok(vec![]));
        let mut t3 = Session::begin(s, &db, Priority::LOW);
        assert_eq!(t3.run(&db, read(&t, 1)), Progress::Blocked);
        assert_eq!(t2.run(&db, write(&t, 2, 18)), done(&[]));
        assert_eq!(t2.commit(&db), done(&[]));
        assert_eq!(t3.unblocked(), Ok(vec![12]));
        assert_eq!(t3.run(&db, read(&t, 2)), done(&[18]));
        assert_eq!(t3.commit(&db), done(&[]));
        for session in [t1, t2, t3] {
            session.close();
        }
    });
}

#[test]
fn pmp_an_insert_into_a_scanned_range_waits_for_the_scanner() {
    let (db, t) = setup(STANDARD);
    std::thread::scope(|s| {
        let (mut t1, mut t2) = two_sessions(s, &db);
        assert_eq!(t1.run(&db, ids_with_value(&t, 30)), done(&[]));
        assert_eq!(t2.run(&db, insert(&t, 3, 30)), done(&[]));
        // The new index entry's gap is guarded by the scanned range's successor.
        assert_eq!(t2.commit(&db), Progress::Blocked);
        assert_eq!(t1.run(&db, ids_with_value(&t, 30)), done(&[]));
        assert_eq!(t1.commit(&db), done(&[]));
        assert_eq!(t2.unblocked(), Ok(vec![]));
        t1.close();
        t2.close();
    });
    assert_eq!(committed(&db, &t), [(1, 10), (2, 20), (3, 30)]);
}

#[test]
fn pmp_write_a_predicate_read_sees_the_writers_result() {
    let (db, t) = setup(STANDARD);
    std::thread::scope(|s| {
        let (mut t1, mut t2) = two_sessions(s, &db);
        assert_eq!(t1.run(&db, add_ten_to_all(&t)), done(&[]));
        assert_eq!(
            t2.run(&db, select_where(&t, |v| v == 20)),
            Progress::Blocked
        );
        assert_eq!(t1.commit(&db), done(&[]));
        assert_eq!(t2.unblocked(), Ok(vec![1, 20]));
        assert_eq!(t2.commit(&db), done(&[]));
        t1.close();
        t2.close();
    });
}

#[test]
fn p4_lost_update_is_a_deadlock_on_the_upgrade() {
    let (db, t) = setup(STANDARD);
    std::thread::scope(|s| {
        let (mut t1, mut t2) = two_sessions(s, &db);
        assert_eq!(t1.run(&db, read(&t, 1)), done(&[10]));
        assert_eq!(t2.run(&db, read(&t, 1)), done(&[10]));
        assert_eq!(t1.run(&db, write(&t, 1, 11)), Progress::Blocked);
        assert_eq!(
            t2.run(&db, write(&t, 1, 11)),
            Progress::Done(aborted(AbortReason::Deadlock))
        );
        assert_eq!(t1.unblocked(), Ok(vec![]));
        assert_eq!(t1.commit(&db), done(&[]));
        t1.close();
        t2.close();
    });
    assert_eq!(committed(&db, &t), [(1, 11), (2, 20)]);
}

#[test]
fn g_single_read_skew_is_prevented_by_the_readers_locks() {
    let (db, t) = setup(STANDARD);
    std::thread::scope(|s| {
        let (mut t1, mut t2) = two_sessions(s, &db);
        assert_eq!(t1.run(&db, read(&t, 1)), done(&[10]));
        assert_eq!(t2.run(&db, read(&t, 1)), done(&[10]));
        assert_eq!(t2.run(&db, read(&t, 2)), done(&[20]));
        assert_eq!(t2.run(&db, write(&t, 1, 12)), Progress::Blocked);
        assert_eq!(t1.run(&db, read(&t, 2)), done(&[20]));
        assert_eq!(t1.commit(&db), done(&[]));
        assert_eq!(t2.unblocked(), Ok(vec![]));
        assert_eq!(t2.run(&db, write(&t, 2, 18)), done(&[]));
        assert_eq!(t2.commit(&db), done(&[]));
        t1.close();
        t2.close();
    });
    assert_eq!(committed(&db, &t), [(1, 12), (2, 18)]);
}

#[test]
fn g2_item_write_skew_deadlocks() {
    let (db, t) = setup(STANDARD);
    std::thread::scope(|s| {
        let (mut t1, mut t2) = two_sessions(s, &db);
        for session in [&mut t1, &mut t2] {
            assert_eq!(session.run(&db, read(&t, 1)), done(&[10]));
            assert_eq!(session.run(&db, read(&t, 2)), done(&[20]));
        }
        assert_eq!(t1.run(&db, write(&t, 1, 11)), Progress::Blocked);
        assert_eq!(
            t2.run(&db, write(&t, 2, 21)),
            Progress::Done(aborted(AbortReason::Deadlock))
        );
        assert_eq!(t1.unblocked(), Ok(vec![]));
        assert_eq!(t1.commit(&db), done(&[]));
        t1.close();
        t2.close();
    });
    assert_eq!(committed(&db, &t), [(1, 11), (2, 20)]);
}

#[test]
fn g2_predicate_write_skew_deadlocks_on_the_gap() {
    let (db, t) = setup(STANDARD);
    std::thread::scope(|s| {
        let (mut t1, mut t2) = two_sessions(s, &db);
        for session in [&mut t1, &mut t2] {
            assert_eq!(
                session.run(&db, select_where(&t, |v| v % 3 == 0)),
                done(&[])
            );
        }
        assert_eq!(t1.run(&db, insert(&t, 3, 30)), done(&[]));
        assert_eq!(t2.run(&db, insert(&t, 4, 42)), done(&[]));
        assert_eq!(t1.commit(&db), Progress::Blocked);
        assert_eq!(
            t2.commit(&db),
            Progress::Done(aborted(AbortReason::Deadlock))
        );
        assert_eq!(t1.unblocked(), Ok(vec![]));
        t1.close();
        t2.close();
    });
    assert_eq!(committed(&db, &t), [(1, 10), (2, 20), (3, 30)]);
}

#[test]
fn a_deadlock_takes_the_less_urgent_transaction_even_if_older() {
    let (db, t) = setup(STANDARD);
    std::thread::scope(|s| {
        let mut low = Session::begin(s, &db, Priority::LOW);
        let mut high = Session::begin(s, &db, Priority::HIGH);
        assert_eq!(low.run(&db, write(&t, 1, 11)), done(&[]));
        assert_eq!(high.run(&db, write(&t, 2, 22)), done(&[]));
        assert_eq!(high.run(&db, read(&t, 1)), Progress::Blocked);
        assert_eq!(
            low.run(&db, read(&t, 2)),
            Progress::Done(aborted(AbortReason::Deadlock))
        );
        assert_eq!(high.unblocked(), Ok(vec![10]));
        assert_eq!(high.commit(&db), done(&[]));
        low.close();
        high.close();
    });
}

#[test]
fn pabort_takes_the_lock_from_a_running_holder_which_learns_it_at_commit() {
    let (db, t) = setup(LockPolicy::PAbort);
    std::thread::scope(|s| {
        let mut low = Session::begin(s, &db, Priority::LOW);
        let mut high = Session::begin(s, &db, Priority::HIGH);
        assert_eq!(low.run(&db, write(&t, 1, 11)), done(&[]));
        // The holder's lock is revoked at the request: the urgent write never waits.
        assert_eq!(high.run(&db, write(&t, 1, 12)), done(&[]));
        assert_eq!(high.commit(&db), done(&[]));
        assert_eq!(
            low.commit(&db),
            Progress::Done(aborted(AbortReason::Preempted))
        );
        low.close();
        high.close();
    });
    assert_eq!(committed(&db, &t), [(1, 12), (2, 20)]);
}

/// A holder whose locks were revoked never reads what the urgent transaction wrote under them:
/// its next read fails with the revocation, on a row it had read before or on any other.
#[test]
fn a_revoked_holder_reads_nothing_more() {
    let (db, t) = setup(LockPolicy::PAbort);
    std::thread::scope(|s| {
        let mut low = Session::begin(s, &db, Priority::LOW);
        let mut high = Session::begin(s, &db, Priority::HIGH);
        assert_eq!(low.run(&db, read(&t, 1)), done(&[10]));
        assert_eq!(high.run(&db, write(&t, 1, 12)), done(&[]));
        assert_eq!(high.commit(&db), done(&[]));
        assert_eq!(
            low.run(&db, read(&t, 1)),
            Progress::Done(aborted(AbortReason::Preempted)),
            "not the urgent transaction's 12"
        );
        assert_eq!(
            low.run(&db, read(&t, 2)),
            Progress::Done(aborted(AbortReason::Preempted))
        );
        low.close();
        high.close();
    });
}

#[test]
fn pow_lets_a_running_holder_finish_but_aborts_it_when_it_waits() {
    let (db, t) = setup(LockPolicy::Pow);
    std::thread::scope(|s| {
        // A running holder inherits and commits.
        let mut low = Session::begin(s, &db, Priority::LOW);
        let mut high = Session::begin(s, &db, Priority::HIGH);
        assert_eq!(low.run(&db, write(&t, 1, 11)), done(&[]));
        assert_eq!(high.run(&db, write(&t, 1, 12)), Progress::Blocked);
        assert_eq!(low.commit(&db), done(&[]));
        assert_eq!(high.unblocked(), Ok(vec![]));
        assert_eq!(high.commit(&db), done(&[]));
        low.close();
        high.close();
        assert_eq!(committed(&db, &t), [(1, 12), (2, 20)]);

        // A holder that blocked an urgent transaction and then has to wait itself is aborted.
        let mut other = Session::begin(s, &db, Priority::LOW);
        let mut low = Session::begin(s, &db, Priority::LOW);
        let mut high = Session::begin(s, &db, Priority::HIGH);
        assert_eq!(other.run(&db, write(&t, 2, 0)), done(&[]));
        assert_eq!(low.run(&db, write(&t, 1, 13)), done(&[]));
        assert_eq!(high.run(&db, read(&t, 1)), Progress::Blocked);
        assert_eq!(
            low.run(&db, read(&t, 2)),
            Progress::Done(aborted(AbortReason::Preempted))
        );
        assert_eq!(high.unblocked(), Ok(vec![12]));
        for session in [other, low, high] {
            session.close();
        }
    });
}

#[test]
fn lock_waits_are_listed_and_counted() {
    let (db, t) = setup(LockPolicy::NPrio);
    std::thread::scope(|s| {
        let mut holder = Session::begin(s, &db, Priority::LOW);
        let mut waiter = Session::begin(s, &db, Priority::HIGH);
        assert_eq!(holder.run(&db, write(&t, 1, 11)), done(&[]));
        assert_eq!(waiter.run(&db, read(&t, 1)), Progress::Blocked);
        let waits = db.lock_waits();
        assert_eq!(waits.len(), 1);
        assert_eq!(waits[0].waiter, waiter.id);
        assert_eq!(waits[0].level, Priority::HIGH.level() as u8);
        assert_eq!(waits[0].holders, [(holder.id, true)]);
        // The lock table keeps only the key's hash; the listing finds the key again.
        assert_eq!(waits[0].lock, format!("{} primary key (1)", t.name()));
        assert_eq!(holder.commit(&db), done(&[]));
        assert_eq!(waiter.unblocked(), Ok(vec![11]));
        let stats = waiter.run(&db, |txn| {
            let s = txn.lock_stats();
            Ok(vec![i64::from(s.waits), i64::from(s.excess <= s.queue)])
        });
        assert_eq!(stats, done(&[1, 1]));
        holder.close();
        waiter.close();
    });
    assert!(db.lock_waits().is_empty());
}

#[test]
fn run_retries_a_deadlock_victim_and_counts_it() {
    let (db, t) = setup(STANDARD);
    // Not a race: the victim's first attempt is made to deadlock with a session deterministically.
    std::thread::scope(|s| {
        let mut other = Session::begin(s, &db, Priority::HIGH);
        assert_eq!(other.run(&db, write(&t, 2, 22)), done(&[]));
        let mut first = true;
        let (db, t) = (&db, &t);
        let victim = s.spawn(move || {
            db.run(
                Priority::LOW,
                Isolation::Serializable,
                &RetryPolicy::default(),
                |txn| {
                    let k1 = t.key().int(1).finish()?;
                    txn.update(t, &k1, |r| {
                        r.int(VALUE, 11);
                    })?;
                    let k2 = t.key().int(2).finish()?;
                    if std::mem::take(&mut first) {
                        // Waits for `other`, which then closes the cycle.
                        txn.get(t, &k2, |_| ())?;
                    }
                    Ok(())
                },
            )
        });
        // Wait until the first attempt waits for `other`, then make `other` close the cycle.
        while db.lock_waits().is_empty() {
            std::thread::sleep(Duration::from_millis(1));
        }
        // Closing the cycle makes the victim roll back; `other` then reads the old value, waiting
        // for the rollback or not (it may be over before the step is seen waiting).
        let read_1 = match other.run(db, read(t, 1)) {
            Progress::Blocked => other.unblocked(),
            Progress::Done(outcome) => outcome,
        };
        assert_eq!(read_1, Ok(vec![10]));
        // The retry waits for `other`'s lock on row 1.
        assert_eq!(other.commit(db), done(&[]));
        let attempts = victim.join().expect("victim");
        assert_eq!(attempts.result, Ok(()));
        assert_eq!(attempts.deadlocks, 1);
        other.close();
    });
    assert_eq!(committed(&db, &t), [(1, 11), (2, 22)]);
}

/// WDL1: a requester that would wait for a waiting holder begun before it is aborted instead,
/// and its retry (`Database::run`) waits for that holder to end rather than meet the same
/// chain again at once.
#[test]
fn wdl1_aborts_a_younger_requester_whose_retry_waits_for_the_older_holder() {
    let (db, t) = setup(LockPolicy::Wdl1);
    let attempts = AtomicU32::new(0);
    let first_aborted = AtomicBool::new(false);
    let holder_ending = AtomicBool::new(false);
    std::thread::scope(|s| {
        let mut oldest = Session::begin(s, &db, Priority::LOW);
        let mut holder = Session::begin(s, &db, Priority::LOW);
        assert_eq!(oldest.run(&db, write(&t, 2, 21)), done(&[]));
        assert_eq!(holder.run(&db, write(&t, 1, 11)), done(&[]));
        assert_eq!(holder.run(&db, write(&t, 2, 22)), Progress::Blocked);
        let retried = s.spawn(|| {
            db.run(
                Priority::LOW,
                Isolation::Serializable,
                &RetryPolicy::default(),
                |txn| {
                    let attempt = attempts.fetch_add(1, Ordering::SeqCst) + 1;
                    if attempt > 1 {
                        assert!(holder_ending.load(Ordering::SeqCst), "retried too early");
                    }
                    let key = t.key().int(1).finish().expect("key");
                    let updated = txn.update(&t, &key, |r| {
                        r.int(VALUE, 13);
                    });
                    if attempt == 1 {
                        assert_eq!(updated, Err(Error::Aborted(AbortReason::WaitDepth)));
                        first_aborted.store(true, Ordering::SeqCst);
                    }
                    updated.map(|_| ())
                },
            )
        });
        while !first_aborted.load(Ordering::SeqCst) {
            std::thread::yield_now();
        }
        assert_eq!(oldest.commit(&db), done(&[]));
        assert_eq!(holder.unblocked(), Ok(vec![]));
        holder_ending.store(true, Ordering::SeqCst);
        assert_eq!(holder.commit(&db), done(&[]));
        let report = retried.join().expect("retrying thread");
        assert_eq!(report.result, Ok(()));
        assert_eq!(report.lock_preemptions, 1);
        assert_eq!(attempts.load(Ordering::SeqCst), 2);
        oldest.close();
        holder.close();
    });
    assert_eq!(committed(&db, &t), [(1, 13), (2, 22)]);
}
