//! A cache from primary keys to the records that hold them, beside a table's primary index: a point
//! lookup that hits it reads one cache line instead of descending the tree.
//!
//! An entry is only ever a hint. It names an OID, and a reader accepts it only after the row it
//! reads through that OID turns out to carry the key it looked for. That check holds whatever
//! happened to the record since the entry was written (updated, deleted, collected, its OID
//! recycled for another key), because a record whose row carries a key is the one the primary
//! index maps that key to: keys are unique among records, and an index entry goes only once its
//! record is dead to every snapshot. Anything else falls back to the index, whose answer refills
//! the entry. So entries are written with plain atomic stores under no latch, lost to collisions
//! and growth without harm, and never removed.
//!
//! Layout: two-way buckets of two `u64`s (OID + 1, with the top 18 bits of the key's hash as a tag
//! in the top bits). A key's bucket is taken from the hash's bits 38 and up, so the tag holds every
//! bucket bit beyond the smallest array's: when the table outgrows its buckets, an array four
//! times larger replaces them with every entry moved to its bucket there (the old array is freed
//! by epoch reclamation, as versions are). Only reads fill the cache (point reads and prefetches;
//! writes by key use it without filling it): a table whose keys are never read one by one (order
//! lines) keeps the smallest array.
//!
//! Must never be trusted without the caller's check that the row carries the key. A lookup never
//! blocks or allocates; a fill that grows the array allocates it inside a non-preemptible region.

use std::hash::Hasher;
use std::sync::atomic::{AtomicU64, Ordering};

use overtake_runtime::NoPreemptGuard;
use overtake_runtime::prefetch::prefetch_read;
use rustc_hash::FxHasher;
use sdd::{AtomicShared, Guard, Shared, Tag};

use crate::storage::record::Oid;

/// Buckets at first (4 KiB).
const MIN_BUCKETS: usize = 1 << 8;
/// Buckets at most (64 MiB, for about 4 million records); a larger table keeps this many.
const MAX_BUCKETS: usize = 1 << 22;
/// Bits of an entry that hold the OID (plus one); the tag takes the rest.
const OID_BITS: u32 = 46;
/// Where the bucket bits start in a key's hash: bucket bits from `log2(MIN_BUCKETS)` on are the
/// tag's.
const BUCKET_SHIFT: u32 = OID_BITS - MIN_BUCKETS.trailing_zeros();
const OID_MASK: u64 = (1 << OID_BITS) - 1;

/// One array of buckets.
pub(crate) struct Buckets {
    /// Two entries per bucket; zero is empty.
    entries: Box<[AtomicU64]>,
    mask: usize,
}

/// Where a key's entry may be: its bucket and its tag.
#[derive(Clone, Copy)]
pub(crate) struct Probe {
    bucket: usize,
    tag: u64,
}

/// A table's point cache (see the module comment).
pub(crate) struct PointCache {
    buckets: AtomicShared<Buckets>,
    /// Entries written into the current buckets while they could still grow (a fill is an index
    /// lookup the cache missed).
    fills: AtomicU64,
}

impl Buckets {
    fn new(buckets: usize) -> Self {
        Buckets {
            entries: std::iter::repeat_with(|| AtomicU64::new(0))
                .take(2 * buckets)
                .collect(),
            mask: buckets - 1,
        }
    }

    /// Where `key`'s entry may be.
    #[inline]
    pub(crate) fn probe(&self, key: &[u8]) -> Probe {
        let mut h = FxHasher::default();
        h.write(key);
        let hash = h.finish();
        // FxHash's low bits mix least: bucket and tag come from the high ones.
        Probe {
            bucket: (hash >> BUCKET_SHIFT) as usize & self.mask,
            tag: hash & !OID_MASK,
        }
    }

    fn ways(&self, probe: Probe) -> &[AtomicU64] {
        &self.entries[2 * probe.bucket..2 * probe.bucket + 2]
    }

    /// Starts loading the bucket of `probe` (a hint).
    #[inline]
    pub(crate) fn prefetch(&self, probe: Probe) {
        prefetch_read(self.ways(probe).as_ptr().cast::<u8>(), 16);
    }

    /// The OID the bucket of `probe` names for its key, if any: to be checked by the caller.
    #[inline]
    pub(crate) fn get(&self, probe: Probe) -> Option<Oid> {
        self.ways(probe).iter().find_map(|way| {
            let e = way.load(Ordering::Relaxed);
            (e != 0 && e & !OID_MASK == probe.tag).then(|| (e & OID_MASK) - 1)
        })
    }

    fn put(&self, key: &[u8], oid: Oid) {
        if oid >= OID_MASK {
            return;
        }
        let probe = self.probe(key);
        self.put_entry(probe, probe.tag | (oid + 1));
    }

    fn put_entry(&self, probe: Probe, entry: u64) {
        let [first, second] = self.ways(probe) else {
            unreachable!("two ways per bucket")
        };
        // The way that holds this key's tag already (or an empty one) is overwritten first; a
        // full bucket loses its second way, so a key found often stays in the first.
        let current = first.load(Ordering::Relaxed);
        if current == 0 || current & !OID_MASK == probe.tag {
            first.store(entry, Ordering::Relaxed);
        } else {
            second.store(entry, Ordering::Relaxed);
        }
    }

    /// Four times as many buckets, holding these ones' entries.
    fn grown(&self) -> Buckets {
        let grown = Buckets::new(4 * (self.mask + 1));
        for (i, way) in self.entries.iter().enumerate() {
            let entry = way.load(Ordering::Relaxed);
            if entry != 0 {
                // The bucket's low bits, and the rest from the tag.
                let tag = entry & !OID_MASK;
                let full = (i / 2) & (MIN_BUCKETS - 1) | (tag >> BUCKET_SHIFT) as usize;
                let probe = Probe {
                    bucket: full & grown.mask,
                    tag,
                };
                grown.put_entry(probe, entry);
            }
        }
        grown
    }
}

impl PointCache {
    pub(crate) fn new() -> Self {
        PointCache {
            buckets: AtomicShared::new(Buckets::new(MIN_BUCKETS)),
            fills: AtomicU64::new(0),
        }
    }

    /// The buckets in use.
    #[inline]
    pub(crate) fn buckets<'g>(&self, guard: &'g Guard) -> Option<&'g Buckets> {
        self.buckets.load(Ordering::Acquire, guard).as_ref()
    }

    /// Remembers that `key` maps to `oid`. Once as many entries have been written as there are
    /// buckets while the table has more records (`records`: the OIDs it has allocated) than
    /// buckets, they are replaced by four times as many: a table whose keys are looked up a few
    /// times each keeps a small cache, one looked up all over gets about a bucket per record.
    pub(crate) fn put(&self, key: &[u8], oid: Oid, records: u64, guard: &Guard) {
        let current = self.buckets.load(Ordering::Acquire, guard);
        let Some(buckets) = current.as_ref() else {
            return;
        };
        let size = buckets.mask + 1;
        // Fills are counted only while the buckets may still grow: at their final size a miss
        // writes nothing shared but its entry.
        let may_grow = records > size as u64 && size < MAX_BUCKETS;
        if may_grow && self.fills.fetch_add(1, Ordering::Relaxed) + 1 >= size as u64 {
            // Replacing the buckets retires the old ones into this thread's `sdd` state, which a
            // preemption must not interrupt.
            let _region = NoPreemptGuard::new();
            let grown = Shared::new(buckets.grown());
            // Another writer may have grown them first: then its buckets are the ones used.
            if self
                .buckets
                .compare_exchange(
                    current,
                    (Some(grown), Tag::None),
                    Ordering::AcqRel,
                    Ordering::Acquire,
                    guard,
                )
                .is_ok()
            {
                self.fills.store(0, Ordering::Relaxed);
            }
            if let Some(now) = self.buckets(guard) {
                now.put(key, oid);
            }
            return;
        }
        buckets.put(key, oid);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_what_was_put_and_names_nothing_for_other_keys() {
        let cache = PointCache::new();
        let guard = Guard::new();
        for k in 0u64..200 {
            cache.put(&k.to_be_bytes(), k * 7, 200, &guard);
        }
        let buckets = cache.buckets(&guard).expect("buckets");
        // A key is lost when a third lands in its bucket, and two keys sharing a bucket and a tag
        // name each other's OID (what the caller's check is for): at 200 keys in 256 buckets
        // about 5% are expected to miss.
        let found = (0u64..200)
            .filter(|k| buckets.get(buckets.probe(&k.to_be_bytes())) == Some(k * 7))
            .count();
        assert!(found >= 180, "{found} of 200 keys found");
        assert_eq!(buckets.get(buckets.probe(b"never put")), None);
    }

    #[test]
    fn grows_once_filled_if_the_table_is_larger() {
        let cache = PointCache::new();
        let guard = Guard::new();
        let size = |cache: &PointCache| cache.buckets(&guard).expect("buckets").mask + 1;
        // A table no larger than the buckets never grows them, however often it is filled.
        for k in 0..4 * MIN_BUCKETS as u64 {
            cache.put(&k.to_be_bytes(), k, MIN_BUCKETS as u64, &guard);
        }
        assert_eq!(size(&cache), MIN_BUCKETS);
        let small = cache.buckets(&guard).expect("buckets");
        // A larger one grows them after as many fills as there are buckets.
        let filled = cache.fills.load(Ordering::Relaxed);
        for k in filled..MIN_BUCKETS as u64 - 1 {
            cache.put(&k.to_be_bytes(), k, 1000, &guard);
        }
        assert_eq!(size(&cache), MIN_BUCKETS, "not yet");
        cache.put(b"k", 5, 1000, &guard);
        assert_eq!(size(&cache), 4 * MIN_BUCKETS);
        // Growing moves the entries: each key's is found at its bucket in the larger array.
        let grown = cache.buckets(&guard).expect("buckets");
        assert_eq!(grown.get(grown.probe(b"k")), Some(5));
        for k in 0..MIN_BUCKETS as u64 - 1 {
            let probe = small.probe(&k.to_be_bytes());
            if let Some(oid) = small.get(probe) {
                assert_eq!(
                    grown.get(grown.probe(&k.to_be_bytes())),
                    Some(oid),
                    "key {k}"
                );
            }
        }
    }

    /// Every access path that consults the cache (point reads, writes, prefetches) gives the
    /// index's answer when every entry names the wrong record: another key's, one deleted and
    /// collected, one whose OID went to a new key, or none at all.
    #[test]
    fn entries_naming_the_wrong_record_change_no_answer() {
        use crate::catalog::table::IndexRef;
        use crate::storage::schema::{ColumnType, TableSchema};
        use crate::{Database, Isolation, KeyBuf, Options, Priority, Table};

        const N: i64 = 40;
        let db = Database::in_memory(Options::default());
        let t = db
            .create_table(
                TableSchema::builder("t")
                    .column("id", ColumnType::Int64)
                    .column("v", ColumnType::Int64)
                    .primary_key(&["id"])
                    .build()
                    .expect("schema"),
            )
            .expect("create");
        let key = |k: i64| t.key().int(k).finish().expect("key");
        let begin = || {
            db.begin(Priority::LOW, Isolation::Serializable)
                .expect("begin")
        };
        let mut txn = begin();
        for k in 0..N {
            let row = t
                .row_builder()
                .int(0, k)
                .int(1, 10 * k)
                .finish()
                .expect("row");
            txn.insert(&t, row).expect("insert");
        }
        txn.commit().expect("commit");
        let oid_of = |t: &Table, k: &KeyBuf| t.tree(IndexRef::Primary).get(k.as_bytes());
        // Reads through the index tell the cache where the keys are (all but a collision or two).
        let mut txn = begin();
        for k in 0..N {
            assert_eq!(
                txn.get(&t, &key(k), |r| r.int(1)).expect("get"),
                Some(10 * k)
            );
        }
        txn.commit().expect("commit");
        let guard = Guard::new();
        let cached = (0..N)
            .filter(|&k| t.cached_record(key(k).as_bytes(), &guard) == oid_of(&t, &key(k)))
            .count();
        assert!(cached as i64 >= N - 2, "{cached} of {N} keys cached");
        drop(guard);
        // Key 3's record dies and is collected; key 100 is inserted, possibly into its OID.
        let dead = oid_of(&t, &key(3)).expect("key 3");
        let mut txn = begin();
        assert!(txn.delete(&t, &key(3)).expect("delete"));
        txn.commit().expect("commit");
        db.collect_garbage();
        let mut txn = begin();
        let row = t
            .row_builder()
            .int(0, 100)
            .int(1, 1000)
            .finish()
            .expect("row");
        txn.insert(&t, row).expect("insert");
        txn.commit().expect("commit");
        // Every key's entry names the next key's record; key 3's the dead one, absent keys too.
        let plant = || {
            let guard = Guard::new();
            for k in 0..N {
                if let Some(next) = oid_of(&t, &key((k + 1) % N)) {
                    t.remember_record(key(k).as_bytes(), next, &guard);
                }
            }
            t.remember_record(key(3).as_bytes(), dead, &guard);
            t.remember_record(key(77).as_bytes(), dead, &guard);
            let any = oid_of(&t, &key(0)).expect("key 0");
            t.remember_record(key(100).as_bytes(), any, &guard);
        };
        let expected = |k: i64, bump: i64| match k {
            3 | 77 => None,
            100 => Some(1000 + bump),
            k => Some(10 * k + bump),
        };
        let keys: Vec<i64> = (0..N).chain([77, 100]).collect();
        plant();
        let mut txn = begin();
        for &k in &keys {
            let v = txn.get(&t, &key(k), |r| r.int(1)).expect("get");
            assert_eq!(v, expected(k, 0), "read of key {k}");
        }
        txn.commit().expect("commit");
        plant();
        let mut txn = begin();
        for &k in &keys {
            let found = txn.update(&t, &key(k), |r| {
                let v = r.as_ref().int(1);
                r.int(1, v + 1);
            });
            assert_eq!(
                found.expect("update"),
                expected(k, 0).is_some(),
                "update of key {k}"
            );
        }
        txn.commit().expect("commit");
        plant();
        let mut txn = begin();
        let all: Vec<KeyBuf> = keys.iter().map(|&k| key(k)).collect();
        let rows: Vec<(&Table, &KeyBuf)> = all.iter().map(|k| (&*t, k)).collect();
        txn.prefetch_rows(&rows);
        for &k in &keys {
            let v = txn.get(&t, &key(k), |r| r.int(1)).expect("get");
            assert_eq!(v, expected(k, 1), "read of key {k} after a prefetch");
        }
        txn.commit().expect("commit");
    }
}
