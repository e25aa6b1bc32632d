//! Writes: insert, update, delete.
//!
//! Each write settles the record's head first (waiting out a commit or rollback in flight), refuses
//! if another transaction got there first, and then links a new pending version in front of the head
//! with one compare-and-swap. Because the new version points at the old head before it is published,
//! readers always find a complete chain. The caller's update closure runs outside any region.

use std::sync::atomic::{AtomicU64, Ordering};

use overtake_runtime::NoPreemptGuard;
use overtake_runtime::preempt::record_access;
use sdd::{AtomicShared, Guard, Ptr, Shared, Tag};

use super::{NewKey, StaleKey, Transaction, WriteKind};
use crate::epoch::EpochGuard;
use crate::error::{AbortReason, Error, Result};
use crate::key::{IndexKey, KeyBuf};
use crate::mvcc::HeadCheck;
use crate::record::{DEAD, Oid, Version};
use crate::row::{Row, RowMut};
use crate::table::{IndexRef, Table};

/// Outcome of trying to create a record for a new key.
enum Fresh {
    /// The record exists under its key.
    Created(Oid),
    /// The key already maps to `oid`; the row is handed back.
    KeyExists { oid: Oid, row: Box<[u8]> },
}

/// The state of a record's head, from a writer's point of view.
enum Head<'g> {
    /// The record may be written; this is the newest version (committed before the snapshot, or ours).
    Writable(Ptr<'g, Version>, &'g Version),
    /// No record (dead and leaving the indexes).
    Missing,
}

impl Transaction<'_> {
    /// Waits until the head of `oid` is settled and checks that this transaction may write it.
    fn settle_head<'g>(&mut self, table: &Table, oid: Oid, guard: &'g Guard) -> Result<Head<'g>> {
        loop {
            let head = table.records.slot(oid).load(Ordering::Acquire, guard);
            let Some(v) = head.as_ref() else {
                return Ok(Head::Missing);
            };
            match self.db.txns().check_writable(v, self.reader()) {
                HeadCheck::Writable => return Ok(Head::Writable(head, v)),
                HeadCheck::Conflict => return Err(self.fail(AbortReason::Conflict)),
                HeadCheck::Retry => std::hint::spin_loop(),
            }
        }
    }

    /// Links a new pending version in front of `expected`. False if the head moved meanwhile.
    fn install(
        &mut self,
        table: &Table,
        oid: Oid,
        expected: Ptr<'_, Version>,
        row: Box<[u8]>,
        guard: &Guard,
    ) -> bool {
        let next = expected
            .get_shared()
            .map_or_else(AtomicShared::null, AtomicShared::from);
        let version = Shared::new(Version {
            stamp: AtomicU64::new(self.lease.stamp),
            row,
            next,
        });
        let _region = NoPreemptGuard::new();
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
        if installed {
            self.db.txns().slot(self.lease.slot).counters.add_created(1);
        }
        installed
    }

    /// Adds `key -> oid` to one of `table`'s indexes, remembering it for rollback. An entry that
    /// already maps to `oid` (kept from an older version) is fine. An entry that maps to a record
    /// no version of which carries the key is garbage (a dead record's, or a stale key whose
    /// retirement has not been processed yet): it is taken over on the spot, never waited for,
    /// because whoever would remove it may be a paused transaction's slot.
    fn add_index_entry(
        &mut self,
        table: &Table,
        index: IndexRef,
        key: &KeyBuf,
        oid: Oid,
        epoch: &EpochGuard,
    ) -> Result<()> {
        let tree = table.tree(index);
        loop {
            let (entered, added) = match tree.insert(key.as_bytes(), oid) {
                Ok(()) => (true, true),
                // Kept from an older version: reused. Its retirement may already have been
                // processed (skipped because our pending version carries the key), so a rollback
                // must look at it again.
                Err(existing) if existing == oid => (true, false),
                Err(existing) => {
                    if table.record_carries(index, key.as_bytes(), existing, epoch.guard()) {
                        // Keys embed the primary key, so a live record carrying this one means
                        // two rows share a primary key.
                        return Err(self.fail(AbortReason::Conflict));
                    }
                    (tree.replace(key.as_bytes(), existing, oid), true)
                }
            };
            if entered {
                self.buf.new_keys.push(NewKey {
                    table: table.id(),
                    index,
                    key: IndexKey::new(key.as_bytes()),
                    oid,
                    added,
                });
                return Ok(());
            }
            // The entry changed between the two index calls: look again.
        }
    }

    /// Inserts `row` (built with `table.row_builder()`). Fails with [`Error::DuplicateKey`] if a row
    /// with the same primary key is visible; that error leaves the transaction active.
    pub fn insert(&mut self, table: &Table, row: Row) -> Result<()> {
        self.check(table)?;
        record_access();
        if row.owner() != table.layout().owner() {
            return Err(Error::InvalidValue {
                column: table.name().to_owned(),
                reason: "the row was built for another table".into(),
            });
        }
        let mut bytes = row.into_bytes();
        let epoch = EpochGuard::enter();
        let guard = epoch.guard();
        let key = table.primary_key(&table.row(&bytes), 0);
        loop {
            // Most inserts are of new keys: create the record first and let the index decide, so
            // the common case costs one index search.
            let oid = match self.insert_fresh(table, &key, bytes, &epoch) {
                Fresh::Created(oid) => return self.add_secondary_entries(table, oid, &epoch),
                Fresh::KeyExists { oid, row } => {
                    bytes = row;
                    oid
                }
            };
            match self.settle_head(table, oid, guard)? {
                // The key's record is dead and its entry not yet removed: remove it ourselves
                // (only if it still maps to the dead record) and insert afresh.
                Head::Missing => {
                    table.tree(IndexRef::Primary).remove(key.as_bytes(), oid);
                }
                Head::Writable(_, v) if !v.is_deleted() => {
                    self.note_read(table, oid);
                    return Err(Error::DuplicateKey {
                        table: table.name().to_owned(),
                    });
                }
                Head::Writable(head, marker) => {
                    // Over a deleted row (its image is kept below the marker until the record's
                    // keys are removed): the image's secondary keys that the new row does not
                    // carry become stale, as in an update.
                    let changed = marker
                        .next
                        .load(Ordering::Acquire, guard)
                        .as_ref()
                        .map(|image| changed_keys(table, oid, &image.row, &bytes))
                        .unwrap_or_default();
                    if !self.install(table, oid, head, bytes, guard) {
                        return Err(self.fail(AbortReason::Conflict));
                    }
                    self.note_write(table, oid, WriteKind::Overwrite);
                    self.add_secondary_entries(table, oid, &epoch)?;
                    for (i, before, _) in changed {
                        self.retire_key(table, i, &before, oid);
                    }
                    return Ok(());
                }
            }
        }
    }

    /// Creates a new record holding `row` and enters it under `key` (or, for a hidden row id, under
    /// its OID). If the key is taken, undoes the record and hands the row back.
    fn insert_fresh(
        &mut self,
        table: &Table,
        key: &KeyBuf,
        row: Box<[u8]>,
        epoch: &EpochGuard,
    ) -> Fresh {
        let guard = epoch.guard();
        let oid = {
            let region = NoPreemptGuard::new();
            table.records.allocate(self.db.txns().watermark(), &region)
        };
        let slot = table.records.slot(oid);
        let empty = slot.load(Ordering::Acquire, guard);
        if !self.install(table, oid, empty, row, guard) {
            unreachable!("a newly allocated OID is not visible to anyone else");
        }
        let mine = slot.load(Ordering::Acquire, guard);
        let Some(version) = mine.as_ref() else {
            unreachable!("the version was just installed");
        };
        let key = if table.schema().primary_key().is_empty() {
            table.primary_key(&table.row(&version.row), oid)
        } else {
            key.clone()
        };
        match table.tree(IndexRef::Primary).insert(key.as_bytes(), oid) {
            Ok(()) => {
                self.buf.new_keys.push(NewKey {
                    table: table.id(),
                    index: IndexRef::Primary,
                    key: IndexKey::new(key.as_bytes()),
                    oid,
                    added: true,
                });
                self.note_write(table, oid, WriteKind::FreshInsert);
                Fresh::Created(oid)
            }
            Err(existing) => {
                // The OID was never published, so it is reusable at once.
                let row = version.row.clone();
                let _region = NoPreemptGuard::new();
                drop(slot.swap((None, DEAD), Ordering::AcqRel));
                table.records.release_unpublished(oid);
                Fresh::KeyExists { oid: existing, row }
            }
        }
    }

    /// Enters `oid`'s pending version under every secondary index.
    fn add_secondary_entries(&mut self, table: &Table, oid: Oid, epoch: &EpochGuard) -> Result<()> {
        let guard = epoch.guard();
        if table.secondary_count() == 0 {
            return Ok(());
        }
        let head = table.records.slot(oid).load(Ordering::Acquire, guard);
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

    /// Updates the row with primary key `key`: `change` receives a copy of the current row to modify.
    /// Returns false if there is no such row. An invalid value set by `change`, or a change of the
    /// primary key, is returned as an error and leaves the transaction active (nothing was
    /// written).
    pub fn update(
        &mut self,
        table: &Table,
        key: &KeyBuf,
        change: impl FnOnce(&mut RowMut<'_>),
    ) -> Result<bool> {
        self.check(table)?;
        record_access();
        let epoch = EpochGuard::enter();
        let guard = epoch.guard();
        let Some(oid) = table.tree(IndexRef::Primary).get(key.as_bytes()) else {
            self.note_miss(table, key);
            return Ok(false);
        };
        let (head, current) = match self.settle_head(table, oid, guard)? {
            Head::Writable(head, v) if !v.is_deleted() => (head, v),
            _ => {
                self.note_miss(table, key);
                return Ok(false);
            }
        };
        let old = table.row(&current.row);
        let mut copy = old.to_mut();
        change(&mut copy);
        let pk = table.schema().primary_key();
        let key_set = copy.may_have_set(pk);
        let bytes = copy.into_bytes()?;
        // Only if the closure set a key column can the key have changed; key columns are never
        // NULL, so their encoded bytes decide.
        let new = table.row(&bytes);
        let key_kept = !key_set
            || pk
                .iter()
                .all(|&c| old.column_bytes(c) == new.column_bytes(c));
        if !key_kept {
            return Err(Error::InvalidValue {
                column: table.primary_key_names(),
                reason: "an update cannot change the primary key (delete the row and insert it)"
                    .into(),
            });
        }
        // Secondary keys the update changes: new entries are added, old ones retired at commit.
        let changed = changed_keys(table, oid, &current.row, &bytes);
        if !self.install(table, oid, head, bytes, guard) {
            return Err(self.fail(AbortReason::Conflict));
        }
        self.note_write(table, oid, WriteKind::Overwrite);
        for (i, before, after) in changed {
            self.add_index_entry(table, IndexRef::Secondary(i), &after, oid, &epoch)?;
            self.retire_key(table, i, &before, oid);
        }
        Ok(true)
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

    /// Deletes the row with primary key `key`. Returns false if there is no such row.
    pub fn delete(&mut self, table: &Table, key: &KeyBuf) -> Result<bool> {
        self.check(table)?;
        record_access();
        let epoch = EpochGuard::enter();
        let guard = epoch.guard();
        let Some(oid) = table.tree(IndexRef::Primary).get(key.as_bytes()) else {
            self.note_miss(table, key);
            return Ok(false);
        };
        let head = match self.settle_head(table, oid, guard)? {
            Head::Writable(head, v) if !v.is_deleted() => head,
            _ => {
                self.note_miss(table, key);
                return Ok(false);
            }
        };
        // An empty row marks the deletion; the row it deletes stays linked below it.
        if !self.install(table, oid, head, Box::default(), guard) {
            return Err(self.fail(AbortReason::Conflict));
        }
        self.note_write(table, oid, WriteKind::Delete);
        Ok(true)
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
    use std::sync::mpsc;
    use std::time::Duration;

    use overtake_runtime::NoPreemptGuard;

    use crate::record::DEAD;
    use crate::schema::{ColumnType, TableSchema};
    use crate::table::IndexRef;
    use crate::{Database, Isolation, Options, Priority};

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
            .begin(Priority::Low, Isolation::Serializable)
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
            let db = Database::open(Options::default());
            let t = table(&db);
            let stale = if dead {
                let region = NoPreemptGuard::new();
                let oid = t.records.allocate(0, &region);
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
                .begin(Priority::High, Isolation::Serializable)
                .expect("begin");
            let result = txn.insert(&t, row).and_then(|()| txn.commit());
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
        let db = Database::open(Options::default());
        let t = table(&db);
        let one = t
            .tree(IndexRef::Primary)
            .get(t.key().int(1).finish().expect("key").as_bytes())
            .expect("row 1");
        // Plant row 1's own secondary key again under a second key: only reachable if two
        // records share a primary key, which must fail rather than steal the entry.
        let mut txn = db
            .begin(Priority::High, Isolation::Serializable)
            .expect("begin");
        let key = {
            let epoch = crate::epoch::EpochGuard::enter();
            let head = t
                .records
                .slot(one)
                .load(std::sync::atomic::Ordering::Acquire, epoch.guard());
            let v = head.as_ref().expect("row 1's version");
            t.secondary_key(0, &t.row(&v.row), one)
        };
        let epoch = crate::epoch::EpochGuard::enter();
        let other = one + 1000;
        assert_eq!(
            txn.add_index_entry(&t, IndexRef::Secondary(0), &key, other, &epoch),
            Err(crate::Error::Aborted(crate::AbortReason::Conflict))
        );
    }
}
