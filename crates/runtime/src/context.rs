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
//! Each side gets back the region depth it had when it switched away: a preempted context
//! suspends from inside its preemption hook's region, and the scheduler it returns to must not
//! inherit that region (nor the context the scheduler runs next).
//! Contexts never migrate between threads. Each context keeps its own floating-point control
//! state (rounding mode, exception masks) across switches, as the ABI promises for any call.
//!
//! A context can suspend itself in two ways: through the [`Suspender`] its body was given, or,
//! from anywhere in code it runs (a preemption hook, a park deep inside the engine), through
//! [`suspend_current`]. Either way it says why ([`Suspension`]), and the resumer learns it from
//! [`Context::resume`]: that is how a scheduler knows whether a task finished, was preempted or
//! waits for an event, without any state of its own on the side.

use std::cell::Cell;
use std::io;

use corosensei::stack::{DefaultStack, Stack};
use corosensei::{Coroutine, CoroutineResult, Yielder};

use crate::fp_control::FpControl;
use crate::region;
use crate::running::{current_preemptible_stack, set_current_stack};

/// Why a context gave control back to its resumer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Suspension {
    /// It suspended itself through its [`Suspender`] (e.g. between jobs).
    Yielded,
    /// A preemption paused it in favour of more urgent work.
    Preempted,
    /// It waits for an event (see [`crate::park`]).
    Parked,
}

/// What [`Context::resume`] saw happen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resumed {
    /// The context suspended itself, for this reason; resuming it continues where it was.
    Suspended(Suspension),
    /// The context's body returned.
    Finished,
}

impl Resumed {
    /// True if the body returned.
    pub fn is_finished(self) -> bool {
        self == Resumed::Finished
    }
}

type ContextYielder = Yielder<(), Suspension>;

/// What this thread knows about the context running on it (its stack bounds, which the signal
/// handler reads, are in [`crate::running`]).
struct CurrentContext {
    /// The running context's yielder (null: none runs), for [`suspend_current`]. Never read by a
    /// signal handler.
    yielder: Cell<*const ContextYielder>,
}

thread_local! {
    static CURRENT: CurrentContext = const {
        CurrentContext {
            yielder: Cell::new(std::ptr::null()),
        }
    };
}

pub use crate::running::in_preemptible_context;

fn set_current_yielder(yielder: *const ContextYielder) {
    CURRENT.with(|c| c.yielder.set(yielder));
}

/// Switches from the context that owns `yielder` back to its resumer, inside a region that the
/// resumer ends; returns when the context is resumed again.
fn suspend_with(yielder: &ContextYielder, why: Suspension) {
    let own_depth = region::depth();
    region::raise();
    let fp = FpControl::save();
    // A context dropped while suspended is unwound from here (`Context`'s drop): the regions it
    // suspended inside end as the unwind drops their guards, so the thread's depth must count
    // them again first, or their drops would take it below what the dropper holds.
    struct Unwound(u32);
    impl Drop for Unwound {
        fn drop(&mut self) {
            if std::thread::panicking() {
                region::set_depth_raw(region::depth() + self.0);
            }
        }
    }
    let unwound = Unwound(own_depth);
    yielder.suspend(why);
    std::mem::forget(unwound);
    // Resumed: this context runs on this thread again, at the depth it left (see
    // `region::set_depth_for_switch`).
    region::set_depth_for_switch(own_depth + 1);
    set_current_yielder(yielder);
    fp.restore();
    region::lower();
}

/// Suspends the context running on this thread, telling its resumer `why`; returns when it is
/// resumed. Returns `false` at once if no context is running here (plain thread code).
pub fn suspend_current(why: Suspension) -> bool {
    let yielder = CURRENT.with(|c| c.yielder.get());
    // SAFETY: the pointer is non-null only while the context owning that yielder runs on this
    // thread: its body sets it when it starts and whenever it is resumed, and `Context::resume`
    // puts back the resumer's value (null on a plain thread) when the context suspends or
    // returns. A corosensei yielder lives on the coroutine's own stack for as long as its body
    // runs, and we are inside that body (this thread runs the context), so it is alive.
    match unsafe { yielder.as_ref() } {
        Some(yielder) => {
            suspend_with(yielder, why);
            true
        }
        None => false,
    }
}

/// True if a context (preemptible or not) is running on this thread.
pub fn in_context() -> bool {
    CURRENT.with(|c| !c.yielder.get().is_null())
}

/// What a context's body uses to suspend itself.
pub struct Suspender<'a> {
    yielder: &'a ContextYielder,
}

impl Suspender<'_> {
    /// Suspends the context ([`Suspension::Yielded`]); returns when it is resumed.
    pub fn suspend(&self) {
        suspend_with(self.yielder, Suspension::Yielded);
    }
}

impl Drop for Context {
    /// Unwinds a context that is suspended mid-body (its guards and values are dropped), inside
    /// a region of the dropper's: no region the unwind ends may end the dropper's outermost one
    /// and run its preemption hook from a destructor.
    fn drop(&mut self) {
        if self.coroutine.done() {
            return;
        }
        let own_depth = region::depth();
        region::set_depth_raw(own_depth + 1);
        self.coroutine.force_unwind();
        region::set_depth_raw(own_depth);
    }
}

/// A stackful context.
pub struct Context {
    coroutine: Coroutine<(), Suspension, (), DefaultStack>,
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
        let coroutine = Coroutine::with_stack(stack, move |yielder: &ContextYielder, ()| {
            set_current_yielder(yielder);
            // The resumer raised its depth for the switch; a body starts outside every region.
            region::set_depth_for_switch(1);
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

    /// Runs the context until it suspends or its body returns.
    pub fn resume(&mut self) -> Resumed {
        if self.coroutine.done() {
            return Resumed::Finished;
        }
        let previous = current_preemptible_stack();
        let previous_yielder = CURRENT.with(|c| c.yielder.get());
        let own_depth = region::depth();
        region::raise();
        set_current_stack(self.preemptible.then_some(self.bounds));
        let previous_bounds = crate::stack::enter(Some(self.bounds));
        // Restores the caller's view even if the body panics (the panic resurfaces here).
        struct Restore(
            Option<(usize, usize)>,
            *const ContextYielder,
            Option<(usize, usize)>,
        );
        impl Drop for Restore {
            fn drop(&mut self) {
                set_current_stack(self.0);
                set_current_yielder(self.1);
                crate::stack::enter(self.2);
            }
        }
        let restore = Restore(previous, previous_yielder, previous_bounds);
        let fp = FpControl::save();
        let result = self.coroutine.resume(());
        // Back at the depth this side had, whatever regions the context suspended from.
        region::set_depth_for_switch(own_depth + 1);
        fp.restore();
        drop(restore);
        region::lower();
        match result {
            CoroutineResult::Yield(why) => Resumed::Suspended(why),
            CoroutineResult::Return(()) => Resumed::Finished,
        }
    }

    /// Whether the context's body has returned (a context that has not is unwound when dropped).
    pub fn is_finished(&self) -> bool {
        self.coroutine.done()
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
    fn a_context_dropped_while_suspended_in_a_region_unwinds_without_unbalancing_regions() {
        let dropped = Rc::new(Cell::new(false));
        struct Flag(Rc<Cell<bool>>);
        impl Drop for Flag {
            fn drop(&mut self) {
                self.0.set(true);
            }
        }
        let flag = Flag(Rc::clone(&dropped));
        let mut ctx = Context::new(64 * 1024, true, move |_| {
            let _flag = &flag;
            // As a task parking does: suspended from inside regions of its own.
            let _outer = crate::region::NoPreemptGuard::new();
            let _region = crate::region::NoPreemptGuard::new();
            assert!(suspend_current(Suspension::Parked));
            unreachable!("never resumed");
        })
        .expect("stack");
        assert!(matches!(
            ctx.resume(),
            Resumed::Suspended(Suspension::Parked)
        ));
        assert_eq!(region::depth(), 0);
        drop(ctx);
        assert!(dropped.get(), "the suspended body's values were dropped");
        assert_eq!(
            region::depth(),
            0,
            "the unwind ended exactly its own regions"
        );
    }

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
            let _ = inner_for_outer.borrow_mut().resume(); // nested: inner suspends back into us
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
        assert_eq!(outer.resume(), Resumed::Suspended(Suspension::Yielded));
        assert_eq!(region::depth(), 0);
        assert!(!inner.borrow_mut().resume().is_finished());
        assert!(outer.resume().is_finished(), "the body returned");
        assert!(
            outer.resume().is_finished(),
            "a finished context stays finished"
        );
        assert_eq!(log.take(), vec![1, 100, 2, 101, 3]);
        assert_eq!(region::depth(), 0);
        assert!(!in_preemptible_context());
    }

    #[test]
    fn code_deep_in_a_context_suspends_it_and_says_why() {
        fn wait_for_event() {
            assert!(suspend_current(Suspension::Parked), "a context runs here");
        }
        assert!(
            !suspend_current(Suspension::Parked),
            "no context on a plain thread"
        );
        assert!(!in_context());
        let steps = Rc::new(Cell::new(0));
        let seen = Rc::clone(&steps);
        let inner = Rc::new(std::cell::RefCell::new(
            Context::new(64 * 1024, false, |_| {
                assert!(suspend_current(Suspension::Preempted));
            })
            .expect("stack"),
        ));
        let inner_for_outer = Rc::clone(&inner);
        let mut outer = Context::new(64 * 1024, true, move |_| {
            seen.set(1);
            wait_for_event();
            seen.set(2);
            // A nested context suspends only itself, back into this one...
            assert_eq!(
                inner_for_outer.borrow_mut().resume(),
                Resumed::Suspended(Suspension::Preempted)
            );
            assert!(in_context(), "...which still runs and can suspend itself");
            wait_for_event();
            seen.set(3);
        })
        .expect("stack");
        assert_eq!(outer.resume(), Resumed::Suspended(Suspension::Parked));
        assert_eq!(steps.get(), 1);
        assert!(!in_context(), "the resumer's view is back");
        assert_eq!(outer.resume(), Resumed::Suspended(Suspension::Parked));
        assert_eq!(steps.get(), 2);
        assert_eq!(outer.resume(), Resumed::Finished);
        assert_eq!(steps.get(), 3);
        assert_eq!(region::depth(), 0);
        assert!(inner.borrow_mut().resume().is_finished());
    }

    #[test]
    fn each_side_of_a_switch_keeps_its_own_region_depth() {
        let mut ctx = Context::new(64 * 1024, true, |_| {
            let _outer = region::NoPreemptGuard::new();
            let _inner = region::NoPreemptGuard::new();
            assert!(suspend_current(Suspension::Preempted));
            assert_eq!(region::depth(), 2, "the context's regions are still open");
        })
        .expect("stack");
        let other = Rc::new(std::cell::RefCell::new(
            Context::new(64 * 1024, true, |s| {
                assert_eq!(region::depth(), 0, "a body starts outside every region");
                s.suspend();
                assert_eq!(region::depth(), 0);
            })
            .expect("stack"),
        ));
        assert_eq!(ctx.resume(), Resumed::Suspended(Suspension::Preempted));
        assert_eq!(region::depth(), 0, "the resumer does not inherit them");
        assert!(!other.borrow_mut().resume().is_finished());
        assert_eq!(region::depth(), 0);
        {
            let _mine = region::NoPreemptGuard::new();
            assert!(other.borrow_mut().resume().is_finished());
            assert_eq!(region::depth(), 1, "a resumer inside a region gets it back");
        }
        assert!(ctx.resume().is_finished());
        assert_eq!(region::depth(), 0);
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
        assert!(!ctx.resume().is_finished());
        assert_eq!(
            FpControl::save(),
            caller,
            "the context's mode did not leak out"
        );
        caller.with_rounding(DOWN).restore();
        assert!(ctx.resume().is_finished(), "the body's assertion held");
        assert_eq!(FpControl::save().rounding(), DOWN, "ours came back");
        caller.restore();
    }
}
