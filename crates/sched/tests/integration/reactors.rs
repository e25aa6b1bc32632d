//! A worker's reactor: the worker sleeps in it and is woken by work submitted meanwhile; what it
//! delivers runs on that worker; and while a task keeps the worker busy, the timer polls the
//! reactor in its stead and urgent work that arrived through it preempts the task. Readiness is
//! simulated: a flag the test sets, turned into a job when the reactor is polled. Every wait is
//! for a flag (see `common`).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

use overtake_sched::reactor::Reactor;
use overtake_sched::{Call, CallExecutor, Policy, Priority, Scheduler, Shutdown, StartOptions};

use crate::common;
use common::{until, work_until};

/// A reactor whose "readiness" is a job handed to it: a poll submits it to worker 0.
#[derive(Default)]
struct FakeReactor {
    scheduler: OnceLock<Weak<Scheduler<CallExecutor>>>,
    ready: Mutex<Option<Call>>,
    /// Polls, and whether the worker sleeps in one now (a poll asked to wait, not yet returned).
    polls: AtomicUsize,
    sleeping: AtomicBool,
    /// Unblocks asked for, and how many a poll has taken: like an eventfd, an unblock that comes
    /// before the poll ends the next one.
    unblocked: Arc<AtomicUsize>,
    taken: AtomicUsize,
}

impl Reactor for FakeReactor {
    fn poll(&self, timeout: Duration) {
        self.polls.fetch_add(1, Ordering::SeqCst);
        let sleeps = timeout > Duration::ZERO;
        self.sleeping.store(sleeps, Ordering::SeqCst);
        let give_up = Instant::now() + Duration::from_secs(60);
        loop {
            let call = self.ready.lock().expect("ready").take();
            if let Some(call) = call {
                let scheduler = self
                    .scheduler
                    .get()
                    .and_then(Weak::upgrade)
                    .expect("running");
                scheduler
                    .submit_to(0, call, Instant::now())
                    .expect("room in the inbox");
                self.sleeping.store(false, Ordering::SeqCst);
                return;
            }
            // Sleeping in the reactor lasts until readiness or the unblocker, whatever the
            // timeout (so a test that sees `sleeping` knows the worker waits here until then).
            let unblocked = self.unblocked.load(Ordering::SeqCst);
            if !sleeps || self.taken.swap(unblocked, Ordering::SeqCst) != unblocked {
                self.sleeping.store(false, Ordering::SeqCst);
                return;
            }
            assert!(
                Instant::now() < give_up,
                "the worker's sleep was never ended"
            );
            std::thread::yield_now();
        }
    }

    fn unblocker(&self) -> Arc<dyn Fn() + Send + Sync> {
        let unblocked = Arc::clone(&self.unblocked);
        Arc::new(move || {
            unblocked.fetch_add(1, Ordering::SeqCst);
        })
    }
}

fn start(policy: Policy) -> (Arc<Scheduler<CallExecutor>>, Arc<FakeReactor>) {
    let reactor = Arc::new(FakeReactor::default());
    let options =
        StartOptions::default().reactors(vec![Some(Arc::clone(&reactor) as Arc<dyn Reactor>)]);
    let config = common::config(policy).workers(1);
    let scheduler =
        Arc::new(Scheduler::start_with(&config, Arc::new(CallExecutor), options).expect("start"));
    let _ = reactor.scheduler.set(Arc::downgrade(&scheduler));
    (scheduler, reactor)
}

fn shut(scheduler: Arc<Scheduler<CallExecutor>>) {
    Arc::into_inner(scheduler)
        .expect("sole handle")
        .shutdown(Shutdown::Drain)
        .expect("shutdown");
}

#[test]
fn an_idle_worker_sleeps_in_its_reactor_and_runs_what_it_delivers() {
    let (scheduler, reactor) = start(Policy::Preempt);
    until_true(|| reactor.sleeping.load(Ordering::SeqCst));
    let ran = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&ran);
    let (call, ticket) = Call::new(Priority::HIGH, move || {
        flag.store(true, Ordering::SeqCst);
        std::thread::current().name().map(str::to_owned)
    });
    *reactor.ready.lock().expect("ready") = Some(call);
    let thread = ticket.wait().expect("ran");
    assert!(ran.load(Ordering::SeqCst));
    assert_eq!(
        thread.as_deref(),
        Some("worker-0"),
        "on the reactor's worker"
    );
    // Work submitted while the worker sleeps in its reactor ends the sleep through it (the
    // fake sleeps until then, however long). The poll that delivered the call has returned
    // before the call ran, so `sleeping` now means a new sleep.
    until_true(|| reactor.sleeping.load(Ordering::SeqCst));
    let ticket = scheduler.call(Priority::HIGH, || 7).expect("submitted");
    assert_eq!(ticket.wait().expect("ran"), 7);
    shut(scheduler);
}

#[test]
fn urgent_work_arriving_through_a_busy_workers_reactor_preempts_its_task() {
    let (scheduler, reactor) = start(Policy::Preempt);
    let (low_running, urgent_ran) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    let (running, ran) = (Arc::clone(&low_running), Arc::clone(&urgent_ran));
    // The background task runs until the urgent one has: only a preemption lets that happen on
    // the one worker, and only the timer's poll of the reactor delivers the urgent one.
    let low = scheduler
        .call(Priority::LOW, move || {
            running.store(true, Ordering::SeqCst);
            work_until(&ran);
        })
        .expect("low");
    until(&low_running);
    let polls_before = reactor.polls.load(Ordering::SeqCst);
    let flag = Arc::clone(&urgent_ran);
    let (call, urgent) = Call::new(Priority::HIGH, move || flag.store(true, Ordering::SeqCst));
    *reactor.ready.lock().expect("ready") = Some(call);
    urgent.wait().expect("urgent ran");
    low.wait().expect("low finished after it");
    assert!(
        reactor.polls.load(Ordering::SeqCst) > polls_before,
        "polled while the worker was busy"
    );
    shut(scheduler);
}

/// On a test thread: yields until `f` holds (bounded against a hang, as `common::until`).
fn until_true(f: impl Fn() -> bool) {
    let give_up = Instant::now() + Duration::from_secs(60);
    while !f() {
        assert!(Instant::now() < give_up, "the awaited event never happened");
        std::thread::yield_now();
    }
}
