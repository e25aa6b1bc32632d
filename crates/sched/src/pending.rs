//! Work no worker owns yet, and the groups' shares across all workers (UFS's tier queues).
//!
//! New work that cannot start at once — background work, which only uses capacity that would
//! otherwise idle, and time-sensitive work when every worker is busy with work at least as
//! urgent — waits here, per level and group, until a worker takes it: one that would otherwise
//! idle, or one whose running task's quantum ended. Which group goes next, here and among the
//! tasks a worker holds, is the one furthest behind its weighted share by the virtual runtime its
//! work has run on any worker (`crate::tiers::Shares`), so groups share the machine by weight
//! wherever their work runs. Tasks never move between workers; only work not yet started does.
//!
//! Any thread pushes (a submitter); workers take and charge, all under one lock taken only inside
//! non-preemptible regions. A tier in which one group was ever seen needs no accounting (there is
//! nobody to share with, and a group that arrives later starts at the others' virtual time), so
//! runs that name no groups never take the lock to charge. Bounded: a full queue refuses work.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use overtake_priority::{Group, Priority, Tier};
use overtake_runtime::{NoPreemptGuard, RegionMutex};

use crate::job::Scheduled;
use crate::tiers::{LevelQueues, Shares};

struct Queued<J> {
    levels: Vec<LevelQueues<Scheduled<J>>>,
    shares: Shares,
    known: Vec<Group>,
}

/// A group as one word, for a worker to publish the group it runs (0: none).
pub(crate) fn group_bits(group: Option<Group>) -> u64 {
    group.map_or(0, |g| {
        1 << 48
            | u64::from(g.tier == Tier::TimeSensitive) << 32
            | u64::from(g.weight.get()) << 16
            | u64::from(g.number)
    })
}

/// The group [`group_bits`] made the word from.
pub(crate) fn group_from_bits(bits: u64) -> Option<Group> {
    if bits == 0 {
        return None;
    }
    let tier = if bits >> 32 & 1 == 1 {
        Tier::TimeSensitive
    } else {
        Tier::Background
    };
    let weight = overtake_priority::Weight::new((bits >> 16 & 0xffff) as u32)?;
    Some(Group::new(tier, weight).numbered((bits & 0xffff) as u16))
}

/// What a worker runs next at a level, by the groups' shares.
pub(crate) enum Choice<J> {
    /// Work of this group it holds (a ready task or a staged job).
    Local(Group),
    /// This job of this group, taken from the queue.
    Taken(Group, Scheduled<J>),
}

pub(crate) struct Pending<J> {
    inner: RegionMutex<Queued<J>>,
    /// Jobs waiting per level (read without the lock by workers deciding whether to look).
    waiting: [AtomicUsize; Priority::LEVELS],
    /// Groups seen per tier (background, time-sensitive).
    groups: [AtomicUsize; 2],
    /// Jobs per level at most.
    bound: [usize; Priority::LEVELS],
}

fn tier_index(tier: Tier) -> usize {
    match tier {
        Tier::Background => 0,
        Tier::TimeSensitive => 1,
    }
}

impl<J> Pending<J> {
    /// A queue of at most `urgent` jobs per level, `low` at the lowest; a group back from idle
    /// starts at most `slice` ahead.
    pub(crate) fn new(urgent: usize, low: usize, slice: Duration) -> Self {
        let mut bound = [urgent.max(1); Priority::LEVELS];
        bound[Priority::LOW.level()] = low.max(1);
        Pending {
            inner: RegionMutex::new(Queued {
                levels: (0..Priority::LEVELS)
                    .map(|_| LevelQueues::default())
                    .collect(),
                shares: Shares::new(slice),
                known: Vec::new(),
            }),
            waiting: Default::default(),
            groups: Default::default(),
            bound,
        }
    }

    /// Queues `job` of `group` at `level`, or gives it back if the queue is full.
    pub(crate) fn push(
        &self,
        level: Priority,
        group: Group,
        job: Scheduled<J>,
    ) -> Result<(), Scheduled<J>> {
        let region = NoPreemptGuard::new();
        let mut inner = self.inner.lock(&region);
        if inner.levels[level.level()].len() >= self.bound[level.level()] {
            return Err(job);
        }
        self.know(&mut inner, group);
        inner.shares.add(group);
        let queues = &mut inner.levels[level.level()];
        queues.push(group, job);
        self.waiting[level.level()].store(queues.len(), Ordering::SeqCst);
        Ok(())
    }

    fn know(&self, inner: &mut Queued<J>, group: Group) {
        if !inner.known.contains(&group) {
            inner.known.push(group);
            // Starts at the tier's current virtual time, not with credit from before it came.
            inner.shares.add(group);
            inner.shares.remove(group);
            self.groups[tier_index(group.tier)].fetch_add(1, Ordering::SeqCst);
        }
    }

    /// `group`'s work reached a worker another way (its inbox): it is known from now on, and
    /// runnable.
    pub(crate) fn arrived(&self, group: Group) {
        let region = NoPreemptGuard::new();
        let mut inner = self.inner.lock(&region);
        self.know(&mut inner, group);
        if self.shared(group.tier) {
            inner.shares.add(group);
        }
    }

    /// Whether groups of `tier` share it (more than one was seen): only then is time accounted.
    pub(crate) fn shared(&self, tier: Tier) -> bool {
        self.groups[tier_index(tier)].load(Ordering::SeqCst) > 1
    }

    /// Whether work of `level` waits (a hint: another worker may take it first).
    pub(crate) fn has(&self, level: Priority) -> bool {
        self.waiting[level.level()].load(Ordering::SeqCst) > 0
    }

    /// Whether work of `level` or above waits.
    pub(crate) fn has_from(&self, level: Priority) -> bool {
        Priority::ALL[level.level()..].iter().any(|&p| self.has(p))
    }

    /// Jobs waiting above the lowest level.
    pub(crate) fn urgent(&self) -> usize {
        self.waiting[1..]
            .iter()
            .map(|w| w.load(Ordering::SeqCst))
            .sum()
    }

    /// Which group runs next at `level`: of the groups of work the worker holds there (`local`,
    /// possibly repeated) and, if `may_take`, of the groups waiting here, the one furthest behind
    /// its share; if that group has a job waiting here, the worker takes it (within the group,
    /// the policy then orders it against the group's paused tasks, as new work). `None`: no work
    /// at all.
    pub(crate) fn choose(
        &self,
        level: Priority,
        local: &[Group],
        may_take: bool,
    ) -> Option<Choice<J>> {
        let may_take = may_take && self.has(level);
        if !may_take && local.iter().all(|g| *g == local[0]) {
            return local.first().map(|&g| Choice::Local(g));
        }
        let region = NoPreemptGuard::new();
        let mut inner = self.inner.lock(&region);
        let Queued { levels, shares, .. } = &mut *inner;
        let queues = &mut levels[level.level()];
        let waiting: Vec<Group> = if may_take {
            queues.groups().collect()
        } else {
            Vec::new()
        };
        let best = shares.least_of(local.iter().chain(&waiting).copied())?;
        if !waiting.contains(&best) {
            return Some(Choice::Local(best));
        }
        let job = queues.pop_from(best)?;
        self.waiting[level.level()].store(queues.len(), Ordering::SeqCst);
        Some(Choice::Taken(best, job))
    }

    /// Whether work of a group that goes before `running` (further behind its share) waits at
    /// `level`: then a worker running `running` there makes way before its quantum ends, as
    /// EEVDF lets a woken task with lag preempt.
    pub(crate) fn waiting_behind(&self, level: Priority, running: Group) -> bool {
        if !self.has(level) || !self.shared(running.tier) {
            return false;
        }
        let region = NoPreemptGuard::new();
        let inner = self.inner.lock(&region);
        inner.levels[level.level()]
            .groups()
            .any(|g| g.tier == running.tier && inner.shares.precedes(g, running))
    }

    /// Work of `group` ran for `ran`; with `ended`, that piece of work is done (or waits for a
    /// wake, claiming no share meanwhile).
    pub(crate) fn charge(&self, group: Group, ran: Duration, ended: bool) {
        if !self.shared(group.tier) {
            return;
        }
        let region = NoPreemptGuard::new();
        let mut inner = self.inner.lock(&region);
        inner.shares.charge(group, ran);
        if ended {
            inner.shares.remove(group);
        }
    }

    /// Work of `group` that waited for a wake is runnable again.
    pub(crate) fn woken(&self, group: Group) {
        if self.shared(group.tier) {
            let region = NoPreemptGuard::new();
            self.inner.lock(&region).shares.add(group);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use overtake_priority::Weight;

    use super::*;

    fn job(n: u32) -> Scheduled<u32> {
        Scheduled::at(n, Instant::now())
    }

    fn take(p: &Pending<u32>, level: Priority, local: &[Group]) -> Option<Group> {
        match p.choose(level, local, true)? {
            Choice::Local(g) => Some(g),
            Choice::Taken(g, _) => Some(g),
        }
    }

    #[test]
    fn taken_work_follows_the_weights_by_time_run_and_the_queue_is_bounded() {
        let bg = |w| Group::new(Tier::Background, Weight::new(w).expect("weight"));
        let (light, heavy) = (bg(100), bg(300));
        let low = Priority::LOW;
        let q = Pending::new(8, 64, Duration::from_micros(100));
        for i in 0..32 {
            assert!(q.push(low, light, job(i)).is_ok());
            assert!(q.push(low, heavy, job(100 + i)).is_ok());
        }
        assert!(q.push(low, light, job(999)).is_err(), "bounded");
        assert!(q.shared(Tier::Background) && !q.shared(Tier::TimeSensitive));
        // Every job runs 1 ms: the heavy group gets three turns per light one.
        let mut turns = (0, 0);
        for _ in 0..32 {
            let g = take(&q, low, &[]).expect("work waits");
            q.charge(g, Duration::from_millis(1), true);
            if g == heavy {
                turns.1 += 1;
            } else {
                turns.0 += 1;
            }
        }
        assert_eq!(turns, (8, 24));
        assert!(q.has(low) && !q.has_from(Priority::MEDIUM));
    }

    #[test]
    fn a_group_is_one_word_and_back() {
        let g = Group::new(Tier::TimeSensitive, Weight::MAX).numbered(7);
        assert_eq!(group_from_bits(group_bits(Some(g))), Some(g));
        let b = Group::new(Tier::Background, Weight::MIN);
        assert_eq!(group_from_bits(group_bits(Some(b))), Some(b));
        assert_eq!(group_from_bits(group_bits(None)), None);
    }

    #[test]
    fn waiting_work_further_behind_than_the_running_group_asks_for_the_worker() {
        let ts = |n| Group::new(Tier::TimeSensitive, Weight::DEFAULT).numbered(n);
        let level = Priority::MEDIUM;
        let q = Pending::new(8, 8, Duration::from_micros(100));
        q.arrived(ts(1));
        assert!(!q.waiting_behind(level, ts(1)), "nothing waits");
        assert!(q.push(level, ts(2), job(1)).is_ok());
        q.charge(ts(1), Duration::from_millis(1), false);
        assert!(q.waiting_behind(level, ts(1)), "2 has run less");
        q.charge(ts(2), Duration::from_millis(2), false);
        assert!(!q.waiting_behind(level, ts(1)), "2 has run more");
        assert!(!q.waiting_behind(Priority::HIGH, ts(1)), "another level");
    }

    #[test]
    fn a_worker_keeps_its_own_work_unless_a_waiting_group_is_further_behind() {
        let ts = |w| Group::new(Tier::TimeSensitive, Weight::new(w).expect("weight"));
        let (mine, other) = (ts(100).numbered(1), ts(100).numbered(2));
        let level = Priority::MEDIUM;
        let q = Pending::new(8, 8, Duration::from_micros(100));
        // Nothing waits: the worker's own group, without accounting.
        assert!(matches!(q.choose(level, &[mine], true), Some(Choice::Local(g)) if g == mine));
        assert!(q.choose(level, &[], true).is_none());
        q.arrived(mine);
        assert!(q.push(level, other, job(1)).is_ok());
        // Mine has run 1 ms; the other group has not run: its job is taken.
        q.charge(mine, Duration::from_millis(1), false);
        assert_eq!(take(&q, level, &[mine]), Some(other));
        assert!(!q.has(level));
        // The other ran 2 ms: mine is behind and keeps the worker.
        q.charge(other, Duration::from_millis(2), false);
        assert!(q.push(level, other, job(2)).is_ok());
        assert_eq!(take(&q, level, &[mine]), Some(mine));
        assert!(q.has(level), "its job still waits");
        // A job of the worker's own group is taken as its new work.
        assert!(q.push(level, mine, job(3)).is_ok());
        assert!(matches!(q.choose(level, &[mine], true), Some(Choice::Taken(g, _)) if g == mine));
    }
}
