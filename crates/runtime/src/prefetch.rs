//! Software prefetch: asking the CPU to start loading memory that will be read soon.
//!
//! A transaction that knows the keys it will look up can ask for the index leaves that hold them
//! before it reads any of them, so that their cache misses overlap instead of following one
//! another. A prefetch is only a hint: it never faults, loads nothing into a register and changes
//! no program state, so any address may be given, even one that is not mapped.
//!
//! Must never be used as a correctness mechanism: what it asks for may be dropped by the CPU.

/// Asks for the cache lines of the `len` bytes starting at `start`, to be read soon.
#[inline]
pub fn prefetch_read(start: *const u8, len: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        let mut offset = 0;
        while offset < len {
            // SAFETY: PREFETCHh is a hint that neither reads the address into the program nor
            // faults on any address (Intel SDM vol. 2, PREFETCHh); `wrapping_add` forms the
            // address without claiming it is in bounds. SSE, which it needs, is part of x86_64.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(start.wrapping_add(offset).cast()) };
            offset += 64;
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (start, len);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefetching_any_address_changes_nothing() {
        let data: Vec<u8> = (0..=255).collect();
        prefetch_read(data.as_ptr(), data.len());
        // Beyond the buffer, unmapped, or null: still only a hint.
        prefetch_read(data.as_ptr().wrapping_add(1 << 40), 4096);
        prefetch_read(std::ptr::null(), 128);
        assert_eq!(data, (0..=255).collect::<Vec<u8>>());
    }
}
