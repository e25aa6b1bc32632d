//! Non-preemptible regions.
//!
//! A region is entered by creating a [`NoPreemptGuard`] and left when the guard is dropped. Regions
//! nest: a per-worker (per-OS-thread) depth counter counts how many guards are alive. While the depth
//! is non-zero, the worker must not be preempted: a preemption request that arrives then only sets
//! the `pending` flag, and the outermost guard's drop runs the worker's exit hook (which switches to
//! more urgent work) as soon as the region ends.
//!
//! Why per worker and not per context: a context can only be preempted at depth zero, and every
//! voluntary switch happens inside a region, so whenever a context is switched out the depth it
//! leaves behind is the depth the next context expects to find. One counter per thread is enough and
//! keeps the check a single thread-local load.
//!
//! The state is read from signal handlers running on the same thread (the preemption backstop), so it
//! lives in atomics with compiler fences around the region boundaries: a handler must never observe
//! code of the region as executing while the counter still reads zero.
//!
//! The counter is changed with a plain load and store, not a read-modify-write: only this thread
//! writes it, and a `lock`-prefixed increment on every region (every allocation, every index call)
//! costs more than the allocation itself. A signal landing between the load and the store cannot
//! lose an update: the handler either changes nothing (it defers, or has nothing to do) or raises
//! the depth for a trampoline that lowers it again before the interrupted code resumes, so the
//! counter is back at the value that was loaded when the store happens.
//!
//! This module must never block, allocate, or panic: it runs inside the global allocator.

use std::cell::Cell;
use std::marker::PhantomData;
use std::panic::Location;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU32, Ordering, compiler_fence};

/// Per-thread region state. `const`-initialised and without a destructor, so accessing it never
/// allocates and is valid at any time in the thread's life, including inside the allocator and
/// inside signal handlers.
struct RegionState {
    depth: AtomicU32,
    /// [`PENDING`] and [`INJECTING`]: one word, so that an outermost region exit with nothing to
    /// do costs one load, as it did before injection existed.
    flags: AtomicU8,
    exit_hook: Cell<Option<fn()>>,
    /// Injected preemptions at outermost region exits (tests only; see `preempt::inject`).
    inject: InjectSchedule,
    /// Lengths of outermost regions, while tracing (see [`trace`]).
    trace: RegionTraceState,
}

thread_local! {
    static STATE: RegionState = const {
        RegionState {
            depth: AtomicU32::new(0),
            flags: AtomicU8::new(0),
            exit_hook: Cell::new(None),
            inject: InjectSchedule::off(),
            trace: RegionTraceState::new(),
        }
    };
}

/// When to inject a preemption, counted in occurrences of some event on one thread: at the
/// `countdown`-th occurrence from now, then every `every`-th one after it (`every == 0`: once).
/// `countdown == 0` means off. Plain cells: only the owning thread reads or writes them, and a
/// signal handler never does.
pub(crate) struct InjectSchedule {
    countdown: Cell<u32>,
    every: Cell<u32>,
    fired: Cell<u64>,
}

impl InjectSchedule {
    pub(crate) const fn off() -> Self {
        InjectSchedule {
            countdown: Cell::new(0),
            every: Cell::new(0),
            fired: Cell::new(0),
        }
    }

    pub(crate) fn arm(&self, first: u32, every: u32) {
        self.countdown.set(first);
        self.every.set(every);
    }

    pub(crate) fn is_armed(&self) -> bool {
        self.countdown.get() != 0
    }

    /// True if the next occurrence fires (without counting it).
    pub(crate) fn fires_next(&self) -> bool {
        self.countdown.get() == 1
    }

    /// Counts one occurrence; true if a preemption is to be injected at it.
    #[inline]
    pub(crate) fn tick(&self) -> bool {
        match self.countdown.get() {
            0 => false,
            1 => {
                self.countdown.set(self.every.get());
                self.fired.set(self.fired.get() + 1);
                true
            }
            n => {
                self.countdown.set(n - 1);
                false
            }
        }
    }

    pub(crate) fn fired(&self) -> u64 {
        self.fired.get()
    }
}

/// A preemption arrived inside a region (set by the signal handler or a poll; served and cleared
/// at the outermost region's end).
const PENDING: u8 = 1;
/// A test armed preemptions at region exits (see `preempt::inject`).
const INJECTING: u8 = 2;

/// Injects preemptions at outermost region exits of this thread (see `preempt::inject`).
pub(crate) fn inject_at_exits(first: u32, every: u32) {
    STATE.with(|s| {
        s.inject.arm(first, every);
        if s.inject.is_armed() {
            s.flags.fetch_or(INJECTING, Ordering::Relaxed);
        } else {
            s.flags.fetch_and(!INJECTING, Ordering::Relaxed);
        }
    });
}

/// Injected preemptions fired at region exits on this thread so far.
pub(crate) fn exit_injections_fired() -> u64 {
    STATE.with(|s| s.inject.fired())
}

/// RAII guard for a non-preemptible region. Create it before code that must not be paused (latches,
/// index calls, commit, allocator calls, epoch enter/exit) and let it drop when that code is done.
///
/// The guard is neither `Send` nor `Sync`: the region belongs to the thread that entered it.
#[must_use = "a region ends as soon as its guard is dropped"]
pub struct NoPreemptGuard {
    _not_send: PhantomData<*const ()>,
}

impl NoPreemptGuard {
    /// Enters a (possibly nested) non-preemptible region.
    #[inline]
    #[track_caller]
    pub fn new() -> Self {
        raise();
        if TRACING.load(Ordering::Relaxed) {
            trace::entered(Location::caller());
        }
        NoPreemptGuard {
            _not_send: PhantomData,
        }
    }
}

/// Enters a region without a guard. For regions that begin in one context and end in another (a
/// context switch raises the depth before switching; the context switched to lowers it), and for
/// the signal handler, which raises it on behalf of the trampoline it injects.
#[inline]
pub(crate) fn raise() {
    STATE.with(|s| {
        let depth = s.depth.load(Ordering::Relaxed);
        s.depth.store(depth + 1, Ordering::Relaxed);
    });
    // The increment must be visible to a signal handler on this thread before any code of the
    // region runs; the handler runs on the same thread, so a compiler fence is sufficient.
    compiler_fence(Ordering::SeqCst);
}

/// Leaves a region entered with [`raise`]; like dropping a guard, runs the exit hook if this ends
/// the outermost region with a preemption pending.
#[inline]
pub(crate) fn lower() {
    compiler_fence(Ordering::SeqCst);
    let hook = STATE.with(|s| {
        let previous = s.depth.load(Ordering::Relaxed);
        debug_assert!(previous > 0, "region depth underflow");
        s.depth.store(previous.wrapping_sub(1), Ordering::Relaxed);
        // The depth must read zero before `pending` is looked at: a signal in between then either
        // finds the region still open and sets `pending` (seen below), or finds it closed and
        // preempts directly.
        compiler_fence(Ordering::SeqCst);
        if previous != 1 {
            return None;
        }
        let flags = s.flags.load(Ordering::Relaxed);
        if flags == 0 {
            None
        } else if flags & PENDING != 0 {
            // An atomic read-modify-write (only on this rare path): a signal setting the flag
            // meanwhile must not have its request lost; the hook below serves it anyway.
            s.flags.fetch_and(!PENDING, Ordering::Relaxed);
            s.exit_hook.get()
        } else if crate::running::in_preemptible_context() && s.inject.tick() {
            // A test asked for a preemption here: served exactly like a deferred one. Only exits
            // in a preemptible context count: nowhere else could a preemption land.
            s.exit_hook.get()
        } else {
            None
        }
    });
    if let Some(hook) = hook {
        hook();
    }
}

impl Default for NoPreemptGuard {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for NoPreemptGuard {
    #[inline]
    fn drop(&mut self) {
        if TRACING.load(Ordering::Relaxed) {
            trace::leaving();
        }
        lower();
    }
}

/// Leaves a region entered with [`raise`] without running the exit hook (the caller has just
/// served whatever was pending).
#[inline]
pub(crate) fn lower_quietly() {
    compiler_fence(Ordering::SeqCst);
    STATE.with(|s| {
        let depth = s.depth.load(Ordering::Relaxed);
        s.depth.store(depth.wrapping_sub(1), Ordering::Relaxed);
    });
}

/// Sets the depth while a context switch is under way (so inside a region: `depth >= 1`). The
/// depth counts the regions of whatever code runs on the thread, and a context may suspend from
/// inside regions of its own (a preempted context suspends from its hook's region): the code
/// switched to must find the depth it had when it switched away, not the suspending context's.
/// Called by the switch code on the side being switched to, before it lowers the depth.
#[inline]
pub(crate) fn set_depth_for_switch(depth: u32) {
    debug_assert!(depth >= 1, "a switch happens inside a region");
    compiler_fence(Ordering::SeqCst);
    STATE.with(|s| {
        s.depth.store(depth, Ordering::Relaxed);
        // A region that spans a switch measures the other context's time, not its own work.
        s.trace.start.set(0);
    });
    compiler_fence(Ordering::SeqCst);
}

/// Sets this thread's depth without a switch's checks or an exit hook: for unwinding a suspended
/// context, whose regions end in another thread state's frames (see `context`).
pub(crate) fn set_depth_raw(depth: u32) {
    compiler_fence(Ordering::SeqCst);
    STATE.with(|s| s.depth.store(depth, Ordering::Relaxed));
    compiler_fence(Ordering::SeqCst);
}

/// Runs `f` inside a non-preemptible region.
#[inline]
#[track_caller]
pub fn non_preemptible<R>(f: impl FnOnce() -> R) -> R {
    let _guard = NoPreemptGuard::new();
    f()
}

/// Current nesting depth of regions on this thread (0 = preemptible).
#[inline]
pub fn depth() -> u32 {
    STATE.with(|s| s.depth.load(Ordering::Relaxed))
}

/// True when this thread is outside every region, i.e. it may be preempted right now.
#[inline]
pub fn is_preemptible() -> bool {
    depth() == 0
}

/// Records that a preemption was requested while this thread was inside a region. The outermost
/// guard's drop will clear the flag and call the exit hook. Async-signal-safe.
#[inline]
pub fn defer_preemption() {
    STATE.with(|s| s.flags.fetch_or(PENDING, Ordering::Relaxed));
}

/// True if a deferred preemption is waiting for the current region to end.
#[inline]
pub fn is_pending() -> bool {
    STATE.with(|s| s.flags.load(Ordering::Relaxed) & PENDING != 0)
}

/// Clears and returns the pending flag (used by a worker that serves the request by other means,
/// e.g. at a transaction boundary, so that the exit hook does not fire needlessly).
#[inline]
pub fn take_pending() -> bool {
    STATE.with(|s| s.flags.fetch_and(!PENDING, Ordering::Relaxed) & PENDING != 0)
}

/// Installs (or removes) the function called when the outermost region ends with a deferred
/// preemption pending. The preemption machinery installs its "serve the request" routine here;
/// threads without a hook simply drop the request.
pub fn set_exit_hook(hook: Option<fn()>) {
    STATE.with(|s| s.exit_hook.set(hook));
}

/// Whether outermost regions are being timed (see [`trace`]).
static TRACING: AtomicBool = AtomicBool::new(false);

/// Buckets of the region-length histogram: `[0, 1)`, `[1, 2)`, `[2, 4)`, ... microseconds.
pub const TRACE_BUCKETS: usize = 24;

/// How many of the longest regions each thread remembers.
const LONGEST: usize = 8;

/// Per-thread region timing (all plain cells: only the owning thread touches them).
struct RegionTraceState {
    /// When the outermost region in progress began (monotonic nanoseconds; 0: not timed).
    start: Cell<u64>,
    site: Cell<Option<&'static Location<'static>>>,
    buckets: [Cell<u64>; TRACE_BUCKETS],
    longest: [Cell<(u64, Option<&'static Location<'static>>)>; LONGEST],
    longest_since_mark: Cell<u64>,
}

impl RegionTraceState {
    const fn new() -> Self {
        RegionTraceState {
            start: Cell::new(0),
            site: Cell::new(None),
            buckets: [const { Cell::new(0) }; TRACE_BUCKETS],
            longest: [const { Cell::new((0, None)) }; LONGEST],
            longest_since_mark: Cell::new(0),
        }
    }
}

/// Timing the non-preemptible regions: how long each outermost region (one opened by a
/// [`NoPreemptGuard`]) lasted, as a histogram per thread, the longest ones with the code that
/// opened them, and the longest since a mark (a worker marks each task slice). A region's length
/// is the time a preemption that arrives in it waits, so this is where non-preemptible work shows
/// up in urgent latencies. Off by default: when on, each outermost region reads the clock twice.
/// A region that spans a context switch (a voluntary switch runs inside one) is not counted.
pub mod trace {
    use super::*;

    /// What one thread recorded.
    #[derive(Clone, Debug, Default, PartialEq, Eq)]
    pub struct RegionTrace {
        /// Outermost regions per length bucket (see [`TRACE_BUCKETS`]).
        pub buckets: Vec<u64>,
        /// The longest regions, in nanoseconds, with where they were opened (longest first).
        pub longest: Vec<(u64, &'static Location<'static>)>,
    }

    impl RegionTrace {
        /// Adds `other`'s regions to these (keeping the longest of both).
        pub fn merge(&mut self, other: &RegionTrace) {
            self.buckets.resize(TRACE_BUCKETS, 0);
            for (mine, theirs) in self.buckets.iter_mut().zip(&other.buckets) {
                *mine += theirs;
            }
            self.longest.extend_from_slice(&other.longest);
            self.longest.sort_by_key(|l| std::cmp::Reverse(l.0));
            self.longest.truncate(LONGEST);
        }

        /// The lower edge of bucket `i`, in microseconds.
        pub fn bucket_floor_us(i: usize) -> u64 {
            if i == 0 { 0 } else { 1 << (i - 1) }
        }
    }

    fn now_ns() -> u64 {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: clock_gettime writes one timespec into the valid, exclusively borrowed `ts`;
        // CLOCK_MONOTONIC always exists. Async-signal-safe and allocation-free (vDSO).
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
        ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64 + 1
    }

    /// Turns timing on or off, for every thread.
    pub fn set_enabled(on: bool) {
        TRACING.store(on, Ordering::Relaxed);
    }

    pub(super) fn entered(site: &'static Location<'static>) {
        STATE.with(|s| {
            if s.depth.load(Ordering::Relaxed) == 1 {
                s.trace.start.set(now_ns());
                s.trace.site.set(Some(site));
            }
        });
    }

    pub(super) fn leaving() {
        STATE.with(|s| {
            let t = &s.trace;
            let start = t.start.get();
            if s.depth.load(Ordering::Relaxed) != 1 || start == 0 {
                return;
            }
            t.start.set(0);
            let length = now_ns().saturating_sub(start);
            let us = length / 1_000;
            let bucket = if us == 0 {
                0
            } else {
                (64 - us.leading_zeros() as usize).min(TRACE_BUCKETS - 1)
            };
            t.buckets[bucket].set(t.buckets[bucket].get() + 1);
            if length > t.longest_since_mark.get() {
                t.longest_since_mark.set(length);
            }
            let shortest = (0..LONGEST)
                .min_by_key(|&i| t.longest[i].get().0)
                .unwrap_or(0);
            if length > t.longest[shortest].get().0 {
                t.longest[shortest].set((length, t.site.get()));
            }
        });
    }

    /// Starts a new "longest since" window on this thread.
    pub fn mark() {
        STATE.with(|s| s.trace.longest_since_mark.set(0));
    }

    /// The longest outermost region on this thread since [`mark`], in nanoseconds.
    pub fn longest_since_mark() -> u64 {
        STATE.with(|s| s.trace.longest_since_mark.get())
    }

    /// Takes what this thread recorded (and starts again from nothing).
    pub fn take() -> RegionTrace {
        STATE.with(|s| {
            let t = &s.trace;
            let buckets = t.buckets.iter().map(|b| b.replace(0)).collect();
            let mut longest: Vec<(u64, &'static Location<'static>)> = t
                .longest
                .iter()
                .filter_map(|l| {
                    let (length, site) = l.replace((0, None));
                    Some((length, site?))
                })
                .filter(|(length, _)| *length > 0)
                .collect();
            longest.sort_by_key(|l| std::cmp::Reverse(l.0));
            RegionTrace { buckets, longest }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn guards_nest_and_unwind_to_zero() {
        assert_eq!(depth(), 0);
        {
            let _a = NoPreemptGuard::new();
            assert_eq!(depth(), 1);
            {
                let _b = NoPreemptGuard::new();
                let _c = NoPreemptGuard::new();
                assert_eq!(depth(), 3);
                assert!(!is_preemptible());
            }
            assert_eq!(depth(), 1);
        }
        assert_eq!(depth(), 0);
        assert!(is_preemptible());
    }

    #[test]
    fn non_preemptible_returns_value_and_restores_depth() {
        let v = non_preemptible(|| {
            assert_eq!(depth(), 1);
            non_preemptible(|| depth() * 10)
        });
        assert_eq!(v, 20);
        assert_eq!(depth(), 0);
    }

    #[test]
    fn panic_inside_region_restores_depth() {
        let result = std::panic::catch_unwind(|| {
            let _g = NoPreemptGuard::new();
            let _h = NoPreemptGuard::new();
            panic!("boom");
        });
        assert!(result.is_err());
        assert_eq!(depth(), 0);
    }

    static HOOK_CALLS: AtomicUsize = AtomicUsize::new(0);
    fn counting_hook() {
        // The hook runs at depth zero, after the region that deferred the request has ended.
        assert_eq!(depth(), 0);
        HOOK_CALLS.fetch_add(1, Ordering::SeqCst);
    }

    #[test]
    fn deferred_preemption_fires_once_at_outermost_exit() {
        set_exit_hook(Some(counting_hook));
        let before = HOOK_CALLS.load(Ordering::SeqCst);
        {
            let _outer = NoPreemptGuard::new();
            {
                let _inner = NoPreemptGuard::new();
                defer_preemption();
                assert!(is_pending());
            }
            // Inner exit must not yield: still inside the outer region.
            assert_eq!(HOOK_CALLS.load(Ordering::SeqCst), before);
            assert!(is_pending());
        }
        assert_eq!(HOOK_CALLS.load(Ordering::SeqCst), before + 1);
        assert!(!is_pending());
        // A region without a pending request does not call the hook.
        drop(NoPreemptGuard::new());
        assert_eq!(HOOK_CALLS.load(Ordering::SeqCst), before + 1);
        set_exit_hook(None);
    }

    #[test]
    fn outermost_regions_are_timed_with_their_sites_while_tracing() {
        let _ = trace::take();
        trace::set_enabled(true);
        trace::mark();
        {
            let _outer = NoPreemptGuard::new();
            let _inner = NoPreemptGuard::new();
            let until = std::time::Instant::now() + std::time::Duration::from_micros(300);
            while std::time::Instant::now() < until {
                std::hint::spin_loop();
            }
        }
        trace::set_enabled(false);
        let t = trace::take();
        // Other tests on this thread's test harness may run regions too; this one is counted.
        assert!(t.buckets.iter().sum::<u64>() >= 1);
        assert!(t.buckets[9..].iter().sum::<u64>() >= 1, "{:?}", t.buckets);
        let (length, site) = t.longest[0];
        assert!(length >= 300_000, "{length}");
        assert_eq!(site.file(), file!(), "the site that opened it");
        assert!(trace::longest_since_mark() >= 300_000);
        assert_eq!(trace::take().longest, Vec::new(), "taken");
    }

    #[test]
    fn take_pending_cancels_the_hook() {
        set_exit_hook(Some(counting_hook));
        let before = HOOK_CALLS.load(Ordering::SeqCst);
        {
            let _g = NoPreemptGuard::new();
            defer_preemption();
            assert!(take_pending());
        }
        assert_eq!(HOOK_CALLS.load(Ordering::SeqCst), before);
        set_exit_hook(None);
    }
}
