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
//! Must never change memory that is already mapped, only how the kernel backs later faults.

use std::io;

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
}
