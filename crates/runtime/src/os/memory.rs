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
//! The first touch of fresh memory is also what a growing database pays for most on such a VM:
//! `perf` put the kernel's page clearing at 10% of a TPC-C worker's time, and at 19% of a
//! New-Order-only run's, inside the allocations of new versions. [`prefault_heap`] pays it before
//! the work starts instead, as main-memory engines that size their memory up front do.
//!
//! Must never change memory that is already mapped, only how later faults and frees are handled
//! (and, on request, which memory the allocator holds ready).

use std::io;
use std::time::{Duration, Instant};

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
    // Blocks this thread keeps for reuse are settled too: they are mimalloc's free memory again.
    crate::recycled_blocks::release_all();
    // SAFETY: mi_collect only walks and frees allocator-internal state of this thread's heap and
    // of abandoned heaps; it takes no pointers from us. Inside a region, like every allocator
    // call (see `alloc`).
    unsafe { mi_collect(true) };
}

/// Bytes of each block [`prefault_heap`] allocates: a medium size class, so that the blocks fill
/// whole allocator pages with few calls (512 MiB took 0.11 s), which any size class and any thread
/// can reuse once they are free.
const PREFAULT_BLOCK: usize = 64 * 1024;

/// Touches `bytes` of mimalloc's heap (the engine's allocator) and frees it again, leaving it with
/// the allocator: the allocations that follow, from any thread, then reuse memory the kernel has
/// already backed instead of faulting in fresh pages inside the work. Only useful while freed
/// memory is kept ([`set_return_freed_memory`]`(false)`). Returns how long it took. Call it before
/// worker threads start: it runs in one non-preemptible region.
pub fn prefault_heap(bytes: usize) -> Duration {
    let start = Instant::now();
    let _region = crate::NoPreemptGuard::new();
    let mut blocks = Vec::with_capacity(bytes.div_ceil(PREFAULT_BLOCK));
    for _ in 0..blocks.capacity() {
        // SAFETY: mi_malloc takes a size and returns null or a block of that many bytes, ours
        // until freed.
        let block = unsafe { libmimalloc_sys::mi_malloc(PREFAULT_BLOCK) }.cast::<u8>();
        if block.is_null() {
            break;
        }
        // SAFETY: `block` is a live allocation of PREFAULT_BLOCK writable bytes.
        unsafe { block.write_bytes(1, PREFAULT_BLOCK) };
        blocks.push(block);
    }
    for block in blocks {
        // SAFETY: each block came from mi_malloc above and is freed exactly once.
        unsafe { libmimalloc_sys::mi_free(block.cast()) };
    }
    start.elapsed()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Held by the tests that change the purge delay, which is process-wide: one of them checks
    /// its default, which another must not have changed meanwhile.
    static PURGE_OPTION: std::sync::Mutex<()> = std::sync::Mutex::new(());

    /// The process's resident memory in bytes (`/proc/self/statm`).
    fn resident() -> usize {
        let statm = std::fs::read_to_string("/proc/self/statm").expect("statm");
        let pages: usize = statm
            .split_whitespace()
            .nth(1)
            .and_then(|p| p.parse().ok())
            .expect("resident pages");
        // SAFETY: sysconf only reads a system constant.
        pages * unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize
    }

    /// The memory stays resident after it is freed (nothing is optimized away, and the allocator
    /// does not return it to the kernel), and the heap still works.
    #[test]
    fn prefaulted_memory_stays_with_the_allocator() {
        let _option = PURGE_OPTION.lock().unwrap_or_else(|e| e.into_inner());
        let returning = returns_freed_memory();
        set_return_freed_memory(false);
        let before = resident();
        prefault_heap(256 << 20);
        let after = resident();
        set_return_freed_memory(returning);
        assert!(
            after >= before + (128 << 20),
            "resident {before} -> {after} bytes"
        );
        let fresh = vec![5u64; 1 << 20];
        assert!(fresh.iter().all(|&x| x == 5));
    }

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
        let _option = PURGE_OPTION.lock().unwrap_or_else(|e| e.into_inner());
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
