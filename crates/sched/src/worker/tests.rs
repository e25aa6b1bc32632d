//! Behaviour of one worker, driven directly (no dispatcher, no clock): jobs are scripts that push
//! further jobs into the worker's queues, inject preemptions at chosen record accesses, park and
//! log what they see, so every interleaving asserted here is the only one possible.

use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

use overtake_priority::{Group, Priority, Tier, Weight};
use overtake_runtime::park::{self, Unparker};
use overtake_runtime::preempt::{self, Delivery, inject};

use super::{Stop, WorkerSetup, WorkerShared, run_worker};
use crate::inbox::Inbox;
use crate::job::JobError;
use crate::job::{Executor, Outcome, Scheduled};
use crate::policy::{Policy, SchedConfig};
use crate::stats::RunStats;

/// A job: a priority, a group and what to do (and, if it has one, the gate its acknowledgement
/// waits behind).
struct Script {
    priority: Priority,
    group: Group,
    body: Box<dyn FnMut() + Send>,
    acknowledged_by: Option<Gate>,
}

struct Scripts;

impl Executor for Scripts {
    type Job = Script;

    fn kinds(&self) -> &[&'static str] {
        &["script"]
    }

    fn kind(&self, _: &Script) -> usize {
        0
    }

    fn priority(&self, job: &Script) -> Priority {
        job.priority
    }

    fn group(&self, job: &Script) -> Group {
        job.group
    }

    fn execute(&self, job: &mut Script, _worker: usize) -> Outcome {
        (job.body)();
        let mut outcome = Outcome::committed();
        if let Some(gate) = job.acknowledged_by.take() {
            outcome.acknowledgement = Some(Box::pin(gate));
        }
        outcome
    }
}

type Queues = Arc<Inbox<Script>>;

/// A worker on its own thread, and its inbox.
struct TestWorker {
    queues: Queues,
    shared: Arc<WorkerShared>,
    /// Work no worker owns (as the scheduler's submit leaves it).
    pending: Arc<crate::pending::Pending<Script>>,
    stop: Arc<AtomicU8>,
    thread: JoinHandle<Result<RunStats, crate::SchedError>>,
}

fn config(pool: usize) -> SchedConfig {
    SchedConfig {
        policy: Policy::Preempt,
        delivery: Delivery::Poll,
        urgent_inbox: 16,
        background_inbox: 2_048,
        stack_size: 64 * 1024,
        task_pool: pool,
        pin: false,
        ..SchedConfig::default()
    }
}

fn start_worker(config: SchedConfig) -> TestWorker {
    start_worker_among(config, Vec::new())
}

/// A worker among `others` (workers in name only: their shared parts, which it looks at).
fn start_worker_among(config: SchedConfig, others: Vec<Arc<WorkerShared>>) -> TestWorker {
    let pending = Arc::new(crate::pending::Pending::new(
        64,
        64,
        std::time::Duration::from_micros(200),
    ));
    let inbox = Arc::new(Inbox::new(config.urgent_inbox, config.background_inbox));
    let stop = Arc::new(AtomicU8::new(Stop::Run as u8));
    let shared = Arc::new(WorkerShared::new(1, config.task_pool));
    let setup = WorkerSetup {
        index: 0,
        shared: Arc::clone(&shared),
        inbox: Arc::clone(&inbox),
        pending: Arc::clone(&pending),
        exec: Arc::new(Scripts),
        config,
        epoch: Instant::now(),
        stop: Arc::clone(&stop),
        feed: None,
        reactor: None,
        peers: std::iter::once(Arc::clone(&shared)).chain(others).collect(),
    };
    TestWorker {
        queues: inbox,
        shared,
        pending,
        stop,
        thread: std::thread::spawn(move || run_worker(setup)),
    }
}

fn push(queues: &Queues, priority: Priority, body: impl FnMut() + Send + 'static) {
    push_in(queues, priority, Group::of(priority), body);
}

fn push_in(queues: &Queues, priority: Priority, group: Group, body: impl FnMut() + Send + 'static) {
    push_script(queues, priority, group, None, body);
}

/// Queues a script (whose acknowledgement waits behind `gate`, if given).
fn push_script(
    queues: &Queues,
    priority: Priority,
    group: Group,
    gate: Option<&Gate>,
    body: impl FnMut() + Send + 'static,
) {
    let script = Script {
        priority,
        group,
        body: Box::new(body),
        acknowledged_by: gate.cloned(),
    };
    assert!(
        queues
            .push(priority, Scheduled::at(script, Instant::now()))
            .is_ok(),
        "queue full"
    );
}

/// Jobs not yet taken by the worker.
fn queued(queues: &Queues) -> usize {
    queues.queued()
}

/// Preempts the calling task at its next record access, as a request would.
fn preempt_now() {
    inject::inject(inject::Point::RecordAccess, 1, 0);
    preempt::record_access();
    inject::stop();
}

type Log = Arc<Mutex<Vec<&'static str>>>;

fn note(log: &Log, what: &'static str) {
    log.lock().expect("log").push(what);
}

impl TestWorker {
    fn finish(self) -> RunStats {
        self.stop.store(Stop::Abandon as u8, Ordering::Release);
        self.thread.join().expect("worker thread").expect("worker")
    }
}

#[test]
fn preemption_nests_across_three_levels_and_unwinds_in_order() {
    let worker = start_worker(config(8));
    let log: Log = Arc::default();
    let (q, l) = (Arc::clone(&worker.queues), Arc::clone(&log));
    push(&worker.queues, Priority::LOW, move || {
        note(&l, "low starts");
        // Medium work arrives while low runs, and a request reaches low.
        let (q2, l2) = (Arc::clone(&q), Arc::clone(&l));
        push(&q, Priority::MEDIUM, move || {
            note(&l2, "medium starts");
            let l3 = Arc::clone(&l2);
            push(&q2, Priority::HIGH, move || note(&l3, "high runs"));
            // More low work arrives too: it must wait for the paused low task.
            let l4 = Arc::clone(&l2);
            push(&q2, Priority::LOW, move || note(&l4, "second low runs"));
            preempt_now();
            note(&l2, "medium continues");
        });
        preempt_now();
        note(&l, "low continues");
    });
    // Wait until everything ran, then stop.
    while log.lock().expect("log").len() < 6 {
        std::thread::yield_now();
    }
    let stats = worker.finish();
    assert_eq!(
        *log.lock().expect("log"),
        vec![
            "low starts",
            "medium starts",
            "high runs",
            "medium continues",
            "low continues",
            "second low runs",
        ]
    );
    assert_eq!(stats.class(Priority::LOW).committed, 2);
    assert_eq!(stats.class(Priority::LOW).preemptions, 1);
    assert_eq!(stats.class(Priority::MEDIUM).preemptions, 1);
    assert_eq!(stats.class(Priority::HIGH).committed, 1);
}

#[test]
fn a_request_without_more_urgent_work_does_not_pause() {
    let worker = start_worker(config(4));
    let log: Log = Arc::default();
    let (q, l) = (Arc::clone(&worker.queues), Arc::clone(&log));
    push(&worker.queues, Priority::HIGH, move || {
        let l2 = Arc::clone(&l);
        // Same level: new work waits for the running task.
        push(&q, Priority::HIGH, move || note(&l2, "second"));
        preempt_now();
        note(&l, "first");
    });
    while log.lock().expect("log").len() < 2 {
        std::thread::yield_now();
    }
    let stats = worker.finish();
    assert_eq!(*log.lock().expect("log"), vec!["first", "second"]);
    assert_eq!(stats.class(Priority::HIGH).preemptions, 0);
}

#[test]
fn a_parked_task_lets_others_run_and_resumes_after_a_wake_from_another_thread() {
    let worker = start_worker(config(4));
    let log: Log = Arc::default();
    let unparker: Arc<Mutex<Option<Unparker>>> = Arc::default();
    let event = Arc::new(AtomicBool::new(false));
    let (l, u, e) = (Arc::clone(&log), Arc::clone(&unparker), Arc::clone(&event));
    push(&worker.queues, Priority::LOW, move || {
        *u.lock().expect("unparker") = Some(park::current_unparker());
        note(&l, "waits");
        while !e.load(Ordering::Acquire) {
            park::park();
        }
        note(&l, "woken");
    });
    let l = Arc::clone(&log);
    push(&worker.queues, Priority::LOW, move || {
        note(&l, "other runs")
    });
    // The worker is not blocked: the second job runs while the first waits.
    while log.lock().expect("log").len() < 2 {
        std::thread::yield_now();
    }
    assert_eq!(*log.lock().expect("log"), vec!["waits", "other runs"]);
    event.store(true, Ordering::Release);
    let waker = unparker
        .lock()
        .expect("unparker")
        .take()
        .expect("published");
    std::thread::spawn(move || waker.unpark())
        .join()
        .expect("waker");
    while log.lock().expect("log").len() < 3 {
        std::thread::yield_now();
    }
    let stats = worker.finish();
    let low = stats.class(Priority::LOW);
    assert_eq!(low.committed, 2);
    assert!(low.waited_nanos > 0, "the wait is booked as waiting");
}

/// Pushes a job of `priority` that publishes its unparker in `slot`, notes `waits`, parks until
/// `event` is set, and notes `woken`.
fn push_waiter(
    worker: &TestWorker,
    priority: Priority,
    log: &Log,
    (waits, woken): (&'static str, &'static str),
) -> (Arc<Mutex<Option<Unparker>>>, Arc<AtomicBool>) {
    let slot: Arc<Mutex<Option<Unparker>>> = Arc::default();
    let event = Arc::new(AtomicBool::new(false));
    let (l, u, e) = (Arc::clone(log), Arc::clone(&slot), Arc::clone(&event));
    push(&worker.queues, priority, move || {
        *u.lock().expect("unparker") = Some(park::current_unparker());
        note(&l, waits);
        while !e.load(Ordering::Acquire) {
            park::park();
        }
        note(&l, woken);
    });
    (slot, event)
}

#[test]
fn a_wake_asks_the_running_task_to_look_only_when_it_brings_more_urgent_work() {
    let worker = start_worker(config(4));
    let log: Log = Arc::default();
    let high = push_waiter(&worker, Priority::HIGH, &log, ("high waits", "high woken"));
    let low = push_waiter(&worker, Priority::LOW, &log, ("low waits", "low woken"));
    while log.lock().expect("log").len() < 2 {
        std::thread::yield_now();
    }
    let asked = Arc::new(Mutex::new(Vec::new()));
    let (l, a, shared) = (
        Arc::clone(&log),
        Arc::clone(&asked),
        Arc::clone(&worker.shared),
    );
    push(&worker.queues, Priority::LOW, move || {
        // Waking a task of its own level asks nothing of the running task (no timer wake-up,
        // no signal): the worker's loop finds the wake at its next pick.
        for (slot, event) in [&low, &high] {
            event.store(true, Ordering::Release);
            let waker = slot.lock().expect("unparker").take().expect("published");
            waker.unpark();
            a.lock().expect("asked").push(shared.target.is_requested());
        }
        // Waking a more urgent task does ask: it runs at this task's next poll.
        preempt::record_access();
        note(&l, "waker continues");
    });
    while log.lock().expect("log").len() < 5 {
        std::thread::yield_now();
    }
    worker.finish();
    assert_eq!(*asked.lock().expect("asked"), vec![false, true]);
    assert_eq!(
        *log.lock().expect("log"),
        vec![
            "high waits",
            "low waits",
            "high woken",
            // Ready before the waker was paused, it continues first (ready order within a level).
            "low woken",
            "waker continues",
        ]
    );
}

#[test]
fn a_thousand_tasks_park_on_one_worker_and_the_pool_bound_is_a_clear_error() {
    const POOL: usize = 1_000;
    let worker = start_worker(config(POOL));
    let unparkers: Arc<Mutex<Vec<Unparker>>> = Arc::default();
    let released = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicUsize::new(0));
    for _ in 0..=POOL {
        let (u, r, d) = (
            Arc::clone(&unparkers),
            Arc::clone(&released),
            Arc::clone(&done),
        );
        push(&worker.queues, Priority::LOW, move || {
            u.lock().expect("unparkers").push(park::current_unparker());
            while !r.load(Ordering::Acquire) {
                park::park();
            }
            d.fetch_add(1, Ordering::AcqRel);
        });
    }
    // The pool's last context is taken; the job after it is refused, not queued for ever. The
    // worker takes it from the queue only after the thousandth task parked, and no wake has been
    // sent yet, so no context can be free when it does.
    while unparkers.lock().expect("unparkers").len() < POOL || queued(&worker.queues) > 0 {
        std::thread::yield_now();
    }
    released.store(true, Ordering::Release);
    for u in unparkers.lock().expect("unparkers").iter() {
        u.unpark();
    }
    while done.load(Ordering::Acquire) < POOL {
        std::thread::yield_now();
    }
    let stats = worker.finish();
    let low = stats.class(Priority::LOW);
    assert_eq!(low.committed, POOL as u64);
    assert_eq!(low.failed, 1);
    assert!(
        matches!(
            low.first_error,
            Some(JobError::NoTaskContext { limit: 1000, .. })
        ),
        "{:?}",
        low.first_error
    );
}

/// The quantum policy with a quantum that is always used up, so that every request is a quantum
/// expiry.
fn quantum_config(two_queues: bool, skip_needless: bool) -> SchedConfig {
    SchedConfig {
        policy: Policy::Quantum,
        quantum: std::time::Duration::from_nanos(1),
        two_queues,
        skip_needless,
        ..config(8)
    }
}

/// A runs, queues B and C at its own level and is preempted; B queues D while it runs.
fn quantum_order(config: SchedConfig) -> (Vec<&'static str>, RunStats) {
    let worker = start_worker(config);
    let log: Log = Arc::default();
    let (q, l) = (Arc::clone(&worker.queues), Arc::clone(&log));
    push(&worker.queues, Priority::MEDIUM, move || {
        note(&l, "A starts");
        let (q2, l2) = (Arc::clone(&q), Arc::clone(&l));
        push(&q, Priority::MEDIUM, move || {
            let l3 = Arc::clone(&l2);
            push(&q2, Priority::MEDIUM, move || note(&l3, "D"));
            note(&l2, "B");
        });
        let l4 = Arc::clone(&l);
        push(&q, Priority::MEDIUM, move || note(&l4, "C"));
        preempt_now();
        note(&l, "A ends");
    });
    while log.lock().expect("log").len() < 5 {
        std::thread::yield_now();
    }
    let stats = worker.finish();
    let order = log.lock().expect("log").clone();
    (order, stats)
}

#[test]
fn with_two_queues_new_work_runs_before_preempted_work() {
    let (order, stats) = quantum_order(quantum_config(true, true));
    assert_eq!(order, vec!["A starts", "B", "C", "D", "A ends"]);
    assert_eq!(stats.class(Priority::MEDIUM).preemptions, 1);
}

/// A (group `a`) runs, queues A2 (its group) and then B (group `b`) at its own level, and is
/// paused at its quantum's end.
fn group_order(a: Group, b: Group) -> Vec<&'static str> {
    let worker = start_worker(quantum_config(true, true));
    let log: Log = Arc::default();
    let (q, l) = (Arc::clone(&worker.queues), Arc::clone(&log));
    push_in(&worker.queues, Priority::MEDIUM, a, move || {
        note(&l, "A starts");
        let l2 = Arc::clone(&l);
        push_in(&q, Priority::MEDIUM, a, move || note(&l2, "A2"));
        let l3 = Arc::clone(&l);
        push_in(&q, Priority::MEDIUM, b, move || note(&l3, "B"));
        preempt_now();
        note(&l, "A ends");
    });
    while log.lock().expect("log").len() < 4 {
        std::thread::yield_now();
    }
    worker.finish();
    log.lock().expect("log").clone()
}

#[test]
fn within_a_level_the_group_behind_in_its_share_goes_before_work_queued_earlier() {
    let ts = |w| Group::new(Tier::TimeSensitive, Weight::new(w).expect("weight"));
    // One group: new jobs in the order they came, then the paused task (two queues).
    assert_eq!(
        group_order(ts(100), ts(100)),
        vec!["A starts", "A2", "B", "A ends"]
    );
    // Two groups: A's group has used its slice, B's has not run: B goes before A2, which was
    // queued first; A's group then continues in its own order (new work before paused work).
    let order = group_order(ts(100), ts(150));
    assert_eq!(order[..2], ["A starts", "B"]);
    let a2 = order.iter().position(|&e| e == "A2");
    let ends = order.iter().position(|&e| e == "A ends");
    assert!(a2 < ends, "{order:?}");
}

#[test]
fn with_one_queue_a_preempted_task_goes_behind_only_the_work_queued_before_it() {
    let (order, _) = quantum_order(quantum_config(false, true));
    assert_eq!(order, vec!["A starts", "B", "C", "A ends", "D"]);
}

#[test]
fn an_expired_quantum_preempts_only_when_other_work_waits_unless_skipping_is_off() {
    for (skip, expected) in [(true, 0), (false, 1)] {
        let worker = start_worker(quantum_config(true, skip));
        let done = Arc::new(AtomicBool::new(false));
        let d = Arc::clone(&done);
        push(&worker.queues, Priority::MEDIUM, move || {
            preempt_now(); // nothing else waits
            d.store(true, Ordering::Release);
        });
        while !done.load(Ordering::Acquire) {
            std::thread::yield_now();
        }
        let stats = worker.finish();
        assert_eq!(
            stats.class(Priority::MEDIUM).preemptions,
            expected,
            "skip_needless = {skip}"
        );
    }
}

#[test]
fn a_request_resumed_for_its_age_runs_to_its_end() {
    let worker = start_worker(SchedConfig {
        // Every paused request is old enough at once.
        paused_age_limit: std::time::Duration::ZERO,
        ..quantum_config(true, true)
    });
    let log: Log = Arc::default();
    let (q, l) = (Arc::clone(&worker.queues), Arc::clone(&log));
    push(&worker.queues, Priority::MEDIUM, move || {
        note(&l, "A starts");
        let l2 = Arc::clone(&l);
        push(&q, Priority::MEDIUM, move || note(&l2, "B"));
        preempt_now(); // B waits: A pauses, and is resumed before B for its age
        note(&l, "A resumed");
        preempt_now(); // B still waits, but A now runs to its end
        note(&l, "A ends");
    });
    while log.lock().expect("log").len() < 4 {
        std::thread::yield_now();
    }
    let stats = worker.finish();
    assert_eq!(
        *log.lock().expect("log"),
        vec!["A starts", "A resumed", "A ends", "B"]
    );
    assert_eq!(stats.class(Priority::MEDIUM).preemptions, 1);
}

#[test]
fn under_two_queues_a_woken_task_goes_before_one_paused_for_its_turn() {
    // W parks (a transaction block waiting for its client's next statement); A runs and is
    // paused for new work C, which wakes W. W has had no share since its wake: it is new work
    // to its level, and runs before A continues.
    let worker = start_worker(quantum_config(true, true));
    let log: Log = Arc::default();
    let unparker: Arc<Mutex<Option<Unparker>>> = Arc::default();
    let event = Arc::new(AtomicBool::new(false));
    let (l, u, e) = (Arc::clone(&log), Arc::clone(&unparker), Arc::clone(&event));
    push(&worker.queues, Priority::MEDIUM, move || {
        *u.lock().expect("unparker") = Some(park::current_unparker());
        while !e.load(Ordering::Acquire) {
            park::park();
        }
        note(&l, "W");
    });
    while unparker.lock().expect("unparker").is_none() {
        std::thread::yield_now();
    }
    let (q, l) = (Arc::clone(&worker.queues), Arc::clone(&log));
    push(&worker.queues, Priority::MEDIUM, move || {
        note(&l, "A starts");
        let (l2, u2, e2) = (Arc::clone(&l), Arc::clone(&unparker), Arc::clone(&event));
        push(&q, Priority::MEDIUM, move || {
            note(&l2, "C");
            e2.store(true, Ordering::Release);
            u2.lock()
                .expect("unparker")
                .take()
                .expect("W parked")
                .unpark();
        });
        preempt_now(); // C waits: A pauses for its turn
        note(&l, "A ends");
    });
    while log.lock().expect("log").len() < 4 {
        std::thread::yield_now();
    }
    worker.finish();
    assert_eq!(
        *log.lock().expect("log"),
        vec!["A starts", "C", "W", "A ends"]
    );
}

/// Under `Quantum`: A (low) runs; low work B and then high work H arrive, with a request each.
fn quantum_levels(config: SchedConfig) -> Vec<&'static str> {
    let worker = start_worker(config);
    let log: Log = Arc::default();
    let (q, l) = (Arc::clone(&worker.queues), Arc::clone(&log));
    push(&worker.queues, Priority::LOW, move || {
        note(&l, "A starts");
        let l2 = Arc::clone(&l);
        push(&q, Priority::LOW, move || note(&l2, "B"));
        preempt_now();
        note(&l, "A goes on");
        let l3 = Arc::clone(&l);
        push(&q, Priority::HIGH, move || note(&l3, "H"));
        preempt_now();
        note(&l, "A ends");
    });
    while log.lock().expect("log").len() < 5 {
        std::thread::yield_now();
    }
    worker.finish();
    log.lock().expect("log").clone()
}

#[test]
fn under_quantum_more_urgent_work_preempts_at_once_and_its_own_level_waits_for_the_quantum() {
    // A quantum that never ends: B waits for A, H does not.
    let long = SchedConfig {
        quantum: std::time::Duration::from_secs(3600),
        ..quantum_config(true, true)
    };
    assert_eq!(
        quantum_levels(long),
        vec!["A starts", "A goes on", "H", "A ends", "B"]
    );
    // A task resumed to run to its end (for its age) still makes way for more urgent work.
    let to_end = SchedConfig {
        paused_age_limit: std::time::Duration::ZERO,
        ..quantum_config(true, true)
    };
    assert_eq!(
        quantum_levels(to_end),
        vec!["A starts", "A goes on", "H", "A ends", "B"]
    );
}

/// Priority inversion: low holds something high needs while medium computes. High raises low
/// while it waits (`raise`); returns the order in which things happened.
fn inversion(raise: bool) -> Vec<&'static str> {
    let worker = start_worker(config(8));
    let log: Log = Arc::default();
    let holder: Arc<Mutex<Option<Unparker>>> = Arc::default();
    let waiter: Arc<Mutex<Option<Unparker>>> = Arc::default();
    let released = Arc::new(AtomicBool::new(false));
    let (q, l, h, w, r) = (
        Arc::clone(&worker.queues),
        Arc::clone(&log),
        Arc::clone(&holder),
        Arc::clone(&waiter),
        Arc::clone(&released),
    );
    push(&worker.queues, Priority::LOW, move || {
        // Low takes the "lock".
        *h.lock().expect("holder") = Some(park::current_unparker());
        let (q2, l2, h2, w2, r2) = (
            Arc::clone(&q),
            Arc::clone(&l),
            Arc::clone(&h),
            Arc::clone(&w),
            Arc::clone(&r),
        );
        push(&q, Priority::MEDIUM, move || {
            let (l3, h3, w3, r3) = (
                Arc::clone(&l2),
                Arc::clone(&h2),
                Arc::clone(&w2),
                Arc::clone(&r2),
            );
            push(&q2, Priority::HIGH, move || {
                // High needs the lock low holds: it waits, lending low its level.
                *w3.lock().expect("waiter") = Some(park::current_unparker());
                let lent = raise.then(|| {
                    h3.lock()
                        .expect("holder")
                        .as_ref()
                        .expect("held")
                        .raise_to(Priority::HIGH.level() as u8)
                });
                note(&l3, "high waits");
                while !r3.load(Ordering::Acquire) {
                    park::park();
                }
                drop(lent);
                note(&l3, "high continues");
            });
            preempt_now();
            note(&l2, "medium continues");
        });
        preempt_now();
        // Low releases the "lock" and wakes high.
        note(&l, "low releases");
        r.store(true, Ordering::Release);
        if let Some(w) = w.lock().expect("waiter").as_ref() {
            w.unpark();
        }
    });
    while log.lock().expect("log").len() < 4 {
        std::thread::yield_now();
    }
    worker.finish();
    log.lock().expect("log").clone()
}

#[test]
fn a_waiter_raises_the_holder_past_medium_work_until_it_releases() {
    assert_eq!(
        inversion(true),
        vec![
            "high waits",
            "low releases",
            "high continues",
            "medium continues"
        ]
    );
    // Without the raise, medium work keeps the holder (and so high) waiting: the inversion.
    assert_eq!(
        inversion(false),
        vec![
            "high waits",
            "medium continues",
            "low releases",
            "high continues"
        ]
    );
}

#[test]
fn a_raise_from_another_thread_makes_the_worker_switch_to_the_holder_at_once() {
    let worker = start_worker(config(8));
    let log: Log = Arc::default();
    let holder: Arc<Mutex<Option<Unparker>>> = Arc::default();
    let released = Arc::new(AtomicBool::new(false));
    let medium_running = Arc::new(AtomicBool::new(false));
    let (q, l, h, r, m) = (
        Arc::clone(&worker.queues),
        Arc::clone(&log),
        Arc::clone(&holder),
        Arc::clone(&released),
        Arc::clone(&medium_running),
    );
    push(&worker.queues, Priority::LOW, move || {
        *h.lock().expect("holder") = Some(park::current_unparker());
        let (l2, r2, m2) = (Arc::clone(&l), Arc::clone(&r), Arc::clone(&m));
        push(&q, Priority::MEDIUM, move || {
            m2.store(true, Ordering::Release);
            // Medium computes (touching records) until the holder has released: it can only
            // end if the worker switches to the raised holder while medium runs.
            let give_up = Instant::now() + std::time::Duration::from_secs(60);
            while !r2.load(Ordering::Acquire) {
                preempt::record_access();
                assert!(Instant::now() < give_up, "the raised holder never ran");
            }
            note(&l2, "medium ends");
        });
        preempt_now();
        note(&l, "low releases");
        r.store(true, Ordering::Release);
    });
    while !medium_running.load(Ordering::Acquire) {
        std::thread::yield_now();
    }
    // A waiter on another thread lends the holder its level.
    let lent = holder
        .lock()
        .expect("holder")
        .as_ref()
        .expect("held")
        .raise_to(Priority::HIGH.level() as u8);
    while log.lock().expect("log").len() < 2 {
        std::thread::yield_now();
    }
    drop(lent);
    let stats = worker.finish();
    assert_eq!(
        *log.lock().expect("log"),
        vec!["low releases", "medium ends"]
    );
    assert_eq!(stats.class(Priority::MEDIUM).preemptions, 1);
}

/// L1 queues five urgent jobs of 20 ms and a second low-priority job L2, and is preempted. With
/// starvation threshold `threshold`, returns the order in which things happened.
fn starvation_order(threshold: f64) -> Vec<&'static str> {
    let worker = start_worker(SchedConfig {
        starvation_threshold: threshold,
        ..config(8)
    });
    let log: Log = Arc::default();
    let (q, l) = (Arc::clone(&worker.queues), Arc::clone(&log));
    push(&worker.queues, Priority::LOW, move || {
        note(&l, "L1 starts");
        for _ in 0..5 {
            let l = Arc::clone(&l);
            push(&q, Priority::HIGH, move || {
                let until = Instant::now() + std::time::Duration::from_millis(20);
                while Instant::now() < until {
                    std::hint::spin_loop();
                }
                note(&l, "H");
            });
        }
        let l2 = Arc::clone(&l);
        push(&q, Priority::LOW, move || note(&l2, "L2"));
        preempt_now();
        note(&l, "L1 ends");
    });
    while log.lock().expect("log").len() < 8 {
        std::thread::yield_now();
    }
    worker.finish();
    log.lock().expect("log").clone()
}

#[test]
fn over_the_starvation_threshold_the_low_class_starts_new_work_before_queued_urgent_work() {
    // Threshold 0.1: after one urgent job the class has lost 20 ms of the ~20 ms since the
    // conflict began (level ~1, at least 0.1 unless the machine stalls for 180 ms), so the paused
    // L1 continues, and then the new L2 starts, while four urgent jobs are still queued.
    assert_eq!(
        starvation_order(0.1),
        ["L1 starts", "H", "L1 ends", "L2", "H", "H", "H", "H"]
    );
    // Without a limit, queued urgent work always goes first.
    assert_eq!(
        starvation_order(100.0),
        ["L1 starts", "H", "H", "H", "H", "H", "L1 ends", "L2"]
    );
}

#[test]
fn a_lifted_background_task_goes_before_the_time_sensitive_groups_of_its_new_level() {
    let worker = start_worker(quantum_config(true, true));
    let log: Log = Arc::default();
    let (q, l) = (Arc::clone(&worker.queues), Arc::clone(&log));
    let heavy = Group::new(Tier::TimeSensitive, Weight::MAX);
    push(&worker.queues, Priority::LOW, move || {
        // Time-sensitive work of the heaviest group arrives; then a waiter lifts this
        // background task to its level (as a lock holder is lifted), and its quantum ends.
        let l2 = Arc::clone(&l);
        push_in(&q, Priority::MEDIUM, heavy, move || {
            note(&l2, "time-sensitive")
        });
        let lent = park::current_unparker().raise_to(Priority::MEDIUM.level() as u8);
        note(&l, "lifted");
        preempt_now();
        note(&l, "lifted goes on");
        drop(lent);
    });
    while log.lock().expect("log").len() < 3 {
        std::thread::yield_now();
    }
    worker.finish();
    assert_eq!(
        *log.lock().expect("log"),
        vec!["lifted", "lifted goes on", "time-sensitive"]
    );
}

#[test]
fn pending_work_of_a_group_behind_the_running_one_takes_the_worker_before_the_quantum_ends() {
    // A quantum that never ends: only the share can make A's task give way.
    let run = |b_weight: u32| {
        let worker = start_worker(SchedConfig {
            quantum: std::time::Duration::from_secs(3600),
            ..quantum_config(true, true)
        });
        let log: Log = Arc::default();
        let (p, l) = (Arc::clone(&worker.pending), Arc::clone(&log));
        let ts =
            |w, n| Group::new(Tier::TimeSensitive, Weight::new(w).expect("weight")).numbered(n);
        push_in(&worker.queues, Priority::MEDIUM, ts(100, 1), move || {
            note(&l, "A starts");
            let l2 = Arc::clone(&l);
            let script = Script {
                priority: Priority::MEDIUM,
                group: ts(b_weight, 2),
                body: Box::new(move || note(&l2, "B")),
                acknowledged_by: None,
            };
            let job = Scheduled::at(script, Instant::now());
            assert!(p.push(Priority::MEDIUM, ts(b_weight, 2), job).is_ok());
            preempt_now();
            note(&l, "A goes on");
        });
        while log.lock().expect("log").len() < 3 {
            std::thread::yield_now();
        }
        worker.finish();
        log.lock().expect("log").clone()
    };
    // B's group, heavier, goes before A's at equal virtual time: it takes the worker at once.
    assert_eq!(run(150), vec!["A starts", "B", "A goes on"]);
    // Lighter, it does not go before A: A keeps its quantum.
    assert_eq!(run(50), vec!["A starts", "A goes on", "B"]);
}

/// An acknowledgement a test resolves: pending until `resolve`, which wakes whoever polled it.
#[derive(Clone, Default)]
struct Gate(Arc<Mutex<GateState>>);

#[derive(Default)]
struct GateState {
    result: Option<Result<(), JobError>>,
    waker: Option<std::task::Waker>,
}

impl Gate {
    fn resolve(&self, result: Result<(), JobError>) {
        let mut state = self.0.lock().expect("gate");
        state.result = Some(result);
        if let Some(waker) = state.waker.take() {
            waker.wake();
        }
    }

    /// Whether the worker polled it and waits for it.
    fn awaited(&self) -> bool {
        self.0.lock().expect("gate").waker.is_some()
    }
}

impl std::future::Future for Gate {
    type Output = Result<(), JobError>;

    fn poll(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        let mut state = self.0.lock().expect("gate");
        match state.result.take() {
            Some(result) => std::task::Poll::Ready(result),
            None => {
                state.waker = Some(cx.waker().clone());
                std::task::Poll::Pending
            }
        }
    }
}

fn push_acknowledged(queues: &Queues, gate: &Gate, body: impl FnMut() + Send + 'static) {
    push_acknowledged_at(queues, Priority::LOW, gate, body);
}

fn push_acknowledged_at(
    queues: &Queues,
    priority: Priority,
    gate: &Gate,
    body: impl FnMut() + Send + 'static,
) {
    push_script(queues, priority, Group::of(priority), Some(gate), body);
}

fn finished(worker: &TestWorker) -> u64 {
    worker.shared.finished.load(Ordering::Acquire)
}

#[test]
fn a_job_awaiting_its_acknowledgement_holds_no_context_and_is_booked_when_it_resolves() {
    // One context: the third job can start only if the two awaiting acknowledgements hold none
    // (else it would be refused for want of one).
    let worker = start_worker(config(1));
    let log: Log = Arc::default();
    let (durable, lost) = (Gate::default(), Gate::default());
    let l = Arc::clone(&log);
    push_acknowledged(&worker.queues, &durable, move || {
        note(&l, "first committed")
    });
    let l = Arc::clone(&log);
    push_acknowledged(&worker.queues, &lost, move || note(&l, "second committed"));
    while !(durable.awaited() && lost.awaited()) {
        std::thread::yield_now();
    }
    let l = Arc::clone(&log);
    push(&worker.queues, Priority::LOW, move || note(&l, "third ran"));
    // Booked: run, or refused for want of a context.
    while finished(&worker) < 1 {
        std::thread::yield_now();
    }
    assert_eq!(
        log.lock().expect("log").len(),
        3,
        "the third job did not run"
    );
    durable.resolve(Ok(()));
    while finished(&worker) < 2 {
        std::thread::yield_now();
    }
    lost.resolve(Err(JobError::Panicked("the log stopped".into())));
    while finished(&worker) < 3 {
        std::thread::yield_now();
    }
    let stats = worker.finish();
    let low = stats.class(Priority::LOW);
    assert_eq!((low.committed, low.failed), (2, 1));
    assert!(
        low.first_error
            .as_ref()
            .is_some_and(|e| e.to_string().contains("the log stopped")),
        "{:?}",
        low.first_error
    );
    // The acknowledged job's wait counts as its commit's wait for the log.
    assert_eq!(low.durable_wait.count(), 1);
}

#[test]
fn a_worker_at_its_limit_of_awaited_acknowledgements_starts_nothing_until_one_resolves() {
    let worker = start_worker(SchedConfig {
        awaiting_limit: 1,
        ..config(4)
    });
    let log: Log = Arc::default();
    let gate = Gate::default();
    let l = Arc::clone(&log);
    push_acknowledged(&worker.queues, &gate, move || note(&l, "committed"));
    while !gate.awaited() {
        std::thread::yield_now();
    }
    let l = Arc::clone(&log);
    push(&worker.queues, Priority::HIGH, move || note(&l, "next ran"));
    // The next job waits in the inbox, urgent as it is.
    for _ in 0..1_000 {
        std::thread::yield_now();
    }
    assert_eq!(*log.lock().expect("log"), vec!["committed"]);
    gate.resolve(Ok(()));
    while log.lock().expect("log").len() < 2 {
        std::thread::yield_now();
    }
    let stats = worker.finish();
    assert_eq!(stats.class(Priority::LOW).committed, 1);
    assert_eq!(stats.class(Priority::HIGH).committed, 1);
    assert_eq!(stats.class(Priority::HIGH).failed, 0);
}

#[test]
fn a_stopping_worker_waits_for_the_acknowledgements_it_owes() {
    let worker = start_worker(config(4));
    let gate = Gate::default();
    push_acknowledged(&worker.queues, &gate, || {});
    while !gate.awaited() {
        std::thread::yield_now();
    }
    worker.stop.store(Stop::Abandon as u8, Ordering::Release);
    for _ in 0..1_000 {
        std::thread::yield_now();
    }
    assert!(
        !worker.thread.is_finished(),
        "stopped owing an acknowledgement"
    );
    gate.resolve(Ok(()));
    let stats = worker.finish();
    assert_eq!(stats.class(Priority::LOW).committed, 1);
}

#[test]
fn an_urgent_job_is_booked_when_its_acknowledgement_resolves_while_background_work_runs() {
    let worker = start_worker(config(4));
    let log: Log = Arc::default();
    let gate = Gate::default();
    push_acknowledged_at(&worker.queues, Priority::HIGH, &gate, || {});
    while !gate.awaited() {
        std::thread::yield_now();
    }
    let (l, shared) = (Arc::clone(&log), Arc::clone(&worker.shared));
    push(&worker.queues, Priority::LOW, move || {
        note(&l, "background starts");
        // It polls for preemption as the engine's record accesses do, and goes on only once
        // the urgent job was booked: by its own preemption hook, as it never ends otherwise.
        while shared.finished.load(Ordering::Acquire) == 0 {
            preempt::record_access();
            std::hint::spin_loop();
        }
        note(&l, "background saw the urgent job booked");
    });
    while log.lock().expect("log").is_empty() {
        std::thread::yield_now();
    }
    gate.resolve(Ok(()));
    while log.lock().expect("log").len() < 2 {
        std::thread::yield_now();
    }
    let stats = worker.finish();
    assert_eq!(stats.class(Priority::HIGH).committed, 1);
    assert_eq!(stats.class(Priority::LOW).committed, 1);
    // Booked without pausing the background job.
    assert_eq!(stats.class(Priority::LOW).preemptions, 0);
}

#[test]
fn an_idle_worker_spinning_alone_sleeps_at_once_while_another_works() {
    // It would spin for an hour; another worker is awake (working), so it sleeps instead.
    let config = SchedConfig {
        idle_spin: std::time::Duration::from_secs(3_600),
        idle_spin_alone: true,
        ..config(2)
    };
    let working = Arc::new(WorkerShared::new(1, 64));
    let w = start_worker_among(config, vec![working]);
    let give_up = Instant::now() + std::time::Duration::from_secs(60);
    while !w.shared.sleeper.is_sleeping() {
        assert!(Instant::now() < give_up, "the idle worker never slept");
        std::thread::yield_now();
    }
    // Work still wakes it.
    let ran = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&ran);
    push(&w.queues, Priority::HIGH, move || {
        flag.store(true, Ordering::SeqCst)
    });
    w.shared.sleeper.notify();
    while !ran.load(Ordering::SeqCst) {
        assert!(Instant::now() < give_up, "the job never ran");
        std::thread::yield_now();
    }
    w.finish();
}
