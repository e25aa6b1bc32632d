//! Running a transaction in a preemptible context while an urgent one preempts it at a chosen
//! point, the way a worker does, but deterministically (see `overtake_runtime::preempt::inject`).

use std::cell::RefCell;
use std::sync::mpsc;
use std::time::Duration;

use overtake_runtime::preempt::inject::{self, Point};
use overtake_runtime::preempt::{self, PreemptTarget};
use overtake_runtime::{Context, NoPreemptGuard};

thread_local! {
    /// The urgent context of the worker on this thread.
    static URGENT: RefCell<Option<Context>> = const { RefCell::new(None) };
}

/// The preemption hook: run the urgent context until it suspends.
fn run_urgent() {
    URGENT.with(|u| {
        if let Some(ctx) = u.borrow_mut().as_mut() {
            ctx.resume();
        }
    });
}

/// How long a sweep may take before it is declared hung. Generous: it only fails when a context
/// waits for a paused one, which never resolves.
const HANG: Duration = Duration::from_secs(120);

/// Runs `low` in a preemptible context, preempted at the `nth` occurrence of `point` (counted from
/// its start), where `urgent` runs in a second, non-preemptible context (once). Returns whether
/// the preemption happened, i.e. whether `low` met `nth` such points.
pub fn preempt_once_at(
    point: Point,
    nth: u32,
    low: impl FnOnce() + 'static,
    urgent: impl FnOnce() + 'static,
) -> bool {
    let registration =
        preempt::register_worker(PreemptTarget::new(), 0, run_urgent).expect("register worker");
    let mut urgent = Some(urgent);
    let ctx = Context::new(1 << 20, false, move |s| {
        if let Some(work) = urgent.take() {
            work();
        }
        s.suspend();
    })
    .expect("urgent stack");
    URGENT.with(|u| *u.borrow_mut() = Some(ctx));
    let mut low_ctx = Context::new(1 << 20, true, move |_| {
        inject::inject(point, nth, 0);
        low();
        inject::stop();
    })
    .expect("low stack");
    assert!(low_ctx.resume(), "the low-priority work ran to its end");
    let fired = inject::fired(point);
    // Drop the contexts inside a region: their stacks go back to the allocator.
    let _region = NoPreemptGuard::new();
    URGENT.with(|u| drop(u.borrow_mut().take()));
    drop(low_ctx);
    drop(registration);
    fired > 0
}

/// Calls `case(n)` for n = 1, 2, ... until it reports that the n-th point was never reached, each
/// on a fresh thread, failing if one hangs. `case` sets up its own database and runs
/// [`preempt_once_at`]. Returns how many positions were swept.
pub fn sweep(case: impl Fn(u32) -> bool + Send + Sync + Clone + 'static) -> u32 {
    let mut n = 1;
    loop {
        let (tx, rx) = mpsc::channel();
        let c = case.clone();
        std::thread::spawn(move || {
            let reached = c(n);
            let _ = tx.send(reached);
        });
        match rx.recv_timeout(HANG) {
            Ok(true) => n += 1,
            Ok(false) => return n - 1,
            Err(mpsc::RecvTimeoutError::Timeout) => panic!(
                "preempted at point {n}: the urgent transaction waited for the paused one and \
                 never finished"
            ),
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                panic!("preempted at point {n}: the case panicked (see above)")
            }
        }
    }
}
