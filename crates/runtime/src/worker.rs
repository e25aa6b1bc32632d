//! Placing worker threads: core pinning and thread ids.

/// Number of cores this process may run on.
pub fn available_cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Pins the calling thread to core `core` (modulo the number of cores). Returns false if the
/// operating system refused.
pub fn pin_current_thread(core: usize) -> bool {
    let cores = core_affinity::get_core_ids().unwrap_or_default();
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
