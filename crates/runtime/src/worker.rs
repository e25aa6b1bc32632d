//! Placing worker threads: core pinning and thread ids.
//!
//! The cores a thread may be pinned to are read once, from the first thread that asks, before
//! anything is pinned: a thread's affinity mask is inherited by the threads it spawns, so asking a
//! pinned thread would only ever offer its own core. [`usable_cores`] should therefore be called
//! early (schedulers call it before they spawn or pin anything).

use std::sync::OnceLock;

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
/// the operating system refused.
pub fn pin_current_thread(core: usize) -> bool {
    let cores = usable_cores();
    match cores.get(core % cores.len().max(1)) {
        Some(&id) => core_affinity::set_for_current(id),
        None => false,
    }
}

/// The kernel's id of the calling thread (what `tgkill` addresses).
pub fn thread_id() -> i32 {
    // SAFETY: gettid takes no arguments and cannot fail.
    unsafe { libc::gettid() }
}

#[cfg(test)]
mod tests {
    use super::*;

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
