//! Record storage: versions, the chains they form, and the slots that hold each chain's head.
//!
//! Every record of a table has a stable object id (OID) naming a slot that holds the
//! head of its version chain. Indexes map keys to OIDs, so secondary indexes never need to change
//! when a record is updated, and a record's chain can be replaced without touching any index.
//!
//! Slots live in a [`DoublingArray`] (chunks of 4096, 8192, ... slots, built ahead of need and
//! never moved), so a slot reference stays valid for the table's lifetime without any lock.
//!
//! A pending version at the head belongs to a transaction installing its writes: one inside its
//! commit, or a promoted attempt (see `Database::run`), both running in a non-preemptible region.
//! Other writers that meet it conflict. A null head tagged `DEAD` marks a record whose
//! keys are being (or have been) removed from the indexes; its OID is recycled after a grace period.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};

use overtake_runtime::prefetch::prefetch_read;
use overtake_runtime::{NoPreemptGuard, RegionMutex};
use sdd::{AtomicShared, Guard, Tag};

use crate::storage::doubling::DoublingArray;

/// Object id of a record within its table.
pub(crate) type Oid = u64;

/// Tag on a null head: the record is dead and its OID is (or will be) free.
pub(crate) const DEAD: Tag = Tag::First;

/// One version of a record.
pub(crate) struct Version {
    /// Commit timestamp, or the writer's pending stamp (see `mvcc`).
    pub(crate) stamp: AtomicU64,
    /// The encoded row; empty for a deletion marker (a stored row is never empty). The deleted row's
    /// image is the next version, which the collector keeps until it has removed the row's keys.
    pub(crate) row: RowBytes,
    /// The next older version.
    pub(crate) next: AtomicShared<Version>,
}

/// Rows up to this many bytes are stored inside their version. TPC-C's order lines (70 bytes),
/// items (61-93), warehouses (88), orders and history rows fit; districts (96-108, ten rows that
/// stay cached), stock (~300) and customer (~580) rows do not. Chosen so that a version with its
/// epoch header (16 bytes) is 128 bytes, one allocator size class.
const INLINE_ROW: usize = 93;

/// A version's row bytes: inside the version when short, so that reading a version and its row
/// is one allocation and one or two adjacent cache lines instead of two objects apart; on the
/// heap otherwise. Each variant also carries the version's depth hint (see [`Version::depth`]):
/// in a byte the enum's layout has free, so that a version stays one 128-byte allocation (a
/// field of `Version` would make it 136).
pub(crate) enum RowBytes {
    Inline {
        len: u8,
        depth: AtomicU8,
        bytes: [u8; INLINE_ROW],
    },
    Heap {
        row: Box<[u8]>,
        depth: AtomicU8,
    },
}

impl RowBytes {
    /// Stores `row`, with the depth hint `depth`.
    #[inline]
    pub(crate) fn new(row: Box<[u8]>, depth: u8) -> Self {
        let depth = AtomicU8::new(depth);
        if row.len() <= INLINE_ROW {
            let mut bytes = [0; INLINE_ROW];
            bytes[..row.len()].copy_from_slice(&row);
            RowBytes::Inline {
                len: row.len() as u8,
                depth,
                bytes,
            }
        } else {
            RowBytes::Heap { row, depth }
        }
    }

    #[inline]
    fn depth(&self) -> &AtomicU8 {
        match self {
            RowBytes::Inline { depth, .. } | RowBytes::Heap { depth, .. } => depth,
        }
    }
}

impl std::ops::Deref for RowBytes {
    type Target = [u8];

    #[inline]
    fn deref(&self) -> &[u8] {
        match self {
            RowBytes::Inline { len, bytes, .. } => &bytes[..usize::from(*len)],
            RowBytes::Heap { row, .. } => row,
        }
    }
}

impl Version {
    /// Starts loading the row, up to its first `bytes`, if it is stored apart from the version
    /// (a hint).
    #[inline]
    pub(crate) fn prefetch_row(&self, bytes: usize) {
        if let RowBytes::Heap { row, .. } = &self.row {
            prefetch_read(row.as_ptr(), row.len().min(bytes));
        }
    }

    /// How many versions were linked at or below this one when it was installed, as far as its
    /// installer knew (one more than the version it was linked in front of), until the commit
    /// that looks for versions no snapshot sees (`gc::prune_unseen`) counts again. An upper
    /// bound on the versions its chain holds newer than the watermark: the collector shortens
    /// chains without lowering it. Lets a commit decide without walking the chain (a walk is a
    /// cache miss per version on a record written rarely) whether that search is due.
    #[inline]
    pub(crate) fn depth(&self) -> u8 {
        self.row.depth().load(Ordering::Relaxed)
    }

    /// Sets the depth hint (see [`Self::depth`]).
    #[inline]
    pub(crate) fn set_depth(&self, depth: u8) {
        self.row.depth().store(depth, Ordering::Relaxed);
    }

    /// True for a deletion marker.
    #[inline]
    pub(crate) fn is_deleted(&self) -> bool {
        self.row.is_empty()
    }

    /// The version below this one.
    #[inline]
    pub(crate) fn older<'g>(&self, guard: &'g Guard) -> Option<&'g Version> {
        self.next.load(Ordering::Acquire, guard).as_ref()
    }
}

/// The versions of a chain, newest first: the one way every module walks a record's history.
/// Items stay readable while `guard` is held, even if a writer or the collector unlinks them
/// meanwhile (they are freed only after every guard that could see them is gone).
#[derive(Clone)]
pub(crate) struct Chain<'g> {
    next: Option<&'g Version>,
    guard: &'g Guard,
}

impl<'g> Chain<'g> {
    /// The chain whose head is in `head` (a record's slot).
    #[inline]
    pub(crate) fn at(head: &AtomicShared<Version>, guard: &'g Guard) -> Self {
        Chain {
            next: head.load(Ordering::Acquire, guard).as_ref(),
            guard,
        }
    }

    /// The chain starting at `version` (inclusive).
    #[inline]
    pub(crate) fn from(version: Option<&'g Version>, guard: &'g Guard) -> Self {
        Chain {
            next: version,
            guard,
        }
    }
}

impl<'g> Iterator for Chain<'g> {
    type Item = &'g Version;

    #[inline]
    fn next(&mut self) -> Option<&'g Version> {
        let version = self.next?;
        self.next = version.older(self.guard);
        Some(version)
    }
}

/// Record slots: 4096 in the first chunk, 40 chunks.
type Slots = DoublingArray<AtomicShared<Version>, 12, 40>;

/// Fresh OIDs a transaction slot takes from a table's counter at once.
pub(crate) const OID_BLOCK: u64 = 32;

/// A range of fresh OIDs of one table reserved by one transaction slot (kept from one transaction
/// of the slot to the next). OIDs in it are allocated but never used yet: their slots are empty.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct OidBlock {
    next: Oid,
    end: Oid,
}

impl OidBlock {
    /// Takes the OIDs the block still holds out of it.
    pub(crate) fn take_unused(&mut self) -> std::ops::Range<Oid> {
        let unused = self.next..self.end;
        self.next = self.end;
        unused
    }
}

/// The slots of one table.
pub(crate) struct RecordStore {
    slots: Slots,
    next_oid: AtomicU64,
    /// Dead OIDs with the clock value at their death; reusable once the watermark passes it.
    free: RegionMutex<VecDeque<(Oid, u64)>>,
    /// When the front of `free` died (`u64::MAX` if it is empty), written under its lock: an
    /// insert reads this instead of taking the lock when no OID is reusable yet.
    free_front: AtomicU64,
}

impl RecordStore {
    pub(crate) fn new() -> Self {
        RecordStore {
            slots: Slots::new(AtomicShared::null),
            next_oid: AtomicU64::new(0),
            free: RegionMutex::new(VecDeque::new()),
            free_front: AtomicU64::new(u64::MAX),
        }
    }

    /// The slot of `oid` (which must have been allocated).
    #[inline]
    pub(crate) fn slot(&self, oid: Oid) -> &AtomicShared<Version> {
        match self.slots.get_or_build(oid) {
            Some(slot) => slot,
            None => panic!("OID {oid} is beyond the record store's capacity"),
        }
    }

    /// The slot of `oid` if that OID was ever handed out (an id from outside, such as a
    /// client's row location, may name none).
    pub(crate) fn slot_if_allocated(&self, oid: Oid) -> Option<&AtomicShared<Version>> {
        if oid >= self.oid_limit() {
            return None;
        }
        self.slots.get(oid)
    }

    /// Starts loading the slot of `oid` (a hint; see `Transaction::prefetch_rows`).
    #[inline]
    pub(crate) fn prefetch_slot(&self, oid: Oid) {
        if let Some(slot) = self.slots.get(oid) {
            prefetch_read(std::ptr::from_ref(slot).cast(), 8);
        }
    }

    /// Starts loading the newest version of `oid` (its slot should be in cache by now) and
    /// returns it, for the row's own prefetch once it has arrived.
    #[inline]
    pub(crate) fn prefetch_head<'g>(&self, oid: Oid, guard: &'g Guard) -> Option<&'g Version> {
        let head = self
            .slots
            .get(oid)?
            .load(Ordering::Acquire, guard)
            .as_ref()?;
        prefetch_read(
            std::ptr::from_ref(head).cast(),
            std::mem::size_of::<Version>(),
        );
        Some(head)
    }

    /// Starts loading the slots, newest versions and rows of `oids` (the first 64: a scan batch),
    /// in three passes so that the misses of each pass overlap (a hint, for a batch of records
    /// about to be read).
    pub(crate) fn prefetch_records(&self, oids: impl Iterator<Item = Oid> + Clone, guard: &Guard) {
        for oid in oids.clone() {
            self.prefetch_slot(oid);
        }
        let mut heads = [None; 64];
        for (oid, head) in oids.zip(&mut heads) {
            *head = self.prefetch_head(oid, guard);
        }
        for version in heads.iter().flatten() {
            version.prefetch_row(usize::MAX);
        }
    }

    /// A fresh or recycled OID. Recycled ones died before `watermark`, so no transaction that could
    /// still hold the old OID is alive. Fresh ones come from `block`, the caller's private range,
    /// refilled [`OID_BLOCK`] at a time: the table's shared counter is touched once per block,
    /// not once per insert.
    pub(crate) fn allocate(
        &self,
        watermark: u64,
        block: &mut OidBlock,
        region: &NoPreemptGuard,
    ) -> Oid {
        if self.free_front.load(Ordering::Acquire) < watermark
            && let Some(mut free) = self.free.try_lock(region)
            && let Some(&(oid, died)) = free.front()
            && died < watermark
        {
            free.pop_front();
            self.publish_front(&free);
            return oid;
        }
        if block.next == block.end {
            block.next = self.next_oid.fetch_add(OID_BLOCK, Ordering::Relaxed);
            block.end = block.next + OID_BLOCK;
            self.slots.build_ahead(block.end - 1);
        }
        block.next += 1;
        block.next - 1
    }

    /// Updates the hint about the free list's front (under its lock).
    fn publish_front(&self, free: &VecDeque<(Oid, u64)>) {
        let front = free.front().map_or(u64::MAX, |&(_, died)| died);
        self.free_front.store(front, Ordering::Release);
    }

    /// Returns a dead OID (its slot is `DEAD`, its index entries removed) for reuse once the
    /// watermark passes `died_at`.
    pub(crate) fn release(&self, oid: Oid, died_at: u64) {
        let region = NoPreemptGuard::new();
        let mut free = self.free.lock(&region);
        free.push_back((oid, died_at));
        self.publish_front(&free);
    }

    /// Returns an OID that was never published (no transaction can hold it): reusable at once, so it
    /// goes ahead of the OIDs still waiting for their grace period.
    pub(crate) fn release_unpublished(&self, oid: Oid) {
        let region = NoPreemptGuard::new();
        let mut free = self.free.lock(&region);
        free.push_front((oid, 0));
        self.publish_front(&free);
    }

    /// One past the largest OID ever allocated (reserved ranges included).
    pub(crate) fn oid_limit(&self) -> Oid {
        self.next_oid.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_up_to_the_inline_size_live_in_their_version() {
        for len in [0, 1, 70, INLINE_ROW - 1, INLINE_ROW, INLINE_ROW + 1, 300] {
            let row: Box<[u8]> = (0..len).map(|i| i as u8).collect();
            let stored = RowBytes::new(row.clone(), 1);
            assert_eq!(&*stored, &*row, "{len} bytes read back unchanged");
            assert_eq!(
                matches!(stored, RowBytes::Inline { .. }),
                len <= INLINE_ROW,
                "{len} bytes"
            );
        }
        // With sdd's 16-byte header a version is one 128-byte allocation.
        assert!(std::mem::size_of::<Version>() <= 112);
    }

    #[test]
    fn slots_never_move() {
        let store = RecordStore::new();
        let a: *const _ = store.slot(10);
        let b: *const _ = store.slot(5000);
        assert_ne!(a, b);
        assert!(std::ptr::eq(a, store.slot(10)), "slots never move");
    }

    #[test]
    fn blocks_hand_out_distinct_oids_and_touch_the_counter_once_per_block() {
        let store = RecordStore::new();
        let region = NoPreemptGuard::new();
        let (mut x, mut y) = (OidBlock::default(), OidBlock::default());
        let mut seen = std::collections::HashSet::new();
        for _ in 0..OID_BLOCK * 3 {
            assert!(seen.insert(store.allocate(0, &mut x, &region)));
            assert!(seen.insert(store.allocate(0, &mut y, &region)));
        }
        assert_eq!(
            store.oid_limit(),
            OID_BLOCK * 6,
            "three blocks each, all used"
        );
    }

    #[test]
    fn oids_are_recycled_only_after_the_watermark() {
        let store = RecordStore::new();
        let region = NoPreemptGuard::new();
        let mut block = OidBlock::default();
        let a = store.allocate(0, &mut block, &region);
        let b = store.allocate(0, &mut block, &region);
        assert_ne!(a, b);
        store.release(a, 10);
        assert_ne!(
            store.allocate(10, &mut block, &region),
            a,
            "not before the watermark passes"
        );
        assert_eq!(store.allocate(11, &mut block, &region), a);
        let c = store.allocate(0, &mut block, &region);
        store.release(c, 100);
        store.release_unpublished(b);
        assert_eq!(
            store.allocate(1, &mut block, &region),
            b,
            "an unpublished OID is reusable at once"
        );
    }
}
