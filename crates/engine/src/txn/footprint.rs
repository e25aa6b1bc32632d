//! A transaction's footprint: what it wrote (its write set), what it installed at commit, the
//! index entries it added or made stale, and what it read and scanned (validated at commit under
//! serializable isolation).
//!
//! A footprint is private to its transaction and touches no shared state. Each transaction slot
//! keeps one in the pool, handed from each transaction of the slot to the next, so a steady stream
//! of transactions allocates none of this bookkeeping.

use std::ops::Bound;

use overtake_runtime::{CachePadded, NoPreemptGuard, RegionMutex};

use crate::catalog::table::{IndexRef, TableId};
use crate::index::{LeafHint, ScanBatch};
use crate::storage::key::{IndexKey, KeyBuf};
use crate::storage::record::{Oid, OidBlock};
use crate::txn::prefetched::PrefetchedRows;
use crate::txn::writeset::WriteSet;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WriteKind {
    /// A new record (new OID): rolling back kills the record.
    FreshInsert,
    /// A new version over an existing record (update, or insert over a deleted row).
    Overwrite,
    /// A deletion marker.
    Delete,
}

/// A record whose versions the commit installed.
pub(crate) struct Write {
    pub(crate) table: TableId,
    pub(crate) oid: Oid,
    pub(crate) kind: WriteKind,
}

/// An index entry this transaction added or reused (an older version of the record carries the
/// same key): rollback removes it if no version needs it.
pub(crate) struct NewKey {
    pub(crate) table: TableId,
    pub(crate) index: IndexRef,
    pub(crate) key: IndexKey,
    pub(crate) oid: Oid,
}

/// A secondary-index entry this transaction's update made stale (retired at commit).
pub(crate) struct StaleKey {
    pub(crate) table: TableId,
    pub(crate) index: usize,
    pub(crate) key: IndexKey,
    pub(crate) oid: Oid,
}

/// A scanned range, re-checked at commit under serializable isolation. Its bounds' bytes live in
/// the transaction's key arena, so recording a range never allocates.
pub(crate) struct ScannedRange {
    pub(crate) table: TableId,
    pub(crate) index: IndexRef,
    pub(crate) lower: Bound<(u32, u32)>,
    pub(crate) upper: Bound<(u32, u32)>,
    /// What the scan saw of the range, if it recorded it.
    pub(crate) seen: Option<SeenEntries>,
}

/// What a scan saw of its range: the index leaves it read (positions in the footprint's
/// `scan_leaves`) and the records of the range's entries in them (in `scan_oids`). While every
/// one of those leaves is at the version it was read at, the range has exactly those entries
/// still: validating their records is validating the range, without walking the index again.
#[derive(Clone, Copy)]
pub(crate) struct SeenEntries {
    pub(crate) leaves: (u32, u32),
    pub(crate) oids: (u32, u32),
}

/// The leaf where a transaction's last insert into a table looked its key up (see
/// `Transaction::find_for_insert`).
pub(crate) struct InsertLeaf {
    pub(crate) table: TableId,
    pub(crate) hint: LeafHint,
    /// The largest key looked up in the leaf so far, and the leaf's upper fence (`None`: the
    /// last leaf). Every key strictly between them belongs in this leaf while it is unchanged.
    pub(crate) last: KeyBuf,
    pub(crate) fence: Option<KeyBuf>,
}

/// Everything one transaction accumulates until it ends.
#[derive(Default)]
pub(crate) struct Footprint {
    /// Buffered writes, installed at commit.
    pub(crate) ws: WriteSet,
    /// The commit's log record, built here (the transaction's own buffer, kept with its slot).
    pub(crate) log_record: Vec<u8>,
    /// Records whose versions the commit installed (what rollback undoes, what commit stamps).
    pub(crate) writes: Vec<Write>,
    pub(crate) new_keys: Vec<NewKey>,
    pub(crate) stale_keys: Vec<StaleKey>,
    pub(crate) reads: Vec<(TableId, Oid)>,
    pub(crate) scans: Vec<ScannedRange>,
    pub(crate) scan_keys: Vec<u8>,
    /// The leaves and records scans saw (see [`SeenEntries`]).
    pub(crate) scan_leaves: Vec<LeafHint>,
    pub(crate) scan_oids: Vec<Oid>,
    pub(crate) batch: ScanBatch,
    /// The rows it prefetched and where they were found.
    pub(crate) prefetched: PrefetchedRows,
    pub(crate) insert_leaf: Option<InsertLeaf>,
    /// Fresh OIDs reserved per table (indexed by table id), kept across the slot's transactions.
    pub(crate) oid_blocks: Vec<OidBlock>,
}

/// Entries beyond which a returned footprint's buffers are shrunk (a huge transaction should not
/// pin its memory).
const KEEP_ENTRIES: usize = 4096;

/// The same for what scans saw (2 MiB of records): a serializable analytic query records ~100,000
/// and regrew its buffers from 4,096 in every run, the allocator faulting in a fresh megabyte
/// inside its non-preemptible region each time (measured: ~200 faults, half a millisecond of
/// urgent work waiting).
const KEEP_SCANNED: usize = 1 << 18;

impl Footprint {
    fn recycle(&mut self) {
        fn reset_to<T>(v: &mut Vec<T>, keep: usize) {
            v.clear();
            if v.capacity() > keep {
                v.shrink_to(keep);
            }
        }
        fn reset<T>(v: &mut Vec<T>) {
            reset_to(v, KEEP_ENTRIES);
        }
        self.ws.clear(KEEP_ENTRIES);
        reset_to(&mut self.log_record, 1 << 16);
        reset(&mut self.writes);
        reset(&mut self.new_keys);
        reset(&mut self.stale_keys);
        reset(&mut self.reads);
        reset(&mut self.scans);
        reset(&mut self.scan_keys);
        reset_to(&mut self.scan_leaves, KEEP_SCANNED);
        reset_to(&mut self.scan_oids, KEEP_SCANNED);
        self.batch.clear();
        self.prefetched.clear();
        self.insert_leaf = None;
        // `oid_blocks` is kept: that is what makes it a cache.
    }
}

/// One footprint per transaction slot, lent to the slot's transaction while it runs.
pub(crate) struct FootprintPool {
    slots: Box<[CachePadded<RegionMutex<Footprint>>]>,
}

impl FootprintPool {
    pub(crate) fn new(slots: usize) -> Self {
        FootprintPool {
            slots: (0..slots)
                .map(|_| CachePadded(RegionMutex::new(Footprint::default())))
                .collect(),
        }
    }

    /// The footprint of slot `slot`, empty, for the transaction that just leased the slot.
    pub(crate) fn take(&self, slot: usize) -> Footprint {
        let region = NoPreemptGuard::new();
        std::mem::take(&mut *self.slots[slot].lock(&region))
    }

    /// Returns a footprint to slot `slot` (before the slot itself is released), emptied.
    pub(crate) fn give_back(&self, slot: usize, mut footprint: Footprint) {
        footprint.recycle();
        let region = NoPreemptGuard::new();
        *self.slots[slot].lock(&region) = footprint;
    }
}
