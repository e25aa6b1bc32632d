//! Reclamation never makes anyone wait, and never waits for a particular transaction slot: a stale
//! index entry is taken over by whoever meets it, and the retired items of a slot leased to a long
//! (or paused) transaction are drained by other committers.

mod common;

use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

use common::*;
use overtake_engine::{Database, Isolation, Priority, Table, Transaction};

fn begin(db: &Database) -> Transaction<'_> {
    db.begin(Priority::Low, Isolation::Serializable)
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
        let committed = inserted.and_then(|()| txn.commit());
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
