//! `Transaction::update_range`: an update of every row in a key range, found by the scan.

use crate::common;

use overtake_engine::CommitError;
use std::ops::Bound;

use common::{BALANCE, ID, balance, key, with_accounts};
use overtake_engine::{
    AbortReason, Database, Error, Isolation, KeyRange, Priority, ScanOptions, Table,
};

fn ids(t: &Table, from: i64, to: i64) -> KeyRange {
    KeyRange::new(Bound::Included(key(t, from)), Bound::Included(key(t, to)))
}

fn balances(db: &Database, t: &Table, n: i64) -> Vec<Option<i64>> {
    let mut txn = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
    (0..n).map(|id| balance(&mut txn, t, id)).collect()
}

#[test]
fn every_row_in_the_range_is_updated_own_writes_included_and_no_other() {
    let (db, t) = with_accounts(10, 100);
    let mut txn = db
        .begin(Priority::HIGH, Isolation::Serializable)
        .expect("begin");
    // Written by this transaction before: one updated, one deleted.
    assert!(
        txn.update(&t, &key(&t, 4), |r| {
            r.decimal_units(BALANCE, 101);
        })
        .expect("update")
    );
    assert!(txn.delete(&t, &key(&t, 6)).expect("delete"));
    let mut seen = Vec::new();
    let updated = txn
        .update_range(&t, &ids(&t, 2, 7), ScanOptions::forward(), |r| {
            let row = r.as_ref();
            seen.push(row.int(ID));
            let b = row.decimal_units(BALANCE);
            r.decimal_units(BALANCE, b + 10);
        })
        .expect("update_range");
    assert_eq!(updated, 5);
    assert_eq!(seen, [2, 3, 4, 5, 7], "key order, the deleted row skipped");
    assert_eq!(
        balance(&mut txn, &t, 4),
        Some(111),
        "on top of its own write"
    );
    txn.commit().expect("commit");
    drop(txn);
    let b = |x: i64| Some(x);
    assert_eq!(
        balances(&db, &t, 10),
        [
            b(100),
            b(100),
            b(110),
            b(110),
            b(111),
            b(110),
            None,
            b(110),
            b(100),
            b(100)
        ]
    );
}

#[test]
fn the_limit_and_the_direction_choose_the_rows() {
    let (db, t) = with_accounts(10, 100);
    let mut txn = db
        .begin(Priority::HIGH, Isolation::Snapshot)
        .expect("begin");
    let mut seen = Vec::new();
    let updated = txn
        .update_range(&t, &KeyRange::all(), ScanOptions::reverse().limit(3), |r| {
            seen.push(r.as_ref().int(ID));
            r.decimal_units(BALANCE, 0);
        })
        .expect("update_range");
    assert_eq!((updated, seen), (3, vec![9, 8, 7]));
    txn.commit().expect("commit");
    drop(txn);
    let zeroed: Vec<bool> = balances(&db, &t, 10)
        .iter()
        .map(|b| *b == Some(0))
        .collect();
    assert_eq!(zeroed, (0..10).map(|id| id >= 7).collect::<Vec<_>>());
}

#[test]
fn a_row_committed_by_another_transaction_since_the_snapshot_is_a_conflict() {
    let (db, t) = with_accounts(10, 100);
    let mut late = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
    let mut other = db
        .begin(Priority::HIGH, Isolation::Snapshot)
        .expect("begin");
    other
        .update(&t, &key(&t, 3), |r| {
            r.decimal_units(BALANCE, 1);
        })
        .expect("update");
    other.commit().expect("commit");
    let result = late.update_range(&t, &ids(&t, 0, 5), ScanOptions::forward(), |r| {
        r.decimal_units(BALANCE, 2);
    });
    assert!(matches!(result, Err(Error::Aborted(AbortReason::Conflict))));
    drop(late);
    let b = |x: i64| Some(x);
    assert_eq!(
        balances(&db, &t, 6),
        [b(100), b(100), b(100), b(1), b(100), b(100)],
        "the committed write stands, nothing of the conflicting one"
    );
}

#[test]
fn changing_the_primary_key_is_refused_and_the_transaction_stays_usable() {
    let (db, t) = with_accounts(4, 100);
    let mut txn = db
        .begin(Priority::HIGH, Isolation::Snapshot)
        .expect("begin");
    let result = txn.update_range(&t, &KeyRange::all(), ScanOptions::forward(), |r| {
        r.int(ID, 99);
    });
    assert!(
        matches!(result, Err(Error::InvalidValue { .. })),
        "{result:?}"
    );
    assert_eq!(balance(&mut txn, &t, 0), Some(100), "still usable");
    txn.commit().expect("commit");
}

#[test]
fn under_serializable_the_range_is_protected_against_phantoms() {
    let (db, t) = with_accounts(10, 100);
    let mut txn = db
        .begin(Priority::LOW, Isolation::Serializable)
        .expect("begin");
    // An empty range: nothing to update, but the range was read.
    let updated = txn
        .update_range(&t, &ids(&t, 10, 20), ScanOptions::forward(), |r| {
            r.decimal_units(BALANCE, 0);
        })
        .expect("update_range");
    assert_eq!(updated, 0);
    txn.update(&t, &key(&t, 0), |r| {
        r.decimal_units(BALANCE, 1);
    })
    .expect("update");
    let mut other = db
        .begin(Priority::HIGH, Isolation::Serializable)
        .expect("begin");
    let row = t
        .row_builder()
        .int(ID, 15)
        .str(common::OWNER, "late")
        .decimal_units(BALANCE, 5)
        .finish()
        .expect("row");
    other.insert(&t, row).expect("insert");
    other.commit().expect("commit");
    assert!(matches!(
        txn.commit(),
        Err(CommitError::Aborted(AbortReason::Validation))
    ));
}

#[test]
fn a_range_of_several_batches_is_updated_whole() {
    // More rows than one epoch batch (64), with a row written before the scan in the middle.
    let (db, t) = with_accounts(200, 100);
    let mut txn = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
    assert!(
        txn.update(&t, &key(&t, 100), |r| {
            r.decimal_units(BALANCE, 1);
        })
        .expect("update")
    );
    let updated = txn
        .update_range(&t, &ids(&t, 1, 198), ScanOptions::forward(), |r| {
            let b = r.as_ref().decimal_units(BALANCE);
            r.decimal_units(BALANCE, b + 5);
        })
        .expect("update_range");
    assert_eq!(updated, 198);
    txn.commit().expect("commit");
    let after = balances(&db, &t, 200);
    for (id, b) in after.iter().enumerate() {
        let want = match id {
            0 | 199 => 100,
            100 => 6,
            _ => 105,
        };
        assert_eq!(*b, Some(want), "account {id}");
    }
}
