//! Reclamation never makes anyone wait, and never waits for a particular transaction slot: a stale
//! index entry is taken over by whoever meets it, and the retired items of a slot leased to a long
//! (or paused) transaction are drained by other committers.

use crate::common;

use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

use common::*;
use overtake_engine::{Database, Isolation, Priority, Table, Transaction};

fn begin(db: &Database) -> Transaction<'_> {
    db.begin(Priority::LOW, Isolation::Serializable)
        .expect("begin")
}

fn account(t: &Table, id: i64, owner: &str) -> overtake_engine::Row {
    t.row_builder()
        .int(ID, id)
        .str(OWNER, owner)
        .decimal_units(BALANCE, 1)
        .finish()
        .expect("row")
}

fn set_owner(db: &Database, t: &Table, id: i64, owner: &str) {
    let mut txn = begin(db);
    assert!(
        txn.update(t, &key(t, id), |r| {
            r.str(OWNER, owner);
        })
        .expect("update")
    );
    txn.commit().expect("commit");
}

/// Account 7 changes owner from "before" to "after" (the "before" entry becomes stale and is
/// retired on the updater's slot) and is then deleted and collected by commits on other slots,
/// while the updater's slot is leased to a transaction that stays open. Returns that transaction.
fn stale_entry_on_a_leased_slot<'db>(db: &'db Database, t: &Table) -> Transaction<'db> {
    let mut txn = begin(db);
    txn.insert(t, account(t, 7, "before")).expect("insert");
    txn.commit().expect("commit");
    drop(txn);
    // A reader holds the watermark back, so nothing retired below is reclaimed at once.
    let reader = begin(db); // slot 0
    set_owner(db, t, 7, "after"); // slot 1: retires the "before" entry there
    let hold = begin(db); // slot 1
    let mut deleter = begin(db); // slot 2
    assert!(deleter.delete(t, &key(t, 7)).expect("delete"));
    deleter.commit().expect("commit");
    drop(deleter);
    drop(reader);
    drop(hold);
    // Slot 1 goes to a long transaction; a commit on slot 2 collects the deleted record.
    let other = begin(db); // slot 0
    let long = begin(db); // slot 1
    let mut writer = begin(db); // slot 2
    writer
        .insert(t, account(t, 1000, "unrelated"))
        .expect("insert");
    writer.commit().expect("commit");
    drop(writer);
    drop(other);
    long
}

#[test]
fn reinserting_a_key_never_waits_for_a_leased_slot_to_reclaim_its_old_entry() {
    let (db, t) = with_accounts(0, 0);
    let (db, t) = (Arc::new(db), t);
    let (tx, rx) = mpsc::channel();
    let (db2, t2) = (Arc::clone(&db), Arc::clone(&t));
    std::thread::spawn(move || {
        let long = stale_entry_on_a_leased_slot(&db2, &t2);
        // The same primary key with the old secondary value, while slot 1 is still leased.
        let mut txn = begin(&db2);
        let inserted = txn.insert(&t2, account(&t2, 7, "before"));
        let committed = inserted.and_then(|()| Ok(txn.commit()?));
        drop(txn);
        drop(long);
        let _ = tx.send(committed);
    });
    // Generous: the insert takes microseconds; before the fix it spun forever.
    match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(result) => assert_eq!(result, Ok(())),
        Err(e) => panic!("the insert is still waiting for reclamation ({e})"),
    }
    let by_owner = t.index("by_owner").expect("index");
    let mut check = begin(&db);
    let before = overtake_engine::KeyRange::prefix(
        t.index_key(by_owner)
            .str("before")
            .prefix()
            .expect("prefix"),
    );
    let found = check
        .scan_index(
            &t,
            by_owner,
            &before,
            overtake_engine::ScanOptions::forward(),
            |_| std::ops::ControlFlow::Continue(()),
        )
        .expect("scan");
    assert_eq!(found, 1, "the re-inserted row is found through its index");
    drop(check);
    db.collect_garbage();
    let census = db.census();
    assert_eq!(census.dangling_index_entries, 0, "{census:?}");
    assert_eq!(census.live_records, 2, "{census:?}");
}

#[test]
fn other_committers_drain_the_retire_queue_of_a_leased_slot() {
    let (db, t) = with_accounts(4, 1);
    let long = stale_entry_on_a_leased_slot(&db, &t);
    // Everything retired so far is older than the long transaction's snapshot, so it may go:
    // ordinary commits on other slots must reclaim it, whoever retired it.
    for round in 0..8 {
        set_owner(&db, &t, round % 4, "someone");
    }
    let census = db.census();
    assert_eq!(
        census.dangling_index_entries, 0,
        "the stale entry of slot 1 went without slot 1 committing: {census:?}"
    );
    assert_eq!(census.unreclaimed_deletes, 0, "{census:?}");
    drop(long);
}

/// Collects garbage with no transaction live and checks that every index entry belongs to a
/// live row and every row has one version.
fn assert_fully_reclaimed(db: &Database, live: u64) {
    db.collect_garbage();
    let c = db.census();
    assert_eq!(c.live_records, live, "{c:?}");
    assert_eq!(c.linked_versions, live, "{c:?}");
    assert_eq!(c.unreclaimed_deletes, 0, "{c:?}");
    assert_eq!(c.index_entries, 2 * live, "{c:?}");
    assert_eq!(c.dangling_index_entries, 0, "{c:?}");
}

// The three cases below were found by the model test (tests/integration/model.rs).

#[test]
fn reinserting_a_deleted_key_with_another_secondary_value_retires_the_old_entry() {
    let (db, t) = with_accounts(0, 0);
    let mut txn = begin(&db);
    txn.insert(&t, account(&t, 5, "first")).expect("insert");
    txn.commit().expect("commit");
    drop(txn);
    let mut txn = begin(&db);
    assert!(txn.delete(&t, &key(&t, 5)).expect("delete"));
    txn.insert(&t, account(&t, 5, "second"))
        .expect("insert over the deletion");
    txn.commit().expect("commit");
    drop(txn);
    assert_fully_reclaimed(&db, 1);
}

#[test]
fn rolling_back_a_reused_entry_after_its_retirement_was_processed_removes_it() {
    let (db, t) = with_accounts(0, 0);
    let mut txn = begin(&db);
    txn.insert(&t, account(&t, 2, "one")).expect("insert");
    assert!(
        txn.update(&t, &key(&t, 2), |r| {
            r.str(OWNER, "two");
        })
        .expect("update")
    );
    txn.commit().expect("commit"); // retires the "one" entry
    drop(txn);
    let mut back = begin(&db);
    assert!(
        back.update(&t, &key(&t, 2), |r| {
            r.str(OWNER, "one");
        })
        .expect("update back: reuses the retired entry")
    );
    db.collect_garbage(); // keeps "one": our pending version carries it
    back.abort();
    drop(back);
    assert_fully_reclaimed(&db, 1);
}

#[test]
fn rolling_back_an_insert_over_a_collected_delete_retires_the_record_again() {
    let (db, t) = with_accounts(0, 0);
    let mut txn = begin(&db);
    txn.insert(&t, account(&t, 0, "x")).expect("insert");
    assert!(txn.delete(&t, &key(&t, 0)).expect("delete"));
    txn.commit().expect("commit");
    drop(txn);
    let mut again = begin(&db);
    again
        .insert(&t, account(&t, 0, "x"))
        .expect("insert over the deleted row");
    db.collect_garbage(); // meets our pending version over the deletion and passes
    again.abort();
    drop(again);
    assert_fully_reclaimed(&db, 0);
}
