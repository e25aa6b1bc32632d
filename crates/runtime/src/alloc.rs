//! A global allocator that runs every allocation, deallocation and reallocation inside a
//! non-preemptible region.
//!
//! Allocators keep per-thread caches and take internal locks. If a context were paused in the middle
//! of `malloc`, another context on the same thread could re-enter the allocator and corrupt its
//! per-thread state, or wait forever on a lock the paused context holds. Wrapping the allocator makes
//! the whole engine (and every library it uses) safe to preempt around allocations.
//!
//! This module must never allocate itself, and never change what the inner allocator returns.

use std::alloc::{GlobalAlloc, Layout};
use std::sync::atomic::{AtomicBool, Ordering};

use crate::recycled_blocks;
use crate::region::NoPreemptGuard;

/// Set by the first allocation a [`RegionAlloc`] serves: from then on allocation in this process is
/// known to run inside regions.
static IN_USE: AtomicBool = AtomicBool::new(false);

/// Whether this process allocates through a [`RegionAlloc`] (it is the global allocator and has
/// served an allocation). Signal preemption is only safe when it does: otherwise a signal can
/// pause a context inside `malloc`, holding the allocator's lock, and the next allocation on that
/// thread waits for it forever.
pub fn is_in_use() -> bool {
    IN_USE.load(Ordering::Relaxed)
}

#[inline]
fn mark_in_use() {
    // A load first, so the common case writes nothing and the cache line stays shared.
    if !IN_USE.load(Ordering::Relaxed) {
        IN_USE.store(true, Ordering::Relaxed);
    }
}

/// Wraps an allocator so that each call runs inside a [`NoPreemptGuard`].
pub struct RegionAlloc<A> {
    inner: A,
}

impl<A> RegionAlloc<A> {
    /// Wraps `inner`.
    pub const fn new(inner: A) -> Self {
        RegionAlloc { inner }
    }
}

/// The allocator binaries built on Overtake should install:
/// `#[global_allocator] static ALLOC: EngineAllocator = EngineAllocator::new(Mimalloc);`
/// is what [`engine_allocator`] returns.
pub type EngineAllocator = RegionAlloc<Mimalloc>;

/// The region-wrapped mimalloc allocator, for `#[global_allocator]` statics.
pub const fn engine_allocator() -> EngineAllocator {
    RegionAlloc::new(Mimalloc)
}

/// Alignment every mimalloc block has without asking: its size classes are multiples of the word
/// size, and blocks of 16 bytes or more are aligned to 16 (`MI_MAX_ALIGN_SIZE`), as C's `malloc`
/// requires.
const NATURAL_ALIGN: usize = 8;

/// mimalloc through its plain entry points where the natural alignment suffices.
///
/// `mimalloc::MiMalloc` sends every request through `mi_malloc_aligned`, whose fast path needs the
/// page's next free block to happen to be aligned and whose slow path over-allocates: for the
/// engine's rows, versions and buffers (alignment 1 or 8) that is ~2x the instructions of
/// `mi_malloc` per allocation (measured with callgrind on TPC-C New-Order). Larger alignments
/// still go through the aligned entry points.
pub struct Mimalloc;

// SAFETY: each method returns memory from mimalloc satisfying `layout`: requests with an alignment
// of at most `NATURAL_ALIGN` use `mi_malloc`/`mi_zalloc`/`mi_realloc`, whose blocks are always at
// least that aligned, or a block of at least the requested size that such a request returned
// earlier and its owner freed (`recycled_blocks`, which hands each freed block out once); others
// use the aligned variants with the requested alignment. `dealloc` keeps a block for reuse or
// hands it back to `mi_free`, which accepts every block mimalloc returned.
unsafe impl GlobalAlloc for Mimalloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        use libmimalloc_sys::{mi_malloc, mi_malloc_aligned};
        if layout.align() <= NATURAL_ALIGN
            && let Some(block) = recycled_blocks::take(layout.size())
        {
            return block;
        }
        let ptr = if layout.align() <= NATURAL_ALIGN {
            // SAFETY: plain allocation of a non-zero size; see the impl's comment on alignment.
            unsafe { mi_malloc(layout.size()) }
        } else {
            // SAFETY: the alignment is a power of two, as `Layout` guarantees.
            unsafe { mi_malloc_aligned(layout.size(), layout.align()) }
        };
        ptr.cast()
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        use libmimalloc_sys::{mi_zalloc, mi_zalloc_aligned};
        let ptr = if layout.align() <= NATURAL_ALIGN {
            // SAFETY: as in `alloc`.
            unsafe { mi_zalloc(layout.size()) }
        } else {
            // SAFETY: as in `alloc`.
            unsafe { mi_zalloc_aligned(layout.size(), layout.align()) }
        };
        ptr.cast()
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if layout.align() <= NATURAL_ALIGN && recycled_blocks::keep(ptr, layout.size()) {
            return;
        }
        // SAFETY: `ptr` was returned by one of this allocator's methods, all of which use mimalloc.
        unsafe { libmimalloc_sys::mi_free(ptr.cast()) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        use libmimalloc_sys::{mi_realloc, mi_realloc_aligned};
        let ptr = if layout.align() <= NATURAL_ALIGN {
            // SAFETY: `ptr` is a live block of this allocator; the new block keeps the natural
            // alignment, which covers `layout.align()`.
            unsafe { mi_realloc(ptr.cast(), new_size) }
        } else {
            // SAFETY: `ptr` is a live block of this allocator; the alignment is kept.
            unsafe { mi_realloc_aligned(ptr.cast(), new_size, layout.align()) }
        };
        ptr.cast()
    }
}

// SAFETY: every method forwards its arguments unchanged to the inner allocator and returns its result
// unchanged, so the wrapper upholds exactly the contract the inner `GlobalAlloc` upholds. The only
// added work is entering and leaving a region, which touches a const-initialised thread-local without
// a destructor (never allocates, never unwinds) and is therefore valid inside the allocator.
unsafe impl<A: GlobalAlloc> GlobalAlloc for RegionAlloc<A> {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _region = NoPreemptGuard::new();
        mark_in_use();
        // SAFETY: the caller guarantees `layout` has non-zero size, as `GlobalAlloc::alloc` requires.
        unsafe { self.inner.alloc(layout) }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let _region = NoPreemptGuard::new();
        mark_in_use();
        // SAFETY: same contract as `alloc`, forwarded unchanged.
        unsafe { self.inner.alloc_zeroed(layout) }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        let _region = NoPreemptGuard::new();
        // SAFETY: the caller guarantees `ptr` came from this allocator (hence from `inner`, since
        // every allocation is forwarded there) with this `layout`.
        unsafe { self.inner.dealloc(ptr, layout) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _region = NoPreemptGuard::new();
        // SAFETY: the caller guarantees `ptr`/`layout` describe a live block from `inner` and that
        // `new_size` is valid for `layout`'s alignment.
        unsafe { self.inner.realloc(ptr, layout, new_size) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Blocks freed through the allocator come back for requests of their size class, newest
    /// first, usable to the full requested size; a thread that exits with blocks kept hands them
    /// back, and memory another thread freed is never handed out twice.
    #[test]
    fn freed_small_blocks_are_reused_newest_first() {
        let a = Mimalloc;
        let layout = Layout::from_size_align(128, 8).expect("layout");
        // SAFETY: every block is written within its layout and freed once with it.
        unsafe {
            let blocks: Vec<*mut u8> = (0..8).map(|_| a.alloc(layout)).collect();
            for &b in &blocks {
                std::ptr::write_bytes(b, 0x5A, layout.size());
                a.dealloc(b, layout);
            }
            for &b in blocks.iter().rev() {
                let again = a.alloc(layout);
                assert_eq!(again, b, "the newest freed block first");
                std::ptr::write_bytes(again, 0xA5, layout.size());
            }
            for &b in &blocks {
                a.dealloc(b, layout);
            }
        }
        let handles: Vec<_> = (0..4)
            .map(|t| {
                std::thread::spawn(move || {
                    let a = Mimalloc;
                    let mut seen = std::collections::HashSet::new();
                    for round in 0..200 {
                        let size = 16 + (round * 7 + t * 13) % 500;
                        let layout = Layout::from_size_align(size, 8).expect("layout");
                        // SAFETY: as above; the block is unique while held (checked below).
                        unsafe {
                            let live: Vec<*mut u8> = (0..16).map(|_| a.alloc(layout)).collect();
                            for &b in &live {
                                assert!(seen.insert(b as usize), "a block handed out twice");
                                std::ptr::write_bytes(b, round as u8, size);
                            }
                            for &b in &live {
                                assert!((0..size).all(|i| *b.add(i) == round as u8));
                                seen.remove(&(b as usize));
                                a.dealloc(b, layout);
                            }
                        }
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().expect("thread");
        }
    }

    /// Every size and alignment an engine might ask for comes back aligned, usable to its full
    /// size, zeroed when asked, and keeps its contents across a reallocation.
    #[test]
    fn mimalloc_honours_every_alignment_through_both_entry_points() {
        let a = Mimalloc;
        for align in [1usize, 2, 4, 8, 16, 32, 64, 128, 4096] {
            for size in [
                1usize, 7, 8, 15, 16, 17, 24, 48, 100, 317, 1024, 5000, 70_000,
            ] {
                let Ok(layout) = Layout::from_size_align(size.max(align), align) else {
                    continue;
                };
                // SAFETY: the layout has a non-zero size; every block is freed with its layout.
                unsafe {
                    let p = a.alloc(layout);
                    assert!(!p.is_null());
                    assert_eq!(p as usize % align, 0, "size {size} align {align}");
                    std::ptr::write_bytes(p, 0xAB, layout.size());
                    let grown = layout.size() * 2 + 3;
                    let q = a.realloc(p, layout, grown);
                    assert_eq!(q as usize % align, 0, "realloc keeps align {align}");
                    assert!((0..layout.size()).all(|i| *q.add(i) == 0xAB));
                    let grown_layout = Layout::from_size_align(grown, align).expect("layout");
                    a.dealloc(q, grown_layout);
                    let z = a.alloc_zeroed(layout);
                    assert_eq!(z as usize % align, 0);
                    assert!((0..layout.size()).all(|i| *z.add(i) == 0));
                    a.dealloc(z, layout);
                }
            }
        }
    }
}
