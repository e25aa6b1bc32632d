//! The optimistic B+-tree: how readers find keys without writing anything shared.
//!
//! A reader descends from the root, reading each node under its version (see `node`): it reads
//! the child id, waits for the child's version to be even, and then checks that the parent is
//! still at the version it read, so the child really was the parent's child when its version was
//! taken. Any change detected sends the reader back to the root. The root id itself is checked the
//! same way. A leaf's entries are accepted once the leaf's version is found unchanged after reading
//! them.
//!
//! Scans read one leaf at a time and move to the next leaf by its fence: the separator that bounds
//! the leaf in its parent (or a higher ancestor), so an empty leaf, or a leaf split behind the
//! scan, cannot make it skip or repeat keys.

use std::ops::Bound;
use std::sync::atomic::{AtomicU64, Ordering as Mem};

use overtake_runtime::RegionMutex;

use super::ScanBatch;
use super::node::{Arena, LazyGuard, Node};
use super::packed::SearchKey;
use crate::storage::key::KeyBuf;

/// Which child a descent takes at each inner node.
#[derive(Clone, Copy)]
pub(super) enum Seek<'k> {
    /// The leftmost leaf.
    First,
    /// The rightmost leaf.
    Last,
    /// The leaf that holds `key` (or would).
    Holding(SearchKey<'k>),
    /// The leaf that holds the largest key below `key`.
    Below(SearchKey<'k>),
}

/// Which fence of the leaf a descent reports (for scans).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Fence {
    None,
    /// The smallest key of the leaves to the right (keys `>=` it are not in this leaf).
    High,
    /// The largest separator to the left (keys `<` it are not in this leaf).
    Low,
}

/// The leaf a key was found in (or would go to) and the leaf's version then.
///
/// While the leaf stays at that version, the key still belongs in it: a leaf's own changes
/// (inserts, removals, splits, being unlinked or reused) all move its version, and the changes
/// that do not touch it (a sibling splitting or being unlinked, an ancestor splitting) only ever
/// widen the range of keys it holds. So a writer that finds the version unchanged may insert the
/// key there without descending again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LeafHint {
    pub(super) leaf: u64,
    pub(super) version: u64,
}

/// A descent towards the leaf that holds one key, made one level at a time so that the descents
/// of many keys can be interleaved (see `Transaction::prefetch_rows`): each step searches the node
/// the previous step asked for and asks for the whole next node, and the caller goes on with the
/// other keys' steps while its lines arrive. The misses of the inner nodes (which a busy cache
/// does not keep) then overlap across keys, and within a node, instead of each probe of each
/// binary search waiting for its own line.
///
/// A hint only: it reads nodes without validating them, so a tree changed meanwhile sends it to
/// some other node, which costs nothing but the hint. It never descends more levels than the
/// tree had when it started.
#[derive(Clone, Copy)]
pub(super) struct PrefetchDescent<'t, 'k> {
    key: SearchKey<'k>,
    pub(super) id: u64,
    pub(super) node: &'t Node,
    /// Inner levels still to go.
    levels: u64,
}

/// Writer-side state, under the tree's writer latch.
pub(super) struct WriterState {
    /// Unlinked nodes, ready for reuse.
    pub(super) free: Vec<u64>,
    /// One past the largest node id ever used.
    pub(super) next_id: u64,
}

/// An ordered map from byte keys to `u64` values.
pub(super) struct Tree {
    pub(super) root: AtomicU64,
    /// Inner levels above the leaves (0: the root is a leaf). Only grows, with the root; read
    /// only by prefetches, which may act on a stale value.
    pub(super) height: AtomicU64,
    pub(super) arena: Arena,
    /// Serializes writers. Readers never take it.
    pub(super) writer: RegionMutex<WriterState>,
}

impl Tree {
    pub(super) fn new() -> Self {
        let arena = Arena::new();
        arena.make(0).set_meta(true, 0);
        Tree {
            root: AtomicU64::new(0),
            height: AtomicU64::new(0),
            arena,
            writer: RegionMutex::new(WriterState {
                free: Vec::new(),
                next_id: 1,
            }),
        }
    }

    /// Descends to the leaf `seek` names. Returns the leaf, its id and the version its contents
    /// must be validated against, and fills `fence_out` with the fence `fence` asks for (`false`
    /// if the leaf has none on that side: it is the first or last).
    pub(super) fn descend(
        &self,
        seek: Seek<'_>,
        (fence, fence_out): (Fence, Option<&mut KeyBuf>),
        guard: &mut LazyGuard,
    ) -> (&Node, LeafHint, bool) {
        let mut fence_out = fence_out;
        'restart: loop {
            let root_id = self.root.load(Mem::Acquire);
            let Some(mut node) = self.arena.get(root_id) else {
                unreachable!("the root is always allocated")
            };
            let mut version = node.stable_version();
            if self.root.load(Mem::Acquire) != root_id {
                continue 'restart;
            }
            let mut id = root_id;
            let mut has_fence = false;
            while !node.is_leaf() {
                let n = node.count();
                let idx = match seek {
                    Seek::First => 0,
                    Seek::Last => n,
                    Seek::Holding(key) => node.search(n, &key, true, guard),
                    Seek::Below(key) => node.search(n, &key, false, guard),
                };
                if let Some(out) = fence_out.as_deref_mut() {
                    match fence {
                        Fence::High if idx < n => has_fence = fence_at(node, idx, out, guard),
                        Fence::Low if idx > 0 => has_fence = fence_at(node, idx - 1, out, guard),
                        _ => {}
                    }
                }
                let child_id = node.val(idx);
                let Some(child) = self.arena.get(child_id) else {
                    continue 'restart;
                };
                let child_version = child.stable_version();
                if !node.unchanged(version) {
                    continue 'restart;
                }
                (node, id, version) = (child, child_id, child_version);
            }
            return (node, LeafHint { leaf: id, version }, has_fence);
        }
    }

    /// Starts a prefetching descent towards the leaf that holds `key`: asks for the root's lines.
    /// See [`PrefetchDescent`].
    pub(super) fn prefetch_start<'k>(&self, key: &'k [u8]) -> Option<PrefetchDescent<'_, 'k>> {
        let id = self.root.load(Mem::Acquire);
        let node = self.arena.get(id)?;
        node.prefetch();
        Some(PrefetchDescent {
            key: SearchKey::new(key),
            id,
            node,
            levels: self.height.load(Mem::Acquire),
        })
    }

    /// Takes `descent` one level down: searches the node it asked for last (which should have
    /// arrived by now) and asks for the child's lines. False, changing nothing, once the node
    /// asked for is at the leaf level (or is not an inner node after all: the tree changed).
    pub(super) fn prefetch_step<'t>(&'t self, descent: &mut PrefetchDescent<'t, '_>) -> bool {
        let node = descent.node;
        if descent.levels == 0 || node.is_leaf() {
            return false;
        }
        let idx = node.search(node.count(), &descent.key, true, &mut LazyGuard::default());
        let id = node.val(idx);
        let Some(child) = self.arena.get(id) else {
            return false;
        };
        child.prefetch();
        (descent.id, descent.node) = (id, child);
        descent.levels -= 1;
        true
    }

    /// The value under `key` in node `id` (where a [`PrefetchDescent`] for the same key ended)
    /// and the leaf's hint, if the node is a leaf that holds the key now. Another hint: a leaf
    /// changed since the descent may answer `None` for a key that is in the tree.
    pub(super) fn search_prefetched(
        &self,
        (id, node): (u64, &Node),
        key: &[u8],
    ) -> Option<(u64, LeafHint)> {
        let (found, version) = read_leaf(node, &SearchKey::new(key))?;
        found.map(|value| (value, LeafHint { leaf: id, version }))
    }

    /// True if the leaf `hint` names is still at the hint's version: what a lookup found in it
    /// then (a key's value, or its absence) still holds.
    pub(super) fn unchanged_since(&self, hint: LeafHint) -> bool {
        self.arena
            .get(hint.leaf)
            .is_some_and(|leaf| leaf.unchanged(hint.version))
    }

    /// The value stored under `key`, and where the key is or would be.
    pub(super) fn get(&self, key: &[u8]) -> (Option<u64>, LeafHint) {
        let (found, hint, _) = self.lookup(key, None);
        (found, hint)
    }

    /// [`get`](Self::get), also giving the leaf's upper fence: the smallest key of the leaves to
    /// its right, written to `fence` (false if the leaf is the last one).
    pub(super) fn get_fenced(
        &self,
        key: &[u8],
        fence: &mut KeyBuf,
    ) -> (Option<u64>, LeafHint, bool) {
        self.lookup(key, Some(fence))
    }

    /// A point lookup: the value, the leaf's hint, and (if `fence` is given) its upper fence.
    #[inline(always)]
    fn lookup(&self, key: &[u8], mut fence: Option<&mut KeyBuf>) -> (Option<u64>, LeafHint, bool) {
        let key = SearchKey::new(key);
        let mut guard = LazyGuard::default();
        let side = if fence.is_some() {
            Fence::High
        } else {
            Fence::None
        };
        loop {
            let (leaf, hint, has_fence) =
                self.descend(Seek::Holding(key), (side, fence.as_deref_mut()), &mut guard);
            let found = find_in_leaf(leaf, &key, &mut guard);
            if leaf.unchanged(hint.version) {
                return (found, hint, has_fence);
            }
        }
    }

    /// The value under `key` as the leaf `hint` names holds it, if that leaf is still at the
    /// hint's version; the caller knows the key belongs in that leaf.
    pub(super) fn get_in_leaf(&self, hint: LeafHint, key: &[u8]) -> Option<Option<u64>> {
        let leaf = self.arena.get(hint.leaf)?;
        let (found, version) = read_leaf(leaf, &SearchKey::new(key))?;
        (version == hint.version).then_some(found)
    }

    /// Copies up to `max` entries between the bounds into `out`, in key order or reverse order.
    pub(super) fn fetch(
        &self,
        (lower, upper): (Bound<&[u8]>, Bound<&[u8]>),
        reverse: bool,
        max: usize,
        out: &mut ScanBatch,
    ) {
        out.clear();
        let mut guard = LazyGuard::default();
        let (lower, upper) = (lower.map(SearchKey::new), upper.map(SearchKey::new));
        // The moving bound: the scan resumes from it after each leaf.
        let given = if reverse { upper } else { lower };
        let mut resume = KeyBuf::new();
        let mut moving: Bound<()> = match given {
            Bound::Included(k) => {
                resume.set(k.bytes);
                Bound::Included(())
            }
            Bound::Excluded(k) => {
                resume.set(k.bytes);
                Bound::Excluded(())
            }
            Bound::Unbounded => Bound::Unbounded,
        };
        let mut fence = KeyBuf::new();
        let side = if reverse { Fence::Low } else { Fence::High };
        while out.len() < max {
            let from = SearchKey::new(resume.as_bytes());
            let seek = match (moving, reverse) {
                (Bound::Unbounded, false) => Seek::First,
                (Bound::Unbounded, true) => Seek::Last,
                (Bound::Excluded(()), true) => Seek::Below(from),
                _ => Seek::Holding(from),
            };
            let (leaf, hint, has_fence) = self.descend(seek, (side, Some(&mut fence)), &mut guard);
            let version = hint.version;
            let start = out.len();
            let n = leaf.count();
            // The leaf's entries in the range, found with one search per end (not a comparison
            // per entry: a full scan such as Query 2's copies whole leaves).
            let moved = moving.map(|()| from);
            let (low, high) = if reverse {
                (lower, moved)
            } else {
                (moved, upper)
            };
            let lo = bound_position(leaf, n, low, false, &mut guard);
            let hi = bound_position(leaf, n, high, true, &mut guard);
            let take = hi.saturating_sub(lo).min(max - out.len());
            // The range ends inside this leaf: no need to look past its fence.
            let ended = if reverse { lo > 0 } else { hi < n };
            let taken = if reverse {
                hi - take..hi
            } else {
                lo..lo + take
            };
            out.extend_from(leaf, taken, reverse, &mut guard);
            if !leaf.unchanged(version) || out.torn() {
                out.truncate(start);
                continue;
            }
            out.leaves.push(hint);
            if ended || out.len() >= max || !has_fence {
                return;
            }
            // Continue past the leaf's fence, unless it lies beyond the far bound.
            let f = fence.as_bytes();
            let beyond = if reverse {
                match lower {
                    Bound::Included(l) | Bound::Excluded(l) => f <= l.bytes,
                    Bound::Unbounded => false,
                }
            } else {
                match upper {
                    Bound::Included(u) => f > u.bytes,
                    Bound::Excluded(u) => f >= u.bytes,
                    Bound::Unbounded => false,
                }
            };
            if beyond {
                return;
            }
            resume.set(f);
            moving = if reverse {
                Bound::Excluded(())
            } else {
                Bound::Included(())
            };
        }
    }
}

/// Where a range bound falls among the first `n` keys of `leaf`: the first position inside the
/// range for a lower bound, one past the last for an upper one.
#[inline(always)]
fn bound_position(
    leaf: &Node,
    n: usize,
    bound: Bound<SearchKey<'_>>,
    upper: bool,
    guard: &mut LazyGuard,
) -> usize {
    // Each search with a constant `strict`, which the search's loop is compiled for.
    match (bound, upper) {
        (Bound::Unbounded, false) => 0,
        (Bound::Unbounded, true) => n,
        (Bound::Included(k), false) | (Bound::Excluded(k), true) => {
            leaf.search(n, &k, false, guard)
        }
        // An inclusive upper bound, like an exclusive lower one, takes in keys equal to it from
        // below: the position after them.
        (Bound::Included(k), true) | (Bound::Excluded(k), false) => leaf.search(n, &k, true, guard),
    }
}

/// `key` looked up in `node` as it is at a version no writer is changing: the value (if the key
/// is there) and that version. `None` if the node is not a leaf, or changed while it was read.
fn read_leaf(node: &Node, key: &SearchKey<'_>) -> Option<(Option<u64>, u64)> {
    let version = node.stable_version();
    if !node.is_leaf() {
        return None;
    }
    let found = find_in_leaf(node, key, &mut LazyGuard::default());
    node.unchanged(version).then_some((found, version))
}

/// The value under `key` in `leaf` as read now (the caller validates the leaf's version).
fn find_in_leaf(leaf: &Node, key: &SearchKey<'_>, guard: &mut LazyGuard) -> Option<u64> {
    let n = leaf.count();
    let pos = leaf.search(n, key, false, guard);
    (pos < n && leaf.compare(pos, key, guard).is_eq()).then(|| leaf.val(pos))
}

/// Copies separator `i` of `node` into `out`; false if it could not be read.
fn fence_at(node: &Node, i: usize, out: &mut KeyBuf, guard: &mut LazyGuard) -> bool {
    node.with_key(i, guard, |k| out.set(k)).unwrap_or(false)
}
