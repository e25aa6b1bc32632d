//! Transactions: the only way to read or write a table.
//!
//! A transaction reads a snapshot taken when it began, sees its own writes, and takes no locks to
//! read. Writes are buffered in the transaction (`writeset`) and installed only inside its
//! non-preemptible commit, where the first committer of a record wins and a later one aborts with
//! a conflict. So a paused transaction, reader or writer, holds nothing anyone could wait for: an
//! urgent transaction always gets through, and the paused one pays by aborting if it lost. At commit
//! a serializable transaction also re-checks everything it read and every range it scanned
//! (phantoms included) against the commits that happened since its snapshot.
//!
//! Every step that must not be paused half-way (index calls, epoch enter/exit, OID and timestamp
//! allocation, commit, rollback) runs inside a non-preemptible region; reading rows and running the
//! caller's closures does not, so a preemption can land anywhere in them.
//!
//! Every record access (a point read, each row a scan visits, each write) is a poll point of the
//! runtime's preemption flag: one thread-local load when no request is pending.
//!
//! A `Transaction` that is dropped while active rolls back.
//!
//! Parts: `shared` (the state of one open database that its transactions work on), `writeset`
//! and `footprint` (what a transaction wrote, read and scanned), `prefetched` (rows it looked up
//! ahead), `install` and `commit` (ending it), `locking` (its side of two-phase locking), `scan`
//! and `write` (its operations), `savepoint` (rolling its writes back to a point without ending
//! it), `snapshot_rows` (what a checkpoint reads).

mod commit;
pub(crate) mod footprint;
mod install;
mod located;
mod locking;
pub(crate) use locking::describe_locks;
pub(crate) mod prefetched;
mod savepoint;
mod scan;
pub(crate) mod shared;
mod snapshot_rows;
pub(crate) mod two_phase;
mod write;
pub(crate) mod writeset;

pub use located::RecordId;
pub use locking::{KeyLock, LockStats, TableLock};
pub use savepoint::Savepoint;
pub use two_phase::InDoubt;

use overtake_runtime::preempt::record_access;
use std::ops::{Bound, ControlFlow};

use overtake_priority::Priority;

use crate::catalog::table::{IndexId, IndexRef, Table, TableId};
use crate::error::{AbortReason, Error, Result};
use crate::index::LeafHint;
use crate::lock::LockMode;
use crate::mvcc::epoch::EpochGuard;
use crate::mvcc::{Lease, Reader};
use crate::storage::key::{KeyBuf, KeyRange};
use crate::storage::record::{Oid, Version};
use crate::storage::row::RowRef;
use crate::txn::footprint::{Footprint, ScannedRange, SeenEntries};
use crate::txn::shared::Engine;

/// Isolation level.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Isolation {
    /// PostgreSQL's default: each statement reads a fresh snapshot (the caller marks statements
    /// with [`Transaction::next_statement`]), and a write to an existing row first takes the row's
    /// write lock through the lock manager, then reads the newest committed version of the row, so
    /// two transactions updating one row wait for each other instead of one failing. The lock is
    /// held until the transaction ends and may be revoked by the lock policy
    /// ([`Options::row_lock_policy`](crate::Options::row_lock_policy)). Reads take no locks.
    /// Under two-phase locking it is serializable like every other level.
    ReadCommitted,
    /// Snapshot isolation: reads see the snapshot at begin; concurrent writers of the same record
    /// conflict (first updater wins). Allows write skew.
    Snapshot,
    /// Serializable: snapshot isolation plus commit-time validation of reads and scanned ranges.
    Serializable,
}

/// Options for scans.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ScanOptions {
    /// Stop after this many rows.
    pub limit: Option<usize>,
    /// Walk the range from its upper end down.
    pub reverse: bool,
    /// Validate what the scan saw at commit whatever the isolation level: the commit fails
    /// (`AbortReason::Validation`) if a transaction committed a change to the range after this
    /// one's snapshot. Serializable isolation validates every scan anyway.
    pub validate: bool,
}

impl ScanOptions {
    /// Forward, no limit.
    pub fn forward() -> Self {
        ScanOptions::default()
    }

    /// Reverse, no limit.
    pub fn reverse() -> Self {
        ScanOptions {
            reverse: true,
            ..ScanOptions::default()
        }
    }

    /// The same options, validated at commit (see [`validate`](Self::validate)).
    pub fn validated(mut self) -> Self {
        self.validate = true;
        self
    }

    /// The same options with a row limit.
    pub fn limit(mut self, n: usize) -> Self {
        self.limit = Some(n);
        self
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Active,
    Committed,
    /// Prepared for two-phase commit (see `two_phase`): it takes no statements, only its
    /// commit or rollback.
    Prepared,
    /// Ended by [`Transaction::abort`] (`None`), or by the abort that is reported again to any
    /// later call.
    Aborted(Option<AbortReason>),
}

/// Rows per index batch in scans. Each batch is one short non-preemptible region.
const SCAN_BATCH: usize = 64;

/// Bytes of a row [`Transaction::prefetch_row_starts`] loads: one cache line.
const ROW_START: usize = 64;

/// A transaction. Created by [`Database::begin`](crate::Database::begin); ends with [`commit`](Self::commit),
/// [`abort`](Self::abort), or when dropped (which rolls back).
pub struct Transaction<'db> {
    engine: &'db Engine,
    lease: Lease,
    priority: Priority,
    isolation: Isolation,
    state: State,
    buf: Footprint,
    /// A promoted attempt: reserves the records it writes as it goes (see `Database::run`).
    reserving: bool,
    /// Its lock-manager handle, when the database uses two-phase locking (`locking`).
    locker: Option<locking::Locker<'db>>,
    /// Two-phase locking: reads lock too, and read the newest committed version. (READ COMMITTED
    /// in an MVCC database has a locker for its writes only.)
    two_phase: bool,
    /// Whether writes take row locks: the locker was there from the start (two-phase locking,
    /// READ COMMITTED). A locker made later for table locks alone leaves rows unlocked.
    locks_rows: bool,
    /// The table locks it holds, so that a statement asking again does not go to the manager.
    table_locks: Vec<(TableId, TableLock)>,
    /// A scan asked to be validated at commit (see `ScanOptions::validate`).
    validating: bool,
    /// How long one lock wait may last (see `set_lock_timeout`), for a locker made later.
    lock_limit: Option<std::time::Duration>,
    /// What ends its lock waits (see `set_interrupt`), for a locker made later.
    lock_interrupt: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
    /// Versions it installed, added to its slot's counter once, when it ends.
    versions_created: u64,
    /// From the end of its commit region until its log record was durable (zero without a
    /// `sync` log).
    durable_wait: std::time::Duration,
    /// The newest commit timestamp among the versions of other transactions it has read (see
    /// [`wait_reads_durable`](Self::wait_reads_durable)): its slot's mark in the engine, written
    /// only by this transaction.
    read_ts: &'db std::sync::atomic::AtomicU64,
    /// Its global identifier, once prepared for two-phase commit.
    prepared_as: Option<String>,
}

/// What a transaction has read so far, apart from the transaction: a statement that sends rows
/// while its scan runs (which holds the transaction) waits on it before each batch leaves.
/// Valid while its transaction lives (it reads the transaction slot's mark).
#[derive(Clone, Copy)]
pub struct Reads<'db> {
    mark: &'db std::sync::atomic::AtomicU64,
    log: Option<&'db crate::log::Log>,
    urgent: bool,
}

impl Reads<'_> {
    /// Waits until everything the transaction has read so far is durable (see
    /// [`Transaction::wait_reads_durable`]). Must not be called inside a region (it parks).
    pub fn wait_durable(&self) -> std::result::Result<std::time::Duration, String> {
        let read = self.mark.load(std::sync::atomic::Ordering::Relaxed);
        match self.log {
            Some(log) => log.wait_through(read, self.urgent),
            None => Ok(std::time::Duration::ZERO),
        }
    }

    /// What an answer showing what the transaction read so far waits for (see
    /// [`Transaction::commit_pipelined`]).
    pub fn acknowledgement(&self) -> crate::log::Acknowledgement {
        let read = self.mark.load(std::sync::atomic::Ordering::Relaxed);
        match self.log {
            Some(log) => log.ticket_through(read, self.urgent),
            None => crate::log::Acknowledgement::immediate(),
        }
    }
}

/// When a transaction joins the lock manager (if it locks at all: two-phase locking, or READ
/// COMMITTED's row locks).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Joins {
    /// At its begin, as begun the given-th (`None`: the youngest yet).
    AtBegin(Option<u64>),
    /// When it first takes a lock, as the youngest then (a reader, over MVCC only).
    WhenItLocks,
}

impl<'db> Transaction<'db> {
    pub(crate) fn new(
        engine: &'db Engine,
        lease: Lease,
        (priority, isolation): (Priority, Isolation),
        joins: Joins,
    ) -> Self {
        let (locker, locks_rows) = match joins {
            Joins::AtBegin(age) => {
                let locker = Self::register_locker(engine, lease.stamp, (priority, isolation), age);
                let locks = locker.is_some();
                (locker, locks)
            }
            Joins::WhenItLocks => (None, isolation == Isolation::ReadCommitted),
        };
        let read_ts = &*engine.read_marks[lease.slot];
        read_ts.store(0, std::sync::atomic::Ordering::Relaxed);
        Transaction {
            buf: engine.footprints.take(lease.slot),
            locks_rows,
            locker,
            table_locks: Vec::new(),
            validating: false,
            lock_limit: None,
            lock_interrupt: None,
            two_phase: engine.locks.is_some(),
            engine,
            lease,
            priority,
            isolation,
            state: State::Active,
            reserving: false,
            versions_created: 0,
            durable_wait: std::time::Duration::ZERO,
            read_ts,
            prepared_as: None,
        }
    }

    /// Hands the footprint back to the slot's pool (before the slot is released).
    fn return_footprint(&mut self) {
        let footprint = std::mem::take(&mut self.buf);
        self.engine.footprints.give_back(self.lease.slot, footprint);
    }

    /// Records a scanned range for validation, copying its bounds into the key arena.
    fn note_range(
        &mut self,
        table: &Table,
        index: IndexRef,
        (lower, upper): (Bound<&[u8]>, Bound<&[u8]>),
        seen: Option<SeenEntries>,
    ) {
        let mut stash = |b: Bound<&[u8]>| {
            b.map(|key| {
                let start = self.buf.scan_keys.len() as u32;
                self.buf.scan_keys.extend_from_slice(key);
                (start, key.len() as u32)
            })
        };
        let (lower, upper) = (stash(lower), stash(upper));
        self.buf.scans.push(ScannedRange {
            table: table.id(),
            index,
            lower,
            upper,
            seen,
        });
    }

    /// Makes this transaction reserve every existing record it writes at the write (see
    /// `Database::run`). The caller must keep it inside a non-preemptible region until it ends.
    pub(crate) fn reserve_writes(&mut self) {
        self.reserving = true;
    }

    /// The priority given at begin.
    pub fn priority(&self) -> Priority {
        self.priority
    }

    /// The isolation level given at begin.
    pub fn isolation(&self) -> Isolation {
        self.isolation
    }

    /// The commit timestamp of the snapshot this transaction reads.
    pub fn snapshot(&self) -> u64 {
        self.lease.snapshot
    }

    /// True until the transaction commits or aborts.
    pub fn is_active(&self) -> bool {
        self.state == State::Active
    }

    /// `Ok` while active. A transaction that a conflict, a failed validation or a rollback
    /// ended keeps reporting that abort (so a caller that only checks `commit` still learns why
    /// and whether to retry); one that committed or was aborted by [`abort`](Self::abort) reports
    /// [`Error::NotActive`].
    fn check_active(&self) -> Result<()> {
        match self.state {
            State::Active => Ok(()),
            State::Aborted(Some(reason)) => Err(Error::Aborted(reason)),
            State::Committed | State::Prepared | State::Aborted(None) => Err(Error::NotActive),
        }
    }

    /// Checks that the transaction is active and `table` belongs to its database.
    fn check(&mut self, table: &Table) -> Result<()> {
        self.check_active()?;
        if table.database() != self.engine.id {
            return Err(Error::ForeignTable(table.name().to_owned()));
        }
        self.check_revoked()
    }

    fn reader(&self) -> Reader {
        Reader {
            snapshot: self.read_snapshot(),
            me: self.lease.stamp,
        }
    }

    /// True if reads and scans are to be validated at commit: serializable isolation without
    /// locks (under two-phase locking the locks keep them valid).
    fn serializable(&self) -> bool {
        self.isolation == Isolation::Serializable && !self.two_phase
    }

    fn note_read(&mut self, table: &Table, oid: Oid) {
        if self.serializable() {
            self.buf.reads.push((table.id(), oid));
        }
    }

    /// A point access that found no visible row: under serializable isolation the absence itself
    /// is what must still hold at commit. It is recorded by key, not by the record the key mapped
    /// to (if any): by commit time the key may map to another record (the one it mapped to was an
    /// aborted insert, or a deleted row whose entry the collector removed). A miss on this
    /// transaction's own deletion counts too: the row may have been its own insert, which
    /// succeeded only because the key was free in the snapshot, and that must still hold at
    /// commit although the insert left nothing to install.
    fn note_miss(&mut self, table: &Table, key: &KeyBuf) {
        if self.serializable() {
            let key = key.as_bytes();
            let point = (Bound::Included(key), Bound::Included(key));
            self.note_range(table, IndexRef::Primary, point, None);
        }
    }

    fn visible<'g>(&self, table: &Table, oid: Oid, guard: &'g sdd::Guard) -> Option<&'g Version> {
        let v = self
            .engine
            .txns
            .visible(table.records.slot(oid), self.reader(), guard)?;
        Self::note_read_ts(self.read_ts, &self.lease, v);
        Some(v)
    }

    /// Remembers in `read_ts` that the transaction holding `lease` read `v`: a version another
    /// transaction committed, at its timestamp, or at the snapshot if the stamp was still being
    /// settled. (A function of the two fields, not of `self`: scans hold other fields.)
    #[inline]
    pub(super) fn note_read_ts(read_ts: &std::sync::atomic::AtomicU64, lease: &Lease, v: &Version) {
        let stamp = v.stamp.load(std::sync::atomic::Ordering::Relaxed);
        let ts = if crate::mvcc::is_committed(stamp) {
            stamp
        } else if stamp == lease.stamp {
            return;
        } else {
            lease.snapshot
        };
        // Only this transaction writes its mark: a relaxed load and store, no read-modify-write.
        if ts > read_ts.load(std::sync::atomic::Ordering::Relaxed) {
            read_ts.store(ts, std::sync::atomic::Ordering::Relaxed);
        }
    }

    /// Waits until everything it has read is durable, in a database with a `sync` log (at once
    /// elsewhere): call it before an answer that shows what it read leaves, so that no answer
    /// shows a commit a crash could still take back. A read-only commit does it itself; a
    /// writing one waits for its own record, which the log holds after everything it read.
    /// Returns how long it waited, or why the log cannot make those commits durable. Must not
    /// be called inside a region (it parks).
    pub fn wait_reads_durable(&self) -> std::result::Result<std::time::Duration, String> {
        self.reads().wait_durable()
    }

    /// What it has read, to wait on apart from the transaction (see [`Reads`]).
    pub fn reads(&self) -> Reads<'db> {
        Reads {
            mark: self.read_ts,
            log: self.engine.log.as_ref(),
            urgent: self.priority > Priority::LOW,
        }
    }

    /// Reads the row with primary key `key`, passing it to `read`, whose result is returned.
    /// `Ok(None)` if there is no such row in this transaction's snapshot.
    pub fn get<R>(
        &mut self,
        table: &Table,
        key: &KeyBuf,
        read: impl FnOnce(RowRef<'_>) -> R,
    ) -> Result<Option<R>> {
        self.get_located(table, key, |row, _| read(row))
    }

    /// [`get`](Self::get), also telling `read` the row's [`RecordId`].
    pub fn get_located<R>(
        &mut self,
        table: &Table,
        key: &KeyBuf,
        read: impl FnOnce(RowRef<'_>, RecordId) -> R,
    ) -> Result<Option<R>> {
        self.check(table)?;
        record_access();
        if let Some(i) = self.buf.ws.by_key(table.id(), key.as_bytes()) {
            // Written by this transaction: its own row, or its own deletion.
            let entry = self.buf.ws.get(i);
            return Ok(match &entry.row {
                Some(row) => Some(read(table.row(row), RecordId(entry.oid))),
                None => {
                    self.note_miss(table, key);
                    None
                }
            });
        }
        if self.two_phase {
            self.lock_primary(table, key.as_bytes(), LockMode::Shared)?;
        }
        let epoch = EpochGuard::enter();
        let guard = epoch.guard();
        let key_bytes = key.as_bytes();
        // A record the point cache names is the key's if its row visible here carries the key;
        // anything else is asked of the index (and a record found there is remembered).
        let cached = table.cached_record(key_bytes, guard).and_then(|oid| {
            let version = self.visible(table, oid, guard)?;
            table
                .carries_primary_key(&version.row, key_bytes)
                .then_some((oid, version))
        });
        let found = cached.or_else(|| {
            let oid = self.find_primary(table, key_bytes).0?;
            table.remember_record(key_bytes, oid, guard);
            let version = self.visible(table, oid, guard)?;
            (!version.is_deleted()).then_some((oid, version))
        });
        let Some((oid, version)) = found else {
            self.check_revoked()?;
            self.note_miss(table, key);
            return Ok(None);
        };
        self.check_revoked()?;
        self.note_read(table, oid);
        Ok(Some(read(table.row(&version.row), RecordId(oid))))
    }

    /// The record primary key `key` maps to in `table`'s index, and where the key is or would go:
    /// what this transaction's prefetch found, if the leaf it was found in has not changed since
    /// (a mapping as good as one looked up now), else a lookup.
    fn find_primary(&mut self, table: &Table, key: &[u8]) -> (Option<Oid>, LeafHint) {
        let index = table.tree(IndexRef::Primary);
        if let Some((oid, hint)) = self.buf.prefetched.find(table.id(), key)
            && index.unchanged_since(hint)
        {
            return (Some(oid), hint);
        }
        index.get_hinted(key)
    }

    /// A hint that the rows named in `rows` (a table and a primary key each) will be read or
    /// written soon: starts loading everything a read of each touches, in stages across all of
    /// them (every index leaf, then every record slot, then every newest version, then every
    /// row stored apart from its version), so that the cache misses of different rows overlap
    /// instead of each row paying its four misses one after another. It also remembers where
    /// each key was found (replacing what an earlier prefetch remembered), so that reading or
    /// writing the row soon after (best in the same order) does not descend the index again
    /// while the leaf is unchanged. Reads nothing the transaction depends on, records nothing
    /// for validation, takes no locks, and is never needed for correctness: a row changed
    /// meanwhile only makes a hint useless. Tables of another database, and calls on an ended
    /// transaction, are ignored.
    pub fn prefetch_rows(&mut self, rows: &[(&Table, &KeyBuf)]) {
        self.prefetch(rows, usize::MAX);
    }

    /// [`prefetch_rows`](Self::prefetch_rows) for reads of a few columns near the start of each
    /// row: loads only the row's first cache line. A long row read that way (a Stock-Level's
    /// stock quantity, in the first line of a ~300-byte row) then costs one line of memory
    /// traffic instead of five, and more rows' misses fit in flight at once.
    pub fn prefetch_row_starts(&mut self, rows: &[(&Table, &KeyBuf)]) {
        self.prefetch(rows, ROW_START);
    }

    /// Prefetches `rows`, loading at most `row_bytes` of each row.
    fn prefetch(&mut self, rows: &[(&Table, &KeyBuf)], row_bytes: usize) {
        if self.state != State::Active {
            return;
        }
        // Only the latest prefetch is remembered: its rows are the ones about to be used.
        self.buf.prefetched.clear();
        // Stages sized to the request: a prefetch of one or two rows (a Payment's customer)
        // should not set up room for 32 (~3.5 KB of stage arrays).
        if rows.len() <= 4 {
            self.prefetch_stage::<4>(rows, row_bytes);
        } else {
            for rows in rows.chunks(32) {
                self.prefetch_stage::<32>(rows, row_bytes);
            }
        }
    }

    /// [`prefetch`](Self::prefetch) for at most `STAGE` rows.
    #[inline(always)]
    fn prefetch_stage<const STAGE: usize>(&mut self, rows: &[(&Table, &KeyBuf)], row_bytes: usize) {
        debug_assert!(rows.len() <= STAGE);
        let epoch = EpochGuard::enter();
        let guard = epoch.guard();
        // Rows the point cache names go straight to their records (the record may turn out
        // not to be the key's: then it was a useless hint, and the read asks the index).
        let mut probes = [None; STAGE];
        for ((table, key), probe) in rows.iter().zip(&mut probes) {
            if table.database() == self.engine.id
                && let Some(buckets) = table.point_cache(guard)
            {
                let p = buckets.probe(key.as_bytes());
                buckets.prefetch(p);
                *probe = Some((buckets, p));
            }
        }
        let mut oids = [None; STAGE];
        for (probe, oid) in probes.iter().zip(&mut oids) {
            *oid = probe.and_then(|(buckets, p)| buckets.get(p));
        }
        // The others descend level by level across all rows: each row's next node is asked
        // for, then the other rows', before it is searched.
        let mut leaves = [None; STAGE];
        for (((table, key), leaf), oid) in rows.iter().zip(&mut leaves).zip(&oids) {
            if table.database() == self.engine.id && oid.is_none() {
                *leaf = table.tree(IndexRef::Primary).prefetch_start(key.as_bytes());
            }
        }
        let mut deeper = true;
        while deeper {
            deeper = false;
            for ((table, _), leaf) in rows.iter().zip(&mut leaves) {
                if let Some(descent) = leaf {
                    deeper |= table.tree(IndexRef::Primary).prefetch_step(descent);
                }
            }
        }
        for (((table, key), leaf), oid) in rows.iter().zip(&leaves).zip(&mut oids) {
            if let Some(cached) = *oid {
                table.records.prefetch_slot(cached);
                continue;
            }
            let Some((found, hint)) = leaf.as_ref().and_then(|leaf| {
                table
                    .tree(IndexRef::Primary)
                    .search_prefetched(leaf, key.as_bytes())
            }) else {
                continue;
            };
            table.records.prefetch_slot(found);
            table.remember_record(key.as_bytes(), found, guard);
            self.buf
                .prefetched
                .remember(table.id(), key.as_bytes(), found, hint);
            *oid = Some(found);
        }
        let mut heads = [None; STAGE];
        for (((table, _), oid), head) in rows.iter().zip(&oids).zip(&mut heads) {
            *head = oid.and_then(|oid| table.records.prefetch_head(oid, guard));
        }
        for version in heads.iter().flatten() {
            version.prefetch_row(row_bytes);
        }
    }

    /// True if a row with primary key `key` exists in this transaction's snapshot.
    pub fn exists(&mut self, table: &Table, key: &KeyBuf) -> Result<bool> {
        Ok(self.get(table, key, |_| ())?.is_some())
    }

    /// Calls `visit` for each row whose primary key is in `range`, in key order (or reverse), until
    /// the limit is reached or `visit` breaks. Returns the number of rows visited.
    pub fn scan(
        &mut self,
        table: &Table,
        range: &KeyRange,
        options: ScanOptions,
        visit: impl FnMut(RowRef<'_>) -> ControlFlow<()>,
    ) -> Result<usize> {
        self.scan_in(table, IndexRef::Primary, range, options, visit)
    }

    /// Like [`scan`](Self::scan), over the secondary index `index` (keys built with
    /// [`Table::index_key`]).
    pub fn scan_index(
        &mut self,
        table: &Table,
        index: IndexId,
        range: &KeyRange,
        options: ScanOptions,
        visit: impl FnMut(RowRef<'_>) -> ControlFlow<()>,
    ) -> Result<usize> {
        self.scan_in(table, IndexRef::Secondary(index.0), range, options, visit)
    }

    /// Aborts because of `reason` and returns the error to propagate.
    fn fail(&mut self, reason: AbortReason) -> Error {
        self.end_aborted(Some(reason));
        Error::Aborted(reason)
    }

    /// Rolls back on the transaction's own initiative (e.g. TPC-C's invalid item) and returns the
    /// error to propagate, which retry policies do not retry.
    pub fn rollback(&mut self) -> Error {
        self.fail(AbortReason::UserRollback)
    }
}

impl Drop for Transaction<'_> {
    fn drop(&mut self) {
        match self.state {
            State::Active => self.abort(),
            State::Prepared => self.let_go_prepared(),
            _ => {}
        }
    }
}
