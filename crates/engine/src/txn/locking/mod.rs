//! The two-phase-locking mode's side of a transaction: which locks each access takes, and the
//! key-range protocol that keeps scans free of phantoms.
//!
//! Under [`Concurrency::TwoPhaseLocking`](crate::Concurrency) a transaction reads the newest
//! committed version of what it has locked (its reader's snapshot is [`LATEST`]), and its buffered
//! writes are installed at commit as in the MVCC mode; what keeps transactions apart is the locks,
//! held until the transaction ends:
//!
//! - A point read takes a shared lock on its primary key, found or not (an insert of that key
//!   takes it exclusive). A write takes an exclusive lock on the primary key before it reads the
//!   row it changes.
//! - A scan locks, shared, every index entry it meets in the range (live or not; for a secondary
//!   index also each row's primary key), and the range's *successor*: the first live entry after
//!   its upper end (or the index's supremum). Entries are locked in batches and re-fetched after
//!   locking: a batch that changed meanwhile is locked again, so no insert that slipped in before
//!   a lock was granted is missed.
//! - A new index entry (an insert, or an update that moves a row in a secondary index) is locked
//!   exclusive, with every entry after it up to and including the first live one (the *gap
//!   chain*), before the commit's non-preemptible region. A scanner holds either an entry of that
//!   chain (the entry lies in its range) or its range's successor, which is the chain's end.
//!
//! Locks are named by a hash of the key within a per-index space: two keys that collide only make
//! two transactions wait for each other needlessly, never let a conflict through.
//!
//! Lock waits park the task, so no lock is ever requested inside a non-preemptible region (park
//! refuses to), and no region or latch is held across one.

use std::ops::Bound;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use crate::catalog::table::{IndexRef, Table};
use crate::error::AbortReason;
use crate::index::{OrderedIndex, ScanBatch};
use crate::lock::{LockAbort, LockManager, LockMode, LockName, Revocation, TxnId};
use crate::mvcc::epoch::EpochGuard;
use crate::mvcc::{PENDING, Reader, TxnTable};
use crate::storage::key::KeyBuf;
use crate::storage::record::{Chain, Oid};

mod names;
mod transaction;

pub(crate) use names::describe_locks;
pub use names::{KeyLock, TableLock};
use names::{key_lock, supremum};

/// The reader snapshot of a locking transaction: newer than every commit, so it reads the newest
/// committed version (which its lock keeps from changing).
pub(crate) const LATEST: u64 = PENDING - 1;

/// The lock waits of a transaction (or of the attempts of [`Database::run`](crate::Database::run)):
/// POW's statistics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct LockStats {
    /// Lock requests that had to wait.
    pub waits: u32,
    /// Time from those requests to their grants (QueueTime), summed.
    pub queue: Duration,
    /// Time from those requests until the transactions holding the lock when each was made had
    /// released it (WaitExcess), summed; `queue - excess` is the WaitRemainder, the wait caused
    /// by transactions granted ahead.
    pub excess: Duration,
}

impl LockStats {
    /// Adds `other`'s waits to these.
    pub fn add(&mut self, other: &LockStats) {
        self.waits += other.waits;
        self.queue += other.queue;
        self.excess += other.excess;
    }
}

impl From<LockAbort> for AbortReason {
    fn from(abort: LockAbort) -> Self {
        match abort {
            LockAbort::Deadlock => AbortReason::Deadlock,
            LockAbort::Preempted => AbortReason::Preempted,
            LockAbort::WaitDepth => AbortReason::WaitDepth,
            LockAbort::Timeout => AbortReason::LockTimeout,
            LockAbort::Interrupted => AbortReason::Interrupted,
        }
    }
}

/// A transaction's handle on the lock manager: what the locking helpers need without borrowing the
/// whole transaction (scans hold its write set meanwhile).
pub(super) struct Locker<'a> {
    manager: &'a LockManager,
    txns: &'a TxnTable,
    id: TxnId,
    /// Its place in the begin order (see `lock_age`).
    began: u64,
    /// Whether the lock manager has taken its locks away (see `lock::revocation`).
    revocation: Arc<Revocation>,
    /// The holders to wait out before a retry (see `LockManager::restart_after`).
    restart_after: Vec<TxnId>,
    stats: LockStats,
    /// How long one lock wait may last (see `Transaction::set_lock_timeout`).
    limit: Option<Duration>,
    /// Set to end its lock waits (see `Transaction::set_interrupt`).
    interrupt: Option<Arc<AtomicBool>>,
    /// Scratch reused by every locked scan batch: the re-fetch, and the names to lock.
    check: ScanBatch,
    names: Vec<LockName>,
}

/// The bound just past `upper`, where a range's successor is looked for.
fn after(upper: Bound<&[u8]>) -> Option<Bound<&[u8]>> {
    match upper {
        Bound::Included(k) => Some(Bound::Excluded(k)),
        Bound::Excluded(k) => Some(Bound::Included(k)),
        Bound::Unbounded => None,
    }
}

impl<'a> Locker<'a> {
    pub(super) fn new(
        manager: &'a LockManager,
        txns: &'a TxnTable,
        id: TxnId,
        (began, revocation): (u64, Arc<Revocation>),
    ) -> Self {
        Locker {
            manager,
            txns,
            id,
            began,
            revocation,
            restart_after: Vec::new(),
            stats: LockStats::default(),
            limit: None,
            interrupt: None,
            check: ScanBatch::default(),
            names: Vec::new(),
        }
    }

    /// The waits this locker recorded.
    pub(super) fn stats(&self) -> LockStats {
        self.stats
    }

    /// Why the lock manager took this transaction's locks away, if it did. Called after reading
    /// a row and before handing it on: the load is ordered after the read (see
    /// `lock::revocation`).
    pub(super) fn revoked(&self) -> Option<LockAbort> {
        self.revocation.revoked()
    }

    /// The shared revocation state (a scan keeps it while its locker is borrowed).
    pub(super) fn revocation(&self) -> Arc<Revocation> {
        Arc::clone(&self.revocation)
    }

    fn acquire(&mut self, name: LockName, mode: LockMode) -> Result<(), LockAbort> {
        let acquired =
            self.manager
                .acquire_within(self.id, name, mode, self.limit, self.interrupt.as_deref());
        if matches!(acquired, Err(LockAbort::WaitDepth)) {
            self.restart_after = self.manager.restart_after(self.id);
        }
        if let Some(waited) = acquired? {
            self.stats.waits += 1;
            self.stats.queue += waited.queue;
            self.stats.excess += waited.excess;
        }
        Ok(())
    }

    /// Locks `key` of `index` in `mode`.
    pub(super) fn lock_key(
        &mut self,
        table: &Table,
        index: IndexRef,
        key: &[u8],
        mode: LockMode,
    ) -> Result<(), LockAbort> {
        self.acquire(key_lock(table, index, key), mode)
    }

    /// Locks `key` of `index` exclusively if that needs no wait; false if it would.
    pub(super) fn try_lock_key(
        &mut self,
        table: &Table,
        index: IndexRef,
        key: &[u8],
    ) -> Result<bool, LockAbort> {
        self.manager
            .try_acquire(self.id, key_lock(table, index, key), LockMode::Exclusive)
    }

    /// Fetches up to `want` entries of `bounds` into `batch` (as `OrderedIndex::fetch_batch`)
    /// and locks them shared, returning once a fetch after locking found the same entries. With
    /// `successor`, a batch that reaches the end of the range also locks the range's successor
    /// (`upper` is the range's own upper end) before that last fetch.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn fetch_locked(
        &mut self,
        table: &Table,
        index: IndexRef,
        bounds: (Bound<&[u8]>, Bound<&[u8]>),
        reverse: bool,
        want: usize,
        batch: &mut ScanBatch,
        successor: Option<Bound<&[u8]>>,
    ) -> Result<(), LockAbort> {
        let tree = table.tree(index);
        let mut check = std::mem::take(&mut self.check);
        let mut names = std::mem::take(&mut self.names);
        let mut successor_locked = false;
        tree.fetch_batch(bounds, reverse, want, batch);
        let result = loop {
            entry_locks(table, index, batch, &mut names);
            if let Err(abort) = names
                .iter()
                .try_for_each(|&n| self.acquire(n, LockMode::Shared))
            {
                break Err(abort);
            }
            if let Some(upper) = successor
                && batch.len() < want
                && !successor_locked
            {
                if let Err(abort) = self.lock_successor(table, index, upper) {
                    break Err(abort);
                }
                successor_locked = true;
            }
            tree.fetch_batch(bounds, reverse, want, &mut check);
            if same_entries(batch, &check) {
                break Ok(());
            }
            std::mem::swap(batch, &mut check);
        };
        (self.check, self.names) = (check, names);
        result
    }

    /// Locks, shared, the first live entry of `index` after `upper` (or the supremum), checking
    /// after the lock is granted that it still is the first.
    pub(super) fn lock_successor(
        &mut self,
        table: &Table,
        index: IndexRef,
        upper: Bound<&[u8]>,
    ) -> Result<(), LockAbort> {
        let mut locked: Option<Vec<LockName>> = None;
        loop {
            let first = first_live_after(self.txns, table, index, upper);
            if locked.as_ref() == Some(&first) {
                return Ok(());
            }
            for &name in &first {
                self.acquire(name, LockMode::Shared)?;
            }
            locked = Some(first);
        }
    }

    /// Locks, exclusive, the new entry `key` of `index` and its gap chain (every entry after it up
    /// to the first live one, or the supremum), until the chain found after locking is one it
    /// holds.
    fn lock_new_entry(
        &mut self,
        table: &Table,
        index: IndexRef,
        key: &[u8],
    ) -> Result<(), LockAbort> {
        self.acquire(key_lock(table, index, key), LockMode::Exclusive)?;
        let mut held: Vec<LockName> = Vec::new();
        loop {
            let chain = gap_chain(self.txns, table, index, key);
            if chain.iter().all(|n| held.contains(n)) {
                return Ok(());
            }
            for name in chain {
                if !held.contains(&name) {
                    self.acquire(name, LockMode::Exclusive)?;
                    held.push(name);
                }
            }
        }
    }
}

fn same_entries(a: &ScanBatch, b: &ScanBatch) -> bool {
    a.len() == b.len() && (0..a.len()).all(|i| a.key(i) == b.key(i) && a.oid(i) == b.oid(i))
}

/// Sets `names` to the locks standing for the entries of `batch` (see `push_entry_locks`).
fn entry_locks(table: &Table, index: IndexRef, batch: &ScanBatch, names: &mut Vec<LockName>) {
    names.clear();
    if index == IndexRef::Primary {
        names.extend((0..batch.len()).map(|i| key_lock(table, index, batch.key(i))));
        return;
    }
    let epoch = EpochGuard::enter();
    for i in 0..batch.len() {
        push_entry_locks(
            names,
            (table, index),
            batch.key(i),
            batch.oid(i),
            epoch.guard(),
        );
    }
}

/// Pushes the locks of one entry: its key in its index and, in a secondary index, its row's
/// primary key (what writers of the row lock).
fn push_entry_locks(
    names: &mut Vec<LockName>,
    (table, index): (&Table, IndexRef),
    key: &[u8],
    oid: Oid,
    guard: &sdd::Guard,
) {
    names.push(key_lock(table, index, key));
    if index != IndexRef::Primary
        && let Some(pk) = record_primary_key(table, oid, guard)
    {
        names.push(key_lock(table, IndexRef::Primary, pk.as_bytes()));
    }
}

/// The primary key of record `oid`, from any version that has a row (a record's primary key
/// never changes); `None` for a record with none left.
fn record_primary_key(table: &Table, oid: Oid, guard: &sdd::Guard) -> Option<KeyBuf> {
    let v = Chain::at(table.records.slot(oid), guard).find(|v| !v.is_deleted())?;
    Some(table.primary_key(&table.row(&v.row), oid))
}

/// True if the entry `key` -> `oid` of `index` holds a live row: the record's newest committed
/// version is a row, which (in a secondary index) still has that key.
fn is_live(
    txns: &TxnTable,
    (table, index): (&Table, IndexRef),
    key: &[u8],
    oid: Oid,
    guard: &sdd::Guard,
) -> bool {
    // `me` matches no stamp: only committed versions count.
    let reader = Reader {
        snapshot: LATEST,
        me: PENDING,
    };
    let Some(v) = txns.visible(table.records.slot(oid), reader, guard) else {
        return false;
    };
    if v.is_deleted() {
        return false;
    }
    match index {
        IndexRef::Primary => true,
        IndexRef::Secondary(s) => table.secondary_key(s, &table.row(&v.row), oid).as_bytes() == key,
    }
}

/// Entries are fetched this many at a time when looking past dead ones.
const PEEK: usize = 16;

/// The locks of the first live entry after `upper` (its key and, in a secondary index, its
/// row's primary key), or the supremum.
fn first_live_after(
    txns: &TxnTable,
    table: &Table,
    index: IndexRef,
    upper: Bound<&[u8]>,
) -> Vec<LockName> {
    let Some(from) = after(upper) else {
        return vec![supremum(table, index)];
    };
    let mut out = Vec::new();
    walk_entries(txns, table, index, from, |key, oid, live, guard| {
        if live {
            push_entry_locks(&mut out, (table, index), key, oid, guard);
        }
        live
    });
    if out.is_empty() {
        out.push(supremum(table, index));
    }
    out
}

/// The gap chain of a new entry `key`: the locks of every entry after it up to and including the
/// first live one, or up to the supremum.
fn gap_chain(txns: &TxnTable, table: &Table, index: IndexRef, key: &[u8]) -> Vec<LockName> {
    let mut out = Vec::new();
    let mut ended = false;
    walk_entries(
        txns,
        table,
        index,
        Bound::Excluded(key),
        |key, _, live, _| {
            out.push(key_lock(table, index, key));
            ended = live;
            live
        },
    );
    if !ended {
        out.push(supremum(table, index));
    }
    out
}

/// Walks the entries of `index` from `from` upwards, telling `visit` whether each is live, until
/// `visit` returns true or the index ends.
fn walk_entries(
    txns: &TxnTable,
    table: &Table,
    index: IndexRef,
    from: Bound<&[u8]>,
    mut visit: impl FnMut(&[u8], Oid, bool, &sdd::Guard) -> bool,
) {
    let tree: &OrderedIndex = table.tree(index);
    let mut batch = ScanBatch::default();
    let mut lower = from.map(|k| KeyBuf::from_bytes(k).unwrap_or_default());
    loop {
        let bound = match &lower {
            Bound::Included(k) => Bound::Included(k.as_bytes()),
            Bound::Excluded(k) => Bound::Excluded(k.as_bytes()),
            Bound::Unbounded => Bound::Unbounded,
        };
        tree.fetch_batch((bound, Bound::Unbounded), false, PEEK, &mut batch);
        let epoch = EpochGuard::enter();
        for i in 0..batch.len() {
            let live = is_live(
                txns,
                (table, index),
                batch.key(i),
                batch.oid(i),
                epoch.guard(),
            );
            if visit(batch.key(i), batch.oid(i), live, epoch.guard()) {
                return;
            }
        }
        if batch.len() < PEEK {
            return;
        }
        lower = KeyBuf::from_bytes(batch.key(batch.len() - 1))
            .map_or(Bound::Unbounded, Bound::Excluded);
    }
}
