//! Reclaiming old versions and dead records.
//!
//! When a transaction commits, what it made obsolete is queued on its slot with the commit
//! timestamp: the versions its writes superseded, the records it deleted, the index keys its updates
//! made stale. Once the watermark (the oldest snapshot still in use) reaches that timestamp, no
//! transaction can see the obsolete data any more, and the committing transactions that come later
//! unlink it, a bounded amount each time. Unlinked memory is then freed by epoch-based reclamation
//! when no reader can still be traversing it. Memory therefore stays bounded by the versions live
//! snapshots need, however long the run.
//!
//! Dead records lose their index entries and their OIDs are recycled. This module runs inside
//! non-preemptible regions (it is part of commit) and must never wait for an active transaction.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use overtake_runtime::{CachePadded, NoPreemptGuard, RegionMutex};
use sdd::{Guard, Tag};

use crate::catalog::Catalog;
use crate::catalog::table::{IndexRef, Table, TableId};
use crate::index::ScanBatch;
use crate::mvcc::epoch::EpochGuard;
use crate::mvcc::{LiveSnapshots, TxnTable, is_committed};
use crate::storage::key::IndexKey;
use crate::storage::record::{Chain, DEAD, Oid, Version};

/// Something made obsolete by the commit at `ts`.
pub(crate) enum Retired {
    /// A newer version of the record was committed at `ts`; older ones can go.
    Superseded { table: TableId, oid: Oid, ts: u64 },
    /// The record was deleted at `ts`; its keys and OID can go.
    Deleted { table: TableId, oid: Oid, ts: u64 },
    /// An update at `ts` changed the record's key in a secondary index; the old entry can go.
    StaleKey {
        table: TableId,
        index: usize,
        key: IndexKey,
        oid: Oid,
        ts: u64,
    },
}

impl Retired {
    fn ts(&self) -> u64 {
        match self {
            Retired::Superseded { ts, .. }
            | Retired::Deleted { ts, .. }
            | Retired::StaleKey { ts, .. } => *ts,
        }
    }
}

/// Counts versions in the chain starting at `v` (inclusive).
fn chain_len(v: Option<&Version>, guard: &Guard) -> u64 {
    Chain::from(v, guard).count() as u64
}

/// Unlinks every version of `oid` older than the newest one committed at or before `watermark`
/// (if that one is a deletion marker, the deleted row below it is kept: the row's keys must still
/// be found when the record's index entries are removed). Returns how many versions were unlinked.
fn prune(table: &Table, oid: Oid, watermark: u64, guard: &Guard) -> u64 {
    let settled = |v: &Version| {
        let stamp = v.stamp.load(Ordering::Acquire);
        is_committed(stamp) && stamp <= watermark
    };
    let Some(v) = Chain::at(table.records.slot(oid), guard).find(|v| settled(v)) else {
        return 0;
    };
    let keep = if v.is_deleted() {
        match v.older(guard) {
            Some(image) => image,
            None => return 0,
        }
    } else {
        v
    };
    let (cut, _) = keep.next.swap((None, Tag::None), Ordering::AcqRel);
    cut.map_or(0, |c| chain_len(Some(&*c), guard))
}

/// How many versions newer than the watermark a chain may hold before a commit that writes the
/// record looks for versions no live snapshot sees (`prune_unseen`). Without a long reader the
/// watermark follows the clock closely and chains stay below this. Whether a chain may have
/// reached it is read from its head's depth hint ([`Version::depth`]), not walked: with a
/// paused reader holding the watermark back for seconds, walking nine versions of every record
/// a commit wrote cost urgent TPC-C a sixth of the worker's time (a cache miss per version of
/// the stock and customer rows).
const UNSEEN_AFTER: usize = 8;

/// In a commit's region, once the commit's versions are stamped: if record `oid`'s chain holds
/// many versions newer than the watermark (a long transaction's snapshot holds the watermark
/// back; a paused analytic query does for as long as it is paused), unlinks those no live
/// snapshot sees. Otherwise every update of a hot row would lengthen its chain until the old
/// snapshot ends, and each version the collector prunes meanwhile would cost a walk down that
/// chain (measured: urgent TPC-C under overload with Query 2 paused ran twice as long per
/// transaction, a third of the worker's time in `prune`).
///
/// Keeps: versions not yet committed, every version committed after `live.recent`, the newest
/// version at or before each live snapshot, deletion markers and the row below each (the
/// collector removes the deleted row's keys with it), and everything from the watermark's version
/// down (the collector's, `prune`). Unlinks the others, each with one swap of its predecessor's
/// link. A concurrent unlink in the same chain can at worst link an unlinked version back (both
/// read the same link): never unlink a version someone decided to keep. A version no live
/// snapshot sees is seen by no later one either: later snapshots are at least `live.recent`.
/// Returns how many versions were unlinked; `live` is read once per commit, when first needed.
pub(crate) fn prune_unseen(
    table: &Table,
    oid: Oid,
    txns: &TxnTable,
    live: &mut Option<LiveSnapshots>,
    guard: &Guard,
) -> u64 {
    let slot = table.records.slot(oid);
    // The head's depth hint bounds the versions newer than the watermark: below the limit there
    // is nothing to look for, and nothing to walk (the hint is what keeps the walk off records
    // written now and then, whose versions are each a cache miss).
    let Some(head) = Chain::at(slot, guard).next() else {
        return 0;
    };
    if usize::from(head.depth()) <= UNSEEN_AFTER {
        return 0;
    }
    // The hint may overstate (the collector has cut the chain since); the search below is done
    // anyway rather than after a count, which would walk the chain a second time, and on a chain
    // that keeps close to the limit (the collector held back by an old snapshot) at every commit.
    let watermark = txns.watermark();
    let live = live.get_or_insert_with(|| {
        let mut live = LiveSnapshots::default();
        txns.live_snapshots(&mut live);
        live
    });
    let mut kept: Option<&Version> = None;
    let mut kept_count: u8 = 0;
    let mut pending_snapshots = live.snapshots.iter().peekable();
    let mut unlinked = 0;
    for v in Chain::from(Some(head), guard) {
        let stamp = v.stamp.load(Ordering::Acquire);
        if is_committed(stamp) && stamp <= watermark {
            break;
        }
        // The snapshots that have not met their version yet and are at or after this one's
        // commit see this version.
        let mut seen = false;
        while pending_snapshots.next_if(|&&s| s >= stamp).is_some() {
            seen = true;
        }
        let keep = !is_committed(stamp)
            || stamp > live.recent
            || seen
            || v.is_deleted()
            || kept.is_none_or(Version::is_deleted);
        match kept {
            Some(above) if !keep => {
                let below = v.next.get_shared(Ordering::Acquire, guard);
                drop(above.next.swap((below, Tag::None), Ordering::AcqRel));
                unlinked += 1;
            }
            _ => {
                kept = Some(v);
                kept_count = kept_count.saturating_add(1);
            }
        }
    }
    // What stays newer than the watermark: the next search is due when that many more versions
    // than the limit have been added.
    head.set_depth(kept_count);
    unlinked
}

/// Removes the index entries of a record deleted at or before `watermark`, marks its slot dead and
/// recycles its OID. Does nothing if the record was re-inserted since.
fn remove_dead(
    txns: &TxnTable,
    table: &Table,
    oid: Oid,
    watermark: u64,
    epoch: &EpochGuard,
) -> u64 {
    let guard = epoch.guard();
    let slot = table.records.slot(oid);
    let head = slot.load(Ordering::Acquire, guard);
    let Some(v) = head.as_ref() else { return 0 };
    let stamp = v.stamp.load(Ordering::Acquire);
    if !(v.is_deleted() && is_committed(stamp) && stamp <= watermark) {
        return 0;
    }
    // The deleted row, kept below the marker by `prune`, says which keys to remove.
    let Some(image) = v.older(guard) else {
        return 0;
    };
    if slot
        .compare_exchange(
            head,
            (None, DEAD),
            Ordering::AcqRel,
            Ordering::Acquire,
            guard,
        )
        .is_err()
    {
        return 0;
    }
    // `v` and `image` stay readable under `guard` although the slot no longer points to them.
    let row = table.row(&image.row);
    table
        .tree(IndexRef::Primary)
        .remove(table.primary_key(&row, oid).as_bytes(), oid);
    for i in 0..table.secondary_count() {
        table
            .tree(IndexRef::Secondary(i))
            .remove(table.secondary_key(i, &row, oid).as_bytes(), oid);
    }
    table.records.release(oid, txns.now());
    chain_len(Some(v), guard)
}

/// Removes an index entry no version of its record carries any more. A concurrent update may be
/// re-adding the same key: it links its pending version (which carries the key) before it adds
/// the entry, and finds the entry present and reuses it. So whether any version carries the key
/// is asked under the index's writer latch, together with the removal: either the update's
/// version is already linked (the entry stays) or its insert comes after the removal (and puts
/// the entry back itself). Removing first and re-inserting after a second look would leave a
/// moment in which a scan misses a live row whose key went K -> K' -> K.
pub(crate) fn remove_uncarried(
    table: &Table,
    index: IndexRef,
    key: &[u8],
    oid: Oid,
    guard: &Guard,
) {
    if table.record_carries(index, key, oid, guard) {
        return;
    }
    table
        .tree(index)
        .remove_unless(key, oid, || table.record_carries(index, key, oid, guard));
}

/// Processes one retired item; returns how many versions it unlinked.
fn process(
    txns: &TxnTable,
    catalog: &Catalog,
    item: &Retired,
    watermark: u64,
    epoch: &EpochGuard,
) -> u64 {
    let guard = epoch.guard();
    let table_of = |id: TableId| catalog.get(id);
    match item {
        Retired::Superseded { table, oid, .. } => {
            table_of(*table).map_or(0, |t| prune(t, *oid, watermark, guard))
        }
        Retired::Deleted { table, oid, .. } => table_of(*table).map_or(0, |t| {
            prune(t, *oid, watermark, guard) + remove_dead(txns, t, *oid, watermark, epoch)
        }),
        Retired::StaleKey {
            table,
            index,
            key,
            oid,
            ..
        } => {
            if let Some(t) = table_of(*table) {
                remove_uncarried(t, IndexRef::Secondary(*index), key.as_slice(), *oid, guard);
            }
            0
        }
    }
}

/// One transaction slot's queue of retired items, filled by the slot's commits in commit order.
struct RetireQueue {
    items: RegionMutex<VecDeque<Retired>>,
    /// Timestamp of the front item (`u64::MAX` when empty), written under the lock: lets other
    /// committers see whether the queue has anything reclaimable without taking the lock.
    front: AtomicU64,
    /// The slot whose queue this slot's committers helped drain last (see `help_drain`).
    help_cursor: AtomicUsize,
    /// Versions unlinked by the drains of this slot's committers.
    reclaimed: AtomicU64,
}

impl RetireQueue {
    /// Updates the front hint (under the queue's lock).
    fn publish_front(&self, items: &VecDeque<Retired>) {
        let front = items.front().map_or(u64::MAX, Retired::ts);
        self.front.store(front, Ordering::Release);
    }
}

/// The retire queues of every transaction slot, and the work of draining them.
pub(crate) struct Collector {
    queues: Box<[CachePadded<RetireQueue>]>,
}

impl Collector {
    /// A collector for `slots` transaction slots.
    pub(crate) fn new(slots: usize) -> Self {
        let queues = (0..slots)
            .map(|_| {
                CachePadded(RetireQueue {
                    items: RegionMutex::new(VecDeque::new()),
                    front: AtomicU64::new(u64::MAX),
                    help_cursor: AtomicUsize::new(0),
                    reclaimed: AtomicU64::new(0),
                })
            })
            .collect();
        Collector { queues }
    }

    /// Counts `n` versions unlinked by a commit of slot `slot` (`prune_unseen`).
    pub(crate) fn note_reclaimed(&self, slot: usize, n: u64) {
        if n > 0 {
            self.queues[slot].reclaimed.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// Versions unlinked so far.
    pub(crate) fn reclaimed(&self) -> u64 {
        self.queues
            .iter()
            .map(|q| q.reclaimed.load(Ordering::Relaxed))
            .sum()
    }

    /// Queues what a commit made obsolete on the committer's slot (inside the commit's region):
    /// `fill` pushes the items onto the locked queue.
    pub(crate) fn retire(
        &self,
        slot: usize,
        region: &NoPreemptGuard,
        fill: impl FnOnce(&mut VecDeque<Retired>),
    ) {
        let queue = &self.queues[slot];
        let mut items = queue.items.lock(region);
        fill(&mut items);
        queue.publish_front(&items);
    }

    /// Processes up to `budget` ready items of slot `slot`'s queue (all of them if `budget` is
    /// `usize::MAX`). Returns how many were processed. Skips the slot if another thread is
    /// draining it. With `refresh`, recomputes the watermark if the cached one is too old for the
    /// front item.
    pub(crate) fn drain_slot(
        &self,
        txns: &TxnTable,
        catalog: &Catalog,
        slot: usize,
        budget: usize,
        refresh: bool,
    ) -> usize {
        let region = NoPreemptGuard::new();
        let queue = &self.queues[slot];
        let Some(mut items) = queue.items.try_lock(&region) else {
            return 0;
        };
        let Some(front) = items.front() else { return 0 };
        let mut watermark = txns.watermark();
        if front.ts() > watermark && refresh {
            watermark = txns.refresh_watermark_lazily();
        }
        let epoch = EpochGuard::enter();
        let mut done = 0;
        // Counted here and added once: one shared read-modify-write per drain, not per item.
        let mut unlinked = 0;
        while done < budget {
            match items.front() {
                Some(item) if item.ts() <= watermark => {
                    unlinked += process(txns, catalog, item, watermark, &epoch);
                    items.pop_front();
                    done += 1;
                }
                _ => break,
            }
        }
        queue.reclaimed.fetch_add(unlinked, Ordering::Relaxed);
        queue.publish_front(&items);
        done
    }

    /// After draining its own queue, a committer helps drain one other slot's, taking the slots
    /// in turn. Without help a slot's queue would only shrink when a later transaction of the same
    /// slot commits; a slot leased to a long or paused transaction would hold its retired items,
    /// and the index entries and versions they free, for as long as that transaction lives. With
    /// it, every queue is drained by the commits of all slots, so memory stays bounded by what
    /// live snapshots need. A queue whose front is not reclaimable yet is skipped without touching
    /// its lock.
    pub(crate) fn help_drain(&self, txns: &TxnTable, catalog: &Catalog, own: usize, budget: usize) {
        let used = txns.used_slots();
        if used < 2 {
            return;
        }
        let cursor = &self.queues[own].help_cursor;
        let mut next = (cursor.load(Ordering::Relaxed) + 1) % used;
        if next == own {
            next = (next + 1) % used;
        }
        cursor.store(next, Ordering::Relaxed);
        if self.queues[next].front.load(Ordering::Acquire) <= txns.watermark() {
            self.drain_slot(txns, catalog, next, budget, false);
        }
    }

    /// Drains every slot's queue as far as the current watermark allows.
    pub(crate) fn collect_all(&self, txns: &TxnTable, catalog: &Catalog) -> usize {
        txns.refresh_watermark();
        let mut total = 0;
        for slot in 0..txns.used_slots() {
            let region = NoPreemptGuard::new();
            // Wait for a concurrent drainer rather than skipping its slot. The drainer is inside a
            // region, hence running, and done in microseconds.
            drop(self.queues[slot].items.lock(&region));
            total += self.drain_slot(txns, catalog, slot, usize::MAX, false);
        }
        total
    }
}

/// What a full walk over every record and index entry found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct VersionCensus {
    /// Records whose newest committed version is not a deletion.
    pub live_records: u64,
    /// Versions currently linked into some record's chain.
    pub linked_versions: u64,
    /// Linked versions no snapshot can read any more (superseded at or before the watermark) that
    /// have not been unlinked yet.
    pub unreclaimed_versions: u64,
    /// Deleted records whose keys are still in the indexes.
    pub unreclaimed_deletes: u64,
    /// Entries in all indexes (primary and secondary).
    pub index_entries: u64,
    /// Index entries no version of their record carries (the record is dead, or the key belonged
    /// to a version that is gone): garbage the collector has not removed yet.
    pub dangling_index_entries: u64,
}

/// Walks every record and every index entry of `table` (a diagnostic: O(records)).
pub(crate) fn census(table: &Table, watermark: u64, out: &mut VersionCensus) {
    let epoch = EpochGuard::enter();
    let guard = epoch.guard();
    for oid in 0..table.records.oid_limit() {
        let _region = NoPreemptGuard::new();
        // Versions below the newest one every snapshot sees are garbage, except the deleted row
        // under a deletion marker, which is kept until the record's keys are removed.
        let mut needed_below: Option<u64> = None;
        let mut newest_committed: Option<bool> = None;
        for v in Chain::at(table.records.slot(oid), guard) {
            out.linked_versions += 1;
            let stamp = v.stamp.load(Ordering::Acquire);
            match needed_below {
                Some(0) => out.unreclaimed_versions += 1,
                Some(n) => needed_below = Some(n - 1),
                None if is_committed(stamp) && stamp <= watermark => {
                    needed_below = Some(u64::from(v.is_deleted()));
                    if v.is_deleted() {
                        out.unreclaimed_deletes += 1;
                    }
                }
                None => {}
            }
            if is_committed(stamp) && newest_committed.is_none() {
                newest_committed = Some(v.is_deleted());
            }
        }
        if newest_committed == Some(false) {
            out.live_records += 1;
        }
    }
    let indexes = std::iter::once(IndexRef::Primary)
        .chain((0..table.secondary_count()).map(IndexRef::Secondary));
    let mut batch = ScanBatch::default();
    let all = (std::ops::Bound::Unbounded, std::ops::Bound::Unbounded);
    for index in indexes {
        table.tree(index).visit(all, &mut batch, |key, oid| {
            out.index_entries += 1;
            if !table.record_carries(index, key, oid, guard) {
                out.dangling_index_entries += 1;
            }
            true
        });
    }
}
