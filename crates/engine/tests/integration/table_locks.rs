//! Table locks: writers of a table share its `Write` lock, and a transaction replacing the table
//! (`Rebuild`) waits for them and makes later writers wait for it, at every isolation level, so
//! that no commit lands in a table while it is copied and replaced. Key locks (a row's key apart
//! from its other columns, for foreign keys) are shared by checks and taken alone by a delete,
//! and writes of the row's columns neither take nor wait for them. Sessions as in
//! two_phase_locking.rs: a step that waits for a lock is seen waiting in the lock table.

use crate::common;

use std::ops::ControlFlow;
use std::sync::Arc;

use common::hermitage_table;
use common::sessions::{Outcome, Progress, Session};
use common::steps::{aborted, committed, done, insert, write};
use overtake_engine::{
    AbortReason, Database, Error, Isolation, KeyLock, KeyRange, Options, Priority, ScanOptions,
    Table, TableLock, Transaction,
};

fn setup() -> (Database, Arc<Table>) {
    let db = Database::in_memory(Options::default());
    let t = hermitage_table(&db);
    (db, t)
}

/// A step: takes `t`'s table lock in `mode`.
fn lock(
    t: &Arc<Table>,
    mode: TableLock,
) -> impl for<'a, 'b> FnOnce(&'a mut Transaction<'b>) -> Outcome + Send + use<> {
    let t = Arc::clone(t);
    move |txn| {
        txn.lock_table(&t, mode)?;
        Ok(Vec::new())
    }
}

/// A step: the ids the transaction sees in `t` (scanned validated, as a rebuild's copy is).
fn ids(
    t: &Arc<Table>,
) -> impl for<'a, 'b> FnOnce(&'a mut Transaction<'b>) -> Outcome + Send + use<> {
    let t = Arc::clone(t);
    move |txn| {
        txn.next_statement();
        let mut out = Vec::new();
        let options = ScanOptions::forward().validated();
        txn.scan(&t, &KeyRange::all(), options, |r| {
            out.push(r.int(0));
            ControlFlow::Continue(())
        })?;
        Ok(out)
    }
}

#[test]
fn a_rebuild_waits_for_a_writer_and_copies_its_commit() {
    for isolation in [Isolation::Snapshot, Isolation::ReadCommitted] {
        let (db, t) = setup();
        std::thread::scope(|s| {
            let mut writer = Session::begin_at(s, &db, Priority::LOW, isolation);
            let mut rebuild = Session::begin_at(s, &db, Priority::LOW, Isolation::ReadCommitted);
            assert_eq!(writer.run(&db, lock(&t, TableLock::Write)), done(&[]));
            assert_eq!(writer.run(&db, insert(&t, 3, 30)), done(&[]));
            assert_eq!(
                rebuild.run(&db, lock(&t, TableLock::Rebuild)),
                Progress::Blocked
            );
            assert_eq!(writer.commit(&db), done(&[]));
            assert_eq!(rebuild.unblocked(), Ok(vec![]));
            // READ COMMITTED: the lock renewed the snapshot, so the copy has the commit.
            assert_eq!(rebuild.run(&db, ids(&t)), done(&[1, 2, 3]));
            assert_eq!(rebuild.commit(&db), done(&[]));
            writer.close();
            rebuild.close();
        });
    }
}

#[test]
fn a_writer_waits_for_a_rebuild() {
    let (db, t) = setup();
    std::thread::scope(|s| {
        let mut rebuild = Session::begin_at(s, &db, Priority::LOW, Isolation::ReadCommitted);
        let mut writer = Session::begin_at(s, &db, Priority::HIGH, Isolation::Snapshot);
        assert_eq!(rebuild.run(&db, lock(&t, TableLock::Rebuild)), done(&[]));
        assert_eq!(
            writer.run(&db, lock(&t, TableLock::Write)),
            Progress::Blocked
        );
        let rollback = |txn: &mut Transaction<'_>| {
            txn.abort();
            Ok(Vec::new())
        };
        assert_eq!(rebuild.run(&db, rollback), done(&[]));
        // Rolled back: the table was not replaced, and the writer goes on.
        assert_eq!(writer.unblocked(), Ok(vec![]));
        assert_eq!(writer.run(&db, write(&t, 1, 11)), done(&[]));
        assert_eq!(writer.commit(&db), done(&[]));
        rebuild.close();
        writer.close();
    });
    assert_eq!(committed(&db, &t), [(1, 11), (2, 20)]);
}

#[test]
fn a_writer_let_in_after_a_committed_rebuild_finds_the_table_replaced() {
    let (db, t) = setup();
    std::thread::scope(|s| {
        let mut rebuild = Session::begin_at(s, &db, Priority::LOW, Isolation::ReadCommitted);
        let mut writer = Session::begin_at(s, &db, Priority::LOW, Isolation::ReadCommitted);
        assert_eq!(rebuild.run(&db, lock(&t, TableLock::Rebuild)), done(&[]));
        assert_eq!(
            writer.run(&db, lock(&t, TableLock::Write)),
            Progress::Blocked
        );
        assert_eq!(rebuild.commit(&db), done(&[]));
        assert_eq!(
            writer.unblocked(),
            Err(Error::TableReplaced("test".to_owned()))
        );
        // Still active: it may go on elsewhere and commit.
        assert_eq!(writer.commit(&db), done(&[]));
        rebuild.close();
        writer.close();
    });
    assert!(t.is_replaced());
}

#[test]
fn writers_share_the_write_lock() {
    let (db, t) = setup();
    std::thread::scope(|s| {
        let mut a = Session::begin_at(s, &db, Priority::LOW, Isolation::Snapshot);
        let mut b = Session::begin_at(s, &db, Priority::LOW, Isolation::Serializable);
        assert_eq!(a.run(&db, lock(&t, TableLock::Write)), done(&[]));
        assert_eq!(b.run(&db, lock(&t, TableLock::Write)), done(&[]));
        // Asking again, or for less than held, does not wait.
        assert_eq!(a.run(&db, lock(&t, TableLock::Write)), done(&[]));
        assert_eq!(a.run(&db, insert(&t, 3, 30)), done(&[]));
        assert_eq!(b.run(&db, insert(&t, 4, 40)), done(&[]));
        assert_eq!(a.commit(&db), done(&[]));
        assert_eq!(b.commit(&db), done(&[]));
        a.close();
        b.close();
    });
    assert_eq!(committed(&db, &t), [(1, 10), (2, 20), (3, 30), (4, 40)]);
}

#[test]
fn a_snapshot_rebuild_fails_if_a_commit_came_between_its_snapshot_and_its_lock() {
    // Its snapshot predates the commit, so its copy would leave the row out: the validated scan
    // fails the rebuild's commit instead.
    let (db, t) = setup();
    std::thread::scope(|s| {
        let mut rebuild = Session::begin_at(s, &db, Priority::LOW, Isolation::Snapshot);
        let mut writer = Session::begin_at(s, &db, Priority::LOW, Isolation::ReadCommitted);
        assert_eq!(rebuild.run(&db, ids(&t)), done(&[1, 2]));
        assert_eq!(writer.run(&db, lock(&t, TableLock::Write)), done(&[]));
        assert_eq!(writer.run(&db, insert(&t, 3, 30)), done(&[]));
        assert_eq!(writer.commit(&db), done(&[]));
        assert_eq!(rebuild.run(&db, lock(&t, TableLock::Rebuild)), done(&[]));
        assert_eq!(rebuild.run(&db, ids(&t)), done(&[1, 2]));
        assert_eq!(rebuild.run(&db, insert(&t, 9, 90)), done(&[]));
        assert_eq!(
            rebuild.commit(&db),
            Progress::Done(aborted(AbortReason::Validation))
        );
        rebuild.close();
        writer.close();
    });
    assert_eq!(committed(&db, &t), [(1, 10), (2, 20), (3, 30)]);
}

#[test]
fn crossed_table_locks_deadlock_and_one_goes() {
    let (db, t) = setup();
    let u = common::hermitage_table_named(&db, "other");
    std::thread::scope(|s| {
        let mut a = Session::begin_at(s, &db, Priority::LOW, Isolation::Snapshot);
        let mut b = Session::begin_at(s, &db, Priority::LOW, Isolation::Snapshot);
        assert_eq!(a.run(&db, lock(&t, TableLock::Write)), done(&[]));
        assert_eq!(b.run(&db, lock(&u, TableLock::Write)), done(&[]));
        assert_eq!(a.run(&db, lock(&u, TableLock::Rebuild)), Progress::Blocked);
        assert_eq!(
            b.run(&db, lock(&t, TableLock::Rebuild)),
            Progress::Done(aborted(AbortReason::Deadlock))
        );
        assert_eq!(a.unblocked(), Ok(vec![]));
        assert_eq!(a.commit(&db), done(&[]));
        a.close();
        b.close();
    });
}

/// A step: takes the key lock of row `id` of `t` in `mode`.
fn key(
    t: &Arc<Table>,
    id: i64,
    mode: KeyLock,
) -> impl for<'a, 'b> FnOnce(&'a mut Transaction<'b>) -> Outcome + Send + use<> {
    let t = Arc::clone(t);
    move |txn| {
        let k = t.key().int(id).finish().expect("key");
        txn.lock_key(&t, &k, mode)?;
        Ok(Vec::new())
    }
}

#[test]
fn key_locks_are_shared_by_checks_taken_alone_by_a_delete_and_apart_from_row_writes() {
    let (db, t) = setup();
    std::thread::scope(|s| {
        for level in [Isolation::ReadCommitted, Isolation::Snapshot] {
            let mut check = Session::begin_at(s, &db, Priority::LOW, level);
            let mut other_check = Session::begin_at(s, &db, Priority::LOW, level);
            let mut delete = Session::begin_at(s, &db, Priority::LOW, level);
            assert_eq!(check.run(&db, key(&t, 1, KeyLock::Share)), done(&[]));
            assert_eq!(other_check.run(&db, key(&t, 1, KeyLock::Share)), done(&[]));
            // The row's other columns change without the key lock.
            assert_eq!(delete.run(&db, write(&t, 1, 11)), done(&[]));
            assert_eq!(delete.run(&db, key(&t, 2, KeyLock::Update)), done(&[]));
            assert_eq!(
                delete.run(&db, key(&t, 1, KeyLock::Update)),
                Progress::Blocked
            );
            assert_eq!(check.commit(&db), done(&[]));
            assert_eq!(other_check.commit(&db), done(&[]));
            assert_eq!(delete.unblocked(), Ok(vec![]));
            // And a check waits for the delete's lock in turn.
            let mut late = Session::begin_at(s, &db, Priority::LOW, level);
            assert_eq!(late.run(&db, key(&t, 1, KeyLock::Share)), Progress::Blocked);
            assert_eq!(delete.commit(&db), done(&[]));
            assert_eq!(late.unblocked(), Ok(vec![]));
            assert_eq!(late.commit(&db), done(&[]));
            for session in [check, other_check, delete, late] {
                session.close();
            }
        }
    });
}
