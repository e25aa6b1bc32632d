//! How urgent a piece of work is, and which group it belongs to.
//!
//! A [`Priority`] is one of a few ordered levels; a [`Group`] is a tier (a band of levels) and
//! a weight within it ([`group`]). It lives in its own crate, below both the
//! engine (a transaction carries one from begin to end, and lock policies compare them) and the
//! scheduler (a worker runs its most urgent ready task), so that neither depends on the other for
//! it. It must never grow behaviour of either: it is a value, its order, and its names.

#![forbid(unsafe_code)]

pub mod group;

pub use group::{Group, Tier, Weight};

/// How urgent a transaction is: one of [`Priority::LEVELS`] levels, higher is more urgent. The
/// engine records it; the scheduler acts on it (a ready task of a higher level runs before, and
/// preempts, one of a lower level).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Priority(u8);

impl Priority {
    /// Number of levels.
    pub const LEVELS: usize = 4;
    /// Background work that may be paused (analytics, reports, long computations).
    pub const LOW: Priority = Priority(0);
    /// Work that should overtake background work but yield to latency-critical work (e.g. batch
    /// jobs with a deadline).
    pub const MEDIUM: Priority = Priority(1);
    /// Latency-critical work that should overtake lower levels (an order, a payment).
    pub const HIGH: Priority = Priority(2);
    /// The most urgent level (e.g. administrative work that must run now).
    pub const CRITICAL: Priority = Priority(3);

    /// Every level, least urgent first.
    pub const ALL: [Priority; Self::LEVELS] = [
        Priority::LOW,
        Priority::MEDIUM,
        Priority::HIGH,
        Priority::CRITICAL,
    ];

    /// The priority of level `level`, if there is one (`0..LEVELS`).
    pub fn from_level(level: usize) -> Option<Priority> {
        Self::ALL.get(level).copied()
    }

    /// This priority's level, `0..LEVELS`: usable as an index.
    pub fn level(self) -> usize {
        usize::from(self.0)
    }

    /// A short, stable name.
    pub fn as_str(self) -> &'static str {
        ["low", "medium", "high", "critical"][self.level()]
    }

    /// The priority named `name` (as [`as_str`](Self::as_str) gives it, or a level number).
    pub fn parse(name: &str) -> Option<Priority> {
        Self::ALL
            .into_iter()
            .find(|p| p.as_str() == name)
            .or_else(|| name.parse().ok().and_then(Self::from_level))
    }
}

impl std::fmt::Display for Priority {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::Priority;

    #[test]
    fn levels_are_ordered_named_and_parsed_back() {
        assert!(Priority::LOW < Priority::MEDIUM && Priority::HIGH < Priority::CRITICAL);
        for (i, p) in Priority::ALL.into_iter().enumerate() {
            assert_eq!(p.level(), i);
            assert_eq!(Priority::from_level(i), Some(p));
            assert_eq!(Priority::parse(p.as_str()), Some(p));
            assert_eq!(Priority::parse(&i.to_string()), Some(p));
        }
        assert_eq!(Priority::from_level(Priority::LEVELS), None);
        assert_eq!(Priority::parse("urgent"), None);
        assert_eq!(Priority::parse("4"), None);
    }
}
