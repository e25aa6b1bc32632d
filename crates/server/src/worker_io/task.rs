//! A session as its worker runs it: the session's protocol loop (a future) polled by steps,
//! each a short call on the session's worker at the session's priority, run between tasks on
//! the worker's own stack (`Call::between_tasks`: no task context, so a session is served even
//! while parked transaction blocks hold every context, and no switch). A step
//! polls until the future waits (for its client, or for a statement, which runs as a task of
//! its own on the same worker); whatever ends that wait (the reactor, a statement's end, a
//! timer) wakes the session, which submits its next step to the same worker.
//!
//! Steps are not preemptible: the protocol code they run takes short-lived locks of its own
//! (the protocol crate's, the session's), which a paused step would hold against the next
//! session on its worker. They never park either (a future waits by returning). Statements,
//! which run for as long as they need, are preemptible tasks of their own.
//!
//! Must never: run two steps of one session at once, or lose a wake that comes while a step
//! runs (the state word below orders both).

use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::atomic::{AtomicU8, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use overtake_priority::{Group, Priority, Tier, Weight};
use overtake_runtime::{NoPreemptGuard, RegionMutex};
use overtake_sched::{Call, Calls, Scheduler};

use super::reactor::ReactorShared;

/// Nothing to do until a wake.
const IDLE: u8 = 0;
/// A step is submitted.
const SCHEDULED: u8 = 1;
/// A step polls.
const RUNNING: u8 = 2;
/// A step polls, and a wake came meanwhile: it polls once more.
const NOTIFIED: u8 = 3;
/// The session ended.
const DONE: u8 = 4;

/// How long a step refused by a full inbox waits before it is submitted again.
const RESUBMIT: Duration = Duration::from_millis(1);

type SessionFuture = Pin<Box<dyn Future<Output = ()> + Send>>;

/// The priority and group a session's steps run at: its current class, kept by the session as
/// its settings change (one word, so that a waker on any thread reads it without a lock). It is
/// counted among its worker's sessions at its level, from its creation to its drop.
pub struct StepClass {
    word: AtomicU32,
    reactor: Arc<ReactorShared>,
}

impl StepClass {
    /// The class of a session served by the worker whose reactor is `reactor`, before the
    /// session has settings: `priority`'s default level.
    pub(crate) fn for_worker(reactor: &Arc<ReactorShared>) -> Self {
        reactor.levels[Priority::MEDIUM.level()].fetch_add(1, Ordering::Relaxed);
        StepClass {
            word: AtomicU32::new(Self::word(Priority::MEDIUM, Group::of(Priority::MEDIUM))),
            reactor: Arc::clone(reactor),
        }
    }

    fn word(priority: Priority, group: Group) -> u32 {
        let tier = u32::from(group.tier == Tier::Background);
        (priority.level() as u32) | (tier << 8) | (group.weight.get() << 16)
    }

    /// The session's class is now `priority` in `group`.
    pub fn set(&self, priority: Priority, group: Group) {
        let before = self
            .word
            .swap(Self::word(priority, group), Ordering::Relaxed);
        let was = (before & 0xff) as usize;
        if was != priority.level() {
            self.reactor.levels[priority.level()].fetch_add(1, Ordering::Relaxed);
            self.reactor.levels[was].fetch_sub(1, Ordering::Relaxed);
        }
    }

    fn get(&self) -> (Priority, Group) {
        let word = self.word.load(Ordering::Relaxed);
        let priority = Priority::from_level((word & 0xff) as usize).unwrap_or(Priority::MEDIUM);
        let tier = if (word >> 8) & 1 == 1 {
            Tier::Background
        } else {
            Tier::TimeSensitive
        };
        let weight = Weight::new(word >> 16).unwrap_or_default();
        (priority, Group::new(tier, weight))
    }
}

impl std::fmt::Debug for StepClass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("StepClass").field(&self.get()).finish()
    }
}

impl Drop for StepClass {
    fn drop(&mut self) {
        let level = (self.word.load(Ordering::Relaxed) & 0xff) as usize;
        self.reactor.levels[level].fetch_sub(1, Ordering::Relaxed);
    }
}

/// A session served by a worker.
pub(crate) struct SessionTask {
    state: AtomicU8,
    future: RegionMutex<Option<SessionFuture>>,
    worker: usize,
    /// Weak: a waker kept somewhere after the session ended must not keep the scheduler (whose
    /// last owner, dropped on a worker, would join that worker's own thread).
    scheduler: Weak<Scheduler<Calls>>,
    class: Arc<StepClass>,
    /// Timers and spawned helpers of the session's code live in this runtime.
    runtime: tokio::runtime::Handle,
    /// Counts the sessions whose future is not dropped yet (the server's shutdown waits for
    /// none, so that the last owner of what sessions share is never a worker).
    live: Arc<AtomicUsize>,
}

impl SessionTask {
    /// Starts serving `future` on `worker`.
    pub(crate) fn start(
        future: SessionFuture,
        (worker, class): (usize, Arc<StepClass>),
        scheduler: &Arc<Scheduler<Calls>>,
        runtime: tokio::runtime::Handle,
        live: &Arc<AtomicUsize>,
    ) {
        live.fetch_add(1, Ordering::SeqCst);
        let task = Arc::new(SessionTask {
            state: AtomicU8::new(SCHEDULED),
            future: RegionMutex::new(Some(future)),
            worker,
            scheduler: Arc::downgrade(scheduler),
            class,
            runtime,
            live: Arc::clone(live),
        });
        task.submit();
    }

    /// Drops the session's future (it ended, or can no longer run).
    fn end(&self) {
        let future = {
            let region = NoPreemptGuard::new();
            self.future.lock(&region).take()
        };
        self.state.store(DONE, Ordering::SeqCst);
        if future.is_some() {
            drop(future);
            self.live.fetch_sub(1, Ordering::SeqCst);
        }
    }

    fn submit(self: &Arc<Self>) {
        let Some(scheduler) = self.scheduler.upgrade() else {
            // The server is gone: so is the session.
            return self.end();
        };
        let (priority, group) = self.class.get();
        let task = Arc::clone(self);
        let (call, _ticket) = Call::between_tasks(priority, move || task.step());
        let call = call.in_group(group);
        if let Err(full) = scheduler.submit_to(self.worker, call, Instant::now()) {
            // The worker's inbox is full: try again from the runtime's timer until it takes it
            // (the session waits, as a statement waits for admission).
            let mut call = full.into_inner();
            let task = Arc::clone(self);
            self.runtime.spawn(async move {
                loop {
                    tokio::time::sleep(RESUBMIT).await;
                    let Some(scheduler) = task.scheduler.upgrade() else {
                        return task.end();
                    };
                    match scheduler.submit_to(task.worker, call, Instant::now()) {
                        Ok(()) => return,
                        Err(full) => call = full.into_inner(),
                    }
                }
            });
        }
    }

    /// Polls the session until it waits, on its worker, between tasks.
    fn step(self: Arc<Self>) {
        self.state.store(RUNNING, Ordering::SeqCst);
        let waker = Waker::from(Arc::clone(&self));
        let mut cx = Context::from_waker(&waker);
        let _runtime = self.runtime.enter();
        loop {
            let region = NoPreemptGuard::new();
            let mut slot = self.future.lock(&region);
            let Some(future) = slot.as_mut() else {
                return;
            };
            // A panic in the session's code ends its connection only (the server goes on).
            let ended = !matches!(
                catch_unwind(AssertUnwindSafe(|| future.as_mut().poll(&mut cx))),
                Ok(Poll::Pending)
            );
            if ended {
                drop(slot);
                drop(region);
                return self.end();
            }
            drop(slot);
            if self
                .state
                .compare_exchange(RUNNING, IDLE, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
            {
                return;
            }
            // NOTIFIED: a wake came while it polled.
            self.state.store(RUNNING, Ordering::SeqCst);
        }
    }
}

impl Wake for SessionTask {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        let mut state = self.state.load(Ordering::SeqCst);
        loop {
            let (to, submit) = match state {
                IDLE => (SCHEDULED, true),
                RUNNING => (NOTIFIED, false),
                _ => return,
            };
            match self
                .state
                .compare_exchange(state, to, Ordering::SeqCst, Ordering::SeqCst)
            {
                Ok(_) => {
                    if submit {
                        self.submit();
                    }
                    return;
                }
                Err(now) => state = now,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use overtake_priority::{Group, Priority};
    use overtake_sched::Reactor;

    use super::StepClass;
    use crate::worker_io::reactor::WorkerReactor;

    #[test]
    fn a_workers_most_urgent_arrival_follows_its_sessions_classes() {
        let (reactor, shared) = WorkerReactor::new().expect("an epoll instance");
        assert_eq!(reactor.most_urgent(), Priority::LOW, "no session yet");
        let a = StepClass::for_worker(&shared);
        assert_eq!(
            reactor.most_urgent(),
            Priority::MEDIUM,
            "a session's default"
        );
        let b = StepClass::for_worker(&shared);
        b.set(Priority::HIGH, Group::of(Priority::HIGH));
        b.set(Priority::HIGH, Group::of(Priority::HIGH)); // the same class again
        a.set(Priority::LOW, Group::of(Priority::LOW));
        assert_eq!(reactor.most_urgent(), Priority::HIGH);
        assert_eq!(
            format!("{b:?}"),
            format!(
                "StepClass({:?})",
                (Priority::HIGH, Group::of(Priority::HIGH))
            )
        );
        drop(b);
        assert_eq!(
            reactor.most_urgent(),
            Priority::LOW,
            "the urgent session ended"
        );
        drop(a);
        assert!(
            shared
                .levels
                .iter()
                .all(|n| n.load(std::sync::atomic::Ordering::Relaxed) == 0)
        );
    }
}
