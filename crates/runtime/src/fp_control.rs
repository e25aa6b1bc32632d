//! The floating-point control state a context owns: MXCSR (SSE rounding mode, exception masks,
//! flush-to-zero) and the x87 control word.
//!
//! The System V ABI makes both callee-saved, so code may rely on them surviving any call, and a
//! context switch is a call as far as the switching code can tell. The stack switch underneath
//! (corosensei) saves only the general callee-saved registers, so without this a context that set
//! a rounding mode would hand it to whichever context runs next, and get back whatever that one
//! left. Injected preemptions are covered separately (the trampoline's `xsave`); this covers
//! every voluntary switch, including a preemption deferred to the end of a region.
//!
//! Must never touch the status flags of MXCSR on purpose (they are saved and restored as they
//! are) and never run anything but the two stores and two loads.

use std::arch::asm;

/// A saved MXCSR and x87 control word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FpControl {
    mxcsr: u32,
    x87_cw: u16,
}

impl FpControl {
    /// The calling thread's current control state.
    #[inline]
    pub(crate) fn save() -> Self {
        let mut mxcsr = 0u32;
        let mut x87_cw = 0u16;
        // SAFETY: `stmxcsr` and `fnstcw` only store the registers into the given locals, which
        // are valid, writable and sized for them (4 and 2 bytes).
        unsafe {
            asm!(
                "stmxcsr [{m}]",
                "fnstcw [{c}]",
                m = in(reg) &mut mxcsr,
                c = in(reg) &mut x87_cw,
                options(nostack, preserves_flags),
            );
        }
        FpControl { mxcsr, x87_cw }
    }

    /// Makes this the calling thread's control state.
    #[inline]
    pub(crate) fn restore(self) {
        // SAFETY: both values were read from the registers by `save`, so they are valid MXCSR
        // and control-word values (loading a reserved MXCSR bit would fault; these have none).
        unsafe {
            asm!(
                "ldmxcsr [{m}]",
                "fldcw [{c}]",
                m = in(reg) &self.mxcsr,
                c = in(reg) &self.x87_cw,
                options(nostack, preserves_flags, readonly),
            );
        }
    }
}

#[cfg(test)]
impl FpControl {
    /// The SSE rounding mode (0 nearest, 1 down, 2 up, 3 toward zero).
    pub(crate) fn rounding(self) -> u32 {
        (self.mxcsr >> 13) & 3
    }

    /// The same state with another SSE rounding mode.
    pub(crate) fn with_rounding(self, mode: u32) -> Self {
        FpControl {
            mxcsr: (self.mxcsr & !0x6000) | ((mode & 3) << 13),
            ..self
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restore_brings_back_what_save_read() {
        let original = FpControl::save();
        let changed = FpControl {
            mxcsr: (original.mxcsr & !0x6000) | 0x4000, // round up
            x87_cw: (original.x87_cw & !0x0C00) | 0x0800,
        };
        changed.restore();
        assert_eq!(FpControl::save(), changed);
        original.restore();
        assert_eq!(FpControl::save(), original);
    }
}
