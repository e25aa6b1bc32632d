//! Compute-only transactions: a numeric loop over an array that touches no record (like a
//! user-defined function), which no yield point interrupts and only a signal can preempt. Its
//! result is the same bits at every vector level, so a preemption that corrupted a register
//! would show.

use std::time::{Duration, Instant};

use overtake_runtime::simd::{SimdKernel, SimdLevel, run_at};

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
}
