//! A transaction waiting for its log flush parks: its worker runs other calls meanwhile, and the
//! commit returns once the record is durable. One worker, the `wait` policy (nothing is paused
//! for priority), so a second call can only run while the first one's task is parked.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use overtake_engine::{
    ColumnType, Database, Durability, Isolation, Options, Priority, RetryPolicy, TableSchema,
};
use overtake_sched::{CallExecutor, Policy, Scheduler, Shutdown};

use crate::common;

#[test]
fn a_commit_waiting_for_its_flush_lets_its_worker_run_another_call() {
    let dir = std::env::temp_dir().join(format!("overtake-sched-durable-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let db = Arc::new(
        Database::open(
            &dir,
            Options::default()
                .durability(Durability::Sync)
                .checkpoint_after(None),
        )
        .expect("open"),
    );
    let table = db
        .create_table(
            TableSchema::builder("t")
                .column("k", ColumnType::Int64)
                .primary_key(&["k"])
                .build()
                .expect("schema"),
        )
        .expect("table");
    let scheduler = Arc::new(
        Scheduler::start(&common::config(Policy::Wait), Arc::new(CallExecutor)).expect("start"),
    );
    // A low-priority commit waits for the writer's batch interval (milliseconds), unless a
    // flush happens to complete between its append and its look at the log: then it does not
    // park and the other call runs after it. So it is tried a few times; one park is enough.
    let mut parked_once = false;
    for k in 0..20 {
        let committing = Arc::new(AtomicBool::new(false));
        let committed = Arc::new(AtomicBool::new(false));
        let (db2, t2, s2) = (Arc::clone(&db), Arc::clone(&table), Arc::clone(&scheduler));
        let (c1, c2) = (Arc::clone(&committing), Arc::clone(&committed));
        let writer = scheduler
            .call(Priority::LOW, move || {
                // Queued behind this call on the only worker: it runs when this one parks or
                // ends.
                let (c3, c4) = (Arc::clone(&c1), Arc::clone(&c2));
                let other = s2
                    .call(Priority::LOW, move || {
                        (c3.load(Ordering::Acquire), c4.load(Ordering::Acquire))
                    })
                    .expect("admitted");
                let attempts = db2.run(
                    Priority::LOW,
                    Isolation::Snapshot,
                    &RetryPolicy::default(),
                    |txn| {
                        let row = t2.row_builder().int(0, k).finish()?;
                        txn.insert(&t2, row)?;
                        c1.store(true, Ordering::Release);
                        Ok(())
                    },
                );
                c2.store(true, Ordering::Release);
                (attempts.result, attempts.durable_wait, other)
            })
            .expect("admitted");
        let (result, waited, other) = writer.wait().expect("writer");
        assert_eq!(result, Ok(()));
        let (saw_committing, saw_committed) = other.wait().expect("other call");
        if saw_committing && !saw_committed {
            // The other call ran between the commit's start and its return: the task parked.
            assert!(!waited.is_zero(), "it waited for the flush");
            parked_once = true;
            break;
        }
    }
    assert!(parked_once, "no commit parked for its flush in 20 tries");
    // A checkpoint blocks its thread for as long as it writes: refused inside a task.
    let d = Arc::clone(&db);
    let refused = scheduler
        .call(Priority::LOW, move || d.checkpoint().err())
        .expect("admitted");
    assert_eq!(
        refused.wait().expect("call"),
        Some(overtake_engine::CheckpointError::InTask)
    );
    assert!(db.checkpoint().is_ok(), "from a thread of its own");
    Arc::into_inner(scheduler)
        .expect("last handle")
        .shutdown(Shutdown::Drain)
        .expect("shutdown");
    drop(table);
    drop(db);
    // What was acknowledged is there after reopening.
    let db = Database::open(&dir, Options::default()).expect("reopen");
    assert!(db.table("t").is_ok());
    drop(db);
    std::fs::remove_dir_all(&dir).expect("clean up");
}
