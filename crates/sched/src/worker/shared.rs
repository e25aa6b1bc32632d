//! The part of a worker other threads see, and what they tell it: its preemption target and
//! starvation monitor, the level it runs, its wake inbox (wakes and priority raises of its tasks,
//! from any thread), the sleeper that lets an idle worker sleep until work arrives, and the stop
//! word. Everything here is shared across threads: atomics, or a region-bound lock held for a
//! push or a drain.

use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::thread::Thread;
use std::time::Duration;

use overtake_priority::Priority;
use overtake_runtime::park::WakeTarget;
use overtake_runtime::preempt::PreemptTarget;
use overtake_runtime::{NoPreemptGuard, RegionMutex};

use crate::starvation::StarvationMonitor;
use crate::stats::RunStats;

/// `running_level` while no task runs.
pub(crate) const IDLE: u8 = u8::MAX;

/// Lets an idle worker sleep, and whoever brings it work wake it.
#[derive(Default)]
pub(crate) struct Sleeper {
    sleeping: AtomicBool,
    pub(crate) thread: OnceLock<Thread>,
    /// Ends the wait of the worker's reactor, if it sleeps in one (see `crate::reactor`).
    pub(crate) unblock: OnceLock<Arc<dyn Fn() + Send + Sync>>,
}

impl Sleeper {
    /// Wakes the worker if it sleeps (call after making work visible to it).
    pub(crate) fn notify(&self) {
        if self.sleeping.load(Ordering::SeqCst)
            && let Some(thread) = self.thread.get()
        {
            match self.unblock.get() {
                // Work the worker's own reactor made visible (a wake delivered while it polls)
                // needs no system call to be seen: the worker looks again when the poll returns.
                Some(_) if thread.id() == std::thread::current().id() => {}
                Some(unblock) => unblock(),
                None => thread.unpark(),
            }
        }
    }

    /// Whether the worker sleeps, or is about to (it will check for work before it does).
    pub(crate) fn is_sleeping(&self) -> bool {
        self.sleeping.load(Ordering::SeqCst)
    }

    /// Sleeps (at most a millisecond) unless `has_work` says there is work after all. Paired with
    /// [`notify`](Self::notify): the flag is set before the check, so work made visible before a
    /// notify is either seen by the check or followed by an unpark.
    pub(crate) fn sleep_unless(
        &self,
        reactor: Option<&Arc<dyn crate::Reactor>>,
        has_work: impl FnOnce() -> bool,
    ) {
        self.sleeping.store(true, Ordering::SeqCst);
        if !has_work() {
            match reactor {
                Some(reactor) => reactor.poll(Duration::from_millis(1)),
                None => std::thread::park_timeout(Duration::from_millis(1)),
            }
        }
        self.sleeping.store(false, Ordering::SeqCst);
    }
}

/// What other threads tell a worker about its tasks.
#[derive(Clone, Copy, Debug)]
pub(crate) enum TaskEvent {
    /// A parked task may run again.
    Wake(u64),
    /// A waiter raised a task (or withdrew a raise): priority inheritance.
    Raise { token: u64, level: u8, up: bool },
}

/// Where wakes and raises for a worker's tasks arrive, from any thread.
pub(crate) struct WakeInbox {
    pub(crate) events: RegionMutex<Vec<TaskEvent>>,
    pub(crate) any: AtomicBool,
    target: Arc<PreemptTarget>,
    sleeper: Arc<Sleeper>,
    /// The level of the worker's running task ([`IDLE`]: none), as `WorkerShared` publishes it.
    running_level: Arc<AtomicU8>,
    /// Per context slot, the level its task last ran at: what a wake of it would bring.
    levels: Box<[AtomicU8]>,
    /// The scheduler's signal backstop thread, if it runs one (set once it has started).
    pub(crate) backstop: OnceLock<Thread>,
}

impl WakeInbox {
    /// `level`: the level the event makes ready (or raises to); `None` if not known.
    fn post(&self, event: TaskEvent, level: Option<u8>) {
        let region = NoPreemptGuard::new();
        self.events.lock(&region).push(event);
        self.any.store(true, Ordering::SeqCst);
        // A running task of a lower level makes way at its next poll; one that never polls (a
        // computation) needs the signal: the backstop, which sleeps while nothing is requested,
        // is told. A running task of the same level or higher keeps running, and the worker's
        // loop collects the event at its next pick: asking it to look would only cost a timer
        // wake-up (and a signal, if it is in a system call), which for sessions woken by every
        // client message was thousands a second. The worker checks the events itself once it
        // has published a new task's level (`outranked_by_events`), so an event that saw no
        // task running is not missed by the task that starts next.
        let running = self.running_level.load(Ordering::SeqCst);
        if running != IDLE && level.is_none_or(|level| level > running) {
            self.request();
        }
        self.sleeper.notify();
    }

    /// Has the worker look at what was made visible to it now, whatever it runs: a running
    /// task's preemption hook, or the loop of a sleeping worker.
    pub(crate) fn nudge(&self) {
        self.request();
        self.sleeper.notify();
    }

    /// Asks the running task to look at the events at its next poll, with the signal backstop
    /// behind the request. A sleeping worker runs nothing: waking it is enough.
    pub(crate) fn request(&self) {
        if !self.sleeper.is_sleeping()
            && self.target.request()
            && let Some(backstop) = self.backstop.get()
        {
            backstop.unpark();
        }
    }

    /// The worker records that the task in slot `id` runs at `level` (before it runs, so before
    /// it can hand its unparker to anyone: a waker reads the level the task parked at).
    pub(crate) fn set_level(&self, id: usize, level: Priority) {
        if let Some(slot) = self.levels.get(id) {
            slot.store(level.level() as u8, Ordering::Release);
        }
    }

    /// The level a wake with `token` brings, if its slot is known.
    fn wake_level(&self, token: u64) -> Option<u8> {
        let id = usize::try_from(token >> 32).ok()?;
        self.levels.get(id).map(|l| l.load(Ordering::Acquire))
    }

    /// True if an event not yet collected makes ready (or raises to) a level above `running`.
    /// Called by the worker after publishing `running` (the other half of `post`'s check).
    pub(crate) fn outranked_by_events(&self, running: Priority) -> bool {
        if !self.any.load(Ordering::SeqCst) {
            return false;
        }
        let running = running.level() as u8;
        let region = NoPreemptGuard::new();
        self.events.lock(&region).iter().any(|event| match *event {
            TaskEvent::Wake(token) => self.wake_level(token).is_none_or(|l| l > running),
            TaskEvent::Raise { level, up, .. } => up && level > running,
        })
    }
}

impl WakeTarget for WakeInbox {
    fn wake(&self, token: u64) {
        self.post(TaskEvent::Wake(token), self.wake_level(token));
    }

    fn raise(&self, token: u64, level: u8, up: bool) {
        // A withdrawn raise makes nothing more urgent.
        let brings = if up { level } else { 0 };
        self.post(TaskEvent::Raise { token, level, up }, Some(brings));
    }
}

/// The part of a worker other threads see: its preemption target, its starvation monitor, its
/// wake inbox, what it runs, whether it is ready.
pub(crate) struct WorkerShared {
    pub(crate) target: Arc<PreemptTarget>,
    pub(crate) starvation: StarvationMonitor,
    pub(crate) wakes: Arc<WakeInbox>,
    /// Level of the running task ([`IDLE`]: none). Shared with the wake inbox.
    pub(crate) running_level: Arc<AtomicU8>,
    /// The group of the running task (`pending::group_bits`; 0: none).
    pub(crate) running_group: AtomicU64,
    /// When the running task's current slice began (starvation-clock nanoseconds; 0: none runs).
    pub(crate) slice_started: AtomicU64,
    /// Quantum: how long the current slice may run before it may be preempted (nanoseconds).
    pub(crate) slice_quantum: AtomicU64,
    /// Started tasks ready to continue (preempted or woken): work waiting besides the inbox.
    pub(crate) ready_tasks: AtomicUsize,
    /// New jobs taken out of the inbox but not started, per level (see `staged`).
    pub(crate) staged: [AtomicUsize; Priority::LEVELS],
    /// Jobs whose end (or refusal) the worker has recorded: a client that knows how many it
    /// handed over can tell when all of them are done.
    pub(crate) finished: AtomicU64,
    /// Task slices started: unchanged while one task keeps the worker (see `watchdog`).
    pub(crate) switches: AtomicU64,
    /// Tasks paused by preemption, per level, as of the last switch.
    pub(crate) paused: [AtomicUsize; Priority::LEVELS],
    /// What the worker's jobs did so far. Only the worker writes it, once per job; others take a
    /// snapshot (a copy under the lock, during which the worker would wait to record).
    pub(crate) stats: RegionMutex<RunStats>,
    /// The kernel's id of the worker's thread (0 until it runs).
    pub(crate) tid: AtomicI32,
    /// With `os_background`: the thread is at the background weight now (set by the worker
    /// after it lowers itself, cleared by whoever brings it back: see [`WorkerShared::lift`]).
    pub(crate) os_lowered: AtomicBool,
    pub(crate) sleeper: Arc<Sleeper>,
    /// Wakes it when acknowledgements of its jobs may have resolved.
    pub(crate) acks: Arc<super::AckSignal>,
    /// Set once the worker is fully set up (registered for preemption, statistics allocated)
    /// and about to take work. The run's clock starts only when every worker is ready: setting
    /// up takes tens of milliseconds, which would otherwise show up as the latency of the first
    /// transactions.
    pub(crate) ready: AtomicBool,
}

impl WorkerShared {
    /// The shared part of a worker whose executor has `kinds` job kinds, with a pool of
    /// `contexts` task slots.
    pub(crate) fn new(kinds: usize, contexts: usize) -> Self {
        let target = PreemptTarget::new();
        let sleeper = Arc::new(Sleeper::default());
        let running_level = Arc::new(AtomicU8::new(IDLE));
        WorkerShared {
            wakes: Arc::new(WakeInbox {
                events: RegionMutex::new(Vec::new()),
                any: AtomicBool::new(false),
                target: Arc::clone(&target),
                sleeper: Arc::clone(&sleeper),
                running_level: Arc::clone(&running_level),
                levels: (0..contexts).map(|_| AtomicU8::new(0)).collect(),
                backstop: OnceLock::new(),
            }),
            acks: super::AckSignal::new(Arc::clone(&sleeper)),
            sleeper,
            target,
            starvation: StarvationMonitor::default(),
            running_level,
            running_group: AtomicU64::new(0),
            slice_started: AtomicU64::new(0),
            slice_quantum: AtomicU64::new(0),
            ready_tasks: AtomicUsize::new(0),
            staged: Default::default(),
            finished: AtomicU64::new(0),
            switches: AtomicU64::new(0),
            paused: Default::default(),
            stats: RegionMutex::new(RunStats::with_kinds(kinds)),
            tid: AtomicI32::new(0),
            os_lowered: AtomicBool::new(false),
            ready: AtomicBool::new(false),
        }
    }
}

impl WorkerShared {
    /// New jobs of `level` taken out of the inbox but not started.
    pub(crate) fn staged(&self, level: Priority) -> usize {
        self.staged[level.level()].load(Ordering::Relaxed)
    }

    /// Brings the worker's thread back from the background weight if it is there: a request
    /// it has not taken up may be waiting for the operating system to run it at all (at nice
    /// 19 it gets a core only when no ordinary thread wants one). A lift that finds the flag
    /// clear while the worker is lowering itself is repeated at the backstop's next step.
    pub(crate) fn lift(&self) {
        if self.os_lowered.swap(false, Ordering::SeqCst) {
            overtake_runtime::os::thread::lift_from_background(self.tid.load(Ordering::Relaxed));
        }
    }

    /// New jobs taken out of the inbox but not started, at every level (`from` up).
    pub(crate) fn staged_from(&self, from: Priority) -> usize {
        Priority::ALL[from.level()..]
            .iter()
            .map(|&p| self.staged(p))
            .sum()
    }
}

/// What the workers are asked to do, in their shared stop word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Stop {
    /// Keep taking work.
    Run = 0,
    /// Finish every queued job and every task that can run, then exit. Tasks still parked when
    /// nothing else can run are abandoned (unwound).
    Drain = 1,
    /// Finish the started tasks that can run, then exit; queued jobs stay unstarted.
    Abandon = 2,
}

impl From<u8> for Stop {
    fn from(v: u8) -> Self {
        match v {
            0 => Stop::Run,
            1 => Stop::Drain,
            _ => Stop::Abandon,
        }
    }
}
