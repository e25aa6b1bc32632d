//! Delivering a preemption request to a worker thread.
//!
//! A scheduler asks a worker to switch to urgent work through its [`PreemptTarget`]:
//!
//! - **poll**: [`PreemptTarget::request`] sets a flag on the target's own cache line. The engine
//!   calls [`record_access`] on every record it touches; every `poll_every` calls (1 for
//!   preemptive scheduling, N for cooperative yielding) it loads the flag. One thread-local load
//!   and one shared load: cheap enough for every record.
//! - **signal**: [`PreemptTarget::interrupt`] sends SIGURG to the worker thread. The handler never
//!   switches stacks; it only reads atomics. If the worker is in a preemptible context, outside
//!   every region and with room on its stack, it rewrites the interrupted instruction pointer so
//!   that returning from the handler (through the kernel, which restores the signal mask) enters
//!   `trampoline`: a call injected between two instructions of the running code. The trampoline
//!   saves all general registers, the flags and the full extended state, calls the worker's
//!   preemption hook, restores everything and returns to the interrupted instruction. If the worker
//!   is inside a region, the handler only marks the preemption pending; the region's end serves it.
//! - **uintr** (user interrupts) is detected but not available on this class of machine; see
//!   [`Delivery::check`].
//!
//! Whatever delivers the request, the worker's hook runs inside a non-preemptible region, on the
//! stack of the preempted context, and only while a preemptible context is running. This module
//! must never block or allocate in the signal handler.

pub mod inject;
mod signal;
mod trampoline;

use std::cell::Cell;
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, AtomicU64, Ordering};

use crate::padded::CachePadded;
use crate::{cpu, region, running};

/// How preemption requests reach a worker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delivery {
    /// The request flag only, polled at record accesses: cannot interrupt code that touches no
    /// records.
    Poll,
    /// The request flag, and SIGURG with call injection as the backstop for code that does not
    /// poll soon enough.
    Signal,
    /// Hardware user interrupts.
    Uintr,
}

impl Delivery {
    /// A short, stable name.
    pub fn name(self) -> &'static str {
        match self {
            Delivery::Poll => "poll",
            Delivery::Signal => "signal",
            Delivery::Uintr => "uintr",
        }
    }

    /// Whether this mechanism can be used on this machine, and if not, why.
    pub fn check(self) -> Result<(), Unavailable> {
        match self {
            Delivery::Poll => Ok(()),
            Delivery::Signal if crate::alloc::is_in_use() => Ok(()),
            Delivery::Signal => Err(Unavailable::NoRegionAllocator),
            Delivery::Uintr => {
                cpu::user_interrupts().map_err(|lack| match lack {
                    cpu::NoUserInterrupts::Cpu => Unavailable::NoUserInterruptsInCpu,
                    cpu::NoUserInterrupts::Kernel => Unavailable::NoUserInterruptsInKernel,
                })?;
                Err(Unavailable::NoUserInterruptBackend)
            }
        }
    }
}

/// Why a preemption mechanism cannot be used here. Its `Debug` says what is missing too, as
/// its `Display` does: `unwrap()` on a start that failed shows `Debug`.
#[derive(Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Unavailable {
    /// Signal delivery without the region-wrapped global allocator could pause a transaction
    /// inside `malloc` and deadlock its worker.
    #[error(
        "signal preemption needs the region-wrapped global allocator (`#[global_allocator] static \
         ALLOC: overtake_runtime::EngineAllocator = overtake_runtime::engine_allocator();`): \
         without it a signal can pause a transaction inside malloc and deadlock its worker"
    )]
    NoRegionAllocator,
    /// The CPU has no user interrupts.
    #[error("this CPU does not offer user interrupts (CPUID.(EAX=7,ECX=0):EDX[5] is 0)")]
    NoUserInterruptsInCpu,
    /// The kernel has no user-interrupt interface.
    #[error("the kernel does not support user interrupts (uintr_register_handler: ENOSYS)")]
    NoUserInterruptsInKernel,
    /// The hardware and kernel offer user interrupts, but this build cannot use them.
    #[error(
        "user interrupts are offered here, but this build has no uintr backend: it was developed \
         on machines without them, where it could not be validated"
    )]
    NoUserInterruptBackend,
}

impl std::fmt::Debug for Unavailable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = match self {
            Unavailable::NoRegionAllocator => "NoRegionAllocator",
            Unavailable::NoUserInterruptsInCpu => "NoUserInterruptsInCpu",
            Unavailable::NoUserInterruptsInKernel => "NoUserInterruptsInKernel",
            Unavailable::NoUserInterruptBackend => "NoUserInterruptBackend",
        };
        write!(f, "{name}: {self}")
    }
}

/// Counters of one worker's preemption machinery.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PreemptStats {
    /// Signals sent to the worker.
    pub signals_sent: u64,
    /// Signals that injected a call into a running context.
    pub injected: u64,
    /// Signals that arrived inside a region (served when it ended).
    pub deferred: u64,
    /// Times the worker's hook ran because of a request (poll, deferred signal or injection).
    pub served: u64,
}

impl std::ops::AddAssign for PreemptStats {
    /// Sums counters (of several workers, or several runs).
    fn add_assign(&mut self, other: PreemptStats) {
        self.signals_sent += other.signals_sent;
        self.injected += other.injected;
        self.deferred += other.deferred;
        self.served += other.served;
    }
}

/// The shared half of a worker's preemption machinery: what a scheduler thread uses to ask the
/// worker to switch. Lives on its own cache lines.
#[derive(Debug, Default)]
pub struct PreemptTarget {
    request: CachePadded<AtomicBool>,
    tid: AtomicI32,
    signals_sent: AtomicU64,
    injected: AtomicU64,
    deferred: AtomicU64,
    served: AtomicU64,
}

impl PreemptTarget {
    /// A target not yet attached to a thread.
    pub fn new() -> Arc<Self> {
        Arc::new(PreemptTarget::default())
    }

    /// Asks the worker to switch to urgent work at its next poll. Returns true if this is a new
    /// request, false if an earlier one is still untaken: a caller that escalates untaken requests
    /// (the signal backstop) must time each request from when it was new, not from an earlier
    /// one the worker has since taken up.
    #[inline]
    pub fn request(&self) -> bool {
        !self.request.swap(true, Ordering::AcqRel)
    }

    /// True while a request has not been taken up by the worker.
    #[inline]
    pub fn is_requested(&self) -> bool {
        self.request.load(Ordering::Acquire)
    }

    /// Takes up the request (called by the worker when it starts serving it). Returns whether one
    /// was pending.
    #[inline]
    pub fn acknowledge(&self) -> bool {
        self.request.swap(false, Ordering::AcqRel)
    }

    /// Sends SIGURG to the worker thread (the request flag should be set first, or the handler
    /// will see nothing to do).
    pub fn interrupt(&self) -> io::Result<()> {
        let tid = self.tid.load(Ordering::Acquire);
        if tid == 0 {
            return Err(io::Error::other("the worker thread has not registered yet"));
        }
        self.signals_sent.fetch_add(1, Ordering::Relaxed);
        signal::send(tid)
    }

    /// True once a worker thread has registered for this target.
    pub fn is_registered(&self) -> bool {
        self.tid.load(Ordering::Acquire) != 0
    }

    /// Counters so far.
    pub fn stats(&self) -> PreemptStats {
        PreemptStats {
            signals_sent: self.signals_sent.load(Ordering::Relaxed),
            injected: self.injected.load(Ordering::Relaxed),
            deferred: self.deferred.load(Ordering::Relaxed),
            served: self.served.load(Ordering::Relaxed),
        }
    }
}

/// Per-thread state of a registered worker. `const`-initialised, without a destructor: the signal
/// handler reads it.
struct WorkerSlot {
    target: AtomicPtr<PreemptTarget>,
    /// The flag a record access loads: [`NEVER`] when not polling, the target's request flag when
    /// polling every access, [`ALWAYS`] when polling every n-th (the slow path counts).
    poll_flag: AtomicPtr<AtomicBool>,
    poll_every: Cell<u32>,
    polls: Cell<u32>,
    hook: Cell<Option<fn()>>,
    /// Injected preemptions at record accesses (tests only; see [`inject`]).
    inject: region::InjectSchedule,
}

/// Poll flags that never change: "nothing to do" and "take the slow path".
static NEVER: AtomicBool = AtomicBool::new(false);
static ALWAYS: AtomicBool = AtomicBool::new(true);

fn static_flag(flag: &'static AtomicBool) -> *mut AtomicBool {
    std::ptr::from_ref(flag).cast_mut()
}

thread_local! {
    static WORKER: WorkerSlot = const {
        WorkerSlot {
            target: AtomicPtr::new(std::ptr::null_mut()),
            poll_flag: AtomicPtr::new(std::ptr::null_mut()),
            poll_every: Cell::new(0),
            polls: Cell::new(0),
            hook: Cell::new(None),
            inject: region::InjectSchedule::off(),
        }
    };
}

impl WorkerSlot {
    /// Sets the polling period and the flag record accesses load to match it.
    fn set_polling(&self, every: u32) {
        self.poll_every.set(every);
        self.polls.set(0);
        let target = self.target.load(Ordering::Relaxed);
        let flag = match every {
            _ if target.is_null() => static_flag(&NEVER),
            // Injection counts every access on the slow path.
            _ if self.inject.is_armed() => static_flag(&ALWAYS),
            0 => static_flag(&NEVER),
            // SAFETY: `target` is non-null, so it points into the `Arc` the registration holds
            // (see `with_target`); the field's address stays valid as long as that `Arc` does,
            // and the registration resets this pointer before releasing it.
            1 => std::ptr::from_ref::<AtomicBool>(unsafe { &(*target).request }).cast_mut(),
            _ => static_flag(&ALWAYS),
        };
        self.poll_flag.store(flag, Ordering::Relaxed);
    }
}

/// Keeps the calling thread registered as a worker; dropping it unregisters the thread.
#[must_use = "the thread stops being a worker when this is dropped"]
pub struct WorkerRegistration {
    target: Arc<PreemptTarget>,
    _not_send: std::marker::PhantomData<*const ()>,
}

impl WorkerRegistration {
    /// The target this worker answers to.
    pub fn target(&self) -> &Arc<PreemptTarget> {
        &self.target
    }

    /// Changes how often record accesses poll the request flag (0: never).
    pub fn set_poll_every(&self, every: u32) {
        WORKER.with(|w| w.set_polling(every));
    }
}

impl Drop for WorkerRegistration {
    fn drop(&mut self) {
        WORKER.with(|w| {
            w.target.store(std::ptr::null_mut(), Ordering::Release);
            w.inject.arm(0, 0);
            w.set_polling(0);
            w.hook.set(None);
        });
        region::set_exit_hook(None);
        self.target.tid.store(0, Ordering::Release);
    }
}

/// Registers the calling thread as a worker answering to `target`. `hook` is what a preemption
/// does: it runs inside a region, on the preempted context's stack, and returns when the context
/// may continue. Record accesses poll the request flag every `poll_every` accesses (0: never).
pub fn register_worker(
    target: Arc<PreemptTarget>,
    poll_every: u32,
    hook: fn(),
) -> io::Result<WorkerRegistration> {
    signal::install()?;
    target
        .tid
        .store(crate::os::thread::thread_id(), Ordering::Release);
    WORKER.with(|w| {
        w.hook.set(Some(hook));
        w.target
            .store(Arc::as_ptr(&target).cast_mut(), Ordering::Release);
        w.set_polling(poll_every);
    });
    region::set_exit_hook(Some(serve_in_region));
    Ok(WorkerRegistration {
        target,
        _not_send: std::marker::PhantomData,
    })
}

/// The target of the worker registered on this thread, for code running on it.
fn with_target<R>(f: impl FnOnce(&PreemptTarget) -> R) -> Option<R> {
    let ptr = WORKER.with(|w| w.target.load(Ordering::Acquire));
    // SAFETY: the pointer is either null or points into the `Arc` held by this thread's
    // `WorkerRegistration`, whose drop clears it before releasing the `Arc`; it is only read on
    // this thread, so it cannot be cleared concurrently.
    unsafe { ptr.as_ref() }.map(f)
}

/// Runs the hook if a preemptible context is running (the only place a preemption may land).
fn serve() {
    if !running::in_preemptible_context() {
        return;
    }
    if let Some(hook) = WORKER.with(|w| w.hook.get()) {
        with_target(|t| t.served.fetch_add(1, Ordering::Relaxed));
        hook();
    }
}

/// Serves a preemption inside a region: the region exit hook (a preemption arrived inside a
/// region that has just ended) and a poll that found a request. The region is left quietly: its
/// own exit must not count as a region exit an injected preemption could fire at (that would
/// preempt again at once), and requests that arrived meanwhile were served by the same hook.
#[cold]
#[inline(never)]
fn serve_in_region() {
    region::raise();
    serve();
    region::take_pending();
    region::lower_quietly();
}

/// Called by the engine on every record access: the cheap poll of the request flag. One
/// thread-local load and one load of the flag it points to; counting for "every n-th access" and
/// the switch itself are off the fast path.
#[inline]
pub fn record_access() {
    let flag = WORKER.with(|w| w.poll_flag.load(Ordering::Relaxed));
    // SAFETY: the pointer is null (thread never registered), a static, or the registered target's
    // request flag, which `set_polling` guarantees outlives the pointer.
    if unsafe { flag.as_ref() }.is_some_and(|f| f.load(Ordering::Relaxed)) {
        poll_slow();
    }
}

/// True if the next [`record_access`] on this thread may switch to other work: a request is up
/// and due, or a test injects a preemption there. The same single load as `record_access` when
/// nothing is asked. Lets a caller that holds something a pause must not keep (the engine's
/// epoch) let go of it first, then call `record_access`.
#[inline]
pub fn access_may_switch() -> bool {
    let flag = WORKER.with(|w| w.poll_flag.load(Ordering::Relaxed));
    // SAFETY: as in `record_access`.
    if !unsafe { flag.as_ref() }.is_some_and(|f| f.load(Ordering::Relaxed)) {
        return false;
    }
    access_may_switch_slow()
}

#[cold]
#[inline(never)]
fn access_may_switch_slow() -> bool {
    let (injected, due) = WORKER.with(|w| {
        let injected = w.inject.fires_next() && running::in_preemptible_context();
        let due = match w.poll_every.get() {
            0 => false,
            1 => true,
            every => w.polls.get() + 1 >= every,
        };
        (injected, due)
    });
    injected || (due && with_target(|t| t.request.load(Ordering::Relaxed)).unwrap_or(false))
}

/// The flag was set (or this worker polls every n-th access, or a test injects preemptions):
/// count, and switch if asked. Inside a region the switch is deferred to the region's end, like a
/// signal's: code that holds a region-bound lock may touch a record, and must not be switched
/// away from while it holds it.
#[cold]
#[inline(never)]
fn poll_slow() {
    let (injected, due) = WORKER.with(|w| {
        let injected = w.inject.is_armed() && running::in_preemptible_context() && w.inject.tick();
        let every = w.poll_every.get();
        let due = match every {
            0 => false,
            1 => true,
            _ => {
                let polls = w.polls.get() + 1;
                if polls < every {
                    w.polls.set(polls);
                    false
                } else {
                    w.polls.set(0);
                    true
                }
            }
        };
        (injected, due)
    });
    let requested = due && with_target(|t| t.request.load(Ordering::Relaxed)).unwrap_or(false);
    if injected || requested {
        if region::is_preemptible() {
            serve_in_region();
        } else {
            region::defer_preemption();
        }
    }
}

/// Entered from the trampoline after a signal injected a call. The handler raised the region
/// depth on the trampoline's behalf; it is lowered here without running the exit hook, since the
/// hook is what just ran.
extern "C" fn preempt_entry() {
    with_target(|t| t.injected.fetch_add(1, Ordering::Relaxed));
    serve();
    region::take_pending();
    region::lower_quietly();
}
