//! The worker's loop: its set-up (pinning, the preemption registration, the first context), then
//! turn after turn: poll the reactor when due, collect wakes and acknowledgements, pick what runs
//! next (a paused or woken task, a new job, work fed by an idle source), and with nothing to do
//! spin a little or sleep until work arrives.
//!
//! Must never: sleep while work it can see waits, or spin on a core another thread wants (see
//! `SchedConfig::idle_spin_alone`).

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Instant;

use overtake_priority::Priority;
use overtake_runtime::NoPreemptGuard;
use overtake_runtime::preempt;
use overtake_runtime::region::trace as region_trace;

use super::acks::Acks;
use super::preempt::{ServePreemption, WORKER, on_preempt};
use super::staged::StagedJobs;
use super::{Next, Stop, TRACE_ROOM, WorkerCore, WorkerShared};
use crate::error::SchedError;
use crate::inbox::Inbox;
use crate::job::{Executor, IdleWork, Scheduled};
use crate::pending::Pending;
use crate::policy::SchedConfig;
use crate::starvation::Clock;
use crate::stats::RunStats;
use crate::task::{Claim, TaskTable};

/// How long a worker keeps what it learned of the machine's load before it reads it again.
const SPARE_KEPT: std::time::Duration = std::time::Duration::from_micros(200);

impl<E: Executor> WorkerCore<E> {
    /// Whether this worker, idle, has a core to spin on (`SchedConfig::idle_spin_alone`): every
    /// other worker sleeps, and the machine's runnable threads, this one included, are no more
    /// than its cores.
    fn core_to_spare(&self, peers: &[Arc<WorkerShared>], now: Instant) -> bool {
        let others_sleep = (peers.iter().enumerate())
            .all(|(i, peer)| i == self.index || peer.sleeper.is_sleeping());
        if !others_sleep {
            return false;
        }
        if let Some((at, spare)) = self.spare.get()
            && now.saturating_duration_since(at) < SPARE_KEPT
        {
            return spare;
        }
        let cores = overtake_runtime::os::thread::available_cores();
        let spare = self.load.now().is_some_and(|runnable| runnable <= cores);
        self.spare.set(Some((now, spare)));
        spare
    }
}

/// Everything a worker thread needs.
pub(crate) struct WorkerSetup<E: Executor> {
    pub(crate) index: usize,
    pub(crate) shared: Arc<WorkerShared>,
    pub(crate) inbox: Arc<Inbox<E::Job>>,
    pub(crate) pending: Arc<Pending<E::Job>>,
    pub(crate) exec: Arc<E>,
    pub(crate) config: SchedConfig,
    pub(crate) epoch: Instant,
    pub(crate) stop: Arc<AtomicU8>,
    pub(crate) feed: Option<IdleWork<E::Job>>,
    pub(crate) reactor: Option<Arc<dyn crate::Reactor>>,
    /// Every worker's shared part, this one's included (for `SchedConfig::idle_spin_alone`).
    pub(crate) peers: Arc<[Arc<WorkerShared>]>,
}

/// The worker thread's body. Returns its statistics.
pub(crate) fn run_worker<E: Executor>(setup: WorkerSetup<E>) -> Result<RunStats, SchedError> {
    let WorkerSetup {
        index,
        shared,
        inbox,
        pending,
        exec,
        config,
        epoch,
        stop,
        mut feed,
        reactor,
        peers,
    } = setup;
    if config.pin {
        overtake_runtime::os::thread::pin_current_thread(index);
    }
    let registration =
        preempt::register_worker(Arc::clone(&shared.target), config.poll_every(), on_preempt)
            .map_err(|source| SchedError::RegisterWorker { index, source })?;
    let pool = config.task_pool;
    let (shared_acks, shared_wakes) = (Arc::clone(&shared.acks), Arc::clone(&shared.wakes));
    let os_background =
        config.os_background && overtake_runtime::os::thread::can_switch_background();
    let core = Rc::new(WorkerCore {
        index,
        shared,
        inbox,
        pending,
        exec,
        clock: Clock::new(epoch),
        tasks: RefCell::new(TaskTable::new(pool, Instant::now())),
        staged: RefCell::new(StagedJobs::new(
            config.urgent_inbox,
            config.background_inbox,
        )),
        candidates: RefCell::new(Vec::new()),
        contexts: (0..pool).map(|_| RefCell::new(None)).collect(),
        mailboxes: (0..pool).map(|_| RefCell::new(None)).collect(),
        parkers: (0..pool).map(|_| RefCell::new(None)).collect(),
        config,
        running: Cell::new(None),
        os_background,
        slice_started: Cell::new(Instant::now()),
        slice_quantum: Cell::new(std::time::Duration::ZERO),
        slice_usage: Cell::new(None),
        paused_for_urgent: Cell::new(None),
        acks: RefCell::new(Acks::new(
            Arc::clone(&shared_acks),
            Arc::clone(&shared_wakes),
        )),
        load: overtake_runtime::os::load::RunnableThreads::new(),
        spare: Cell::new(None),
    });
    // The first context is made before the clock starts (a stack costs a few mmaps).
    let claim = core.tasks.borrow_mut().claim();
    if let Some(Claim::Create(first)) = claim {
        core.create_context(first)
            .map_err(|source| SchedError::ContextStack { index, source })?;
        let mut tasks = core.tasks.borrow_mut();
        tasks.created(first);
        tasks.keep_idle(first);
    }
    if core.config.trace {
        // Room for the run's traces, touched now: growing the vector later would fault in fresh
        // pages inside the region that records an urgent job, and show up as that job's cost.
        let region = NoPreemptGuard::new();
        let mut stats = core.shared.stats.lock(&region);
        stats
            .traces
            .resize(TRACE_ROOM, crate::trace::JobTrace::default());
        stats.traces.clear();
    }
    let _ = core.shared.sleeper.thread.set(std::thread::current());
    if let Some(reactor) = &reactor {
        let _ = core.shared.sleeper.unblock.set(reactor.unblocker());
    }
    let mut polled = Instant::now();
    core.shared
        .tid
        .store(overtake_runtime::os::thread::thread_id(), Ordering::Release);
    WORKER.with(|w| *w.borrow_mut() = Some(Rc::clone(&core) as Rc<dyn ServePreemption>));
    core.shared.ready.store(true, Ordering::Release);

    let mut idle_since: Option<Instant> = None;
    loop {
        let stopping = Stop::from(stop.load(Ordering::Acquire));
        // Spinning idle (`idle_spin`), it polls at every turn: a request then starts as soon
        // as it is readable, without the wake-up a sleep in the poll would cost.
        if let Some(reactor) = &reactor
            && (idle_since.is_some() || polled.elapsed() >= crate::reactor::POLL_BETWEEN_TASKS)
        {
            // Readiness becomes work (a session's next step) in this worker's inbox, seen by
            // the pick below.
            reactor.poll(std::time::Duration::ZERO);
            polled = Instant::now();
        }
        // A request raised for work this pick will see is taken up here.
        core.shared.target.acknowledge();
        core.collect_wakes();
        core.collect_acks();
        // With as many jobs awaiting acknowledgements as it has contexts, it starts nothing new.
        let full = core.acks_full();
        let next = if stopping == Stop::Abandon || full {
            // Started tasks that can run go on; nothing new starts.
            let _region = NoPreemptGuard::new();
            let mut tasks = core.tasks.borrow_mut();
            tasks
                .highest_ready()
                .and_then(|level| tasks.pop_ready(level))
                .map(Next::Resume)
        } else {
            core.pick()
        };
        if next.is_some()
            && let Some(since) = idle_since.take()
        {
            let region = NoPreemptGuard::new();
            core.shared.stats.lock(&region).idle_nanos += since.elapsed().as_nanos() as u64;
        }
        match next {
            Some(Next::Resume(id)) => core.resume(id, false),
            Some(Next::ResumeToEnd(id)) => core.resume(id, true),
            Some(Next::Start(job)) => core.start(job),
            // Done once nothing runs and every job that ended is acknowledged.
            None if stopping != Stop::Run && !core.acks_awaited() => break,
            None => {
                let now = Instant::now();
                let fed = if full || stopping != Stop::Run {
                    None
                } else {
                    feed.as_mut().and_then(|f| f())
                };
                match fed {
                    Some(job) => {
                        core.pending.arrived(core.exec.group(&job));
                        core.start(Scheduled::at(job, now))
                    }
                    None if now.saturating_duration_since(*idle_since.get_or_insert(now))
                        < core.config.idle_spin
                        && (!core.config.idle_spin_alone || core.core_to_spare(&peers, now)) =>
                    {
                        std::hint::spin_loop();
                    }
                    None => {
                        core.shared.sleeper.sleep_unless(reactor.as_ref(), || {
                            core.inbox.queued() > 0
                                || core.pending.has_from(Priority::LOW)
                                || core.shared.wakes.any.load(Ordering::SeqCst)
                                || core.shared.acks.pending()
                                || stop.load(Ordering::SeqCst) != Stop::Run as u8
                        });
                        polled = Instant::now();
                    }
                }
            }
        }
    }

    if core.config.trace {
        let regions = region_trace::take();
        let region = NoPreemptGuard::new();
        core.shared.stats.lock(&region).regions = regions;
    }
    WORKER.with(|w| *w.borrow_mut() = None);
    // Dropping the contexts ends their loops (between jobs, or unwinding a task still parked at
    // the end) and breaks the reference cycles through their closures.
    for ctx in core.contexts.iter() {
        drop(ctx.borrow_mut().take());
    }
    drop(registration);
    // Layers above hand back per-thread state here (the engine frees what this thread's
    // transactions retired, rather than handing it to the next thread that starts).
    overtake_runtime::exit_hooks::worker_exiting();
    let region = NoPreemptGuard::new();
    let stats = std::mem::take(&mut *core.shared.stats.lock(&region));
    Ok(stats)
}
