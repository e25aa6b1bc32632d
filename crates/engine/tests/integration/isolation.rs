//! Isolation anomalies, each shown allowed or prevented as the level promises.

use crate::common;

use overtake_engine::CommitError;
use std::ops::ControlFlow;

use common::*;
use overtake_engine::{
    AbortReason, Database, Error, Isolation, KeyRange, Options, Priority, RetryPolicy, ScanOptions,
};
use overtake_runtime::region;

const LEVELS: [Isolation; 2] = [Isolation::Snapshot, Isolation::Serializable];

#[test]
fn lost_update_is_prevented_at_both_levels() {
    for level in LEVELS {
        let (db, t) = with_accounts(1, 100);
        let mut a = db.begin(Priority::LOW, level).expect("begin");
        let mut b = db.begin(Priority::LOW, level).expect("begin");
        // Both read 100 and want to add to it.
        assert_eq!(balance(&mut a, &t, 0), Some(100));
        assert_eq!(balance(&mut b, &t, 0), Some(100));
        assert!(
            a.update(&t, &key(&t, 0), |r| {
                let v = r.as_ref().decimal_units(BALANCE);
                r.decimal_units(BALANCE, v + 10);
            })
            .expect("first updater")
        );
        // Writes are buffered, so `a` holds nothing: `b` may write too, and the first to commit
        // wins.
        assert!(
            b.update(&t, &key(&t, 0), |r| {
                r.decimal_units(BALANCE, 100 + 20);
            })
            .expect("second updater")
        );
        a.commit().expect("commit");
        assert_eq!(b.commit(), Err(CommitError::Aborted(AbortReason::Conflict)));
        assert!(!b.is_active());
        // After `a` committed, a transaction whose snapshot predates it still conflicts.
        let mut c = db.begin(Priority::LOW, level).expect("begin");
        let mut stale = db.begin(Priority::LOW, level).expect("begin");
        c.update(&t, &key(&t, 0), |r| {
            r.decimal_units(BALANCE, 0);
        })
        .expect("update");
        c.commit().expect("commit");
        let err = stale
            .update(&t, &key(&t, 0), |r| {
                r.decimal_units(BALANCE, 1);
            })
            .expect_err("committed after the snapshot");
        assert_eq!(err, Error::Aborted(AbortReason::Conflict));
        let mut check = db.begin(Priority::LOW, level).expect("begin");
        assert_eq!(balance(&mut check, &t, 0), Some(0));
    }
}

/// Two doctors on call: each checks that the other is on call, then goes off call.
fn write_skew(level: Isolation) -> Result<(), Error> {
    let (db, t) = with_accounts(2, 1);
    let mut a = db.begin(Priority::LOW, level).expect("begin");
    let mut b = db.begin(Priority::LOW, level).expect("begin");
    let on_call = |txn: &mut overtake_engine::Transaction<'_>| {
        balance(txn, &t, 0).unwrap_or(0) + balance(txn, &t, 1).unwrap_or(0)
    };
    assert_eq!(on_call(&mut a), 2);
    assert_eq!(on_call(&mut b), 2);
    a.update(&t, &key(&t, 0), |r| {
        r.decimal_units(BALANCE, 0);
    })?;
    b.update(&t, &key(&t, 1), |r| {
        r.decimal_units(BALANCE, 0);
    })?;
    a.commit()?;
    Ok(b.commit()?)
}

#[test]
fn write_skew_is_allowed_under_snapshot_and_prevented_under_serializable() {
    assert_eq!(write_skew(Isolation::Snapshot), Ok(()));
    assert_eq!(
        write_skew(Isolation::Serializable),
        Err(Error::Aborted(AbortReason::Validation))
    );
}

/// A transaction counts the accounts of owner0 and writes the count elsewhere while another
/// transaction adds an owner0 account.
fn phantom(level: Isolation) -> Result<(), Error> {
    let (db, t) = with_accounts(6, 1);
    let by_owner = t.index("by_owner").expect("index");
    let owner0 = KeyRange::prefix(t.index_key(by_owner).str("owner0").prefix()?);
    let mut counter = db.begin(Priority::LOW, level)?;
    let n = counter.scan_index(&t, by_owner, &owner0, ScanOptions::forward(), |_| {
        ControlFlow::Continue(())
    })?;
    assert_eq!(n, 2, "ids 0 and 3");
    let mut inserter = db.begin(Priority::HIGH, level)?;
    let row = t
        .row_builder()
        .int(ID, 100)
        .str(OWNER, "owner0")
        .decimal_units(BALANCE, 1)
        .finish()?;
    inserter.insert(&t, row)?;
    inserter.commit()?;
    // The counter's snapshot does not see the new account...
    let again = counter.scan_index(&t, by_owner, &owner0, ScanOptions::forward(), |_| {
        ControlFlow::Continue(())
    })?;
    assert_eq!(again, 2);
    counter.update(&t, &key(&t, 5), |r| {
        r.decimal_units(BALANCE, n as i64);
    })?;
    // ...so committing its conclusion would be a phantom.
    Ok(counter.commit()?)
}

#[test]
fn phantom_is_prevented_under_serializable() {
    assert_eq!(phantom(Isolation::Snapshot), Ok(()));
    assert_eq!(
        phantom(Isolation::Serializable),
        Err(Error::Aborted(AbortReason::Validation))
    );
}

/// Sums the balances of every account with a full scan (the range a serializable commit must
/// validate), then records the sum in account 0.
fn sum_all_into_account_0(
    txn: &mut overtake_engine::Transaction<'_>,
    t: &overtake_engine::Table,
) -> Result<(), Error> {
    let mut sum = 0;
    txn.scan(t, &KeyRange::all(), ScanOptions::forward(), |r| {
        sum += r.decimal_units(BALANCE);
        ControlFlow::Continue(())
    })?;
    txn.update(t, &key(t, 0), |r| {
        r.decimal_units(BALANCE, sum);
    })?;
    Ok(())
}

/// A row of a scanned range changed in place (no key added or removed, so the index leaves the
/// scan read are unchanged) is still a changed read.
#[test]
fn an_update_of_a_scanned_row_fails_validation() {
    let (db, t) = with_accounts(8, 1);
    let mut summer = db
        .begin(Priority::LOW, Isolation::Serializable)
        .expect("begin");
    sum_all_into_account_0(&mut summer, &t).expect("scan and write");
    let mut writer = db
        .begin(Priority::HIGH, Isolation::Serializable)
        .expect("begin");
    writer
        .update(&t, &key(&t, 5), |r| {
            r.decimal_units(BALANCE, 7);
        })
        .expect("update");
    writer.commit().expect("commit");
    assert_eq!(
        summer.commit(),
        Err(CommitError::Aborted(AbortReason::Validation))
    );
}

/// A row inserted after the scanner's snapshot but before its scan is in the leaf the scan read
/// (which then stays unchanged), invisible to the scan: a phantom all the same.
#[test]
fn a_row_committed_after_the_snapshot_but_before_the_scan_is_a_phantom() {
    let (db, t) = with_accounts(8, 1);
    let mut summer = db
        .begin(Priority::LOW, Isolation::Serializable)
        .expect("begin");
    let mut inserter = db
        .begin(Priority::HIGH, Isolation::Serializable)
        .expect("begin");
    inserter
        .insert(&t, account_row(&t, 100, "x", 1))
        .expect("insert");
    inserter.commit().expect("commit");
    sum_all_into_account_0(&mut summer, &t).expect("scan and write");
    assert_eq!(
        summer.commit(),
        Err(CommitError::Aborted(AbortReason::Validation))
    );
}

/// A scanned range nobody changed validates, also after other rows of the table changed.
#[test]
fn a_scanned_range_nobody_changed_commits() {
    let (db, t) = with_accounts(8, 1);
    let mut summer = db
        .begin(Priority::LOW, Isolation::Serializable)
        .expect("begin");
    let mut sum = 0;
    let range = KeyRange::new(
        std::ops::Bound::Included(key(&t, 2)),
        std::ops::Bound::Included(key(&t, 4)),
    );
    summer
        .scan(&t, &range, ScanOptions::forward(), |r| {
            sum += r.decimal_units(BALANCE);
            ControlFlow::Continue(())
        })
        .expect("scan");
    assert_eq!(sum, 3);
    let mut writer = db
        .begin(Priority::HIGH, Isolation::Serializable)
        .expect("begin");
    writer
        .update(&t, &key(&t, 6), |r| {
            r.decimal_units(BALANCE, 9);
        })
        .expect("update outside the range");
    writer.commit().expect("commit");
    summer
        .update(&t, &key(&t, 0), |r| {
            r.decimal_units(BALANCE, sum);
        })
        .expect("update");
    summer.commit().expect("nothing it read changed");
}

#[test]
fn point_read_of_a_missing_key_is_validated_too() {
    let (db, t) = with_accounts(1, 1);
    let mut reader = db
        .begin(Priority::LOW, Isolation::Serializable)
        .expect("begin");
    assert_eq!(balance(&mut reader, &t, 7), None);
    let mut writer = db
        .begin(Priority::LOW, Isolation::Serializable)
        .expect("begin");
    let row = account_row(&t, 7, "x", 1);
    writer.insert(&t, row).expect("insert");
    writer.commit().expect("commit");
    reader
        .update(&t, &key(&t, 0), |r| {
            r.decimal_units(BALANCE, 0);
        })
        .expect("update");
    assert_eq!(
        reader.commit(),
        Err(CommitError::Aborted(AbortReason::Validation))
    );
}

/// An insert succeeds only because its key is free in the snapshot: a read of an absence that
/// must still hold at commit, even when the transaction deletes the row again and so has nothing
/// to install for it. Without that, this history commits all three and has a cycle: `a` saw key
/// 7 free (before `b`), `b` created it and `c` saw it (after `b`), `c` saw key 8 free and `a`
/// created it (before `a`).
#[test]
fn an_insert_deleted_again_still_depends_on_its_key_being_free() {
    let (db, t) = with_accounts(1, 1);
    let new_row = |id| account_row(&t, id, "x", 1);
    let mut a = db
        .begin(Priority::LOW, Isolation::Serializable)
        .expect("begin");
    a.insert(&t, new_row(7)).expect("key 7 is free");
    assert_eq!(balance(&mut a, &t, 7), Some(1), "its own insert");
    assert!(a.delete(&t, &key(&t, 7)).expect("delete its own insert"));
    a.insert(&t, new_row(8)).expect("key 8 is free");

    let mut b = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
    b.insert(&t, new_row(7)).expect("insert");
    b.commit().expect("commit");

    let mut c = db
        .begin(Priority::LOW, Isolation::Serializable)
        .expect("begin");
    assert_eq!(balance(&mut c, &t, 7), Some(1), "b's row");
    assert_eq!(balance(&mut c, &t, 8), None, "a has not committed");
    c.update(&t, &key(&t, 0), |r| {
        r.decimal_units(BALANCE, 2);
    })
    .expect("update");
    c.commit().expect("nothing c read has changed");

    assert_eq!(
        a.commit(),
        Err(CommitError::Aborted(AbortReason::Validation))
    );
}

#[test]
fn read_only_serializable_transactions_never_fail_validation() {
    let (db, t) = with_accounts(2, 5);
    let mut reader = db
        .begin(Priority::LOW, Isolation::Serializable)
        .expect("begin");
    assert_eq!(balance(&mut reader, &t, 0), Some(5));
    let mut writer = db
        .begin(Priority::HIGH, Isolation::Serializable)
        .expect("begin");
    writer
        .update(&t, &key(&t, 0), |r| {
            r.decimal_units(BALANCE, 6);
        })
        .expect("update");
    writer.commit().expect("commit");
    assert_eq!(balance(&mut reader, &t, 0), Some(5), "snapshot is stable");
    reader
        .commit()
        .expect("a read-only snapshot is serializable");
}

/// A scan meets the transaction's own writes of its range in key order, whichever bounds it has
/// and whether the writes were made in key order (found by binary search) or not (tested one by
/// one): both give what a model of the rows gives.
#[test]
fn scans_see_own_writes_made_in_and_out_of_key_order() {
    use std::collections::BTreeMap;
    use std::ops::{Bound, RangeBounds};
    // Updates of the even accounts 2..=18, a delete of 11, inserts of 25 and 27, by key.
    let mut writes: Vec<(i64, Option<i64>)> = (1..=9)
        .map(|i| (2 * i, Some(1000 + 2 * i)))
        .chain([(11, None), (25, Some(25)), (27, Some(27))])
        .collect();
    writes.sort_unstable();
    for ascending in [true, false] {
        let (db, t) = with_accounts(20, 100);
        let mut model: BTreeMap<i64, i64> = (0..20).map(|id| (id, 100)).collect();
        let mut txn = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
        let mut order = writes.clone();
        if !ascending {
            order.reverse();
        }
        for (id, value) in order {
            match value {
                Some(v) if id < 20 => assert!(set_balance(&mut txn, &t, id, v).expect("update")),
                Some(v) => txn
                    .insert(&t, account_row(&t, id, "new", v))
                    .expect("insert"),
                None => assert!(txn.delete(&t, &key(&t, id)).expect("delete")),
            }
            match value {
                Some(v) => model.insert(id, v),
                None => model.remove(&id),
            };
        }
        let bound = |kind: u8, id: i64| match kind {
            0 => Bound::Included(id),
            1 => Bound::Excluded(id),
            _ => Bound::Unbounded,
        };
        for (lo, hi) in [(2, 18), (3, 17), (10, 10), (18, 25), (0, 30), (11, 11)] {
            for (lk, hk) in (0..3).flat_map(|l| (0..3).map(move |h| (l, h))) {
                let (lower, upper) = (bound(lk, lo), bound(hk, hi));
                let range = KeyRange::new(lower.map(|id| key(&t, id)), upper.map(|id| key(&t, id)));
                for reverse in [false, true] {
                    let options = if reverse {
                        ScanOptions::reverse()
                    } else {
                        ScanOptions::forward()
                    };
                    let mut seen = Vec::new();
                    txn.scan(&t, &range, options, |r| {
                        seen.push((r.int(ID), r.decimal_units(BALANCE)));
                        ControlFlow::Continue(())
                    })
                    .expect("scan");
                    let mut expected: Vec<(i64, i64)> = model
                        .iter()
                        .filter(|(k, _)| (lower, upper).contains(*k))
                        .map(|(&k, &v)| (k, v))
                        .collect();
                    if reverse {
                        expected.reverse();
                    }
                    assert_eq!(
                        seen, expected,
                        "writes ascending {ascending}, {lower:?}..{upper:?}, reverse {reverse}"
                    );
                }
            }
        }
    }
}

#[test]
fn own_writes_deletes_and_reinserts() {
    let (db, t) = with_accounts(3, 10);
    let mut txn = db
        .begin(Priority::LOW, Isolation::Serializable)
        .expect("begin");
    txn.update(&t, &key(&t, 1), |r| {
        r.decimal_units(BALANCE, 11);
    })
    .expect("update");
    txn.update(&t, &key(&t, 1), |r| {
        let v = r.as_ref().decimal_units(BALANCE);
        r.decimal_units(BALANCE, v + 1);
    })
    .expect("update twice");
    assert_eq!(balance(&mut txn, &t, 1), Some(12), "sees its own writes");
    assert!(txn.delete(&t, &key(&t, 2)).expect("delete"));
    assert_eq!(balance(&mut txn, &t, 2), None);
    assert!(!txn.delete(&t, &key(&t, 2)).expect("already gone"));
    let row = account_row(&t, 2, "new", 99);
    txn.insert(&t, row.clone())
        .expect("reinsert over own delete");
    assert_eq!(
        txn.insert(&t, row),
        Err(Error::DuplicateKey {
            table: "accounts".into()
        })
    );
    assert!(
        txn.is_active(),
        "a duplicate key does not abort the transaction"
    );
    txn.commit().expect("commit");
    let mut check = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
    assert_eq!(balance(&mut check, &t, 1), Some(12));
    assert_eq!(balance(&mut check, &t, 2), Some(99));
    let owner = check
        .get(&t, &key(&t, 2), |r| r.str(OWNER).to_owned())
        .expect("get");
    assert_eq!(owner.as_deref(), Some("new"));
}

#[test]
fn rollback_undoes_everything_including_index_entries() {
    let (db, t) = with_accounts(2, 10);
    let by_owner = t.index("by_owner").expect("index");
    let mut txn = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
    let row = account_row(&t, 5, "ghost", 1);
    txn.insert(&t, row).expect("insert");
    txn.update(&t, &key(&t, 0), |r| {
        r.str(OWNER, "renamed");
    })
    .expect("update");
    txn.delete(&t, &key(&t, 1)).expect("delete");
    txn.abort();
    assert_eq!(txn.commit(), Err(CommitError::NotActive));
    let mut check = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
    assert_eq!(balance(&mut check, &t, 5), None);
    assert_eq!(balance(&mut check, &t, 1), Some(10));
    for owner in ["ghost", "renamed"] {
        let range = KeyRange::prefix(t.index_key(by_owner).str(owner).prefix().expect("key"));
        let n = check
            .scan_index(&t, by_owner, &range, ScanOptions::forward(), |_| {
                ControlFlow::Continue(())
            })
            .expect("scan");
        assert_eq!(n, 0, "no trace of {owner}");
    }
    // The aborted insert's key is free again.
    let row = account_row(&t, 5, "real", 2);
    let mut again = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
    again.insert(&t, row).expect("insert after rollback");
    again.commit().expect("commit");
}

#[test]
fn updating_an_indexed_column_moves_the_row_in_the_index() {
    let (db, t) = with_accounts(3, 10);
    let by_owner = t.index("by_owner").expect("index");
    let owners = |txn: &mut overtake_engine::Transaction<'_>, owner: &str| {
        let range = KeyRange::prefix(t.index_key(by_owner).str(owner).prefix().expect("key"));
        let mut ids = Vec::new();
        txn.scan_index(&t, by_owner, &range, ScanOptions::forward(), |r| {
            ids.push(r.int(ID));
            ControlFlow::Continue(())
        })
        .expect("scan");
        ids
    };
    let mut old_reader = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
    let mut txn = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
    txn.update(&t, &key(&t, 1), |r| {
        r.str(OWNER, "zed");
    })
    .expect("update");
    txn.commit().expect("commit");
    let mut new_reader = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
    assert_eq!(owners(&mut new_reader, "zed"), vec![1]);
    assert_eq!(owners(&mut new_reader, "owner1"), Vec::<i64>::new());
    assert_eq!(
        owners(&mut old_reader, "owner1"),
        vec![1],
        "old snapshot still finds it"
    );
    assert_eq!(owners(&mut old_reader, "zed"), Vec::<i64>::new());
    drop(old_reader);
    drop(new_reader);
    db.collect_garbage();
    let mut after_gc = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
    assert_eq!(owners(&mut after_gc, "zed"), vec![1]);
    assert_eq!(owners(&mut after_gc, "owner1"), Vec::<i64>::new());
}

#[test]
fn scans_respect_limits_in_both_directions() {
    let (db, t) = with_accounts(10, 1);
    let mut txn = db
        .begin(Priority::LOW, Isolation::Serializable)
        .expect("begin");
    let collect = |txn: &mut overtake_engine::Transaction<'_>, opts: ScanOptions| {
        let mut ids = Vec::new();
        let range = KeyRange::new(
            std::ops::Bound::Included(key(&t, 2)),
            std::ops::Bound::Excluded(key(&t, 8)),
        );
        txn.scan(&t, &range, opts, |r| {
            ids.push(r.int(ID));
            ControlFlow::Continue(())
        })
        .expect("scan");
        ids
    };
    assert_eq!(
        collect(&mut txn, ScanOptions::forward()),
        vec![2, 3, 4, 5, 6, 7]
    );
    assert_eq!(
        collect(&mut txn, ScanOptions::reverse().limit(2)),
        vec![7, 6]
    );
    assert_eq!(collect(&mut txn, ScanOptions::forward().limit(1)), vec![2]);
    let mut first_two = Vec::new();
    txn.scan(&t, &KeyRange::all(), ScanOptions::forward(), |r| {
        first_two.push(r.int(ID));
        if first_two.len() == 2 {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    })
    .expect("scan");
    assert_eq!(first_two, vec![0, 1]);
    txn.commit().expect("read-only commit");
}

#[test]
fn a_limited_scan_only_depends_on_what_it_saw() {
    // A scan that stopped at key 2 does not conflict with an insert beyond it.
    let (db, t) = with_accounts(3, 1);
    let mut txn = db
        .begin(Priority::LOW, Isolation::Serializable)
        .expect("begin");
    let n = txn
        .scan(
            &t,
            &KeyRange::all(),
            ScanOptions::forward().limit(2),
            |_| ControlFlow::Continue(()),
        )
        .expect("scan");
    assert_eq!(n, 2);
    let mut other = db
        .begin(Priority::LOW, Isolation::Serializable)
        .expect("begin");
    let row = account_row(&t, 50, "o", 1);
    other.insert(&t, row).expect("insert");
    other.commit().expect("commit");
    txn.update(&t, &key(&t, 0), |r| {
        r.decimal_units(BALANCE, 2);
    })
    .expect("update");
    txn.commit().expect("no overlap with the insert");
}

#[test]
fn retry_helper_retries_conflicts_but_not_user_errors() {
    let (db, t) = with_accounts(1, 0);
    let mut calls = 0;
    let attempts = db.run(
        Priority::HIGH,
        Isolation::Serializable,
        &RetryPolicy::default(),
        |txn| {
            calls += 1;
            if calls < 3 {
                return Err(Error::Aborted(AbortReason::Conflict));
            }
            txn.update(&t, &key(&t, 0), |r| {
                r.decimal_units(BALANCE, 42);
            })
        },
    );
    assert_eq!(attempts.result, Ok(true));
    assert_eq!((calls, attempts.conflicts), (3, 2));

    let mut calls = 0;
    let attempts = db.run(
        Priority::HIGH,
        Isolation::Snapshot,
        &RetryPolicy::default(),
        |txn| {
            calls += 1;
            txn.update(&t, &key(&t, 0), |r| {
                r.decimal_units(BALANCE, 0);
            })?;
            Err::<(), _>(txn.rollback())
        },
    );
    assert_eq!(
        attempts.result,
        Err(Error::Aborted(AbortReason::UserRollback))
    );
    assert_eq!(calls, 1, "a user rollback is not retried");
    let mut check = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
    assert_eq!(
        balance(&mut check, &t, 0),
        Some(42),
        "rolled-back write undone"
    );

    let attempts = db.run(
        Priority::HIGH,
        Isolation::Snapshot,
        &RetryPolicy::default().attempts(4),
        |_| Err::<(), _>(Error::Aborted(AbortReason::Validation)),
    );
    assert_eq!(
        attempts.validation_failures, 4,
        "gives up after max_attempts"
    );
}

#[test]
fn region_depth_returns_to_zero_on_every_path() {
    let (db, t) = with_accounts(4, 10);
    assert_eq!(region::depth(), 0);
    let mut a = db
        .begin(Priority::LOW, Isolation::Serializable)
        .expect("begin");
    let mut b = db
        .begin(Priority::LOW, Isolation::Serializable)
        .expect("begin");
    balance(&mut a, &t, 0);
    assert_eq!(region::depth(), 0, "after a read");
    a.update(&t, &key(&t, 0), |r| {
        r.decimal_units(BALANCE, 1);
    })
    .expect("update");
    assert_eq!(region::depth(), 0, "after a write");
    // An invalid value is a user error.
    let bad = a.update(&t, &key(&t, 1), |r| {
        r.str(OWNER, "a name that is far too long for the column");
    });
    assert!(matches!(bad, Err(Error::StringTooLong { .. })));
    assert_eq!(region::depth(), 0, "after a user error");
    assert!(a.insert(&t, account_row(&t, 1, "x", 0)).is_err());
    assert_eq!(region::depth(), 0, "after a duplicate key");
    b.update(&t, &key(&t, 0), |r| {
        r.decimal_units(BALANCE, 2);
    })
    .expect("buffered");
    a.commit().expect("commit");
    assert_eq!(region::depth(), 0, "after commit");
    assert_eq!(b.commit(), Err(CommitError::Aborted(AbortReason::Conflict)));
    assert_eq!(region::depth(), 0, "after a conflict abort");
    let mut c = db
        .begin(Priority::LOW, Isolation::Serializable)
        .expect("begin");
    let mut d = db
        .begin(Priority::LOW, Isolation::Serializable)
        .expect("begin");
    balance(&mut c, &t, 2);
    balance(&mut d, &t, 3);
    c.update(&t, &key(&t, 3), |r| {
        r.decimal_units(BALANCE, 0);
    })
    .expect("update");
    d.update(&t, &key(&t, 2), |r| {
        r.decimal_units(BALANCE, 0);
    })
    .expect("update");
    c.commit().expect("commit");
    assert_eq!(
        d.commit(),
        Err(CommitError::Aborted(AbortReason::Validation))
    );
    assert_eq!(region::depth(), 0, "after a validation abort");
    let mut e = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
    e.delete(&t, &key(&t, 2)).expect("delete");
    drop(e);
    assert_eq!(region::depth(), 0, "after rollback on drop");
    let _ = db.run(
        Priority::HIGH,
        Isolation::Snapshot,
        &RetryPolicy::never(),
        |txn| Err::<(), _>(txn.rollback()),
    );
    assert_eq!(region::depth(), 0, "after a user rollback");
    db.collect_garbage();
    assert_eq!(region::depth(), 0, "after garbage collection");
}

#[test]
fn bad_input_gets_errors_not_panics() {
    let (db, t) = with_accounts(1, 1);
    let other = db
        .create_table(
            overtake_engine::TableSchema::builder("other")
                .column("id", overtake_engine::ColumnType::Int64)
                .primary_key(&["id"])
                .build()
                .expect("schema"),
        )
        .expect("create");
    let foreign = other.row_builder().int(0, 1).finish().expect("row");
    let mut txn = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
    assert!(matches!(
        txn.insert(&t, foreign),
        Err(Error::InvalidValue { .. })
    ));
    let (_other_db, other_accounts) = with_accounts(1, 1);
    assert!(matches!(
        txn.get(&other_accounts, &key(&other_accounts, 0), |_| ()),
        Err(Error::ForeignTable(_))
    ));
    assert!(matches!(
        t.key().str("x").finish(),
        Err(Error::InvalidKey { .. })
    ));
    assert!(matches!(
        db.create_table(
            overtake_engine::TableSchema::builder("accounts")
                .column("id", overtake_engine::ColumnType::Int64)
                .build()
                .expect("schema")
        ),
        Err(Error::TableExists(_))
    ));
    assert!(matches!(db.table("nope"), Err(Error::NoSuchTable(_))));
}

#[test]
fn prefetching_rows_reads_nothing_a_transaction_depends_on() {
    let (db, t) = with_accounts(4, 100);
    let mut a = db
        .begin(Priority::LOW, Isolation::Serializable)
        .expect("begin");
    assert!(set_balance(&mut a, &t, 1, 111).expect("update"));
    assert!(a.delete(&t, &key(&t, 2)).expect("delete"));
    // Rows it has not read, rows it wrote or deleted, and a key no row has.
    prefetch_accounts(&mut a, &t, &[0, 1, 2, 3, 9]);
    assert_eq!(balance(&mut a, &t, 1), Some(111), "its own write");
    assert_eq!(balance(&mut a, &t, 2), None, "its own deletion");
    // Another transaction changes each row `a` only prefetched, and creates the missing one.
    let mut b = db
        .begin(Priority::HIGH, Isolation::Serializable)
        .expect("begin");
    for id in [0, 3] {
        assert!(set_balance(&mut b, &t, id, 7).expect("update"));
    }
    let row = account_row(&t, 9, "owner0", 9);
    b.insert(&t, row).expect("insert");
    b.commit().expect("commit");
    // A prefetch is no read: nothing `b` did is a conflict for `a`.
    a.commit().expect("commit");
    let mut check = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
    assert_eq!(balance(&mut check, &t, 0), Some(7));
    assert_eq!(balance(&mut check, &t, 1), Some(111));
    assert_eq!(balance(&mut check, &t, 2), None);
    assert_eq!(balance(&mut check, &t, 9), Some(9));
}

#[test]
fn a_prefetched_row_is_read_as_it_is_when_read() {
    let (db, t) = with_accounts(64, 100);
    let mut a = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
    prefetch_accounts(&mut a, &t, &[1, 2]);
    // Another transaction changes row 2 and puts a new key in the leaf `a` prefetched from, so
    // `a` must look key 2 up again; row 1 it may take from the prefetch.
    let mut b = db
        .begin(Priority::HIGH, Isolation::Snapshot)
        .expect("begin");
    assert!(set_balance(&mut b, &t, 2, 7).expect("update"));
    b.insert(&t, account_row(&t, 1000, "owner0", 5))
        .expect("insert");
    b.commit().expect("commit");
    assert_eq!(balance(&mut a, &t, 2), Some(100), "its snapshot's row 2");
    assert_eq!(balance(&mut a, &t, 1), Some(100));
    // Writing a prefetched row that changed since the snapshot is still a conflict.
    assert!(matches!(
        set_balance(&mut a, &t, 2, 8),
        Err(Error::Aborted(AbortReason::Conflict))
    ));
}

#[test]
fn prefetching_row_starts_is_a_hint_like_prefetching_rows() {
    let (db, t) = with_accounts(64, 100);
    let mut a = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
    let keys: Vec<_> = [1, 2, 99].iter().map(|&id| key(&t, id)).collect();
    let rows: Vec<_> = keys.iter().map(|k| (&*t, k)).collect();
    a.prefetch_row_starts(&rows);
    let mut b = db
        .begin(Priority::HIGH, Isolation::Snapshot)
        .expect("begin");
    assert!(set_balance(&mut b, &t, 2, 7).expect("update"));
    b.commit().expect("commit");
    assert_eq!(balance(&mut a, &t, 1), Some(100));
    assert_eq!(balance(&mut a, &t, 2), Some(100), "its snapshot's row 2");
    assert_eq!(balance(&mut a, &t, 99), None, "no such row");
    assert!(matches!(
        set_balance(&mut a, &t, 2, 8),
        Err(Error::Aborted(AbortReason::Conflict))
    ));
}

#[test]
fn prefetching_another_databases_table_changes_no_answer() {
    // Two databases whose tables have the same id and whose indexes saw the same changes, but
    // whose key 1 names different records.
    let make = |ids: [i64; 4]| {
        let db = Database::in_memory(Options::default());
        let t = accounts(&db);
        let mut txn = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
        for id in ids {
            txn.insert(&t, account_row(&t, id, "owner0", id))
                .expect("insert");
        }
        txn.commit().expect("commit");
        drop(txn);
        (db, t)
    };
    let (db, t) = make([0, 1, 2, 3]);
    let (_other_db, other) = make([50, 51, 52, 1]);
    assert_eq!(t.id(), other.id());
    let mut a = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
    prefetch_accounts(&mut a, &other, &[1]);
    assert_eq!(balance(&mut a, &t, 1), Some(1));
    assert!(set_balance(&mut a, &t, 1, 11).expect("update"));
    a.commit().expect("commit");
    let mut check = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
    assert_eq!(balance(&mut check, &t, 1), Some(11));
    assert_eq!(balance(&mut check, &t, 3), Some(3));
}

#[test]
fn a_prefetched_entry_collected_and_reinserted_is_looked_up_again() {
    let (db, t) = with_accounts(4, 100);
    // A reader keeps the deleted row 2 (and its index entry) until both transactions prefetched.
    let reader = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
    let mut deleter = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
    assert!(deleter.delete(&t, &key(&t, 2)).expect("delete"));
    deleter.commit().expect("commit");
    drop(deleter);
    let mut with_prefetch = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
    let without = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
    prefetch_accounts(&mut with_prefetch, &t, &[2]);
    // The deleted row goes (no snapshot needs it now), and key 2 is inserted again.
    drop(reader);
    db.collect_garbage();
    let mut inserter = db
        .begin(Priority::HIGH, Isolation::Snapshot)
        .expect("begin");
    inserter
        .insert(&t, account_row(&t, 2, "owner2", 5))
        .expect("insert");
    inserter.commit().expect("commit");
    drop(inserter);
    // The prefetched transaction answers exactly as the other one does.
    let mut answers = Vec::new();
    for mut txn in [with_prefetch, without] {
        let read = balance(&mut txn, &t, 2);
        let written = set_balance(&mut txn, &t, 2, 1);
        answers.push(format!("{read:?} {written:?}"));
    }
    assert_eq!(answers[0], answers[1]);
}

/// Inserts of ascending keys look each next key up in the leaf the previous one was found in
/// (while it is unchanged): keys already there are still found, in this leaf or past its end,
/// and a leaf another commit changed meanwhile is looked up again.
#[test]
fn ascending_inserts_still_find_every_existing_key() {
    let (db, t) = with_accounts(0, 0);
    let mut setup = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
    for id in (0..400).step_by(10) {
        setup
            .insert(&t, account_row(&t, id, "x", 1))
            .expect("insert");
    }
    setup.commit().expect("commit");
    let duplicate = Err(Error::DuplicateKey {
        table: "accounts".into(),
    });
    let mut txn = db
        .begin(Priority::LOW, Isolation::Serializable)
        .expect("begin");
    for id in 1..400 {
        if id == 355 {
            continue;
        }
        let result = txn.insert(&t, account_row(&t, id, "y", 2));
        if id % 10 == 0 {
            assert_eq!(result, duplicate, "key {id} exists");
        } else {
            assert_eq!(result, Ok(()), "key {id} is free");
        }
        if id == 350 {
            // Another commit changes the leaf this transaction's inserts are in.
            let mut other = db
                .begin(Priority::HIGH, Isolation::Snapshot)
                .expect("begin");
            other
                .insert(&t, account_row(&t, 355, "z", 3))
                .expect("insert");
            other.commit().expect("commit");
        }
    }
    txn.commit().expect("commit");
    let mut check = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
    assert_eq!(balance(&mut check, &t, 355), Some(3));
    assert_eq!(balance(&mut check, &t, 356), Some(2));
    assert_eq!(balance(&mut check, &t, 11), Some(2));
    assert_eq!(balance(&mut check, &t, 390), Some(1));
}
