//! Ordered indexes: a concurrent skip list (`crossbeam_skiplist::base::SkipList`) from encoded keys
//! to OIDs.
//!
//! Chosen by measurement (`benches/index_choice.rs`, figures in the README). `scc::TreeIndex` was
//! faster on point reads, but it does not unlink emptied leaves promptly: a scan that starts before
//! a run of removed keys walks back over them, so on TPC-C's NEW-ORDER queue (insert at the tail,
//! delete the oldest) finding a district's oldest order grew from microseconds to milliseconds within
//! seconds. A locked `BTreeMap` serialises every thread on one lock. The skip list unlinks removed
//! entries physically, never blocks readers, and iterates both ways.
//!
//! Every call here runs inside a non-preemptible region: the skip list keeps per-thread epoch state,
//! and a context paused inside it could stall reclamation or corrupt that state. Scans are fetched in
//! batches: each batch is one short region, and the caller works on the batch (reading rows, running
//! user code) preemptibly, then asks for the next batch after the last key it saw.

use std::ops::{Bound, RangeBounds};

use crossbeam_epoch::Guard;
use crossbeam_skiplist::base::SkipList;
use overtake_runtime::NoPreemptGuard;

use crate::key::IndexKey;
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
    list: SkipList<IndexKey, Oid>,
}

impl OrderedIndex {
    pub(crate) fn new() -> Self {
        OrderedIndex {
            list: SkipList::new(crossbeam_epoch::default_collector().clone()),
        }
    }

    /// The OID stored under `key`.
    #[inline]
    pub(crate) fn get(&self, key: &[u8], guard: &Guard) -> Option<Oid> {
        let _region = NoPreemptGuard::new();
        // Searching with an inline key compares with two integer comparisons per node instead of a
        // `memcmp` call.
        match IndexKey::inline(key) {
            Some(k) => self.list.get(&k, guard).map(|e| *e.value()),
            None => self.list.get(key, guard).map(|e| *e.value()),
        }
    }

    /// Inserts `key -> oid` for a record nobody else can know yet (a fresh OID): one search. If the
    /// key is present, returns the OID it maps to and changes nothing.
    pub(crate) fn insert_new(&self, key: &[u8], oid: Oid, guard: &Guard) -> Result<(), Oid> {
        let _region = NoPreemptGuard::new();
        let entry = self.list.get_or_insert(IndexKey::new(key), oid, guard);
        let present = *entry.value();
        entry.release(guard);
        if present == oid { Ok(()) } else { Err(present) }
    }

    /// Inserts `key -> oid`; if the key is present (whatever it maps to, `oid` included), returns
    /// the OID it maps to and changes nothing, so callers only undo entries they really added.
    pub(crate) fn insert(&self, key: &[u8], oid: Oid, guard: &Guard) -> Result<(), Oid> {
        let _region = NoPreemptGuard::new();
        if let Some(existing) = self.get(key, guard) {
            return Err(existing);
        }
        // Another transaction may insert the same key in between: then its entry is returned.
        self.insert_new(key, oid, guard)
    }

    /// Removes `key` if it still maps to `oid`.
    pub(crate) fn remove(&self, key: &[u8], oid: Oid, guard: &Guard) -> bool {
        let _region = NoPreemptGuard::new();
        let remove = |e: crossbeam_skiplist::base::Entry<'_, '_, IndexKey, Oid>| {
            *e.value() == oid && e.remove()
        };
        match IndexKey::inline(key) {
            Some(k) => self.list.get(&k, guard).is_some_and(remove),
            None => self.list.get(key, guard).is_some_and(remove),
        }
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
        // The near bound is only enforced by the initial seek of a concurrent structure; check every
        // key against both bounds so a concurrent change can never leak a key from outside.
        let mut keep = |k: &IndexKey, v: Oid| {
            if bounds.contains(k.as_slice()) {
                out.push(k.as_slice(), v);
            }
        };
        match inline_bounds(bounds) {
            Some(inline) => {
                let range = self
                    .list
                    .range::<IndexKey, _>(as_ref_bounds(&inline), guard);
                if reverse {
                    range
                        .rev()
                        .take(max)
                        .for_each(|e| keep(e.key(), *e.value()));
                } else {
                    range.take(max).for_each(|e| keep(e.key(), *e.value()));
                }
            }
            None => {
                let range = self.list.range::<[u8], _>(bounds, guard);
                if reverse {
                    range
                        .rev()
                        .take(max)
                        .for_each(|e| keep(e.key(), *e.value()));
                } else {
                    range.take(max).for_each(|e| keep(e.key(), *e.value()));
                }
            }
        }
    }
}

type InlineBounds = (Bound<IndexKey>, Bound<IndexKey>);

/// Both bounds as inline keys, if they are short enough (then the search compares integers).
fn inline_bounds((lower, upper): (Bound<&[u8]>, Bound<&[u8]>)) -> Option<InlineBounds> {
    let convert = |b: Bound<&[u8]>| -> Option<Bound<IndexKey>> {
        Some(match b {
            Bound::Included(k) => Bound::Included(IndexKey::inline(k)?),
            Bound::Excluded(k) => Bound::Excluded(IndexKey::inline(k)?),
            Bound::Unbounded => Bound::Unbounded,
        })
    };
    Some((convert(lower)?, convert(upper)?))
}

fn as_ref_bounds((lower, upper): &InlineBounds) -> (Bound<&IndexKey>, Bound<&IndexKey>) {
    (lower.as_ref(), upper.as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn oids(index: &OrderedIndex, lo: Bound<&[u8]>, hi: Bound<&[u8]>, reverse: bool) -> Vec<u64> {
        let guard = crossbeam_epoch::pin();
        let mut batch = ScanBatch::default();
        index.fetch_batch((lo, hi), reverse, 100, &guard, &mut batch);
        (0..batch.len()).map(|i| batch.oid(i)).collect()
    }

    #[test]
    fn insert_get_remove_and_scan_both_ways() {
        let index = OrderedIndex::new();
        let guard = crossbeam_epoch::pin();
        for i in 0..50u64 {
            index.insert(&i.to_be_bytes(), i, &guard).expect("fresh");
        }
        assert_eq!(index.insert(&7u64.to_be_bytes(), 99, &guard), Err(7));
        assert_eq!(
            index.insert(&7u64.to_be_bytes(), 7, &guard),
            Err(7),
            "an existing entry is reported even when it maps to the same oid"
        );
        assert_eq!(index.get(&7u64.to_be_bytes(), &guard), Some(7));
        assert!(
            !index.remove(&7u64.to_be_bytes(), 8, &guard),
            "only if it maps to that oid"
        );
        assert!(index.remove(&7u64.to_be_bytes(), 7, &guard));
        assert_eq!(index.get(&7u64.to_be_bytes(), &guard), None);
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
}
