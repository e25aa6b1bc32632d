//! Work waiting at one level, by group: first come first served within a group, and the group
//! whose turn it is by weighted virtual runtime ([`Shares`]) across groups.
//!
//! A worker keeps one per level for what it has taken from its inbox and for its started tasks
//! that are ready again; which group goes next is [`LevelQueues::pop_next`]'s choice.

use std::collections::{BTreeMap, VecDeque};

use overtake_priority::Group;

use super::Shares;

/// Items of one level, by group.
#[derive(Debug)]
pub struct LevelQueues<T> {
    by_group: BTreeMap<Group, VecDeque<T>>,
    len: usize,
}

impl<T> Default for LevelQueues<T> {
    fn default() -> Self {
        LevelQueues {
            by_group: BTreeMap::new(),
            len: 0,
        }
    }
}

impl<T> LevelQueues<T> {
    /// Queues `item` of `group` behind the group's others.
    pub fn push(&mut self, group: Group, item: T) {
        self.by_group.entry(group).or_default().push_back(item);
        self.len += 1;
    }

    /// Puts `item` of `group` in front of the group's others (work paused for more urgent work
    /// keeps its turn).
    pub fn push_front(&mut self, group: Group, item: T) {
        self.by_group.entry(group).or_default().push_front(item);
        self.len += 1;
    }

    /// Items waiting.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing waits.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The groups with items waiting.
    pub fn groups(&self) -> impl Iterator<Item = Group> + '_ {
        self.by_group
            .iter()
            .filter(|(_, q)| !q.is_empty())
            .map(|(g, _)| *g)
    }

    /// Whether `group` has items waiting.
    pub fn has(&self, group: Group) -> bool {
        self.by_group.get(&group).is_some_and(|q| !q.is_empty())
    }

    /// The first item of `group`.
    pub fn pop_from(&mut self, group: Group) -> Option<T> {
        let queue = self.by_group.get_mut(&group)?;
        let item = queue.pop_front()?;
        if queue.is_empty() {
            self.by_group.remove(&group);
        }
        self.len -= 1;
        Some(item)
    }

    /// The first item of the group `shares` says is owed the most (the least virtual runtime
    /// among the groups waiting here), and its group.
    pub fn pop_next(&mut self, shares: &Shares) -> Option<(Group, T)> {
        let group = shares.least_of(self.groups())?;
        self.pop_from(group).map(|item| (group, item))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use overtake_priority::{Tier, Weight};

    use super::*;

    fn group(weight: u32) -> Group {
        Group::new(Tier::TimeSensitive, Weight::new(weight).expect("weight"))
    }

    #[test]
    fn the_group_owed_the_most_goes_first_and_order_holds_within_a_group() {
        let (a, b) = (group(100), group(300));
        let mut shares = Shares::new(Duration::from_micros(200));
        let mut queues = LevelQueues::default();
        for i in 0..4 {
            queues.push(a, ("a", i));
            shares.add(a);
            queues.push(b, ("b", i));
            shares.add(b);
        }
        // Each item runs 300 us: b's virtual time advances a third as fast as a's.
        let mut order = Vec::new();
        while let Some((g, item)) = queues.pop_next(&shares) {
            shares.charge(g, Duration::from_micros(300));
            shares.remove(g);
            order.push(item);
        }
        assert!(queues.is_empty());
        // b (heavier) first on the tie, then a (b is ahead), then b three times per a.
        assert_eq!(
            order,
            [
                ("b", 0),
                ("a", 0),
                ("b", 1),
                ("b", 2),
                ("b", 3),
                ("a", 1),
                ("a", 2),
                ("a", 3)
            ]
        );
    }

    #[test]
    fn work_paused_for_urgent_work_keeps_its_turn_in_its_group() {
        let a = group(100);
        let shares = {
            let mut s = Shares::new(Duration::from_micros(200));
            s.add(a);
            s
        };
        let mut queues = LevelQueues::default();
        queues.push(a, 1);
        queues.push(a, 2);
        queues.push_front(a, 0);
        assert_eq!(queues.len(), 3);
        let got: Vec<i32> =
            std::iter::from_fn(|| queues.pop_next(&shares).map(|(_, i)| i)).collect();
        assert_eq!(got, [0, 1, 2]);
    }
}
