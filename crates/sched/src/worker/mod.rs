//! A worker: one pinned thread, a bounded pool of task contexts, and the loop that always runs
//! the most urgent ready task.
//!
//! Every job runs as a task in a context of its own from the pool (see `task`). The loop, on the
//! thread's own stack, picks what runs next: the most urgent level that has work, and within a
//! level a task that is ready to continue (paused by preemption, or woken after parking) before
//! a new job. When a preemption request reaches the running task (polled flag or injected signal;
//! see `overtake_runtime::preempt`), the runtime calls `preempt::on_preempt` on the task's stack: if a
//! more urgent level has work and the task's starvation level allows it, the task joins its level's
//! ready queue and suspends back to the loop, which runs the urgent work and later resumes it
//! where it was. Preemption nests: a level-1 task paused by level 2, itself paused by level 3,
//! continues after them and before level-0 work. A preempted task whose starvation level reaches
//! the threshold continues before anything else.
//!
//! A task that parks (`overtake_runtime::park`) suspends to the loop too; a wake from any thread
//! puts its token into the worker's wake inbox and raises the request flag, so a running
//! lower-level task makes way for it.
//!
//! State shared by the loop and the hook lives in `Cell`/`RefCell`s of the worker core, borrowed
//! only inside non-preemptible regions, so a paused task never holds a borrow. Nothing here blocks
//! the thread while a task runs.
//!
//! Parts: this module (the worker core: starting, running and ending tasks), `run` (the loop),
//! `pick` (what runs next), `preempt` (the preemption hook and its decision), `record` (what a
//! finished job leaves in the statistics), `staged` (new jobs taken from the inbox), `acks` (jobs
//! awaiting acknowledgements), `shared` (what other threads see and tell).

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use overtake_priority::{Group, Priority};
use overtake_runtime::context::{Resumed, Suspension};
use overtake_runtime::os::thread::{ThreadUsage, thread_usage};
use overtake_runtime::park::{Parker, WakeTarget};
use overtake_runtime::region::trace as region_trace;
use overtake_runtime::{Context, NoPreemptGuard};

use crate::inbox::Inbox;
use crate::job::{Executor, JobError, Outcome, Scheduled};
use crate::pending::Pending;
use crate::policy::{Policy, SchedConfig};
use crate::starvation::Clock;
use crate::task::{Claim, TaskId, TaskState, TaskTable};

mod acks;
mod pick;
mod preempt;
mod record;
mod run;
mod shared;
mod staged;

pub(crate) use acks::AckSignal;
use acks::Acks;
use preempt::ServePreemption;
pub(crate) use run::{WorkerSetup, run_worker};
use shared::TaskEvent;
pub(crate) use shared::{IDLE, Stop, WorkerShared};
use staged::StagedJobs;

/// Traced jobs a worker has room for before its trace vector grows (about 13 MiB).
const TRACE_ROOM: usize = 1 << 17;

/// Quantum: the slice of a task that is not to be preempted again (longer than any run).
const RUN_TO_END: std::time::Duration = std::time::Duration::from_secs(1 << 32);

/// A pool slot's job, handed to its context when its task starts.
type Mailbox<J> = RefCell<Option<Scheduled<J>>>;

/// What the loop runs next.
enum Next<J> {
    Resume(TaskId),
    /// Quantum: a task resumed because it was paused `paused_age_limit`; it runs to its end.
    ResumeToEnd(TaskId),
    Start(Scheduled<J>),
}

struct WorkerCore<E: Executor> {
    index: usize,
    shared: Arc<WorkerShared>,
    inbox: Arc<Inbox<E::Job>>,
    /// Work no worker owns yet, and the groups' shares across workers.
    pending: Arc<Pending<E::Job>>,
    exec: Arc<E>,
    config: SchedConfig,
    clock: Clock,
    tasks: RefCell<TaskTable>,
    /// New jobs taken from the inbox, by level and group.
    staged: RefCell<StagedJobs<E::Job>>,
    /// The groups a pick chooses among (kept to spare an allocation per pick).
    candidates: RefCell<Vec<Group>>,
    /// One per pool slot, created when first needed.
    contexts: Box<[RefCell<Option<Context>>]>,
    /// The job handed to a slot's context when its task starts.
    mailboxes: Box<[Mailbox<E::Job>]>,
    /// The parker of a slot's current task.
    parkers: Box<[RefCell<Option<Parker>>]>,
    running: Cell<Option<TaskId>>,
    /// `os_background` in effect for this thread (the process may switch; whether the thread
    /// is at the background weight now is `WorkerShared::os_lowered`).
    os_background: bool,
    /// When the running task's current slice began.
    slice_started: Cell<Instant>,
    /// Quantum: how long the current slice may run.
    slice_quantum: Cell<std::time::Duration>,
    /// Tracing: the thread's counters when the running task's slice began (if it is traced).
    slice_usage: Cell<Option<ThreadUsage>>,
    /// When the worker last paused a task for more urgent work (the preemption's delivery).
    paused_for_urgent: Cell<Option<Instant>>,
    /// Jobs whose tasks ended and that await their acknowledgements.
    acks: RefCell<Acks<E::Job>>,
    /// The machine's runnable threads, and when it last found a core to spare (or none) for
    /// spinning (`SchedConfig::idle_spin_alone`).
    load: overtake_runtime::os::load::RunnableThreads,
    spare: Cell<Option<(Instant, bool)>>,
}

impl<E: Executor> WorkerCore<E> {
    /// Runs one job in task `id` (on its context) and records what happened to it.
    fn run_job(&self, id: TaskId, mut scheduled: Scheduled<E::Job>) {
        let outcome = self.exec.execute(&mut scheduled.job, self.index);
        let _region = NoPreemptGuard::new();
        let end = Instant::now();
        if let Some(before) = self.slice_usage.take() {
            let slice = thread_usage().since(&before);
            self.tasks
                .borrow_mut()
                .add_usage(id, &slice, region_trace::longest_since_mark());
        }
        let times = self.tasks.borrow().times(id);
        self.ended(scheduled, times, end, outcome);
    }

    /// Applies what other threads said: woken tasks join their ready queues, raised tasks move
    /// up (or back down).
    fn collect_wakes(&self) {
        let wakes = &self.shared.wakes;
        if !wakes.any.swap(false, Ordering::AcqRel) {
            return;
        }
        let region = NoPreemptGuard::new();
        let events = std::mem::take(&mut *wakes.events.lock(&region));
        let mut tasks = self.tasks.borrow_mut();
        for event in events {
            match event {
                TaskEvent::Wake(token) => {
                    if let Some((_, group)) = tasks.wake(token) {
                        self.pending.woken(group);
                    }
                }
                TaskEvent::Raise { token, level, up } => {
                    let raised = tasks.raise(token, level, up);
                    if let Some((id, effective)) = raised {
                        self.shared.wakes.set_level(id, effective);
                    }
                    if let Some((id, effective)) = raised
                        && self.running.get() == Some(id)
                    {
                        self.shared
                            .running_level
                            .store(effective.level() as u8, Ordering::SeqCst);
                    }
                }
            }
        }
    }

    /// Tells other threads the worker now runs `group`'s work at `priority`: a task's slice that
    /// began at `slice`, whose quantum the timer watches, or (`None`) a job that runs between
    /// tasks, which nothing preempts (a timer step for it would be a wasted wake-up).
    fn announce_running(
        &self,
        slice: Option<Instant>,
        priority: Priority,
        group: overtake_priority::Group,
    ) {
        self.shared.switches.fetch_add(1, Ordering::Relaxed);
        if let Some(started) = slice {
            self.shared
                .slice_started
                .store(self.clock.nanos(started), Ordering::Relaxed);
        }
        self.shared
            .running_group
            .store(crate::pending::group_bits(Some(group)), Ordering::SeqCst);
        self.shared
            .running_level
            .store(priority.level() as u8, Ordering::SeqCst);
    }

    /// With `os_background`: the thread runs work of `priority` at the background weight if it
    /// is the lowest level, at nice 0 otherwise: a system call only when that changes (after
    /// another thread lifted it, `os_lowered` says it is at nice 0 already, as it is).
    fn set_os_weight(&self, priority: Priority) {
        if !self.os_background {
            return;
        }
        let background = priority == Priority::LOW;
        if background != self.shared.os_lowered.load(Ordering::SeqCst) {
            overtake_runtime::os::thread::set_background(background);
            // After the call: a lift that finds the flag set finds the thread lowered.
            self.shared.os_lowered.store(background, Ordering::SeqCst);
        }
    }

    /// Runs a job that runs between tasks (`Executor::runs_between_tasks`) on the loop's own
    /// stack, to its end, in a non-preemptible region.
    fn run_between_tasks(&self, mut scheduled: Scheduled<E::Job>) {
        let priority = self.exec.priority(&scheduled.job);
        let group = self.exec.group(&scheduled.job);
        // A session's step of an urgent level must not run at the weight a background task left.
        self.set_os_weight(priority);
        let started = Instant::now();
        // Others see the worker busy at the job's level while it runs (placement, the timer's
        // arrival checks).
        self.announce_running(None, priority, group);
        let outcome = {
            let _region = NoPreemptGuard::new();
            self.exec.execute(&mut scheduled.job, self.index)
        };
        self.shared.running_level.store(IDLE, Ordering::SeqCst);
        self.shared.running_group.store(0, Ordering::SeqCst);
        // Its group's share pays for it; it is not booked as a job (it is not a transaction).
        let _region = NoPreemptGuard::new();
        self.pending.charge(group, started.elapsed(), true);
        drop((scheduled, outcome));
    }

    /// Starts `scheduled` as a new task and runs it until it suspends or ends.
    fn start(self: &Rc<Self>, scheduled: Scheduled<E::Job>) {
        if self.exec.runs_between_tasks(&scheduled.job) {
            return self.run_between_tasks(scheduled);
        }
        let claim = {
            let _region = NoPreemptGuard::new();
            self.tasks.borrow_mut().claim()
        };
        let Some(claim) = claim else {
            let limit = self.contexts.len();
            self.refuse(
                scheduled,
                JobError::NoTaskContext {
                    worker: self.index,
                    limit,
                },
            );
            return;
        };
        let id = match claim {
            Claim::Reuse(id) => id,
            Claim::Create(id) => match self.create_context(id) {
                Ok(()) => {
                    let _region = NoPreemptGuard::new();
                    self.tasks.borrow_mut().created(id);
                    id
                }
                Err(e) => {
                    let region = NoPreemptGuard::new();
                    self.tasks.borrow_mut().unclaim(claim);
                    drop(region);
                    self.refuse(
                        scheduled,
                        JobError::NoStack {
                            worker: self.index,
                            source: Arc::new(e),
                        },
                    );
                    return;
                }
            },
        };
        let priority = self.exec.priority(&scheduled.job);
        let region = NoPreemptGuard::new();
        let now = Instant::now();
        let group = self.exec.group(&scheduled.job);
        let token = self.tasks.borrow_mut().start(id, priority, group, now);
        let wakes = Arc::clone(&self.shared.wakes) as Arc<dyn WakeTarget>;
        *self.parkers[id].borrow_mut() = Some(Parker::for_task(wakes, token));
        *self.mailboxes[id].borrow_mut() = Some(scheduled);
        drop(region);
        self.run_task(id, now, false);
    }

    /// A job that cannot start is recorded as failed, with why.
    fn refuse(&self, scheduled: Scheduled<E::Job>, why: JobError) {
        let _region = NoPreemptGuard::new();
        // It was counted runnable when it was taken for starting.
        let group = self.exec.group(&scheduled.job);
        self.pending.charge(group, std::time::Duration::ZERO, true);
        let now = Instant::now();
        let times = crate::task::TaskTimes {
            started: now,
            preemptions: 0,
            preempted: std::time::Duration::ZERO,
            waited: std::time::Duration::ZERO,
            usage: Default::default(),
        };
        self.record(
            &scheduled.job,
            scheduled.arrival,
            scheduled.enqueued,
            times,
            now,
            &Outcome::failed(why),
        );
    }

    fn create_context(self: &Rc<Self>, id: TaskId) -> std::io::Result<()> {
        let core = Rc::clone(self);
        let ctx = Context::new(self.config.stack_size, true, move |s| {
            loop {
                let job = {
                    let _region = NoPreemptGuard::new();
                    core.mailboxes[id].borrow_mut().take()
                };
                if let Some(job) = job {
                    // A request whose signal reached the worker between tasks (nowhere it could
                    // land) is still raised: take it up now, before a job that may never poll.
                    if core.shared.target.is_requested() {
                        let _region = NoPreemptGuard::new();
                        core.serve_preemption();
                    }
                    core.run_job(id, job);
                }
                // The task has ended; the context waits for its slot's next task.
                s.suspend();
            }
        })?;
        *self.contexts[id].borrow_mut() = Some(ctx);
        Ok(())
    }

    /// Resumes a ready task (paused or woken); with `to_end`, no quantum pauses it again.
    fn resume(&self, id: TaskId, to_end: bool) {
        let now = Instant::now();
        {
            let _region = NoPreemptGuard::new();
            self.tasks.borrow_mut().resume(id, now);
        }
        self.run_task(id, now, to_end);
    }

    /// Runs task `id` (already marked running, its slice starting at `slice`: the same reading
    /// of the clock, one `clock_gettime` per task instead of two) until it suspends or ends, and
    /// books what it did. `to_end`: under `Quantum`, its slice has no end.
    fn run_task(&self, id: TaskId, slice: Instant, to_end: bool) {
        let (priority, resumed, group) = {
            let tasks = self.tasks.borrow();
            let task = tasks.get(id);
            (task.effective(), task.preemptions > 0, task.group)
        };
        if self.config.policy == Policy::Quantum {
            let quanta = if resumed {
                self.config.resumed_quanta
            } else {
                1
            };
            // A request resumed for its age runs to its end: paused again, it would wait as long
            // once more, holding its snapshot (and the versions the collector must keep for it)
            // for as many ages as it has slices left.
            let quantum = if to_end {
                RUN_TO_END
            } else {
                self.config.quantum * quanta
            };
            self.slice_quantum.set(quantum);
            self.shared
                .slice_quantum
                .store(quantum.as_nanos() as u64, Ordering::Relaxed);
        }
        self.note_conflict(priority, slice);
        self.set_os_weight(priority);
        self.running.set(Some(id));
        self.slice_started.set(slice);
        self.shared.wakes.set_level(id, priority);
        self.announce_running(Some(slice), priority, group);
        // A wake posted before the level above was published did not ask this task to look.
        if self.shared.wakes.outranked_by_events(priority) {
            self.shared.wakes.request();
        }
        if self.config.trace && priority > Priority::LOW {
            self.slice_usage.set(Some(thread_usage()));
            region_trace::mark();
        }
        let resumed = {
            let parker = self.parkers[id].borrow();
            let mut ctx = self.contexts[id].borrow_mut();
            match (parker.as_ref(), ctx.as_mut()) {
                (Some(parker), Some(ctx)) => {
                    parker.set_paused(false);
                    parker.run(|| ctx.resume())
                }
                _ => panic!("task {id} runs without its context or parker"),
            }
        };
        self.running.set(None);
        self.shared.running_level.store(IDLE, Ordering::SeqCst);
        self.shared.running_group.store(0, Ordering::SeqCst);
        self.shared.slice_started.store(0, Ordering::Relaxed);
        let _region = NoPreemptGuard::new();
        let now = Instant::now();
        if let Some(before) = self.slice_usage.take() {
            let slice = thread_usage().since(&before);
            self.tasks
                .borrow_mut()
                .add_usage(id, &slice, region_trace::longest_since_mark());
        }
        let ran = now.saturating_duration_since(slice);
        // Whether this piece of the group's work stopped claiming a share (ended, or waits).
        let mut ended = false;
        match resumed {
            Resumed::Suspended(Suspension::Yielded) => {
                self.tasks.borrow_mut().finish(id);
                ended = true;
                *self.parkers[id].borrow_mut() = None;
            }
            Resumed::Suspended(Suspension::Preempted) => {
                // The hook queued it. Lock policies may ask whether it is paused (and act on it
                // now: the parker runs their hook).
                if let Some(parker) = self.parkers[id].borrow().as_ref() {
                    parker.set_paused(true);
                }
            }
            Resumed::Suspended(Suspension::Parked) => {
                let mut tasks = self.tasks.borrow_mut();
                tasks.park(id, now);
                // Waiting, it claims no share (a wake makes it runnable again).
                ended = tasks.get(id).state == TaskState::Parked;
                drop(tasks);
                // Parked, it makes no progress either, however long the wait (a transaction
                // block waiting for its client's next statement): for lock policies it is
                // paused, so what it holds can be taken for an urgent transaction.
                if let Some(parker) = self.parkers[id].borrow().as_ref() {
                    parker.set_paused(true);
                }
            }
            Resumed::Finished => panic!("the body of task context {id} returned"),
        }
        self.pending.charge(group, ran, ended);
        let tasks = self.tasks.borrow();
        self.shared
            .ready_tasks
            .store(tasks.ready_count(), Ordering::Relaxed);
        for (level, paused) in tasks.preempted_by_level().into_iter().enumerate() {
            self.shared.paused[level].store(paused, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests;
