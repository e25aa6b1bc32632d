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
use overtake_sched::{Call, CallExecutor, Scheduler};

use super::WorkerStream;
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

/// Where a session is served (its worker) and the class its steps run at (its priority and
/// group, kept by the session as its settings change). Each is one word, so that a waker on any
/// thread reads them without a lock; both change only in the session's own step. The session is
/// counted among its worker's sessions at its level, from its creation to its drop.
pub struct Placement {
    word: AtomicU32,
    worker: AtomicUsize,
    reactors: Arc<[Arc<ReactorShared>]>,
}

impl Placement {
    /// The placement of a session served by `worker` (one of `reactors`), before the session
    /// has settings: the default level.
    pub(crate) fn on(worker: usize, reactors: &Arc<[Arc<ReactorShared>]>) -> Self {
        reactors[worker].levels[Priority::MEDIUM.level()].fetch_add(1, Ordering::Relaxed);
        Placement {
            word: AtomicU32::new(Self::word(Priority::MEDIUM, Group::of(Priority::MEDIUM))),
            worker: AtomicUsize::new(worker),
            reactors: Arc::clone(reactors),
        }
    }

    fn word(priority: Priority, group: Group) -> u32 {
        let tier = u32::from(group.tier == Tier::Background);
        (priority.level() as u32) | (tier << 8) | (group.weight.get() << 16)
    }

    /// The worker serving the session now.
    pub fn worker(&self) -> usize {
        self.worker.load(Ordering::SeqCst)
    }

    fn reactor(&self) -> &ReactorShared {
        &self.reactors[self.worker()]
    }

    /// The session's class is now `priority` in `group`.
    pub fn set(&self, priority: Priority, group: Group) {
        let before = self
            .word
            .swap(Self::word(priority, group), Ordering::Relaxed);
        let was = (before & 0xff) as usize;
        if was != priority.level() {
            let levels = &self.reactor().levels;
            levels[priority.level()].fetch_add(1, Ordering::Relaxed);
            levels[was].fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// Where the session's steps and statements go from now on: `to` (its socket moved there
    /// already, see [`WorkerStream::move_to`](super::WorkerStream::move_to)).
    pub(crate) fn move_to(&self, to: usize) {
        let level = (self.word.load(Ordering::Relaxed) & 0xff) as usize;
        self.reactors[to].levels[level].fetch_add(1, Ordering::Relaxed);
        let from = self.worker.swap(to, Ordering::SeqCst);
        self.reactors[from].levels[level].fetch_sub(1, Ordering::Relaxed);
    }

    /// The worker a session between statements should move to, if its own serves at least two
    /// sessions more than another (see [`WorkerIo::place`](super::WorkerIo::place)): the one
    /// serving the fewest. At least two, so that the move evens the two out and the session
    /// does not come back at its next statement.
    pub(crate) fn better(&self) -> Option<usize> {
        let here = self.worker();
        let load = |w: usize| self.reactors[w].sessions.load(Ordering::Relaxed);
        let (there, fewest) = (0..self.reactors.len())
            .map(|w| (w, load(w)))
            .min_by_key(|&(_, n)| n)?;
        (load(here) >= fewest + 2).then_some(there)
    }

    /// Moves the session, between statements and outside a block, to the worker serving the
    /// fewest sessions if its own serves two more (see [`better`](Self::better)): its socket,
    /// then its steps and statements. Nothing else of a session between statements is tied to
    /// its worker (a block's task, which is, keeps it where it is).
    pub(crate) fn rebalance(&self, stream: &mut WorkerStream) {
        if let Some(to) = self.better()
            && stream.move_to(&self.reactors[to]).is_ok()
        {
            self.move_to(to);
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

impl std::fmt::Debug for Placement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Placement")
            .field("worker", &self.worker())
            .field("class", &self.get())
            .finish()
    }
}

impl Drop for Placement {
    fn drop(&mut self) {
        let level = (self.word.load(Ordering::Relaxed) & 0xff) as usize;
        self.reactor().levels[level].fetch_sub(1, Ordering::Relaxed);
    }
}

/// A session served by a worker.
pub(crate) struct SessionTask {
    state: AtomicU8,
    future: RegionMutex<Option<SessionFuture>>,
    /// Weak: a waker kept somewhere after the session ended must not keep the scheduler (whose
    /// last owner, dropped on a worker, would join that worker's own thread).
    scheduler: Weak<Scheduler<CallExecutor>>,
    place: Arc<Placement>,
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
        place: Arc<Placement>,
        scheduler: &Arc<Scheduler<CallExecutor>>,
        runtime: tokio::runtime::Handle,
        live: &Arc<AtomicUsize>,
    ) {
        live.fetch_add(1, Ordering::SeqCst);
        let task = Arc::new(SessionTask {
            state: AtomicU8::new(SCHEDULED),
            future: RegionMutex::new(Some(future)),
            scheduler: Arc::downgrade(scheduler),
            place,
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
        let (priority, group) = self.place.get();
        let task = Arc::clone(self);
        let (call, _ticket) = Call::between_tasks(priority, move || task.step());
        let call = call.in_group(group);
        if let Err(full) = scheduler.submit_to(self.place.worker(), call, Instant::now()) {
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
                    match scheduler.submit_to(task.place.worker(), call, Instant::now()) {
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
    use std::sync::Arc;
    use std::sync::atomic::Ordering;

    use overtake_priority::{Group, Priority};
    use overtake_sched::Reactor;

    use super::Placement;
    use crate::worker_io::reactor::{ReactorShared, WorkerReactor};

    fn two_workers() -> (Vec<WorkerReactor>, Arc<[Arc<ReactorShared>]>) {
        let (a, a_shared) = WorkerReactor::new().expect("an epoll instance");
        let (b, b_shared) = WorkerReactor::new().expect("an epoll instance");
        (vec![a, b], Arc::from(vec![a_shared, b_shared]))
    }

    #[test]
    fn a_workers_most_urgent_arrival_follows_its_sessions_classes_and_moves() {
        let (reactors, shared) = two_workers();
        assert_eq!(reactors[0].most_urgent(), Priority::LOW, "no session yet");
        let a = Placement::on(0, &shared);
        assert_eq!(
            reactors[0].most_urgent(),
            Priority::MEDIUM,
            "a session's default"
        );
        let b = Placement::on(0, &shared);
        b.set(Priority::HIGH, Group::of(Priority::HIGH));
        b.set(Priority::HIGH, Group::of(Priority::HIGH)); // the same class again
        a.set(Priority::LOW, Group::of(Priority::LOW));
        assert_eq!(reactors[0].most_urgent(), Priority::HIGH);
        assert_eq!(
            format!("{b:?}"),
            format!(
                "Placement {{ worker: 0, class: {:?} }}",
                (Priority::HIGH, Group::of(Priority::HIGH))
            )
        );
        // The urgent session moves: what can arrive at each worker moves with it.
        b.move_to(1);
        assert_eq!(b.worker(), 1);
        assert_eq!(reactors[0].most_urgent(), Priority::LOW);
        assert_eq!(reactors[1].most_urgent(), Priority::HIGH);
        b.set(Priority::MEDIUM, Group::of(Priority::MEDIUM));
        assert_eq!(reactors[1].most_urgent(), Priority::MEDIUM);
        drop(b);
        assert_eq!(reactors[1].most_urgent(), Priority::LOW, "it ended");
        drop(a);
        assert!(
            shared
                .iter()
                .all(|r| r.levels.iter().all(|n| n.load(Ordering::Relaxed) == 0))
        );
    }

    #[test]
    fn a_session_moves_only_to_even_out_two_workers_sessions() {
        let (_reactors, shared) = two_workers();
        let a = Placement::on(0, &shared);
        let set = |w0: usize, w1: usize| {
            shared[0].sessions.store(w0, Ordering::Relaxed);
            shared[1].sessions.store(w1, Ordering::Relaxed);
        };
        set(1, 0);
        assert_eq!(a.better(), None, "one more is balanced as can be");
        set(2, 1);
        assert_eq!(a.better(), None);
        set(2, 0);
        assert_eq!(a.better(), Some(1));
        set(5, 2);
        assert_eq!(a.better(), Some(1));
        set(0, 2);
        assert_eq!(a.better(), None, "never to a busier worker");
        set(0, 0);
    }
}
