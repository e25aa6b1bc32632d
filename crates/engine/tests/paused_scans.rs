//! A long scan paused by preemption holds no epoch: alone in its test binary, because it checks
//! that the epoch can advance, which any other thread inside an epoch would hold up.

#[path = "integration/common/mod.rs"]
mod common;

use std::sync::Arc;

use common::preempted::preempt_once_at;
use common::*;
use overtake_engine::{Isolation, Priority};
use overtake_runtime::preempt::inject::Point;

// As in every program that preempts: allocation runs in regions.
#[global_allocator]
static ALLOC: overtake_runtime::EngineAllocator = overtake_runtime::engine_allocator();

/// A scan paused at a record access is not inside an epoch: while it is paused, the urgent work
/// on its worker can advance the epoch and free what was retired (a paused scan that held its
/// epoch kept every thread's garbage until it resumed).
#[test]
fn a_scan_paused_at_a_record_access_holds_no_epoch() {
    let (db, t) = with_accounts(300, 1);
    let db = Arc::new(db);
    let (db2, t2) = (Arc::clone(&db), Arc::clone(&t));
    let freed = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let seen = Arc::clone(&freed);
    let reached = preempt_once_at(
        Point::RecordAccess,
        200,
        move || {
            let mut txn = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
            let rows = txn
                .scan(
                    &t,
                    &overtake_engine::KeyRange::all(),
                    overtake_engine::ScanOptions::forward(),
                    |_| std::ops::ControlFlow::Continue(()),
                )
                .expect("scan");
            assert_eq!(rows, 300);
            txn.commit().expect("read-only");
        },
        move || {
            // Updates retire versions; then the epoch must be able to move on.
            let mut txn = db2
                .begin(Priority::HIGH, Isolation::Snapshot)
                .expect("begin");
            assert_eq!(set_balance(&mut txn, &t2, 7, 70), Ok(true));
            txn.commit().expect("commit");
            drop(txn);
            seen.store(
                overtake_engine::release_thread_garbage(),
                std::sync::atomic::Ordering::SeqCst,
            );
        },
    );
    assert!(reached, "the scan reaches its 200th record access");
    assert!(
        freed.load(std::sync::atomic::Ordering::SeqCst),
        "the epoch advanced while the scan was paused"
    );
}
