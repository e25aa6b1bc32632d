//! The trampoline a preemption signal injects into the running code.
//!
//! On entry (a jump, set up by the handler's rewrite of the interrupted RIP/RSP) the stack pointer
//! points at two words the handler left: the interrupted instruction pointer `P` and `R - 136`,
//! where `R` is the interrupted stack pointer. The trampoline:
//!
//! 1. saves the flags, then `rax` and `rbx`, and writes `P` to `R - 136`: just below the 128-byte
//!    red zone the interrupted code may be using. (The handler could not write it there: the
//!    kernel's signal frame, including the extended state `sigreturn` restores, occupied that
//!    memory while the handler ran.)
//! 2. saves every other general register, aligns the stack to 64 bytes, and saves the full extended
//!    state (`XSAVE` with the detected component mask, or `FXSAVE` where XSAVE is off);
//! 3. clears the direction flag, loads the default MXCSR and x87 control word, and calls
//!    [`preempt_entry`](super::preempt_entry), which runs the scheduler's hook (it may switch to
//!    more urgent work) and returns when the preempted code may continue;
//! 4. restores the extended state, the general registers and the flags, sets the stack pointer to
//!    `R - 136` with `pop rsp`, and returns with `ret 128`: RIP = `P`, RSP = `R`. Every register
//!    holds exactly what it held when the signal arrived.
//!
//! The trampoline is reentrant: a signal arriving during step 1 or 4 captures a consistent state
//! (the kernel saved all of it) and would simply inject another call; in practice the region the
//! handler opened defers it.

use std::sync::atomic::{AtomicU8, AtomicU32, AtomicU64, Ordering};

use crate::cpu;

static USE_XSAVE: AtomicU8 = AtomicU8::new(0);
static MASK_LO: AtomicU32 = AtomicU32::new(0);
static MASK_HI: AtomicU32 = AtomicU32::new(0);
/// Bytes reserved for the extended-state area (512 for FXSAVE).
static AREA: AtomicU64 = AtomicU64::new(512);
static DEFAULT_MXCSR: u32 = 0x1F80;
static DEFAULT_FCW: u16 = 0x037F;

/// Reads the extended-state layout into the statics the trampoline uses. Called once, before the
/// signal handler is installed.
pub(super) fn configure() {
    let state = cpu::extended_state();
    USE_XSAVE.store(u8::from(state.xsave), Ordering::Relaxed);
    MASK_LO.store(state.mask as u32, Ordering::Relaxed);
    MASK_HI.store((state.mask >> 32) as u32, Ordering::Relaxed);
    AREA.store(state.size as u64, Ordering::Relaxed);
}

/// Address of the trampoline's first instruction.
pub(super) fn address() -> usize {
    trampoline as *const () as usize
}

/// See the module documentation. Never called like a function: entered by the signal handler's
/// rewrite of the interrupted context.
#[unsafe(naked)]
extern "C" fn trampoline() {
    std::arch::naked_asm!(
        // 1. [rsp] = P, [rsp+8] = R-136.
        "pushfq",
        "push rax",
        "push rbx",
        "mov rax, qword ptr [rsp + 32]",
        "mov rbx, qword ptr [rsp + 24]",
        "mov qword ptr [rax], rbx",
        // 2. The rest of the general registers.
        "push rcx",
        "push rdx",
        "push rsi",
        "push rdi",
        "push rbp",
        "push r8",
        "push r9",
        "push r10",
        "push r11",
        "push r12",
        "push r13",
        "push r14",
        "push r15",
        "mov rbp, rsp",
        "and rsp, -64",
        "sub rsp, qword ptr [rip + {area}]",
        "and rsp, -64",
        "cmp byte ptr [rip + {use_xsave}], 0",
        "je 2f",
        // XRSTOR (standard form) requires XCOMP_BV and the reserved header bytes to be zero, and
        // XSAVE does not write them: clear the 64-byte header at offset 512 first.
        "mov qword ptr [rsp + 512], 0",
        "mov qword ptr [rsp + 520], 0",
        "mov qword ptr [rsp + 528], 0",
        "mov qword ptr [rsp + 536], 0",
        "mov qword ptr [rsp + 544], 0",
        "mov qword ptr [rsp + 552], 0",
        "mov qword ptr [rsp + 560], 0",
        "mov qword ptr [rsp + 568], 0",
        "mov eax, dword ptr [rip + {mask_lo}]",
        "mov edx, dword ptr [rip + {mask_hi}]",
        "xsave64 [rsp]",
        "jmp 3f",
        "2:",
        "fxsave64 [rsp]",
        "3:",
        // 3. A clean ABI state for the Rust code we call.
        "cld",
        "ldmxcsr dword ptr [rip + {mxcsr}]",
        "fldcw word ptr [rip + {fcw}]",
        "call {entry}",
        // 4. Restore everything.
        "cmp byte ptr [rip + {use_xsave}], 0",
        "je 4f",
        "mov eax, dword ptr [rip + {mask_lo}]",
        "mov edx, dword ptr [rip + {mask_hi}]",
        "xrstor64 [rsp]",
        "jmp 5f",
        "4:",
        "fxrstor64 [rsp]",
        "5:",
        "mov rsp, rbp",
        "pop r15",
        "pop r14",
        "pop r13",
        "pop r12",
        "pop r11",
        "pop r10",
        "pop r9",
        "pop r8",
        "pop rbp",
        "pop rdi",
        "pop rsi",
        "pop rdx",
        "pop rcx",
        "pop rbx",
        "pop rax",
        "popfq",
        // Skip P (lea leaves the flags alone), load RSP = R-136, return to P and pop the gap.
        "lea rsp, [rsp + 8]",
        "pop rsp",
        "ret 128",
        area = sym AREA,
        use_xsave = sym USE_XSAVE,
        mask_lo = sym MASK_LO,
        mask_hi = sym MASK_HI,
        mxcsr = sym DEFAULT_MXCSR,
        fcw = sym DEFAULT_FCW,
        entry = sym super::preempt_entry,
    )
}
