//! What the processor and kernel offer for preemption: the extended-state save area the trampoline
//! needs, and whether user interrupts exist.
//!
//! Read once, with CPUID and XGETBV, never assumed: the save area differs between machines (on
//! this VM XCR0 enables AMX tiles, whose 8 KB of state no Overtake thread can use without asking
//! the kernel first).

use std::arch::x86_64::{__cpuid_count, CpuidResult};
use std::sync::OnceLock;

/// CPUID leaf `leaf`, sub-leaf `sub`.
#[allow(unused_unsafe)] // the intrinsic is a safe function from Rust 1.94 on, unsafe before
fn cpuid(leaf: u32, sub: u32) -> CpuidResult {
    // SAFETY: every x86_64 processor implements CPUID, and it only reads processor information.
    unsafe { __cpuid_count(leaf, sub) }
}

/// XCR0 bits of the AMX tile configuration and tile data.
const AMX_STATE: u64 = (1 << 17) | (1 << 18);
/// `arch_prctl` code to read the extended-state components this process may use.
const ARCH_GET_XCOMP_PERM: libc::c_int = 0x1022;

/// How the preemption trampoline saves extended (FP/SIMD) state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExtendedState {
    /// `XSAVE`/`XRSTOR` with this component mask (false: the legacy 512-byte `FXSAVE`).
    pub xsave: bool,
    /// Components saved (XCR0, minus AMX unless this process is permitted to use it).
    pub mask: u64,
    /// Bytes of the save area (standard format), a multiple of 64.
    pub size: usize,
    /// XCR0 as read from the processor.
    pub xcr0: u64,
}

#[target_feature(enable = "xsave")]
fn read_xcr0() -> u64 {
    // SAFETY: XGETBV(0) only reads XCR0. The caller checked CPUID.1:ECX.OSXSAVE, which means the
    // operating system enabled XSAVE and XGETBV is available in user mode.
    unsafe { std::arch::x86_64::_xgetbv(0) }
}

/// Extended-state components this process may use, per the kernel (`None` if it cannot say).
fn permitted_components() -> Option<u64> {
    let mut permitted: u64 = 0;
    // SAFETY: ARCH_GET_XCOMP_PERM writes one u64 through the pointer, which is valid and aligned.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_arch_prctl,
            ARCH_GET_XCOMP_PERM,
            &mut permitted as *mut u64,
        )
    };
    (rc == 0).then_some(permitted)
}

fn detect() -> ExtendedState {
    let osxsave = (cpuid(1, 0).ecx >> 27) & 1 == 1;
    if !osxsave {
        return ExtendedState {
            xsave: false,
            mask: 0b11,
            size: 512,
            xcr0: 0,
        };
    }
    // SAFETY: OSXSAVE was checked above, which is the precondition of XGETBV.
    let xcr0 = unsafe { read_xcr0() };
    let mut mask = xcr0;
    if permitted_components().is_none_or(|p| p & AMX_STATE != AMX_STATE) {
        // Without permission, any use of AMX by this process faults, so its state is always the
        // initial state and need not be saved.
        mask &= !AMX_STATE;
    }
    // The standard-format area ends where the last saved component ends (at least the 512-byte
    // legacy area plus the 64-byte header).
    let mut size = 576usize;
    for component in 2..63 {
        if mask & (1 << component) != 0 {
            let leaf = cpuid(0xD, component);
            size = size.max(leaf.ebx as usize + leaf.eax as usize);
        }
    }
    ExtendedState {
        xsave: true,
        mask,
        size: size.next_multiple_of(64),
        xcr0,
    }
}

/// The extended-state layout of this machine (detected once).
pub fn extended_state() -> ExtendedState {
    static DETECTED: OnceLock<ExtendedState> = OnceLock::new();
    *DETECTED.get_or_init(detect)
}

/// What lacks user interrupts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoUserInterrupts {
    /// The CPU (bit 5 of EDX in CPUID leaf 7 is 0).
    Cpu,
    /// The kernel (no `uintr_register_handler`).
    Kernel,
}

/// Why user interrupts cannot be used here, or `Ok` if this process could use them.
pub fn user_interrupts() -> Result<(), NoUserInterrupts> {
    if (cpuid(7, 0).edx >> 5) & 1 == 0 {
        return Err(NoUserInterrupts::Cpu);
    }
    // The (out-of-tree) Linux user-interrupt interface registers handlers with this system call.
    const SYS_UINTR_REGISTER_HANDLER: libc::c_long = 471;
    // SAFETY: called with a null handler and invalid flags; a kernel without the call answers
    // ENOSYS, one with it rejects the arguments. Nothing is registered either way.
    let rc = unsafe { libc::syscall(SYS_UINTR_REGISTER_HANDLER, 0usize, u32::MAX) };
    if rc == -1 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ENOSYS) {
        return Err(NoUserInterrupts::Kernel);
    }
    Ok(())
}

/// The CPU vendor string (for reports).
pub fn vendor() -> String {
    let v = cpuid(0, 0);
    let bytes: Vec<u8> = [v.ebx, v.edx, v.ecx]
        .iter()
        .flat_map(|r| r.to_le_bytes())
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// The instruction-set extensions this build was compiled to use (see `.cargo/config.toml`) that
/// the processor running it lacks: empty on any machine the build is meant for. A binary built for
/// more than the processor has would die of an illegal instruction at some random point; checking
/// first turns that into a clear message.
pub fn missing_build_features() -> Vec<&'static str> {
    let mut missing = Vec::new();
    macro_rules! check {
        ($($feature:tt),*) => {$(
            if cfg!(target_feature = $feature) && !std::arch::is_x86_feature_detected!($feature) {
                missing.push($feature);
            }
        )*};
    }
    check!(
        "avx2", "bmi1", "bmi2", "fma", "lzcnt", "movbe", "avx", "f16c"
    );
    missing
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn save_area_covers_sse_and_is_aligned() {
        let s = extended_state();
        assert!(s.size >= 512 && s.size.is_multiple_of(64));
        assert_eq!(s.mask & 0b11, 0b11, "x87 and SSE state are always saved");
        if s.xsave {
            assert_eq!(s.mask & !s.xcr0, 0, "never more than XCR0 enables");
            assert!(s.size >= 576);
        }
    }
}
