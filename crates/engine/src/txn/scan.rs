//! Scans: a transaction's view of an index range, with its own buffered writes merged in.
//!
//! Index entries are fetched in batches, each one short non-preemptible region; rows are read and
//! the caller's closure runs preemptibly. A record this transaction wrote is shown as written: where
//! the index meets the record its committed versions are skipped, and the buffered row (if the
//! record was not deleted) is delivered at its key in the scanned index, merged into index order.
//! So an update that moves a row within a secondary index, or an insert, shows up where it will be
//! once committed.

use std::ops::{Bound, ControlFlow, RangeBounds};

use overtake_runtime::preempt::{access_may_switch, record_access};

use super::{SCAN_BATCH, ScanOptions, Transaction};
use crate::catalog::table::{IndexRef, Table};
use crate::error::Result;
use crate::mvcc::epoch::EpochGuard;
use crate::storage::key::{IndexKey, KeyBuf, KeyRange, as_slice_bound};
use crate::storage::record::Oid;
use crate::storage::row::RowRef;
use crate::txn::footprint::SeenEntries;
use crate::txn::writeset::WriteSet;

/// Where a scanned row comes from.
#[derive(Clone, Copy, Debug)]
pub(super) enum Source<'k> {
    /// A record of the table, seen in the snapshot (not written by this transaction), and its
    /// key in the scanned index.
    Record(Oid, &'k [u8]),
    /// This transaction's write-set entry at this position, and its record's OID.
    Own(usize, Oid),
}

/// True if `a` comes before `b` in the scan's direction.
fn before(a: &[u8], b: &[u8], reverse: bool) -> bool {
    if reverse { a > b } else { a < b }
}

/// Batches at the start of a scan whose records are prefetched (see `scan_sourced`): the
/// 200-odd order lines of a Stock-Level, not the whole of a Query 2 table.
const PREFETCHED_BATCHES: usize = 4;

/// Past those batches, how many entries ahead of the one being read a record's slot, and then
/// its newest version, are asked for (see `scan_sourced`).
const SLOT_AHEAD: usize = 16;
const VERSION_AHEAD: usize = 8;

impl Transaction<'_> {
    pub(super) fn scan_in(
        &mut self,
        table: &Table,
        index: IndexRef,
        range: &KeyRange,
        options: ScanOptions,
        mut visit: impl FnMut(RowRef<'_>) -> ControlFlow<()>,
    ) -> Result<usize> {
        self.scan_sourced(table, index, range, options, |row, _| visit(row))
    }

    /// [`scan_in`](Self::scan_in), also telling `visit` where each row comes from.
    pub(super) fn scan_sourced(
        &mut self,
        table: &Table,
        index: IndexRef,
        range: &KeyRange,
        options: ScanOptions,
        mut visit: impl FnMut(RowRef<'_>, Source) -> ControlFlow<()>,
    ) -> Result<usize> {
        self.check(table)?;
        self.buf.ws.index_oids();
        let limit = options.limit.unwrap_or(usize::MAX);
        let own = self.own_rows_in(table, index, range, options.reverse);
        let mut next_own = 0;
        let mut delivered = 0;
        let (mut lower, mut upper) = (range.lower.clone(), range.upper.clone());
        // Where the scan stopped early (inclusive), if it did: the end of what it depended on.
        let mut stopped_at: Option<KeyBuf> = None;
        let mut batch = std::mem::take(&mut self.buf.batch);
        // Under serializable isolation, what the scan sees of the range is recorded, so that the
        // commit can validate the range without walking it again (see `SeenEntries`).
        let recording = self.serializable() || options.validate;
        self.validating |= options.validate;
        let mut seen_leaves = std::mem::take(&mut self.buf.scan_leaves);
        let mut seen_oids = std::mem::take(&mut self.buf.scan_oids);
        let seen_from = (seen_leaves.len() as u32, seen_oids.len() as u32);
        let reader = self.reader();
        // A lock request the lock manager refused (the scan ends, and the transaction with it).
        let mut lock_failure = None;
        let tree = table.tree(index);
        let ws = &self.buf.ws;
        // Hands one row to the caller; true if the scan stops at it.
        let mut emit = |row: RowRef<'_>, source: Source, delivered: &mut usize| {
            *delivered += 1;
            visit(row, source).is_break() || *delivered == limit
        };
        let own_row = |entry: usize| match &ws.get(entry).row {
            Some(row) => table.row(row),
            None => unreachable!("only rows are merged"),
        };
        let range_upper = as_slice_bound(&range.upper);
        // Under two-phase locking, each row is handed on only while the locks still hold.
        let scans_lock = self.scans_lock();
        let revocation = (self.locker.as_ref())
            .filter(|_| scans_lock)
            .map(super::locking::Locker::revocation);
        let mut locker = self.locker.as_mut().filter(|_| scans_lock);
        if options.reverse
            && let Some(locker) = &mut locker
        {
            // A reverse scan starts at the upper end: the gap above its first entry is guarded by
            // the range's successor, so that is locked first.
            if let Err(abort) = locker.lock_successor(table, index, range_upper) {
                lock_failure = Some(abort);
            }
        }
        let mut batches = 0;
        'scan: while delivered < limit && lock_failure.is_none() {
            let want = (limit - delivered).min(SCAN_BATCH);
            let bounds = (as_slice_bound(&lower), as_slice_bound(&upper));
            match &mut locker {
                None => {
                    tree.fetch_batch(bounds, options.reverse, want, &mut batch);
                    if recording {
                        reserve_preemptibly(&mut seen_oids, batch.len());
                        reserve_preemptibly(&mut seen_leaves, batch.leaves().len());
                        seen_leaves.extend_from_slice(batch.leaves());
                    }
                }
                Some(locker) => {
                    let successor = (!options.reverse).then_some(range_upper);
                    if let Err(abort) = locker.fetch_locked(
                        table,
                        index,
                        bounds,
                        options.reverse,
                        want,
                        &mut batch,
                        successor,
                    ) {
                        lock_failure = Some(abort);
                        break;
                    }
                }
            }
            let mut epoch = EpochGuard::enter();
            batches += 1;
            // Past the first batches, records are asked for a few entries ahead of the one read
            // (a slot, then its version once the slot has arrived): a long scan's records are
            // apart in memory, and each one read was two misses in turn (three quarters of a
            // `count(*)` over order lines), which the hardware's prefetching does not foresee.
            let window = batches > PREFETCHED_BATCHES;
            if window {
                for i in 0..batch.len().min(SLOT_AHEAD) {
                    table.records.prefetch_slot(batch.oid(i));
                }
            }
            if batch.len() > 1 && batches <= PREFETCHED_BATCHES {
                // A scan's first records are usually cold and nothing predicts where they are
                // (a Delivery's order lines, a customer's rows by name, a Stock-Level's lines):
                // ask for a batch's records before reading the first, so that their misses
                // overlap instead of following one another. A long scan is then left to the
                // hardware's prefetching of the records it streams through: prefetching every
                // batch made Query 2 ~20% slower.
                table
                    .records
                    .prefetch_records((0..batch.len()).map(|i| batch.oid(i)), epoch.guard());
            }
            for i in 0..batch.len() {
                if window {
                    if i + SLOT_AHEAD < batch.len() {
                        table.records.prefetch_slot(batch.oid(i + SLOT_AHEAD));
                    }
                    if i + VERSION_AHEAD < batch.len() {
                        table
                            .records
                            .prefetch_head(batch.oid(i + VERSION_AHEAD), epoch.guard());
                    }
                }
                while let Some((key, entry)) = own.get(next_own)
                    && before(key.as_bytes(), batch.key(i), options.reverse)
                {
                    next_own += 1;
                    record_access();
                    if emit(
                        own_row(*entry),
                        Source::Own(*entry, ws.get(*entry).oid),
                        &mut delivered,
                    ) {
                        stopped_at = Some(key.clone());
                        break 'scan;
                    }
                }
                // A scan is where a long transaction is paused: not inside its epoch.
                if access_may_switch() {
                    epoch.released_for(record_access);
                } else {
                    record_access();
                }
                let guard = epoch.guard();
                let oid = batch.oid(i);
                if recording {
                    seen_oids.push(oid);
                }
                if ws.by_oid(table.id(), oid).is_some() {
                    // Written by this transaction: shown from the write set.
                    continue;
                }
                let slot = table.records.slot(oid);
                let Some(v) = self.engine.txns.visible(slot, reader, guard) else {
                    continue;
                };
                Self::note_read_ts(self.read_ts, &self.lease, v);
                if v.is_deleted() {
                    continue;
                }
                let row = table.row(&v.row);
                if let IndexRef::Secondary(s) = index
                    && table.secondary_key(s, &row, oid).as_bytes() != batch.key(i)
                {
                    // The entry belongs to an older version of the row (its key changed since).
                    continue;
                }
                if let Some(abort) = revocation.as_ref().and_then(|r| r.revoked()) {
                    lock_failure = Some(abort);
                    break 'scan;
                }
                if emit(row, Source::Record(oid, batch.key(i)), &mut delivered) {
                    stopped_at = KeyBuf::from_bytes(batch.key(i));
                    break 'scan;
                }
            }
            if batch.len() < want {
                break;
            }
            let last = KeyBuf::from_bytes(batch.key(batch.len() - 1))
                .map_or(Bound::Unbounded, Bound::Excluded);
            if options.reverse {
                upper = last;
            } else {
                lower = last;
            }
        }
        self.buf.batch = batch;
        let seen = SeenEntries {
            leaves: (seen_from.0, seen_leaves.len() as u32),
            oids: (seen_from.1, seen_oids.len() as u32),
        };
        (self.buf.scan_leaves, self.buf.scan_oids) = (seen_leaves, seen_oids);
        // What the scan did not find (rows gone since) is an observation too: it counts only if
        // the locks still held after the last read.
        if let Some(abort) = lock_failure.or_else(|| revocation.as_ref().and_then(|r| r.revoked()))
        {
            return Err(self.fail(abort.into()));
        }
        // Own rows after the last index entry.
        if stopped_at.is_none() && delivered < limit {
            for (key, entry) in &own[next_own..] {
                record_access();
                if emit(
                    own_row(*entry),
                    Source::Own(*entry, ws.get(*entry).oid),
                    &mut delivered,
                ) {
                    stopped_at = Some(key.clone());
                    break;
                }
            }
        }
        if recording {
            let (mut lower, mut upper) =
                (as_slice_bound(&range.lower), as_slice_bound(&range.upper));
            if let Some(end) = &stopped_at {
                if options.reverse {
                    lower = Bound::Included(end.as_bytes());
                } else {
                    upper = Bound::Included(end.as_bytes());
                }
            }
            self.note_range(table, index, (lower, upper), Some(seen));
        }
        Ok(delivered)
    }

    /// The rows this transaction wrote to `table` whose key in `index` lies in `range` (with the
    /// key and write-set position), in scan order. Empty, without allocating, if it wrote none.
    fn own_rows_in(
        &self,
        table: &Table,
        index: IndexRef,
        range: &KeyRange,
        reverse: bool,
    ) -> Vec<(KeyBuf, usize)> {
        let ws = &self.buf.ws;
        if !ws.touches(table.id()) {
            return Vec::new();
        }
        // Only this table's entries, and a primary key's bounds checked on its stored form (two
        // integer comparisons for short keys): a transaction scanning many ranges of a table it
        // writes (Delivery) meets most of its entries outside each range.
        if index == IndexRef::Primary
            && let Some(positions) = ws.positions_in_key_order(table.id())
        {
            return own_rows_by_search(ws, positions, range, reverse);
        }
        let entries = ws
            .entries_of(table.id())
            .map(|i| (i, ws.get(i)))
            .filter_map(|(i, e)| Some((i, e, e.row.as_ref()?)));
        let mut own: Vec<(KeyBuf, usize)> = match index {
            IndexRef::Primary => {
                let stored = |b: &Bound<KeyBuf>| b.as_ref().map(|k| IndexKey::new(k.as_bytes()));
                let bounds = (stored(&range.lower), stored(&range.upper));
                entries
                    .filter(|(_, e, _)| bounds.contains(&e.key))
                    .filter_map(|(i, e, _)| Some((KeyBuf::from_bytes(e.key.as_slice())?, i)))
                    .collect()
            }
            IndexRef::Secondary(s) => {
                let bounds = (as_slice_bound(&range.lower), as_slice_bound(&range.upper));
                entries
                    .map(|(i, e, row)| (table.secondary_key(s, &table.row(row), e.oid), i))
                    .filter(|(key, _)| bounds.contains(key.as_bytes()))
                    .collect()
            }
        };
        own.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        if reverse {
            own.reverse();
        }
        own
    }
}

/// [`own_rows_in`](Transaction::own_rows_in) of the primary index for entries written in key
/// order (`positions`): the rows in `range` are one run of them, found by binary search.
fn own_rows_by_search(
    ws: &WriteSet,
    positions: &[u32],
    range: &KeyRange,
    reverse: bool,
) -> Vec<(KeyBuf, usize)> {
    let key = |&i: &u32| ws.get(i as usize).key.as_slice();
    let start = match &range.lower {
        Bound::Included(k) => positions.partition_point(|i| key(i) < k.as_bytes()),
        Bound::Excluded(k) => positions.partition_point(|i| key(i) <= k.as_bytes()),
        Bound::Unbounded => 0,
    };
    let below_upper = |i: &u32| match &range.upper {
        Bound::Included(k) => key(i) <= k.as_bytes(),
        Bound::Excluded(k) => key(i) < k.as_bytes(),
        Bound::Unbounded => true,
    };
    let mut own: Vec<(KeyBuf, usize)> = positions[start..]
        .iter()
        .take_while(|i| below_upper(i))
        .map(|&i| i as usize)
        .filter(|&i| ws.get(i).row.is_some())
        .filter_map(|i| Some((KeyBuf::from_bytes(ws.get(i).key.as_slice())?, i)))
        .collect();
    if reverse {
        own.reverse();
    }
    own
}

/// Capacity from which [`reserve_preemptibly`] grows a vector itself.
const PREEMPTIBLE_GROWTH: usize = 8 * 1024;

/// Makes room for `additional` more elements. A large vector is grown by allocating the bigger
/// buffer and copying into it outside the allocator, rather than by `realloc`: the copy into
/// fresh memory faults its pages in, and inside the allocator (a non-preemptible region) that
/// kept a long scan's worker from urgent work for half a millisecond at a time (a serializable
/// Query 2 records ~100,000 entries, regrowing its buffer from 4,096 in every run).
fn reserve_preemptibly<T: Copy>(v: &mut Vec<T>, additional: usize) {
    if v.capacity() - v.len() >= additional {
        return;
    }
    if v.capacity() < PREEMPTIBLE_GROWTH {
        v.reserve(additional);
        return;
    }
    let mut bigger = Vec::with_capacity((v.capacity() * 2).max(v.len() + additional));
    bigger.extend_from_slice(v);
    *v = bigger;
}
