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

    #[test]
    fn pinning_one_thread_does_not_shrink_what_others_may_use() {
        let before = usable_cores().len();
        std::thread::spawn(|| {
            assert!(pin_current_thread(0) || usable_cores().is_empty());
            // A thread spawned by a pinned thread still sees every core.
            std::thread::spawn(move || usable_cores().len())
                .join()
                .expect("thread")
        })
        .join()
        .map(|seen| assert_eq!(seen, before))
        .expect("thread");
    }
}
