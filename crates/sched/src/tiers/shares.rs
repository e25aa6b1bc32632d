//! Weighted shares within a tier by virtual runtime (UFS's group level, EEVDF's idea): each
//! group's virtual runtime advances by the time its work ran, scaled by the default weight over
//! its own, and the runnable group with the least virtual runtime runs next; over time each
//! group's share of the time is its weight over the runnable groups' total.
//!
//! A group that becomes runnable again may not bring credit from the time it was idle: its
//! virtual runtime is raised to at least the least runnable one's minus one slice (UFS's clamp),
//! so it can run ahead of the others by one slice at most.
//!
//! Pure bookkeeping, no clock: the caller says how long work ran. Must never compare groups of
//! different tiers (tiers are strict; the caller asks per tier).

use std::collections::HashMap;
use std::time::Duration;

use overtake_priority::{Group, Tier, Weight};

/// A group's standing.
#[derive(Clone, Copy, Debug, Default)]
struct Standing {
    /// Weighted virtual runtime, in nanoseconds at the default weight.
    vruntime: u128,
    /// Pieces of its work waiting or running (0: not runnable).
    runnable: usize,
}

/// The virtual runtimes of the groups of both tiers.
#[derive(Debug)]
pub struct Shares {
    groups: HashMap<Group, Standing>,
    /// How far behind the least runnable group a returning group may start.
    slice: u128,
    /// Per tier, the least virtual runtime seen among its runnable groups (where a group that
    /// becomes runnable with none other runnable starts).
    floor: [u128; 2],
}

fn tier_index(tier: Tier) -> usize {
    match tier {
        Tier::Background => 0,
        Tier::TimeSensitive => 1,
    }
}

impl Shares {
    /// Bookkeeping where a returning group may start at most `slice` ahead.
    pub fn new(slice: Duration) -> Shares {
        Shares {
            groups: HashMap::new(),
            slice: slice.as_nanos(),
            floor: [0; 2],
        }
    }

    /// One more piece of `group`'s work is waiting (or running).
    pub fn add(&mut self, group: Group) {
        let floor = self
            .least_runnable(group.tier)
            .unwrap_or(self.floor[tier_index(group.tier)]);
        let s = self.groups.entry(group).or_default();
        if s.runnable == 0 {
            s.vruntime = s.vruntime.max(floor.saturating_sub(self.slice));
        }
        s.runnable += 1;
    }

    /// One piece of `group`'s work ended (or stopped waiting for a worker: it parked).
    pub fn remove(&mut self, group: Group) {
        let floor = self.least_runnable(group.tier);
        if let Some(s) = self.groups.get_mut(&group) {
            s.runnable = s.runnable.saturating_sub(1);
        }
        if let Some(f) = floor {
            let i = tier_index(group.tier);
            self.floor[i] = self.floor[i].max(f);
        }
    }

    /// `group`'s work ran for `ran`.
    pub fn charge(&mut self, group: Group, ran: Duration) {
        let s = self.groups.entry(group).or_default();
        s.vruntime +=
            ran.as_nanos() * u128::from(Weight::DEFAULT.get()) / u128::from(group.weight.get());
    }

    /// The runnable group of `tier` that runs next: the least virtual runtime (ties: the
    /// heavier, then the lower weight's order, so the choice is deterministic).
    pub fn next(&self, tier: Tier) -> Option<Group> {
        self.groups
            .iter()
            .filter(|(g, s)| g.tier == tier && s.runnable > 0)
            .min_by_key(|(g, s)| (s.vruntime, std::cmp::Reverse(g.weight)))
            .map(|(g, _)| *g)
    }

    /// Of `groups` (one tier), the one with the least virtual runtime (ties: the heavier). A
    /// group never seen counts as just arrived: at the tier's floor.
    pub fn least_of(&self, groups: impl Iterator<Item = Group>) -> Option<Group> {
        groups.min_by_key(|g| {
            let v = self.groups.get(g).map_or_else(
                || {
                    self.least_runnable(g.tier)
                        .unwrap_or(self.floor[tier_index(g.tier)])
                },
                |s| s.vruntime,
            );
            (v, std::cmp::Reverse(g.weight))
        })
    }

    /// Whether `other` should take the worker from `running` (both runnable, one tier): its
    /// virtual runtime is behind by more than one slice.
    pub fn behind(&self, other: Group, running: Group) -> bool {
        match (self.groups.get(&other), self.groups.get(&running)) {
            (Some(o), Some(r)) => o.vruntime + self.slice < r.vruntime,
            _ => false,
        }
    }

    /// Whether `other` goes before `running` by [`least_of`](Self::least_of)'s order (one tier).
    pub fn precedes(&self, other: Group, running: Group) -> bool {
        self.least_of([running, other].into_iter()) == Some(other) && other != running
    }

    fn least_runnable(&self, tier: Tier) -> Option<u128> {
        self.groups
            .iter()
            .filter(|(g, s)| g.tier == tier && s.runnable > 0)
            .map(|(_, s)| s.vruntime)
            .min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(tier: Tier, weight: u32) -> Group {
        Group::new(tier, Weight::new(weight).expect("weight"))
    }

    /// Runs `rounds` slices of `tier` among always-runnable `groups`, each slice as long as
    /// `length(round)`; returns each group's time.
    fn share(groups: &[Group], rounds: usize, length: impl Fn(usize) -> u64) -> Vec<f64> {
        let mut shares = Shares::new(Duration::from_micros(200));
        for g in groups {
            shares.add(*g);
        }
        let mut ran = vec![0u64; groups.len()];
        for round in 0..rounds {
            let g = shares.next(groups[0].tier).expect("runnable");
            let i = groups.iter().position(|x| *x == g).expect("known");
            let d = length(round);
            shares.charge(g, Duration::from_micros(d));
            ran[i] += d;
        }
        let total: u64 = ran.iter().sum();
        ran.iter().map(|&r| r as f64 / total as f64).collect()
    }

    #[test]
    fn always_runnable_groups_share_in_proportion_to_their_weights() {
        let ts = Tier::TimeSensitive;
        for (a, b) in [(2, 3), (6_670, 10_000), (100, 150), (1, 10)] {
            // Slices of uneven lengths (a deterministic sequence of 50-549 us).
            let got = share(&[group(ts, a), group(ts, b)], 20_000, |r| {
                50 + (r as u64 * 7_919) % 500
            });
            let want = f64::from(a) / f64::from(a + b);
            assert!(
                (got[0] - want).abs() < 0.01,
                "{a}:{b}: share {:.4}, want {want:.4}",
                got[0]
            );
        }
    }

    #[test]
    fn a_group_back_from_idle_brings_no_credit() {
        let ts = Tier::TimeSensitive;
        let (a, b) = (group(ts, 100), group(ts, 200));
        let mut shares = Shares::new(Duration::from_micros(200));
        shares.add(a);
        // A runs alone for a second.
        for _ in 0..5_000 {
            assert_eq!(shares.next(ts), Some(a));
            shares.charge(a, Duration::from_micros(200));
        }
        // B arrives: it may run ahead by at most one slice, then they alternate by weight.
        // 200 us of A's virtual time at B's weight is 400 us: four 100 us slices, and a fifth
        // on the tie (the heavier group goes first).
        shares.add(b);
        let first = runs_first(&mut shares, b);
        assert!((1..=5).contains(&first), "B ran {first} slices first");
        // It leaves, A runs on alone, and B comes back: again at most one slice ahead.
        shares.remove(b);
        for _ in 0..1_000 {
            shares.charge(a, Duration::from_micros(200));
        }
        shares.add(b);
        let again = runs_first(&mut shares, b);
        assert!((1..=5).contains(&again), "B ran {again} slices first");
    }

    /// Slices of 100 us `g` runs before another group's turn.
    fn runs_first(shares: &mut Shares, g: Group) -> usize {
        let mut n = 0;
        while shares.next(g.tier) == Some(g) {
            shares.charge(g, Duration::from_micros(100));
            n += 1;
            assert!(n < 100, "{g} ran on credit from its idle time");
        }
        n
    }

    #[test]
    fn tiers_are_never_compared() {
        let bg = group(Tier::Background, 10_000);
        let ts = group(Tier::TimeSensitive, 1);
        let mut shares = Shares::new(Duration::from_micros(200));
        shares.add(bg);
        shares.add(ts);
        shares.charge(ts, Duration::from_secs(10));
        assert_eq!(shares.next(Tier::TimeSensitive), Some(ts));
        assert_eq!(shares.next(Tier::Background), Some(bg));
        shares.remove(ts);
        assert_eq!(shares.next(Tier::TimeSensitive), None);
    }

    #[test]
    fn a_group_far_behind_the_running_one_takes_its_turn() {
        let ts = Tier::TimeSensitive;
        let (a, b) = (group(ts, 100), group(ts, 100));
        let b = Group::new(b.tier, Weight::new(101).expect("weight"));
        let mut shares = Shares::new(Duration::from_micros(200));
        shares.add(a);
        shares.add(b);
        shares.charge(a, Duration::from_micros(150));
        assert!(!shares.behind(b, a), "within one slice");
        shares.charge(a, Duration::from_micros(100));
        assert!(shares.behind(b, a));
        assert!(!shares.behind(a, b));
    }
}
