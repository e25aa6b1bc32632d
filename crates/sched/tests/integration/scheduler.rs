//! The scheduler as applications use it: calls submitted from their own threads, with a priority,
//! results through tickets. Every assertion is about order or outcome, never about time: where a
//! call must wait for something, it waits for a flag another call sets.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use overtake_sched::Priority;
use overtake_sched::{CallError, CallExecutor, Policy, Scheduler, Shutdown};

use crate::common;
use common::{config, work_until};

#[test]
fn an_urgent_call_from_another_thread_overtakes_a_running_background_call() {
    let scheduler = Arc::new(
        Scheduler::start(&config(Policy::Preempt), Arc::new(CallExecutor)).expect("start"),
    );
    let started = Arc::new(AtomicBool::new(false));
    let urgent_done = Arc::new(AtomicBool::new(false));
    let (s, u) = (Arc::clone(&started), Arc::clone(&urgent_done));
    // The background call's waking handle, which also tells whether it is paused.
    let (handle_tx, handle_rx) = std::sync::mpsc::channel();
    // One worker: the urgent call can only finish while the background one is paused.
    let background = scheduler
        .call(Priority::LOW, move || {
            handle_tx
                .send(overtake_runtime::park::current_unparker())
                .expect("test alive");
            s.store(true, Ordering::Release);
            work_until(&u);
            "background done"
        })
        .expect("admitted");
    while !started.load(Ordering::Acquire) {
        std::thread::yield_now();
    }
    let background_handle = handle_rx.recv().expect("handle");
    assert!(!background_handle.is_paused(), "running, not paused");
    let for_app = Arc::clone(&scheduler);
    let u = Arc::clone(&urgent_done);
    let seen_paused = Arc::new(AtomicBool::new(false));
    let seen = Arc::clone(&seen_paused);
    let urgent = std::thread::spawn(move || {
        let ticket = for_app
            .call(Priority::HIGH, move || {
                // What a lock policy asks about a holder (POW aborts a paused one).
                seen.store(background_handle.is_paused(), Ordering::Release);
                u.store(true, Ordering::Release);
                "urgent done"
            })
            .expect("admitted");
        ticket.wait()
    });
    assert_eq!(urgent.join().expect("app thread"), Ok("urgent done"));
    assert!(
        seen_paused.load(Ordering::Acquire),
        "the preempted call reports itself paused"
    );
    assert_eq!(background.wait(), Ok("background done"));
    let report = Arc::into_inner(scheduler)
        .expect("sole owner")
        .shutdown(Shutdown::Drain)
        .expect("shutdown");
    assert_eq!(report.stats.class(Priority::LOW).preemptions, 1);
}

#[test]
fn a_full_inbox_gives_the_call_back_and_it_can_be_resubmitted() {
    let config = {
        let mut service = config(Policy::Wait);
        service.urgent_inbox = 1;
        service
    };
    let scheduler = Scheduler::start(&config, Arc::new(CallExecutor)).expect("start");
    let started = Arc::new(AtomicBool::new(false));
    let release = Arc::new(AtomicBool::new(false));
    let (s, r) = (Arc::clone(&started), Arc::clone(&release));
    // The worker is busy (and under `wait` never pauses) until released.
    let blocker = scheduler
        .call(Priority::LOW, move || {
            s.store(true, Ordering::Release);
            work_until(&r);
        })
        .expect("admitted");
    while !started.load(Ordering::Acquire) {
        std::thread::yield_now();
    }
    // One in the worker's inbox, one in the pending queue (both bounded by `urgent_inbox`).
    let first = scheduler.call(Priority::HIGH, || 1).expect("room for one");
    let second = scheduler
        .call(Priority::HIGH, || 3)
        .expect("room for one more");
    let refused = scheduler
        .call(Priority::HIGH, || 2)
        .expect_err("the inbox and the pending queue hold one urgent call each");
    assert!(refused.to_string().contains("overloaded"), "{refused}");
    release.store(true, Ordering::Release);
    assert_eq!(blocker.wait(), Ok(()));
    assert_eq!(first.wait(), Ok(1));
    assert_eq!(second.wait(), Ok(3));
    // Nothing was lost: the refused call runs when submitted again (the inbox emptied when
    // the first urgent call started), and its own ticket gets the result.
    let (call, ticket) = refused.into_inner();
    assert_eq!(call.priority(), Priority::HIGH);
    scheduler.submit(call).expect("room again");
    assert_eq!(ticket.wait(), Ok(2));
    let report = scheduler.shutdown(Shutdown::Drain).expect("shutdown");
    assert_eq!(report.stats.class(Priority::HIGH).committed, 3);
}

#[test]
fn shutdown_drains_every_admitted_call() {
    let config = {
        let mut service = config(Policy::Preempt);
        service.urgent_inbox = 64;
        service.background_inbox = 64;
        service
    };
    let scheduler = Scheduler::start(&config, Arc::new(CallExecutor)).expect("start");
    let ran = Arc::new(AtomicUsize::new(0));
    let tickets: Vec<_> = (0..50)
        .map(|i| {
            let ran = Arc::clone(&ran);
            let priority = Priority::ALL[i % Priority::LEVELS];
            scheduler
                .call(priority, move || ran.fetch_add(1, Ordering::AcqRel))
                .expect("admitted")
        })
        .collect();
    let report = scheduler.shutdown(Shutdown::Drain).expect("shutdown");
    assert_eq!(ran.load(Ordering::Acquire), 50);
    assert!(tickets.into_iter().all(|t| t.wait().is_ok()));
    let committed: u64 = Priority::ALL
        .iter()
        .map(|&p| report.stats.class(p).committed)
        .sum();
    assert_eq!(committed, 50);
}

#[test]
fn a_panicking_call_is_reported_and_the_worker_carries_on() {
    let scheduler =
        Scheduler::start(&config(Policy::Preempt), Arc::new(CallExecutor)).expect("start");
    let bad = scheduler
        .call(Priority::HIGH, || -> u32 { panic!("boom") })
        .expect("admitted");
    assert_eq!(bad.wait(), Err(CallError::Panicked("boom".into())));
    let good = scheduler.call(Priority::HIGH, || 7).expect("admitted");
    assert_eq!(good.wait(), Ok(7));
    let report = scheduler.shutdown(Shutdown::Drain).expect("shutdown");
    assert_eq!(report.stats.class(Priority::HIGH).failed, 1);
}

#[test]
fn a_call_waiting_for_another_call_parks_instead_of_blocking_its_worker() {
    // One worker: if waiting blocked the thread, the inner call could never run.
    let scheduler = Arc::new(
        Scheduler::start(&config(Policy::Preempt), Arc::new(CallExecutor)).expect("start"),
    );
    let inner = Arc::clone(&scheduler);
    let outer = scheduler
        .call(Priority::LOW, move || {
            let ticket = inner.call(Priority::LOW, || 20).expect("admitted");
            ticket.wait().map(|v| v + 1)
        })
        .expect("admitted");
    assert_eq!(outer.wait(), Ok(Ok(21)));
    drop(scheduler); // dropping the last handle drains and stops the workers
}

#[test]
fn a_call_that_reports_its_outcome_is_booked_as_it_says() {
    use overtake_sched::{Call, Outcome, Status};
    let scheduler =
        Scheduler::start(&config(Policy::Preempt), Arc::new(CallExecutor)).expect("start");
    let (call, ticket) = Call::with_outcome(Priority::MEDIUM, || {
        let mut outcome = Outcome::ended(Status::RolledBack);
        outcome.conflicts = 2;
        outcome
    });
    scheduler.submit(call).expect("admitted");
    assert_eq!(ticket.wait().map(|o| o.status), Ok(Status::RolledBack));
    let report = scheduler.shutdown(Shutdown::Drain).expect("shutdown");
    let medium = report.stats.class(Priority::MEDIUM);
    assert_eq!(
        (medium.committed, medium.rolled_back, medium.conflicts),
        (0, 1, 2)
    );
}

#[test]
fn a_reporting_call_delivers_its_result_and_books_its_outcome_with_its_client_wait_bounded() {
    use overtake_sched::{Call, Outcome, Promise, Status};
    let scheduler =
        Scheduler::start(&config(Policy::Preempt), Arc::new(CallExecutor)).expect("start");
    let (next, request) = Promise::<u32>::new();
    // Waits for a "request" as a transaction block waits for its client, and says so; it also
    // claims more than it can have waited, which the statistics must not believe.
    let (call, ticket) = Call::reporting(Priority::MEDIUM, move || {
        let asked = request.wait().expect("fulfilled");
        let mut outcome = Outcome::ended(Status::RolledBack);
        outcome.locks.waits = 3;
        outcome.client_wait = std::time::Duration::from_secs(3_600);
        (asked + 1, outcome)
    });
    scheduler.submit(call).expect("admitted");
    next.fulfil(41);
    assert_eq!(ticket.wait(), Ok(42));
    let report = scheduler.shutdown(Shutdown::Drain).expect("shutdown");
    let medium = report.stats.class(Priority::MEDIUM);
    assert_eq!(
        (medium.committed, medium.rolled_back, medium.lock_waits),
        (0, 1, 3)
    );
    assert!(
        medium.client_wait_nanos <= medium.waited_nanos,
        "a client wait is part of the parked time: {} > {}",
        medium.client_wait_nanos,
        medium.waited_nanos
    );
}

#[test]
fn under_the_quantum_policy_a_long_call_makes_way_for_one_submitted_after_it() {
    // Both calls at one level (no priorities): only a quantum expiry, which the scheduler's own
    // timer thread raises, lets the second run while the first spins waiting for it.
    let mut config = config(Policy::Quantum);
    config.quantum = std::time::Duration::from_micros(200);
    let scheduler = Scheduler::start(&config, Arc::new(CallExecutor)).expect("start");
    let (started, second_done) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    let (s, d) = (Arc::clone(&started), Arc::clone(&second_done));
    let first = scheduler
        .call(Priority::LOW, move || {
            s.store(true, Ordering::Release);
            work_until(&d);
        })
        .expect("admitted");
    common::until(&started);
    let d = Arc::clone(&second_done);
    let second = scheduler
        .call(Priority::LOW, move || d.store(true, Ordering::Release))
        .expect("admitted");
    assert_eq!(second.wait(), Ok(()));
    assert_eq!(first.wait(), Ok(()));
    let report = scheduler.shutdown(Shutdown::Drain).expect("shutdown");
    assert!(report.stats.class(Priority::LOW).preemptions >= 1);
}

#[test]
fn the_statistics_of_a_running_scheduler_count_what_has_ended() {
    let scheduler = Scheduler::start(&config(Policy::Wait), Arc::new(CallExecutor)).expect("start");
    assert_eq!(scheduler.stats().class(Priority::HIGH).committed, 0);
    for _ in 0..3 {
        scheduler
            .call(Priority::HIGH, || ())
            .expect("admitted")
            .wait()
            .expect("ran");
    }
    // A call's ticket resolves before its worker books it: wait for the booking.
    let give_up = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while scheduler.stats().class(Priority::HIGH).committed < 3 {
        assert!(std::time::Instant::now() < give_up, "never booked");
        std::thread::yield_now();
    }
    assert_eq!(scheduler.stats().class(Priority::HIGH).committed, 3);
    scheduler.shutdown(Shutdown::Drain).expect("shutdown");
}

/// A scheduler whose workers run background calls at nice 19, if this process may bring them
/// back (otherwise the option is ignored and there is nothing to check).
fn os_background_scheduler() -> Option<Scheduler<CallExecutor>> {
    if !overtake_runtime::os::thread::can_switch_background() {
        return None;
    }
    let config = overtake_sched::SchedConfig::default()
        .pin(false)
        .os_background(true);
    Some(Scheduler::start(&config, Arc::new(CallExecutor)).expect("start"))
}

#[test]
fn with_os_background_a_worker_runs_background_calls_at_the_weakest_weight() {
    let Some(scheduler) = os_background_scheduler() else {
        return;
    };
    let nice_at = |p: Priority| {
        scheduler
            .call(p, overtake_runtime::os::thread::current_nice)
            .expect("admitted")
            .wait()
            .expect("ran")
    };
    assert_eq!(nice_at(Priority::LOW), 19);
    assert_eq!(nice_at(Priority::HIGH), 0);
    assert_eq!(nice_at(Priority::LOW), 19);
    scheduler.shutdown(Shutdown::Drain).expect("shutdown");
}

#[test]
fn with_os_background_a_worker_that_does_not_take_up_an_urgent_request_is_lifted_to_nice_zero() {
    let Some(scheduler) = os_background_scheduler() else {
        return;
    };
    let (in_region, release) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    let tid = Arc::new(std::sync::atomic::AtomicI32::new(0));
    let (inside, r, t) = (
        Arc::clone(&in_region),
        Arc::clone(&release),
        Arc::clone(&tid),
    );
    // A background call that cannot take up a request (it stays in a non-preemptible region,
    // as one the OS has descheduled does) until the test sees its thread lifted.
    let low = scheduler
        .call(Priority::LOW, move || {
            let _region = overtake_runtime::NoPreemptGuard::new();
            t.store(overtake_runtime::os::thread::thread_id(), Ordering::SeqCst);
            inside.store(true, Ordering::SeqCst);
            while !r.load(Ordering::SeqCst) {
                std::hint::spin_loop();
            }
            overtake_runtime::os::thread::current_nice()
        })
        .expect("admitted");
    common::until(&in_region);
    let nice_of = |tid| overtake_runtime::os::thread::nice_of(tid).expect("the worker's thread");
    let tid = tid.load(Ordering::SeqCst);
    assert_eq!(nice_of(tid), 19, "background work at the weakest weight");
    let urgent = scheduler.call(Priority::HIGH, || 1).expect("admitted");
    let give_up = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while nice_of(tid) != 0 {
        assert!(std::time::Instant::now() < give_up, "never lifted");
        std::thread::yield_now();
    }
    release.store(true, Ordering::SeqCst);
    assert_eq!(urgent.wait().expect("ran"), 1);
    assert_eq!(low.wait().expect("ran"), 0, "lifted while it ran");
    // Back at the weakest weight for the next background call, though it believed it was there.
    let again = scheduler
        .call(Priority::LOW, overtake_runtime::os::thread::current_nice)
        .expect("admitted");
    assert_eq!(again.wait().expect("ran"), 19);
    scheduler.shutdown(Shutdown::Drain).expect("shutdown");
}

#[test]
fn background_work_waits_for_a_worker_that_would_otherwise_idle() {
    let scheduler = Scheduler::start(&config(Policy::Preempt).workers(2), Arc::new(CallExecutor))
        .expect("start");
    let worker = || std::thread::current().name().unwrap_or("?").to_owned();
    // Time-sensitive work keeps one worker busy until released.
    let (busy, release) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    let (b, r) = (Arc::clone(&busy), Arc::clone(&release));
    let urgent = scheduler
        .call(Priority::MEDIUM, move || {
            b.store(true, Ordering::Release);
            work_until(&r);
            worker()
        })
        .expect("admitted");
    common::until(&busy);
    // Two background calls: the idle worker takes the first; the second waits for a worker to
    // run out of work, and that is the same one again (the other is still busy).
    let (first_runs, first_release) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    let (fr, frel) = (Arc::clone(&first_runs), Arc::clone(&first_release));
    let first = scheduler
        .call(Priority::LOW, move || {
            fr.store(true, Ordering::Release);
            work_until(&frel);
            worker()
        })
        .expect("admitted");
    common::until(&first_runs);
    let second = scheduler.call(Priority::LOW, worker).expect("admitted");
    first_release.store(true, Ordering::Release);
    let (first, second) = (first.wait().expect("ran"), second.wait().expect("ran"));
    release.store(true, Ordering::Release);
    let urgent = urgent.wait().expect("ran");
    assert_ne!(
        first, urgent,
        "the busy worker does not take background work"
    );
    assert_eq!(second, first, "the worker that ran out of work pulled it");
    scheduler.shutdown(Shutdown::Drain).expect("shutdown");
}
