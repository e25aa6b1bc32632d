//! Which preemptible context, if any, runs on this thread: its stack bounds. Written by
//! `context` when it switches, read by the signal handler (whether and where a call can be
//! injected) and by `region` (test injections count only where a preemption could land). Kept
//! apart from `context` so that `region`, which `context` uses, need not use `context` back.
//! Everything here is async-signal-safe; nothing here may allocate or block.

use std::sync::atomic::{AtomicUsize, Ordering, compiler_fence};

/// Stack bounds of the running context if it is preemptible (`lo == 0`: none). Read by the
/// signal handler, hence atomics.
struct RunningStack {
    lo: AtomicUsize,
    hi: AtomicUsize,
}

thread_local! {
    static RUNNING: RunningStack = const {
        RunningStack {
            lo: AtomicUsize::new(0),
            hi: AtomicUsize::new(0),
        }
    };
}

/// The stack bounds `(lowest usable address, base)` of the preemptible context running on this
/// thread, if any. Async-signal-safe.
#[inline]
pub(crate) fn current_preemptible_stack() -> Option<(usize, usize)> {
    RUNNING.with(|c| {
        let lo = c.lo.load(Ordering::Relaxed);
        (lo != 0).then(|| (lo, c.hi.load(Ordering::Relaxed)))
    })
}

/// True while a preemptible context runs on this thread.
#[inline]
pub fn in_preemptible_context() -> bool {
    current_preemptible_stack().is_some()
}

/// Records the stack of the context about to run (`None`: no preemptible one).
pub(crate) fn set_current_stack(bounds: Option<(usize, usize)>) {
    let (lo, hi) = bounds.unwrap_or((0, 0));
    RUNNING.with(|c| {
        c.lo.store(lo, Ordering::Relaxed);
        c.hi.store(hi, Ordering::Relaxed);
    });
    compiler_fence(Ordering::SeqCst);
}
