//! Deterministic preemption, for tests.
//!
//! A signal lands wherever the machine's timing puts it, so a test that needs a preemption inside a
//! particular window, or a certain number of them, is a test of luck: it fails on a loaded machine
//! and passes where the bug is. This module lets the worker registered on the calling thread
//! preempt itself at chosen points instead: the `first`-th [`Point`] from now, then every
//! `every`-th one after it. Because the same thread running the same code meets the same points in
//! the same order, a test can sweep the preemption over every position of a transaction (first =
//! 1, 2, 3, ... until [`fired`] stops growing) and assert what must hold at each.
//!
//! An injected preemption takes exactly the path a requested one takes: the worker's hook runs
//! inside a region, on the preempted context's stack. Points are only counted while a preemptible
//! context runs (nowhere else can a preemption land). The schedules live in the thread's worker
//! and region state; arming them is the only way they change, so production code, which never
//! arms them, pays one thread-local load at each outermost region exit.
//!
//! Must never be armed by anything but tests and diagnostics.

use crate::region;

/// Where an injected preemption lands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Point {
    /// A call to [`record_access`](super::record_access) (the engine's poll point). Inside a
    /// region the preemption is deferred to the region's end, as a real request would be.
    RecordAccess,
    /// The end of an outermost non-preemptible region: right after an index call, a commit, an
    /// allocation, an epoch exit, ... the first instruction a signal could preempt.
    RegionExit,
}

/// Injects a preemption at the `first`-th `point` met on this thread from now (`first >= 1`;
/// 0 stops injecting there), then at every `every`-th one after it (`every == 0`: only once).
/// The thread must be a registered worker (see [`register_worker`](super::register_worker)),
/// whose hook the preemption calls.
pub fn inject(point: Point, first: u32, every: u32) {
    match point {
        Point::RecordAccess => super::WORKER.with(|w| {
            w.inject.arm(first, every);
            // The flag record accesses load must send them to the counting slow path (or back).
            w.set_polling(w.poll_every.get());
        }),
        Point::RegionExit => region::inject_at_exits(first, every),
    }
}

/// Stops injecting at both kinds of point.
pub fn stop() {
    inject(Point::RecordAccess, 0, 0);
    inject(Point::RegionExit, 0, 0);
}

/// Preemptions injected at `point` on this thread so far.
pub fn fired(point: Point) -> u64 {
    match point {
        Point::RecordAccess => super::WORKER.with(|w| w.inject.fired()),
        Point::RegionExit => region::exit_injections_fired(),
    }
}

thread_local! {
    /// The urgent context of [`run_preempted`] on this thread.
    static URGENT: std::cell::RefCell<Option<crate::Context>> =
        const { std::cell::RefCell::new(None) };
}

/// The preemption hook of [`run_preempted`]: run the urgent context until it suspends.
fn run_urgent() {
    URGENT.with(|u| {
        if let Some(ctx) = u.borrow_mut().as_mut() {
            let _ = ctx.resume();
        }
    });
}

/// Runs `low` to its end in a preemptible context on this thread, registered as a worker whose
/// every preemption runs `urgent` once, in a second, non-preemptible context (as a scheduler's
/// urgent context would), and then resumes `low` where it was. `low` arms the preemptions it
/// wants with [`inject`] (which it should [`stop`] before it returns). Returns how many
/// preemptions were served.
///
/// The thread must not already be a registered worker.
pub fn run_preempted(
    low: impl FnOnce() + 'static,
    mut urgent: impl FnMut() + 'static,
) -> std::io::Result<u64> {
    let target = super::PreemptTarget::new();
    let registration = super::register_worker(std::sync::Arc::clone(&target), 0, run_urgent)?;
    let urgent_ctx = crate::Context::new(1 << 20, false, move |s| {
        loop {
            urgent();
            s.suspend();
        }
    })?;
    URGENT.with(|u| *u.borrow_mut() = Some(urgent_ctx));
    let mut low_ctx = crate::Context::new(1 << 20, true, move |_| low())?;
    // `low` never suspends itself: a preemption runs the urgent context from inside it.
    let finished = low_ctx.resume();
    debug_assert!(finished.is_finished());
    // Dropping a suspended context unwinds it; its stack goes back to the allocator.
    let region = region::NoPreemptGuard::new();
    URGENT.with(|u| drop(u.borrow_mut().take()));
    drop(low_ctx);
    drop(region);
    let served = target.stats().served;
    drop(registration);
    Ok(served)
}
