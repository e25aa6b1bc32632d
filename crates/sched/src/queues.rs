//! A worker's queues of new jobs: bounded, one per priority level, each with a single producer
//! (the dispatcher) and a single consumer (the worker).
//!
//! Single-producer single-consumer rings need no compare-and-swap on either side, and the split
//! into a dispatcher half and a worker half lets the compiler check who may push and who may pop.
//! The worker's half is used from the worker loop and from the preemption hook, which runs on a
//! task's stack, so it sits in `RefCell`s that are only borrowed inside non-preemptible regions (a
//! paused task never holds a borrow).

use std::cell::RefCell;

use overtake_engine::Priority;
use overtake_runtime::NoPreemptGuard;
use rtrb::{Consumer, Producer, RingBuffer};

use crate::job::Scheduled;

/// The dispatcher's half: pushes, one ring per level.
pub(crate) struct Outlets<J> {
    levels: Vec<Producer<Scheduled<J>>>,
}

impl<J> Outlets<J> {
    /// The ring of `level`.
    pub(crate) fn level(&mut self, level: Priority) -> &mut Producer<Scheduled<J>> {
        &mut self.levels[level.level()]
    }

    /// Jobs pushed above the lowest level and not yet taken (urgent work still waiting).
    pub(crate) fn urgent_queued(&self) -> usize {
        self.levels
            .iter()
            .skip(1)
            .map(|q| q.buffer().capacity() - q.slots())
            .sum()
    }
}

/// The worker's half: pops.
pub(crate) struct Inlets<J> {
    levels: Vec<RefCell<Consumer<Scheduled<J>>>>,
}

impl<J> Inlets<J> {
    /// The next job of `level`, if any.
    pub(crate) fn pop(&self, level: Priority) -> Option<Scheduled<J>> {
        let _region = NoPreemptGuard::new();
        self.levels[level.level()].borrow_mut().pop().ok()
    }

    /// True if a job of `level` is waiting.
    pub(crate) fn has(&self, level: Priority) -> bool {
        let _region = NoPreemptGuard::new();
        !self.levels[level.level()].borrow().is_empty()
    }
}

/// The queues of one worker: the lowest level holds up to `low` jobs, every other level up to
/// `urgent`.
pub(crate) fn worker_queues<J>(urgent: usize, low: usize) -> (Outlets<J>, Inlets<J>) {
    let (producers, consumers) = Priority::ALL
        .iter()
        .map(|&p| RingBuffer::new(if p == Priority::LOW { low } else { urgent }))
        .map(|(tx, rx)| (tx, RefCell::new(rx)))
        .unzip();
    (Outlets { levels: producers }, Inlets { levels: consumers })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    fn job(n: u32) -> Scheduled<u32> {
        let now = Instant::now();
        Scheduled {
            job: n,
            arrival: now,
            enqueued: now,
        }
    }

    #[test]
    fn bounded_first_in_first_out_per_level() {
        let (mut tx, rx) = worker_queues::<u32>(2, 1);
        let high = Priority::HIGH;
        assert!(tx.level(high).push(job(1)).is_ok());
        assert!(tx.level(high).push(job(2)).is_ok());
        assert!(tx.level(high).push(job(3)).is_err(), "bounded");
        assert!(tx.level(Priority::LOW).push(job(10)).is_ok());
        assert!(
            tx.level(Priority::LOW).push(job(11)).is_err(),
            "its own bound"
        );
        assert!(tx.level(Priority::MEDIUM).push(job(5)).is_ok());
        assert_eq!(tx.urgent_queued(), 3, "everything above the lowest level");
        assert!(rx.has(high) && !rx.has(Priority::CRITICAL));
        assert_eq!(rx.pop(high).map(|s| s.job), Some(1));
        assert_eq!(rx.pop(high).map(|s| s.job), Some(2));
        assert!(!rx.has(high));
        assert_eq!(rx.pop(high).map(|s| s.job), None);
        assert_eq!(rx.pop(Priority::MEDIUM).map(|s| s.job), Some(5));
        assert_eq!(rx.pop(Priority::LOW).map(|s| s.job), Some(10));
        assert_eq!(tx.urgent_queued(), 0);
    }
}
