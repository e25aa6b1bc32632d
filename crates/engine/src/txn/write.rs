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
    /// already maps to `oid` (kept from an older version) is fine; one that maps to a dead record is
    /// waited out while the collector removes it.
    fn add_index_entry(
        &mut self,
        table: &Table,
        index: IndexRef,
        key: &KeyBuf,
        oid: Oid,
        epoch: &EpochGuard,
    ) -> Result<()> {
        loop {
            match table.tree(index).insert(key.as_bytes(), oid) {
                Ok(()) => {
                    self.buf.new_keys.push(NewKey {
                        table: table.id(),
                        index,
                        key: IndexKey::new(key.as_bytes()),
                        oid,
                    });
                    return Ok(());
                }
                Err(existing) if existing == oid => return Ok(()),
                Err(existing) => {
                    let head = table
                        .records
                        .slot(existing)
                        .load(Ordering::Acquire, epoch.guard());
                    if !(head.is_null() && head.tag() == DEAD) {
                        // Secondary keys embed the primary key, so only a leftover of a dead record
                        // can collide; anything else means two live rows share a key.
                        return Err(self.fail(AbortReason::Conflict));
                    }
                    std::hint::spin_loop();
                }
            }
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
                // The collector is removing this key: try again.
                Head::Missing => std::hint::spin_loop(),
                Head::Writable(_, v) if !v.is_deleted() => {
                    self.note_read(table, oid);
                    return Err(Error::DuplicateKey {
                        table: table.name().to_owned(),
                    });
                }
                Head::Writable(head, _) => {
                    if !self.install(table, oid, head, bytes, guard) {
                        return Err(self.fail(AbortReason::Conflict));
                    }
                    self.note_write(table, oid, WriteKind::Overwrite);
                    return self.add_secondary_entries(table, oid, &epoch);
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
    /// Returns false if there is no such row. An invalid value set by `change` is returned as an error
    /// and leaves the transaction active (nothing was written).
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
        let bytes = copy.into_bytes()?;
        // Secondary keys the update changes: new entries are added, old ones retired at commit.
        let mut changed = Vec::new();
        for i in 0..table.secondary_count() {
            let before = table.secondary_key(i, &old, oid);
            let after = table.secondary_key(i, &table.row(&bytes), oid);
            if before != after {
                changed.push((i, before, after));
            }
        }
        if !self.install(table, oid, head, bytes, guard) {
            return Err(self.fail(AbortReason::Conflict));
        }
        self.note_write(table, oid, WriteKind::Overwrite);
        for (i, before, after) in changed {
            self.add_index_entry(table, IndexRef::Secondary(i), &after, oid, &epoch)?;
            self.buf.stale_keys.push(StaleKey {
                table: table.id(),
                index: i,
                key: IndexKey::new(before.as_bytes()),
                oid,
            });
        }
        Ok(true)
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
