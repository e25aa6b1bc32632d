//! How much stack is left where code runs: on a context's stack, or on the OS thread's own.
//! Deeply recursive code (parsing, binding, evaluating an expression) asks before it goes
//! deeper and refuses input that would overflow, as PostgreSQL's `check_stack_depth` does,
//! instead of crashing the process on a guard page.
//!
//! Contexts publish their stack's bounds when they switch (`context`); a thread outside every
//! context reads its own once, from the operating system. Must never allocate or block: it is
//! asked on hot recursive paths.

use std::cell::Cell;

thread_local! {
    /// Bounds `(lowest usable address, base)` of the context running on this thread, if any
    /// (`lo == 0`: none; the thread's own stack is in use).
    static CONTEXT: Cell<(usize, usize)> = const { Cell::new((0, 0)) };
    /// Bounds of this thread's own stack, read on first use (`(0, 0)`: not yet; `(1, 1)`:
    /// unknown).
    static THREAD: Cell<(usize, usize)> = const { Cell::new((0, 0)) };
}

/// Records the stack of the context about to run (`None`: the thread's own), returning what was
/// recorded before so the caller can put it back.
pub(crate) fn enter(bounds: Option<(usize, usize)>) -> Option<(usize, usize)> {
    let previous = CONTEXT.with(|c| c.replace(bounds.unwrap_or((0, 0))));
    (previous.0 != 0).then_some(previous)
}

/// The bounds of the calling thread's own stack, from the operating system.
fn thread_bounds() -> Option<(usize, usize)> {
    let known = THREAD.with(Cell::get);
    if known == (1, 1) {
        return None;
    }
    if known != (0, 0) {
        return Some(known);
    }
    let mut attr = std::mem::MaybeUninit::<libc::pthread_attr_t>::uninit();
    let mut addr: *mut libc::c_void = std::ptr::null_mut();
    let mut size: libc::size_t = 0;
    // SAFETY: pthread_getattr_np initializes `attr` for the calling thread when it returns 0;
    // only then is it read (pthread_attr_getstack writes the two out-parameters, valid locals)
    // and destroyed, once.
    let found = unsafe {
        if libc::pthread_getattr_np(libc::pthread_self(), attr.as_mut_ptr()) != 0 {
            false
        } else {
            let ok = libc::pthread_attr_getstack(attr.as_ptr(), &mut addr, &mut size) == 0;
            libc::pthread_attr_destroy(attr.as_mut_ptr());
            ok
        }
    };
    let bounds = (addr as usize, addr as usize + size);
    let bounds = (found && bounds.0 > 1).then_some(bounds);
    THREAD.with(|t| t.set(bounds.unwrap_or((1, 1))));
    bounds
}

/// Bytes of stack left below the caller's frame, or `None` where that cannot be told (code
/// running on a stack neither a context nor the thread owns, such as a segment a library
/// allocated to grow its own recursion).
#[inline(never)]
pub fn remaining() -> Option<usize> {
    let marker = 0u8;
    let here = std::ptr::addr_of!(marker) as usize;
    let (lo, hi) = match CONTEXT.with(Cell::get) {
        (0, _) => thread_bounds()?,
        bounds => bounds,
    };
    (lo..hi).contains(&here).then(|| here - lo)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::Context;

    fn depth_reached(levels: usize) -> usize {
        let left = remaining().expect("known");
        if levels == 0 {
            return left;
        }
        let mut pad = [0u8; 256];
        std::hint::black_box(&mut pad);
        depth_reached(levels - 1)
    }

    #[test]
    fn a_thread_knows_its_stack_and_the_remainder_shrinks_as_calls_nest() {
        let outer = remaining().expect("a thread's stack is known");
        assert!(outer > 0);
        let inner = depth_reached(100);
        assert!(inner < outer, "{inner} < {outer}");
        assert!(outer - inner >= 100 * 256);
    }

    #[test]
    fn a_context_reports_its_own_stack_and_the_thread_gets_its_own_back() {
        let thread = remaining().expect("known");
        let seen = std::rc::Rc::new(Cell::new(None));
        let inside = std::rc::Rc::clone(&seen);
        let mut context = Context::new(256 << 10, false, move |_| {
            inside.set(remaining());
        })
        .expect("context");
        let (lo, hi) = context.stack_bounds();
        assert!(context.resume().is_finished());
        let left = seen.get().expect("a context's stack is known");
        assert!(left < hi - lo, "measured on the context's stack: {left}");
        let back = remaining().expect("known");
        assert!(back.abs_diff(thread) < 64 << 10, "{back} vs {thread}");
    }
}
