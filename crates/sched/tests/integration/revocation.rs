//! Lock revocation as the scheduler sees it: a lock policy that dooms a holder takes its locks at
//! once, and the urgent transaction waiting behind it is granted while the holder is paused by
//! preemption, runs on another worker, or computes past a reprieve without calling the engine.
//! In each case the urgent transaction commits before the holder runs again (or makes its next
//! engine call), the holder learns the abort at that call, and the rows show only what committed.
//! Every wait is for a flag another call sets, never for a time.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use overtake_engine::{
    AbortReason, ColumnType, Concurrency, Database, Error, Isolation, LockPolicy, Options,
    Priority, Table, TableSchema,
};
use overtake_runtime::preempt::{self};
use overtake_sched::{Call, CallExecutor, Policy, Scheduler, Shutdown};

use crate::common;
use common::until;

/// `t(id INT64 PK, value INT64)` holding (1, 10) and (2, 20), under two-phase locking.
fn database(policy: LockPolicy) -> (Arc<Database>, Arc<Table>) {
    let db = Database::in_memory({
        let mut options = Options::default();
        options.concurrency = Concurrency::TwoPhaseLocking(policy);
        options
    });
    let t = db
        .create_table(
            TableSchema::builder("t")
                .column("id", ColumnType::Int64)
                .column("value", ColumnType::Int64)
                .primary_key(&["id"])
                .build()
                .expect("schema"),
        )
        .expect("create");
    let mut txn = db
        .begin(Priority::LOW, Isolation::Serializable)
        .expect("begin");
    for (id, value) in [(1, 10), (2, 20)] {
        let row = t
            .row_builder()
            .int(0, id)
            .int(1, value)
            .finish()
            .expect("row");
        txn.insert(&t, row).expect("insert");
    }
    txn.commit().expect("load");
    drop(txn);
    (Arc::new(db), t)
}

fn set(txn: &mut overtake_engine::Transaction<'_>, t: &Table, id: i64, value: i64) -> bool {
    let key = t.key().int(id).finish().expect("key");
    txn.update(t, &key, |r| {
        r.int(1, value);
    })
    .expect("update")
}

fn values(db: &Database, t: &Table) -> Vec<i64> {
    let mut txn = db
        .begin(Priority::LOW, Isolation::Serializable)
        .expect("begin");
    let out = (1..=2)
        .map(|id| {
            let key = t.key().int(id).finish().expect("key");
            txn.get(t, &key, |r| r.int(1)).expect("get").expect("row")
        })
        .collect();
    txn.commit().expect("read");
    out
}

fn scheduler(workers: usize) -> Arc<Scheduler<CallExecutor>> {
    let config = common::config(Policy::Preempt).workers(workers);
    Arc::new(Scheduler::start(&config, Arc::new(CallExecutor)).expect("start"))
}

/// Waits for `flag` (set by another call), bounded only against a hang. `poll`: as a
/// transaction reading records does (a preemption request is taken up here); otherwise as pure
/// computation, which never calls the engine.
fn wait_for(flag: &AtomicBool, poll: bool) {
    let give_up = Instant::now() + Duration::from_secs(60);
    while !flag.load(Ordering::Acquire) {
        if poll {
            preempt::record_access();
        }
        assert!(Instant::now() < give_up, "the awaited event never happened");
        std::hint::spin_loop();
    }
}

/// The index of the worker running the calling task (from its thread's name, `worker-N`).
fn worker_index() -> usize {
    let name = std::thread::current().name().unwrap_or_default().to_owned();
    name.strip_prefix("worker-")
        .and_then(|n| n.parse().ok())
        .expect("a worker's thread")
}

/// The holder's side: takes row 1's lock by updating it to 11, says so, waits for `release`,
/// and reports what its commit said.
fn holder(
    db: &Arc<Database>,
    t: &Arc<Table>,
    holding: &Arc<AtomicBool>,
    release: &Arc<AtomicBool>,
    poll: bool,
) -> impl FnOnce() -> Result<(), Error> + Send + 'static {
    let (db, t, holding, release) = (
        Arc::clone(db),
        Arc::clone(t),
        Arc::clone(holding),
        Arc::clone(release),
    );
    move || {
        let mut txn = db.begin(Priority::LOW, Isolation::Serializable)?;
        assert!(set(&mut txn, &t, 1, 11));
        holding.store(true, Ordering::Release);
        wait_for(&release, poll);
        Ok(txn.commit()?)
    }
}

/// The urgent side: updates row 1 to 12 and commits; returns how many lock waits it had.
fn urgent(
    db: &Arc<Database>,
    t: &Arc<Table>,
    done: &Arc<AtomicBool>,
) -> impl FnOnce() -> Result<u32, Error> + Send + 'static {
    let (db, t, done) = (Arc::clone(db), Arc::clone(t), Arc::clone(done));
    move || {
        let mut txn = db.begin(Priority::HIGH, Isolation::Serializable)?;
        assert!(set(&mut txn, &t, 1, 12));
        let waits = txn.lock_stats().waits;
        txn.commit()?;
        done.store(true, Ordering::Release);
        Ok(waits)
    }
}

fn preempted() -> Result<(), Error> {
    Err(Error::Aborted(AbortReason::Preempted))
}

#[test]
fn pow_takes_the_lock_of_a_holder_paused_by_preemption() {
    let (db, t) = database(LockPolicy::Pow);
    let scheduler = scheduler(1);
    let (holding, done) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    // The holder polls until the urgent transaction is done: on one worker, that can only
    // happen while the holder is paused.
    let low = scheduler
        .call(Priority::LOW, holder(&db, &t, &holding, &done, true))
        .expect("admitted");
    until(&holding);
    let high = scheduler
        .call(Priority::HIGH, urgent(&db, &t, &done))
        .expect("admitted");
    assert_eq!(
        high.wait().expect("ran").expect("committed"),
        0,
        "never waited"
    );
    assert_eq!(
        low.wait().expect("ran"),
        preempted(),
        "learnt at its commit"
    );
    assert_eq!(values(&db, &t), [12, 20]);
    let report = Arc::into_inner(scheduler)
        .expect("sole handle")
        .shutdown(Shutdown::Drain)
        .expect("shutdown");
    assert_eq!(report.stats.class(Priority::LOW).preemptions, 1);
}

#[test]
fn pow_takes_the_lock_of_a_holder_on_another_worker_when_it_is_paused() {
    let (db, t) = database(LockPolicy::Pow);
    let scheduler = scheduler(2);
    let (holding, done, release) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    // The background holder is taken by one worker, the urgent call goes to the other (idle).
    let holder_worker = Arc::new(AtomicUsize::new(usize::MAX));
    let (hold, at) = (
        holder(&db, &t, &holding, &release, true),
        Arc::clone(&holder_worker),
    );
    let low = scheduler
        .call(Priority::LOW, move || {
            at.store(worker_index(), Ordering::Release);
            hold()
        })
        .expect("admitted");
    until(&holding);
    let high = scheduler
        .call(Priority::HIGH, urgent(&db, &t, &done))
        .expect("admitted");
    // The holder runs: POW raises it and lets it go on; the urgent transaction waits.
    let give_up = Instant::now() + Duration::from_secs(60);
    while db.lock_waits().is_empty() {
        assert!(
            Instant::now() < give_up,
            "the urgent transaction never waited"
        );
        std::thread::yield_now();
    }
    assert!(!done.load(Ordering::Acquire));
    // Now the holder is paused by a more urgent call placed on its worker, which only ends once
    // the urgent transaction has committed: the pause itself must have revoked the lock.
    let d = Arc::clone(&done);
    let (call, critical) = Call::new(Priority::CRITICAL, move || wait_for(&d, false));
    let w = holder_worker.load(Ordering::Acquire);
    assert!(scheduler.submit_to(w, call, Instant::now()).is_ok(), "room");
    scheduler.preempt_timer().ask(w, Instant::now());
    critical.wait().expect("ran");
    assert_eq!(
        high.wait().expect("ran").expect("committed"),
        1,
        "waited once"
    );
    release.store(true, Ordering::Release);
    assert_eq!(low.wait().expect("ran"), preempted());
    assert_eq!(values(&db, &t), [12, 20]);
    Arc::into_inner(scheduler)
        .expect("sole handle")
        .shutdown(Shutdown::Drain)
        .expect("shutdown");
}

/// A holder on another worker that computes without calling the engine: PAbort takes its lock at
/// the request, CR when the reprieve ends (by the clock: nothing else happens meanwhile).
#[test]
fn pabort_and_cr_take_the_lock_of_a_holder_that_makes_no_call() {
    for policy in [
        LockPolicy::PAbort,
        LockPolicy::ConditionalRestart {
            reprieve: Duration::from_millis(5),
        },
    ] {
        let (db, t) = database(policy);
        let scheduler = scheduler(2);
        let (holding, done) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicBool::new(false)),
        );
        let low = scheduler
            .call(Priority::LOW, holder(&db, &t, &holding, &done, false))
            .expect("admitted");
        until(&holding);
        let high = scheduler
            .call(Priority::HIGH, urgent(&db, &t, &done))
            .expect("admitted");
        let waits = high.wait().expect("ran").expect("committed");
        let expected_waits = u32::from(policy != LockPolicy::PAbort);
        assert_eq!(waits, expected_waits, "{policy:?}");
        assert_eq!(low.wait().expect("ran"), preempted(), "{policy:?}");
        assert_eq!(values(&db, &t), [12, 20], "{policy:?}");
        Arc::into_inner(scheduler)
            .expect("sole handle")
            .shutdown(Shutdown::Drain)
            .expect("shutdown");
    }
}

#[test]
fn pow_takes_the_lock_of_a_holder_parked_waiting_for_its_client() {
    // A transaction block between two statements: its task parks until the client's next one
    // arrives, which may be never. It holds nothing an urgent transaction can be kept waiting for.
    let (db, t) = database(LockPolicy::Pow);
    let scheduler = scheduler(1);
    let holding = Arc::new(AtomicBool::new(false));
    let (next_statement, inbox) = overtake_sched::Promise::<()>::new();
    let (db2, t2, held) = (Arc::clone(&db), Arc::clone(&t), Arc::clone(&holding));
    let low = scheduler
        .call(Priority::LOW, move || -> Result<(), Error> {
            let mut txn = db2.begin(Priority::LOW, Isolation::Serializable)?;
            assert!(set(&mut txn, &t2, 1, 11));
            held.store(true, Ordering::Release);
            inbox.wait().expect("the client's next statement");
            Ok(txn.commit()?)
        })
        .expect("admitted");
    until(&holding);
    let done = Arc::new(AtomicBool::new(false));
    let high = scheduler
        .call(Priority::HIGH, urgent(&db, &t, &done))
        .expect("admitted");
    assert_eq!(
        high.wait().expect("ran").expect("committed"),
        0,
        "never waited"
    );
    next_statement.fulfil(());
    assert_eq!(
        low.wait().expect("ran"),
        preempted(),
        "learnt at its commit"
    );
    assert_eq!(values(&db, &t), [12, 20]);
    Arc::into_inner(scheduler)
        .expect("sole handle")
        .shutdown(Shutdown::Drain)
        .expect("shutdown");
}
