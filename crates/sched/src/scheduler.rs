//! The scheduler as a running service: [`Scheduler::start`] spawns the workers and returns a
//! handle that any number of threads share to submit jobs; [`Scheduler::shutdown`] stops them.
//!
//! A submitted job is placed as UFS places work (`crate::tiers::place`): time-sensitive work goes
//! into the bounded inbox of a worker that can start it at once — an idle one, else one running
//! background work (which it preempts), else one running less urgent work; when every worker is
//! busy with work at least as urgent, and for all background work, it waits in the pending queue
//! (`crate::pending`), from which a worker takes it when it would otherwise idle or, under the
//! quantum policy, at a quantum's end if its group is furthest behind its share. When there is no
//! room the job comes back with [`Overloaded`], so nothing is queued without bound and nothing is
//! lost. After a
//! push the worker is asked to preempt (policies `preempt` and `cooperative`) if its running task
//! is less urgent, and woken if it sleeps. With signal delivery, a backstop thread sends SIGURG for
//! requests not taken up within the signal delay, unless the client does that itself (the
//! open-loop dispatcher does, from its own spinning loop, to keep the delay exact).
//!
//! Applications submit closures through [`crate::call`]; benchmarks submit their own job types
//! through the same handle. The handle never blocks a submitter.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use overtake_priority::{Priority, Tier};
use overtake_runtime::preempt::{Delivery, PreemptStats};
use sync_wrapper::SyncWrapper;

use crate::error::{ConfigError, SchedError};
use crate::inbox::Inbox;
use crate::job::{Executor, IdleWork, Scheduled};
use crate::pending::Pending;
use crate::policy::{Policy, SchedConfig};
use crate::starvation::{self, Clock};
use crate::stats::RunStats;
use crate::tiers::{Placement, WorkerView, place};
use crate::timer::PreemptTimer;
use crate::watchdog::{BlockedWorker, Watchdog};
use crate::worker::{IDLE, Stop, WorkerSetup, WorkerShared, run_worker};

/// Returned by [`Scheduler::submit`] when every worker's inbox for the job's level is full: the
/// job itself, unrun, to retry later or drop ([`into_inner`](Self::into_inner)). It is `Send` and
/// `Sync` whenever the job is `Send`, so `?` turns it into a `Box<dyn Error + Send + Sync>`.
#[derive(thiserror::Error)]
#[error("overloaded: every worker's inbox for this priority is full; retry later")]
pub struct Overloaded<J>(SyncWrapper<J>);

impl<J> Overloaded<J> {
    pub(crate) fn new(job: J) -> Self {
        Overloaded(SyncWrapper::new(job))
    }

    /// The job that was not admitted.
    pub fn into_inner(self) -> J {
        self.0.into_inner()
    }
}

impl<J> std::fmt::Debug for Overloaded<J> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Overloaded(..)")
    }
}

/// How [`Scheduler::shutdown`] treats admitted work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Shutdown {
    /// Run every job already admitted (queued or started) before the workers exit. Tasks still
    /// parked when nothing else can run are abandoned.
    Drain,
    /// Finish started tasks that can run; jobs still queued are dropped unstarted (a job type
    /// that reports results, like [`crate::call`]'s, tells its waiter so).
    Abandon,
}

/// What the workers did, returned by [`Scheduler::shutdown`].
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct SchedulerReport {
    /// Per level and per kind.
    pub stats: RunStats,
    /// Preemption machinery counters, summed over workers.
    pub preempt: PreemptStats,
    /// Jobs above the lowest level still queued when the workers were told to stop.
    pub unstarted_urgent: usize,
    /// Workers found blocked in the kernel while running a task (see [`SchedConfig::blocked_report`]).
    pub blocked: Vec<BlockedWorker>,
}

/// A running scheduler: its workers and the handle to submit to them. `Sync`: share it (e.g. in
/// an `Arc`) between the threads that submit.
pub struct Scheduler<E: Executor> {
    config: SchedConfig,
    exec: Arc<E>,
    workers: Vec<Arc<WorkerShared>>,
    inboxes: Vec<Arc<Inbox<E::Job>>>,
    /// Work no worker owns yet, and the groups' shares.
    pending: Arc<Pending<E::Job>>,
    threads: Vec<JoinHandle<Result<RunStats, SchedError>>>,
    stop: Arc<AtomicU8>,
    next: AtomicUsize,
    timer: Option<TimerThread>,
    watchdog: Option<Watchdog>,
    /// The origin of the workers' starvation clocks.
    epoch: Instant,
    /// The workers' reactors (the timer polls a busy worker's).
    reactors: crate::reactor::Reactors,
}

/// The least stack a worker's own thread gets (Rust's default for spawned threads).
const MIN_LOOP_STACK: usize = 2 << 20;

struct TimerThread {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<()>,
}

/// How [`Scheduler::start_with`] sets the workers up, besides the [`SchedConfig`].
#[non_exhaustive]
pub struct StartOptions<J> {
    /// Per worker, an optional source of work of its own that the worker asks whenever it has
    /// nothing else to run (a closed loop, such as TPC-C terminals without think time). A job
    /// from it never passes through an inbox or another thread, so this is how a client keeps
    /// every worker busy at the lowest cost per job.
    pub idle_work: Vec<Option<IdleWork<J>>>,
    /// The client steps the preemption timer itself (see [`crate::timer`]); the scheduler starts
    /// no timer thread.
    pub client_timer: bool,
    /// Per worker, an optional source of I/O readiness the worker polls between tasks and sleeps
    /// in when idle (see [`crate::reactor`]).
    pub reactors: crate::reactor::Reactors,
}

impl<J> Default for StartOptions<J> {
    fn default() -> Self {
        StartOptions {
            idle_work: Vec::new(),
            client_timer: false,
            reactors: Vec::new(),
        }
    }
}

impl<J> StartOptions<J> {
    /// Sets [`idle_work`](Self::idle_work).
    pub fn idle_work(mut self, sources: Vec<Option<IdleWork<J>>>) -> Self {
        self.idle_work = sources;
        self
    }

    /// Sets [`reactors`](Self::reactors).
    pub fn reactors(mut self, reactors: crate::reactor::Reactors) -> Self {
        self.reactors = reactors;
        self
    }

    /// Sets [`client_timer`](Self::client_timer).
    pub fn client_timer(mut self) -> Self {
        self.client_timer = true;
        self
    }
}

impl<E: Executor> Scheduler<E> {
    /// Starts `config.workers` workers running jobs with `exec`, with a timer thread for signal
    /// delivery and quanta. Returns once every worker is ready.
    ///
    /// # Errors
    ///
    /// - [`SchedError::InvalidConfig`]: a setting that cannot work (no worker, an empty inbox).
    /// - [`SchedError::Unavailable`]: the preemption mechanism cannot be used here. With the
    ///   default (signal delivery) the program must allocate through the runtime's region
    ///   allocator, or a signal could pause a transaction inside `malloc` and deadlock its
    ///   worker: declare it once, in the binary,
    ///   `#[global_allocator] static ALLOC: overtake_runtime::EngineAllocator =
    ///   overtake_runtime::engine_allocator();` (see the [`call`](crate::call) module's example),
    ///   or choose [`Delivery::Poll`](crate::Delivery::Poll).
    /// - [`SchedError::SpawnWorker`] and the others: the operating system refused a thread, a
    ///   signal handler or a stack.
    pub fn start(config: &SchedConfig, exec: Arc<E>) -> Result<Self, SchedError> {
        Self::start_with(config, exec, StartOptions::default())
    }

    /// Like [`start`](Self::start), with the worker set-up `options` give.
    pub fn start_with(
        config: &SchedConfig,
        exec: Arc<E>,
        options: StartOptions<E::Job>,
    ) -> Result<Self, SchedError> {
        let StartOptions {
            idle_work: mut feeds,
            client_timer,
            mut reactors,
        } = options;
        config.validate()?;
        if feeds.len() > config.workers {
            return Err(ConfigError::TooManyIdleWork.into());
        }
        if reactors.len() > config.workers {
            return Err(ConfigError::TooManyReactors.into());
        }
        if config.trace {
            overtake_runtime::region::trace::set_enabled(true);
        }
        // Read the usable cores before anything is pinned (see `overtake_runtime::os::thread`).
        overtake_runtime::os::thread::available_cores();
        feeds.resize_with(config.workers, || None);
        reactors.resize_with(config.workers, || None);
        let workers: Vec<Arc<WorkerShared>> = (0..config.workers)
            .map(|_| Arc::new(WorkerShared::new(exec.kinds().len(), config.task_pool)))
            .collect();
        let inboxes: Vec<Arc<Inbox<E::Job>>> = (0..config.workers)
            .map(|_| Arc::new(Inbox::new(config.urgent_inbox, config.background_inbox)))
            .collect();
        let pending = Arc::new(Pending::new(
            config.urgent_inbox.saturating_mul(config.workers),
            config.background_inbox.saturating_mul(config.workers),
            config.quantum,
        ));
        let stop = Arc::new(AtomicU8::new(Stop::Run as u8));
        let epoch = Instant::now();
        let mut scheduler = Scheduler {
            config: config.clone(),
            exec: Arc::clone(&exec),
            workers,
            inboxes,
            pending,
            threads: Vec::with_capacity(config.workers),
            stop,
            next: AtomicUsize::new(0),
            timer: None,
            watchdog: None,
            epoch,
            reactors: Vec::new(),
        };
        scheduler.reactors = reactors.clone();
        let peers: Arc<[Arc<WorkerShared>]> = scheduler.workers.clone().into();
        for (index, (feed, reactor)) in feeds.into_iter().zip(reactors).enumerate() {
            let setup = WorkerSetup {
                index,
                shared: Arc::clone(&scheduler.workers[index]),
                inbox: Arc::clone(&scheduler.inboxes[index]),
                pending: Arc::clone(&scheduler.pending),
                exec: Arc::clone(&exec),
                config: config.clone(),
                epoch,
                stop: Arc::clone(&scheduler.stop),
                feed,
                reactor,
                peers: Arc::clone(&peers),
            };
            let handle = std::thread::Builder::new()
                .name(format!("worker-{index}"))
                // Jobs that run between tasks run on this stack: as deep as a task's (address
                // space only, touched as deep as they go).
                .stack_size(config.stack_size.max(MIN_LOOP_STACK))
                .spawn(move || run_worker(setup))
                .map_err(|source| SchedError::SpawnWorker { index, source });
            match handle {
                Ok(h) => scheduler.threads.push(h),
                Err(e) => {
                    let _ = scheduler.stop_workers(Shutdown::Abandon);
                    return Err(e);
                }
            }
        }
        // Workers are ready (registered, so that signals find them, and set up) before work
        // arrives.
        while scheduler
            .workers
            .iter()
            .any(|w| !w.ready.load(Ordering::Acquire))
        {
            if let Some(exited) = scheduler.threads.iter().position(JoinHandle::is_finished) {
                // It failed to set up; shutting down collects its error.
                let report = scheduler.stop_workers(Shutdown::Abandon);
                return Err(report.err().unwrap_or(SchedError::WorkerExited(exited)));
            }
            std::thread::yield_now();
        }
        if let Some(bound) = config.blocked_report {
            let watchdog = Watchdog::spawn(scheduler.workers.clone(), bound).map_err(|source| {
                SchedError::SpawnWorker {
                    index: usize::MAX,
                    source,
                }
            })?;
            scheduler.watchdog = Some(watchdog);
        }
        // A busy worker's reactor is polled by the timer (see `crate::reactor`).
        let needs_timer = (config.delivery == Delivery::Signal && config.preempts())
            || config.policy == Policy::Quantum
            || scheduler.reactors.iter().any(Option::is_some);
        if !client_timer && needs_timer {
            let timer = spawn_timer(scheduler.preempt_timer())?;
            for w in &scheduler.workers {
                let _ = w.wakes.backstop.set(timer.thread.thread().clone());
            }
            scheduler.timer = Some(timer);
        }
        Ok(scheduler)
    }

    /// The settings it runs with.
    pub fn config(&self) -> &SchedConfig {
        &self.config
    }

    /// Number of workers.
    pub fn workers(&self) -> usize {
        self.workers.len()
    }

    /// Admits `job` at its executor priority and group: on a worker that can start it at once,
    /// else into the pending queue (see the module's comment). Gives it back if there is no room.
    pub fn submit(&self, job: E::Job) -> Result<(), Overloaded<E::Job>> {
        let mut scheduled = Scheduled::at(job, Instant::now());
        let (group, level) = (
            self.exec.group(&scheduled.job),
            self.exec.priority(&scheduled.job),
        );
        let first = self.next.fetch_add(1, Ordering::Relaxed);
        let target = match place(group.tier, &self.views(), first) {
            Placement::Idle(w) | Placement::Preempt(w) => Some(w),
            // Levels stay strict: a worker running less urgent work makes way at once.
            Placement::Queue(_) => (0..self.workers.len())
                .map(|i| (first + i) % self.workers.len())
                .find(|&w| {
                    let running = self.workers[w].running_level.load(Ordering::SeqCst);
                    running != IDLE && usize::from(running) < level.level()
                }),
            Placement::GroupQueue => None,
        };
        if let Some(w) = target {
            match self.push(w, scheduled) {
                Ok(()) => {
                    self.request(w);
                    return Ok(());
                }
                Err(back) => scheduled = back,
            }
        }
        self.pending
            .push(level, group, scheduled)
            .map_err(|back| Overloaded::new(back.job))?;
        // A worker running a group of this level that is ahead of this one's makes way before
        // its quantum ends (EEVDF's wake-up preemption).
        if self.config.policy == Policy::Quantum
            && let Some(w) = (0..self.workers.len()).find(|&w| {
                let worker = &self.workers[w];
                usize::from(worker.running_level.load(Ordering::SeqCst)) == level.level()
                    && crate::pending::group_from_bits(worker.running_group.load(Ordering::SeqCst))
                        .is_some_and(|running| self.pending.waiting_behind(level, running))
            })
        {
            self.workers[w].target.request();
            if let Some(t) = &self.timer {
                t.thread.thread().unpark();
            }
        }
        // One sleeping worker is enough: a busy one takes it when it runs out of work or at the
        // end of its quantum.
        if let Some(w) = self.workers.iter().find(|w| w.sleeper.is_sleeping()) {
            w.sleeper.notify();
        }
        Ok(())
    }

    /// Like [`submit`](Self::submit), but waits up to `timeout` for room in an inbox before giving
    /// the job back: for an application thread that would rather wait than handle a refusal.
    /// Between tries it sleeps, from 20 us up to 1 ms. Inside a task (a call submitting another)
    /// it does not wait, since a sleeping thread would stop every task of its worker, among them
    /// perhaps the ones that would make room: it answers at once, as `submit` does.
    pub fn submit_waiting(&self, job: E::Job, timeout: Duration) -> Result<(), Overloaded<E::Job>> {
        let deadline = Instant::now() + timeout;
        let mut pause = Duration::from_micros(20);
        let mut job = job;
        loop {
            match self.submit(job) {
                Ok(()) => return Ok(()),
                Err(back) => job = back.into_inner(),
            }
            let now = Instant::now();
            if now >= deadline || overtake_runtime::park::in_task() {
                return Err(Overloaded::new(job));
            }
            std::thread::sleep(pause.min(deadline - now));
            pause = (pause * 2).min(Duration::from_millis(1));
        }
    }

    /// Puts `job` into worker `w`'s inbox at its level (it arrived at `arrival`, which its latency
    /// counts from) and wakes the worker if it sleeps, or gives it back if that inbox is full.
    /// It does not ask the worker to preempt its running task: a client placing work itself asks
    /// with [`needs_preemption`](Self::needs_preemption) and the timer's
    /// [`ask`](PreemptTimer::ask) once per batch (PreemptDB's batched on-demand preemption).
    pub fn submit_to(
        &self,
        w: usize,
        job: E::Job,
        arrival: Instant,
    ) -> Result<(), Overloaded<E::Job>> {
        let scheduled = Scheduled {
            job,
            arrival,
            enqueued: Instant::now(),
        };
        self.push(w, scheduled)
            .map_err(|back| Overloaded::new(back.job))
    }

    fn push(&self, w: usize, job: Scheduled<E::Job>) -> Result<(), Scheduled<E::Job>> {
        let level = self.exec.priority(&job.job);
        self.inboxes[w].push(level, job)?;
        self.workers[w].sleeper.notify();
        Ok(())
    }

    /// What each worker is doing, as placement sees it.
    fn views(&self) -> Vec<WorkerView> {
        let above_low = Priority::ALL[1];
        (self.workers.iter().zip(&self.inboxes))
            .map(|(w, inbox)| {
                let running = w.running_level.load(Ordering::SeqCst);
                WorkerView {
                    running: Priority::from_level(usize::from(running)).map(Tier::of),
                    time_sensitive_waiting: inbox.urgent_queued() + w.staged_from(above_low),
                }
            })
            .collect()
    }

    /// True if worker `w`'s inbox has room for a job of `level`.
    pub fn has_room(&self, w: usize, level: Priority) -> bool {
        !self.inboxes[w].is_full(level)
    }

    /// Asks worker `w` to make way for queued work more urgent than its running task (under the
    /// preemptive, quantum and cooperative policies).
    fn request(&self, w: usize) {
        if self.config.policy == Policy::Wait {
            return;
        }
        // A sleeping worker runs nothing to preempt: the push's notify wakes it, or its check
        // before sleeping finds the job (its flag is set before that check). Asking would only
        // wake the timer thread, and signal the worker if it slept past the signal delay.
        if self.workers[w].sleeper.is_sleeping() {
            return;
        }
        if self.needs_preemption(w) {
            self.workers[w].target.request();
            if let Some(t) = &self.timer {
                t.thread.thread().unpark();
            }
        }
    }

    /// True if worker `w` may be running a task less urgent than work in its inbox, so that it
    /// must be asked to make way (call after the push). A worker running work at least as urgent
    /// as everything queued takes the new work at its next boundary anyway: asking would only
    /// cost it a poll, or a signal if it is between tasks for longer than the signal delay.
    pub fn needs_preemption(&self, w: usize) -> bool {
        // Running level read after the push (both sequentially consistent): a worker that picked
        // its task before the push shows that task's level (or IDLE while it switches), so a
        // request is never skipped for work that the running task would otherwise hold up.
        let running = self.workers[w].running_level.load(Ordering::SeqCst);
        running == IDLE
            || (Priority::ALL.into_iter().skip(usize::from(running) + 1))
                .any(|p| self.has_new(w, p))
    }

    /// Under starvation control (`Preempt` with a threshold below 1): whether worker `w` may be
    /// given more urgent work, and be preempted for it, now (PreemptDB's check before a push).
    /// Always true otherwise.
    pub fn admits_urgent(&self, w: usize, now: Instant) -> bool {
        if !self.controls_starvation() {
            return true;
        }
        let worker = &self.workers[w];
        let running = worker.running_level.load(Ordering::SeqCst);
        if running == IDLE {
            return true;
        }
        let now = Clock::new(self.epoch).nanos(now);
        let running_protected = usize::from(running) == Priority::LOW.level();
        worker
            .starvation
            .allows_urgent(now, self.config.starvation_threshold, running_protected)
    }

    /// True under starvation control: `Preempt` with a threshold below 1.
    fn controls_starvation(&self) -> bool {
        self.config.policy == Policy::Preempt
            && starvation::limits(self.config.starvation_threshold)
    }

    /// Under starvation control, true if worker `w` runs a task while more urgent work waits in
    /// its inbox, is admitting urgent work again, and has no request outstanding: the protected
    /// task kept the worker while it was owed it, and must now be asked to make way (nothing else
    /// would ask: the urgent work was placed before).
    pub fn owes_preemption(&self, w: usize, now: Instant) -> bool {
        if !self.controls_starvation() {
            return false;
        }
        let worker = &self.workers[w];
        let running = worker.running_level.load(Ordering::SeqCst);
        running != IDLE
            && !worker.target.is_requested()
            && Priority::ALL
                .into_iter()
                .skip(usize::from(running) + 1)
                .any(|p| self.has_new(w, p))
            && self.admits_urgent(w, now)
    }

    /// A preemption timer for this scheduler, for a client that started it with
    /// [`StartOptions::client_timer`] and steps the timer from its own loop (see
    /// [`crate::timer`]).
    pub fn preempt_timer(&self) -> PreemptTimer<E::Job> {
        PreemptTimer::new(
            &self.config,
            self.workers.clone(),
            self.inboxes.clone(),
            Arc::clone(&self.pending),
            self.epoch,
        )
        .with_reactors(self.reactors.clone())
    }

    /// Jobs the workers have finished (or refused) so far: a client that counts what it handed
    /// over can tell when all of it is done.
    pub fn finished_jobs(&self) -> u64 {
        self.workers
            .iter()
            .map(|w| w.finished.load(Ordering::Acquire))
            .sum()
    }

    /// New jobs of `level` waiting for worker `w` (in its inbox, or taken out to start next).
    fn has_new(&self, w: usize, level: Priority) -> bool {
        self.inboxes[w].has(level) || self.workers[w].staged(level) > 0
    }

    /// Jobs waiting for worker `w` to start them.
    pub fn queued(&self, w: usize) -> usize {
        self.inboxes[w].queued() + self.workers[w].staged_from(Priority::LOW)
    }

    /// Jobs above the lowest level waiting to start.
    pub fn urgent_queued(&self) -> usize {
        let above_low = Priority::ALL[1];
        (self.inboxes.iter().map(|q| q.urgent_queued()))
            .chain(self.workers.iter().map(|w| w.staged_from(above_low)))
            .sum::<usize>()
            + self.pending.urgent()
    }

    /// What the workers' jobs did so far, per level and per kind, while the scheduler runs (the
    /// same statistics [`shutdown`](Self::shutdown) reports at the end). Each worker's figures
    /// are copied under a lock it takes once per job, so a worker finishing a job meanwhile
    /// waits for the copy (some microseconds): take snapshots a few times a second, not in a
    /// loop.
    pub fn stats(&self) -> RunStats {
        let mut total = RunStats::with_kinds(self.exec.kinds().len());
        for w in &self.workers {
            let region = overtake_runtime::NoPreemptGuard::new();
            total.merge(&w.stats.lock(&region));
        }
        total
    }

    /// The workers found blocked in the kernel while running a task so far.
    pub fn blocked_workers(&self) -> Vec<BlockedWorker> {
        let Some(w) = &self.watchdog else {
            return Vec::new();
        };
        let region = overtake_runtime::NoPreemptGuard::new();
        w.reports.lock(&region).clone()
    }

    /// Stops the workers as `how` says and returns what they did.
    pub fn shutdown(mut self, how: Shutdown) -> Result<SchedulerReport, SchedError> {
        self.stop_workers(how)
    }

    fn stop_workers(&mut self, how: Shutdown) -> Result<SchedulerReport, SchedError> {
        let unstarted_urgent = self.urgent_queued();
        let stop = match how {
            Shutdown::Drain => Stop::Drain,
            Shutdown::Abandon => Stop::Abandon,
        };
        self.stop.store(stop as u8, Ordering::SeqCst);
        for w in &self.workers {
            w.sleeper.notify();
        }
        if let Some(t) = self.timer.take() {
            t.stop.store(true, Ordering::Release);
            t.thread.thread().unpark();
            let _ = t.thread.join();
        }
        let mut stats = RunStats::default();
        let mut first_error = None;
        for (index, handle) in self.threads.drain(..).enumerate() {
            match handle.join() {
                Ok(Ok(s)) => stats.merge(&s),
                Ok(Err(e)) => {
                    first_error.get_or_insert(e);
                }
                Err(_) => {
                    first_error.get_or_insert(SchedError::WorkerPanicked(index));
                }
            }
        }
        if self.config.trace {
            overtake_runtime::region::trace::set_enabled(false);
        }
        let blocked = self.blocked_workers();
        if let Some(w) = self.watchdog.take() {
            w.stop();
        }
        if let Some(e) = first_error {
            return Err(e);
        }
        let mut preempt = PreemptStats::default();
        for w in &self.workers {
            preempt += w.target.stats();
        }
        Ok(SchedulerReport {
            stats,
            preempt,
            unstarted_urgent,
            blocked,
        })
    }
}

impl<E: Executor> Drop for Scheduler<E> {
    /// A handle dropped without [`shutdown`](Scheduler::shutdown) still stops its threads (and
    /// drains: admitted work is not silently lost).
    fn drop(&mut self) {
        if !self.threads.is_empty() || self.timer.is_some() || self.watchdog.is_some() {
            let _ = self.stop_workers(Shutdown::Drain);
        }
    }
}

/// The timer thread: steps the scheduler's preemption timer, sleeping until the next step is due
/// (submitters wake it when they raise a request; a slice that starts while it sleeps is seen
/// within a millisecond).
fn spawn_timer<J: Send + 'static>(mut timer: PreemptTimer<J>) -> Result<TimerThread, SchedError> {
    let stop = Arc::new(AtomicBool::new(false));
    let stop_in = Arc::clone(&stop);
    let thread = std::thread::Builder::new()
        .name("preempt-timer".into())
        .spawn(move || {
            // Steps an arrival check apart must not each wake most of a check late.
            overtake_runtime::os::thread::set_timer_slack(Duration::from_micros(1));
            while !stop_in.load(Ordering::Acquire) {
                timer.step(Instant::now(), false);
                match timer.next_step_within() {
                    // Sleep, not spin: this thread is not pinned and may share a core with a
                    // worker, whose time a spinning timer would take (measured: urgent TPC-C ran
                    // 60% longer with clients submitting). The kernel's timer slack makes the
                    // step some tens of microseconds later than asked; the request flag, polled
                    // at every record access, is the fast path anyway.
                    Some(due) => std::thread::sleep(due),
                    None => std::thread::park_timeout(Duration::from_millis(1)),
                }
            }
        })
        .map_err(|source| SchedError::SpawnWorker {
            index: usize::MAX,
            source,
        })?;
    Ok(TimerThread { stop, thread })
}
