//! Ordered indexes: maps from encoded keys to OIDs whose readers write nothing shared.
//!
//! Each index is an optimistic B+-tree (`tree`, `write`, `node`): readers descend by reading node
//! versions and validating them afterwards, so a point lookup or a scan never writes to memory
//! another core reads (no reader count, no lock word bouncing between cores), and a reader is never
//! blocked by another reader. Keys are packed into one `u128` compared as an integer (`packed`);
//! keys over 15 bytes keep their full bytes beside the packed form.
//!
//! Writers of one index are serialized by a latch; a writer locks only the nodes it changes (a leaf
//! on most inserts and removals), and readers of other nodes carry on. This was chosen over the
//! crates measured in the workspace's `benches/index-choice` (docs/benchmarks.md has the
//! figures): `scc::TreeIndex` walks
//! back over removed keys in queue-like ranges, `crossbeam_skiplist` chases ~30 scattered nodes per
//! lookup, and the `RwLock<BTreeMap>` used before made every lookup a read-modify-write of one lock
//! word.
//!
//! Every call runs inside a non-preemptible region, so the writer latch and a node's lock are only
//! ever held by running code. Scans are fetched in batches; the caller works on a batch (reading
//! rows, running user code) preemptibly, then asks for the next batch after the last key it saw.

mod node;
mod packed;
mod tree;
mod write;

use overtake_runtime::NoPreemptGuard;
use std::ops::Bound;

use crate::storage::key::{KeyBuf, as_slice_bound};
use crate::storage::record::Oid;
use node::{LazyGuard, Node};
pub(crate) use tree::LeafHint;
use tree::Tree;

/// A batch of index entries copied out of the index.
///
/// Each entry is one 24-byte record: the key's packed form as bytes (a key of up to 15 bytes,
/// followed by its length) and the OID, so copying an entry out of a leaf is one push. A longer
/// key's bytes go to `long_keys`, and its entry holds their start and length instead.
#[derive(Default)]
pub(crate) struct ScanBatch {
    entries: Vec<BatchEntry>,
    long_keys: Vec<u8>,
    torn: bool,
    /// Every leaf the batch's entries were read from (and any leaf in the range it passed with
    /// none), at the version they were read at: while all are unchanged, the range holds exactly
    /// these entries.
    leaves: Vec<LeafHint>,
}

struct BatchEntry {
    key: [u8; 16],
    oid: Oid,
}

impl ScanBatch {
    pub(crate) fn clear(&mut self) {
        self.entries.clear();
        self.long_keys.clear();
        self.torn = false;
        self.leaves.clear();
    }

    /// Appends entry `i` of `leaf`; a key that could not be read marks the batch torn.
    fn push_from(&mut self, leaf: &Node, i: usize, guard: &mut LazyGuard) {
        let packed = leaf.packed(i);
        let oid = leaf.val(i);
        if !packed::is_long(packed) {
            self.entries.push(BatchEntry {
                key: packed.to_be_bytes(),
                oid,
            });
            return;
        }
        let start = self.long_keys.len();
        let long_keys = &mut self.long_keys;
        if leaf
            .with_key(i, guard, |k| long_keys.extend_from_slice(k))
            .is_none()
        {
            self.torn = true;
        }
        let len = self.long_keys.len() - start;
        let mut key = [0u8; 16];
        key[..8].copy_from_slice(&(start as u64).to_le_bytes());
        key[8..12].copy_from_slice(&(len as u32).to_le_bytes());
        key[15] = packed::LONG;
        self.entries.push(BatchEntry { key, oid });
    }

    /// Appends entries `range` of `leaf` (from its last one down with `reverse`), as
    /// [`push_from`](Self::push_from) each.
    fn extend_from(
        &mut self,
        leaf: &Node,
        range: std::ops::Range<usize>,
        reverse: bool,
        guard: &mut LazyGuard,
    ) {
        if leaf.has_long_keys() {
            let mut push = |i| self.push_from(leaf, i, guard);
            if reverse {
                range.rev().for_each(&mut push);
            } else {
                range.for_each(&mut push);
            }
            return;
        }
        // No long key: every entry is its packed form and OID, copied in one pass.
        let entry = |i| BatchEntry {
            key: leaf.packed(i).to_be_bytes(),
            oid: leaf.val(i),
        };
        if reverse {
            self.entries.extend(range.rev().map(entry));
        } else {
            self.entries.extend(range.map(entry));
        }
    }

    /// True if an entry was read from a leaf a writer was changing.
    fn torn(&self) -> bool {
        self.torn
    }

    /// Drops the entries from position `len` on (and the torn mark). Long keys' bytes of dropped
    /// entries stay in `long_keys` until the batch is cleared.
    fn truncate(&mut self, len: usize) {
        self.entries.truncate(len);
        self.torn = false;
    }

    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// The leaves the batch was read from (see the field).
    pub(crate) fn leaves(&self) -> &[LeafHint] {
        &self.leaves
    }

    pub(crate) fn oid(&self, i: usize) -> Oid {
        self.entries[i].oid
    }

    pub(crate) fn key(&self, i: usize) -> &[u8] {
        let key = &self.entries[i].key;
        let len = key[15];
        if len != packed::LONG {
            return &key[..usize::from(len)];
        }
        let start = key[..8].try_into().map_or(0, u64::from_le_bytes) as usize;
        let len = key[8..12].try_into().map_or(0, u32::from_le_bytes) as usize;
        &self.long_keys[start..start + len]
    }
}

/// A prefetching descent towards the leaf of one key (see [`OrderedIndex::prefetch_start`]).
#[derive(Clone, Copy)]
pub(crate) struct LeafPrefetch<'t, 'k>(tree::PrefetchDescent<'t, 'k>);

/// An ordered map from encoded keys to OIDs.
pub(crate) struct OrderedIndex {
    tree: Tree,
}

impl OrderedIndex {
    pub(crate) fn new() -> Self {
        OrderedIndex { tree: Tree::new() }
    }

    /// The OID stored under `key`.
    #[inline]
    pub(crate) fn get(&self, key: &[u8]) -> Option<Oid> {
        self.get_hinted(key).0
    }

    /// The OID stored under `key`, and where the key is or would go, for a later insert of it.
    #[inline]
    pub(crate) fn get_hinted(&self, key: &[u8]) -> (Option<Oid>, LeafHint) {
        let _region = NoPreemptGuard::new();
        self.tree.get(key)
    }

    /// [`get_hinted`](Self::get_hinted), also giving the leaf's upper fence (the smallest key
    /// of the leaves to its right; `None` for the last leaf): every key from `key` up to the
    /// fence belongs in the same leaf, so while it is unchanged they can be looked up in it
    /// alone ([`get_in_leaf`](Self::get_in_leaf)).
    pub(crate) fn get_fenced(&self, key: &[u8]) -> (Option<Oid>, LeafHint, Option<KeyBuf>) {
        let _region = NoPreemptGuard::new();
        let mut fence = KeyBuf::new();
        let (found, hint, has_fence) = self.tree.get_fenced(key, &mut fence);
        (found, hint, has_fence.then_some(fence))
    }

    /// The OID under `key` in the leaf `hint` names, if the leaf is unchanged since the hint
    /// was taken (`None` otherwise). The caller must know that `key` belongs in that leaf (see
    /// [`get_fenced`](Self::get_fenced)).
    pub(crate) fn get_in_leaf(&self, hint: LeafHint, key: &[u8]) -> Option<Option<Oid>> {
        let _region = NoPreemptGuard::new();
        self.tree.get_in_leaf(hint, key)
    }

    /// Starts loading the leaf that holds `key`, a hint for a lookup soon after: the descent
    /// begins at the root; [`prefetch_step`](Self::prefetch_step) takes it down a level at a
    /// time, so that the caller can interleave the descents of many keys.
    #[inline]
    pub(crate) fn prefetch_start<'k>(&self, key: &'k [u8]) -> Option<LeafPrefetch<'_, 'k>> {
        let _region = NoPreemptGuard::new();
        self.tree.prefetch_start(key).map(LeafPrefetch)
    }

    /// Takes a prefetching descent one level down; false once it has asked for the leaf.
    #[inline]
    pub(crate) fn prefetch_step<'t>(&'t self, descent: &mut LeafPrefetch<'t, '_>) -> bool {
        let _region = NoPreemptGuard::new();
        self.tree.prefetch_step(&mut descent.0)
    }

    /// The OID under `key` as the leaf its finished prefetching descent asked for shows it now
    /// (no second descent), and the leaf's hint; `None` if the leaf changed meanwhile. For hints
    /// only: a lookup that matters uses [`get`](Self::get), or confirms the hint with
    /// [`unchanged_since`](Self::unchanged_since) first.
    #[inline]
    pub(crate) fn search_prefetched(
        &self,
        leaf: &LeafPrefetch<'_, '_>,
        key: &[u8],
    ) -> Option<(Oid, LeafHint)> {
        let _region = NoPreemptGuard::new();
        self.tree.search_prefetched((leaf.0.id, leaf.0.node), key)
    }

    /// True if nothing changed the leaf `hint` names since the lookup that gave the hint: what
    /// that lookup found for its key still holds, so it need not be looked up again. One load.
    #[inline]
    pub(crate) fn unchanged_since(&self, hint: LeafHint) -> bool {
        self.tree.unchanged_since(hint)
    }

    /// Inserts `key -> oid`. If the key is present (whatever it maps to, `oid` included), returns
    /// the OID it maps to and changes nothing, so callers only undo entries they really added.
    pub(crate) fn insert(&self, key: &[u8], oid: Oid) -> Result<(), Oid> {
        self.tree.insert(key, oid, None).map(|_| ())
    }

    /// [`insert`](Self::insert), skipping the descent if `hint`'s leaf (from a lookup of the same
    /// key) has not changed since. Returns the leaf's hint after the insert if it went there, so
    /// the caller can follow other hints to that leaf (see [`LeafHint`]).
    pub(crate) fn insert_hinted(
        &self,
        key: &[u8],
        oid: Oid,
        hint: LeafHint,
    ) -> Result<Option<LeafHint>, Oid> {
        self.tree.insert(key, oid, Some(hint))
    }

    /// Points `key` at `new` if it still maps to `expected` (taking over a stale entry).
    pub(crate) fn replace(&self, key: &[u8], expected: Oid, new: Oid) -> bool {
        self.tree.replace(key, expected, new)
    }

    /// Removes `key` if it still maps to `oid`.
    pub(crate) fn remove(&self, key: &[u8], oid: Oid) -> bool {
        self.tree.remove_if(key, oid, || true)
    }

    /// Removes `key` if it still maps to `oid` and `needed` says no one needs the entry, asked
    /// while no other writer of this index can change anything: a writer that would re-add the
    /// entry either does so before (and `needed` sees what it installed) or after the removal.
    pub(crate) fn remove_unless(
        &self,
        key: &[u8],
        oid: Oid,
        needed: impl FnOnce() -> bool,
    ) -> bool {
        self.tree.remove_if(key, oid, || !needed())
    }

    /// Copies up to `max` entries of the range into `out`, in key order (or reverse order). The
    /// entries of each leaf are read consistently; a batch spanning leaves may see a change made
    /// between two of them.
    pub(crate) fn fetch_batch(
        &self,
        bounds: (Bound<&[u8]>, Bound<&[u8]>),
        reverse: bool,
        max: usize,
        out: &mut ScanBatch,
    ) {
        let _region = NoPreemptGuard::new();
        self.tree.fetch(bounds, reverse, max, out);
    }
}

/// Entries per batch of [`OrderedIndex::visit`].
const VISIT_BATCH: usize = 64;

impl OrderedIndex {
    /// Calls `visit` for every entry between the bounds, in key order, until it returns false
    /// (then returns false). Entries are copied out in batches, one short region each, so `visit`
    /// runs outside the latch; an entry added behind the walk's position is not seen.
    pub(crate) fn visit(
        &self,
        (lower, upper): (Bound<&[u8]>, Bound<&[u8]>),
        batch: &mut ScanBatch,
        mut visit: impl FnMut(&[u8], Oid) -> bool,
    ) -> bool {
        let mut from = lower.map(|k| KeyBuf::from_bytes(k).unwrap_or_default());
        loop {
            self.fetch_batch((as_slice_bound(&from), upper), false, VISIT_BATCH, batch);
            if !(0..batch.len()).all(|i| visit(batch.key(i), batch.oid(i))) {
                return false;
            }
            if batch.len() < VISIT_BATCH {
                return true;
            }
            from = KeyBuf::from_bytes(batch.key(batch.len() - 1))
                .map_or(Bound::Unbounded, Bound::Excluded);
        }
    }
}

#[cfg(test)]
mod tests;
