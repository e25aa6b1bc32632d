//! A per-thread stack of recently freed small blocks, handed out again newest first.
//!
//! The engine frees what it allocates in a pattern mimalloc does not reuse well: old record
//! versions and rows are freed in batches by epoch-based reclamation, scattered over many pages,
//! while allocation takes blocks page by page in queue order. A block freed a moment ago, still in
//! this core's cache, then waits its turn behind pages freed long ago, and each allocation gets
//! memory that has to come from far away before the row copied into it can land (and the locked
//! instruction that publishes the version waits for that). Here a freed block of up to
//! [`MAX_SIZE`] bytes is kept on this thread's stack for its size class, and the next allocation
//! of that class takes the most recently freed one. Measured with TPC-C, one worker: 2.4% and
//! 3.2% more committed transactions per second in two sets of ten alternating rounds.
//!
//! Classes are 16 bytes wide. A block freed with a layout of `size` bytes goes to class
//! `size / 16` (rounded down) and serves requests of class `ceil(size / 16)` (rounded up), so a
//! block is only ever handed out for a request no larger than the one it was allocated for. Each
//! class keeps at most [`PER_CLASS`] blocks; beyond that, and for everything else, blocks go back
//! to the inner allocator. A thread's blocks go back when it exits, or when memory is settled
//! (`memory::settle_freed_memory`).
//!
//! Must never allocate (it runs inside the allocator) and never hand out a block twice. Its calls
//! run inside the allocator's non-preemptible region, so no other context of the thread can see
//! a stack half-changed.

use std::cell::UnsafeCell;

/// Width of a size class, in bytes (also the smallest size kept: smaller blocks are cheap).
const CLASS_BYTES: usize = 16;
/// Size classes kept: blocks of 16 to `16 * CLASSES` bytes.
const CLASSES: usize = 32;
/// The largest block size kept.
const MAX_SIZE: usize = CLASS_BYTES * CLASSES;
/// Blocks kept per class. About 2 MB per thread if every class is full; reuse comes from the top.
const PER_CLASS: usize = 256;

/// The class a freed block of `size` bytes is kept in (rounded down).
#[inline(always)]
fn class_of_freed(size: usize) -> Option<usize> {
    (CLASS_BYTES..=MAX_SIZE)
        .contains(&size)
        .then(|| size / CLASS_BYTES - 1)
}

/// The class a request of `size` bytes is served from (rounded up).
#[inline(always)]
fn class_of_request(size: usize) -> Option<usize> {
    (CLASS_BYTES..=MAX_SIZE)
        .contains(&size)
        .then(|| size.div_ceil(CLASS_BYTES) - 1)
}

/// Whether a thread keeps freed blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Keeping {
    /// Not yet: the hook that hands the blocks back at thread exit is not registered.
    NotYet,
    Yes,
    /// The thread is exiting and has handed its blocks back: no more are kept.
    Ended,
}

/// One thread's kept blocks.
struct Stacks {
    keeping: Keeping,
    lens: [u16; CLASSES],
    blocks: [[*mut u8; PER_CLASS]; CLASSES],
    /// Where kept blocks go when they are handed back.
    release: unsafe fn(*mut u8),
}

impl Stacks {
    const fn new(release: unsafe fn(*mut u8)) -> Self {
        Stacks {
            keeping: Keeping::NotYet,
            lens: [0; CLASSES],
            blocks: [[std::ptr::null_mut(); PER_CLASS]; CLASSES],
            release,
        }
    }

    #[inline(always)]
    fn push(&mut self, class: usize, block: *mut u8) -> bool {
        let n = usize::from(self.lens[class]);
        if n == PER_CLASS {
            return false;
        }
        self.blocks[class][n] = block;
        self.lens[class] = (n + 1) as u16;
        true
    }

    #[inline(always)]
    fn pop(&mut self, class: usize) -> Option<*mut u8> {
        let n = usize::from(self.lens[class]).checked_sub(1)?;
        self.lens[class] = n as u16;
        Some(self.blocks[class][n])
    }

    /// Hands every kept block back to the inner allocator.
    fn release_all(&mut self) {
        for class in 0..CLASSES {
            while let Some(block) = self.pop(class) {
                // SAFETY: every kept block came from the inner allocator and was freed by its
                // owner; it is handed back exactly once (popped first).
                unsafe { (self.release)(block) };
            }
        }
    }

    /// The thread is exiting: hand everything back and keep nothing more.
    fn end(&mut self) {
        self.keeping = Keeping::Ended;
        self.release_all();
    }
}

thread_local! {
    // No destructor, so reaching it costs no check of whether it is still alive: the exit hook
    // below empties it instead.
    static BLOCKS: UnsafeCell<Stacks> = const { UnsafeCell::new(Stacks::new(release_to_mimalloc)) };
    static EXIT_HOOK: ExitHook = const { ExitHook };
}

/// Hands the thread's kept blocks back when the thread exits (its destructor is registered the
/// first time the thread keeps a block).
struct ExitHook;

impl Drop for ExitHook {
    fn drop(&mut self) {
        with_stacks(Stacks::end);
    }
}

/// Runs `f` on this thread's stacks.
#[inline(always)]
fn with_stacks<R>(f: impl FnOnce(&mut Stacks) -> R) -> R {
    // SAFETY: only this thread reaches its stacks, and nothing `f` does re-enters this module
    // (push and pop neither allocate nor call out; handing blocks back calls the inner
    // allocator's free, never the global allocator), so the reference is the only one.
    BLOCKS.with(|s| f(unsafe { &mut *s.get() }))
}

/// # Safety
/// `block` must be a live block from mimalloc that nothing else uses or frees.
unsafe fn release_to_mimalloc(block: *mut u8) {
    // SAFETY: as the caller guarantees.
    unsafe { libmimalloc_sys::mi_free(block.cast()) }
}

/// A kept block for a request of `size` bytes (natural alignment), if one is at hand.
#[inline(always)]
pub(crate) fn take(size: usize) -> Option<*mut u8> {
    let class = class_of_request(size)?;
    with_stacks(|s| s.pop(class))
}

/// Keeps `block`, freed with a layout of `size` bytes and natural alignment, for reuse. False if
/// it was not kept (too large or small, the class is full, or the thread is exiting): then the
/// caller frees it.
#[inline(always)]
pub(crate) fn keep(block: *mut u8, size: usize) -> bool {
    let Some(class) = class_of_freed(size) else {
        return false;
    };
    // A full class answers here: only a thread that keeps no blocks (yet) goes to `keep_first`.
    match with_stacks(|s| (s.keeping == Keeping::Yes).then(|| s.push(class, block))) {
        Some(kept) => kept,
        None => keep_first(block, class),
    }
}

/// `keep` when the thread does not keep blocks: registers the exit hook the first time.
#[cold]
#[inline(never)]
fn keep_first(block: *mut u8, class: usize) -> bool {
    if with_stacks(|s| s.keeping) == Keeping::Ended {
        return false;
    }
    // Registering the hook's destructor happens outside any borrow of the stacks: it may
    // allocate.
    let keeping = if EXIT_HOOK.try_with(|_| ()).is_ok() {
        Keeping::Yes
    } else {
        Keeping::Ended
    };
    with_stacks(|s| {
        s.keeping = keeping;
        keeping == Keeping::Yes && s.push(class, block)
    })
}

/// Hands this thread's kept blocks back to the inner allocator (they are free memory to it
/// again, for any thread).
pub(crate) fn release_all() {
    with_stacks(Stacks::release_all);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_serves_only_requests_no_larger_than_its_own() {
        for size in CLASS_BYTES..=MAX_SIZE {
            let freed = class_of_freed(size).expect("kept");
            // Every request served from this class fits in the freed block.
            let largest_served = (CLASS_BYTES..=MAX_SIZE)
                .filter(|&r| class_of_request(r) == Some(freed))
                .max()
                .expect("some request uses every class");
            assert!(
                largest_served <= size,
                "freed {size}, served {largest_served}"
            );
        }
        assert_eq!(class_of_freed(CLASS_BYTES - 1), None);
        assert_eq!(class_of_request(MAX_SIZE + 1), None);
        // The engine's hot sizes are kept and reused exactly.
        assert_eq!(class_of_freed(128), class_of_request(128));
        assert_eq!(class_of_freed(304), class_of_request(304));
    }

    #[test]
    fn blocks_come_back_newest_first_and_each_only_once() {
        let mut stacks = Stacks::new(|_| {});
        let blocks: Vec<*mut u8> = (1..=PER_CLASS + 1).map(|i| (i * 64) as *mut u8).collect();
        let kept = blocks.iter().filter(|&&b| stacks.push(3, b)).count();
        assert_eq!(kept, PER_CLASS, "a full class refuses more");
        for &b in blocks[..PER_CLASS].iter().rev() {
            assert_eq!(stacks.pop(3), Some(b));
        }
        assert_eq!(stacks.pop(3), None);
        assert_eq!(stacks.pop(4), None, "classes are apart");
    }

    #[test]
    fn an_exiting_thread_hands_its_blocks_back() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static RELEASED: AtomicUsize = AtomicUsize::new(0);
        fn count(_: *mut u8) {
            RELEASED.fetch_add(1, Ordering::Relaxed);
        }
        let mut stacks = Stacks::new(count);
        for class in [0, 7, CLASSES - 1] {
            for i in 0..5 {
                assert!(stacks.push(class, (4096 * (i + 1)) as *mut u8));
            }
        }
        stacks.end();
        assert_eq!(RELEASED.load(Ordering::Relaxed), 15);
        assert_eq!(stacks.keeping, Keeping::Ended);
        assert!(stacks.lens.iter().all(|&n| n == 0));
    }
}
