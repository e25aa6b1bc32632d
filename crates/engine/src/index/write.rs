//! Changing the tree: insert, replace, remove, with node splits and the unlinking of emptied
//! leaves.
//!
//! Writers of one tree are serialized by its writer latch, taken inside a non-preemptible region,
//! so the latch is never held by a paused context and a writer always sees a tree no one else is
//! changing. A writer locks (makes odd) every node it is about to change before changing any of
//! them, top-down, and unlocks them when all changes are made: a reader that read a node before the
//! change then fails to validate either that node or its parent, and restarts.
//!
//! A leaf emptied by a removal is unlinked from the lowest ancestor that keeps another child, so
//! a queue-like key range (inserted at one end, removed at the other, as TPC-C's NEW-ORDER table
//! is) never leaves a trail of empty leaves for scans to walk. Its nodes are recycled.

use std::sync::atomic::Ordering as Mem;

use overtake_runtime::NoPreemptGuard;
use sdd::Shared;

use super::node::{CAP, Entry, LazyGuard, Node};
use super::packed::{SearchKey, is_long};
use super::tree::{LeafHint, Tree, WriterState};

/// Deeper than any tree can grow: the tree only deepens when its root splits, which takes a full
/// root, so each level multiplies the inserts ever made by about `CAP / 2`.
const MAX_DEPTH: usize = 20;

/// Where an overfull node (`CAP + 1` keys) splits when nothing suggests better: the first half
/// stays, the rest moves to the new right sibling.
const MIDDLE: usize = CAP.div_ceil(2);

/// The inner nodes a writer descended through, and which child it took in each.
struct Path {
    steps: [(u64, usize); MAX_DEPTH],
    len: usize,
}

impl Path {
    fn new() -> Self {
        Path {
            steps: [(0, 0); MAX_DEPTH],
            len: 0,
        }
    }

    fn id(&self, depth: usize) -> u64 {
        self.steps[depth].0
    }
}

/// A node's keys and values as a writer rebuilds it, with room for one key (and value) more than
/// a node holds. On the stack: a split allocates nothing but its new node.
struct Contents {
    keys: [Entry; CAP + 1],
    nkeys: usize,
    vals: [u64; CAP + 2],
    nvals: usize,
}

impl Contents {
    fn empty() -> Self {
        Contents {
            keys: [const { Entry::EMPTY }; CAP + 1],
            nkeys: 0,
            vals: [0; CAP + 2],
            nvals: 0,
        }
    }

    /// Rewrites `node` (locked) with these contents, taking the keys.
    fn write_to(&mut self, node: &Node, leaf: bool) {
        node.fill(leaf, &mut self.keys[..self.nkeys], &self.vals[..self.nvals]);
    }

    fn insert_key(&mut self, pos: usize, entry: Entry) {
        self.keys[self.nkeys] = entry;
        self.nkeys += 1;
        self.keys[pos..self.nkeys].rotate_right(1);
    }

    fn insert_val(&mut self, pos: usize, val: u64) {
        self.vals[self.nvals] = val;
        self.nvals += 1;
        self.vals[pos..self.nvals].rotate_right(1);
    }

    fn remove_key(&mut self, pos: usize) -> Entry {
        self.keys[pos..self.nkeys].rotate_left(1);
        self.nkeys -= 1;
        std::mem::replace(&mut self.keys[self.nkeys], Entry::EMPTY)
    }

    fn remove_val(&mut self, pos: usize) {
        self.vals[pos..self.nvals].rotate_left(1);
        self.nvals -= 1;
    }

    /// Moves the keys from `key_at` and the values from `val_at` on into a new image.
    fn split_off(&mut self, key_at: usize, val_at: usize) -> Contents {
        let mut right = Contents::empty();
        for key in &mut self.keys[key_at..self.nkeys] {
            right.keys[right.nkeys] = std::mem::replace(key, Entry::EMPTY);
            right.nkeys += 1;
        }
        self.nkeys = key_at;
        right.nvals = self.nvals - val_at;
        right.vals[..right.nvals].copy_from_slice(&self.vals[val_at..self.nvals]);
        self.nvals = val_at;
        right
    }
}

impl Tree {
    fn node(&self, id: u64) -> &Node {
        match self.arena.get(id) {
            Some(node) => node,
            None => unreachable!("a writer only follows ids of allocated nodes"),
        }
    }

    /// Fills `path` with the path from the root to the leaf that holds `key` (or would), and
    /// returns the leaf's id.
    fn path_to(&self, key: &SearchKey<'_>, path: &mut Path, guard: &mut LazyGuard) -> u64 {
        path.len = 0;
        let mut id = self.root.load(Mem::Relaxed);
        loop {
            let node = self.node(id);
            if node.is_leaf() {
                return id;
            }
            let idx = node.search(node.count(), key, true, guard);
            path.steps[path.len] = (id, idx);
            path.len += 1;
            id = node.val(idx);
        }
    }

    /// The leaf that holds `key` (or would), the position where `key` is or would go, and
    /// whether it is there.
    fn locate(
        &self,
        key: &SearchKey<'_>,
        path: &mut Path,
        guard: &mut LazyGuard,
    ) -> (u64, usize, bool) {
        let leaf_id = self.path_to(key, path, guard);
        let (pos, found) = position_in(self.node(leaf_id), key, guard);
        (leaf_id, pos, found)
    }

    /// Inserts `key -> value` if `key` is absent; otherwise returns the value it has. With a
    /// `hint` whose leaf is unchanged and has room, the key goes there without a descent. Returns
    /// the hint's leaf at its new version if the key went into it (so that hints to the same leaf
    /// taken before this insert can follow it).
    pub(super) fn insert(
        &self,
        key: &[u8],
        value: u64,
        hint: Option<LeafHint>,
    ) -> Result<Option<LeafHint>, u64> {
        let region = NoPreemptGuard::new();
        let mut writer = self.writer.lock(&region);
        let key = SearchKey::new(key);
        let mut guard = LazyGuard::default();
        // Under the writer latch no version moves but by this writer.
        if let Some(hint) = hint
            && let Some(leaf) = self.arena.get(hint.leaf)
            && leaf.stable_version() == hint.version
            && leaf.is_leaf()
            && leaf.count() < CAP
        {
            let (pos, found) = position_in(leaf, &key, &mut guard);
            if found {
                return Err(leaf.val(pos));
            }
            insert_in_leaf(
                leaf,
                (leaf.count(), pos),
                new_entry(&key),
                value,
                &mut guard,
            );
            return Ok(Some(LeafHint {
                leaf: hint.leaf,
                version: hint.version + 2,
            }));
        }
        let mut path = Path::new();
        let (leaf_id, pos, found) = self.locate(&key, &mut path, &mut guard);
        let leaf = self.node(leaf_id);
        if found {
            return Err(leaf.val(pos));
        }
        let n = leaf.count();
        let entry = new_entry(&key);
        let guard = &mut guard;
        if n < CAP {
            insert_in_leaf(leaf, (n, pos), entry, value, guard);
            return Ok(None);
        }
        self.split_insert(&mut writer, &path, leaf_id, (pos, entry, value), guard);
        Ok(None)
    }

    /// Inserts into a full leaf: splits it, and each full ancestor in turn, growing a new root if
    /// the old one splits.
    fn split_insert(
        &self,
        writer: &mut WriterState,
        path: &Path,
        leaf_id: u64,
        (pos, entry, value): (usize, Entry, u64),
        guard: &mut LazyGuard,
    ) {
        // The ancestors that change: up to the lowest one with room for one more separator.
        let mut top = path.len;
        for depth in (0..path.len).rev() {
            top = depth;
            if self.node(path.id(depth)).count() < CAP {
                break;
            }
        }
        let mut locked: Vec<u64> = (top..path.len).map(|d| path.id(d)).collect();
        locked.push(leaf_id);
        for &id in &locked {
            self.node(id).lock();
        }
        let leaf = self.node(leaf_id);
        // Where the full leaf splits. Keys arriving in order split it at the new key, which ends
        // the left node: at the right end of the tree (most of TPC-C's keys) that leaves the
        // left node full; inside it (a district's new order lines before the next district's
        // old ones) the run goes on filling the left node while the keys after it rest in the
        // right one. Otherwise the leaf splits in the middle.
        let mid = if pos == CAP {
            CAP
        } else if leaf.last_insert().is_some_and(|last| last + 1 == pos) {
            pos + 1
        } else {
            MIDDLE
        };
        let mut contents = read(leaf, guard);
        contents.insert_key(pos, entry);
        contents.insert_val(pos, value);
        let mut carry = Some(self.split(writer, leaf, (true, mid), contents, &mut locked));
        for depth in (top..path.len).rev() {
            let Some((separator, right)) = carry.take() else {
                break;
            };
            let (parent_id, idx) = path.steps[depth];
            let parent = self.node(parent_id);
            let mut contents = read(parent, guard);
            contents.insert_key(idx, separator);
            contents.insert_val(idx + 1, right);
            if contents.nkeys <= CAP {
                contents.write_to(parent, false);
            } else {
                // Separators arriving at the right end leave the left node full, as in leaves.
                let mid = if idx == CAP { CAP } else { MIDDLE };
                carry = Some(self.split(writer, parent, (false, mid), contents, &mut locked));
            }
        }
        if let Some((separator, right)) = carry {
            let old_root = self.root.load(Mem::Relaxed);
            let root_id = self.allocate(writer);
            let root = self.node(root_id);
            root.lock();
            locked.push(root_id);
            root.fill(false, &mut [separator], &[old_root, right]);
            self.root.store(root_id, Mem::Release);
            self.height.fetch_add(1, Mem::Release);
        }
        for id in locked {
            self.node(id).unlock();
        }
    }

    /// Splits an overfull node's new `contents` between `node` (the keys before `mid`) and a new
    /// right sibling (locked, and added to `locked`). Returns the separator to enter in the
    /// parent and the sibling's id.
    fn split(
        &self,
        writer: &mut WriterState,
        node: &Node,
        (leaf, mid): (bool, usize),
        mut contents: Contents,
        locked: &mut Vec<u64>,
    ) -> (Entry, u64) {
        let right_id = self.allocate(writer);
        let right = self.node(right_id);
        right.lock();
        locked.push(right_id);
        let (separator, mut right_contents) = if leaf {
            // A leaf keeps all its keys; the right one's first key also bounds it in the parent.
            let right_contents = contents.split_off(mid, mid);
            let first = &right_contents.keys[0];
            let separator = Entry {
                packed: first.packed,
                long: first.long.clone(),
            };
            (separator, right_contents)
        } else {
            // An inner node's middle separator moves up.
            let mut right_contents = contents.split_off(mid, mid + 1);
            (right_contents.remove_key(0), right_contents)
        };
        contents.write_to(node, leaf);
        right_contents.write_to(right, leaf);
        (separator, right_id)
    }

    fn allocate(&self, writer: &mut WriterState) -> u64 {
        let id = writer.free.pop().unwrap_or_else(|| {
            writer.next_id += 1;
            writer.next_id - 1
        });
        self.arena.make(id);
        id
    }

    /// Points `key` at `new` if it maps to `expected`.
    pub(super) fn replace(&self, key: &[u8], expected: u64, new: u64) -> bool {
        let region = NoPreemptGuard::new();
        let _writer = self.writer.lock(&region);
        let mut guard = LazyGuard::default();
        let (leaf_id, pos, found) = self.locate(&SearchKey::new(key), &mut Path::new(), &mut guard);
        let leaf = self.node(leaf_id);
        match found {
            true if leaf.val(pos) == expected => {
                leaf.lock();
                leaf.set_val(pos, new);
                leaf.unlock();
                true
            }
            _ => false,
        }
    }

    /// Removes `key` if it maps to `value` and `remove` (asked with the writer latch held, so no
    /// other writer of this index changes anything meanwhile) agrees.
    pub(super) fn remove_if(&self, key: &[u8], value: u64, remove: impl FnOnce() -> bool) -> bool {
        let region = NoPreemptGuard::new();
        let mut writer = self.writer.lock(&region);
        let mut guard = LazyGuard::default();
        let mut path = Path::new();
        let (leaf_id, pos, found) = self.locate(&SearchKey::new(key), &mut path, &mut guard);
        let leaf = self.node(leaf_id);
        if !(found && leaf.val(pos) == value && remove()) {
            return false;
        }
        let guard = &mut guard;
        let n = leaf.count();
        // An emptied leaf is unlinked from the lowest ancestor that has another child (the
        // ancestors in between have no other child and go too). A leaf alone in its tree stays.
        let unlink_at = if n == 1 {
            (0..path.len)
                .rev()
                .find(|&d| self.node(path.id(d)).count() >= 1)
        } else {
            None
        };
        let Some(depth) = unlink_at else {
            leaf.lock();
            leaf.shift(pos + 1..n, false, guard);
            leaf.set_key(n - 1, Entry::EMPTY);
            leaf.set_meta(true, n - 1);
            leaf.unlock();
            return true;
        };
        let mut locked: Vec<u64> = (depth..path.len).map(|d| path.id(d)).collect();
        locked.push(leaf_id);
        for &id in &locked {
            self.node(id).lock();
        }
        let (ancestor_id, idx) = path.steps[depth];
        let ancestor = self.node(ancestor_id);
        let mut contents = read(ancestor, guard);
        contents.remove_val(idx);
        // Child `idx` spans [key idx-1, key idx): its range joins its left neighbour's, or, for
        // the first child, its right neighbour's.
        drop(contents.remove_key(idx.saturating_sub(1)));
        contents.write_to(ancestor, false);
        for &id in &locked[1..] {
            self.node(id).fill(true, &mut [], &[]);
        }
        for &id in &locked {
            self.node(id).unlock();
        }
        writer.free.extend_from_slice(&locked[1..]);
        true
    }
}

/// Where `key` is or would go in `leaf`, and whether it is there.
fn position_in(leaf: &Node, key: &SearchKey<'_>, guard: &mut LazyGuard) -> (usize, bool) {
    let n = leaf.count();
    let pos = leaf.search(n, key, false, guard);
    (pos, pos < n && leaf.compare(pos, key, guard).is_eq())
}

/// The entry a new key is stored as (a long key's bytes shared beside it).
fn new_entry(key: &SearchKey<'_>) -> Entry {
    Entry {
        packed: key.packed,
        long: is_long(key.packed).then(|| Shared::new(key.bytes.into())),
    }
}

/// Puts `entry -> value` at position `pos` of a leaf holding `n < CAP` keys.
#[inline]
fn insert_in_leaf(
    leaf: &Node,
    (n, pos): (usize, usize),
    entry: Entry,
    value: u64,
    guard: &mut LazyGuard,
) {
    leaf.lock();
    leaf.shift(pos..n, true, guard);
    leaf.set_key(pos, entry);
    leaf.set_val(pos, value);
    leaf.set_leaf_count_after_insert(n + 1, pos);
    leaf.unlock();
}

/// A node's keys and values (one more value than keys for an inner node).
fn read(node: &Node, guard: &mut LazyGuard) -> Contents {
    let n = node.count();
    let vals = if node.is_leaf() { n } else { n + 1 };
    let mut contents = Contents::empty();
    for (i, key) in contents.keys[..n].iter_mut().enumerate() {
        *key = node.entry(i, guard);
    }
    for (i, val) in contents.vals[..vals].iter_mut().enumerate() {
        *val = node.val(i);
    }
    contents.nkeys = n;
    contents.nvals = vals;
    contents
}

#[cfg(test)]
impl Tree {
    /// Nodes currently linked into the tree (for tests of recycling).
    pub(super) fn writer_state_nodes(&self) -> usize {
        let region = NoPreemptGuard::new();
        let writer = self.writer.lock(&region);
        writer.next_id as usize - writer.free.len()
    }
}
