//! Two ways applications wait: a ticket awaited as a future (under tokio's current-thread and
//! multi-thread runtimes), and a submission that waits for room in a full inbox. Assertions are
//! about outcomes; where a call must wait, it waits for a flag the test sets.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use overtake_sched::Priority;
use overtake_sched::{CallExecutor, Policy, Scheduler, Shutdown};

use crate::common;
use common::{until, work_until};

fn scheduler() -> Arc<Scheduler<CallExecutor>> {
    let config = common::config(Policy::Preempt);
    Arc::new(Scheduler::start(&config, Arc::new(CallExecutor)).expect("start"))
}

fn shut(scheduler: Arc<Scheduler<CallExecutor>>) {
    Arc::into_inner(scheduler)
        .expect("last handle")
        .shutdown(Shutdown::Drain)
        .expect("shutdown");
}

/// An urgent and a background call awaited from async code; the background one is still running
/// when the urgent one is awaited, so at least one await has to wait for a wake.
async fn urgent_and_background(scheduler: &Scheduler<CallExecutor>) -> (u64, &'static str) {
    let release = Arc::new(AtomicBool::new(false));
    let r = Arc::clone(&release);
    let background = scheduler
        .call(Priority::LOW, move || {
            work_until(&r);
            "background done"
        })
        .expect("admitted");
    let urgent = scheduler
        .call(Priority::HIGH, || (1..=10u64).product::<u64>())
        .expect("admitted");
    let urgent = urgent.await.expect("urgent ran");
    release.store(true, Ordering::Release);
    (urgent, background.await.expect("background ran"))
}

#[test]
fn a_ticket_is_a_future_under_a_current_thread_runtime() {
    let scheduler = scheduler();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    let got = runtime.block_on(urgent_and_background(&scheduler));
    assert_eq!(got, (3_628_800, "background done"));
    shut(scheduler);
}

#[test]
fn a_ticket_is_a_future_under_a_multi_thread_runtime() {
    let scheduler = scheduler();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .expect("runtime");
    let s = Arc::clone(&scheduler);
    let handle = runtime.spawn(async move { urgent_and_background(&s).await });
    let got = runtime.block_on(handle).expect("task");
    assert_eq!(got, (3_628_800, "background done"));
    drop(runtime);
    shut(scheduler);
}

#[test]
fn a_waiting_submission_gives_up_at_its_timeout_and_gets_in_once_there_is_room() {
    let scheduler = scheduler();
    let (started, release) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    let (s, r) = (Arc::clone(&started), Arc::clone(&release));
    // One worker: it runs this call until released, so nothing leaves the background inbox.
    let running = scheduler
        .call(Priority::LOW, move || {
            s.store(true, Ordering::Release);
            work_until(&r);
        })
        .expect("admitted");
    until(&started);
    let config = scheduler.config().clone();
    let queued: Vec<_> = (0..config.background_inbox)
        .map(|_| scheduler.call(Priority::LOW, || ()).expect("room"))
        .collect();
    let refused = scheduler.call_waiting(Priority::LOW, || "late", Duration::from_millis(20));
    assert!(
        refused.is_err(),
        "the inbox stayed full for the whole timeout"
    );
    // Room appears while this submission waits: it gets in.
    let s = Arc::clone(&scheduler);
    let waiting =
        std::thread::spawn(move || s.call_waiting(Priority::LOW, || "in", Duration::from_secs(60)));
    release.store(true, Ordering::Release);
    let ticket = waiting
        .join()
        .expect("thread")
        .expect("admitted once there was room");
    assert_eq!(ticket.wait(), Ok("in"));
    running.wait().expect("ran");
    for t in queued {
        t.wait().expect("ran");
    }
    shut(scheduler);
}

#[test]
fn code_in_a_call_runs_as_a_task_and_an_application_thread_does_not() {
    let scheduler = scheduler();
    assert!(!overtake_runtime::park::in_task());
    let ticket = scheduler
        .call(Priority::HIGH, overtake_runtime::park::in_task)
        .expect("admitted");
    assert_eq!(ticket.wait(), Ok(true));
    shut(scheduler);
}

/// What the conversation test's task is sent, and what it answers (with the promise for the next
/// request).
struct Request {
    value: u64,
    reply: overtake_sched::Promise<Reply>,
}

struct Reply {
    total: u64,
    next: overtake_sched::Promise<Request>,
}

#[test]
fn a_task_waiting_on_a_promise_parks_until_another_thread_fulfils_it() {
    // A conversation, as a transaction spanning a client's statements has: the task parks for
    // each next request; urgent calls run meanwhile; dropping the last promise ends the task.
    use overtake_sched::Promise;
    let scheduler = scheduler();
    let (first, inbox) = Promise::<Request>::new();
    let conversation = scheduler
        .call(Priority::LOW, move || {
            let (mut total, mut inbox) = (0, inbox);
            while let Ok(request) = inbox.wait() {
                total += request.value;
                let (next, ticket) = Promise::new();
                request.reply.fulfil(Reply { total, next });
                inbox = ticket;
            }
            total
        })
        .expect("admitted");
    let mut next = first;
    for (value, expected) in [(1, 1), (2, 3), (3, 6)] {
        let (reply, answer) = Promise::new();
        next.fulfil(Request { value, reply });
        let answer = answer.wait().expect("the task answers");
        assert_eq!(answer.total, expected);
        next = answer.next;
        let urgent = scheduler
            .call(Priority::HIGH, move || value * 10)
            .expect("admitted");
        assert_eq!(urgent.wait(), Ok(value * 10));
    }
    drop(next);
    assert_eq!(conversation.wait(), Ok(6));
    shut(scheduler);
}

#[test]
fn a_call_in_a_group_runs_in_its_tier_and_is_reported_under_its_group() {
    use overtake_sched::{Call, Group, Tier, Weight};
    let scheduler = scheduler();
    let background = Group::new(Tier::Background, Weight::new(7).expect("weight"));
    let heavy = Group::new(Tier::TimeSensitive, Weight::new(5_000).expect("weight"));
    // Asked for at `high`, in the background tier: it runs at the lowest level.
    let (call, ticket) = Call::new(Priority::HIGH, || 1);
    let call = call.in_group(background);
    assert_eq!((call.priority(), call.group()), (Priority::LOW, background));
    let first = scheduler
        .submit_call((call, ticket), None)
        .expect("admitted");
    // Asked for at `low`, in the time-sensitive tier: above it. Within its tier, as asked.
    let (call, ticket) = Call::new(Priority::LOW, || 2);
    let call = call.in_group(heavy);
    assert_eq!(call.priority(), Tier::TimeSensitive.default_priority());
    let second = scheduler
        .submit_call((call, ticket), None)
        .expect("admitted");
    let (call, ticket) = Call::new(Priority::HIGH, || 3);
    assert_eq!(call.in_group(heavy).priority(), Priority::HIGH);
    drop(ticket);
    assert_eq!((first.wait(), second.wait()), (Ok(1), Ok(2)));
    // A call given no group is reported under its level's tier at the default weight.
    scheduler
        .call(Priority::HIGH, || ())
        .expect("admitted")
        .wait()
        .expect("ran");
    // The worker books a call after delivering its result: wait for the books (a state).
    let give_up = std::time::Instant::now() + Duration::from_secs(60);
    while ![background, heavy, Group::of(Priority::HIGH)]
        .iter()
        .all(|g| {
            scheduler
                .stats()
                .group(*g)
                .is_some_and(|s| s.committed == 1)
        })
    {
        assert!(std::time::Instant::now() < give_up, "never booked");
        std::thread::yield_now();
    }
    let stats = scheduler.stats();
    assert_eq!(stats.class(Priority::LOW).committed, 1);
    assert_eq!(
        stats
            .class(Tier::TimeSensitive.default_priority())
            .committed,
        1
    );
    shut(scheduler);
}
