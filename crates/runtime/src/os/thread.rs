//! What a worker's OS thread needs around it from the operating system: core pinning, its CPU
//! usage and id, its niceness, timer slack and scheduling class.
//!
//! The cores a thread may be pinned to are read once, from the first thread that asks, before
//! anything is pinned: a thread's affinity mask is inherited by the threads it spawns, so asking a
//! pinned thread would only ever offer its own core. [`usable_cores`] should therefore be called
//! early (schedulers call it before they spawn or pin anything).

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// The cores this process could run on when first asked.
pub fn usable_cores() -> &'static [core_affinity::CoreId] {
    static CORES: OnceLock<Vec<core_affinity::CoreId>> = OnceLock::new();
    CORES.get_or_init(|| core_affinity::get_core_ids().unwrap_or_default())
}

/// Number of cores this process may run on.
pub fn available_cores() -> usize {
    usable_cores().len().max(1)
}

/// Pins the calling thread to the `core`-th usable core (modulo their number). Returns false if
/// the operating system refused. The core counts as taken (see [`avoid_pinned_cores`]) until
/// the thread exits: for a thread that keeps its core busy, such as a worker.
pub fn pin_current_thread(core: usize) -> bool {
    let index = core % usable_cores().len().max(1);
    let pinned = confine_current_thread(index);
    if pinned {
        PINNED_HERE.with(|here| {
            // Dropping the earlier claim (if any) releases its core.
            *here.borrow_mut() = Some(PinnedCore::claim(index));
        });
    }
    pinned
}

/// Pins the calling thread to the `core`-th usable core (modulo their number) without taking
/// it: for a thread that mostly sleeps (a load driver's dispatcher), which service threads may
/// still share the core with. Returns false if the operating system refused.
pub fn confine_current_thread(core: usize) -> bool {
    let cores = usable_cores();
    cores
        .get(core % cores.len().max(1))
        .is_some_and(|&id| core_affinity::set_for_current(id))
}

/// Threads pinned to each usable core (by position in [`usable_cores`]), and a count of changes.
const MAX_TRACKED_CORES: usize = 1024;
static PINNED: [AtomicU32; MAX_TRACKED_CORES] = [const { AtomicU32::new(0) }; MAX_TRACKED_CORES];
static PINNED_CHANGES: AtomicU64 = AtomicU64::new(0);

/// A pinned thread's claim on its core, released when the thread exits.
struct PinnedCore(usize);

impl PinnedCore {
    fn claim(index: usize) -> PinnedCore {
        if let Some(count) = PINNED.get(index) {
            count.fetch_add(1, Ordering::SeqCst);
            PINNED_CHANGES.fetch_add(1, Ordering::SeqCst);
        }
        PinnedCore(index)
    }
}

impl Drop for PinnedCore {
    fn drop(&mut self) {
        if let Some(count) = PINNED.get(self.0) {
            count.fetch_sub(1, Ordering::SeqCst);
            PINNED_CHANGES.fetch_add(1, Ordering::SeqCst);
        }
    }
}

thread_local! {
    static PINNED_HERE: std::cell::RefCell<Option<PinnedCore>> = const { std::cell::RefCell::new(None) };
}

/// Changes so far to which cores have pinned threads: a thread that [`avoid_pinned_cores`]
/// applies it again when this moves.
pub fn pinned_changes() -> u64 {
    PINNED_CHANGES.load(Ordering::SeqCst)
}

/// Lets the calling thread run only on usable cores no pinned thread holds (every usable core
/// if all are held): for a service thread that must not take a worker's core, such as a
/// real-time log writer. Returns false if the operating system refused.
pub fn avoid_pinned_cores() -> bool {
    let cores = usable_cores();
    let free: Vec<usize> = cores
        .iter()
        .enumerate()
        .filter(|&(i, _)| PINNED.get(i).is_none_or(|c| c.load(Ordering::SeqCst) == 0))
        .map(|(_, id)| id.id)
        .collect();
    let allowed: Vec<usize> = if free.is_empty() {
        cores.iter().map(|id| id.id).collect()
    } else {
        free
    };
    if allowed.is_empty() {
        return false;
    }
    // SAFETY: an all-zero cpu_set_t is the empty set, a valid value of that plain C struct.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for cpu in allowed {
        // SAFETY: CPU_SET writes one bit of the valid, exclusively borrowed `set`; it ignores
        // a cpu number past the set's size.
        unsafe { libc::CPU_SET(cpu, &mut set) };
    }
    // SAFETY: sched_setaffinity reads `size_of::<cpu_set_t>()` bytes from the valid `set`;
    // pid 0 is the calling thread.
    unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0 }
}

/// Keeps a long-lived service thread (a log writer, a checkpointer) off the cores pinned
/// threads hold, following them as they change: call [`refresh`](Self::refresh) each time the
/// thread wakes (it costs one atomic load unless the pinning changed).
#[derive(Debug, Default)]
pub struct OffPinnedCores {
    seen: Option<u64>,
}

impl OffPinnedCores {
    pub fn new() -> OffPinnedCores {
        OffPinnedCores::default()
    }

    /// Applies [`avoid_pinned_cores`] again if the pinned cores changed since the last call.
    pub fn refresh(&mut self) {
        let now = pinned_changes();
        if self.seen != Some(now) {
            avoid_pinned_cores();
            self.seen = Some(now);
        }
    }
}

/// What the kernel counted for the calling thread (`getrusage(RUSAGE_THREAD)`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ThreadUsage {
    /// Page faults served without I/O (a first touch of fresh memory is one).
    pub minor_faults: u64,
    /// Page faults that needed I/O.
    pub major_faults: u64,
    /// Times the thread was switched out while it could have run on.
    pub involuntary_switches: u64,
    /// CPU time, user and system, in nanoseconds (`CLOCK_THREAD_CPUTIME_ID`: precise at any
    /// moment, where getrusage's times move in scheduler ticks).
    pub cpu_ns: u64,
}

impl ThreadUsage {
    /// What happened between `earlier` and this reading.
    pub fn since(&self, earlier: &ThreadUsage) -> ThreadUsage {
        ThreadUsage {
            minor_faults: self.minor_faults.saturating_sub(earlier.minor_faults),
            major_faults: self.major_faults.saturating_sub(earlier.major_faults),
            involuntary_switches: self
                .involuntary_switches
                .saturating_sub(earlier.involuntary_switches),
            cpu_ns: self.cpu_ns.saturating_sub(earlier.cpu_ns),
        }
    }
}

/// The calling thread's counters so far (one system call; zeros if it fails).
pub fn thread_usage() -> ThreadUsage {
    // SAFETY: an all-zero rusage is a valid value of that plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes one rusage into the valid, exclusively borrowed `usage`.
    if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) } != 0 {
        return ThreadUsage::default();
    }
    let mut cpu = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec into the valid, exclusively borrowed `cpu`;
    // the calling thread's CPU-time clock always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut cpu) };
    ThreadUsage {
        minor_faults: usage.ru_minflt as u64,
        major_faults: usage.ru_majflt as u64,
        involuntary_switches: usage.ru_nivcsw as u64,
        cpu_ns: cpu.tv_sec as u64 * 1_000_000_000 + cpu.tv_nsec as u64,
    }
}

/// The kernel's id of the calling thread (what `tgkill` addresses).
pub fn thread_id() -> i32 {
    // SAFETY: gettid takes no arguments and cannot fail.
    unsafe { libc::gettid() }
}

/// How the operating system schedules a service thread (see [`serve_promptly`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServiceClass {
    /// Real-time FIFO at the lowest real-time priority: it runs as soon as it wakes.
    RealTime,
    /// An ordinary thread with a raised weight (nice -10).
    Raised,
    /// As it was: the process may not raise it.
    Ordinary,
}

impl ServiceClass {
    /// A short name: `realtime`, `raised`, `ordinary`.
    pub fn name(self) -> &'static str {
        match self {
            ServiceClass::RealTime => "realtime",
            ServiceClass::Raised => "raised",
            ServiceClass::Ordinary => "ordinary",
        }
    }
}

/// Asks the operating system to run the calling thread as soon as it wakes, for a thread that
/// sleeps most of the time and that others wait for (a log writer): with pinned workers and
/// spinning dispatchers on every core, an ordinary thread woken by I/O waits for the next
/// scheduler tick (measured 4 ms here) before it runs. Tries real-time FIFO at the lowest
/// real-time priority, then nice -10, and says which it got (neither needs more than the
/// privilege the process has; without it the thread stays as it was).
pub fn serve_promptly() -> ServiceClass {
    let param = libc::sched_param { sched_priority: 1 };
    // SAFETY: sched_setscheduler reads one sched_param from the valid `param`; pid 0 is the
    // calling thread.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } == 0 {
        return ServiceClass::RealTime;
    }
    if set_nice(-10) {
        ServiceClass::Raised
    } else {
        ServiceClass::Ordinary
    }
}

/// Raises the calling thread to nice -10 (no real-time class): for a thread others wait for that
/// also does sustained work (a network thread serving many clients), which a real-time class
/// would let crowd out everything else. False if the operating system refused.
pub fn set_raised() -> bool {
    set_nice(-10)
}

/// Lowers the calling thread to nice 10, for background work that should only use what urgent
/// work leaves (a checkpoint). Returns false if the operating system refused.
pub fn run_in_background() -> bool {
    set_nice(10)
}

/// Lowers the calling thread to the weakest weight (nice 19) while `background`, and back to nice
/// 0 when not: a worker running background work gives the core to any ordinary thread that wakes
/// (a network thread with an urgent statement, a client). False if the operating system refused
/// (going back up needs the privilege to raise a thread's priority).
pub fn set_background(background: bool) -> bool {
    set_nice(if background { 19 } else { 0 })
}

/// Sets how late the kernel may wake the calling thread from a timed sleep (its timer slack,
/// 50 µs by default, which lets the kernel batch wake-ups): a thread that sleeps for intervals of
/// tens of microseconds (the preemption timer) would otherwise wake most of an interval late.
/// False if the operating system refused.
pub fn set_timer_slack(slack: std::time::Duration) -> bool {
    let nanos = slack.as_nanos().clamp(1, libc::c_ulong::MAX as u128) as libc::c_ulong;
    // SAFETY: PR_SET_TIMERSLACK takes one integer argument and changes only the calling thread.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, nanos, 0, 0, 0) == 0 }
}

/// The calling thread's timer slack (see [`set_timer_slack`]).
pub fn timer_slack() -> std::time::Duration {
    // SAFETY: PR_GET_TIMERSLACK takes no pointer and reads only the calling thread's setting.
    let nanos = unsafe { libc::prctl(libc::PR_GET_TIMERSLACK, 0, 0, 0, 0) };
    std::time::Duration::from_nanos(u64::try_from(nanos).unwrap_or(0))
}

/// Brings thread `tid` of this process back from the background weight to nice 0, from another
/// thread: for a worker at nice 19 that has not taken up an urgent request (descheduled by the
/// operating system in favour of ordinary threads, it cannot notice one). False if refused (no
/// privilege, or the thread has exited).
pub fn lift_from_background(tid: i32) -> bool {
    let Ok(who) = libc::id_t::try_from(tid) else {
        return false;
    };
    // SAFETY: setpriority takes plain integers; with PRIO_PROCESS, `who` names one thread of the
    // system (an exited one is refused with ESRCH).
    tid > 0 && unsafe { libc::setpriority(libc::PRIO_PROCESS, who, 0) == 0 }
}

/// The nice value of thread `tid` of this system, if it exists.
pub fn nice_of(tid: i32) -> Option<i32> {
    let who = libc::id_t::try_from(tid).ok().filter(|&w| w > 0)?;
    // SAFETY: as in `current_nice`; errno tells a nice of -1 from a failure, and is cleared first.
    unsafe {
        *libc::__errno_location() = 0;
        let nice = libc::getpriority(libc::PRIO_PROCESS, who);
        (nice != -1 || *libc::__errno_location() == 0).then_some(nice)
    }
}

/// The calling thread's nice value.
pub fn current_nice() -> i32 {
    // SAFETY: getpriority takes plain integers; who 0 with PRIO_PROCESS is the calling thread.
    // It may return -1 legitimately; errno is not needed here (the call cannot fail for the
    // calling thread).
    unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) }
}

/// Whether this process may move its threads between nice 19 and 0 (tried on the calling
/// thread, which is left at 0).
pub fn can_switch_background() -> bool {
    set_background(true) && set_background(false)
}

/// An operating-system scheduling class for a thread that runs a session itself (as a PostgreSQL
/// backend does), so that the OS decides who runs: the baselines UFS is compared with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum OsPolicy {
    /// SCHED_OTHER (EEVDF): shares by weight (nice, cgroup).
    Normal,
    /// SCHED_IDLE: runs only when nothing else wants the core.
    Idle,
    /// SCHED_FIFO at this real-time priority (1-99): runs until it blocks.
    Fifo(u8),
    /// SCHED_RR at this real-time priority (1-99): as FIFO, time-sliced among equals.
    RoundRobin(u8),
}

/// Puts the calling thread in `policy`. Real-time classes need the privilege to use them
/// (root or CAP_SYS_NICE); the error says what the kernel refused.
pub fn set_os_policy(policy: OsPolicy) -> std::io::Result<()> {
    let (class, priority) = match policy {
        OsPolicy::Normal => (libc::SCHED_OTHER, 0),
        OsPolicy::Idle => (libc::SCHED_IDLE, 0),
        OsPolicy::Fifo(p) => (libc::SCHED_FIFO, i32::from(p)),
        OsPolicy::RoundRobin(p) => (libc::SCHED_RR, i32::from(p)),
    };
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: sched_setscheduler reads one sched_param from the valid `param`; pid 0 is the
    // calling thread.
    if unsafe { libc::sched_setscheduler(0, class, &param) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// The calling thread's scheduling class (`SCHED_*`).
pub fn os_policy_class() -> i32 {
    // SAFETY: sched_getscheduler takes a plain pid; 0 is the calling thread.
    unsafe { libc::sched_getscheduler(0) }
}

/// Sets the calling thread's nice value (Linux applies it per thread).
fn set_nice(nice: i32) -> bool {
    // SAFETY: setpriority takes plain integers; who 0 with PRIO_PROCESS is the calling thread.
    unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, nice) == 0 }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_thread_moves_to_sched_idle_and_back_and_an_impossible_priority_is_refused() {
        std::thread::spawn(|| {
            set_os_policy(OsPolicy::Idle).expect("any thread may lower itself");
            assert_eq!(os_policy_class(), libc::SCHED_IDLE);
            // Leaving SCHED_IDLE needs privilege on older kernels; where refused, stay.
            if set_os_policy(OsPolicy::Normal).is_ok() {
                assert_eq!(os_policy_class(), libc::SCHED_OTHER);
            }
            assert!(set_os_policy(OsPolicy::Fifo(0)).is_err(), "FIFO needs 1-99");
            if set_os_policy(OsPolicy::RoundRobin(1)).is_ok() {
                assert_eq!(os_policy_class(), libc::SCHED_RR);
            }
        })
        .join()
        .expect("thread");
    }

    use super::*;

    #[test]
    fn another_thread_lifts_a_background_thread_back_to_nice_zero() {
        if !can_switch_background() {
            return; // an unprivileged process cannot come back up: nothing to check
        }
        let (tid_tx, tid_rx) = std::sync::mpsc::channel();
        let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
        let lowered = std::thread::spawn(move || {
            assert!(set_background(true));
            tid_tx.send(thread_id()).expect("send");
            go_rx.recv().expect("lifted");
            current_nice()
        });
        let tid = tid_rx.recv().expect("tid");
        assert!(lift_from_background(tid));
        go_tx.send(()).expect("send");
        assert_eq!(lowered.join().expect("thread"), 0);
        assert!(!lift_from_background(0), "no thread is named 0");
        assert_eq!(nice_of(0), None);
        assert_eq!(nice_of(thread_id()), Some(current_nice()));
    }

    #[test]
    fn a_thread_sets_its_timer_slack_and_others_keep_theirs() {
        let before = timer_slack();
        std::thread::spawn(|| {
            assert!(set_timer_slack(std::time::Duration::from_micros(1)));
            assert_eq!(timer_slack(), std::time::Duration::from_micros(1));
        })
        .join()
        .expect("thread");
        assert_eq!(timer_slack(), before);
    }

    #[test]
    fn a_thread_moves_to_the_background_weight_and_back_when_allowed() {
        std::thread::spawn(|| {
            if !can_switch_background() {
                return; // an unprivileged process cannot come back up: nothing to check
            }
            assert!(set_background(true));
            assert_eq!(current_nice(), 19);
            assert!(set_background(false));
            assert_eq!(current_nice(), 0);
        })
        .join()
        .expect("thread");
    }

    #[test]
    fn a_service_thread_keeps_off_the_cores_pinned_threads_hold_while_they_hold_them() {
        if usable_cores().len() < 2 {
            return; // nothing to keep off on one core
        }
        let (release, held) = std::sync::mpsc::channel::<()>();
        let (ready, is_ready) = std::sync::mpsc::channel();
        let before = pinned_changes();
        let holder = std::thread::spawn(move || {
            assert!(pin_current_thread(0));
            ready.send(()).expect("test");
            let _ = held.recv();
        });
        is_ready.recv().expect("pinned");
        assert!(pinned_changes() > before);
        let allowed = || {
            std::thread::spawn(|| {
                assert!(avoid_pinned_cores());
                core_affinity::get_core_ids().unwrap_or_default()
            })
            .join()
            .expect("thread")
        };
        let first = usable_cores()[0];
        let while_held = allowed();
        // Other tests may pin threads too; this one holds the first core throughout.
        assert!(!while_held.contains(&first), "{while_held:?}");
        drop(release);
        holder.join().expect("holder");
        assert!(pinned_changes() >= before + 2, "the exit released the core");
    }

    #[test]
    fn a_confined_thread_shares_its_core_with_service_threads() {
        if usable_cores().len() < 2 {
            return; // nothing to keep off on one core
        }
        let index = usable_cores().len() - 1;
        let allowed_while_confined = std::thread::spawn(move || {
            assert!(confine_current_thread(index));
            std::thread::spawn(|| {
                assert!(avoid_pinned_cores());
                core_affinity::get_core_ids().unwrap_or_default()
            })
            .join()
            .expect("thread")
        })
        .join()
        .expect("thread");
        // The other tests here pin only the first core: the last stays open to service
        // threads while a confined thread runs on it.
        assert!(
            allowed_while_confined.contains(&usable_cores()[index]),
            "{allowed_while_confined:?}"
        );
    }

    #[test]
    fn a_service_thread_gets_a_class_and_a_background_thread_gets_nice_ten() {
        std::thread::spawn(|| {
            let class = serve_promptly();
            // SAFETY: sched_getscheduler takes a plain pid (0: the calling thread).
            let policy = unsafe { libc::sched_getscheduler(0) };
            assert_eq!(policy == libc::SCHED_FIFO, class == ServiceClass::RealTime);
        })
        .join()
        .expect("thread");
        std::thread::spawn(|| {
            assert!(run_in_background(), "lowering a thread is always allowed");
            // SAFETY: getpriority takes plain integers; errno is not needed for nice 10.
            assert_eq!(unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) }, 10);
        })
        .join()
        .expect("thread");
    }

    #[test]
    fn a_first_touch_of_fresh_memory_counts_as_a_fault_of_this_thread() {
        let before = thread_usage();
        // Fresh pages from the kernel, each touched once.
        let mut pages = vec![0u8; 64 << 20];
        for i in (0..pages.len()).step_by(4096) {
            pages[i] = 1;
        }
        std::hint::black_box(&pages);
        let spent = thread_usage().since(&before);
        assert!(spent.minor_faults >= 100, "{spent:?}");
        assert!(spent.cpu_ns > 0, "{spent:?}");
    }

    /// The cores a thread spawned by a pinned thread may use are still every core the process
    /// could use before anything was pinned. Compared with a reading taken straight from the
    /// operating system (not through the cache under test), on a thread that was never pinned.
    #[test]
    fn pinning_one_thread_does_not_shrink_what_others_may_use() {
        let unpinned = core_affinity::get_core_ids().unwrap_or_default().len();
        let (pinned_sees, child_sees) = std::thread::spawn(|| {
            assert!(pin_current_thread(0) || usable_cores().is_empty());
            // What the operating system now offers this thread and its children: one core.
            let pinned_sees = core_affinity::get_core_ids().unwrap_or_default().len();
            let child_sees = std::thread::spawn(|| usable_cores().len())
                .join()
                .expect("thread");
            (pinned_sees, child_sees)
        })
        .join()
        .expect("thread");
        if unpinned > 1 {
            assert_eq!(pinned_sees, 1, "pinning narrows the thread's own mask");
        }
        assert_eq!(child_sees, unpinned, "the cache is not narrowed by it");
    }
}
