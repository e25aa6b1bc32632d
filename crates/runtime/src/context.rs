//! Stackful execution contexts.
//!
//! A worker thread owns several contexts, each with its own stack (with a guard page), and runs
//! one at a time. A context runs until it suspends itself; resuming it continues exactly where it
//! suspended. Contexts can be resumed from inside other contexts (a paused low-priority context
//! resumes the high-priority one, which suspends back into it).
//!
//! A context is *preemptible* if the preemption machinery may interrupt it. While a preemptible
//! context runs, its stack bounds are published in a signal-safe thread-local, which is how the
//! signal handler knows that the code it interrupted belongs to a context it may pause.
//!
//! Every switch happens inside a non-preemptible region that starts in the context switching away
//! and ends in the context switched to, so a signal can never land half-way through a switch.
//! Contexts never migrate between threads. Each context keeps its own floating-point control
//! state (rounding mode, exception masks) across switches, as the ABI promises for any call.

use std::io;
use std::sync::atomic::{AtomicUsize, Ordering, compiler_fence};

use corosensei::stack::{DefaultStack, Stack};
use corosensei::{Coroutine, CoroutineResult, Yielder};

use crate::fp_control::FpControl;
use crate::region;

/// Stack bounds of the preemptible context running on this thread (`lo == 0`: none).
struct CurrentStack {
    lo: AtomicUsize,
    hi: AtomicUsize,
}

thread_local! {
    static CURRENT: CurrentStack = const {
        CurrentStack {
            lo: AtomicUsize::new(0),
            hi: AtomicUsize::new(0),
        }
    };
}

/// The stack bounds `(lowest usable address, base)` of the preemptible context running on this
/// thread, if any. Async-signal-safe.
#[inline]
pub(crate) fn current_preemptible_stack() -> Option<(usize, usize)> {
    CURRENT.with(|c| {
        let lo = c.lo.load(Ordering::Relaxed);
        (lo != 0).then(|| (lo, c.hi.load(Ordering::Relaxed)))
    })
}

/// True while a preemptible context runs on this thread.
#[inline]
pub fn in_preemptible_context() -> bool {
    current_preemptible_stack().is_some()
}

fn set_current(bounds: Option<(usize, usize)>) {
    let (lo, hi) = bounds.unwrap_or((0, 0));
    CURRENT.with(|c| {
        c.lo.store(lo, Ordering::Relaxed);
        c.hi.store(hi, Ordering::Relaxed);
    });
    compiler_fence(Ordering::SeqCst);
}

/// What a context's body uses to suspend itself.
pub struct Suspender<'a> {
    yielder: &'a Yielder<(), ()>,
}

impl Suspender<'_> {
    /// Suspends the context; returns when it is resumed.
    pub fn suspend(&self) {
        region::raise();
        let fp = FpControl::save();
        self.yielder.suspend(());
        fp.restore();
        region::lower();
    }
}

/// A stackful context.
pub struct Context {
    coroutine: Coroutine<(), (), (), DefaultStack>,
    bounds: (usize, usize),
    preemptible: bool,
}

impl Context {
    /// A context with a stack of `stack_size` bytes that will run `body` when first resumed.
    pub fn new(
        stack_size: usize,
        preemptible: bool,
        body: impl FnOnce(&Suspender<'_>) + 'static,
    ) -> io::Result<Self> {
        let stack = DefaultStack::new(stack_size)?;
        let bounds = (stack.limit().get(), stack.base().get());
        let coroutine = Coroutine::with_stack(stack, move |yielder: &Yielder<(), ()>, ()| {
            // The resumer raised the depth for the switch; the switch is over.
            region::lower();
            body(&Suspender { yielder });
            // Finishing switches back to the resumer, which lowers the depth.
            region::raise();
        });
        Ok(Context {
            coroutine,
            bounds,
            preemptible,
        })
    }

    /// Runs the context until it suspends (returns `false`) or its body returns (`true`).
    pub fn resume(&mut self) -> bool {
        if self.coroutine.done() {
            return true;
        }
        let previous = current_preemptible_stack();
        region::raise();
        set_current(self.preemptible.then_some(self.bounds));
        // Restores the caller's view even if the body panics (the panic resurfaces here).
        struct Restore(Option<(usize, usize)>);
        impl Drop for Restore {
            fn drop(&mut self) {
                set_current(self.0);
            }
        }
        let restore = Restore(previous);
        let fp = FpControl::save();
        let result = self.coroutine.resume(());
        fp.restore();
        drop(restore);
        region::lower();
        matches!(result, CoroutineResult::Return(()))
    }

    /// The stack's `(lowest usable address, base)`.
    pub fn stack_bounds(&self) -> (usize, usize) {
        self.bounds
    }

    /// Whether the preemption machinery may interrupt this context.
    pub fn is_preemptible(&self) -> bool {
        self.preemptible
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;
    use std::rc::Rc;

    #[test]
    fn contexts_resume_where_they_suspended_and_nest() {
        let log = Rc::new(Cell::new(Vec::<u32>::new()));
        let push = |log: &Rc<Cell<Vec<u32>>>, v| {
            let mut l = log.take();
            l.push(v);
            log.set(l);
        };
        let inner_log = Rc::clone(&log);
        let inner = Rc::new(std::cell::RefCell::new(
            Context::new(64 * 1024, false, move |s| {
                for i in 0..3 {
                    push(&inner_log, 100 + i);
                    assert!(
                        !in_preemptible_context(),
                        "a non-preemptible context hides the outer one"
                    );
                    s.suspend();
                }
            })
            .expect("stack"),
        ));
        let outer_log = Rc::clone(&log);
        let inner_for_outer = Rc::clone(&inner);
        let mut outer = Context::new(64 * 1024, true, move |s| {
            push(&outer_log, 1);
            assert!(in_preemptible_context());
            assert_eq!(
                region::depth(),
                0,
                "a running context is outside every region"
            );
            inner_for_outer.borrow_mut().resume(); // nested: inner suspends back into us
            assert!(
                in_preemptible_context(),
                "restored after the nested context suspends"
            );
            push(&outer_log, 2);
            s.suspend();
            push(&outer_log, 3);
        })
        .expect("stack");
        assert!(!in_preemptible_context());
        assert!(!outer.resume());
        assert_eq!(region::depth(), 0);
        assert!(!inner.borrow_mut().resume());
        assert!(outer.resume(), "the body returned");
        assert!(outer.resume(), "a finished context stays finished");
        assert_eq!(log.take(), vec![1, 100, 2, 101, 3]);
        assert_eq!(region::depth(), 0);
        assert!(!in_preemptible_context());
    }

    #[test]
    fn each_context_keeps_its_own_rounding_mode() {
        const DOWN: u32 = 1;
        const UP: u32 = 2;
        let caller = FpControl::save();
        let mut ctx = Context::new(64 * 1024, false, move |s| {
            FpControl::save().with_rounding(UP).restore();
            s.suspend();
            assert_eq!(FpControl::save().rounding(), UP, "kept across a suspend");
        })
        .expect("stack");
        assert!(!ctx.resume());
        assert_eq!(
            FpControl::save(),
            caller,
            "the context's mode did not leak out"
        );
        caller.with_rounding(DOWN).restore();
        assert!(ctx.resume(), "the body's assertion held");
        assert_eq!(FpControl::save().rounding(), DOWN, "ours came back");
        caller.restore();
    }
}
