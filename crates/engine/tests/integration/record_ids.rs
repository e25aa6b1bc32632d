//! Rows by where they are kept: the record id reads and scans report is the one a row is found
//! by again, in the transaction's own view (its writes included), stable across updates, and an
//! id that names no row (never handed out, deleted, not yet committed by another) finds none.

use std::ops::ControlFlow;

use crate::common::*;
use overtake_engine::{Isolation, KeyRange, Priority, RecordId, ScanOptions, Transaction};

/// Each row's id and account id, by a primary-key scan (or the index `by_owner`).
fn located(
    txn: &mut Transaction<'_>,
    t: &overtake_engine::Table,
    by_owner: bool,
) -> Vec<(RecordId, i64)> {
    let mut seen = Vec::new();
    let visit = |r: overtake_engine::RowRef<'_>, id: RecordId| {
        seen.push((id, r.int(ID)));
        ControlFlow::Continue(())
    };
    let all = KeyRange::all();
    if by_owner {
        let index = t.index("by_owner").expect("index");
        txn.scan_index_located(t, index, &all, ScanOptions::forward(), visit)
    } else {
        txn.scan_located(t, &all, ScanOptions::forward(), visit)
    }
    .expect("scan");
    seen.sort_by_key(|&(_, account)| account);
    seen
}

#[test]
fn a_rows_record_id_finds_it_again_and_survives_updates() {
    let (db, t) = with_accounts(3, 10);
    let mut txn = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
    let ids = located(&mut txn, &t, false);
    assert_eq!(ids.len(), 3);
    assert_eq!(
        located(&mut txn, &t, true),
        ids,
        "an index scan reports the same ids"
    );
    for &(id, account) in &ids {
        assert_eq!(
            txn.key_of_record(&t, id).expect("key"),
            Some(key(&t, account))
        );
        let by_key = txn
            .get_located(&t, &key(&t, account), |_, id| id)
            .expect("get");
        assert_eq!(by_key, Some(id));
    }
    // Ids no row has: beyond every record handed out.
    assert_eq!(
        txn.key_of_record(&t, RecordId::new(1 << 40)).expect("key"),
        None
    );
    // An update keeps the record, in its own view and once committed.
    assert!(set_balance(&mut txn, &t, 1, 99).expect("update"));
    assert_eq!(located(&mut txn, &t, false), ids);
    txn.commit().expect("commit");
    drop(txn);
    let mut txn = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
    assert_eq!(located(&mut txn, &t, false), ids);
    txn.commit().expect("commit");
}

#[test]
fn own_inserts_and_deletes_are_seen_by_id_others_are_not() {
    let (db, t) = with_accounts(2, 10);
    let mut writer = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
    let mut reader = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
    writer
        .insert(&t, account_row(&t, 7, "new", 1))
        .expect("insert");
    let fresh = writer
        .get_located(&t, &key(&t, 7), |_, id| id)
        .expect("get")
        .expect("its own insert");
    assert!(located(&mut writer, &t, false).contains(&(fresh, 7)));
    assert_eq!(
        writer.key_of_record(&t, fresh).expect("key"),
        Some(key(&t, 7))
    );
    // Another transaction's uncommitted row is no row to anyone else.
    assert_eq!(reader.key_of_record(&t, fresh).expect("key"), None);
    // A row deleted in the transaction is gone from its view by id too.
    let zero = located(&mut writer, &t, false)[0].0;
    assert!(writer.delete(&t, &key(&t, 0)).expect("delete"));
    assert_eq!(writer.key_of_record(&t, zero).expect("key"), None);
    // ...and still there for a snapshot from before its commit.
    writer.commit().expect("commit");
    assert_eq!(
        reader.key_of_record(&t, zero).expect("key"),
        Some(key(&t, 0))
    );
    reader.commit().expect("commit");
}
