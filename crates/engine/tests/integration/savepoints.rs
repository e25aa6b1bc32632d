//! Savepoints: rolling a transaction's writes back to a point restores exactly what it had
//! written then (rows changed since restored, rows added since gone, rows deleted since back),
//! seen by its own reads and scans and by what it commits.

use std::collections::BTreeMap;
use std::ops::ControlFlow;

use crate::common::{self, BALANCE, ID, account_row, balance, key, set_balance, with_accounts};
use overtake_engine::{Database, Isolation, KeyRange, Priority, ScanOptions, Table, Transaction};

/// Every account the transaction sees, by id, with its balance (a full scan, so the write set's
/// scan lookups are exercised too).
fn seen(txn: &mut Transaction<'_>, t: &Table) -> BTreeMap<i64, i64> {
    let mut out = BTreeMap::new();
    txn.scan(t, &KeyRange::all(), ScanOptions::forward(), |r| {
        out.insert(r.int(ID), r.decimal_units(BALANCE));
        ControlFlow::Continue(())
    })
    .expect("scan");
    out
}

/// The same through the secondary index on the owner.
fn seen_by_owner(txn: &mut Transaction<'_>, t: &Table) -> BTreeMap<i64, i64> {
    let index = t.index("by_owner").expect("index");
    let mut out = BTreeMap::new();
    txn.scan_index(t, index, &KeyRange::all(), ScanOptions::forward(), |r| {
        out.insert(r.int(ID), r.decimal_units(BALANCE));
        ControlFlow::Continue(())
    })
    .expect("scan");
    out
}

fn committed(db: &Database, t: &Table) -> BTreeMap<i64, i64> {
    let mut txn = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
    let out = seen(&mut txn, t);
    txn.commit().expect("commit");
    out
}

#[test]
fn rolling_back_to_a_savepoint_restores_what_was_written_then() {
    let (db, t) = with_accounts(10, 100);
    let mut txn = db
        .begin(Priority::LOW, Isolation::Serializable)
        .expect("begin");
    set_balance(&mut txn, &t, 1, 111).expect("update");
    txn.insert(&t, account_row(&t, 20, "new", 2000))
        .expect("insert");
    let first = txn.savepoint().expect("savepoint");
    let at_first = seen(&mut txn, &t);

    // Changes to rows written before the savepoint, to rows only read before it, new rows,
    // and deletes of both kinds.
    set_balance(&mut txn, &t, 1, 1111).expect("update");
    set_balance(&mut txn, &t, 2, 222).expect("update");
    txn.insert(&t, account_row(&t, 21, "newer", 2100))
        .expect("insert");
    assert!(txn.delete(&t, &key(&t, 20)).expect("delete"));
    assert!(txn.delete(&t, &key(&t, 3)).expect("delete"));
    let second = txn.savepoint().expect("savepoint");
    let at_second = seen(&mut txn, &t);

    set_balance(&mut txn, &t, 21, 2121).expect("update");
    txn.insert(&t, account_row(&t, 20, "again", 2020))
        .expect("insert again");
    txn.insert(&t, account_row(&t, 22, "newest", 2200))
        .expect("insert");
    assert_ne!(seen(&mut txn, &t), at_second);

    txn.rollback_to(&second).expect("rollback to the second");
    assert_eq!(seen(&mut txn, &t), at_second);
    assert_eq!(seen_by_owner(&mut txn, &t), at_second);
    txn.rollback_to(&first).expect("rollback to the first");
    assert_eq!(seen(&mut txn, &t), at_first);
    assert_eq!(seen_by_owner(&mut txn, &t), at_first);
    assert_eq!(balance(&mut txn, &t, 1), Some(111));
    assert_eq!(balance(&mut txn, &t, 21), None);

    // The savepoint stays usable after a rollback to it.
    set_balance(&mut txn, &t, 4, 444).expect("update");
    txn.rollback_to(&first)
        .expect("rollback to the first again");
    assert_eq!(seen(&mut txn, &t), at_first);
    txn.commit().expect("commit");
    drop(txn);
    assert_eq!(committed(&db, &t), at_first);
}

#[test]
fn a_transaction_that_ended_cannot_roll_back_to_a_savepoint() {
    let (db, t) = with_accounts(2, 100);
    let mut txn = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
    let sp = txn.savepoint().expect("savepoint");
    set_balance(&mut txn, &t, 0, 1).expect("update");
    let _ = txn.rollback();
    assert!(txn.rollback_to(&sp).is_err());
    assert!(txn.savepoint().is_err());
    drop(txn);
    assert_eq!(committed(&db, &t), BTreeMap::from([(0, 100), (1, 100)]));
}

/// A small deterministic generator (the test must not depend on a global RNG).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// Random inserts, updates, deletes, savepoints, rollbacks to them and releases, against a model
/// that keeps a copy of the rows at each savepoint: after every step the transaction sees what
/// the model holds, and commits it.
#[test]
fn savepoints_agree_with_a_model_of_copies() {
    for seed in 1..=40u64 {
        let (db, t) = with_accounts(12, 100);
        let mut model: BTreeMap<i64, i64> = (0..12).map(|id| (id, 100)).collect();
        let mut stack: Vec<(overtake_engine::Savepoint, BTreeMap<i64, i64>)> = Vec::new();
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let mut txn = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
        for step in 0..120 {
            let id = rng.below(24) as i64;
            let cents = rng.below(10_000) as i64;
            match rng.below(10) {
                0..=2 => {
                    let done = set_balance(&mut txn, &t, id, cents).expect("update");
                    assert_eq!(done, model.contains_key(&id), "seed {seed} step {step}");
                    if done {
                        model.insert(id, cents);
                    }
                }
                3 | 4 => {
                    let result = txn.insert(&t, account_row(&t, id, "x", cents));
                    assert_eq!(
                        result.is_ok(),
                        !model.contains_key(&id),
                        "seed {seed} step {step}"
                    );
                    model.entry(id).or_insert(cents);
                }
                5 => {
                    let done = txn.delete(&t, &key(&t, id)).expect("delete");
                    assert_eq!(done, model.remove(&id).is_some(), "seed {seed} step {step}");
                }
                6 | 7 => stack.push((txn.savepoint().expect("savepoint"), model.clone())),
                8 if !stack.is_empty() => {
                    // ROLLBACK TO a savepoint of the stack: the later ones are gone.
                    let at = rng.below(stack.len() as u64) as usize;
                    stack.truncate(at + 1);
                    let (sp, rows) = stack.last().expect("a savepoint");
                    txn.rollback_to(sp).expect("rollback to");
                    model = rows.clone();
                }
                9 if !stack.is_empty() => {
                    // RELEASE: the savepoint and the later ones are gone, the writes stay.
                    let at = rng.below(stack.len() as u64) as usize;
                    stack.truncate(at);
                    if stack.is_empty() {
                        txn.forget_savepoints();
                    }
                }
                _ => {}
            }
            assert_eq!(seen(&mut txn, &t), model, "seed {seed} step {step}");
        }
        assert_eq!(seen_by_owner(&mut txn, &t), model, "seed {seed}");
        txn.commit().expect("commit");
        drop(txn);
        assert_eq!(committed(&db, &t), model, "seed {seed}");
        // Nothing the rolled-back writes added was left in the index.
        let by_owner = t.index("by_owner").expect("index");
        assert_eq!(
            common::index_entries(&db, &t, by_owner),
            model.len(),
            "seed {seed}"
        );
    }
}
