//! A paused transaction holds nothing an urgent one needs: with a preemption injected at each
//! region exit of a low-priority transaction in turn, an urgent transaction on the same worker
//! touching the same table always finishes, and both commit.

use crate::common;

use std::sync::Arc;

use common::preempted::{preempt_once_at, sweep};
use common::*;
use overtake_engine::{Database, Isolation, Options, Priority};
use overtake_runtime::preempt::inject::Point;

// As in every program that preempts: allocation runs in regions.
fn insert_and_commit(db: &Database, t: &overtake_engine::Table, id: i64, priority: Priority) {
    let mut txn = db.begin(priority, Isolation::Serializable).expect("begin");
    let row = t
        .row_builder()
        .int(ID, id)
        .str(OWNER, "o")
        .decimal_units(BALANCE, id)
        .finish()
        .expect("row");
    txn.insert(t, row).expect("insert");
    txn.commit().expect("commit");
}

#[test]
fn the_first_insert_into_a_table_can_be_preempted_anywhere() {
    // The first insert creates the table's first chunk of record slots, the case where a paused
    // initialiser once made every later touch of the chunk wait forever.
    let swept = sweep(|n| {
        let db = Arc::new(Database::in_memory(Options::default()));
        let t = accounts(&db);
        let (db2, t2) = (Arc::clone(&db), Arc::clone(&t));
        let reached = preempt_once_at(
            Point::RegionExit,
            n,
            {
                let (db, t) = (Arc::clone(&db), Arc::clone(&t));
                move || insert_and_commit(&db, &t, 1, Priority::LOW)
            },
            move || insert_and_commit(&db2, &t2, 2, Priority::HIGH),
        );
        let mut check = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
        assert_eq!(balance(&mut check, &t, 1), Some(1));
        if reached {
            assert_eq!(balance(&mut check, &t, 2), Some(2), "the urgent insert");
        }
        reached
    });
    assert!(
        swept > 3,
        "the insert has region exits to preempt at ({swept})"
    );
}

/// Moves account `moved` to another owner, deletes `gone`, inserts `new` for `owner` and scans
/// `owner`'s accounts, commits, and collects garbage.
fn mixed_writes(
    db: &Database,
    t: &overtake_engine::Table,
    priority: Priority,
    ids: [i64; 3],
    owner: &str,
) {
    let [moved, gone, new] = ids;
    let by_owner = t.index("by_owner").expect("index");
    let mut txn = db.begin(priority, Isolation::Serializable).expect("begin");
    assert!(
        txn.update(t, &key(t, moved), |r| {
            r.str(OWNER, "moved");
        })
        .expect("update")
    );
    assert!(txn.delete(t, &key(t, gone)).expect("delete"));
    let row = t
        .row_builder()
        .int(ID, new)
        .str(OWNER, owner)
        .decimal_units(BALANCE, new)
        .finish()
        .expect("row");
    txn.insert(t, row).expect("insert");
    let range = overtake_engine::KeyRange::prefix(
        t.index_key(by_owner).str(owner).prefix().expect("prefix"),
    );
    txn.scan_index(
        t,
        by_owner,
        &range,
        overtake_engine::ScanOptions::forward(),
        |_| std::ops::ControlFlow::Continue(()),
    )
    .expect("scan");
    txn.commit().expect("commit");
    db.collect_garbage();
}

#[test]
fn writes_commits_and_collection_can_be_preempted_anywhere() {
    let swept = sweep(|n| {
        let (db, t) = with_accounts(12, 1);
        let (db, t) = (Arc::new(db), t);
        let (db2, t2) = (Arc::clone(&db), Arc::clone(&t));
        let reached = preempt_once_at(
            Point::RegionExit,
            n,
            {
                let (db, t) = (Arc::clone(&db), Arc::clone(&t));
                move || mixed_writes(&db, &t, Priority::LOW, [0, 1, 100], "low")
            },
            move || mixed_writes(&db2, &t2, Priority::HIGH, [3, 4, 200], "high"),
        );
        let mut check = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
        assert_eq!(balance(&mut check, &t, 1), None);
        assert_eq!(balance(&mut check, &t, 100), Some(100));
        if reached {
            assert_eq!(balance(&mut check, &t, 4), None, "the urgent delete");
            assert_eq!(balance(&mut check, &t, 200), Some(200), "the urgent insert");
        }
        drop(check);
        db.collect_garbage();
        let census = db.census();
        assert_eq!(census.unreclaimed_versions, 0, "{census:?}");
        assert_eq!(census.unreclaimed_deletes, 0, "{census:?}");
        reached
    });
    assert!(
        swept > 20,
        "the transaction has region exits to preempt at ({swept})"
    );
}
