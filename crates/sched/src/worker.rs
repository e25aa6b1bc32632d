//! A worker: one pinned thread, a context for low-priority transactions, a context for
//! high-priority batches, and the loop that chooses between them.
//!
//! At a transaction boundary the worker takes high-priority work first (every policy does). A
//! low-priority transaction runs in the preemptible context. When a preemption request reaches it
//! (polled flag or injected signal; see `overtake_runtime::preempt`), the runtime calls
//! [`on_preempt`] on the paused transaction's stack: the worker resumes its high-priority context,
//! which drains the high-priority queue (stopping early if the starvation level reaches the
//! threshold) and suspends back, and the low-priority transaction continues where it was.
//!
//! State shared by the two contexts lives in `Cell`/`RefCell`s of the worker core; anything both
//! contexts touch is borrowed only inside non-preemptible regions, so a paused context never holds
//! a borrow the other one needs.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use overtake_engine::Priority;
use overtake_runtime::preempt::{self, PreemptTarget};
use overtake_runtime::{Context, NoPreemptGuard};

use crate::error::SchedError;
use crate::job::{Executor, LocalFeed, Scheduled};
use crate::policy::{Policy, SchedConfig};
use crate::queues::Inlets;
use crate::starvation::{Clock, StarvationMonitor};
use crate::stats::{JobTiming, RunStats};

/// The part of a worker other threads see: its preemption target, its starvation monitor, whether
/// it is ready. (Its queues are split between the dispatcher and the worker; see `queues`.)
pub(crate) struct WorkerShared {
    pub(crate) target: Arc<PreemptTarget>,
    pub(crate) starvation: StarvationMonitor,
    /// Set once the worker is fully set up (registered for preemption, contexts and statistics
    /// allocated) and about to take work. The run's clock starts only when every worker is ready:
    /// setting up takes tens of milliseconds, which would otherwise show up as the latency of the
    /// first transactions.
    pub(crate) ready: AtomicBool,
}

impl WorkerShared {
    pub(crate) fn new() -> Self {
        WorkerShared {
            target: PreemptTarget::new(),
            starvation: StarvationMonitor::default(),
            ready: AtomicBool::new(false),
        }
    }
}

/// What the preemption hook needs from a worker, whatever its job type.
trait ServePreemption {
    fn serve_preemption(&self);
}

thread_local! {
    /// The worker running on this thread (set for the worker's lifetime).
    static WORKER: RefCell<Option<Rc<dyn ServePreemption>>> = const { RefCell::new(None) };
}

/// The runtime's preemption hook: runs on the paused low-priority transaction's stack, inside a
/// region.
fn on_preempt() {
    let worker = WORKER.with(|w| w.borrow().clone());
    if let Some(worker) = worker {
        worker.serve_preemption();
    }
}

/// The running low-priority job's preemptions so far.
#[derive(Clone, Copy)]
struct Running {
    preemptions: u32,
    preempted: Duration,
}

struct WorkerCore<E: Executor> {
    index: usize,
    shared: Arc<WorkerShared>,
    queues: Inlets<E::Job>,
    exec: Arc<E>,
    config: SchedConfig,
    clock: Clock,
    high_ctx: RefCell<Option<Context>>,
    low_ctx: RefCell<Option<Context>>,
    /// The job handed to the low-priority context.
    mailbox: RefCell<Option<Scheduled<E::Job>>>,
    /// True while the high-priority context runs because it preempted a transaction.
    preempting: Cell<bool>,
    /// Preemption bookkeeping of the running low-priority job.
    running: Cell<Option<Running>>,
    stats: RefCell<RunStats>,
}

impl<E: Executor> WorkerCore<E> {
    /// Runs one job and records what happened to it.
    fn run_job(&self, scheduled: Scheduled<E::Job>) {
        let Scheduled {
            mut job,
            arrival,
            enqueued,
        } = scheduled;
        let high = self.exec.priority(&job) == Priority::HIGH;
        let kind = self.exec.kind(&job);
        let start = Instant::now();
        if !high {
            let _region = NoPreemptGuard::new();
            self.running.set(Some(Running {
                preemptions: 0,
                preempted: Duration::ZERO,
            }));
            self.shared.starvation.begin_low(self.clock.nanos(start));
        }
        let outcome = self.exec.execute(&mut job, self.index);
        // Bookkeeping both contexts touch happens inside a region.
        let _region = NoPreemptGuard::new();
        let end = Instant::now();
        let (preemptions, preempted) = if high {
            (0, Duration::ZERO)
        } else {
            self.shared.starvation.end_low();
            self.running
                .take()
                .map_or((0, Duration::ZERO), |r| (r.preemptions, r.preempted))
        };
        let timing = JobTiming {
            arrival,
            enqueued,
            start,
            end,
            preemptions,
            preempted,
        };
        self.stats
            .borrow_mut()
            .record(high, kind, &timing, &outcome);
        drop(job);
    }

    /// Runs queued high-priority jobs; in preemption, stops when the starvation level reaches the
    /// threshold.
    ///
    /// A drained queue also takes up the request flag: requests raised for jobs this drain has
    /// already run must not outlive it, or the next low-priority transaction would start with a
    /// stale request that the dispatcher believes is still being escalated (and so would never
    /// signal for the work that arrives next). The flag is cleared before the queue is checked
    /// once more, so a job pushed in between is either seen here or re-raises the flag.
    fn drain_high(&self) {
        loop {
            let Some(job) = self.queues.pop_high() else {
                self.shared.target.acknowledge();
                if self.queues.high_is_empty() {
                    break;
                }
                continue;
            };
            self.run_job(job);
            if self.preempting.get()
                && self.config.policy == Policy::Preempt
                && !self.shared.starvation.allows_preemption(
                    self.clock.nanos(Instant::now()),
                    self.config.starvation_threshold,
                )
            {
                break;
            }
        }
    }
}

impl<E: Executor> ServePreemption for WorkerCore<E> {
    fn serve_preemption(&self) {
        self.shared.target.acknowledge();
        if self.queues.high_is_empty() {
            return; // nothing urgent after all (or an interrupt without work)
        }
        let paused = Instant::now();
        if self.config.policy == Policy::Preempt
            && !self
                .shared
                .starvation
                .allows_preemption(self.clock.nanos(paused), self.config.starvation_threshold)
        {
            return; // the paused transaction has starved enough: the work waits for its end
        }
        self.preempting.set(true);
        self.shared
            .starvation
            .begin_preemption(self.clock.nanos(paused));
        if let Ok(mut ctx) = self.high_ctx.try_borrow_mut()
            && let Some(ctx) = ctx.as_mut()
        {
            ctx.resume();
        }
        self.preempting.set(false);
        let resumed = Instant::now();
        self.shared
            .starvation
            .end_preemption(self.clock.nanos(resumed));
        let away = resumed.saturating_duration_since(paused);
        if let Some(mut r) = self.running.get() {
            r.preemptions += 1;
            r.preempted += away;
            self.running.set(Some(r));
        }
    }
}

/// Everything a worker thread needs.
pub(crate) struct WorkerSetup<E: Executor> {
    pub(crate) index: usize,
    pub(crate) shared: Arc<WorkerShared>,
    pub(crate) queues: Inlets<E::Job>,
    pub(crate) exec: Arc<E>,
    pub(crate) config: SchedConfig,
    pub(crate) epoch: Instant,
    pub(crate) stop: Arc<AtomicBool>,
    pub(crate) feed: Option<LocalFeed<E::Job>>,
}

/// The worker thread's body. Returns its statistics.
pub(crate) fn run_worker<E: Executor>(setup: WorkerSetup<E>) -> Result<RunStats, SchedError> {
    let WorkerSetup {
        index,
        shared,
        queues,
        exec,
        config,
        epoch,
        stop,
        mut feed,
    } = setup;
    if config.pin {
        overtake_runtime::worker::pin_current_thread(index);
    }
    let registration =
        preempt::register_worker(Arc::clone(&shared.target), config.poll_every(), on_preempt)
            .map_err(|source| SchedError::RegisterWorker { index, source })?;
    let core = Rc::new(WorkerCore {
        index,
        stats: RefCell::new(RunStats::with_kinds(exec.kinds().len())),
        shared,
        queues,
        exec,
        clock: Clock::new(epoch),
        config,
        high_ctx: RefCell::new(None),
        low_ctx: RefCell::new(None),
        mailbox: RefCell::new(None),
        preempting: Cell::new(false),
        running: Cell::new(None),
    });
    let stack = core.config.stack_size;
    let for_high = Rc::clone(&core);
    let high = Context::new(stack, false, move |s| {
        loop {
            for_high.drain_high();
            s.suspend();
        }
    })
    .map_err(|source| SchedError::ContextStack { index, source })?;
    let for_low = Rc::clone(&core);
    let low = Context::new(stack, true, move |s| {
        loop {
            let job = {
                let _region = NoPreemptGuard::new();
                for_low.mailbox.borrow_mut().take()
            };
            if let Some(job) = job {
                // A signal that arrived while this worker was between contexts found no
                // preemptible stack to land on and was dropped; its request is still raised. Take
                // it up now: from here on, signals land in this context.
                if for_low.shared.target.is_requested() {
                    let _region = NoPreemptGuard::new();
                    for_low.serve_preemption();
                }
                for_low.run_job(job);
            }
            s.suspend();
        }
    })
    .map_err(|source| SchedError::ContextStack { index, source })?;
    *core.high_ctx.borrow_mut() = Some(high);
    *core.low_ctx.borrow_mut() = Some(low);
    WORKER.with(|w| *w.borrow_mut() = Some(Rc::clone(&core) as Rc<dyn ServePreemption>));
    core.shared.ready.store(true, Ordering::Release);

    while !stop.load(Ordering::Relaxed) {
        // At a boundary, high-priority work first.
        if !core.queues.high_is_empty() {
            core.shared.target.acknowledge();
            if let Some(ctx) = core.high_ctx.borrow_mut().as_mut() {
                ctx.resume();
            }
            continue;
        }
        let job = core.queues.pop_low().or_else(|| {
            let now = Instant::now();
            feed.as_mut().and_then(|f| f()).map(|job| Scheduled {
                job,
                arrival: now,
                enqueued: now,
            })
        });
        match job {
            Some(job) => {
                *core.mailbox.borrow_mut() = Some(job);
                if let Some(ctx) = core.low_ctx.borrow_mut().as_mut() {
                    ctx.resume();
                }
            }
            None => std::hint::spin_loop(),
        }
    }

    WORKER.with(|w| *w.borrow_mut() = None);
    // Dropping the contexts ends their loops (they are suspended between jobs) and breaks the
    // reference cycles through their closures.
    drop(core.high_ctx.borrow_mut().take());
    drop(core.low_ctx.borrow_mut().take());
    drop(registration);
    Ok(core.stats.take())
}
