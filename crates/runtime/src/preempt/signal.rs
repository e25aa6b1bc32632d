//! SIGURG: installing the handler, sending the signal, and what the handler does.
//!
//! The handler runs on the interrupted thread, on the interrupted stack, with SIGURG blocked. It
//! reads only atomics and the saved user context, writes two words to dead stack memory and two
//! saved registers, and returns normally; the kernel's `sigreturn` then restores the (modified)
//! registers and the signal mask. It never switches stacks, allocates, locks or calls libc.

use std::io;
use std::sync::OnceLock;
use std::sync::atomic::Ordering;

use super::{WORKER, trampoline};
use crate::{region, running};

/// Free stack the trampoline and the hook need below the interrupted frame: the register save
/// area, the extended-state area (up to 11 KB with AMX) and the hook's frames.
const ROOM: usize = 64 * 1024;

/// Distance below the handler's own frame where the two words for the trampoline are left: far
/// enough that nothing the handler still does can overwrite them, and below the kernel's signal
/// frame (which holds the state `sigreturn` restores and must not be touched).
const SLOT_GAP: usize = 4096;

/// Installs the SIGURG handler for the process (once).
pub(super) fn install() -> io::Result<()> {
    static INSTALLED: OnceLock<Result<(), i32>> = OnceLock::new();
    let result = INSTALLED.get_or_init(|| {
        trampoline::configure();
        // SAFETY: `sigaction` is given a fully initialised structure: zeroed, then the handler,
        // flags and an empty mask set. The handler has the three-argument SA_SIGINFO signature.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_sigurg as *const () as usize;
            action.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            if libc::sigaction(libc::SIGURG, &action, std::ptr::null_mut()) != 0 {
                return Err(io::Error::last_os_error().raw_os_error().unwrap_or(0));
            }
        }
        Ok(())
    });
    result.map_err(io::Error::from_raw_os_error)
}

/// Sends SIGURG to thread `tid` of this process.
pub(super) fn send(tid: i32) -> io::Result<()> {
    // SAFETY: tgkill only takes integers; a thread id of this process that has exited yields ESRCH.
    let rc = unsafe { libc::syscall(libc::SYS_tgkill, libc::getpid(), tid, libc::SIGURG) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

extern "C" fn on_sigurg(
    _signal: libc::c_int,
    _info: *mut libc::siginfo_t,
    context: *mut libc::c_void,
) {
    let marker = 0u8;
    let here = std::hint::black_box(&marker) as *const u8 as usize;
    let target = WORKER.with(|w| w.target.load(Ordering::Acquire));
    // SAFETY: null or valid while this thread is registered (see `with_target`); the handler runs
    // on this thread, so registration cannot end while it runs.
    let Some(target) = (unsafe { target.as_ref() }) else {
        return;
    };
    if !target.is_requested() {
        return; // already served, or withdrawn: nothing to do
    }
    if region::depth() > 0 {
        region::defer_preemption();
        target.deferred.fetch_add(1, Ordering::Relaxed);
        return;
    }
    if !crate::alloc::is_in_use() {
        // Allocation does not run in regions: this point may be inside malloc. Never inject.
        return;
    }
    let Some((lo, hi)) = running::current_preemptible_stack() else {
        return; // between contexts: the worker loop sees the request flag
    };
    let ucontext = context.cast::<libc::ucontext_t>();
    // SAFETY: with SA_SIGINFO the kernel passes a valid `ucontext_t` for the interrupted thread as
    // the third argument; it stays valid until the handler returns.
    let gregs = unsafe { &mut (*ucontext).uc_mcontext.gregs };
    let rsp = gregs[libc::REG_RSP as usize] as usize;
    let rip = gregs[libc::REG_RIP as usize] as usize;
    let slot = here.saturating_sub(SLOT_GAP) & !15;
    let inside = |p: usize| lo + ROOM < p && p <= hi;
    if !(inside(rsp) && inside(here) && inside(slot)) {
        return; // not on the context's stack, or too close to its end
    }
    // SAFETY: `slot` lies inside the running context's stack (checked above), `SLOT_GAP` below the
    // handler's own frame, which is below the kernel's signal frame, which is below the interrupted
    // code's red zone: that memory is used by no one until the trampoline reads it.
    unsafe {
        let words = slot as *mut usize;
        words.write(rip);
        words.add(1).write(rsp - 136);
    }
    gregs[libc::REG_RSP as usize] = slot as i64;
    gregs[libc::REG_RIP as usize] = trampoline::address() as i64;
    // The trampoline runs inside a region until `preempt_entry` ends it: another signal arriving
    // while it saves or restores registers is deferred instead of injected again.
    region::raise();
}
