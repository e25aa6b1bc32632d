//! Ending a transaction: serializable validation, commit, rollback.
//!
//! Commit installs the buffered writes (`install`), draws the commit timestamp, validates
//! (serializable), stamps the versions and queues what they made obsolete. Commit and rollback run
//! entirely inside one non-preemptible region: a transaction paused half-way through either would
//! leave pending versions that every other transaction must wait for.

use std::ops::Bound;
use std::sync::atomic::Ordering;

use overtake_runtime::NoPreemptGuard;
use sdd::{Guard, Tag};

use super::{State, Transaction};
use crate::catalog::Catalog;
use crate::error::{AbortReason, CommitError, Error, Result};
use crate::log::Acknowledgement;
use crate::log::record::{CommitEncoder, seal};
use crate::mvcc::epoch::EpochGuard;
use crate::mvcc::gc::{self, Retired};
use crate::mvcc::{ABORTED_STAMP, is_committed};
use crate::storage::record::{Chain, DEAD};
use crate::txn::footprint::{Footprint, Write, WriteKind};

/// How many retired items a commit processes per write it made (plus a constant), so that
/// reclamation keeps up with the rate at which versions are created.
const GC_ITEMS_PER_WRITE: usize = 2;
const GC_ITEMS_BASE: usize = 8;

impl Transaction<'_> {
    /// Commits. On failure (serializable validation) the transaction is rolled back and
    /// `Err(Aborted(Validation))` returned. A transaction an earlier abort already ended (a
    /// conflict, a failed validation, [`rollback`](Self::rollback)) returns that abort again; one
    /// that committed, or was ended with [`abort`](Self::abort), returns
    /// [`CommitError::NotActive`].
    ///
    /// In a database with a `sync` log, it returns once the commit's log record is durable (a
    /// task parks meanwhile; above the lowest priority the flush starts at once). If the log
    /// stops before the record is durable (a write it could not complete), the transaction has
    /// committed in memory and is in doubt on disk ([`CommitError::NotDurable`]); once
    /// it has stopped, a transaction that would write is refused before it commits
    /// ([`AbortReason::LogStopped`]).
    pub fn commit(&mut self) -> Result<(), CommitError> {
        let (durable, waited) = self.commit_pipelined()?.wait();
        self.durable_wait = waited;
        durable
    }

    /// Commits in memory and returns what the commit must wait for before anyone is told it
    /// committed (ERMIA's pipelined commit): its log record durable under `sync`, or, for a
    /// read-only transaction, every commit it read (see
    /// [`wait_reads_durable`](Self::wait_reads_durable)). Its versions are visible to other
    /// transactions at once; the caller holds back the acknowledgement (and, for a read-only
    /// transaction, its results) until the [`Acknowledgement`] resolves. Fails as
    /// [`commit`](Self::commit) does before its wait.
    pub fn commit_pipelined(&mut self) -> Result<Acknowledgement, CommitError> {
        Ok(match self.commit_in_memory()? {
            None => self.reads().acknowledgement(),
            lsn => self.engine.ticket(lsn, self.priority),
        })
    }

    /// Commits without waiting for the log (what [`commit`](Self::commit) does before its wait):
    /// for a caller that holds a region across the commit and must leave it before it may park.
    /// Returns where the commit's log record ends, if it wrote one.
    pub(crate) fn commit_in_memory(&mut self) -> Result<Option<u64>, CommitError> {
        self.commit_or_abort().map_err(|e| match e {
            Error::Aborted(reason) => CommitError::Aborted(reason),
            Error::NotActive => CommitError::NotActive,
            other => unreachable!("a commit can only abort or find the transaction ended: {other}"),
        })
    }

    /// How long its commit waited, after the commit region, for its log record to be durable
    /// (zero in memory, under `async` and for a read-only transaction).
    pub fn durable_wait(&self) -> std::time::Duration {
        self.durable_wait
    }

    /// Commits in memory; returns where its log record ends, if it wrote one.
    fn commit_or_abort(&mut self) -> Result<Option<u64>> {
        if self.state == State::Prepared {
            return self.commit_prepared_in_memory();
        }
        self.check_active()?;
        // Nothing becomes visible that the log cannot keep (a read-only commit goes on).
        if self
            .engine
            .log
            .as_ref()
            .is_some_and(|l| l.stopped().is_some())
            && self.buf.ws.entries().iter().any(|e| e.changes_anything())
        {
            return Err(self.fail(AbortReason::LogStopped));
        }
        // Lock waits park, so they come before the region.
        self.lock_for_commit()?;
        let region = NoPreemptGuard::new();
        // From here on nobody takes this transaction's locks away (two-phase locking).
        self.enter_commit()?;
        if !self.buf.ws.entries().iter().any(|e| e.changes_anything()) {
            // A read-only transaction read one consistent snapshot, and every transaction that
            // committed before it is serialized before it: nothing to validate.
            self.finish(State::Committed);
            return Ok(None);
        }
        // The log record is built as the writes are installed: each write's after-image is
        // taken against the version it replaces (see `install_entry`).
        let mut record = self
            .engine
            .log
            .as_ref()
            .map(|_| std::mem::take(&mut self.buf.log_record));
        // Install the writes before drawing the timestamp: a snapshot taken after the timestamp
        // must find every one of them (pending, hence waited for), never the version below.
        let epoch = EpochGuard::enter();
        let installed = self.install_all(&epoch, record.as_mut().map(CommitEncoder::begin));
        if let Err(reason) = installed {
            self.buf.log_record = record.unwrap_or_default();
            return Err(self.fail_commit(epoch, reason));
        }
        // A record the log cannot take (recovery would read its frame as damage) is refused
        // before any of its versions is visible: never acknowledged, then lost.
        if let (Some(log), Some(r)) = (&self.engine.log, &record)
            && log.too_long(r.len())
        {
            self.buf.log_record = record.unwrap_or_default();
            return Err(self.fail_commit(epoch, AbortReason::TooLarge));
        }
        let txns = &self.engine.txns;
        if let Some(log) = &self.engine.log {
            // Until its record is appended, the log knows commits from here on may be missing
            // from it (see `Transaction::wait_reads_durable`).
            log.unlogged(self.lease.slot, txns.now() + 1);
        }
        let ts = txns.start_commit(&self.lease);
        if (self.serializable() || self.validating) && !self.validate(ts) {
            if let Some(log) = &self.engine.log {
                log.logged(self.lease.slot);
            }
            self.buf.log_record = record.unwrap_or_default();
            return Err(self.fail_commit(epoch, AbortReason::Validation));
        }
        // Logged before any of its versions becomes visible, so that whoever reads or overwrites
        // them logs after it (see `log::recovery` on replay order).
        let lsn = match (&self.engine.log, record.as_mut()) {
            (Some(log), Some(record)) => {
                seal(record, ts);
                Some(log.append(record, Some((ts, self.lease.slot)), &region))
            }
            _ => None,
        };
        if let Some(record) = record {
            self.buf.log_record = record;
        }
        self.publish(&region, epoch, ts);
        Ok(lsn)
    }

    /// Stamps the installed writes with commit timestamp `ts`, queues what they made obsolete,
    /// and ends the transaction committed (inside the commit's `region`).
    pub(super) fn publish(&mut self, region: &NoPreemptGuard, epoch: EpochGuard, ts: u64) {
        let txns = &self.engine.txns;
        let guard = epoch.guard();
        let (catalog, me) = (&self.engine.catalog, self.lease.stamp);
        let (writes, stale) = (&self.buf.writes, &mut self.buf.stale_keys);
        self.engine
            .collector
            .retire(self.lease.slot, region, |queue| {
                for w in writes {
                    if let Some(item) = stamp_record(catalog, w, me, ts, guard) {
                        queue.push_back(item);
                    }
                }
                for s in stale.drain(..) {
                    queue.push_back(Retired::StaleKey {
                        table: s.table,
                        index: s.index,
                        key: s.key,
                        oid: s.oid,
                        ts,
                    });
                }
            });
        txns.set_outcome(&self.lease, true);
        // A long reader (a paused analytic query) holds the watermark back: what this commit
        // wrote may now sit on versions nobody can see.
        let mut live = None;
        let unseen: u64 = self
            .buf
            .writes
            .iter()
            .map(|w| gc::prune_unseen(catalog.recorded(w.table), w.oid, txns, &mut live, guard))
            .sum();
        self.engine
            .collector
            .note_reclaimed(self.lease.slot, unseen);
        drop(epoch);
        let budget = GC_ITEMS_BASE + GC_ITEMS_PER_WRITE * self.buf.writes.len();
        let (collector, catalog) = (&self.engine.collector, &self.engine.catalog);
        collector.drain_slot(txns, catalog, self.lease.slot, budget, true);
        collector.help_drain(txns, catalog, self.lease.slot, budget);
        self.finish(State::Committed);
    }

    /// Ends a commit that cannot succeed: undoes what it installed.
    pub(super) fn fail_commit(&mut self, epoch: EpochGuard, reason: AbortReason) -> Error {
        drop(epoch);
        self.undo();
        self.finish(State::Aborted(Some(reason)));
        Error::Aborted(reason)
    }

    /// Rolls back (no effect if the transaction already ended). Later calls report
    /// [`Error::NotActive`].
    pub fn abort(&mut self) {
        self.end_aborted(None);
    }

    /// Rolls back if still active, remembering why.
    pub(super) fn end_aborted(&mut self, reason: Option<AbortReason>) {
        if self.state != State::Active {
            return;
        }
        let _region = NoPreemptGuard::new();
        self.undo();
        self.finish(State::Aborted(reason));
    }

    /// Unlinks every pending version and removes every index entry this transaction added.
    pub(super) fn undo(&mut self) {
        let txns = &self.engine.txns;
        txns.set_outcome(&self.lease, false);
        let epoch = EpochGuard::enter();
        let guard = epoch.guard();
        let catalog = &self.engine.catalog;
        let mut uncovered = Vec::new();
        for w in self.buf.writes.iter().rev() {
            let slot = catalog.recorded(w.table).records.slot(w.oid);
            loop {
                let head = slot.load(Ordering::Acquire, guard);
                let Some(v) = head.as_ref() else { break };
                let stamp = v.stamp.load(Ordering::Relaxed);
                if stamp != self.lease.stamp {
                    // We wrote over a deleted row: the collector may have met the record while
                    // our version hid the deletion, skipped it and dropped the item. Retire the
                    // record again, or its keys and OID would never go.
                    if v.is_deleted() && is_committed(stamp) && w.kind == WriteKind::Overwrite {
                        uncovered.push(Retired::Deleted {
                            table: w.table,
                            oid: w.oid,
                            ts: stamp,
                        });
                    }
                    break;
                }
                v.stamp.store(ABORTED_STAMP, Ordering::Release);
                // `v.next` stays intact, so readers already on `v` continue down the chain.
                let next = v.next.get_shared(Ordering::Acquire, guard);
                // A record that has no version below ours did not exist before this transaction
                // (an existing record always keeps its newest committed version): it dies.
                let replacement = match next {
                    None => (None, DEAD),
                    next => (next, Tag::None),
                };
                // Only this transaction changes a head that holds its pending version.
                let _ = slot.compare_exchange(
                    head,
                    replacement,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                    guard,
                );
            }
        }
        if !uncovered.is_empty() {
            let region = NoPreemptGuard::new();
            self.engine
                .collector
                .retire(self.lease.slot, &region, |queue| queue.extend(uncovered));
        }
        // Our versions are unlinked: an entry we added or reused is needed only if another
        // version carries its key (an older one, or a writer of the record that found our entry
        // and reused it once our versions were gone).
        for k in self.buf.new_keys.drain(..).rev() {
            let table = catalog.recorded(k.table);
            gc::remove_uncarried(table, k.index, k.key.as_slice(), k.oid, guard);
        }
        let now = txns.now();
        for w in &self.buf.writes {
            if w.kind == WriteKind::FreshInsert {
                catalog.recorded(w.table).records.release(w.oid, now);
            }
        }
    }

    pub(super) fn finish(&mut self, state: State) {
        self.state = state;
        // OIDs allocated for inserts that were never installed go back at once: nobody saw them.
        self.release_unpublished(self.buf.ws.entries());
        self.return_footprint();
        // One shared read-modify-write per transaction, not one per version.
        if self.versions_created > 0 {
            self.engine
                .txns
                .add_created(&self.lease, self.versions_created);
        }
        if state == State::Committed {
            // Before the locks go: a writer let in by them must find the table replaced.
            for (table, mode) in &self.table_locks {
                if *mode == crate::txn::TableLock::Rebuild {
                    self.engine.catalog.recorded(*table).mark_replaced();
                }
            }
        }
        // Only now that every version is stamped or undone may a waiter read the records.
        self.release_locks();
        self.engine.txns.end(&self.lease);
    }

    /// True if nothing this transaction read or scanned was changed by a transaction that committed
    /// after its snapshot and before `ts`.
    pub(super) fn validate(&mut self, ts: u64) -> bool {
        let txns = &self.engine.txns;
        let (me, snapshot) = (self.lease.stamp, self.lease.snapshot);
        let epoch = EpochGuard::enter();
        let guard = epoch.guard();
        let catalog = &self.engine.catalog;
        let unchanged = |table: &crate::catalog::table::Table, oid, guard: &Guard| {
            txns.unchanged_between(table.records.slot(oid), me, snapshot, ts, guard)
        };
        if !self
            .buf
            .reads
            .iter()
            .all(|&(t, oid)| unchanged(catalog.recorded(t), oid, guard))
        {
            return false;
        }
        // The footprint's scan batch, kept across the slot's transactions: no allocation here.
        let Footprint {
            scans,
            scan_keys,
            scan_leaves,
            scan_oids,
            batch,
            ..
        } = &mut self.buf;
        let bytes = |b: Bound<(u32, u32)>| {
            b.map(|(start, len)| &scan_keys[start as usize..(start + len) as usize])
        };
        let span = |(start, end): (u32, u32)| start as usize..end as usize;
        scans.iter().all(|range| {
            let table = catalog.recorded(range.table);
            let tree = table.tree(range.index);
            // Leaves unchanged since the scan: the range's entries are the ones it saw. (A
            // scan that read no leaf proves nothing that way.)
            if let Some(seen) = range.seen
                && seen.leaves.0 < seen.leaves.1
                && scan_leaves[span(seen.leaves)]
                    .iter()
                    .all(|&leaf| tree.unchanged_since(leaf))
            {
                return scan_oids[span(seen.oids)]
                    .iter()
                    .all(|&oid| unchanged(table, oid, guard));
            }
            let bounds = (bytes(range.lower), bytes(range.upper));
            tree.visit(bounds, batch, |_, oid| unchanged(table, oid, guard))
        })
    }
}

/// Stamps the versions transaction `me` wrote to `w`'s record with `ts`, and says what the
/// record's final state makes obsolete. A record written several times is stamped at its first
/// write entry (`None` for the others); what it retires follows from its head, whatever the
/// writes were: a deletion marker retires the record, an older version below is superseded.
fn stamp_record(catalog: &Catalog, w: &Write, me: u64, ts: u64, guard: &Guard) -> Option<Retired> {
    let head = catalog.recorded(w.table).records.slot(w.oid);
    let newest = head.load(Ordering::Acquire, guard).as_ref()?;
    let mut stamped = false;
    for v in Chain::from(Some(newest), guard).take_while(|v| v.stamp.load(Ordering::Relaxed) == me)
    {
        v.stamp.store(ts, Ordering::Release);
        stamped = true;
    }
    if !stamped {
        return None;
    }
    let (table, oid) = (w.table, w.oid);
    if newest.is_deleted() {
        Some(Retired::Deleted { table, oid, ts })
    } else if newest.older(guard).is_some() {
        Some(Retired::Superseded { table, oid, ts })
    } else {
        None
    }
}
