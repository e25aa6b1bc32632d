//! An array whose elements never move, stored in chunks that double in size (`2^FIRST_BITS`
//! elements, then twice that, ...), each allocated when first needed. Record slots and index nodes
//! live in one: a reference to an element stays valid for the array's lifetime without any lock.
//!
//! Building a chunk costs time in proportion to its size (measured here: a chunk of 16,384 index
//! nodes, 17 MB, took 10 ms), and whoever first needs a missing chunk builds it inside its
//! non-preemptible region, where an urgent transaction would wait for it. So chunks are built
//! ahead of need: when an element in the second half of its chunk is handed out, a background
//! thread builds the next chunk and publishes it, and transactions find it ready.
//!
//! Must never: make a reader wait, or make anyone wait for the background builder. The builder
//! fills its chunk outside the cell and only publishes a finished one; a transaction that needs
//! the chunk before that builds its own, and the builder's copy is dropped.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use overtake_runtime::{NoPreemptGuard, RegionOnceLock};

/// The chunks and how to make an element (shared with a background builder). The cells are
/// inline, so that finding an element (every step of an index descent) follows one pointer to
/// them rather than two.
struct Chunks<T, const CHUNKS: usize> {
    cells: [RegionOnceLock<Box<[T]>>; CHUNKS],
    /// Set once a background build of the chunk has been started.
    started_ahead: [AtomicBool; CHUNKS],
    make: fn() -> T,
}

impl<T, const CHUNKS: usize> Chunks<T, CHUNKS> {
    fn build(&self, chunk: usize, first_bits: u32) -> Box<[T]> {
        (0..1usize << (chunk as u32 + first_bits))
            .map(|_| (self.make)())
            .collect()
    }
}

/// See the module documentation. `CHUNKS` chunks hold `2^FIRST_BITS * (2^CHUNKS - 1)` elements.
pub(crate) struct DoublingArray<T, const FIRST_BITS: u32, const CHUNKS: usize> {
    chunks: Arc<Chunks<T, CHUNKS>>,
}

/// Chunk and offset of element `index`, `None` past the last chunk.
fn locate(index: u64, first_bits: u32, chunks: usize) -> Option<(usize, usize)> {
    let v = index.checked_add(1 << first_bits)?;
    let chunk = (63 - v.leading_zeros() - first_bits) as usize;
    let offset = (v - (1 << (chunk as u32 + first_bits))) as usize;
    (chunk < chunks).then_some((chunk, offset))
}

impl<T: Send + Sync + 'static, const FIRST_BITS: u32, const CHUNKS: usize>
    DoublingArray<T, FIRST_BITS, CHUNKS>
{
    /// An empty array whose elements start as `make()`.
    pub(crate) fn new(make: fn() -> T) -> Self {
        DoublingArray {
            chunks: Arc::new(Chunks {
                cells: std::array::from_fn(|_| RegionOnceLock::new()),
                started_ahead: std::array::from_fn(|_| AtomicBool::new(false)),
                make,
            }),
        }
    }

    /// Element `index`, if its chunk exists.
    #[inline]
    pub(crate) fn get(&self, index: u64) -> Option<&T> {
        let (chunk, offset) = locate(index, FIRST_BITS, CHUNKS)?;
        self.chunks.cells[chunk].get().map(|c| &c[offset])
    }

    /// Element `index`, building its chunk here if nobody has yet. `None` past the last chunk.
    #[inline]
    pub(crate) fn get_or_build(&self, index: u64) -> Option<&T> {
        let (chunk, offset) = locate(index, FIRST_BITS, CHUNKS)?;
        let cell = &self.chunks.cells[chunk];
        Some(match cell.get() {
            Some(elements) => &elements[offset],
            None => &self.build_now(chunk)[offset],
        })
    }

    /// Builds chunk `chunk` (or waits for the transaction building it, which runs inside its
    /// region: the region is entered before the cell is claimed).
    #[cold]
    fn build_now(&self, chunk: usize) -> &[T] {
        let region = NoPreemptGuard::new();
        self.chunks.cells[chunk].get_or_init(&region, || self.chunks.build(chunk, FIRST_BITS))
    }

    /// Tells the array that element `index` is being handed out. If it lies in the second half
    /// of its chunk, the next chunk is built by a background thread (once), which is returned for
    /// tests to join; callers let it run. Cheap enough for every allocation.
    #[inline]
    pub(crate) fn build_ahead(&self, index: u64) -> Option<std::thread::JoinHandle<()>> {
        let (chunk, offset) = locate(index, FIRST_BITS, CHUNKS)?;
        let next = chunk + 1;
        if offset < 1 << (chunk as u32 + FIRST_BITS - 1)
            || next >= CHUNKS
            || self.chunks.cells[next].get().is_some()
        {
            return None;
        }
        self.start_builder(next)
    }

    #[cold]
    fn start_builder(&self, chunk: usize) -> Option<std::thread::JoinHandle<()>> {
        if self.chunks.started_ahead[chunk].swap(true, Ordering::AcqRel) {
            return None;
        }
        let chunks = Arc::clone(&self.chunks);
        // Spawning allocates and takes the runtime's thread list lock: do it inside a region.
        let _region = NoPreemptGuard::new();
        let spawned = std::thread::Builder::new()
            .name("overtake-grow".to_owned())
            .spawn(move || {
                let elements = chunks.build(chunk, FIRST_BITS);
                let region = NoPreemptGuard::new();
                // Someone who needed the chunk first built their own: ours is dropped.
                let _ = chunks.cells[chunk].set(&region, elements);
            });
        // If no thread can be started, the chunk is built when first needed, as without this.
        spawned.ok()
    }

    /// Whether chunk `chunk` exists (tests).
    #[cfg(test)]
    fn has_chunk(&self, chunk: usize) -> bool {
        self.chunks.cells[chunk].get().is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;

    type Small = DoublingArray<AtomicU64, 4, 6>;

    #[test]
    fn chunks_double_and_cover_every_index() {
        assert_eq!(locate(0, 4, 6), Some((0, 0)));
        assert_eq!(locate(15, 4, 6), Some((0, 15)));
        assert_eq!(locate(16, 4, 6), Some((1, 0)));
        assert_eq!(locate(16 + 31, 4, 6), Some((1, 31)));
        assert_eq!(locate(16 + 32, 4, 6), Some((2, 0)));
        assert_eq!(locate(16 * 63 - 1, 4, 6), Some((5, 511)));
        assert_eq!(locate(16 * 63, 4, 6), None, "past the last chunk");
        assert_eq!(locate(u64::MAX, 4, 6), None);
        let array = Small::new(|| AtomicU64::new(7));
        assert!(array.get(20).is_none(), "chunks exist only once needed");
        let a: *const _ = array.get_or_build(20).expect("in range");
        assert!(
            std::ptr::eq(a, array.get(20).expect("built")),
            "never moves"
        );
        assert_eq!(array.get(20).map(|e| e.load(Ordering::Relaxed)), Some(7));
        assert!(array.get_or_build(16 * 63).is_none());
    }

    #[test]
    fn handing_out_the_second_half_of_a_chunk_builds_the_next_one_ahead() {
        let array = Small::new(|| AtomicU64::new(0));
        array.get_or_build(0);
        assert!(array.build_ahead(7).is_none(), "first half: not yet");
        assert!(!array.has_chunk(1));
        let builder = array.build_ahead(8).expect("second half starts a builder");
        assert!(array.build_ahead(9).is_none(), "one builder per chunk");
        builder.join().expect("builder finished");
        assert!(array.has_chunk(1), "chunk 1 built before anyone needed it");
        let ready: *const _ = array.get(16).expect("ready");
        assert!(std::ptr::eq(
            ready,
            array.get_or_build(16).expect("in range")
        ));
        assert!(
            array.build_ahead(16 * 63 - 1).is_none(),
            "nothing after the last"
        );
    }

    #[test]
    fn a_chunk_needed_before_its_builder_finishes_is_built_once_and_kept() {
        let array = Small::new(|| AtomicU64::new(0));
        array.get_or_build(0);
        // Needed (and written to) before the background build is even started.
        let first: *const _ = array.get_or_build(16).expect("in range");
        array.get(16).expect("built").store(5, Ordering::Relaxed);
        assert!(array.build_ahead(8).is_none(), "already there");
        // A builder that loses the race leaves the published chunk alone.
        let chunks = Arc::clone(&array.chunks);
        let late = chunks.build(1, 4);
        let region = NoPreemptGuard::new();
        assert!(array.chunks.cells[1].set(&region, late).is_err());
        assert!(std::ptr::eq(first, array.get(16).expect("kept")));
        assert_eq!(array.get(16).map(|e| e.load(Ordering::Relaxed)), Some(5));
    }
}
