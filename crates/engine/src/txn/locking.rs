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

use std::collections::HashMap;
use std::ops::Bound;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use crate::catalog::Catalog;
use crate::catalog::table::{IndexRef, Table, TableId};
use crate::error::{AbortReason, Error, Result};
use crate::index::{OrderedIndex, ScanBatch};
use crate::lock::{LockAbort, LockManager, LockMode, LockName, Revocation, TxnId};
use crate::mvcc::epoch::EpochGuard;
use crate::mvcc::{PENDING, Reader, TxnTable};
use crate::storage::key::{KeyBuf, describe as describe_key};
use crate::storage::record::{Chain, Oid};
use crate::txn::writeset::Target;

use super::Transaction;

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

/// A table-level lock's mode (see [`Transaction::lock_table`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TableLock {
    /// Writing the table's rows (PostgreSQL's ROW EXCLUSIVE): writers share it.
    Write,
    /// Replacing the table (PostgreSQL's ACCESS EXCLUSIVE): no writer holds the table meanwhile.
    Rebuild,
}

/// The low bits of a table lock's space: past any index's (see `space`).
const TABLE_SPACE: u64 = 0xFFFF;

/// The lock standing for a whole table.
fn table_lock(table: &Table) -> LockName {
    LockName {
        space: (u64::from(table.id()) << 16) | TABLE_SPACE,
        item: 0,
    }
}

/// The lock space of one index of a table.
fn space(table: &Table, index: IndexRef) -> u64 {
    let index = match index {
        IndexRef::Primary => 0,
        IndexRef::Secondary(s) => s as u64 + 1,
    };
    (u64::from(table.id()) << 16) | index
}

/// Locks' names for people: each one's table, index and key values (`warehouse primary key
/// (1)`), or the end of the index; the raw numbers if the table is gone. The lock table keeps only
/// a hash of each key, so the keys are found again by scanning each index named for entries with
/// those hashes, once per call: a diagnostic's cost, never paid on the locking path. A key no
/// longer in its index (deleted since) shows its hash.
pub(crate) fn describe_locks(catalog: &Catalog, names: &[LockName]) -> Vec<String> {
    let mut keys: HashMap<(u64, u64), String> = HashMap::new();
    let mut spaces: Vec<u64> = names.iter().map(|n| n.space).collect();
    spaces.sort_unstable();
    spaces.dedup();
    for space in spaces {
        let Some((table, index)) = locked_index(catalog, space) else {
            continue;
        };
        let mut wanted: Vec<u64> = names
            .iter()
            .filter(|n| n.space == space && n.item != u64::MAX)
            .map(|n| n.item)
            .collect();
        let types = table.key_types(index);
        let tree = table.tree(index);
        let mut batch = ScanBatch::default();
        let mut after: Option<Vec<u8>> = None;
        while !wanted.is_empty() {
            let lower = after.as_deref().map_or(Bound::Unbounded, Bound::Excluded);
            tree.fetch_batch((lower, Bound::Unbounded), false, 256, &mut batch);
            if batch.len() == 0 {
                break;
            }
            for i in 0..batch.len() {
                let key = batch.key(i);
                let item = key_hash(key).min(u64::MAX - 1);
                if let Some(at) = wanted.iter().position(|&w| w == item) {
                    wanted.swap_remove(at);
                    if let Some(values) = describe_key(key, types) {
                        keys.insert((space, item), values);
                    }
                }
            }
            after = Some(batch.key(batch.len() - 1).to_vec());
        }
    }
    names
        .iter()
        .map(|name| {
            if name.space & 0xFFFF == TABLE_SPACE
                && let Some(table) = catalog.get((name.space >> 16) as TableId)
            {
                return format!("{} table", table.name());
            }
            let Some((table, index)) = locked_index(catalog, name.space) else {
                return format!("{:#x}/{:#x}", name.space, name.item);
            };
            let index_name = match index {
                IndexRef::Primary => "primary key".to_owned(),
                IndexRef::Secondary(i) => table
                    .schema()
                    .indexes()
                    .get(i)
                    .map_or_else(|| format!("index {i}"), |d| format!("index {}", d.name)),
            };
            let item = match (name.item, keys.get(&(name.space, name.item))) {
                (u64::MAX, _) => "end of index".to_owned(),
                (_, Some(values)) => values.clone(),
                (hash, None) => format!("key hash {hash:#x}"),
            };
            format!("{} {index_name} {item}", table.name())
        })
        .collect()
}

/// The table and index a lock space names, if the table still exists.
fn locked_index(catalog: &Catalog, space: u64) -> Option<(&Table, IndexRef)> {
    let table = catalog.get((space >> 16) as TableId)?;
    let index = match space & 0xFFFF {
        0 => IndexRef::Primary,
        i => IndexRef::Secondary(i as usize - 1),
    };
    (index == IndexRef::Primary || (space & 0xFFFF) as usize <= table.schema().indexes().len())
        .then_some((table, index))
}

/// The lock on `key` in `index` of `table`.
fn key_lock(table: &Table, index: IndexRef, key: &[u8]) -> LockName {
    LockName {
        space: space(table, index),
        // The supremum's item is reserved.
        item: key_hash(key).min(u64::MAX - 1),
    }
}

/// The lock standing for the end of `index`: the successor of a range no entry follows.
fn supremum(table: &Table, index: IndexRef) -> LockName {
    LockName {
        space: space(table, index),
        item: u64::MAX,
    }
}

/// A 64-bit hash of key bytes (a multiply-rotate fold; collisions cost only false waits).
fn key_hash(key: &[u8]) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut h = key.len() as u64;
    let mut chunks = key.chunks_exact(8);
    for c in &mut chunks {
        let word = u64::from_le_bytes(c.try_into().expect("8 bytes"));
        h = (h ^ word).wrapping_mul(K).rotate_left(29);
    }
    let mut tail = [0u8; 8];
    tail[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
    h = (h ^ u64::from_le_bytes(tail)).wrapping_mul(K);
    h ^ (h >> 32)
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

impl<'db> Transaction<'db> {
    /// This transaction's handle on the lock manager, registered at `priority` and begun as the
    /// `age`-th transaction (`None`: the youngest yet), if the database locks or the isolation
    /// level locks what it writes (READ COMMITTED, on the row locks' manager).
    pub(super) fn register_locker(
        engine: &'db crate::txn::shared::Engine,
        id: TxnId,
        (priority, isolation): (overtake_priority::Priority, super::Isolation),
        age: Option<u64>,
    ) -> Option<Locker<'db>> {
        let manager = match &engine.locks {
            Some(manager) => manager,
            None if isolation == super::Isolation::ReadCommitted => &engine.row_locks,
            None => return None,
        };
        let registered = manager.register_aged(id, priority.level() as u8, age);
        Some(Locker::new(manager, &engine.txns, id, registered))
    }

    /// Its place in the lock manager's begin order (two-phase locking only), which a retry of
    /// the same work keeps (see `Database::run`).
    pub(crate) fn lock_age(&self) -> Option<u64> {
        self.locker.as_ref().map(|l| l.began)
    }

    /// If a lock policy aborted it rather than let it wait (WDL1): the holders it would have
    /// waited for, which a retry waits out first (see `Database::run`).
    pub(crate) fn take_restart_after(&mut self) -> Vec<TxnId> {
        self.locker
            .as_mut()
            .map(|l| std::mem::take(&mut l.restart_after))
            .unwrap_or_default()
    }

    /// The snapshot reads use: the newest commit under two-phase locking, else the
    /// transaction's own.
    pub(super) fn read_snapshot(&self) -> u64 {
        if self.two_phase {
            LATEST
        } else {
            self.lease.snapshot
        }
    }

    /// The snapshot a buffered write must still hold at commit (see `Buffered::read_at`).
    pub(super) fn write_snapshot(&self, write: &crate::txn::writeset::Buffered) -> u64 {
        if self.two_phase {
            LATEST
        } else {
            write.read_at
        }
    }

    /// Before a write reads the row it changes: its primary key's write lock, if the
    /// transaction locks; under READ COMMITTED the snapshot then moves on, so that the write
    /// reads the newest committed row (which the lock now keeps from changing).
    pub(super) fn lock_for_write(&mut self, table: &Table, key: &[u8]) -> Result<()> {
        self.lock_primary(table, key, LockMode::Exclusive)?;
        if self.isolation == super::Isolation::ReadCommitted && !self.two_phase {
            self.engine.txns.refresh_snapshot(&mut self.lease);
        }
        Ok(())
    }

    /// Marks the start of the next statement: under READ COMMITTED (without two-phase locking)
    /// the transaction reads a fresh snapshot from here on; at other levels this does nothing.
    pub fn next_statement(&mut self) {
        if self.isolation == super::Isolation::ReadCommitted && !self.two_phase && self.is_active()
        {
            self.engine.txns.refresh_snapshot(&mut self.lease);
        }
    }

    /// Takes the write lock of the row under primary key `key` of `table` (`SELECT ... FOR
    /// UPDATE`), as a write would: under two-phase locking and READ COMMITTED it is held until
    /// the transaction ends, and READ COMMITTED reads the newest committed rows from here on.
    /// Under snapshot and serializable isolation in an MVCC database it does nothing: a
    /// concurrent write of the row fails one of the two at its write or commit instead.
    pub fn lock_row(&mut self, table: &Table, key: &KeyBuf) -> Result<()> {
        self.check(table)?;
        self.lock_for_write(table, key.as_bytes())
    }

    /// Limits each lock wait from here on to `limit` (`None`: no limit), as PostgreSQL's
    /// `lock_timeout`: a wait that lasts it ends the transaction with
    /// [`AbortReason::LockTimeout`]. (Only transactions that take locks wait.)
    pub fn set_lock_timeout(&mut self, limit: Option<Duration>) {
        self.lock_limit = limit;
        if let Some(locker) = &mut self.locker {
            locker.limit = limit;
        }
    }

    /// Makes `flag` end this transaction's lock waits from here on: once it is set, a wait
    /// in progress ends with [`AbortReason::Interrupted`] when the waiting task is woken (the
    /// setter unparks it: `overtake_runtime::park::current_unparker` taken where the
    /// statement runs), and a wait that begins after it is set ends at once. `None`: waits end
    /// only as the lock policy and `set_lock_timeout` say. (A cancelled statement parked in a
    /// lock wait is how PostgreSQL's cancel ends a wait.)
    pub fn set_interrupt(&mut self, flag: Option<Arc<AtomicBool>>) {
        if let Some(locker) = &mut self.locker {
            locker.interrupt.clone_from(&flag);
        }
        self.lock_interrupt = flag;
    }

    /// Makes this transaction take each row's write lock before it writes the row (and in
    /// [`lock_row`](Self::lock_row)), whatever its isolation level, as PostgreSQL's writers do:
    /// a READ COMMITTED writer of the same row then waits for it instead of failing at commit,
    /// and it waits for theirs (then fails with a conflict if they committed a change to the
    /// row). READ COMMITTED and two-phase locking do this already. Call it before any write.
    /// The locks are the lock manager's, so a paused holder's are revoked by the lock policy
    /// like any other.
    pub fn lock_rows_it_writes(&mut self) {
        self.locker_made();
        self.locks_rows = true;
    }

    /// Its lock-manager handle, made now if it had none (a transaction that takes no row locks
    /// gets one for its table locks, or once it is asked to lock the rows it writes).
    fn locker_made(&mut self) -> &mut Locker<'db> {
        match &mut self.locker {
            Some(locker) => locker,
            none => {
                let engine = self.engine;
                let manager = engine.locks.as_ref().unwrap_or(&engine.row_locks);
                let level = self.priority.level() as u8;
                let registered = manager.register_aged(self.lease.stamp, level, None);
                let mut locker = Locker::new(manager, &engine.txns, self.lease.stamp, registered);
                locker.limit = self.lock_limit;
                locker.interrupt.clone_from(&self.lock_interrupt);
                none.insert(locker)
            }
        }
    }

    /// [`lock_row`](Self::lock_row) without waiting (`FOR UPDATE NOWAIT`, `SKIP LOCKED`):
    /// `Ok(false)`, with nothing taken and the transaction still active, if another transaction
    /// holds the row's lock or waits for it first.
    pub fn try_lock_row(&mut self, table: &Table, key: &KeyBuf) -> Result<bool> {
        self.check(table)?;
        if !self.locks_rows {
            return Ok(true);
        }
        let locker = self.locker_made();
        let result = locker.try_lock_key(table, IndexRef::Primary, key.as_bytes());
        let granted = self.lock_result(result)?;
        if granted && self.isolation == super::Isolation::ReadCommitted && !self.two_phase {
            self.engine.txns.refresh_snapshot(&mut self.lease);
        }
        Ok(granted)
    }

    /// Takes `table`'s table lock in `mode` until the transaction ends, waiting (parked) while
    /// another transaction holds it in a mode that conflicts, as PostgreSQL's table-level locks:
    /// [`TableLock::Write`] is what every writer of the table holds, [`TableLock::Rebuild`] is
    /// what replacing the table takes, so that no writer commits into a table while it is copied
    /// and replaced. At every isolation level and in every concurrency-control mode (a
    /// transaction that takes no row locks gets a lock-manager handle for this alone); waits
    /// join deadlock detection and the lock policy as row locks do. Under READ COMMITTED a
    /// rebuild reads the newest committed rows from here on; at other levels a rebuild's copy
    /// must scan with [`ScanOptions::validated`](crate::ScanOptions::validated), so that rows
    /// committed between its snapshot and its lock fail its commit instead of being left out.
    /// When a transaction holding `Rebuild` commits, the table counts as replaced: a later
    /// request for its lock fails with [`Error::TableReplaced`] (the transaction stays active).
    pub fn lock_table(&mut self, table: &Table, mode: TableLock) -> Result<()> {
        self.check(table)?;
        let held = self.table_locks.iter().find(|(t, _)| *t == table.id());
        if held.is_some_and(|&(_, m)| m == mode || m == TableLock::Rebuild) {
            return Ok(());
        }
        let locker = self.locker_made();
        let lock_mode = match mode {
            TableLock::Write => LockMode::Shared,
            TableLock::Rebuild => LockMode::Exclusive,
        };
        let result = locker.acquire(table_lock(table), lock_mode);
        self.lock_result(result)?;
        self.table_locks.retain(|(t, _)| *t != table.id());
        self.table_locks.push((table.id(), mode));
        if table.is_replaced() {
            // Its replacement committed before the lock was granted: writing here would be lost.
            return Err(Error::TableReplaced(table.name().to_owned()));
        }
        if mode == TableLock::Rebuild
            && self.isolation == super::Isolation::ReadCommitted
            && !self.two_phase
        {
            self.engine.txns.refresh_snapshot(&mut self.lease);
        }
        Ok(())
    }

    /// Ends the transaction with `abort`'s reason if a lock request failed.
    pub(super) fn lock_result<T>(&mut self, result: Result<T, LockAbort>) -> Result<T> {
        result.map_err(|abort| self.fail(abort.into()))
    }

    /// Fails (ending the transaction) if the lock manager revoked its locks: every call checks on
    /// entry, and again after reading a row and before handing it to application code, so a
    /// revoked transaction never acts on a row it no longer holds the lock for.
    pub(super) fn check_revoked(&mut self) -> Result<()> {
        match self.locker.as_ref().and_then(Locker::revoked) {
            Some(abort) => Err(self.fail(abort.into())),
            None => Ok(()),
        }
    }

    /// Whether scans lock what they visit (two-phase locking).
    pub(super) fn scans_lock(&self) -> bool {
        self.two_phase
    }

    /// Inside the commit's region: from here on the locks cannot be revoked, unless they already
    /// were (then the commit fails with the revocation's reason).
    pub(super) fn enter_commit(&mut self) -> Result<()> {
        let entered = match &self.locker {
            Some(locker) => locker.revocation.enter_commit(),
            None => Ok(()),
        };
        self.lock_result(entered)
    }

    /// Locks primary key `key` of `table` in `mode` (nothing unless locking).
    pub(super) fn lock_primary(&mut self, table: &Table, key: &[u8], mode: LockMode) -> Result<()> {
        if !self.locks_rows {
            return Ok(());
        }
        let locker = self.locker_made();
        let result = locker.lock_key(table, IndexRef::Primary, key, mode);
        self.lock_result(result)
    }

    /// Before the commit's region: locks every index entry the commit will add, with its gap
    /// chain, and fails if the lock manager aborted this transaction meanwhile.
    pub(super) fn lock_for_commit(&mut self) -> Result<()> {
        let Some(locker) = self.locker.as_mut().filter(|_| self.two_phase) else {
            // READ COMMITTED's row locks guard no ranges; but they may have been revoked.
            return self.check_revoked();
        };
        let catalog = &self.engine.catalog;
        let mut result = Ok(());
        for e in self.buf.ws.entries() {
            let Some(row) = &e.row else { continue };
            let table = catalog.recorded(e.table);
            let fresh = matches!(e.target, Target::Fresh { .. });
            if fresh {
                result = locker.lock_new_entry(table, IndexRef::Primary, e.key.as_slice());
            }
            if result.is_ok() && (fresh || e.secondary_may_change) {
                for s in 0..table.secondary_count() {
                    let key = table.secondary_key(s, &table.row(row), e.oid);
                    let index = IndexRef::Secondary(s);
                    if table.tree(index).get(key.as_bytes()) == Some(e.oid) {
                        continue; // The row keeps this entry.
                    }
                    result = locker.lock_new_entry(table, index, key.as_bytes());
                    if result.is_err() {
                        break;
                    }
                }
            }
            if result.is_err() {
                break;
            }
        }
        if result.is_ok()
            && let Some(abort) = locker.revoked()
        {
            result = Err(abort);
        }
        self.lock_result(result)
    }

    /// Releases every lock (the transaction has ended: its writes are stamped or undone).
    pub(super) fn release_locks(&mut self) {
        if let Some(locker) = &self.locker {
            locker.manager.release_all(locker.id);
        }
    }

    /// The lock waits of this transaction so far (none outside the two-phase-locking mode).
    pub fn lock_stats(&self) -> LockStats {
        self.locker
            .as_ref()
            .map_or_else(LockStats::default, Locker::stats)
    }

    /// Identifies this transaction among those active, as [`LockWait`](crate::LockWait) names
    /// waiters and holders.
    pub fn id(&self) -> u64 {
        self.lease.stamp
    }
}
