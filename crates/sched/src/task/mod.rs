//! A worker's tasks: which pooled context each started transaction runs in, what state it is in,
//! and, per priority level, the tasks ready to continue.
//!
//! A task is one job from its start to its end. It takes a context slot from the worker's bounded
//! pool when it starts and gives it back when it ends, so a worker holds many started tasks at
//! once: one running, others paused by preemption (ready to continue) or parked (waiting for a
//! wake). This table is bookkeeping only (no contexts, no clocks of its own): the worker loop and
//! the preemption hook drive it, always inside non-preemptible regions, so a paused task never
//! holds a borrow of it.
//!
//! Ready tasks of a level continue in the order they became ready, within their group (the worker
//! chooses which group's turn it is, see `crate::tiers`; the queues are in `ready`). A parked task is in no queue
//! until a wake with its token arrives (a wake that arrives before its park is recorded is kept
//! for it); a token from an earlier task of the same slot (an old unparker) is recognised by its
//! serial and ignored.

mod ready;

use std::time::{Duration, Instant};

use overtake_priority::{Group, Priority};
use overtake_runtime::os::thread::ThreadUsage;

use crate::trace::SliceUsage;
use ready::ReadyQueues;

/// Index of a context slot in a worker's pool.
pub(crate) type TaskId = usize;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TaskState {
    /// The slot holds no task.
    Free,
    /// Running now.
    Running,
    /// Paused by a preemption; in its level's ready queue.
    Preempted,
    /// Waiting for a wake; in no queue.
    Parked,
    /// Woken after parking; in its level's ready queue.
    Woken,
}

/// One slot: the task it holds and what has happened to it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Task {
    pub(crate) state: TaskState,
    pub(crate) priority: Priority,
    /// The group whose share its running time counts against.
    pub(crate) group: Group,
    /// Raises by waiters (priority inheritance): how many at each level.
    raised: [u16; Priority::LEVELS],
    /// Counts the tasks this slot has held; part of wake tokens.
    pub(crate) serial: u32,
    pub(crate) started: Instant,
    pub(crate) preemptions: u32,
    /// Time paused by preemption, finished pauses only.
    pub(crate) preempted: Duration,
    /// Time parked, finished waits only.
    pub(crate) waited: Duration,
    /// When the current pause or wait began.
    since: Instant,
    /// Single-queue mode (quantum policy without two queues): it runs once this many new jobs of
    /// its level have started (the table's count; the jobs queued when it was preempted go
    /// first). A count rather than a number per task to decrement: with hundreds of preempted
    /// tasks queued, decrementing each at every start made starting a job cost microseconds.
    runs_after: u64,
    /// Its wake arrived before its park was recorded (see [`TaskTable::wake`]).
    woken_early: bool,
    /// Paused for more urgent work before its slice was up: it continues before new work of its
    /// level (which would otherwise go first under the quantum policy's two queues).
    keeps_turn: bool,
    /// What its traced slices counted (see `crate::trace`).
    pub(crate) usage: SliceUsage,
}

impl Task {
    /// A slot with nothing yet happened to its task.
    fn fresh(
        state: TaskState,
        priority: Priority,
        group: Group,
        serial: u32,
        now: Instant,
    ) -> Self {
        Task {
            state,
            priority,
            group,
            raised: [0; Priority::LEVELS],
            serial,
            started: now,
            preemptions: 0,
            preempted: Duration::ZERO,
            waited: Duration::ZERO,
            since: now,
            runs_after: 0,
            woken_early: false,
            keeps_turn: false,
            usage: SliceUsage::default(),
        }
    }

    /// The level it runs at: its own, or the highest a waiter raised it to.
    pub(crate) fn effective(&self) -> Priority {
        Priority::ALL
            .into_iter()
            .rev()
            .find(|p| self.raised[p.level()] > 0)
            .map_or(self.priority, |raised| raised.max(self.priority))
    }
}

/// What a task's time went to, when it ends.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TaskTimes {
    pub(crate) started: Instant,
    pub(crate) preemptions: u32,
    pub(crate) preempted: Duration,
    pub(crate) waited: Duration,
    pub(crate) usage: SliceUsage,
}

/// The wake token of a slot's current task.
pub(crate) fn token(id: TaskId, serial: u32) -> u64 {
    ((id as u64) << 32) | u64::from(serial)
}

fn untoken(token: u64) -> (TaskId, u32) {
    ((token >> 32) as TaskId, token as u32)
}

pub(crate) struct TaskTable {
    slots: Vec<Task>,
    /// Slots whose context exists and is idle.
    free: Vec<TaskId>,
    /// Slots `0..created` have contexts.
    created: usize,
    /// Ready tasks (preempted or woken).
    ready: ReadyQueues,
    /// New jobs started, per level (see `Task::runs_after`).
    started_jobs: [u64; Priority::LEVELS],
    /// Tasks paused by preemption, per (effective) level.
    preempted: [usize; Priority::LEVELS],
}

/// Where a new task runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Claim {
    /// An idle context.
    Reuse(TaskId),
    /// A slot without a context yet: the caller creates one (and calls [`TaskTable::created`]).
    Create(TaskId),
}

impl TaskTable {
    /// A table of `capacity` slots (the pool bound).
    pub(crate) fn new(capacity: usize, now: Instant) -> Self {
        TaskTable {
            slots: vec![
                Task::fresh(
                    TaskState::Free,
                    Priority::LOW,
                    Group::of(Priority::LOW),
                    0,
                    now
                );
                capacity
            ],
            free: Vec::new(),
            created: 0,
            ready: ReadyQueues::new(),
            started_jobs: [0; Priority::LEVELS],
            preempted: [0; Priority::LEVELS],
        }
    }

    /// A slot for a new task, if the pool is not exhausted.
    pub(crate) fn claim(&mut self) -> Option<Claim> {
        if let Some(id) = self.free.pop() {
            return Some(Claim::Reuse(id));
        }
        (self.created < self.slots.len()).then_some(Claim::Create(self.created))
    }

    /// The context of slot `id` (claimed with [`Claim::Create`]) now exists.
    pub(crate) fn created(&mut self, id: TaskId) {
        debug_assert_eq!(id, self.created);
        self.created += 1;
    }

    /// The context of slot `id` was created ahead of need and stays idle.
    pub(crate) fn keep_idle(&mut self, id: TaskId) {
        self.free.push(id);
    }

    /// Gives a claimed slot back unused (its context could not be created, or the job was
    /// refused).
    pub(crate) fn unclaim(&mut self, claim: Claim) {
        if let Claim::Reuse(id) = claim {
            self.free.push(id);
        }
    }

    /// A task of `priority` in `group` starts in slot `id`, now running. Returns its wake token.
    pub(crate) fn start(
        &mut self,
        id: TaskId,
        priority: Priority,
        group: Group,
        now: Instant,
    ) -> u64 {
        let slot = &mut self.slots[id];
        debug_assert_eq!(slot.state, TaskState::Free);
        *slot = Task::fresh(
            TaskState::Running,
            priority,
            group,
            slot.serial.wrapping_add(1),
            now,
        );
        token(id, slot.serial)
    }

    pub(crate) fn get(&self, id: TaskId) -> &Task {
        &self.slots[id]
    }

    /// A waiter raised (`up`) the task of `token` to at least `level`, or withdrew such a raise.
    /// A ready task moves to the queue of its new effective level. Returns the task and its
    /// effective level if the token is current (raises of ended tasks change nothing).
    pub(crate) fn raise(&mut self, token: u64, level: u8, up: bool) -> Option<(TaskId, Priority)> {
        let (id, serial) = untoken(token);
        let level = Priority::from_level(usize::from(level))?;
        let slot = self.slots.get_mut(id)?;
        if slot.serial != serial || slot.state == TaskState::Free {
            return None;
        }
        let before = slot.effective();
        let count = &mut slot.raised[level.level()];
        *count = if up {
            count.saturating_add(1)
        } else {
            count.saturating_sub(1)
        };
        let after = slot.effective();
        if after != before && matches!(slot.state, TaskState::Preempted | TaskState::Woken) {
            // Raised into another queue: it owes that level's new jobs nothing.
            slot.runs_after = 0;
            if slot.state == TaskState::Preempted {
                self.preempted[before.level()] -= 1;
                self.preempted[after.level()] += 1;
            }
            if let Some(at) = self.ready.at(before).iter().position(|&t| t == id) {
                self.dequeue(before, at);
                self.enqueue(after, id, false);
            }
        }
        Some((id, after))
    }

    /// The running task `id` is paused by a preemption; it joins its level's ready queue, behind
    /// `ahead` new jobs (counted only where one queue is emulated; see [`Self::head_ready`]).
    pub(crate) fn preempt(&mut self, id: TaskId, now: Instant, ahead: usize) {
        let slot = &mut self.slots[id];
        assert_eq!(
            slot.state,
            TaskState::Running,
            "only a running task is preempted"
        );
        slot.state = TaskState::Preempted;
        slot.since = now;
        let level = slot.effective().level();
        slot.runs_after = self.started_jobs[level] + ahead as u64;
        self.preempted[level] += 1;
        self.enqueue(Priority::ALL[level], id, false);
    }

    /// Like [`preempt`](Self::preempt) for a task paused for more urgent work: it goes to the
    /// front of its level and continues before new work of its level.
    pub(crate) fn preempt_for_urgent(&mut self, id: TaskId, now: Instant) {
        self.preempt(id, now, 0);
        let level = self.slots[id].effective();
        let back = self.ready.at(level).len() - 1;
        self.dequeue(level, back);
        self.enqueue(level, id, true);
        self.slots[id].keeps_turn = true;
    }

    /// The first ready task of `level` in `group` and how many new jobs must start before it.
    pub(crate) fn head_ready(&self, level: Priority, group: Group) -> Option<(TaskId, usize)> {
        let started = self.started_jobs[level.level()];
        self.ready
            .at(level)
            .iter()
            .find(|&&id| self.slots[id].group == group)
            .map(|&id| {
                (
                    id,
                    self.slots[id].runs_after.saturating_sub(started) as usize,
                )
            })
    }

    /// The first task of `level` in `group` that is ready because it was woken (not paused by a
    /// preemption). Under the quantum policy's two queues it is new work to its level: a
    /// transaction block woken for its client's next statement, or a lock waiter granted its
    /// lock, has not had its share yet, so it goes before tasks paused for their turn.
    pub(crate) fn first_woken(&self, level: Priority, group: Group) -> Option<TaskId> {
        self.ready.at(level).iter().copied().find(|&id| {
            let slot = &self.slots[id];
            slot.group == group && slot.state == TaskState::Woken
        })
    }

    /// The first ready task of `level` if it continues before anything else of its level (it was
    /// paused for more urgent work; see [`Self::preempt_for_urgent`]).
    pub(crate) fn turn_kept(&self, level: Priority) -> Option<TaskId> {
        let &id = self.ready.at(level).front()?;
        self.slots[id].keeps_turn.then_some(id)
    }

    /// The groups with ready tasks at `level`.
    pub(crate) fn ready_groups(&self, level: Priority) -> impl Iterator<Item = Group> + '_ {
        self.ready.groups(level)
    }

    /// Task `id` joins the ready queue of `level`, at the back (or the front).
    fn enqueue(&mut self, level: Priority, id: TaskId, front: bool) {
        self.ready.push(level, id, self.slots[id].group, front);
    }

    /// Takes the task at position `at` out of the ready queue of `level`.
    fn dequeue(&mut self, level: Priority, at: usize) -> Option<TaskId> {
        let slots = &self.slots;
        self.ready.remove(level, at, |id| slots[id].group)
    }

    /// A new job of `level` started: every ready task of that level has one job fewer ahead.
    pub(crate) fn new_job_started(&mut self, level: Priority) {
        self.started_jobs[level.level()] += 1;
    }

    /// Tasks ready to continue, at any level.
    pub(crate) fn ready_count(&self) -> usize {
        self.ready.len()
    }

    /// The running task `id` waits for a wake (ready at once if its wake came early).
    pub(crate) fn park(&mut self, id: TaskId, now: Instant) {
        let slot = &mut self.slots[id];
        assert_eq!(slot.state, TaskState::Running, "only a running task parks");
        slot.state = TaskState::Parked;
        slot.since = now;
        if std::mem::take(&mut slot.woken_early) {
            self.make_woken(id);
        }
    }

    /// A wake with `token` arrived: a parked task it belongs to becomes ready. Returns its level
    /// and group if it did (tokens of ended tasks, and second wakes, change nothing).
    ///
    /// A task sends its token only once it has announced its park, but the park is recorded
    /// here only when its context has switched out: a wake for a task still running (or paused
    /// on its way to the switch) is kept for its park, not dropped, or the task would wait for a
    /// wake that has already come.
    pub(crate) fn wake(&mut self, token: u64) -> Option<(Priority, Group)> {
        let (id, serial) = untoken(token);
        let slot = self.slots.get_mut(id)?;
        if slot.serial != serial {
            return None;
        }
        match slot.state {
            TaskState::Parked => Some((self.make_woken(id), self.slots[id].group)),
            TaskState::Running | TaskState::Preempted => {
                slot.woken_early = true;
                None
            }
            TaskState::Free | TaskState::Woken => None,
        }
    }

    /// The parked task `id` joins its ready queue; returns its level.
    fn make_woken(&mut self, id: TaskId) -> Priority {
        let slot = &mut self.slots[id];
        slot.state = TaskState::Woken;
        slot.runs_after = 0;
        let level = slot.effective();
        self.enqueue(level, id, false);
        level
    }

    /// The ready task `id` (taken from a queue) runs again: its pause or wait ends now.
    pub(crate) fn resume(&mut self, id: TaskId, now: Instant) {
        let slot = &mut self.slots[id];
        let away = now.saturating_duration_since(slot.since);
        match slot.state {
            TaskState::Preempted => {
                slot.preemptions += 1;
                slot.preempted += away;
            }
            TaskState::Woken => slot.waited += away,
            other => panic!("task {id} resumed while {other:?}"),
        }
        slot.state = TaskState::Running;
        slot.keeps_turn = false;
    }

    /// The running task `id` has ended; its slot is free again.
    pub(crate) fn finish(&mut self, id: TaskId) -> TaskTimes {
        let slot = &mut self.slots[id];
        assert_eq!(slot.state, TaskState::Running, "only a running task ends");
        slot.state = TaskState::Free;
        self.free.push(id);
        TaskTimes {
            started: slot.started,
            preemptions: slot.preemptions,
            preempted: slot.preempted,
            waited: slot.waited,
            usage: slot.usage,
        }
    }

    /// What task `id` has been through so far (it is still running).
    pub(crate) fn times(&self, id: TaskId) -> TaskTimes {
        let slot = &self.slots[id];
        TaskTimes {
            started: slot.started,
            preemptions: slot.preemptions,
            preempted: slot.preempted,
            waited: slot.waited,
            usage: slot.usage,
        }
    }

    /// A traced slice of task `id` ended: what its thread counted, and its longest region.
    pub(crate) fn add_usage(&mut self, id: TaskId, slice: &ThreadUsage, longest_region_ns: u64) {
        self.slots[id].usage.add(slice, longest_region_ns);
    }

    /// The most urgent level with a ready task.
    pub(crate) fn highest_ready(&self) -> Option<Priority> {
        self.ready.highest()
    }

    /// The next ready task of `level`.
    pub(crate) fn pop_ready(&mut self, level: Priority) -> Option<TaskId> {
        let id = self.dequeue(level, 0)?;
        self.left_queue(id, level);
        Some(id)
    }

    /// Takes ready task `id` of `level` out of its queue (it is about to run).
    pub(crate) fn take_ready(&mut self, level: Priority, id: TaskId) {
        let at = self
            .ready
            .at(level)
            .iter()
            .position(|&t| t == id)
            .expect("the task is ready at this level");
        self.dequeue(level, at);
        self.left_queue(id, level);
    }

    /// Task `id` left the ready queue of `level` (it is about to run).
    fn left_queue(&mut self, id: TaskId, level: Priority) {
        if self.slots[id].state == TaskState::Preempted {
            self.preempted[level.level()] -= 1;
        }
    }

    /// Time spent paused by preemption, the pause in progress included.
    pub(crate) fn preempted_until(&self, id: TaskId, now: Instant) -> Duration {
        let slot = &self.slots[id];
        match slot.state {
            TaskState::Preempted => slot.preempted + now.saturating_duration_since(slot.since),
            _ => slot.preempted,
        }
    }

    /// PreemptDB's starvation level of task `id`: the share of its life so far spent paused by
    /// preemption, the pause in progress included.
    pub(crate) fn starvation(&self, id: TaskId, now: Instant) -> f64 {
        let life = now.saturating_duration_since(self.slots[id].started);
        self.preempted_until(id, now).as_secs_f64() / life.as_secs_f64().max(1e-9)
    }

    /// The most urgent preempted task above level `above` whose starvation level has reached
    /// `threshold`, taken out of its ready queue: it continues before anything else of its
    /// level and above. (The least urgent level with work is protected as a class instead; see
    /// `starvation`.)
    pub(crate) fn take_starved(
        &mut self,
        now: Instant,
        threshold: f64,
        above: Priority,
    ) -> Option<TaskId> {
        for level in (above.level() + 1..Priority::LEVELS).rev() {
            let found = self.ready.at(Priority::ALL[level]).iter().position(|&id| {
                self.slots[id].state == TaskState::Preempted
                    && self.starvation(id, now) >= threshold
            });
            if let Some(at) = found {
                let id = self.dequeue(Priority::ALL[level], at)?;
                self.left_queue(id, Priority::ALL[level]);
                return Some(id);
            }
        }
        None
    }

    /// How long ready task `id` has waited to continue (since its pause or its wake).
    pub(crate) fn paused_for(&self, id: TaskId, now: Instant) -> Duration {
        now.saturating_duration_since(self.slots[id].since)
    }

    /// True if a task of `level` is ready to continue.
    pub(crate) fn has_ready(&self, level: Priority) -> bool {
        !self.ready.at(level).is_empty()
    }

    /// Tasks paused by preemption, per level.
    pub(crate) fn preempted_by_level(&self) -> [usize; Priority::LEVELS] {
        self.preempted
    }

    /// Tasks paused by preemption.
    #[cfg(test)]
    pub(crate) fn preempted_count(&self) -> usize {
        self.preempted.iter().sum()
    }

    /// Started tasks that have not ended.
    #[cfg(test)]
    pub(crate) fn in_flight(&self) -> usize {
        self.created - self.free.len()
    }
}

#[cfg(test)]
mod tests;
