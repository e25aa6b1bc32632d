//! Ordered indexes: a concurrent B+-tree (`scc::TreeIndex`) from encoded keys to OIDs.
//!
//! Chosen by measurement (see `benches/index_choice.rs` and the README): among the well-kept
//! ordered concurrent maps it had the fastest point reads and range scans, lock-free reads, and it
//! iterates in both directions. Every call here runs inside a non-preemptible region: the tree keeps
//! per-thread epoch state and takes node locks on splits, and a context paused inside it could
//! deadlock its worker.
//!
//! Scans are fetched in batches: each batch is one short region, and the caller works on the batch
//! (reading rows, running user code) preemptibly, then asks for the next batch after the last key it
//! saw.

use std::ops::Bound;

use overtake_runtime::NoPreemptGuard;
use scc::TreeIndex;
use sdd::Guard;

use crate::key::IndexKey;
use crate::record::Oid;

/// A batch of index entries copied out of the tree.
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
    tree: TreeIndex<IndexKey, Oid>,
}

impl OrderedIndex {
    pub(crate) fn new() -> Self {
        OrderedIndex {
            tree: TreeIndex::new(),
        }
    }

    /// The OID stored under `key`.
    #[inline]
    pub(crate) fn get(&self, key: &[u8], guard: &Guard) -> Option<Oid> {
        let _region = NoPreemptGuard::new();
        self.tree.peek(key, guard).copied()
    }

    /// Inserts `key -> oid`; if the key is present, returns the OID it maps to.
    pub(crate) fn insert(&self, key: &[u8], oid: Oid, guard: &Guard) -> Result<(), Oid> {
        let _region = NoPreemptGuard::new();
        let mut entry = IndexKey::new(key);
        loop {
            match self.tree.insert_sync(entry, oid) {
                Ok(()) => return Ok(()),
                Err((back, _)) => {
                    if let Some(existing) = self.tree.peek(key, guard) {
                        return Err(*existing);
                    }
                    // Removed between the failed insert and the lookup: try again.
                    entry = back;
                }
            }
        }
    }

    /// Removes `key` if it still maps to `oid`.
    pub(crate) fn remove(&self, key: &[u8], oid: Oid) -> bool {
        let _region = NoPreemptGuard::new();
        self.tree.remove_if_sync(key, |v| *v == oid)
    }

    /// Copies up to `max` entries of the range into `out`, in key order (or reverse order).
    pub(crate) fn fetch_batch(
        &self,
        bounds: (Bound<&[u8]>, Bound<&[u8]>),
        reverse: bool,
        max: usize,
        guard: &Guard,
        out: &mut ScanBatch,
    ) {
        let _region = NoPreemptGuard::new();
        out.clear();
        let range = self.tree.range::<[u8], _>(bounds, guard);
        if reverse {
            for (k, v) in range.rev().take(max) {
                out.push(k.as_slice(), *v);
            }
        } else {
            for (k, v) in range.take(max) {
                out.push(k.as_slice(), *v);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(index: &OrderedIndex, lo: Bound<&[u8]>, hi: Bound<&[u8]>, reverse: bool) -> Vec<u64> {
        let guard = Guard::new();
        let mut batch = ScanBatch::default();
        index.fetch_batch((lo, hi), reverse, 100, &guard, &mut batch);
        (0..batch.len()).map(|i| batch.oid(i)).collect()
    }

    #[test]
    fn insert_get_remove_and_scan_both_ways() {
        let index = OrderedIndex::new();
        let guard = Guard::new();
        for i in 0..50u64 {
            index.insert(&i.to_be_bytes(), i, &guard).expect("fresh");
        }
        assert_eq!(index.insert(&7u64.to_be_bytes(), 99, &guard), Err(7));
        assert_eq!(index.get(&7u64.to_be_bytes(), &guard), Some(7));
        assert!(
            !index.remove(&7u64.to_be_bytes(), 8),
            "only if it maps to that oid"
        );
        assert!(index.remove(&7u64.to_be_bytes(), 7));
        assert_eq!(index.get(&7u64.to_be_bytes(), &guard), None);
        let lo = 5u64.to_be_bytes();
        let hi = 10u64.to_be_bytes();
        assert_eq!(
            keys(&index, Bound::Included(&lo), Bound::Excluded(&hi), false),
            vec![5, 6, 8, 9]
        );
        assert_eq!(
            keys(&index, Bound::Excluded(&lo), Bound::Included(&hi), true),
            vec![10, 9, 8, 6]
        );
        assert_eq!(index.tree.len(), 49);
    }
}
