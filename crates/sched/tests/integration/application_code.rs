//! What application code in a call may do, under preemption: a `CriticalMutex` shared by calls
//! is never held by a paused call, a non-preemptible call is never paused, and code that blocks
//! its worker's thread while a paused call waits on it is reported instead of hanging silently.
//! Every wait is for a flag another call sets, never for a time.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use overtake_runtime::CriticalMutex;
use overtake_runtime::preempt::{self};
use overtake_sched::Priority;
use overtake_sched::{CallExecutor, Policy, Scheduler, Shutdown};

use crate::common;
use common::{until, work_until};

fn scheduler(blocked_report: Option<Duration>) -> Arc<Scheduler<CallExecutor>> {
    let config = common::config(Policy::Preempt).blocked_report(blocked_report);
    Arc::new(Scheduler::start(&config, Arc::new(CallExecutor)).expect("start"))
}

type Log = Arc<Mutex<Vec<&'static str>>>;

fn note(log: &Log, what: &'static str) {
    log.lock().expect("log").push(what);
}

fn shut(scheduler: Arc<Scheduler<CallExecutor>>) -> overtake_sched::SchedulerReport {
    Arc::into_inner(scheduler)
        .expect("sole handle")
        .shutdown(Shutdown::Drain)
        .expect("shutdown")
}

#[test]
fn an_urgent_call_takes_a_critical_mutex_only_after_the_holder_has_left_its_section() {
    let scheduler = scheduler(None);
    let m = Arc::new(CriticalMutex::new(0));
    let log: Log = Arc::default();
    let (in_section, asked) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    let (lm, ll, li, la) = (
        Arc::clone(&m),
        Arc::clone(&log),
        Arc::clone(&in_section),
        Arc::clone(&asked),
    );
    // One worker: the urgent call can only run while the background one is paused.
    let low = scheduler
        .call(Priority::LOW, move || {
            {
                let mut held = lm.lock();
                *held += 1;
                note(&ll, "low in its section");
                li.store(true, Ordering::Release);
                // The urgent call is queued and the worker asked to make way: the request is
                // deferred to the end of the section.
                work_until(&la);
                note(&ll, "low leaves its section");
            }
            preempt::record_access();
            note(&ll, "low continues");
        })
        .expect("admitted");
    until(&in_section);
    let (um, ul) = (Arc::clone(&m), Arc::clone(&log));
    let urgent = scheduler
        .call(Priority::HIGH, move || {
            *um.lock() += 10;
            note(&ul, "urgent has the mutex");
        })
        .expect("admitted");
    asked.store(true, Ordering::Release);
    urgent.wait().expect("urgent ran");
    low.wait().expect("low ran");
    assert_eq!(
        *log.lock().expect("log"),
        [
            "low in its section",
            "low leaves its section",
            "urgent has the mutex",
            "low continues"
        ]
    );
    assert_eq!(*m.lock(), 11);
    let report = shut(scheduler);
    assert_eq!(report.stats.class(Priority::LOW).preemptions, 1);
}

#[test]
fn a_non_preemptible_call_runs_to_its_end_before_urgent_work() {
    let scheduler = scheduler(None);
    let log: Log = Arc::default();
    let (started, asked) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    let (ll, ls, la) = (Arc::clone(&log), Arc::clone(&started), Arc::clone(&asked));
    let low = scheduler
        .call_non_preemptible(Priority::LOW, move || {
            ls.store(true, Ordering::Release);
            work_until(&la);
            preempt::record_access();
            note(&ll, "low ends");
        })
        .expect("admitted");
    until(&started);
    let ul = Arc::clone(&log);
    let urgent = scheduler
        .call(Priority::HIGH, move || note(&ul, "urgent runs"))
        .expect("admitted");
    asked.store(true, Ordering::Release);
    urgent.wait().expect("urgent ran");
    low.wait().expect("low ran");
    assert_eq!(*log.lock().expect("log"), ["low ends", "urgent runs"]);
    shut(scheduler);
}

/// The hazard itself, made recoverable: a paused background call holds a `std::sync::Mutex`, and
/// the urgent call that paused it waits for that mutex by sleeping in the kernel (a real `lock`
/// would never return). The worker is reported, with the paused call; then the test lets the
/// urgent call give up, and everything ends.
#[test]
fn a_worker_blocked_in_the_kernel_with_a_paused_call_is_reported() {
    let scheduler = scheduler(Some(Duration::from_millis(50)));
    let m = Arc::new(Mutex::new(0));
    let (holding, urgent_started, give_up) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    let (lm, lh, lu) = (
        Arc::clone(&m),
        Arc::clone(&holding),
        Arc::clone(&urgent_started),
    );
    let low = scheduler
        .call(Priority::LOW, move || {
            let held = lm.lock().expect("unpoisoned");
            lh.store(true, Ordering::Release);
            work_until(&lu);
            drop(held);
        })
        .expect("admitted");
    until(&holding);
    let (um, us, ug) = (
        Arc::clone(&m),
        Arc::clone(&urgent_started),
        Arc::clone(&give_up),
    );
    let urgent = scheduler
        .call(Priority::HIGH, move || {
            us.store(true, Ordering::Release);
            loop {
                if um.try_lock().is_ok() {
                    return "got it";
                }
                if ug.load(Ordering::Acquire) {
                    return "gave up";
                }
                std::thread::sleep(Duration::from_millis(2));
            }
        })
        .expect("admitted");
    let give_up_waiting = Instant::now() + Duration::from_secs(60);
    let reports = loop {
        let reports = scheduler.blocked_workers();
        if !reports.is_empty() {
            break reports;
        }
        assert!(Instant::now() < give_up_waiting, "never reported");
        std::thread::sleep(Duration::from_millis(5));
    };
    assert_eq!(reports.len(), 1);
    let r = &reports[0];
    assert_eq!((r.worker, r.running), (0, Priority::HIGH));
    assert_eq!(r.paused[Priority::LOW.level()], 1, "{r}");
    assert!(r.to_string().contains("CriticalMutex"), "{r}");
    give_up.store(true, Ordering::Release);
    assert_eq!(urgent.wait(), Ok("gave up"));
    low.wait().expect("low ran");
    let report = shut(scheduler);
    assert_eq!(report.blocked.len(), 1, "reported once");
}
