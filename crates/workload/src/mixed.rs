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

use overtake_engine::Priority;
use overtake_runtime::simd::{SimdKernel, SimdLevel, run_at};
use overtake_sched::Arrivals;

use crate::batch::BatchUpdate;
use crate::exec::{Job, Work};
use crate::rng::{NuRandConstants, TpccRng};
use crate::tpcc::driver::TpccRequest;
use crate::tpcc::input::{NewOrderInput, PaymentInput};

/// Elements of the compute kernel's working array (32 KiB of f64, cache-resident).
const LANES: usize = 4096;

/// `rounds` passes of `x <- x * a + b` (a fused multiply-add) over every element of an array.
/// Compiled per vector level (see `overtake_runtime::simd`): with AVX-512 each pass is 512
/// `vfmadd` instructions on `zmm` registers, with AVX2 and FMA 1,024 on `ymm` registers, on a
/// baseline CPU 4,096 calls to the C library's `fma`.
struct FmaPasses<'a> {
    lanes: &'a mut [f64; LANES],
    rounds: u64,
    a: f64,
    b: f64,
}

impl SimdKernel for FmaPasses<'_> {
    type Output = ();

    #[inline(always)]
    fn run(self) {
        for _ in 0..self.rounds {
            for lane in self.lanes.iter_mut() {
                *lane = lane.mul_add(self.a, self.b);
            }
        }
    }
}

/// The compute kernel at vector level `level` (`None` if this CPU lacks it): `rounds` passes of
/// a fused multiply-add recurrence over an array, reduced to the bits of its sum. Every element's
/// recurrence rounds once per step at every level, and the sum is taken in order, so the result is
/// the same bits at every level: a preemption that corrupted any lane of any vector register would
/// show in it.
pub fn compute_kernel_at(level: SimdLevel, rounds: u64) -> Option<u64> {
    let mut lanes = [0f64; LANES];
    for (i, lane) in lanes.iter_mut().enumerate() {
        *lane = i as f64 / LANES as f64;
    }
    let kernel = FmaPasses {
        lanes: &mut lanes,
        rounds,
        a: std::hint::black_box(0.999_999_7f64),
        b: std::hint::black_box(0.000_000_3f64),
    };
    run_at(level, kernel)?;
    Some(lanes.iter().sum::<f64>().to_bits())
}

/// The compute kernel at the widest vector level this CPU offers ([`SimdLevel::best`]).
pub fn compute_kernel(rounds: u64) -> u64 {
    compute_kernel_at(SimdLevel::best(), rounds)
        .unwrap_or_else(|| unreachable!("the best level is available by definition"))
}

/// A compute-only transaction: how many kernel rounds, and the result it must produce.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ComputeTask {
    /// Kernel rounds.
    pub rounds: u64,
    /// The result computed once, unpreempted.
    pub expected: u64,
    /// The vector instructions the kernel runs with on this machine.
    pub level: SimdLevel,
}

impl ComputeTask {
    /// A task taking about `target` on this machine (measured), with its expected result. The
    /// probe runs the warm kernel for at least 10 ms, doubling its rounds: a vectorized round
    /// takes well under a microsecond, so a short probe would mostly time the first touch of
    /// the array and make the task several times shorter than asked.
    pub fn calibrate(target: Duration) -> Self {
        std::hint::black_box(compute_kernel(16));
        let mut probe = 64;
        let per_round = loop {
            let start = Instant::now();
            std::hint::black_box(compute_kernel(probe));
            let took = start.elapsed();
            if took >= Duration::from_millis(10) || probe >= 1 << 30 {
                break took.as_secs_f64() / probe as f64;
            }
            probe *= 2;
        };
        let rounds = ((target.as_secs_f64() / per_round.max(1e-9)) as u64).max(1);
        ComputeTask {
            rounds,
            expected: compute_kernel(rounds),
            level: SimdLevel::best(),
        }
    }

    /// Runs the kernel.
    pub fn run(&self) -> u64 {
        compute_kernel(self.rounds)
    }
}

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
    fn the_kernel_is_deterministic_and_depends_on_rounds() {
        assert_eq!(compute_kernel(10), compute_kernel(10));
        assert_ne!(compute_kernel(10), compute_kernel(11));
        let task = ComputeTask::calibrate(Duration::from_millis(2));
        assert_eq!(task.run(), task.expected);
        assert_eq!(task.level, SimdLevel::best());
    }

    #[test]
    fn every_vector_level_gives_the_same_result() {
        let scalar = compute_kernel_at(SimdLevel::Baseline, 300).expect("always available");
        for level in SimdLevel::ALL {
            match compute_kernel_at(level, 300) {
                Some(bits) => assert_eq!(bits, scalar, "{level:?}"),
                None => assert!(!level.is_available()),
            }
        }
    }

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
