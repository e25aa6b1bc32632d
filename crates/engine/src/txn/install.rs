//! Installing a transaction's buffered writes, inside its commit's non-preemptible region.
//!
//! For each record in the write set: check that no version was committed since the snapshot and
//! that no other commit is installing one (first committer wins), then link a pending version in
//! front of the head with one compare-and-swap; because the new version points at the old head
//! before it is published, readers always find a complete chain. A new record gets its slot filled
//! and its primary key entered, taking over a dead record's entry or writing over a deleted row that
//! holds the key. Then the new rows' secondary entries are added and the entries their old rows no
//! longer need are queued for retirement.
//!
//! Everything here runs in the commit region and never waits for an active transaction: a pending
//! version met here belongs to another commit in progress and counts as a conflict (waiting could
//! deadlock two commits that met each other's records). What was installed before a conflict is
//! undone by rollback from the `writes` and `new_keys` recorded here.

use std::sync::atomic::{AtomicU64, Ordering};

use overtake_runtime::NoPreemptGuard;
use sdd::{AtomicShared, Guard, Ptr, Shared, Tag};

use super::{Isolation, Transaction};
use crate::catalog::table::{IndexRef, Table, TableId};
use crate::error::AbortReason;
use crate::index::LeafHint;
use crate::log::record::CommitEncoder;
use crate::mvcc::epoch::EpochGuard;
use crate::mvcc::{HeadCheck, Reader};
use crate::storage::key::{IndexKey, KeyBuf};
use crate::storage::record::{DEAD, Oid, OidBlock, RowBytes, Version};
use crate::txn::footprint::{NewKey, StaleKey, Write, WriteKind};
use crate::txn::writeset::{Buffered, Target};

/// What [`Transaction::overwrite`] did.
pub(super) enum Overwrote {
    /// The new version is linked.
    Installed,
    /// The deleted row written over was collected first: here is the row, for a new record.
    Collected(Box<[u8]>),
}

/// The state of a record's head, from a writer's point of view.
pub(super) enum Head<'g> {
    /// The record may be written: this is its newest version, committed before the snapshot.
    Writable(Ptr<'g, Version>, &'g Version),
    /// No record (dead and leaving the indexes).
    Missing,
}

impl Transaction<'_> {
    /// Waits until the head of `oid` is settled (a commit or rollback in flight finishes) and
    /// checks that this transaction, reading at `snapshot`, may write over it.
    pub(super) fn head_state<'g>(
        &self,
        table: &Table,
        oid: Oid,
        snapshot: u64,
        guard: &'g Guard,
    ) -> Result<Head<'g>, AbortReason> {
        let reader = Reader {
            snapshot,
            me: self.lease.stamp,
        };
        loop {
            let head = table.records.slot(oid).load(Ordering::Acquire, guard);
            let Some(v) = head.as_ref() else {
                return Ok(Head::Missing);
            };
            match self.engine.txns.check_writable(v, reader) {
                HeadCheck::Writable => return Ok(Head::Writable(head, v)),
                HeadCheck::Conflict => return Err(AbortReason::Conflict),
                HeadCheck::Retry => std::hint::spin_loop(),
            }
        }
    }

    /// Installs every buffered write (the commit's first step, before its timestamp is drawn),
    /// adding each one's after-image to `log` if the database logs. On a conflict, what was
    /// installed is left recorded for rollback (and the record is not appended).
    pub(super) fn install_all(
        &mut self,
        epoch: &EpochGuard,
        mut log: Option<CommitEncoder<'_>>,
    ) -> Result<(), AbortReason> {
        let mut ws = std::mem::take(&mut self.buf.ws);
        let mut result = Ok(());
        let mut leaves = HintedLeaves::default();
        for i in 0..ws.len() {
            result = self.install_entry(ws.get_mut(i), &mut leaves, epoch, log.as_mut());
            if result.is_err() {
                break;
            }
        }
        self.buf.ws = ws;
        result
    }

    fn install_entry(
        &mut self,
        e: &mut Buffered,
        leaves: &mut HintedLeaves,
        epoch: &EpochGuard,
        log: Option<&mut CommitEncoder<'_>>,
    ) -> Result<(), AbortReason> {
        if !e.changes_anything() {
            return Ok(());
        }
        let table = &self.engine.catalog.recorded(e.table);
        let row = e.row.take();
        let read_at = self.write_snapshot(e);
        match e.target {
            Target::Existing { base_live } => {
                match self.head_state(table, e.oid, read_at, epoch.guard())? {
                    Head::Writable(head, v) if v.is_deleted() != base_live => {
                        if let Some(log) = log {
                            // Replay meets the row this one replaces: an update logs what it
                            // changed.
                            let key = e.key.as_slice();
                            match (&row, v.is_deleted()) {
                                (Some(row), false) => log.write_over(e.table, key, &v.row, row),
                                (row, _) => log.write(e.table, key, row.as_deref()),
                            }
                        }
                        let keys_may_change = e.secondary_may_change;
                        match self.overwrite(
                            table,
                            e.oid,
                            (head, v),
                            (row, keys_may_change),
                            epoch,
                        )? {
                            Overwrote::Installed => Ok(()),
                            // As below (already logged): the record was collected meanwhile.
                            Overwrote::Collected(row) => {
                                let oid = self.unpublished_oid(table);
                                self.install_fresh(
                                    table,
                                    oid,
                                    (&e.key, None),
                                    (row, read_at),
                                    epoch,
                                )
                            }
                        }
                    }
                    Head::Writable(..) => {
                        unreachable!("the head is the version the write was based on")
                    }
                    // The deleted row's record was collected since: the row goes to a new record.
                    Head::Missing if !base_live => {
                        let oid = self.unpublished_oid(table);
                        let row = row.unwrap_or_else(|| unreachable!("changes something"));
                        if let Some(log) = log {
                            log.write(e.table, e.key.as_slice(), Some(&row));
                        }
                        self.install_fresh(table, oid, (&e.key, None), (row, read_at), epoch)
                    }
                    // A row live in the snapshot is kept until every snapshot seeing it ends; but
                    // READ COMMITTED has moved its snapshot on since this write read the row,
                    // and a deletion committed since may have been collected: a conflict.
                    Head::Missing if self.isolation == Isolation::ReadCommitted => {
                        Err(AbortReason::Conflict)
                    }
                    Head::Missing => unreachable!("a record live in the snapshot was collected"),
                }
            }
            Target::Fresh { unpublished } => {
                debug_assert!(unpublished);
                e.target = Target::Fresh { unpublished: false };
                let row = row.unwrap_or_else(|| unreachable!("changes something"));
                if let Some(log) = log {
                    log.write(e.table, e.key.as_slice(), Some(&row));
                }
                let hint = e.hint.map(|h| (leaves, h));
                self.install_fresh(table, e.oid, (&e.key, hint), (row, read_at), epoch)
            }
        }
    }

    /// Writes `row` (`None`: a deletion marker) over the record's head version `base`. Unless
    /// `keys_may_change`, the row has the secondary keys of the row it replaces.
    ///
    /// A deleted `base` committed before the snapshot may be collected at any moment (its
    /// record marked dead, its entries removed), also between the caller's look at the head and
    /// this install: that is no conflict, and the row comes back ([`Overwrote::Collected`]) to go
    /// to a new record.
    fn overwrite(
        &mut self,
        table: &Table,
        oid: Oid,
        (head, base): (Ptr<'_, Version>, &Version),
        (row, keys_may_change): (Option<Box<[u8]>>, bool),
        epoch: &EpochGuard,
    ) -> Result<Overwrote, AbortReason> {
        let guard = epoch.guard();
        let Some(row) = row else {
            // An empty row marks the deletion; the row it deletes stays linked below it.
            if !self.install(table, oid, head, Box::default(), guard) {
                return Err(AbortReason::Conflict);
            }
            self.note_write(table, oid, WriteKind::Delete);
            return Ok(Overwrote::Installed);
        };
        // The row the record had: the head, or the deleted row's image below a deletion marker
        // (kept there until the record's keys are removed).
        let before = if base.is_deleted() {
            base.older(guard)
        } else {
            Some(base)
        };
        let changed = match before {
            Some(image) if keys_may_change || base.is_deleted() => {
                changed_keys(table, oid, &image.row, &row)
            }
            _ => Vec::new(),
        };
        let over_deleted = base.is_deleted();
        // Kept to hand back if the record is collected first (only over a deleted row).
        let spare = over_deleted.then(|| row.clone());
        #[cfg(test)]
        tests::before_overwrite();
        if !self.install(table, oid, head, row, guard) {
            let collected = table
                .records
                .slot(oid)
                .load(Ordering::Acquire, guard)
                .is_null();
            return match spare {
                Some(row) if collected => Ok(Overwrote::Collected(row)),
                _ => Err(AbortReason::Conflict),
            };
        }
        self.note_write(table, oid, WriteKind::Overwrite);
        if over_deleted {
            // The entries the deleted row had may be gone or going: enter every key again.
            self.add_secondary_entries(table, oid, epoch)?;
        } else {
            for (i, _, after) in &changed {
                self.add_index_entry(table, IndexRef::Secondary(*i), after, oid, epoch)?;
            }
        }
        for (i, before, _) in changed {
            self.retire_key(table, i, &before, oid);
        }
        Ok(Overwrote::Installed)
    }

    /// Creates record `oid` (allocated for this write, unpublished) holding `row` under primary key
    /// `key`. If the key is taken by a dead record, takes its entry over; by a deleted row
    /// committed before the snapshot, writes over that record instead. A hint (where the insert
    /// found the key absent) lets the index skip its descent; `leaves` follows it past this
    /// commit's own earlier inserts into the same leaf.
    fn install_fresh(
        &mut self,
        table: &Table,
        oid: Oid,
        (key, mut hint): (&IndexKey, Option<(&mut HintedLeaves, LeafHint)>),
        (mut row, read_at): (Box<[u8]>, u64),
        epoch: &EpochGuard,
    ) -> Result<(), AbortReason> {
        let guard = epoch.guard();
        let tree = table.tree(IndexRef::Primary);
        loop {
            // Most inserts are of new keys: fill the record first and let the index decide, so
            // the common case costs one index search (or none, with a hint).
            let slot = table.records.slot(oid);
            let empty = slot.load(Ordering::Acquire, guard);
            if !self.install(table, oid, empty, row, guard) {
                unreachable!("an unpublished OID is not visible to anyone else");
            }
            let inserted = match hint.take() {
                Some((leaves, taken)) => {
                    let hint = leaves.follow(table.id(), taken);
                    let inserted = tree.insert_hinted(key.as_slice(), oid, hint);
                    if let Ok(Some(now)) = inserted {
                        leaves.moved(table.id(), taken, now);
                    }
                    inserted.map(|_| ())
                }
                None => tree.insert(key.as_slice(), oid),
            };
            let existing = match inserted {
                Ok(()) => {
                    self.buf.new_keys.push(NewKey {
                        table: table.id(),
                        index: IndexRef::Primary,
                        key: key.clone(),
                        oid,
                    });
                    self.note_write(table, oid, WriteKind::FreshInsert);
                    return self.add_secondary_entries(table, oid, epoch);
                }
                Err(existing) => existing,
            };
            // Take the version back out of the unpublished slot.
            row = {
                let _region = NoPreemptGuard::new();
                let (mine, _) = slot.swap((None, DEAD), Ordering::AcqRel);
                match mine {
                    Some(version) => Box::from(&*version.row),
                    None => unreachable!("the version was just installed"),
                }
            };
            match self.head_state(table, existing, read_at, guard) {
                // The key's record is dead and its entry not yet removed: remove it ourselves
                // (only if it still maps to the dead record) and try again.
                Ok(Head::Missing) => {
                    tree.remove(key.as_slice(), existing);
                }
                Ok(Head::Writable(head, v)) if v.is_deleted() => {
                    match self.overwrite(table, existing, (head, v), (Some(row), true), epoch) {
                        // Its entry is removed or about to be: the loop takes it over.
                        Ok(Overwrote::Collected(back)) => row = back,
                        done => {
                            table.records.release_unpublished(oid);
                            return done.map(|_| ());
                        }
                    }
                }
                // A live row under the key committed before our snapshot would have been seen
                // by the insert; one committed since is a conflict.
                Ok(Head::Writable(..)) | Err(_) => {
                    table.records.release_unpublished(oid);
                    return Err(AbortReason::Conflict);
                }
            }
        }
    }

    /// A fresh or recycled OID of `table` for a new record, unpublished until installed.
    pub(super) fn unpublished_oid(&mut self, table: &Table) -> Oid {
        let blocks = &mut self.buf.oid_blocks;
        let t = table.id() as usize;
        if blocks.len() <= t {
            blocks.resize(t + 1, OidBlock::default());
        }
        let region = NoPreemptGuard::new();
        let watermark = self.engine.txns.watermark();
        table.records.allocate(watermark, &mut blocks[t], &region)
    }

    /// Links a new pending version in front of `expected`. False if the head moved meanwhile.
    pub(super) fn install(
        &mut self,
        table: &Table,
        oid: Oid,
        expected: Ptr<'_, Version>,
        row: Box<[u8]>,
        guard: &Guard,
    ) -> bool {
        let depth = expected
            .as_ref()
            .map_or(0, Version::depth)
            .saturating_add(1);
        let next = expected
            .get_shared()
            .map_or_else(AtomicShared::null, AtomicShared::from);
        let version = Shared::new(Version {
            stamp: AtomicU64::new(self.lease.stamp),
            row: RowBytes::new(row, depth),
            next,
        });
        let installed = table
            .records
            .slot(oid)
            .compare_exchange(
                expected,
                (Some(version), Tag::None),
                Ordering::AcqRel,
                Ordering::Acquire,
                guard,
            )
            .is_ok();
        self.versions_created += u64::from(installed);
        installed
    }

    /// Adds a record to the list of installed writes (what rollback undoes and commit stamps).
    pub(super) fn note_write(&mut self, table: &Table, oid: Oid, kind: WriteKind) {
        self.buf.writes.push(Write {
            table: table.id(),
            oid,
            kind,
        });
    }

    /// Adds `key -> oid` to one of `table`'s indexes, remembering it for rollback. An entry that
    /// already maps to `oid` (kept from an older version) is fine. An entry that maps to a record
    /// no version of which carries the key is garbage (a dead record's, or a stale key whose
    /// retirement has not been processed yet): it is taken over on the spot, never waited for,
    /// because whoever would remove it may be a paused transaction's slot.
    pub(super) fn add_index_entry(
        &mut self,
        table: &Table,
        index: IndexRef,
        key: &KeyBuf,
        oid: Oid,
        epoch: &EpochGuard,
    ) -> Result<(), AbortReason> {
        let tree = table.tree(index);
        loop {
            let entered = match tree.insert(key.as_bytes(), oid) {
                Ok(()) => true,
                // Kept from an older version: reused. Its retirement may already have been
                // processed (skipped because our pending version carries the key), so a rollback
                // must look at it again.
                Err(existing) if existing == oid => true,
                Err(existing) => {
                    if table.record_carries(index, key.as_bytes(), existing, epoch.guard()) {
                        // Keys embed the primary key, so a live record carrying this one means
                        // two rows share a primary key.
                        return Err(AbortReason::Conflict);
                    }
                    tree.replace(key.as_bytes(), existing, oid)
                }
            };
            if entered {
                self.buf.new_keys.push(NewKey {
                    table: table.id(),
                    index,
                    key: IndexKey::new(key.as_bytes()),
                    oid,
                });
                return Ok(());
            }
            // The entry changed between the two index calls: look again.
        }
    }

    /// Enters `oid`'s pending version under every secondary index.
    fn add_secondary_entries(
        &mut self,
        table: &Table,
        oid: Oid,
        epoch: &EpochGuard,
    ) -> Result<(), AbortReason> {
        if table.secondary_count() == 0 {
            return Ok(());
        }
        let head = table
            .records
            .slot(oid)
            .load(Ordering::Acquire, epoch.guard());
        let Some(v) = head.as_ref() else {
            unreachable!("the record holds this transaction's pending version");
        };
        let row = table.row(&v.row);
        for i in 0..table.secondary_count() {
            let key = table.secondary_key(i, &row, oid);
            self.add_index_entry(table, IndexRef::Secondary(i), &key, oid, epoch)?;
        }
        Ok(())
    }

    /// Queues secondary entry `key -> oid` of index `index` for removal once this transaction
    /// commits and no snapshot can see a version carrying it.
    fn retire_key(&mut self, table: &Table, index: usize, key: &KeyBuf, oid: Oid) {
        self.buf.stale_keys.push(StaleKey {
            table: table.id(),
            index,
            key: IndexKey::new(key.as_bytes()),
            oid,
        });
    }
}

/// The secondary keys (index, before, after) in which row `after` differs from row `before`.
fn changed_keys(
    table: &Table,
    oid: Oid,
    before: &[u8],
    after: &[u8],
) -> Vec<(usize, KeyBuf, KeyBuf)> {
    let (before, after) = (table.row(before), table.row(after));
    (0..table.secondary_count())
        .filter_map(|i| {
            let old = table.secondary_key(i, &before, oid);
            let new = table.secondary_key(i, &after, oid);
            (old != new).then_some((i, old, new))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::sync::mpsc;
    use std::time::Duration;

    use overtake_runtime::NoPreemptGuard;

    use crate::catalog::table::IndexRef;
    use crate::storage::record::DEAD;
    use crate::storage::schema::{ColumnType, TableSchema};
    use crate::{Database, Isolation, Options, Priority};

    thread_local! {
        /// Run once by this thread's next overwrite, just before it links its version: where
        /// the collector of another thread can act between a commit's look at a head and its
        /// install.
        static BEFORE_OVERWRITE: RefCell<Option<Box<dyn FnOnce()>>> = const { RefCell::new(None) };
    }

    pub(super) fn before_overwrite() {
        if let Some(hook) = BEFORE_OVERWRITE.with(|h| h.borrow_mut().take()) {
            hook();
        }
    }

    #[test]
    fn a_deleted_row_collected_while_a_commit_writes_over_it_is_no_conflict() {
        let db = std::sync::Arc::new(Database::in_memory(Options::default()));
        let t = table(&db);
        let key = t.key().int(1).finish().expect("key");
        let mut delete = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
        assert_eq!(delete.delete(&t, &key), Ok(true));
        delete.commit().expect("delete");
        drop(delete);
        let mut insert = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
        let row = t.row_builder().int(0, 1).str(1, "again").finish();
        insert.insert(&t, row.expect("row")).expect("insert");
        let collector = std::sync::Arc::clone(&db);
        let collected = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let seen = std::sync::Arc::clone(&collected);
        BEFORE_OVERWRITE.with(|h| {
            *h.borrow_mut() = Some(Box::new(move || {
                // The deletion is older than every snapshot: the record dies now.
                let n = std::thread::spawn(move || collector.collect_garbage())
                    .join()
                    .expect("collector");
                seen.store(n, std::sync::atomic::Ordering::Relaxed);
            }))
        });
        assert_eq!(insert.commit().map(|_| ()), Ok(()));
        drop(insert);
        assert!(collected.load(std::sync::atomic::Ordering::Relaxed) > 0);
        let mut read = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
        let owner = read.get(&t, &key, |r| r.str(1).to_owned()).expect("get");
        assert_eq!(owner.as_deref(), Some("again"));
        drop(read);
        db.collect_garbage();
        let census = db.census();
        assert_eq!(census.dangling_index_entries, 0, "{census:?}");
        assert_eq!(census.index_entries, 2, "{census:?}");
    }

    /// `t(id INT64 PK, owner VARCHAR(8))` with an index on owner, holding (1, "one").
    fn table(db: &Database) -> std::sync::Arc<crate::Table> {
        let t = db
            .create_table(
                TableSchema::builder("t")
                    .column("id", ColumnType::Int64)
                    .column("owner", ColumnType::VarChar(8))
                    .primary_key(&["id"])
                    .index("by_owner", &["owner"])
                    .build()
                    .expect("schema"),
            )
            .expect("create");
        let mut txn = db
            .begin(Priority::LOW, Isolation::Serializable)
            .expect("begin");
        let row = t
            .row_builder()
            .int(0, 1)
            .str(1, "one")
            .finish()
            .expect("row");
        txn.insert(&t, row).expect("insert");
        txn.commit().expect("commit");
        t
    }

    /// Inserts (2, "two") after an entry for exactly that row's secondary key was planted pointing
    /// at `stale` (a record that does not carry it). Returns the insert's outcome, within a time
    /// limit (a wait for reclamation would never end).
    fn insert_over_planted_entry(dead: bool) -> crate::Result<()> {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let db = Database::in_memory(Options::default());
            let t = table(&db);
            let stale = if dead {
                let region = NoPreemptGuard::new();
                let oid = t.records.allocate(0, &mut Default::default(), &region);
                drop(
                    t.records
                        .slot(oid)
                        .swap((None, DEAD), std::sync::atomic::Ordering::AcqRel),
                );
                oid
            } else {
                // Record 1's OID: live, but with other keys (as if recycled).
                t.tree(IndexRef::Primary)
                    .get(t.key().int(1).finish().expect("key").as_bytes())
                    .expect("row 1")
            };
            let row = t
                .row_builder()
                .int(0, 2)
                .str(1, "two")
                .finish()
                .expect("row");
            let key = t.secondary_key(0, &t.row(row.view(t.layout()).as_bytes()), 0);
            t.tree(IndexRef::Secondary(0))
                .insert(key.as_bytes(), stale)
                .expect("planted");
            let mut txn = db
                .begin(Priority::HIGH, Isolation::Serializable)
                .expect("begin");
            let result = txn.insert(&t, row).and_then(|()| Ok(txn.commit()?));
            drop(txn);
            db.collect_garbage();
            let census = db.census();
            assert_eq!(census.dangling_index_entries, 0, "{census:?}");
            assert_eq!(census.index_entries, 4, "{census:?}");
            let _ = tx.send(result);
        });
        rx.recv_timeout(Duration::from_secs(60))
            .expect("the insert waited for the stale entry to go")
    }

    #[test]
    fn an_entry_of_a_dead_record_is_taken_over() {
        assert_eq!(insert_over_planted_entry(true), Ok(()));
    }

    #[test]
    fn an_entry_of_a_recycled_record_that_no_longer_carries_it_is_taken_over() {
        assert_eq!(insert_over_planted_entry(false), Ok(()));
    }

    #[test]
    fn an_entry_its_record_still_carries_is_a_conflict() {
        let db = Database::in_memory(Options::default());
        let t = table(&db);
        let one = t
            .tree(IndexRef::Primary)
            .get(t.key().int(1).finish().expect("key").as_bytes())
            .expect("row 1");
        // Plant row 1's own secondary key again under a second key: only reachable if two
        // records share a primary key, which must fail rather than steal the entry.
        let mut txn = db
            .begin(Priority::HIGH, Isolation::Serializable)
            .expect("begin");
        let key = {
            let epoch = crate::mvcc::epoch::EpochGuard::enter();
            let head = t
                .records
                .slot(one)
                .load(std::sync::atomic::Ordering::Acquire, epoch.guard());
            let v = head.as_ref().expect("row 1's version");
            t.secondary_key(0, &t.row(&v.row), one)
        };
        let epoch = crate::mvcc::epoch::EpochGuard::enter();
        let other = one + 1000;
        assert_eq!(
            txn.add_index_entry(&t, IndexRef::Secondary(0), &key, other, &epoch),
            Err(crate::AbortReason::Conflict)
        );
    }
}

/// Primary-index leaves this commit inserted into through hints, so that a hint to the same leaf
/// taken earlier (at the version the leaf had before these inserts) still applies: the
/// transaction's own inserts are the only changes it skips over; any other change leaves the
/// leaf at a version no hint names, and the insert descends as usual. A New-Order's ten order
/// lines go to one leaf this way. Holds the last few leaves only.
#[derive(Default)]
struct HintedLeaves {
    /// `(table, the leaf as first hinted, the same leaf now)`.
    moves: [Option<(TableId, LeafHint, LeafHint)>; 4],
    next: usize,
}

impl HintedLeaves {
    /// `hint`, moved past this commit's own inserts into its leaf.
    fn follow(&self, table: TableId, hint: LeafHint) -> LeafHint {
        self.moves
            .iter()
            .flatten()
            .find(|(t, first, _)| *t == table && *first == hint)
            .map_or(hint, |&(_, _, now)| now)
    }

    /// Records that the leaf first hinted as `first` is now `now` after an insert through it.
    fn moved(&mut self, table: TableId, first: LeafHint, now: LeafHint) {
        if let Some(m) = self
            .moves
            .iter_mut()
            .flatten()
            .find(|(t, f, _)| *t == table && *f == first)
        {
            m.2 = now;
            return;
        }
        self.moves[self.next] = Some((table, first, now));
        self.next = (self.next + 1) % self.moves.len();
    }
}
