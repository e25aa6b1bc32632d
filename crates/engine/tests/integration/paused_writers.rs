//! A paused writer blocks no one: a low-priority transaction that wrote records and then stays open
//! (paused by a preemption, or just not finished) holds nothing an urgent transaction needs. The
//! urgent one commits at its first attempt; the low-priority one learns at commit that it lost
//! (a typed conflict) and succeeds when retried.

use crate::common;

use overtake_engine::CommitError;
use std::ops::ControlFlow;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use common::preempted::{preempt_once_at, sweep};
use common::*;
use overtake_engine::{
    AbortReason, Database, Error, Isolation, KeyRange, Priority, RetryPolicy, ScanOptions, Table,
    Transaction,
};
use overtake_runtime::preempt::inject::Point;

// As in every program that preempts: allocation runs in regions.
fn add(txn: &mut Transaction<'_>, t: &Table, id: i64, cents: i64) -> overtake_engine::Result<()> {
    let found = txn.update(t, &key(t, id), |r| {
        let v = r.as_ref().decimal_units(BALANCE);
        r.decimal_units(BALANCE, v + cents);
    })?;
    assert!(found, "account {id} exists");
    Ok(())
}

/// Runs `body` once at high priority, without retrying: it must commit at its first attempt.
fn urgent_once(
    db: &Database,
    body: impl FnMut(&mut Transaction<'_>) -> overtake_engine::Result<()>,
) {
    let attempts = db.run(
        Priority::HIGH,
        Isolation::Serializable,
        &RetryPolicy::never(),
        body,
    );
    assert_eq!(attempts.result, Ok(()), "the urgent transaction committed");
    assert_eq!(attempts.conflicts + attempts.validation_failures, 0);
}

#[test]
fn an_urgent_update_commits_over_an_open_low_priority_update() {
    for level in [Isolation::Snapshot, Isolation::Serializable] {
        let (db, t) = with_accounts(3, 100);
        let mut low = db.begin(Priority::LOW, level).expect("begin");
        add(&mut low, &t, 0, 1).expect("buffered");
        assert_eq!(balance(&mut low, &t, 0), Some(101), "it sees its own write");
        // The urgent transaction neither sees nor waits for the open one's write.
        urgent_once(&db, |x| {
            assert_eq!(balance(x, &t, 0), Some(100));
            add(x, &t, 0, 10)
        });
        assert_eq!(
            low.commit(),
            Err(CommitError::Aborted(AbortReason::Conflict)),
            "the first committer wins"
        );
        drop(low);
        let retried = db.run(Priority::LOW, level, &RetryPolicy::never(), |x| {
            add(x, &t, 0, 1)
        });
        assert_eq!(retried.result, Ok(()), "the retry succeeds");
        let mut check = db.begin(Priority::LOW, level).expect("begin");
        assert_eq!(balance(&mut check, &t, 0), Some(111), "no update was lost");
    }
}

#[test]
fn an_urgent_insert_or_delete_commits_over_an_open_low_priority_one() {
    let (db, t) = with_accounts(3, 100);
    let mut low = db
        .begin(Priority::LOW, Isolation::Serializable)
        .expect("begin");
    let row = |id| {
        t.row_builder()
            .int(ID, id)
            .str(OWNER, "o")
            .decimal_units(BALANCE, id)
            .finish()
            .expect("row")
    };
    low.insert(&t, row(7)).expect("buffered insert");
    assert!(low.delete(&t, &key(&t, 1)).expect("buffered delete"));
    add(&mut low, &t, 2, 1).expect("buffered update");
    urgent_once(&db, |x| x.insert(&t, row(7)));
    urgent_once(&db, |x| {
        x.delete(&t, &key(&t, 1)).map(|found| assert!(found))
    });
    assert_eq!(
        low.commit(),
        Err(CommitError::Aborted(AbortReason::Conflict))
    );
    drop(low);
    let mut check = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
    assert_eq!(balance(&mut check, &t, 7), Some(7), "the urgent insert");
    assert_eq!(balance(&mut check, &t, 1), None, "the urgent delete");
    assert_eq!(
        balance(&mut check, &t, 2),
        Some(100),
        "nothing of the loser"
    );
    drop(check);
    db.collect_garbage();
    let census = db.census();
    assert_eq!(census.dangling_index_entries, 0, "{census:?}");
    assert_eq!(census.live_records, 3, "{census:?}");
}

/// The low-priority transaction of the sweep: scans every account, then moves one cent from each
/// to account 0, so it writes what the urgent one writes and reads all of it.
fn scan_then_update(x: &mut Transaction<'_>, t: &Table) -> overtake_engine::Result<()> {
    let mut ids = Vec::new();
    x.scan(t, &KeyRange::all(), ScanOptions::forward(), |r| {
        ids.push(r.int(ID));
        ControlFlow::Continue(())
    })?;
    for &id in ids.iter().filter(|&&id| id != 0) {
        add(x, t, id, -1)?;
        add(x, t, 0, 1)?;
    }
    Ok(())
}

#[test]
fn a_preempted_writer_never_makes_the_urgent_one_retry() {
    const ACCOUNTS: i64 = 4;
    // At every record access of the low-priority transaction in turn, an urgent transaction on
    // the same worker adds 10 to account 0 and 5 to account 2, at its first attempt.
    let low_attempts = Arc::new(AtomicU32::new(0));
    let counted = Arc::clone(&low_attempts);
    let swept = sweep(move |n| {
        let (db, t) = with_accounts(ACCOUNTS, 100);
        let (db, t) = (Arc::new(db), t);
        let (low_db, low_t) = (Arc::clone(&db), Arc::clone(&t));
        let (urgent_db, urgent_t) = (Arc::clone(&db), Arc::clone(&t));
        let counted = Arc::clone(&counted);
        let reached = preempt_once_at(
            Point::RecordAccess,
            n,
            move || {
                let attempts = low_db.run(
                    Priority::LOW,
                    Isolation::Serializable,
                    &RetryPolicy::forever(),
                    |x| scan_then_update(x, &low_t),
                );
                assert_eq!(attempts.result, Ok(()));
                counted.fetch_add(
                    attempts.conflicts + attempts.validation_failures + 1,
                    Ordering::Relaxed,
                );
            },
            move || {
                urgent_once(&urgent_db, |x| {
                    add(x, &urgent_t, 0, 10)?;
                    add(x, &urgent_t, 2, 5)
                })
            },
        );
        let mut check = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
        let total: i64 = (0..ACCOUNTS)
            .filter_map(|id| balance(&mut check, &t, id))
            .sum();
        let urgent = if reached { 15 } else { 0 };
        assert_eq!(
            total,
            ACCOUNTS * 100 + urgent,
            "money is neither lost nor made"
        );
        assert_eq!(
            balance(&mut check, &t, 0),
            Some(100 + ACCOUNTS - 1 + if reached { 10 } else { 0 }),
            "both transactions' updates of account 0 are there"
        );
        reached
    });
    // The scan reads 4 rows and the transfers access 6 records: 10 points, each swept.
    assert!(swept >= 10, "swept {swept} record accesses");
    assert!(
        low_attempts.load(Ordering::Relaxed) > swept,
        "the low-priority transaction lost to the urgent one, and retried"
    );
}

/// The low-priority side must not starve: a writer that keeps losing to urgent writers is promoted
/// after `promote_after` failures, and its promoted attempt reserves what it writes, so the urgent
/// writers that would have overtaken it conflict instead (they retry after it).
#[test]
fn a_writer_that_keeps_losing_is_promoted_and_commits() {
    let (db, t) = with_accounts(3, 100);
    let policy = RetryPolicy::forever().promoting_after(3);
    let mut urgent_results = Vec::new();
    let attempts = db.run(Priority::LOW, Isolation::Serializable, &policy, |x| {
        add(x, &t, 0, 1)?;
        // An urgent writer of the same record commits while this attempt is open (as one on
        // another worker would).
        let urgent = std::thread::scope(|s| {
            s.spawn(|| {
                db.run(
                    Priority::HIGH,
                    Isolation::Serializable,
                    &RetryPolicy::never(),
                    |u| add(u, &t, 0, 10),
                )
                .result
            })
            .join()
            .expect("urgent thread")
        });
        urgent_results.push(urgent);
        Ok(())
    });
    assert_eq!(attempts.result, Ok(()));
    assert_eq!(attempts.conflicts, 3, "lost three times");
    assert_eq!(attempts.promoted, 1, "then ran promoted, once");
    let ok = Ok(());
    let conflict = Err(Error::Aborted(AbortReason::Conflict));
    assert_eq!(
        urgent_results,
        [ok.clone(), ok.clone(), ok, conflict],
        "the urgent writers overtook it until it reserved the record"
    );
    let mut check = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
    assert_eq!(balance(&mut check, &t, 0), Some(100 + 3 * 10 + 1));
    drop(check);
    db.collect_garbage();
    let census = db.census();
    assert_eq!(census.unreclaimed_versions, 0, "{census:?}");
    assert_eq!(census.linked_versions, 3, "{census:?}");
}

#[test]
fn a_promoted_attempt_that_fails_leaves_no_reservation_behind() {
    let (db, t) = with_accounts(3, 100);
    let attempts = db.run(
        Priority::LOW,
        Isolation::Serializable,
        &RetryPolicy::never().promoting_after(0),
        |x| {
            add(x, &t, 1, 1)?;
            assert!(x.delete(&t, &key(&t, 2))?);
            Err::<(), _>(x.rollback())
        },
    );
    assert_eq!(attempts.promoted, 1);
    assert_eq!(
        attempts.result,
        Err(Error::Aborted(AbortReason::UserRollback))
    );
    urgent_once(&db, |x| {
        add(x, &t, 1, 10)?;
        x.delete(&t, &key(&t, 2)).map(|found| assert!(found))
    });
}
