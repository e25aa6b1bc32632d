//! READ COMMITTED in an MVCC database: each statement reads a fresh snapshot, and writers of one
//! row wait for each other's row lock instead of one failing (PostgreSQL's behaviour, which
//! unchanged clients such as pgbench rely on). Sessions as in two_phase_locking.rs: a step that
//! waits for a lock is seen waiting in the lock table.

use crate::common;

use std::sync::Arc;

use common::sessions::{Outcome, Progress, Session};
use common::steps::{aborted, committed, done, read, write};
use common::{HERMITAGE_VALUE as VALUE, hermitage_table};
use overtake_engine::{
    AbortReason, Database, Isolation, KeyRange, Options, Priority, ScanOptions, Table, Transaction,
};

const RC: Isolation = Isolation::ReadCommitted;

fn setup() -> (Database, Arc<Table>) {
    let db = Database::in_memory(Options::default());
    let t = hermitage_table(&db);
    (db, t)
}

/// Runs `step` as a statement of its own (a fresh snapshot under READ COMMITTED).
fn statement(
    step: impl for<'a, 'b> FnOnce(&'a mut Transaction<'b>) -> Outcome + Send + 'static,
) -> impl for<'a, 'b> FnOnce(&'a mut Transaction<'b>) -> Outcome + Send + 'static {
    move |txn| {
        txn.next_statement();
        step(txn)
    }
}

/// `update test set value = value + by where id = ?`.
fn add(
    t: &Arc<Table>,
    id: i64,
    by: i64,
) -> impl for<'a, 'b> FnOnce(&'a mut Transaction<'b>) -> Outcome + Send + use<> {
    let t = Arc::clone(t);
    move |txn| {
        txn.next_statement();
        let key = t.key().int(id).finish().expect("key");
        txn.update(&t, &key, |r| {
            let v = r.as_ref().int(VALUE);
            r.int(VALUE, v + by);
        })?;
        Ok(Vec::new())
    }
}

/// `update test set value = value + 10` through a scan of the whole table.
fn add_ten_to_all(
    t: &Arc<Table>,
) -> impl for<'a, 'b> FnOnce(&'a mut Transaction<'b>) -> Outcome + Send + use<> {
    let t = Arc::clone(t);
    move |txn| {
        txn.next_statement();
        let n = txn.update_range(&t, &KeyRange::all(), ScanOptions::forward(), |r| {
            let v = r.as_ref().int(VALUE);
            r.int(VALUE, v + 10);
        })?;
        Ok(vec![n as i64])
    }
}

/// `delete from test where id = ?`.
fn delete(
    t: &Arc<Table>,
    id: i64,
) -> impl for<'a, 'b> FnOnce(&'a mut Transaction<'b>) -> Outcome + Send + use<> {
    let t = Arc::clone(t);
    move |txn| {
        let key = t.key().int(id).finish().expect("key");
        txn.delete(&t, &key)?;
        Ok(Vec::new())
    }
}

#[test]
fn each_statement_reads_what_committed_before_it() {
    let (db, t) = setup();
    std::thread::scope(|s| {
        let mut rc = Session::begin_at(s, &db, Priority::LOW, RC);
        let mut si = Session::begin_at(s, &db, Priority::LOW, Isolation::Snapshot);
        assert_eq!(rc.run(&db, statement(read(&t, 1))), done(&[10]));
        assert_eq!(si.run(&db, read(&t, 1)), done(&[10]));
        let mut writer = Session::begin(s, &db, Priority::LOW);
        assert_eq!(writer.run(&db, write(&t, 1, 11)), done(&[]));
        assert_eq!(writer.commit(&db), done(&[]));
        // Within a statement the snapshot holds; the next statement sees the commit.
        assert_eq!(rc.run(&db, read(&t, 1)), done(&[10]));
        assert_eq!(rc.run(&db, statement(read(&t, 1))), done(&[11]));
        assert_eq!(si.run(&db, statement(read(&t, 1))), done(&[10]));
        for session in [rc, si, writer] {
            session.close();
        }
    });
}

#[test]
fn writers_of_one_row_wait_for_each_other_and_both_apply() {
    let (db, t) = setup();
    std::thread::scope(|s| {
        let mut t1 = Session::begin_at(s, &db, Priority::LOW, RC);
        let mut t2 = Session::begin_at(s, &db, Priority::LOW, RC);
        assert_eq!(t1.run(&db, add(&t, 1, 1)), done(&[]));
        assert_eq!(t2.run(&db, add(&t, 1, 5)), Progress::Blocked);
        assert_eq!(t1.commit(&db), done(&[]));
        // The waiter read the row as the first writer left it.
        assert_eq!(t2.unblocked(), Ok(vec![]));
        assert_eq!(t2.run(&db, read(&t, 1)), done(&[16]));
        assert_eq!(t2.commit(&db), done(&[]));
        t1.close();
        t2.close();
    });
    assert_eq!(committed(&db, &t), [(1, 16), (2, 20)]);
}

#[test]
fn a_reader_that_writes_after_all_locks_its_rows_as_any_writer() {
    // `begin_reader` joins the row locks' manager only when it first locks: its write waits
    // for the row's holder, and a writer after it waits for it.
    let (db, t) = setup();
    std::thread::scope(|s| {
        let mut reader = Session::begin_reader_at(s, &db, Priority::LOW, RC);
        let mut holder = Session::begin_at(s, &db, Priority::LOW, RC);
        let mut other = Session::begin_at(s, &db, Priority::LOW, RC);
        assert_eq!(reader.run(&db, read(&t, 1)), done(&[10]));
        assert_eq!(holder.run(&db, add(&t, 1, 1)), done(&[]));
        assert_eq!(reader.run(&db, add(&t, 1, 5)), Progress::Blocked);
        assert_eq!(holder.commit(&db), done(&[]));
        assert_eq!(reader.unblocked(), Ok(vec![]));
        assert_eq!(reader.run(&db, add(&t, 2, 1)), done(&[]));
        assert_eq!(
            other.run(&db, try_lock(&t, 2)),
            done(&[0]),
            "the reader holds it"
        );
        assert_eq!(reader.commit(&db), done(&[]));
        assert_eq!(other.run(&db, try_lock(&t, 2)), done(&[1]));
        assert_eq!(other.commit(&db), done(&[]));
        for session in [reader, holder, other] {
            session.close();
        }
    });
    assert_eq!(committed(&db, &t), [(1, 16), (2, 21)]);
}

#[test]
fn a_write_by_a_transaction_that_takes_no_lock_fails_the_locked_writer() {
    // A snapshot-isolation writer takes no row lock: it commits over the row a READ COMMITTED
    // transaction has locked and written. The latter's write was based on the row before that
    // commit, so its commit must fail rather than lose the other update.
    let (db, t) = setup();
    std::thread::scope(|s| {
        let mut rc = Session::begin_at(s, &db, Priority::LOW, RC);
        let mut si = Session::begin_at(s, &db, Priority::LOW, Isolation::Snapshot);
        assert_eq!(rc.run(&db, add(&t, 1, 1)), done(&[]));
        assert_eq!(si.run(&db, write(&t, 1, 100)), done(&[]));
        assert_eq!(si.commit(&db), done(&[]));
        assert_eq!(rc.run(&db, statement(read(&t, 2))), done(&[20]));
        assert_eq!(
            rc.commit(&db),
            Progress::Done(aborted(AbortReason::Conflict))
        );
        rc.close();
        si.close();
    });
    assert_eq!(committed(&db, &t), [(1, 100), (2, 20)]);
}

#[test]
fn a_scan_update_skips_a_row_deleted_while_it_waited() {
    let (db, t) = setup();
    std::thread::scope(|s| {
        let mut t1 = Session::begin_at(s, &db, Priority::LOW, RC);
        let mut t2 = Session::begin_at(s, &db, Priority::LOW, RC);
        assert_eq!(t1.run(&db, statement(delete(&t, 1))), done(&[]));
        assert_eq!(t2.run(&db, add_ten_to_all(&t)), Progress::Blocked);
        assert_eq!(t1.commit(&db), done(&[]));
        assert_eq!(t2.unblocked(), Ok(vec![1]));
        assert_eq!(t2.commit(&db), done(&[]));
        t1.close();
        t2.close();
    });
    assert_eq!(committed(&db, &t), [(2, 30)]);
}

#[test]
fn crossed_row_locks_deadlock_and_one_goes() {
    let (db, t) = setup();
    std::thread::scope(|s| {
        let mut t1 = Session::begin_at(s, &db, Priority::LOW, RC);
        let mut t2 = Session::begin_at(s, &db, Priority::LOW, RC);
        assert_eq!(t1.run(&db, add(&t, 1, 1)), done(&[]));
        assert_eq!(t2.run(&db, add(&t, 2, 2)), done(&[]));
        assert_eq!(t1.run(&db, add(&t, 2, 1)), Progress::Blocked);
        assert_eq!(
            t2.run(&db, add(&t, 1, 2)),
            Progress::Done(aborted(AbortReason::Deadlock))
        );
        assert_eq!(t1.unblocked(), Ok(vec![]));
        assert_eq!(t1.commit(&db), done(&[]));
        t1.close();
        t2.close();
    });
    assert_eq!(committed(&db, &t), [(1, 11), (2, 21)]);
}

#[test]
fn a_more_urgent_writer_takes_the_row_from_a_waiting_holder() {
    // POW (the default row-lock policy): a less urgent holder that is itself waiting loses its
    // locks to the urgent writer, which then goes ahead.
    let (db, t) = setup();
    std::thread::scope(|s| {
        let mut low = Session::begin_at(s, &db, Priority::LOW, RC);
        let mut blocker = Session::begin_at(s, &db, Priority::LOW, RC);
        let mut high = Session::begin_at(s, &db, Priority::HIGH, RC);
        assert_eq!(blocker.run(&db, add(&t, 2, 1)), done(&[]));
        assert_eq!(low.run(&db, add(&t, 1, 1)), done(&[]));
        assert_eq!(low.run(&db, add(&t, 2, 1)), Progress::Blocked);
        assert_eq!(high.run(&db, add(&t, 1, 5)), done(&[]));
        assert_eq!(high.commit(&db), done(&[]));
        assert!(matches!(
            low.unblocked(),
            Err(overtake_engine::Error::Aborted(_))
        ));
        assert_eq!(blocker.commit(&db), done(&[]));
        for session in [low, blocker, high] {
            session.close();
        }
    });
    assert_eq!(committed(&db, &t), [(1, 15), (2, 21)]);
}

/// `select ... where id = ? for update nowait`: whether the lock was had without waiting.
fn try_lock(
    t: &Arc<Table>,
    id: i64,
) -> impl for<'a, 'b> FnOnce(&'a mut Transaction<'b>) -> Outcome + Send + use<> {
    let t = Arc::clone(t);
    move |txn| {
        txn.next_statement();
        let key = t.key().int(id).finish().expect("key");
        Ok(vec![i64::from(txn.try_lock_row(&t, &key)?)])
    }
}

#[test]
fn a_lock_taken_without_waiting_is_refused_while_another_holds_the_row() {
    let (db, t) = setup();
    std::thread::scope(|s| {
        let mut holder = Session::begin_at(s, &db, Priority::LOW, RC);
        let mut other = Session::begin_at(s, &db, Priority::HIGH, RC);
        assert_eq!(holder.run(&db, add(&t, 1, 1)), done(&[]));
        // Refused, with nothing queued and no policy acting on the holder: both go on.
        assert_eq!(other.run(&db, try_lock(&t, 1)), done(&[0]));
        assert_eq!(other.run(&db, try_lock(&t, 2)), done(&[1]));
        assert_eq!(holder.run(&db, add(&t, 1, 1)), done(&[]));
        assert_eq!(holder.commit(&db), done(&[]));
        assert_eq!(other.run(&db, try_lock(&t, 1)), done(&[1]));
        assert_eq!(other.run(&db, read(&t, 1)), done(&[12]));
        assert_eq!(other.commit(&db), done(&[]));
        holder.close();
        other.close();
    });
}

/// `update test set value = value + by where id = ?` in a transaction that locks the rows it
/// writes (`lock_rows_it_writes`, as the SQL server's REPEATABLE READ and SERIALIZABLE do).
fn add_locking(
    t: &Arc<Table>,
    id: i64,
    by: i64,
) -> impl for<'a, 'b> FnOnce(&'a mut Transaction<'b>) -> Outcome + Send + use<> {
    let update = add(t, id, by);
    move |txn| {
        txn.lock_rows_it_writes();
        update(txn)
    }
}

#[test]
fn a_read_committed_writer_waits_for_a_snapshot_writer_that_locks_its_rows() {
    for level in [Isolation::Snapshot, Isolation::Serializable] {
        let (db, t) = setup();
        std::thread::scope(|s| {
            let mut snapshot = Session::begin_at(s, &db, Priority::LOW, level);
            let mut rc = Session::begin_at(s, &db, Priority::LOW, RC);
            assert_eq!(snapshot.run(&db, add_locking(&t, 1, 1)), done(&[]));
            assert_eq!(rc.run(&db, add(&t, 1, 5)), Progress::Blocked);
            assert_eq!(snapshot.commit(&db), done(&[]));
            // It read the row as the snapshot writer left it, as PostgreSQL's would.
            assert_eq!(rc.unblocked(), Ok(vec![]));
            assert_eq!(rc.commit(&db), done(&[]));
            snapshot.close();
            rc.close();
        });
        assert_eq!(committed(&db, &t), [(1, 16), (2, 20)]);
    }
}

#[test]
fn a_snapshot_writer_that_locks_waits_for_a_read_committed_one_and_then_conflicts() {
    let (db, t) = setup();
    std::thread::scope(|s| {
        let mut snapshot = Session::begin_at(s, &db, Priority::LOW, Isolation::Snapshot);
        let mut rc = Session::begin_at(s, &db, Priority::LOW, RC);
        assert_eq!(snapshot.run(&db, read(&t, 1)), done(&[10]));
        assert_eq!(rc.run(&db, add(&t, 1, 5)), done(&[]));
        assert_eq!(snapshot.run(&db, add_locking(&t, 1, 1)), Progress::Blocked);
        assert_eq!(rc.commit(&db), done(&[]));
        // Its snapshot predates the commit it waited for: PostgreSQL's "could not serialize
        // access due to concurrent update".
        assert_eq!(snapshot.unblocked(), aborted(AbortReason::Conflict));
        snapshot.close();
        rc.close();
    });
    assert_eq!(committed(&db, &t), [(1, 15), (2, 20)]);
}

/// A step that makes `flag` end the transaction's lock waits and hands over what wakes its
/// thread (as a cancel does: it sets the flag, then wakes the waiting task).
fn interruptible(
    flag: &Arc<std::sync::atomic::AtomicBool>,
    waker: &std::sync::mpsc::Sender<overtake_runtime::park::Unparker>,
) -> impl for<'a, 'b> FnOnce(&'a mut Transaction<'b>) -> Outcome + Send + use<> {
    let (flag, waker) = (Arc::clone(flag), waker.clone());
    move |txn| {
        txn.set_interrupt(Some(flag));
        waker
            .send(overtake_runtime::park::current_unparker())
            .expect("test alive");
        Ok(Vec::new())
    }
}

#[test]
fn an_interrupted_lock_wait_ends_at_once_and_the_waiter_writes_nothing() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let (db, t) = setup();
    let (waker, wakers) = std::sync::mpsc::channel();
    std::thread::scope(|s| {
        let mut holder = Session::begin_at(s, &db, Priority::LOW, RC);
        assert_eq!(holder.run(&db, add(&t, 1, 1)), done(&[]));
        // Parked in the wait: the flag, then the wake, end it.
        let flag = Arc::new(AtomicBool::new(false));
        let mut waiter = Session::begin_at(s, &db, Priority::LOW, RC);
        assert_eq!(waiter.run(&db, interruptible(&flag, &waker)), done(&[]));
        let wake = wakers.recv().expect("the waiter's unparker");
        assert_eq!(waiter.run(&db, add(&t, 1, 5)), Progress::Blocked);
        flag.store(true, Ordering::SeqCst);
        wake.unpark();
        assert_eq!(waiter.unblocked(), aborted(AbortReason::Interrupted));
        assert!(
            db.lock_waits().is_empty(),
            "the interrupted wait left the queue"
        );
        // Set before the wait begins: it ends at once, without a wake.
        let set = Arc::new(AtomicBool::new(true));
        let mut late = Session::begin_at(s, &db, Priority::LOW, RC);
        assert_eq!(late.run(&db, interruptible(&set, &waker)), done(&[]));
        let outcome = match late.run(&db, add(&t, 1, 7)) {
            Progress::Done(outcome) => outcome,
            Progress::Blocked => late.unblocked(),
        };
        assert_eq!(outcome, aborted(AbortReason::Interrupted));
        assert_eq!(holder.commit(&db), done(&[]));
        for session in [holder, waiter, late] {
            session.close();
        }
    });
    assert_eq!(committed(&db, &t), [(1, 11), (2, 20)]);
}
