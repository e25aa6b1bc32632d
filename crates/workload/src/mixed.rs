//! The mixed workload of PreemptDB's evaluation.
//!
//! Every worker's low-priority queue is kept full of long transactions: CH-benCHmark Query 2, or a
//! compute-only transaction (a numeric loop over an array touching no record for tens of
//! milliseconds, like a user-defined function, which no yield point ever interrupts). Every arrival
//! interval, a batch of `workers x hp_queue` high-priority transactions arrives at once, half
//! New-Order and half Payment (TPC-C inputs, home warehouse chosen uniformly), or compute-only
//! transactions of a chosen length, all stamped with the batch's arrival time, and the dispatcher
//! deals them round-robin. Optionally a middle class of
//! full-mix TPC-C transactions arrives open-loop at medium priority, one every interval.

use std::time::{Duration, Instant};

use crate::drivers::open_loop::Arrivals;
use overtake_engine::Priority;

use crate::batch::BatchUpdate;
pub use crate::compute::{ComputeTask, compute_kernel, compute_kernel_at};
use crate::exec::{Job, Work};
use crate::rng::{NuRandConstants, TpccRng};
use crate::tpcc::input::{NewOrderInput, PaymentInput};
use crate::tpcc::request::TpccRequest;

/// What the low-priority queues are kept full of.
#[derive(Clone, Debug)]
pub enum LowWork {
    /// CH-benCHmark Query 2.
    Query2,
    /// A compute-only transaction.
    Compute(ComputeTask),
    /// A batch of bookings that writes what the urgent transactions write, then computes.
    BatchUpdate(ComputeTask),
}

/// What the urgent batches hold.
#[derive(Clone, Debug)]
pub enum HighWork {
    /// TPC-C New-Order and Payment, half each (PreemptDB's urgent transactions).
    NewOrderPayment,
    /// A compute-only transaction of a chosen length (to set the urgent load exactly).
    Compute(ComputeTask),
}

/// Arrivals of the mixed workload.
pub struct MixedArrivals {
    interval: Duration,
    batch: usize,
    low: LowWork,
    high: HighWork,
    warehouses: i64,
    constants: NuRandConstants,
    rng: TpccRng,
    next: Option<Instant>,
    /// Low-priority batch updates handed out so far.
    batches: u64,
    /// A middle class: one full-mix TPC-C transaction at medium priority every interval, and
    /// when the next is due.
    medium: Option<(Duration, Option<Instant>)>,
}

impl MixedArrivals {
    /// Batches of `batch` high-priority transactions every `interval`; `low` fills the
    /// low-priority queues.
    pub fn new(
        interval: Duration,
        batch: usize,
        low: LowWork,
        warehouses: i64,
        constants: NuRandConstants,
        seed: u64,
    ) -> Self {
        MixedArrivals {
            interval,
            batch,
            low,
            high: HighWork::NewOrderPayment,
            warehouses,
            constants,
            rng: TpccRng::new(seed),
            next: None,
            batches: 0,
            medium: None,
        }
    }

    /// Makes the urgent batches hold `high` instead of New-Order and Payment.
    pub fn with_high(mut self, high: HighWork) -> Self {
        self.high = high;
        self
    }

    /// Adds a middle class: a full-mix TPC-C transaction (any of the five, in the standard mix)
    /// at [`Priority::MEDIUM`] every `interval`, open-loop.
    pub fn with_medium(mut self, interval: Duration) -> Self {
        self.medium = Some((interval, None));
        self
    }

    fn medium_job(&mut self) -> Job {
        let w_id = self.rng.uniform(1, self.warehouses);
        Job {
            priority: Priority::MEDIUM,
            work: Work::Tpcc(TpccRequest::generate(
                &mut self.rng,
                &self.constants,
                w_id,
                self.warehouses,
            )),
        }
    }

    fn high_job(&mut self) -> Job {
        if let HighWork::Compute(task) = &self.high {
            return Job {
                priority: Priority::HIGH,
                work: Work::Compute(task.clone()),
            };
        }
        let w_id = self.rng.uniform(1, self.warehouses);
        let request = if self.rng.uniform(1, 2) == 1 {
            TpccRequest::NewOrder(Box::new(NewOrderInput::generate(
                &mut self.rng,
                &self.constants,
                w_id,
                self.warehouses,
            )))
        } else {
            TpccRequest::Payment(PaymentInput::generate(
                &mut self.rng,
                &self.constants,
                w_id,
                self.warehouses,
            ))
        };
        Job {
            priority: Priority::HIGH,
            work: Work::Tpcc(request),
        }
    }
}

impl Arrivals<Job> for MixedArrivals {
    fn high(&mut self, now: Instant, out: &mut Vec<(Job, Instant)>) -> Option<Instant> {
        // The first batch arrives one interval after the start, when the long transactions run.
        let mut due = *self.next.get_or_insert(now + self.interval);
        // A late dispatcher still delivers every batch, each with its own arrival time.
        while due <= now {
            for _ in 0..self.batch {
                let job = self.high_job();
                out.push((job, due));
            }
            due += self.interval;
        }
        self.next = Some(due);
        let Some((interval, next)) = self.medium else {
            return Some(due);
        };
        let mut medium_due = next.unwrap_or(now + interval);
        while medium_due <= now {
            let job = self.medium_job();
            out.push((job, medium_due));
            medium_due += interval;
        }
        self.medium = Some((interval, Some(medium_due)));
        Some(due.min(medium_due))
    }

    fn low(&mut self) -> Option<Job> {
        let work = match &self.low {
            LowWork::Query2 => Work::Query2,
            LowWork::Compute(task) => Work::Compute(task.clone()),
            LowWork::BatchUpdate(task) => {
                self.batches += 1;
                Work::BatchUpdate(BatchUpdate::nth(
                    self.batches,
                    self.warehouses,
                    task.clone(),
                ))
            }
        };
        Some(Job {
            priority: Priority::LOW,
            work,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_arrive_every_interval_with_their_own_arrival_time() {
        let mut rng = TpccRng::new(1);
        let c = NuRandConstants::for_load(&mut rng);
        let mut a = MixedArrivals::new(Duration::from_millis(1), 8, LowWork::Query2, 2, c, 5);
        let start = Instant::now();
        let mut out = Vec::new();
        let next = a.high(start, &mut out).expect("periodic");
        assert!(out.is_empty(), "nothing before the first interval");
        assert_eq!(next, start + Duration::from_millis(1));
        a.high(start + Duration::from_micros(3_500), &mut out);
        assert_eq!(out.len(), 24, "three batches were due");
        assert_eq!(out[0].1, start + Duration::from_millis(1));
        assert_eq!(out[23].1, start + Duration::from_millis(3));
        let new_orders = out
            .iter()
            .filter(|(j, _)| matches!(j.work, Work::Tpcc(TpccRequest::NewOrder(_))))
            .count();
        assert!(
            (4..=20).contains(&new_orders),
            "about half New-Order: {new_orders}"
        );
        assert!(out.iter().all(|(j, _)| j.priority == Priority::HIGH));
        let mut three = MixedArrivals::new(
            Duration::from_micros(1_000),
            4,
            LowWork::Query2,
            1,
            NuRandConstants::for_load(&mut TpccRng::new(1)),
            1,
        )
        .with_medium(Duration::from_micros(250));
        let mut out = Vec::new();
        three.high(start, &mut out);
        three.high(start + Duration::from_micros(10_000), &mut out);
        let medium = out
            .iter()
            .filter(|(j, _)| j.priority == Priority::MEDIUM)
            .count();
        // Medium every 250 us from 250 us to 10 ms, high in batches of 4 every ms from 1 ms.
        assert_eq!(medium, 40);
        assert_eq!(out.len() - medium, 40);
        assert!(matches!(a.low().map(|j| j.work), Some(Work::Query2)));
    }
}
