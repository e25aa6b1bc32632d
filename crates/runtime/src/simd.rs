//! Running a numeric kernel with the widest vector instructions the CPU offers, chosen at run
//! time.
//!
//! The workspace is compiled for baseline x86-64 (SSE2), so that one binary runs on every machine
//! of the kinds it targets; loops it auto-vectorizes use 128-bit registers, and `f64::mul_add`
//! becomes a call to the C library's `fma`. A kernel that implements [`SimdKernel`] is compiled
//! again inside one function per [`SimdLevel`] with that level's target features enabled (its
//! `run` is `#[inline(always)]`, so it is inlined into each and vectorized for it), and
//! [`run_best`] calls the widest one this CPU supports.
//!
//! This module only decides which instructions a kernel may use; it never changes what the
//! kernel computes. Fused multiply-add rounds once whether it is an instruction or a library
//! call, so a kernel that only uses it element-wise gives identical bits at every level.

/// A family of vector instructions a kernel can be compiled for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SimdLevel {
    /// SSE2 only: 2 doubles per register, no fused multiply-add instruction.
    Baseline,
    /// AVX2 and FMA: 4 doubles per `ymm` register, fused multiply-add.
    Avx2Fma,
    /// AVX-512F (with AVX2 and FMA): 8 doubles per `zmm` register.
    Avx512,
}

impl SimdLevel {
    /// Every level, narrowest first.
    pub const ALL: [SimdLevel; 3] = [SimdLevel::Baseline, SimdLevel::Avx2Fma, SimdLevel::Avx512];

    /// A short, stable name.
    pub fn name(self) -> &'static str {
        match self {
            SimdLevel::Baseline => "sse2",
            SimdLevel::Avx2Fma => "avx2+fma",
            SimdLevel::Avx512 => "avx512f",
        }
    }

    /// Whether this CPU (and the operating system, which must save the registers) supports it.
    pub fn is_available(self) -> bool {
        match self {
            SimdLevel::Baseline => true,
            SimdLevel::Avx2Fma => {
                std::arch::is_x86_feature_detected!("avx2")
                    && std::arch::is_x86_feature_detected!("fma")
            }
            SimdLevel::Avx512 => {
                SimdLevel::Avx2Fma.is_available() && std::arch::is_x86_feature_detected!("avx512f")
            }
        }
    }

    /// The widest level available here.
    pub fn best() -> SimdLevel {
        *SimdLevel::ALL
            .iter()
            .rev()
            .find(|l| l.is_available())
            .unwrap_or(&SimdLevel::Baseline)
    }
}

/// A kernel compiled once per [`SimdLevel`]. Implementations must mark `run` `#[inline(always)]`:
/// that is what puts its body inside each level's function, where the compiler may use that
/// level's instructions.
pub trait SimdKernel {
    /// What the kernel returns.
    type Output;

    /// Runs the kernel.
    fn run(self) -> Self::Output;
}

#[target_feature(enable = "avx2,fma")]
fn run_avx2_fma<K: SimdKernel>(kernel: K) -> K::Output {
    kernel.run()
}

#[target_feature(enable = "avx512f,avx2,fma")]
fn run_avx512<K: SimdKernel>(kernel: K) -> K::Output {
    kernel.run()
}

/// Runs `kernel` compiled for `level`, or returns `None` (without running it) if this CPU does
/// not support that level.
pub fn run_at<K: SimdKernel>(level: SimdLevel, kernel: K) -> Option<K::Output> {
    if !level.is_available() {
        return None;
    }
    Some(match level {
        SimdLevel::Baseline => kernel.run(),
        // SAFETY: `is_available` checked CPUID (through std's feature detection, which also
        // checks that the OS saves the YMM state) for AVX2 and FMA, the features this function
        // is compiled with.
        SimdLevel::Avx2Fma => unsafe { run_avx2_fma(kernel) },
        // SAFETY: as above, for AVX-512F (with the ZMM and opmask state enabled by the OS), AVX2
        // and FMA.
        SimdLevel::Avx512 => unsafe { run_avx512(kernel) },
    })
}

/// Runs `kernel` at the widest level this CPU supports, and says which.
pub fn run_best<K: SimdKernel>(kernel: K) -> (SimdLevel, K::Output) {
    let level = SimdLevel::best();
    match run_at(level, kernel) {
        Some(out) => (level, out),
        None => unreachable!("the best level is available by definition"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `x <- x * a + b` over an array, element-wise, `rounds` times.
    struct Recurrence<'a> {
        lanes: &'a mut [f64],
        rounds: u32,
    }

    impl SimdKernel for Recurrence<'_> {
        type Output = u64;

        #[inline(always)]
        fn run(self) -> u64 {
            for _ in 0..self.rounds {
                for lane in self.lanes.iter_mut() {
                    *lane = lane.mul_add(0.999_999_7, 0.000_000_3);
                }
            }
            self.lanes
                .iter()
                .fold(0u64, |h, x| h.rotate_left(5) ^ x.to_bits())
        }
    }

    fn lanes() -> Vec<f64> {
        (0..1000).map(|i| f64::from(i) / 7.0).collect()
    }

    #[test]
    fn every_available_level_computes_the_same_bits() {
        let mut reference = lanes();
        let expected = run_at(
            SimdLevel::Baseline,
            Recurrence {
                lanes: &mut reference,
                rounds: 50,
            },
        )
        .expect("baseline is always there");
        for level in SimdLevel::ALL {
            let mut l = lanes();
            let got = run_at(
                level,
                Recurrence {
                    lanes: &mut l,
                    rounds: 50,
                },
            );
            assert_eq!(got.is_some(), level.is_available(), "{level:?}");
            if let Some(got) = got {
                assert_eq!(got, expected, "{level:?}");
            }
        }
        assert!(SimdLevel::best().is_available());
    }
}
