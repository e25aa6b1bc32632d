//! Many threads at once: invariants hold, memory stays bounded.

use crate::common;

use std::ops::ControlFlow;
use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use common::*;
use overtake_engine::{Error, Isolation, KeyRange, Priority, RetryPolicy, ScanOptions};

const ACCOUNTS: i64 = 16;
const START: i64 = 1_000;

/// A small deterministic generator (tests must not depend on the machine's entropy).
struct Lcg(u64);
impl Lcg {
    fn next(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

fn transfers_preserve_the_total(level: Isolation) {
    let (db, t) = with_accounts(ACCOUNTS, START);
    let stop = AtomicBool::new(false);
    let committed = AtomicU64::new(0);
    let snapshots_checked = AtomicU64::new(0);
    let barrier = Barrier::new(4);
    std::thread::scope(|s| {
        let mut writers = Vec::new();
        for worker in 0..3u64 {
            let (db, t, barrier, committed) = (&db, &t, &barrier, &committed);
            let checked = &snapshots_checked;
            writers.push(s.spawn(move || {
                let mut rng = Lcg(worker + 1);
                barrier.wait();
                for i in 0..3_000 {
                    if i == 1_500 {
                        // Half-way, let the reader check a snapshot among the transfers
                        // (on a loaded machine it might otherwise not run before they end).
                        // (A reader that failed stops counting: `u64::MAX` then.)
                        while checked.load(Ordering::Relaxed) == 0 {
                            std::thread::yield_now();
                        }
                    }
                    let from = rng.next(ACCOUNTS as u64) as i64;
                    let to = (from + 1 + rng.next(ACCOUNTS as u64 - 1) as i64) % ACCOUNTS;
                    let amount = 1 + rng.next(50) as i64;
                    let attempts = db.run(Priority::HIGH, level, &RetryPolicy::forever(), |txn| {
                        let have = balance(txn, t, from).expect("exists");
                        if have < amount {
                            return Ok(false); // insufficient funds: commit nothing
                        }
                        txn.update(t, &key(t, from), |r| {
                            r.decimal_units(BALANCE, have - amount);
                        })?;
                        let other = balance(txn, t, to).expect("exists");
                        txn.update(t, &key(t, to), |r| {
                            r.decimal_units(BALANCE, other + amount);
                        })?;
                        Ok(true)
                    });
                    if attempts.result.expect("transfers only abort retryably") {
                        committed.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }));
        }
        let (db, t, barrier, stop, checked) = (&db, &t, &barrier, &stop, &snapshots_checked);
        s.spawn(move || {
            /// Unblocks the writers if the reader panics before its first snapshot.
            struct Unblock<'a>(&'a AtomicU64);
            impl Drop for Unblock<'_> {
                fn drop(&mut self) {
                    if std::thread::panicking() {
                        self.0.store(u64::MAX, Ordering::Relaxed);
                    }
                }
            }
            let _unblock = Unblock(checked);
            barrier.wait();
            loop {
                // Every snapshot, however it interleaves with the transfers, balances.
                let mut txn = db.begin(Priority::LOW, level).expect("begin");
                let mut total = 0;
                txn.scan(t, &KeyRange::all(), ScanOptions::forward(), |r| {
                    let b = r.decimal_units(BALANCE);
                    assert!(b >= 0, "a balance went negative");
                    total += b;
                    ControlFlow::Continue(())
                })
                .expect("scan");
                assert_eq!(
                    total,
                    ACCOUNTS * START,
                    "a snapshot saw a half-done transfer"
                );
                txn.commit().expect("read-only commit");
                checked.fetch_add(1, Ordering::Relaxed);
                if stop.load(Ordering::Relaxed) {
                    break;
                }
            }
        });
        for w in writers {
            w.join().expect("writer");
        }
        stop.store(true, Ordering::Relaxed);
    });
    let mut txn = db.begin(Priority::LOW, level).expect("begin");
    let total: i64 = (0..ACCOUNTS)
        .map(|id| balance(&mut txn, &t, id).expect("row"))
        .sum();
    assert_eq!(total, ACCOUNTS * START);
    assert!(
        committed.load(Ordering::Relaxed) > 1_000,
        "most transfers commit"
    );
    assert!(snapshots_checked.load(Ordering::Relaxed) > 0);
}

#[test]
fn transfers_preserve_the_total_under_snapshot_isolation() {
    transfers_preserve_the_total(Isolation::Snapshot);
}

#[test]
fn transfers_preserve_the_total_under_serializable_isolation() {
    transfers_preserve_the_total(Isolation::Serializable);
}

#[test]
fn collector_unlinks_versions_no_snapshot_needs() {
    let (db, t) = with_accounts(8, 0);
    let bump = |n: i64| {
        for i in 0..n {
            let attempts = db.run(
                Priority::HIGH,
                Isolation::Snapshot,
                &RetryPolicy::never(),
                |txn| {
                    txn.update(&t, &key(&t, i % 8), |r| {
                        let v = r.as_ref().decimal_units(BALANCE);
                        r.decimal_units(BALANCE, v + 1);
                    })
                },
            );
            assert_eq!(attempts.result, Ok(true));
        }
    };
    bump(4_000);
    db.collect_garbage();
    let census = db.census();
    assert_eq!(census.live_records, 8);
    assert_eq!(census.unreclaimed_versions, 0);
    assert_eq!(
        census.linked_versions, 8,
        "one version per record is all anyone needs"
    );

    // A long reader pins the versions it may read; the collector must keep them.
    let mut reader = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
    let before: Vec<i64> = (0..8)
        .map(|i| balance(&mut reader, &t, i).expect("row"))
        .collect();
    bump(800);
    db.collect_garbage();
    let pinned = db.census();
    assert!(
        pinned.linked_versions > 8,
        "versions the reader may need are kept"
    );
    let during: Vec<i64> = (0..8)
        .map(|i| balance(&mut reader, &t, i).expect("row"))
        .collect();
    assert_eq!(before, during, "the reader's snapshot is intact");
    drop(reader);
    db.collect_garbage();
    let after = db.census();
    assert_eq!(after.unreclaimed_versions, 0);
    assert_eq!(after.linked_versions, 8);
    let stats = db.stats();
    assert_eq!(
        stats.versions_created - stats.versions_reclaimed,
        after.linked_versions,
        "every version created is either linked or was reclaimed"
    );
}

#[test]
fn deleted_records_leave_the_indexes_and_their_slots_are_reused() {
    let (db, t) = with_accounts(0, 0);
    let by_owner = t.index("by_owner").expect("index");
    std::thread::scope(|s| {
        for worker in 0..2i64 {
            let (db, t) = (&db, &t);
            s.spawn(move || {
                // Each worker cycles its own 10 keys: insert all, delete all, 200 times.
                for round in 0..200 {
                    for k in 0..10 {
                        let id = worker * 100 + k;
                        let row = t
                            .row_builder()
                            .int(ID, id)
                            .str(OWNER, &format!("w{worker}"))
                            .decimal_units(BALANCE, round)
                            .finish()
                            .expect("row");
                        let a = db.run(
                            Priority::HIGH,
                            Isolation::Serializable,
                            &RetryPolicy::forever(),
                            |txn| txn.insert(t, row.clone()),
                        );
                        assert_eq!(a.result, Ok(()));
                    }
                    for k in 0..10 {
                        let id = worker * 100 + k;
                        let a = db.run(
                            Priority::HIGH,
                            Isolation::Serializable,
                            &RetryPolicy::forever(),
                            |txn| txn.delete(t, &key(t, id)),
                        );
                        assert_eq!(a.result, Ok(true));
                    }
                }
            });
        }
    });
    db.collect_garbage();
    let census = db.census();
    assert_eq!(census.live_records, 0);
    assert_eq!(census.unreclaimed_deletes, 0);
    assert_eq!(census.linked_versions, 0, "dead records keep no versions");
    assert_eq!(common::index_entries(&db, &t, by_owner), 0);
    // 4,000 inserts went through; OIDs were recycled instead of growing with every insert.
    assert!(
        t.slots_allocated() < 1_000,
        "{} slots for 20 live keys at a time",
        t.slots_allocated()
    );
    // And the keys work again afterwards.
    let row = t
        .row_builder()
        .int(ID, 0)
        .str(OWNER, "back")
        .decimal_units(BALANCE, 1)
        .finish()
        .expect("row");
    assert_eq!(
        db.run(
            Priority::HIGH,
            Isolation::Snapshot,
            &RetryPolicy::never(),
            |txn| txn.insert(&t, row.clone())
        )
        .result,
        Ok(())
    );
}

#[test]
fn too_many_open_transactions_is_an_error() {
    let db = overtake_engine::Database::in_memory(
        overtake_engine::Options::default().max_transactions(2),
    );
    let a = db.begin(Priority::LOW, Isolation::Snapshot).expect("1");
    let _b = db.begin(Priority::LOW, Isolation::Snapshot).expect("2");
    assert!(matches!(
        db.begin(Priority::HIGH, Isolation::Snapshot),
        Err(Error::TooManyTransactions(2))
    ));
    drop(a);
    assert!(db.begin(Priority::HIGH, Isolation::Snapshot).is_ok());
}

/// Runs one transaction doing `steps` on key 50 of a table holding accounts 0..4, collects
/// garbage, and returns the census.
fn census_after(steps: &[&str]) -> overtake_engine::VersionCensus {
    let (db, t) = with_accounts(4, 1);
    let mut txn = db
        .begin(Priority::LOW, Isolation::Serializable)
        .expect("begin");
    for step in steps {
        let id = if *step == "insert" { 50 } else { 0 };
        match *step {
            "insert" => {
                let row = t
                    .row_builder()
                    .int(ID, id)
                    .str(OWNER, "new")
                    .decimal_units(BALANCE, 1)
                    .finish()
                    .expect("row");
                txn.insert(&t, row).expect("insert");
            }
            "update" | "update50" => {
                let id = if *step == "update" { 0 } else { 50 };
                assert!(
                    txn.update(&t, &key(&t, id), |r| {
                        r.str(OWNER, "moved");
                    })
                    .expect("update")
                );
            }
            "delete" | "delete50" => {
                let id = if *step == "delete" { 0 } else { 50 };
                assert!(txn.delete(&t, &key(&t, id)).expect("delete"));
            }
            other => unreachable!("{other}"),
        }
    }
    txn.commit().expect("commit");
    drop(txn);
    db.collect_garbage();
    db.census()
}

#[test]
fn records_written_then_deleted_in_one_transaction_are_reclaimed() {
    for steps in [
        &["update", "delete"][..],
        &["insert", "delete50"],
        &["insert", "update50", "delete50"],
    ] {
        let c = census_after(steps);
        // Account 0 is deleted, or key 50 never outlives its transaction.
        let live = if steps[0] == "update" { 3 } else { 4 };
        assert_eq!(c.live_records, live, "{steps:?}: {c:?}");
        assert_eq!(c.unreclaimed_deletes, 0, "{steps:?}: {c:?}");
        assert_eq!(c.unreclaimed_versions, 0, "{steps:?}: {c:?}");
        assert_eq!(
            c.linked_versions, live,
            "{steps:?}: nothing of the dead record stays"
        );
        assert_eq!(
            c.index_entries,
            2 * live,
            "{steps:?}: its keys left both indexes"
        );
        assert_eq!(c.dangling_index_entries, 0, "{steps:?}: {c:?}");
    }
}

#[test]
fn records_written_twice_in_one_transaction_keep_one_version() {
    for steps in [&["insert", "update50"][..], &["update", "update"]] {
        let c = census_after(steps);
        let live = if steps[0] == "insert" { 5 } else { 4 };
        assert_eq!(c.live_records, live, "{steps:?}: {c:?}");
        assert_eq!(c.linked_versions, live, "{steps:?}: {c:?}");
        assert_eq!(c.unreclaimed_versions, 0, "{steps:?}: {c:?}");
        assert_eq!(c.index_entries, 2 * live, "{steps:?}: {c:?}");
        assert_eq!(c.dangling_index_entries, 0, "{steps:?}: {c:?}");
    }
}

/// A row whose secondary key goes back and forth (K -> K' -> K) while its stale entries are
/// collected by another thread: a scan of the index under either key, in any snapshot, finds the
/// row exactly once.
/// (The collector once removed a stale entry and put it back after looking again, and a scan in
/// between missed a row whose key had just returned to K.)
#[test]
fn a_row_whose_key_comes_back_is_never_missing_from_its_index() {
    let (db, t) = with_accounts(1, 0);
    let by_owner = t.index("by_owner").expect("index");
    let owners = ["a", "b"];
    let mut txn = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
    let moved = txn.update(&t, &key(&t, 0), |r| {
        r.str(OWNER, "b");
    });
    assert_eq!(moved, Ok(true));
    txn.commit().expect("commit");
    drop(txn);
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            for n in 0..20_000 {
                let attempts = db.run(
                    Priority::HIGH,
                    Isolation::Snapshot,
                    &RetryPolicy::forever(),
                    |txn| {
                        txn.update(&t, &key(&t, 0), |r| {
                            r.str(OWNER, owners[n % 2]);
                        })
                    },
                );
                assert_eq!(attempts.result, Ok(true));
            }
            stop.store(true, Ordering::Release);
        });
        // Stale entries are collected by another thread, while the writer adds them back.
        s.spawn(|| {
            while !stop.load(Ordering::Acquire) {
                db.collect_garbage();
            }
        });
        {
            s.spawn(|| {
                while !stop.load(Ordering::Acquire) {
                    let mut txn = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
                    let mut found = 0;
                    for owner in owners {
                        let prefix = t.index_key(by_owner).str(owner).prefix().expect("prefix");
                        txn.scan_index(
                            &t,
                            by_owner,
                            &KeyRange::prefix(prefix),
                            ScanOptions::forward(),
                            |_| {
                                found += 1;
                                ControlFlow::Continue(())
                            },
                        )
                        .expect("scan");
                    }
                    assert_eq!(found, 1, "the row under exactly one of its keys");
                    txn.commit().expect("read-only");
                }
            });
        }
    });
}

/// While long readers hold the watermark back, a hot row's versions that no reader's snapshot
/// sees are unlinked as it is updated, and every reader still reads its own snapshot.
#[test]
fn versions_between_live_snapshots_that_none_sees_are_unlinked() {
    let (db, t) = with_accounts(1, 0);
    let set = |cents: i64| {
        let attempts = db.run(
            Priority::HIGH,
            Isolation::Snapshot,
            &RetryPolicy::never(),
            |txn| set_balance(txn, &t, 0, cents),
        );
        assert_eq!(attempts.result, Ok(true));
    };
    let mut first = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
    assert_eq!(balance(&mut first, &t, 0), Some(0));
    for cents in 1..=50 {
        set(cents);
    }
    let mut second = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
    assert_eq!(balance(&mut second, &t, 0), Some(50));
    for cents in 51..=100 {
        set(cents);
    }
    let linked = db.census().linked_versions;
    assert!(
        linked <= 16,
        "{linked} versions linked: the 100 updates' intermediate versions should be gone"
    );
    assert_eq!(balance(&mut first, &t, 0), Some(0), "the oldest snapshot");
    assert_eq!(balance(&mut second, &t, 0), Some(50), "the middle one");
    let mut third = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
    assert_eq!(balance(&mut third, &t, 0), Some(100));
    for txn in [first, second, third] {
        drop(txn);
    }
    db.collect_garbage();
    let after = db.census();
    assert_eq!(after.linked_versions, 1);
    let stats = db.stats();
    assert_eq!(
        stats.versions_created - stats.versions_reclaimed,
        after.linked_versions,
        "every version created is either linked or was reclaimed, once"
    );
}
