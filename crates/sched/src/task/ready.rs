//! A worker's ready queues: per priority level, the tasks ready to continue (paused by a
//! preemption, or woken after parking) in the order they became ready, and per level how many of
//! them each group has, so that choosing whose turn it is (see `crate::tiers`) need not walk a
//! queue.
//!
//! Bookkeeping only: it knows task ids and their groups, never a task's state or times (the task
//! table keeps those and decides where a task goes). It must never hold a task twice.

use std::collections::VecDeque;

use overtake_priority::{Group, Priority};

use super::TaskId;

pub(crate) struct ReadyQueues {
    /// Ready tasks, per level.
    queues: Vec<VecDeque<TaskId>>,
    /// Per level, how many of its ready tasks each group has (groups with none are removed).
    groups: Vec<Vec<(Group, usize)>>,
}

impl ReadyQueues {
    pub(super) fn new() -> Self {
        ReadyQueues {
            queues: vec![VecDeque::new(); Priority::LEVELS],
            groups: vec![Vec::new(); Priority::LEVELS],
        }
    }

    /// Task `id` of `group` joins the queue of `level`, at the back (or the front).
    pub(super) fn push(&mut self, level: Priority, id: TaskId, group: Group, front: bool) {
        debug_assert!(
            !self.queues[level.level()].contains(&id),
            "task {id} queued twice"
        );
        let queue = &mut self.queues[level.level()];
        if front {
            queue.push_front(id);
        } else {
            queue.push_back(id);
        }
        let counts = &mut self.groups[level.level()];
        match counts.iter_mut().find(|(g, _)| *g == group) {
            Some((_, n)) => *n += 1,
            None => counts.push((group, 1)),
        }
    }

    /// Takes the task at position `at` out of the queue of `level` (`group_of` names its group).
    pub(super) fn remove(
        &mut self,
        level: Priority,
        at: usize,
        group_of: impl FnOnce(TaskId) -> Group,
    ) -> Option<TaskId> {
        let id = self.queues[level.level()].remove(at)?;
        let group = group_of(id);
        let counts = &mut self.groups[level.level()];
        let i = counts
            .iter()
            .position(|(g, _)| *g == group)
            .expect("a ready task's group is counted");
        counts[i].1 -= 1;
        if counts[i].1 == 0 {
            counts.swap_remove(i);
        }
        Some(id)
    }

    /// The tasks ready at `level`, first to continue first.
    pub(super) fn at(&self, level: Priority) -> &VecDeque<TaskId> {
        &self.queues[level.level()]
    }

    /// The groups with ready tasks at `level`.
    pub(super) fn groups(&self, level: Priority) -> impl Iterator<Item = Group> + '_ {
        self.groups[level.level()].iter().map(|&(g, _)| g)
    }

    /// Tasks ready at any level.
    pub(super) fn len(&self) -> usize {
        self.queues.iter().map(VecDeque::len).sum()
    }

    /// The most urgent level with a ready task.
    pub(super) fn highest(&self) -> Option<Priority> {
        Priority::ALL
            .into_iter()
            .rev()
            .find(|p| !self.queues[p.level()].is_empty())
    }
}
