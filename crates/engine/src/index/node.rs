//! The nodes of the optimistic B+-tree, and the arena they live in.
//!
//! Every field of a node is an atomic, so a reader may read a node while a writer changes it (in
//! safe Rust, without tearing memory safety): the node's `version` tells it afterwards whether what
//! it read was consistent. A writer makes the version odd before changing the node and even again
//! after (a seqlock); a reader waits for an even version, reads, and accepts what it read only if
//! the version is unchanged. Readers therefore never write to a node.
//!
//! Nodes are never freed, only recycled within their tree, and a node's version grows across its
//! reuse, so a reader that followed a node id just before the node was unlinked and reused fails
//! its validation instead of trusting the new contents. Node ids index an arena of chunks that
//! double in size and never move.
//!
//! A node must never be changed without holding its tree's writer latch and having locked it.

use std::cmp::Ordering;
use std::sync::atomic::{AtomicU64, Ordering as Mem, fence};

use overtake_runtime::prefetch::prefetch_read;
use sdd::{AtomicShared, Guard, Shared, Tag};

use super::packed::{SearchKey, is_long};
use crate::storage::doubling::DoublingArray;

/// Keys per node: entries of a leaf, separators of an inner node (which has one more child).
pub(super) const CAP: usize = 32;

const LEAF: u64 = 1 << 32;
/// Where `meta` keeps one more than the position of a leaf's last insert (0: none since the
/// node was last rebuilt). Only writers read it: it tells a split where a run of ascending
/// inserts is going.
const LAST_INSERT_SHIFT: u32 = 40;

/// The full bytes of a key longer than the packed form holds.
pub(super) type LongKey = Box<[u8]>;

/// The full bytes of a node's long keys, by position. Kept apart from the node and made only for
/// a node that ever holds a long key: most indexes have none, and their nodes are a quarter
/// smaller without these slots (the nodes of all of TPC-C's indexes but one).
struct LongKeys([AtomicShared<LongKey>; CAP]);

/// One node: a leaf (`count` keys, `vals[i]` the OID under key `i`) or an inner node (`count`
/// separators; child `i` holds the keys `k` with `key[i-1] <= k < key[i]`, its id in `vals[i]`).
/// Laid out in declaration order so that the version, the count and the first keys share a cache
/// line.
#[repr(C)]
pub(super) struct Node {
    version: AtomicU64,
    /// `LEAF` bit, count, and (for writers) the last insert's position.
    meta: AtomicU64,
    /// Packed keys, high half then low half of each key side by side, so that a probe of a binary
    /// search touches one cache line.
    keys: [AtomicU64; 2 * CAP],
    vals: [AtomicU64; CAP + 1],
    /// Null until the node first holds a long key; never removed after.
    long: AtomicShared<LongKeys>,
}

/// A key as a writer moves it between nodes.
pub(super) struct Entry {
    pub(super) packed: u128,
    pub(super) long: Option<Shared<LongKey>>,
}

impl Entry {
    /// No key (clears a slot).
    pub(super) const EMPTY: Entry = Entry {
        packed: 0,
        long: None,
    };
}

/// An epoch guard entered only if a long key has to be read.
#[derive(Default)]
pub(super) struct LazyGuard(Option<Guard>);

impl LazyGuard {
    pub(super) fn get(&mut self) -> &Guard {
        self.0.get_or_insert_with(Guard::new)
    }
}

impl Node {
    fn new() -> Self {
        Node {
            version: AtomicU64::new(0),
            meta: AtomicU64::new(LEAF),
            keys: std::array::from_fn(|_| AtomicU64::new(0)),
            vals: std::array::from_fn(|_| AtomicU64::new(0)),
            long: AtomicShared::null(),
        }
    }

    // ---- Reading (optimistic) ----

    /// Asks for the lines a lookup in the node reads: version, count, keys and values.
    #[inline]
    pub(super) fn prefetch(&self) {
        let vals_end = std::mem::offset_of!(Node, long);
        prefetch_read(std::ptr::from_ref(self).cast(), vals_end);
    }

    /// The node's version once no writer is changing it. The writer is inside a non-preemptible
    /// region, hence running, and done in a few hundred nanoseconds.
    #[inline]
    pub(super) fn stable_version(&self) -> u64 {
        loop {
            let v = self.version.load(Mem::Acquire);
            if v & 1 == 0 {
                return v;
            }
            std::hint::spin_loop();
        }
    }

    /// True if the node is still at version `v`: everything read from it since is consistent.
    #[inline]
    pub(super) fn unchanged(&self, v: u64) -> bool {
        fence(Mem::Acquire);
        self.version.load(Mem::Relaxed) == v
    }

    #[inline]
    pub(super) fn is_leaf(&self) -> bool {
        self.meta.load(Mem::Relaxed) & LEAF != 0
    }

    /// The key count (clamped, so a torn read stays in bounds).
    #[inline]
    pub(super) fn count(&self) -> usize {
        ((self.meta.load(Mem::Relaxed) as u32) as usize).min(CAP)
    }

    #[inline]
    pub(super) fn packed(&self, i: usize) -> u128 {
        (u128::from(self.keys[2 * i].load(Mem::Relaxed)) << 64)
            | u128::from(self.keys[2 * i + 1].load(Mem::Relaxed))
    }

    #[inline]
    pub(super) fn val(&self, i: usize) -> u64 {
        self.vals[i].load(Mem::Relaxed)
    }

    /// True if the node holds, or once held, a key longer than its packed form (whose bytes are
    /// kept apart: see [`long_bytes`](Self::long_bytes)). False means every key is packed.
    #[inline]
    pub(super) fn has_long_keys(&self) -> bool {
        !self.long.is_null(Mem::Relaxed)
    }

    /// The full bytes of long key `i`.
    pub(super) fn long_bytes<'g>(&self, i: usize, guard: &'g Guard) -> Option<&'g [u8]> {
        self.long.load(Mem::Acquire, guard).as_ref()?.0[i]
            .load(Mem::Acquire, guard)
            .as_ref()
            .map(|b| &**b)
    }

    /// How stored key `i` compares with `key`.
    #[inline]
    pub(super) fn compare(&self, i: usize, key: &SearchKey<'_>, guard: &mut LazyGuard) -> Ordering {
        key.compare_stored(self.packed(i), || self.long_bytes(i, guard.get()))
    }

    /// The first position among the `n` keys whose key is `>= key` (with `strict`: `> key`).
    #[inline(always)]
    pub(super) fn search(
        &self,
        n: usize,
        key: &SearchKey<'_>,
        strict: bool,
        guard: &mut LazyGuard,
    ) -> usize {
        if is_long(key.packed) {
            self.search_by_compare(n, key, strict, guard)
        } else {
            self.search_packed(n, key.packed, strict)
        }
    }

    /// [`search`](Self::search) for a key of up to 15 bytes, whose packed form orders it exactly
    /// against every stored key (a long stored key never ties with it): one integer comparison
    /// per probe.
    ///
    /// The branches stay: on a node not in cache, the CPU follows its guess of each probe's
    /// outcome and starts loading the next probe's line before the previous one arrives. A
    /// branch-free search (each probe's address computed from the last compare) halved the
    /// mispredictions of a New-Order in callgrind's simulation but made Stock-Level, whose
    /// stock lookups miss the cache, 24% slower in alternating runs; prefetching the node's key
    /// lines first recovered only part of that. Measured again with the level-by-level prefetching
    /// descent (which asks for every node a round before searching it): branch-free searches in
    /// its steps made Stock-Level 24% and New-Order 9% slower.
    #[inline(always)]
    fn search_packed(&self, n: usize, target: u128, strict: bool) -> usize {
        let (mut lo, mut hi) = (0, n);
        while lo < hi {
            let mid = (lo + hi) / 2;
            let stored = self.packed(mid);
            let before = if strict {
                stored <= target
            } else {
                stored < target
            };
            if before {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// [`search`](Self::search) comparing whole keys (long keys need their full bytes).
    fn search_by_compare(
        &self,
        n: usize,
        key: &SearchKey<'_>,
        strict: bool,
        guard: &mut LazyGuard,
    ) -> usize {
        let (mut lo, mut hi) = (0, n);
        while lo < hi {
            let mid = (lo + hi) / 2;
            let before = match self.compare(mid, key, guard) {
                Ordering::Less => true,
                Ordering::Equal => strict,
                Ordering::Greater => false,
            };
            if before {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// Passes key `i`'s bytes to `take` and returns its result; `None` if they could not be read
    /// (a racing writer: the caller's validation fails).
    pub(super) fn with_key<R>(
        &self,
        i: usize,
        guard: &mut LazyGuard,
        take: impl FnOnce(&[u8]) -> R,
    ) -> Option<R> {
        match super::packed::unpack(self.packed(i)) {
            Some((bytes, len)) => Some(take(&bytes[..len])),
            None => self.long_bytes(i, guard.get()).map(take),
        }
    }

    // ---- Writing (writer latch held, node locked) ----

    /// Makes the version odd: readers wait or retry until [`unlock`](Self::unlock).
    pub(super) fn lock(&self) {
        let v = self.version.load(Mem::Relaxed);
        debug_assert!(v & 1 == 0, "node locked twice");
        self.version.store(v + 1, Mem::Relaxed);
        fence(Mem::Release);
    }

    pub(super) fn unlock(&self) {
        let v = self.version.load(Mem::Relaxed);
        debug_assert!(v & 1 == 1, "node unlocked while not locked");
        self.version.store(v + 1, Mem::Release);
    }

    pub(super) fn set_meta(&self, leaf: bool, count: usize) {
        let leaf = if leaf { LEAF } else { 0 };
        self.meta.store(leaf | count as u64, Mem::Relaxed);
    }

    /// Sets a leaf's count, remembering that its last insert went to position `pos`.
    pub(super) fn set_leaf_count_after_insert(&self, count: usize, pos: usize) {
        let last = (pos as u64 + 1) << LAST_INSERT_SHIFT;
        self.meta.store(LEAF | last | count as u64, Mem::Relaxed);
    }

    /// Where the leaf's last insert went, if it was an insert (for its writer, who alone sets it).
    pub(super) fn last_insert(&self) -> Option<usize> {
        let last = (self.meta.load(Mem::Relaxed) >> LAST_INSERT_SHIFT) & 0xFF;
        (last as usize).checked_sub(1)
    }

    pub(super) fn set_val(&self, i: usize, v: u64) {
        self.vals[i].store(v, Mem::Relaxed);
    }

    /// Key `i` as an owned entry (the long bytes shared, not copied).
    pub(super) fn entry(&self, i: usize, guard: &mut LazyGuard) -> Entry {
        let packed = self.packed(i);
        Entry {
            packed,
            long: if is_long(packed) {
                let guard = guard.get();
                self.long
                    .load(Mem::Acquire, guard)
                    .as_ref()
                    .and_then(|slots| slots.0[i].get_shared(Mem::Acquire, guard))
            } else {
                None
            },
        }
    }

    pub(super) fn set_key(&self, i: usize, entry: Entry) {
        self.keys[2 * i].store((entry.packed >> 64) as u64, Mem::Relaxed);
        self.keys[2 * i + 1].store(entry.packed as u64, Mem::Relaxed);
        // The old long key (if any) is freed once no reader can hold it. Most keys are short:
        // a node without long keys, or a null slot staying null, is not written.
        if entry.long.is_none() && self.long.is_null(Mem::Relaxed) {
            return;
        }
        let guard = Guard::new();
        if let Some(slots) = self.long_slots(&guard, entry.long.is_some()) {
            let slot = &slots.0[i];
            if entry.long.is_some() || !slot.is_null(Mem::Relaxed) {
                drop(slot.swap((entry.long, Tag::None), Mem::Release));
            }
        }
    }

    /// The node's long-key slots, for its writer; made first if `make` and the node has none.
    fn long_slots<'g>(&self, guard: &'g Guard, make: bool) -> Option<&'g LongKeys> {
        if make && self.long.is_null(Mem::Relaxed) {
            let slots = LongKeys(std::array::from_fn(|_| AtomicShared::null()));
            drop(
                self.long
                    .swap((Some(Shared::new(slots)), Tag::None), Mem::Release),
            );
        }
        self.long.load(Mem::Acquire, guard).as_ref()
    }

    /// Rewrites the node from `keys` (taken, leaving empty entries) and `vals` (the writer's copy
    /// of its new contents) and clears the long-key slots beyond them.
    pub(super) fn fill(&self, leaf: bool, keys: &mut [Entry], vals: &[u64]) {
        let n = keys.len();
        for (i, k) in keys.iter_mut().enumerate() {
            self.set_key(i, std::mem::replace(k, Entry::EMPTY));
        }
        if !self.long.is_null(Mem::Relaxed) {
            let guard = Guard::new();
            if let Some(slots) = self.long_slots(&guard, false) {
                for slot in &slots.0[n..] {
                    if !slot.is_null(Mem::Relaxed) {
                        drop(slot.swap((None, Tag::None), Mem::Release));
                    }
                }
            }
        }
        for (i, &v) in vals.iter().enumerate() {
            self.set_val(i, v);
        }
        self.set_meta(leaf, n);
    }

    /// Moves the keys and values at positions `from` (a range of a leaf) one place towards
    /// `to_right`'s side: a writer opening a gap for an insert, or closing one after a removal.
    /// The slot left behind keeps a stale copy; the caller writes over it or clears it.
    #[inline]
    pub(super) fn shift(
        &self,
        from: std::ops::Range<usize>,
        to_right: bool,
        guard: &mut LazyGuard,
    ) {
        let step = |i: usize| if to_right { i + 1 } else { i - 1 };
        // Most nodes never hold a long key: their keys move as plain words (a shifting insert
        // into a TPC-C leaf moves up to 31 of them), without the long-key bookkeeping.
        let plain = self.long.is_null(Mem::Relaxed);
        let mut move_one = |i: usize| {
            let to = step(i);
            if plain {
                self.keys[2 * to].store(self.keys[2 * i].load(Mem::Relaxed), Mem::Relaxed);
                self.keys[2 * to + 1].store(self.keys[2 * i + 1].load(Mem::Relaxed), Mem::Relaxed);
            } else {
                let entry = self.entry(i, guard);
                self.set_key(to, entry);
            }
            self.set_val(to, self.val(i));
        };
        if to_right {
            from.rev().for_each(&mut move_one);
        } else {
            from.for_each(&mut move_one);
        }
    }
}

/// The nodes of one tree, addressed by id: 256 in the first chunk, 24 chunks (4 billion nodes).
pub(super) struct Arena {
    nodes: DoublingArray<Node, 8, 24>,
}

impl Arena {
    pub(super) fn new() -> Self {
        Arena {
            nodes: DoublingArray::new(Node::new),
        }
    }

    /// Node `id`, if its chunk exists. A reader may hold a garbage id read from a node a writer
    /// was changing: it gets `None` or some node, and its validation of the parent fails.
    #[inline]
    pub(super) fn get(&self, id: u64) -> Option<&Node> {
        self.nodes.get(id)
    }

    /// Node `id` for its writer, creating its chunk on first use (and the next one ahead of need).
    pub(super) fn make(&self, id: u64) -> &Node {
        self.nodes.build_ahead(id);
        match self.nodes.get_or_build(id) {
            Some(node) => node,
            None => panic!("index node id {id} is beyond the arena's capacity"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::packed::pack;

    /// Long-key slots exist only in a node that held a long key, and a short key written over a
    /// long one lets the long bytes go.
    #[test]
    fn long_key_slots_are_made_on_first_need_and_cleared_by_short_keys() {
        let node = Node::new();
        assert!(
            size_of::<Node>() <= 800,
            "a node without long-key slots: {} bytes",
            size_of::<Node>()
        );
        let short = Entry {
            packed: pack(b"ab"),
            long: None,
        };
        node.fill(true, &mut [short], &[1]);
        assert!(node.long.is_null(Mem::Relaxed), "no long key, no slots");
        let bytes: LongKey = vec![7u8; 20].into_boxed_slice();
        let long = Entry {
            packed: pack(&bytes),
            long: Some(Shared::new(bytes.clone())),
        };
        node.set_key(1, long);
        let guard = Guard::new();
        assert_eq!(node.long_bytes(1, &guard), Some(&bytes[..]));
        node.set_key(
            1,
            Entry {
                packed: pack(b"zz"),
                long: None,
            },
        );
        assert_eq!(
            node.long_bytes(1, &guard),
            None,
            "the short key replaced it"
        );
        assert!(!node.long.is_null(Mem::Relaxed), "slots stay once made");
    }

    /// The search of short keys by packed form finds what comparing whole keys finds, for every
    /// count, both kinds of bound, and targets before, between, on and after the keys.
    #[test]
    fn packed_search_agrees_with_comparing_keys() {
        let node = Node::new();
        let mut guard = LazyGuard::default();
        for n in 0..=CAP {
            // Keys 10, 20, ... as 2-byte keys; one long key sorts after its 15-byte prefix.
            let mut keys: Vec<Entry> = (0..n)
                .map(|i| Entry {
                    packed: pack(&(10 * (i as u16 + 1)).to_be_bytes()),
                    long: None,
                })
                .collect();
            node.fill(true, &mut keys, &vec![0; n]);
            for t in 0..=10 * (n as u16 + 2) {
                let bytes = t.to_be_bytes();
                let key = SearchKey::new(&bytes);
                for strict in [false, true] {
                    assert_eq!(
                        node.search_packed(n, key.packed, strict),
                        node.search_by_compare(n, &key, strict, &mut guard),
                        "n {n}, target {t}, strict {strict}"
                    );
                }
            }
        }
    }
}
