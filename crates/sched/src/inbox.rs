//! A worker's inbox: bounded queues of new jobs, one per priority level, that any thread may push
//! to (application threads, the open-loop dispatcher, a task submitting more work) and only the
//! worker pops from.
//!
//! Bounded so that a worker that cannot keep up makes submitters see "overloaded" instead of a
//! queue that grows without limit. Lock-free queues still have a window in which a half-finished
//! push makes a pop spin (the slot is claimed but not yet written), so every push and pop runs
//! inside a non-preemptible region: a task paused half-way through a push would otherwise make its
//! own worker spin for ever.

use crossbeam_queue::ArrayQueue;
use overtake_priority::Priority;
use overtake_runtime::NoPreemptGuard;

use crate::job::Scheduled;

pub(crate) struct Inbox<J> {
    levels: Vec<ArrayQueue<Scheduled<J>>>,
}

impl<J> Inbox<J> {
    /// Room for `low` jobs at the lowest level and `urgent` at every other level (each at least 1).
    pub(crate) fn new(urgent: usize, low: usize) -> Self {
        Inbox {
            levels: Priority::ALL
                .iter()
                .map(|&p| ArrayQueue::new(if p == Priority::LOW { low } else { urgent }.max(1)))
                .collect(),
        }
    }

    /// Adds a job of `level`, or gives it back if that level is full.
    pub(crate) fn push(&self, level: Priority, job: Scheduled<J>) -> Result<(), Scheduled<J>> {
        let _region = NoPreemptGuard::new();
        self.levels[level.level()].push(job)
    }

    /// The oldest job of `level`, if any.
    pub(crate) fn pop(&self, level: Priority) -> Option<Scheduled<J>> {
        let _region = NoPreemptGuard::new();
        self.levels[level.level()].pop()
    }

    /// True if a job of `level` is waiting.
    pub(crate) fn has(&self, level: Priority) -> bool {
        !self.levels[level.level()].is_empty()
    }

    /// Jobs waiting at `level`.
    pub(crate) fn len(&self, level: Priority) -> usize {
        self.levels[level.level()].len()
    }

    /// True if `level` has no room.
    pub(crate) fn is_full(&self, level: Priority) -> bool {
        self.levels[level.level()].is_full()
    }

    /// Jobs waiting above the lowest level (urgent work not yet started).
    pub(crate) fn urgent_queued(&self) -> usize {
        self.levels.iter().skip(1).map(ArrayQueue::len).sum()
    }

    /// Jobs waiting at any level.
    pub(crate) fn queued(&self) -> usize {
        self.levels.iter().map(ArrayQueue::len).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    fn job(n: u32) -> Scheduled<u32> {
        Scheduled::at(n, Instant::now())
    }

    #[test]
    fn bounded_first_in_first_out_per_level() {
        let inbox = Inbox::<u32>::new(2, 1);
        let high = Priority::HIGH;
        assert!(inbox.push(high, job(1)).is_ok());
        assert!(inbox.push(high, job(2)).is_ok());
        assert_eq!(
            inbox.push(high, job(3)).map_err(|j| j.job),
            Err(3),
            "bounded"
        );
        assert!(inbox.is_full(high));
        assert!(inbox.push(Priority::LOW, job(10)).is_ok());
        assert!(inbox.push(Priority::LOW, job(11)).is_err(), "its own bound");
        assert!(inbox.push(Priority::MEDIUM, job(5)).is_ok());
        assert_eq!(
            inbox.urgent_queued(),
            3,
            "everything above the lowest level"
        );
        assert_eq!(inbox.queued(), 4);
        assert!(inbox.has(high) && !inbox.has(Priority::CRITICAL));
        assert_eq!(inbox.pop(high).map(|s| s.job), Some(1));
        assert_eq!(inbox.pop(high).map(|s| s.job), Some(2));
        assert!(!inbox.has(high));
        assert_eq!(inbox.pop(high).map(|s| s.job), None);
        assert_eq!(inbox.pop(Priority::MEDIUM).map(|s| s.job), Some(5));
        assert_eq!(inbox.pop(Priority::LOW).map(|s| s.job), Some(10));
        assert_eq!(inbox.queued(), 0);
    }

    #[test]
    fn many_threads_push_and_nothing_is_lost() {
        let inbox = std::sync::Arc::new(Inbox::<u32>::new(64, 1));
        let pushers: Vec<_> = (0..4u32)
            .map(|t| {
                let inbox = std::sync::Arc::clone(&inbox);
                std::thread::spawn(move || {
                    for i in 0..16 {
                        assert!(inbox.push(Priority::HIGH, job(t * 100 + i)).is_ok());
                    }
                })
            })
            .collect();
        for p in pushers {
            p.join().expect("pusher");
        }
        let mut seen: Vec<u32> =
            std::iter::from_fn(|| inbox.pop(Priority::HIGH).map(|s| s.job)).collect();
        seen.sort_unstable();
        let expected: Vec<u32> = (0..4)
            .flat_map(|t| (0..16).map(move |i| t * 100 + i))
            .collect();
        assert_eq!(seen, expected);
    }
}
