//! A worker's job queues: bounded, one per priority, each with a single producer (the dispatcher)
//! and a single consumer (the worker).
//!
//! Single-producer single-consumer rings need no compare-and-swap on either side, and the split
//! into a dispatcher half and a worker half lets the compiler check who may push and who may pop.
//! The worker's half is shared by its two contexts, so it sits in `RefCell`s that are only
//! borrowed inside non-preemptible regions (a paused context never holds a borrow).

use std::cell::RefCell;

use overtake_runtime::NoPreemptGuard;
use rtrb::{Consumer, Producer, RingBuffer};

use crate::job::Scheduled;

/// The dispatcher's half: pushes.
pub(crate) struct Outlets<J> {
    pub(crate) high: Producer<Scheduled<J>>,
    pub(crate) low: Producer<Scheduled<J>>,
}

impl<J> Outlets<J> {
    /// Jobs pushed to the high-priority queue and not yet taken.
    pub(crate) fn high_queued(&self) -> usize {
        self.high.buffer().capacity() - self.high.slots()
    }
}

/// The worker's half: pops.
pub(crate) struct Inlets<J> {
    high: RefCell<Consumer<Scheduled<J>>>,
    low: RefCell<Consumer<Scheduled<J>>>,
}

impl<J> Inlets<J> {
    /// The next high-priority job, if any.
    pub(crate) fn pop_high(&self) -> Option<Scheduled<J>> {
        let _region = NoPreemptGuard::new();
        self.high.borrow_mut().pop().ok()
    }

    /// The next low-priority job, if any.
    pub(crate) fn pop_low(&self) -> Option<Scheduled<J>> {
        let _region = NoPreemptGuard::new();
        self.low.borrow_mut().pop().ok()
    }

    /// True if no high-priority job is waiting.
    pub(crate) fn high_is_empty(&self) -> bool {
        let _region = NoPreemptGuard::new();
        self.high.borrow().is_empty()
    }
}

/// The queues of one worker, holding up to `high` and `low` jobs.
pub(crate) fn worker_queues<J>(high: usize, low: usize) -> (Outlets<J>, Inlets<J>) {
    let (high_tx, high_rx) = RingBuffer::new(high);
    let (low_tx, low_rx) = RingBuffer::new(low);
    (
        Outlets {
            high: high_tx,
            low: low_tx,
        },
        Inlets {
            high: RefCell::new(high_rx),
            low: RefCell::new(low_rx),
        },
    )
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
    fn bounded_first_in_first_out_per_priority() {
        let (mut tx, rx) = worker_queues::<u32>(2, 1);
        assert!(tx.high.push(job(1)).is_ok());
        assert!(tx.high.push(job(2)).is_ok());
        assert!(tx.high.push(job(3)).is_err(), "bounded");
        assert!(tx.low.push(job(10)).is_ok());
        assert_eq!(tx.high_queued(), 2);
        assert!(!rx.high_is_empty());
        assert_eq!(rx.pop_high().map(|s| s.job), Some(1));
        assert_eq!(rx.pop_high().map(|s| s.job), Some(2));
        assert!(rx.high_is_empty());
        assert_eq!(rx.pop_high().map(|s| s.job), None);
        assert_eq!(rx.pop_low().map(|s| s.job), Some(10));
        assert_eq!(tx.high_queued(), 0);
    }
}
