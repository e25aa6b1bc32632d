//! Groups of work, as UFS has them: a tier (time-sensitive work preempts background work, which
//! only uses capacity that would otherwise idle) and a weight (groups of one tier share the CPU in
//! proportion to their weights, 1 to 10000 as cgroups' `cpu.weight`).
//!
//! A tier is a band of priority levels: background is the lowest level, time-sensitive every
//! level above it. Values only: what a scheduler does with them lives in the scheduler.

use crate::Priority;

/// The two tiers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Tier {
    /// Runs only on capacity time-sensitive work leaves.
    Background,
    /// Preempts background work.
    TimeSensitive,
}

impl Tier {
    /// The tier a priority level belongs to.
    pub fn of(priority: Priority) -> Tier {
        if priority == Priority::LOW {
            Tier::Background
        } else {
            Tier::TimeSensitive
        }
    }

    /// The tier of the threads in a cgroup named `name` (its last path component): `ts-*` is
    /// time-sensitive, anything else background (UFS's rule; what `Group::dir_name` writes).
    pub fn of_cgroup(name: &str) -> Tier {
        let last = name.rsplit('/').next().unwrap_or(name);
        if last.starts_with("ts-") {
            Tier::TimeSensitive
        } else {
            Tier::Background
        }
    }

    /// The level work of this tier runs at unless it says otherwise.
    pub fn default_priority(self) -> Priority {
        match self {
            Tier::Background => Priority::LOW,
            Tier::TimeSensitive => Priority::MEDIUM,
        }
    }

    /// Its name as sessions set it (`SET task_tier = ...`).
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Background => "background",
            Tier::TimeSensitive => "time-sensitive",
        }
    }

    /// The tier named `name` (`time-sensitive` or `background`, any case; `time_sensitive` too).
    pub fn parse(name: &str) -> Option<Tier> {
        match name.trim().to_ascii_lowercase().replace('_', "-").as_str() {
            "background" => Some(Tier::Background),
            "time-sensitive" => Some(Tier::TimeSensitive),
            _ => None,
        }
    }
}

/// A group's share of the CPU within its tier, relative to other groups' (1 to 10000, as
/// cgroups' `cpu.weight`; [`Weight::DEFAULT`] is 100).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Weight(u16);

impl Weight {
    /// The smallest weight.
    pub const MIN: Weight = Weight(1);
    /// The largest weight.
    pub const MAX: Weight = Weight(10_000);
    /// The weight of work that gives none.
    pub const DEFAULT: Weight = Weight(100);

    /// `weight`, if it is within 1 to 10000.
    pub fn new(weight: u32) -> Option<Weight> {
        (1..=10_000)
            .contains(&weight)
            .then_some(Weight(weight as u16))
    }

    /// The weight as a number.
    pub fn get(self) -> u32 {
        u32::from(self.0)
    }
}

impl Default for Weight {
    fn default() -> Self {
        Weight::DEFAULT
    }
}

/// A group: work of one tier and weight. Work given the same (tier, weight) shares one group's
/// share, as tasks in one cgroup do, unless it is numbered apart ([`Group::numbered`]): two
/// applications at equal weight, each with its own share, as two cgroups of equal weight.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Group {
    pub tier: Tier,
    pub weight: Weight,
    /// Which of the groups of this tier and weight (0 unless numbered apart).
    pub number: u16,
}

impl Group {
    /// The group of `tier` with `weight`.
    pub fn new(tier: Tier, weight: Weight) -> Group {
        Group {
            tier,
            weight,
            number: 0,
        }
    }

    /// The group of the same tier and weight numbered `number`: its share is its own.
    pub fn numbered(self, number: u16) -> Group {
        Group { number, ..self }
    }

    /// Its cgroup's name: `ts-<weight>` (time-sensitive) or `bg-<weight>` (background), then
    /// `-<number>` if numbered. An OS-level scheduler reads the tier back from the prefix
    /// ([`Tier::of_cgroup`]) and the weight from the cgroup's own `cpu.weight`.
    pub fn dir_name(self) -> String {
        let tier = match self.tier {
            Tier::TimeSensitive => "ts",
            Tier::Background => "bg",
        };
        match self.number {
            0 => format!("{tier}-{}", self.weight.get()),
            n => format!("{tier}-{}-{n}", self.weight.get()),
        }
    }

    /// The level work asked for at `priority` runs at in this group: `priority` if it lies in
    /// the group's tier, else the tier's default level.
    pub fn level_for(self, priority: Priority) -> Priority {
        if Tier::of(priority) == self.tier {
            priority
        } else {
            self.tier.default_priority()
        }
    }

    /// The group work at `priority` belongs to when it names none: its level's tier, the
    /// default weight.
    pub fn of(priority: Priority) -> Group {
        Group::new(Tier::of(priority), Weight::DEFAULT)
    }
}

impl std::fmt::Display for Group {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.tier.as_str(), self.weight.get())?;
        match self.number {
            0 => Ok(()),
            n => write!(f, "#{n}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiers_are_bands_of_levels_and_parse_from_their_names() {
        assert_eq!(Tier::of(Priority::LOW), Tier::Background);
        for p in [Priority::MEDIUM, Priority::HIGH, Priority::CRITICAL] {
            assert_eq!(Tier::of(p), Tier::TimeSensitive);
        }
        for t in [Tier::Background, Tier::TimeSensitive] {
            assert_eq!(Tier::parse(t.as_str()), Some(t));
            assert_eq!(Tier::of(t.default_priority()), t);
        }
        assert_eq!(Tier::parse(" Time_Sensitive "), Some(Tier::TimeSensitive));
        assert_eq!(Tier::parse("sometimes"), None);
        assert!(Tier::Background < Tier::TimeSensitive);
    }

    #[test]
    fn weights_are_those_of_cgroups() {
        assert_eq!(Weight::new(0), None);
        assert_eq!(Weight::new(10_001), None);
        assert_eq!(Weight::new(1), Some(Weight::MIN));
        assert_eq!(Weight::new(10_000), Some(Weight::MAX));
        assert_eq!(Weight::default().get(), 100);
        assert_eq!(Group::of(Priority::HIGH).to_string(), "time-sensitive/100");
        let bg = Group::new(Tier::Background, Weight::DEFAULT);
        assert_eq!(bg.level_for(Priority::HIGH), Priority::LOW);
        let ts = Group::of(Priority::HIGH);
        assert_eq!(ts.level_for(Priority::LOW), Priority::MEDIUM);
        assert_eq!(ts.level_for(Priority::CRITICAL), Priority::CRITICAL);
        let (one, two) = (ts.numbered(1), ts.numbered(2));
        assert!(one != two && one.tier == two.tier && one.weight == two.weight);
        assert_eq!(two.to_string(), "time-sensitive/100#2");
        assert_eq!(two.dir_name(), "ts-100-2");
        assert_eq!(ts.dir_name(), "ts-100");
        assert_eq!(bg.dir_name(), "bg-100");
        for g in [ts, two, bg] {
            assert_eq!(Tier::of_cgroup(&g.dir_name()), g.tier, "{g}");
        }
        assert_eq!(Tier::of_cgroup("/overtake-7/ts-250"), Tier::TimeSensitive);
        assert_eq!(
            Tier::of_cgroup("/ts-250/worker"),
            Tier::Background,
            "the last component"
        );
        assert_eq!(Tier::of_cgroup("system.slice"), Tier::Background);
    }
}
