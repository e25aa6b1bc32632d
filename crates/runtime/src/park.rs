//! Parking: code running in a task waits for an event without blocking its worker's OS thread.
//!
//! The mechanism, not the policy. A scheduler gives each task it runs a [`Parker`] and installs
//! it while the task runs ([`Parker::run`]). Code in the task (a lock wait in the engine, a
//! durable-commit wait, a test) takes the task's [`Unparker`] with [`current_unparker`], hands it
//! to whoever will signal the event, and calls [`park`]: the task's context suspends with
//! [`Suspension::Parked`], and its worker runs other tasks. [`Unparker::unpark`], from any thread,
//! makes the parked task ready again by handing its token to the scheduler's [`WakeTarget`];
//! the scheduler resumes it when it is the most urgent ready task.
//!
//! Semantics are those of `std::thread::park`: one token per parker. An `unpark` before the
//! `park` makes the park return at once; several unparks before a park count once; `park` may
//! return without the event having happened (a stale unpark), so callers re-check their
//! condition in a loop. Code that runs outside any task (a plain thread) gets the same interface
//! backed by `std::thread::park`.
//!
//! Parking inside a non-preemptible region is a bug (the region's latch would be held while the
//! task waits, so whatever it waits for could need that latch): it panics. This module must never
//! block a worker's OS thread while a task runs on it.

use std::cell::RefCell;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

use crate::context::{self, Suspension};
use crate::region::{self, NoPreemptGuard};
use crate::region_lock::RegionMutex;

/// Code to run once when a task is next paused by preemption (see [`Unparker::when_paused`]).
pub type PauseHook = Box<dyn FnOnce() + Send>;

/// Where an unparked task's token goes: the scheduler that owns its worker. Called inside a
/// non-preemptible region, from any thread; must not block.
pub trait WakeTarget: Send + Sync {
    /// The task identified by `token` may run again.
    fn wake(&self, token: u64);

    /// A waiter raises (`up`) the task identified by `token` to at least `level`, or withdraws
    /// (`!up`) a raise it made earlier (priority inheritance; levels mean what the scheduler
    /// says). Schedulers without levels ignore it.
    fn raise(&self, token: u64, level: u8, up: bool) {
        let _ = (token, level, up);
    }
}

const IDLE: u8 = 0;
const PARKED: u8 = 1;
const NOTIFIED: u8 = 2;

enum WakeVia {
    Task {
        target: Arc<dyn WakeTarget>,
        token: u64,
    },
    /// A plain thread, and its kernel thread id (for the OS scheduler's lock hints).
    Thread(std::thread::Thread, i32),
}

struct ParkState {
    state: AtomicU8,
    via: WakeVia,
    /// Paused by preemption (set by the task's scheduler; lock policies ask it).
    paused: AtomicBool,
    /// Run when the task is next paused; set and taken under this latch together with `paused`,
    /// so a hook is either run at the pause or refused because the pause came first.
    on_pause: RegionMutex<Option<PauseHook>>,
}

impl ParkState {
    /// Takes the token if there is one.
    fn take_notification(&self) -> bool {
        self.state
            .compare_exchange(NOTIFIED, IDLE, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    /// Marks the parker parked, from which point an unpark sends a wake; false (and the token
    /// taken) if an unpark came first.
    fn announce_park(&self) -> bool {
        if self
            .state
            .compare_exchange(IDLE, PARKED, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            return true;
        }
        self.take_notification();
        false
    }
}

/// The waiting side of one task (or thread): owned by whoever runs it.
pub struct Parker {
    state: Arc<ParkState>,
}

impl Parker {
    /// A parker for a task whose wake-ups go to `target` with `token`.
    pub fn for_task(target: Arc<dyn WakeTarget>, token: u64) -> Self {
        Parker {
            state: Arc::new(ParkState {
                state: AtomicU8::new(IDLE),
                via: WakeVia::Task { target, token },
                paused: AtomicBool::new(false),
                on_pause: RegionMutex::new(None),
            }),
        }
    }

    /// The handle that wakes this parker.
    pub fn unparker(&self) -> Unparker {
        Unparker {
            state: Arc::clone(&self.state),
        }
    }

    /// Records whether the task is paused by preemption (its scheduler sets it when the task is
    /// preempted and clears it when the task runs again), for [`Unparker::is_paused`]. A pause
    /// runs the hook registered with [`Unparker::when_paused`], if any, on this thread (after the
    /// task has switched out, so the hook never runs on the paused task's stack).
    pub fn set_paused(&self, paused: bool) {
        if !paused {
            // Every resume passes here: one store. A hook registered just before it may see the
            // pause that is ending and act on it, which only means acting a moment late.
            self.state.paused.store(false, Ordering::Release);
            return;
        }
        let region = NoPreemptGuard::new();
        let hook = {
            let mut hook = self.state.on_pause.lock(&region);
            self.state.paused.store(true, Ordering::Release);
            hook.take()
        };
        if let Some(hook) = hook {
            hook();
        }
    }

    /// Runs `f` (which resumes this parker's task) with this parker installed as the current one
    /// on this thread, so that the task's [`park`] and [`current_unparker`] find it; the previous
    /// one is put back afterwards.
    pub fn run<R>(&self, f: impl FnOnce() -> R) -> R {
        let previous = CURRENT.with(|c| c.replace(Some(Arc::clone(&self.state))));
        struct Restore(Option<Arc<ParkState>>);
        impl Drop for Restore {
            fn drop(&mut self) {
                let previous = self.0.take();
                CURRENT.with(|c| *c.borrow_mut() = previous);
            }
        }
        let _restore = Restore(previous);
        f()
    }
}

/// The waking side: cheap to clone, `Send` and `Sync`.
#[derive(Clone)]
pub struct Unparker {
    state: Arc<ParkState>,
}

impl Unparker {
    /// Makes the parker's task (or thread) ready if it is parked; otherwise its next [`park`]
    /// returns at once.
    pub fn unpark(&self) {
        let _region = NoPreemptGuard::new();
        if self.state.state.swap(NOTIFIED, Ordering::AcqRel) == PARKED {
            match &self.state.via {
                WakeVia::Task { target, token } => target.wake(*token),
                WakeVia::Thread(thread, _) => thread.unpark(),
            }
        }
    }

    /// Raises the task this handle wakes to at least `level` until the returned guard is
    /// dropped: a waiter lends its urgency to the task holding what it waits for (priority
    /// inheritance), so that the holder is not kept from releasing it by work less urgent than
    /// the waiter. Several raises of one task count separately. Does nothing for a plain thread.
    pub fn raise_to(&self, level: u8) -> Raised {
        let _region = NoPreemptGuard::new();
        if let WakeVia::Task { target, token } = &self.state.via {
            target.raise(*token, level, true);
        }
        Raised {
            state: Arc::clone(&self.state),
            level,
        }
    }

    /// True if the task is paused by preemption right now, as its scheduler last said (false for a
    /// plain thread). A lock policy uses it to tell a holder that cannot make progress from one
    /// that is running (Preempt-On-Wait).
    pub fn is_paused(&self) -> bool {
        self.state.paused.load(Ordering::Acquire)
    }

    /// Runs `hook` when the task is next paused — preempted, or parked waiting for anything —
    /// (on its worker's thread, inside a region, once), replacing a hook registered before. A lock policy uses it to act on a lock
    /// holder the moment it stops making progress (Preempt-On-Wait). Gives the hook back if the
    /// task is paused already (the caller acts at once) or is a plain thread (never paused).
    pub fn when_paused(&self, hook: PauseHook) -> Result<(), PauseHook> {
        if matches!(self.state.via, WakeVia::Thread(..)) {
            return Err(hook);
        }
        let region = NoPreemptGuard::new();
        let mut slot = self.state.on_pause.lock(&region);
        if self.state.paused.load(Ordering::Acquire) {
            return Err(hook);
        }
        *slot = Some(hook);
        Ok(())
    }

    /// Drops the hook registered with [`when_paused`](Self::when_paused), if any.
    pub fn clear_pause_hook(&self) {
        let region = NoPreemptGuard::new();
        let hook = self.state.on_pause.lock(&region).take();
        // Dropped outside the latch: a hook's captures may take other latches as they go.
        drop(hook);
    }

    /// The kernel id of the plain thread this handle wakes; `None` for a task on a worker (which
    /// shares its OS thread with other tasks, so the OS scheduler cannot act for it alone).
    pub fn os_thread_id(&self) -> Option<i32> {
        match self.state.via {
            WakeVia::Thread(_, tid) => Some(tid),
            WakeVia::Task { .. } => None,
        }
    }

    /// True if both handles wake the same parker.
    pub fn wakes_same(&self, other: &Unparker) -> bool {
        Arc::ptr_eq(&self.state, &other.state)
    }
}

/// A raise made by [`Unparker::raise_to`]; withdrawn when dropped.
#[must_use = "the raise is withdrawn as soon as the guard is dropped"]
pub struct Raised {
    state: Arc<ParkState>,
    level: u8,
}

impl Drop for Raised {
    fn drop(&mut self) {
        let _region = NoPreemptGuard::new();
        if let WakeVia::Task { target, token } = &self.state.via {
            target.raise(*token, self.level, false);
        }
    }
}

impl std::fmt::Debug for Unparker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Unparker").finish_non_exhaustive()
    }
}

thread_local! {
    /// The parker of the task running on this thread (installed by [`Parker::run`]), or, on a
    /// plain thread, the thread's own (created on first use). Only touched inside regions.
    static CURRENT: RefCell<Option<Arc<ParkState>>> = const { RefCell::new(None) };
}

fn current_state() -> Arc<ParkState> {
    let _region = NoPreemptGuard::new();
    CURRENT.with(|c| {
        let mut current = c.borrow_mut();
        Arc::clone(current.get_or_insert_with(|| {
            Arc::new(ParkState {
                state: AtomicU8::new(IDLE),
                via: WakeVia::Thread(std::thread::current(), crate::os::thread::thread_id()),
                paused: AtomicBool::new(false),
                on_pause: RegionMutex::new(None),
            })
        }))
    })
}

/// True when the code running here is a task on a worker (a context), not a plain thread:
/// blocking the thread would block every task of the worker.
pub fn in_task() -> bool {
    matches!(current_state().via, WakeVia::Task { .. })
}

/// The handle that wakes the task (or thread) running here.
pub fn current_unparker() -> Unparker {
    Unparker {
        state: current_state(),
    }
}

/// Waits until the current task's (or thread's) unparker is called, unless it already was since
/// the last park. In a task, the worker runs other tasks meanwhile. May return spuriously.
///
/// # Panics
///
/// Inside a non-preemptible region (see the module comment).
pub fn park() {
    assert_eq!(
        region::depth(),
        0,
        "park inside a non-preemptible region: whatever holds the region's latch would be held \
         while the task waits"
    );
    let state = current_state();
    if state.take_notification() {
        return;
    }
    match &state.via {
        WakeVia::Task { .. } => {
            // A voluntary switch, so inside a region: a preemption landing between announcing
            // the park and suspending would run the scheduler on this task's stack, where it
            // could take the wake for a task it still sees running.
            let _region = NoPreemptGuard::new();
            if !state.announce_park() {
                return;
            }
            let parked_in_context = context::suspend_current(Suspension::Parked);
            assert!(
                parked_in_context,
                "a task parker is installed, but no context runs on this thread"
            );
        }
        WakeVia::Thread(..) => {
            if !state.announce_park() {
                return;
            }
            while state.state.load(Ordering::Acquire) == PARKED {
                std::thread::park();
            }
        }
    }
    // Resumed by the scheduler after an unpark, or (spuriously) for another reason: a parked
    // flag left behind must not swallow the next unpark.
    if !state.take_notification() {
        let _ = state
            .state
            .compare_exchange(PARKED, IDLE, Ordering::AcqRel, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::{Context, Resumed};
    use std::sync::Mutex;

    /// A scheduler stand-in: records tokens.
    #[derive(Default)]
    struct Tokens(Mutex<Vec<u64>>);

    impl WakeTarget for Tokens {
        fn wake(&self, token: u64) {
            self.0.lock().expect("tokens").push(token);
        }
    }

    #[test]
    fn a_parked_task_suspends_and_its_unpark_reaches_the_scheduler() {
        let tokens = Arc::new(Tokens::default());
        let parker = Parker::for_task(Arc::clone(&tokens) as Arc<dyn WakeTarget>, 7);
        let handle = Arc::new(Mutex::new(None::<Unparker>));
        let handle_in_task = Arc::clone(&handle);
        let mut task = Context::new(64 * 1024, false, move |_| {
            *handle_in_task.lock().expect("handle") = Some(current_unparker());
            park();
        })
        .expect("stack");
        assert_eq!(
            parker.run(|| task.resume()),
            Resumed::Suspended(Suspension::Parked)
        );
        let unparker = handle.lock().expect("handle").take().expect("published");
        assert!(unparker.wakes_same(&parker.unparker()));
        assert!(tokens.0.lock().expect("tokens").is_empty());
        // Woken from another thread.
        std::thread::spawn(move || unparker.unpark())
            .join()
            .expect("thread");
        assert_eq!(*tokens.0.lock().expect("tokens"), vec![7]);
        assert_eq!(parker.run(|| task.resume()), Resumed::Finished);
    }

    #[test]
    fn a_plain_thread_is_named_by_its_kernel_id_and_a_task_by_none() {
        let here = current_unparker();
        assert_eq!(here.os_thread_id(), Some(crate::os::thread::thread_id()));
        let other = std::thread::spawn(|| (current_unparker(), crate::os::thread::thread_id()))
            .join()
            .expect("thread");
        assert_eq!(other.0.os_thread_id(), Some(other.1));
        assert_ne!(other.1, crate::os::thread::thread_id());
        let task = Parker::for_task(Arc::new(Tokens(Mutex::new(Vec::new()))), 7).unparker();
        assert_eq!(task.os_thread_id(), None);
    }

    #[test]
    fn an_unpark_before_the_park_is_kept_once() {
        let tokens = Arc::new(Tokens::default());
        let parker = Parker::for_task(Arc::clone(&tokens) as Arc<dyn WakeTarget>, 1);
        let early = parker.unparker();
        let mut task = Context::new(64 * 1024, false, move |_| {
            early.unpark();
            early.unpark();
            park(); // the token is there: no suspension
            park(); // used up: this one parks
        })
        .expect("stack");
        assert_eq!(
            parker.run(|| task.resume()),
            Resumed::Suspended(Suspension::Parked)
        );
        assert!(
            tokens.0.lock().expect("tokens").is_empty(),
            "unparks of a task that was not parked send no token"
        );
        parker.unparker().unpark();
        assert_eq!(tokens.0.lock().expect("tokens").len(), 1);
        assert_eq!(parker.run(|| task.resume()), Resumed::Finished);
    }

    #[test]
    fn a_raise_reaches_the_scheduler_and_is_withdrawn_when_dropped() {
        #[derive(Default)]
        struct Raises(Mutex<Vec<(u64, u8, bool)>>);
        impl WakeTarget for Raises {
            fn wake(&self, _: u64) {}
            fn raise(&self, token: u64, level: u8, up: bool) {
                self.0.lock().expect("raises").push((token, level, up));
            }
        }
        let raises = Arc::new(Raises::default());
        let parker = Parker::for_task(Arc::clone(&raises) as Arc<dyn WakeTarget>, 9);
        let guard = parker.unparker().raise_to(3);
        assert_eq!(*raises.0.lock().expect("raises"), vec![(9, 3, true)]);
        drop(guard);
        assert_eq!(
            *raises.0.lock().expect("raises"),
            vec![(9, 3, true), (9, 3, false)]
        );
        // A thread's handle has nobody to raise.
        drop(current_unparker().raise_to(3));
    }

    #[test]
    fn a_pause_hook_runs_once_at_the_next_pause_and_is_refused_while_paused() {
        use std::sync::atomic::AtomicU32;
        let tokens = Arc::new(Tokens::default());
        let parker = Parker::for_task(Arc::clone(&tokens) as Arc<dyn WakeTarget>, 3);
        let unparker = parker.unparker();
        let ran = Arc::new(AtomicU32::new(0));
        let hook = |ran: &Arc<AtomicU32>| -> PauseHook {
            let ran = Arc::clone(ran);
            Box::new(move || {
                ran.fetch_add(1, Ordering::SeqCst);
            })
        };
        assert!(unparker.when_paused(hook(&ran)).is_ok());
        assert_eq!(ran.load(Ordering::SeqCst), 0, "not paused yet");
        parker.set_paused(true);
        assert!(unparker.is_paused());
        assert_eq!(ran.load(Ordering::SeqCst), 1, "run at the pause");
        assert!(
            unparker.when_paused(hook(&ran)).is_err(),
            "already paused: the caller acts at once"
        );
        parker.set_paused(false);
        parker.set_paused(true);
        assert_eq!(ran.load(Ordering::SeqCst), 1, "once");
        parker.set_paused(false);
        assert!(unparker.when_paused(hook(&ran)).is_ok());
        unparker.clear_pause_hook();
        parker.set_paused(true);
        assert_eq!(ran.load(Ordering::SeqCst), 1, "cleared");
        // A plain thread is never paused by preemption.
        assert!(current_unparker().when_paused(hook(&ran)).is_err());
    }

    #[test]
    fn a_plain_thread_parks_on_the_operating_system() {
        let (tx, rx) = std::sync::mpsc::channel();
        let waiter = std::thread::spawn(move || {
            tx.send(current_unparker()).expect("send");
            park();
        });
        rx.recv().expect("unparker").unpark();
        waiter.join().expect("woken");
    }

    #[test]
    #[should_panic(expected = "park inside a non-preemptible region")]
    fn parking_inside_a_region_is_refused() {
        let _region = NoPreemptGuard::new();
        park();
    }
}
