//! New jobs a worker has taken out of its inbox, by level and group, so that the group whose turn
//! it is by weighted shares (`crate::tiers`) starts next, whatever order the jobs arrived in.
//!
//! The inbox stays the place where submitters queue (any thread pushes to it); only the worker
//! moves jobs from there into these queues, and never more per level than the inbox holds, so
//! admission stays bounded: a level whose inbox and staging are both full still refuses work.
//! How many jobs wait here per level is published in the worker's shared part, so that other
//! threads asking "does work wait?" (the quantum timer, a submitter deciding to preempt) see
//! them. Must never hold a job the worker could not start or refuse itself.

use std::sync::atomic::Ordering;

use overtake_priority::{Group, Priority};

use crate::inbox::Inbox;
use crate::job::Scheduled;
use crate::pending::Pending;
use crate::tiers::LevelQueues;

use super::WorkerShared;

pub(super) struct StagedJobs<J> {
    levels: Vec<LevelQueues<Scheduled<J>>>,
    /// Jobs staged per level at most (the inbox's bound for that level).
    bound: [usize; Priority::LEVELS],
    /// Groups whose work this worker has seen (the shared accounting knows them).
    known: Vec<Group>,
}

impl<J> StagedJobs<J> {
    /// Staging that holds at most `urgent` jobs per level, `low` at the lowest.
    pub(super) fn new(urgent: usize, low: usize) -> Self {
        let mut bound = [urgent.max(1); Priority::LEVELS];
        bound[Priority::LOW.level()] = low.max(1);
        StagedJobs {
            levels: (0..Priority::LEVELS)
                .map(|_| LevelQueues::default())
                .collect(),
            bound,
            known: Vec::new(),
        }
    }

    /// Moves jobs of `level` from `inbox` here (as many as there is room for), each counted
    /// runnable for its group in the shared accounting (`pending`).
    pub(super) fn fill(
        &mut self,
        level: Priority,
        inbox: &Inbox<J>,
        group_of: impl Fn(&J) -> Group,
        pending: &Pending<J>,
        shared: &WorkerShared,
    ) {
        let queues = &mut self.levels[level.level()];
        let before = queues.len();
        while queues.len() < self.bound[level.level()] {
            let Some(job) = inbox.pop(level) else { break };
            let group = group_of(&job.job);
            if !self.known.contains(&group) {
                self.known.push(group);
                pending.arrived(group);
            } else if pending.shared(group.tier) {
                pending.arrived(group);
            }
            queues.push(group, job);
        }
        if queues.len() != before {
            shared.staged[level.level()].store(queues.len(), Ordering::Relaxed);
        }
    }

    /// Stages `job` of `group` taken from the pending queue (already counted runnable there).
    pub(super) fn put(
        &mut self,
        level: Priority,
        group: Group,
        job: Scheduled<J>,
        shared: &WorkerShared,
    ) {
        let queues = &mut self.levels[level.level()];
        queues.push(group, job);
        shared.staged[level.level()].store(queues.len(), Ordering::Relaxed);
    }

    /// Whether nothing is staged at `level`.
    pub(super) fn is_empty(&self, level: Priority) -> bool {
        self.levels[level.level()].is_empty()
    }

    /// The groups with jobs staged at `level`.
    pub(super) fn groups(&self, level: Priority) -> impl Iterator<Item = Group> + '_ {
        self.levels[level.level()].groups()
    }

    /// Whether `group` has a job staged at `level`.
    pub(super) fn has(&self, level: Priority, group: Group) -> bool {
        self.levels[level.level()].has(group)
    }

    /// The oldest staged job of `group` at `level`.
    pub(super) fn pop(
        &mut self,
        level: Priority,
        group: Group,
        shared: &WorkerShared,
    ) -> Option<Scheduled<J>> {
        let queues = &mut self.levels[level.level()];
        let job = queues.pop_from(group)?;
        shared.staged[level.level()].store(queues.len(), Ordering::Relaxed);
        Some(job)
    }
}
