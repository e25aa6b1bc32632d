//! Ordered indexes: a B-tree (`std::collections::BTreeMap`) from encoded keys to OIDs, behind a
//! reader-writer latch.
//!
//! Chosen by measurement (`benches/index_choice.rs` and `overtake bench tpcc`, figures in the
//! README):
//! - `scc::TreeIndex` (lock-free B+-tree) does not unlink emptied leaves promptly: a scan starting
//!   before a run of removed keys walks back over them, so on TPC-C's NEW-ORDER queue finding a
//!   district's oldest order grew from microseconds to milliseconds within seconds.
//! - `crossbeam_skiplist` unlinks removed keys and never blocks readers, but a lookup chases ~30
//!   scattered nodes: TPC-C ran at 22.6k transactions/s per worker.
//! - This latched B-tree touches 3-4 contiguous nodes per lookup: 31-33k/s on one worker, and still
//!   28-29k/s per worker on two workers sharing every table's latch.
//!
//! One latch per index is the known limit of this choice: it will not scale to many cores. The
//! interface below (point get, insert-if-absent, remove-if, batched scans) is what a lock-free
//! B-link tree would have to offer to replace it.
//!
//! Every call runs inside a non-preemptible region, so a paused context never holds the latch: a
//! latch is only ever held by running code, for the duration of one B-tree operation or one scan
//! batch. Scans are fetched in batches; the caller works on a batch (reading rows, running user
//! code) preemptibly, then asks for the next batch after the last key it saw.

use overtake_runtime::{NoPreemptGuard, RegionRwLock};
use std::collections::BTreeMap;
use std::collections::btree_map::Entry;
use std::ops::Bound;

use crate::key::{IndexKey, KeyBuf, as_slice_bound};
use crate::record::Oid;

/// A batch of index entries copied out of the index.
#[derive(Default)]
pub(crate) struct ScanBatch {
    oids: Vec<Oid>,
    keys: Vec<u8>,
    ends: Vec<usize>,
}

impl ScanBatch {
    pub(crate) fn clear(&mut self) {
        self.oids.clear();
        self.keys.clear();
        self.ends.clear();
    }

    fn push(&mut self, key: &[u8], oid: Oid) {
        self.keys.extend_from_slice(key);
        self.ends.push(self.keys.len());
        self.oids.push(oid);
    }

    pub(crate) fn len(&self) -> usize {
        self.oids.len()
    }

    pub(crate) fn oid(&self, i: usize) -> Oid {
        self.oids[i]
    }

    pub(crate) fn key(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.keys[start..self.ends[i]]
    }
}

/// An ordered map from encoded keys to OIDs.
pub(crate) struct OrderedIndex {
    /// A panic cannot leave a BTreeMap half-modified in a way that matters here (its operations
    /// are panic-safe), so a poisoned latch is taken over.
    map: RegionRwLock<BTreeMap<IndexKey, Oid>>,
}

impl OrderedIndex {
    pub(crate) fn new() -> Self {
        OrderedIndex {
            map: RegionRwLock::new(BTreeMap::new()),
        }
    }

    /// The OID stored under `key`.
    #[inline]
    pub(crate) fn get(&self, key: &[u8]) -> Option<Oid> {
        let region = NoPreemptGuard::new();
        let map = self.map.read(&region);
        // An inline search key compares with two integer comparisons per key, not a `memcmp` call.
        match IndexKey::inline(key) {
            Some(k) => map.get(&k).copied(),
            None => map.get(key).copied(),
        }
    }

    /// Inserts `key -> oid`. If the key is present (whatever it maps to, `oid` included), returns
    /// the OID it maps to and changes nothing, so callers only undo entries they really added.
    pub(crate) fn insert(&self, key: &[u8], oid: Oid) -> Result<(), Oid> {
        let entry = IndexKey::new(key);
        let region = NoPreemptGuard::new();
        match self.map.write(&region).entry(entry) {
            Entry::Occupied(e) => Err(*e.get()),
            Entry::Vacant(e) => {
                e.insert(oid);
                Ok(())
            }
        }
    }

    /// Points `key` at `new` if it still maps to `expected` (taking over a stale entry).
    pub(crate) fn replace(&self, key: &[u8], expected: Oid, new: Oid) -> bool {
        let region = NoPreemptGuard::new();
        let mut map = self.map.write(&region);
        match map.get_mut(key) {
            Some(oid) if *oid == expected => {
                *oid = new;
                true
            }
            _ => false,
        }
    }

    /// Removes `key` if it still maps to `oid`.
    pub(crate) fn remove(&self, key: &[u8], oid: Oid) -> bool {
        let region = NoPreemptGuard::new();
        let mut map = self.map.write(&region);
        if map.get(key) == Some(&oid) {
            map.remove(key);
            true
        } else {
            false
        }
    }

    /// Copies up to `max` entries of the range into `out`, in key order (or reverse order).
    pub(crate) fn fetch_batch(
        &self,
        bounds: (Bound<&[u8]>, Bound<&[u8]>),
        reverse: bool,
        max: usize,
        out: &mut ScanBatch,
    ) {
        out.clear();
        let mut keep = |(k, v): (&IndexKey, &Oid)| out.push(k.as_slice(), *v);
        let inline = inline_bounds(bounds);
        let region = NoPreemptGuard::new();
        let map = self.map.read(&region);
        match &inline {
            Some((lower, upper)) => {
                let range = map.range::<IndexKey, _>((lower.as_ref(), upper.as_ref()));
                if reverse {
                    range.rev().take(max).for_each(&mut keep);
                } else {
                    range.take(max).for_each(&mut keep);
                }
            }
            None => {
                let range = map.range::<[u8], _>(bounds);
                if reverse {
                    range.rev().take(max).for_each(&mut keep);
                } else {
                    range.take(max).for_each(&mut keep);
                }
            }
        }
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

/// Both bounds as inline keys, if they are short enough (then the search compares integers).
fn inline_bounds(
    (lower, upper): (Bound<&[u8]>, Bound<&[u8]>),
) -> Option<(Bound<IndexKey>, Bound<IndexKey>)> {
    let convert = |b: Bound<&[u8]>| -> Option<Bound<IndexKey>> {
        Some(match b {
            Bound::Included(k) => Bound::Included(IndexKey::inline(k)?),
            Bound::Excluded(k) => Bound::Excluded(IndexKey::inline(k)?),
            Bound::Unbounded => Bound::Unbounded,
        })
    };
    Some((convert(lower)?, convert(upper)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn oids(index: &OrderedIndex, lo: Bound<&[u8]>, hi: Bound<&[u8]>, reverse: bool) -> Vec<u64> {
        let mut batch = ScanBatch::default();
        index.fetch_batch((lo, hi), reverse, 100, &mut batch);
        (0..batch.len()).map(|i| batch.oid(i)).collect()
    }

    #[test]
    fn insert_get_remove_and_scan_both_ways() {
        let index = OrderedIndex::new();
        for i in 0..50u64 {
            index.insert(&i.to_be_bytes(), i).expect("fresh");
        }
        assert_eq!(index.insert(&7u64.to_be_bytes(), 99), Err(7));
        assert_eq!(
            index.insert(&7u64.to_be_bytes(), 7),
            Err(7),
            "an existing entry is reported even when it maps to the same oid"
        );
        assert_eq!(index.get(&7u64.to_be_bytes()), Some(7));
        assert!(
            !index.replace(&7u64.to_be_bytes(), 8, 70),
            "only from the expected oid"
        );
        assert!(index.replace(&7u64.to_be_bytes(), 7, 70));
        assert_eq!(index.get(&7u64.to_be_bytes()), Some(70));
        assert!(index.replace(&7u64.to_be_bytes(), 70, 7));
        assert!(
            !index.remove(&7u64.to_be_bytes(), 8),
            "only if it maps to that oid"
        );
        assert!(index.remove(&7u64.to_be_bytes(), 7));
        assert_eq!(index.get(&7u64.to_be_bytes()), None);
        let lo = 5u64.to_be_bytes();
        let hi = 10u64.to_be_bytes();
        assert_eq!(
            oids(&index, Bound::Included(&lo), Bound::Excluded(&hi), false),
            vec![5, 6, 8, 9]
        );
        assert_eq!(
            oids(&index, Bound::Excluded(&lo), Bound::Included(&hi), true),
            vec![10, 9, 8, 6]
        );
    }

    #[test]
    fn long_keys_take_the_byte_path_and_agree() {
        let index = OrderedIndex::new();
        let key = |i: u8| [vec![7u8; 30], vec![i]].concat();
        for i in 0..10 {
            index.insert(&key(i), u64::from(i)).expect("fresh");
        }
        assert_eq!(index.get(&key(3)), Some(3));
        let (lo, hi) = (key(2), key(5));
        assert_eq!(
            oids(&index, Bound::Included(&lo), Bound::Included(&hi), true),
            vec![5, 4, 3, 2]
        );
    }
}
