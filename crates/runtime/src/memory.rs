//! Process-wide memory settings that decide latency rather than throughput.
//!
//! Transparent huge pages make the kernel back a fresh 2 MiB of heap at the first touch of any byte
//! in it, zeroing the whole 2 MiB inside that one page fault. On this project's virtual machines,
//! where the host backs guest memory lazily, such a fault was measured at ~5 ms (perf: all in
//! `clear_page_erms` under mimalloc's `mi_page_free_list_extend`), two or three times a second as
//! a TPC-C database grows, each landing inside whichever transaction allocated. With small pages
//! the same growth costs microseconds per fault, spread evenly. Engines that care about tail
//! latency turn them off; this module is how.
//!
//! The allocator has the same problem the other way round: mimalloc returns freed memory to the
//! kernel (`madvise(MADV_DONTNEED)`, 64 KiB at a time) shortly after it was freed, and does it in
//! one burst in whichever thread next allocates. With Query 2 freeing megabytes per run, strace
//! showed bursts of ~1,800 such calls in one thread, and the transaction that triggered one spent
//! 20-40 ms in the kernel (getrusage: stime 39 ms of a 42 ms New-Order). A main-memory database
//! keeps what it has allocated anyway, so the engine's benchmarks keep freed memory for reuse.
//!
//! Must never change memory that is already mapped, only how later faults and frees are handled.

use std::io;

use libmimalloc_sys::{mi_collect, mi_option_get, mi_option_set, mi_option_t};

/// `mi_option_purge_delay` in the `mi_option_e` of mimalloc v2 (the version linked; v3 has it at the
/// same position, and libmimalloc-sys names no constant for it): milliseconds between freeing
/// memory and returning it to the kernel; -1 never returns it.
const MI_OPTION_PURGE_DELAY: mi_option_t = 15;

/// mimalloc v2's default purge delay, in milliseconds.
const DEFAULT_PURGE_DELAY_MS: libc::c_long = 10;

/// Lets the kernel use transparent huge pages for this process (`true`), or not (`false`).
/// Applies to every thread and every mapping, from the next page fault on.
pub fn set_transparent_huge_pages(enabled: bool) -> io::Result<()> {
    let disable = libc::c_ulong::from(!enabled);
    // SAFETY: PR_SET_THP_DISABLE takes one integer flag and unused zero arguments; it changes only
    // this process's memory-management flags and touches no memory of ours.
    let rc = unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, disable, 0, 0, 0) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Whether the kernel may use transparent huge pages for this process.
pub fn transparent_huge_pages() -> io::Result<bool> {
    // SAFETY: PR_GET_THP_DISABLE takes no arguments beyond unused zeros and only returns a value.
    let rc = unsafe { libc::prctl(libc::PR_GET_THP_DISABLE, 0, 0, 0, 0) };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc == 0)
    }
}

/// Lets the allocator return freed memory to the kernel after its usual delay (`true`), or keeps
/// it for reuse (`false`), so that no allocation or free runs a burst of system calls. Process-wide;
/// call it before worker threads start.
pub fn set_return_freed_memory(enabled: bool) {
    let delay = if enabled { DEFAULT_PURGE_DELAY_MS } else { -1 };
    // SAFETY: mi_option_set only stores a value in mimalloc's option table; the index is the purge
    // delay's position in the `mi_option_e` of the mimalloc version linked (v2, checked by a test).
    unsafe { mi_option_set(MI_OPTION_PURGE_DELAY, delay) };
}

/// Whether the allocator returns freed memory to the kernel.
pub fn returns_freed_memory() -> bool {
    // SAFETY: mi_option_get only reads mimalloc's option table; the index is in range (see above).
    unsafe { mi_option_get(MI_OPTION_PURGE_DELAY) >= 0 }
}

/// Makes the allocator settle what earlier threads left behind, on the calling thread and now:
/// blocks freed here that other (possibly exited) threads allocated, and the heaps of exited
/// threads. Otherwise the first thread to allocate from that memory later does it, inside
/// whatever it was doing: between two benchmark runs in one process, a worker of the second run
/// (measured: a 35-55 ms stall in one urgent transaction of the second run of every `compare`).
/// Call it outside measured work, with no worker running.
pub fn settle_freed_memory() {
    let _region = crate::NoPreemptGuard::new();
    // SAFETY: mi_collect only walks and frees allocator-internal state of this thread's heap and
    // of abandoned heaps; it takes no pointers from us. Inside a region, like every allocator
    // call (see `alloc`).
    unsafe { mi_collect(true) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huge_pages_can_be_turned_off_and_on_again() {
        let before = transparent_huge_pages().expect("get");
        set_transparent_huge_pages(false).expect("off");
        assert!(!transparent_huge_pages().expect("get"));
        set_transparent_huge_pages(true).expect("on");
        assert!(transparent_huge_pages().expect("get"));
        set_transparent_huge_pages(before).expect("restore");
    }

    #[test]
    fn settling_freed_memory_keeps_allocations_intact() {
        let kept: Vec<Vec<u64>> = (0..64).map(|i| vec![i; 1024]).collect();
        // Memory allocated by a thread that then exits, freed here.
        let from_exited = std::thread::spawn(|| vec![7u64; 1 << 16])
            .join()
            .expect("thread");
        drop(from_exited);
        settle_freed_memory();
        assert!(
            kept.iter()
                .enumerate()
                .all(|(i, v)| v.iter().all(|&x| x == i as u64))
        );
        let fresh = vec![3u64; 1 << 16];
        assert!(fresh.iter().all(|&x| x == 3));
    }

    #[test]
    fn freed_memory_can_be_kept_and_returned_again() {
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
            // Of the options around it only the purge delay defaults to 10 (v2): this checks the
            // option index.
            // SAFETY: reads the option table, as `returns_freed_memory` does.
            let delay = unsafe { mi_option_get(MI_OPTION_PURGE_DELAY) };
            assert_eq!(
                delay, DEFAULT_PURGE_DELAY_MS,
                "option 15 is not the purge delay"
            );
        }
        set_return_freed_memory(false);
        assert!(!returns_freed_memory());
        set_return_freed_memory(true);
        assert!(returns_freed_memory());
    }
}
