//! What a worker runs next, and whether waiting work should take the worker from the running task.
//!
//! The most urgent level with work goes first. Within a level, the group whose turn it is by
//! weighted virtual runtime across all workers (`crate::pending`) — one group, as when nobody
//! names groups, makes this no choice at all — and within the
//! group a ready task before new jobs, except under `Quantum` (with two queues new jobs go first,
//! Aspen, where a task woken after a wait counts as new work; with one queue a preempted task waits
//! for the jobs queued when it was preempted). A task
//! paused for more urgent work continues before anything else of its level. Under starvation
//! control the protected work may be owed the worker first (see `starvation`). Work no worker
//! owns yet (`crate::pending`) is taken when the worker has nothing else to run, or at a
//! quantum's end if its group is further behind.
//!
//! Runs on the worker's thread, inside non-preemptible regions. Must never block or read another
//! worker's state.

use std::time::Instant;

use overtake_priority::{Priority, Tier};
use overtake_runtime::NoPreemptGuard;

use crate::job::Executor;
use crate::pending::Choice;
use crate::policy::Policy;
use crate::starvation;
use crate::task::TaskTable;

use super::{Next, WorkerCore};

impl<E: Executor> WorkerCore<E> {
    /// True if new jobs of `level` wait (in the inbox, taken out of it to start next, or in the
    /// pending queue any worker takes from).
    pub(super) fn has_new(&self, level: Priority) -> bool {
        self.inbox.has(level) || self.shared.staged(level) > 0 || self.pending.has(level)
    }

    /// True if a level above `level` has a ready task or a new job.
    pub(super) fn more_urgent_than(&self, level: Priority) -> bool {
        let tasks = self.tasks.borrow();
        Priority::ALL
            .into_iter()
            .filter(|&p| p > level)
            .any(|p| tasks.highest_ready().is_some_and(|r| r >= p) || self.has_new(p))
    }

    /// True if work of `level` or above waits (a ready task or a new job).
    pub(super) fn work_waiting_at_or_above(&self, level: Priority) -> bool {
        let tasks = self.tasks.borrow();
        tasks.highest_ready().is_some_and(|r| r >= level)
            || Priority::ALL
                .into_iter()
                .filter(|&p| p >= level)
                .any(|p| self.has_new(p))
    }

    /// True if this worker applies starvation control (see `starvation`).
    pub(super) fn controls_starvation(&self) -> bool {
        self.config.policy == Policy::Preempt
            && starvation::limits(self.config.starvation_threshold)
    }

    /// The least and the most urgent levels that have waiting work (ready tasks or new jobs).
    pub(super) fn waiting_span(&self, tasks: &TaskTable) -> Option<(Priority, Priority)> {
        let has = |p: Priority| tasks.has_ready(p) || self.has_new(p);
        let lowest = Priority::ALL.into_iter().find(|&p| has(p))?;
        let highest = Priority::ALL.into_iter().rev().find(|&p| has(p))?;
        Some((lowest, highest))
    }

    /// The most urgent thing to run (see the module's comment).
    pub(super) fn pick(&self) -> Option<Next<E::Job>> {
        let _region = NoPreemptGuard::new();
        let now = Instant::now();
        let mut tasks = self.tasks.borrow_mut();
        if self.controls_starvation()
            && let Some((lowest, highest)) = self.waiting_span(&tasks)
        {
            let threshold = self.config.starvation_threshold;
            let level = self.shared.starvation.level(self.clock.nanos(now));
            if lowest < highest
                && starvation::boundary_choice(threshold, level, lowest, highest) == lowest
                && let Some(next) = self.pick_at(&mut tasks, lowest, now, false)
            {
                return Some(next);
            }
            if let Some(id) = tasks.take_starved(now, threshold, lowest) {
                return Some(Next::Resume(id));
            }
        }
        let quantum = self.config.policy == Policy::Quantum;
        Priority::ALL
            .into_iter()
            .rev()
            .find_map(|level| self.pick_at(&mut tasks, level, now, quantum))
    }

    /// What runs next at `level`, if it has work. `quantum`: the quantum policy's order within a
    /// group (else a ready task before new jobs).
    fn pick_at(
        &self,
        tasks: &mut TaskTable,
        level: Priority,
        now: Instant,
        quantum: bool,
    ) -> Option<Next<E::Job>> {
        let mut staged = self.staged.borrow_mut();
        if self.inbox.has(level) {
            let exec = &self.exec;
            staged.fill(
                level,
                &self.inbox,
                |job| exec.group(job),
                &self.pending,
                &self.shared,
            );
        }
        if let Some(id) = tasks.turn_kept(level) {
            tasks.take_ready(level, id);
            return Some(Next::Resume(id));
        }
        // Work no worker owns is taken by one with nothing else to run here, or, under the
        // quantum policy, as new work that may go before a paused task at a quantum's end; one
        // job at a time, so that no worker hoards what another could start.
        let may_take = staged.is_empty(level)
            && (!tasks.has_ready(level) || self.config.policy == Policy::Quantum);
        let mut local = self.candidates.borrow_mut();
        local.clear();
        local.extend(tasks.ready_groups(level).chain(staged.groups(level)));
        // A task lifted out of its group's tier (a background lock holder raised by a
        // time-sensitive waiter) goes first: the waiter waits for it, and tiers are never
        // compared by share.
        let lifted = local.iter().find(|g| g.tier != Tier::of(level)).copied();
        let group = match lifted {
            Some(group) => group,
            None => match self.pending.choose(level, &local, may_take)? {
                Choice::Local(group) => group,
                Choice::Taken(group, job) => {
                    staged.put(level, group, job, &self.shared);
                    group
                }
            },
        };
        let head = tasks.head_ready(level, group);
        let has_new = staged.has(level, group);
        // Some(to_end) if a ready task goes first; to_end: it was paused too long.
        let resume = match head {
            None => None,
            Some(_) if !quantum => Some(false),
            Some((id, _)) if self.config.two_queues => {
                let woken = tasks.first_woken(level, group);
                if woken != Some(id)
                    && tasks.paused_for(id, now) >= self.config.paused_age_limit
                    && (has_new || woken.is_some())
                {
                    Some(true)
                } else if let Some(woken) = woken {
                    // New work to its level, as a job not yet started is.
                    tasks.take_ready(level, woken);
                    return Some(Next::Resume(woken));
                } else {
                    (!has_new).then_some(false)
                }
            }
            Some((_, ahead)) => (ahead == 0 || !has_new).then_some(false),
        };
        if let (Some(to_end), Some((id, _))) = (resume, head) {
            tasks.take_ready(level, id);
            return Some(if to_end {
                Next::ResumeToEnd(id)
            } else {
                Next::Resume(id)
            });
        }
        let job = staged.pop(level, group, &self.shared)?;
        tasks.new_job_started(level);
        Some(Next::Start(job))
    }
}
