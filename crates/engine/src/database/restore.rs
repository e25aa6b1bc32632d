//! Recovery's direct path into storage: makes rows what a checkpoint or the log says by writing
//! record slots and index entries in place, without transactions.
//!
//! Replay through transactions cost a write set entry, two head checks, a commit and a
//! collector item per logged write (measured: replay ran at ~105 MB/s of log on two cores,
//! a fifth of it in `head_state`, `WriteSet::push`, `install` and `prune`). While a database
//! opens no transaction runs and no snapshot exists, so none of that protects anything: a
//! record's head is replaced by a single committed version, the versions it replaces are
//! dropped (freed by the epoch like any other), and index entries are added or removed at once.
//!
//! Must never run while the database is open to transactions: it ignores pending versions,
//! snapshots and the collector. Each thread restores records of its own (by primary key, see
//! `open::partition`), so two restorers never write one record; the indexes they share are
//! concurrent.

use std::sync::atomic::{AtomicU64, Ordering};

use overtake_runtime::NoPreemptGuard;
use sdd::{AtomicShared, Shared, Tag};

use super::fold::Change;
use crate::catalog::table::{IndexRef, Table};
use crate::limits::MAX_KEY_LEN;
use crate::mvcc::epoch::EpochGuard;
use crate::storage::record::{DEAD, Oid, OidBlock, RowBytes, Version};

/// One recovery thread's writer into storage.
pub(super) struct Restorer<'t> {
    /// The commit timestamp of every version written: one at or below the clock once the
    /// database opens, so that every snapshot sees them.
    stamp: u64,
    /// The OIDs each table handed this thread and it has not used yet.
    blocks: Vec<(&'t Table, OidBlock)>,
}

impl<'t> Restorer<'t> {
    pub(super) fn new(stamp: u64) -> Self {
        Restorer {
            stamp,
            blocks: Vec::new(),
        }
    }

    /// Inserts `row` (stored bytes of `table`) as a new record: under its primary key, or a
    /// fresh hidden id if the table has none. An error if a record holds the key already.
    pub(super) fn insert(&mut self, table: &'t Table, row: Box<[u8]>) -> Result<(), String> {
        let oid = self.allocate(table);
        let key = table.primary_key(&table.row(&row), oid);
        if let Err(e) = self.create(table, oid, key.as_bytes(), row, None) {
            table.records.release_unpublished(oid);
            return Err(e);
        }
        Ok(())
    }

    /// Makes the record under primary `key` of `table` (which has a primary key) what
    /// `change` says.
    pub(super) fn change(
        &mut self,
        table: &'t Table,
        key: &[u8],
        change: Change<'_>,
    ) -> Result<(), String> {
        if key.len() > MAX_KEY_LEN {
            return Err(format!("a key of {} bytes", key.len()));
        }
        let (found, hint) = table.tree(IndexRef::Primary).get_hinted(key);
        let Some(oid) = found else {
            return match change {
                Change::Row(row) => {
                    let oid = self.allocate(table);
                    let created = self.create(table, oid, key, row.into(), Some(hint));
                    if created.is_err() {
                        table.records.release_unpublished(oid);
                    }
                    created
                }
                // As replay through transactions did: deleting what is not there is nothing.
                Change::Deleted => Ok(()),
                Change::Patched(_) => Err(format!(
                    "a change to a row of {} that is not there",
                    table.name()
                )),
            };
        };
        let epoch = EpochGuard::enter();
        let guard = epoch.guard();
        let slot = table.records.slot(oid);
        let head = slot.load(Ordering::Acquire, guard);
        let Some(old) = head.as_ref().filter(|v| !v.is_deleted()) else {
            return Err(format!(
                "{}'s index names a record with no row",
                table.name()
            ));
        };
        let row: Box<[u8]> = match change {
            Change::Deleted => {
                drop(slot.swap((None, DEAD), Ordering::AcqRel));
                self.remove_entries(table, oid, &old.row, key);
                table.records.release(oid, self.stamp);
                return Ok(());
            }
            Change::Row(row) => row.into(),
            Change::Patched(patches) => {
                let mut row: Box<[u8]> = Box::from(&*old.row);
                for patch in patches {
                    patch
                        .apply_in_place(&mut row)
                        .map_err(|e| format!("{}: {e}", table.name()))?;
                }
                row
            }
        };
        if !table.carries_primary_key(&row, key) {
            return Err(format!(
                "a row of {} logged under another primary key",
                table.name()
            ));
        }
        let (before, after) = (table.row(&old.row), table.row(&row));
        for i in 0..table.secondary_count() {
            let (was, now) = (
                table.secondary_key(i, &before, oid),
                table.secondary_key(i, &after, oid),
            );
            if was != now {
                let tree = table.tree(IndexRef::Secondary(i));
                tree.remove(was.as_bytes(), oid);
                tree.insert(now.as_bytes(), oid)
                    .map_err(|_| duplicate_secondary(table))?;
            }
        }
        // The replaced version goes with the epoch, as an unlinked one does.
        drop(slot.swap((Some(self.version(row)), Tag::None), Ordering::AcqRel));
        Ok(())
    }

    /// Fills the unpublished record `oid` with `row` and enters it under `key` and its
    /// secondary keys.
    fn create(
        &self,
        table: &Table,
        oid: Oid,
        key: &[u8],
        row: Box<[u8]>,
        hint: Option<crate::index::LeafHint>,
    ) -> Result<(), String> {
        if !table.carries_primary_key(&row, key) && !table.schema().primary_key().is_empty() {
            return Err(format!(
                "a row of {} logged under another primary key",
                table.name()
            ));
        }
        let primary = table.tree(IndexRef::Primary);
        let entered = match hint {
            Some(hint) => primary.insert_hinted(key, oid, hint).map(|_| ()),
            None => primary.insert(key, oid),
        };
        if entered.is_err() {
            return Err(format!(
                "two rows of {} under one primary key",
                table.name()
            ));
        }
        let view = table.row(&row);
        for i in 0..table.secondary_count() {
            let secondary = table.secondary_key(i, &view, oid);
            if table
                .tree(IndexRef::Secondary(i))
                .insert(secondary.as_bytes(), oid)
                .is_err()
            {
                return Err(duplicate_secondary(table));
            }
        }
        let epoch = EpochGuard::enter();
        drop(
            table
                .records
                .slot(oid)
                .swap((Some(self.version(row)), Tag::None), Ordering::AcqRel),
        );
        drop(epoch);
        Ok(())
    }

    /// Removes the index entries of record `oid`, whose row was `row` under primary `key`.
    fn remove_entries(&self, table: &Table, oid: Oid, row: &[u8], key: &[u8]) {
        table.tree(IndexRef::Primary).remove(key, oid);
        let row = table.row(row);
        for i in 0..table.secondary_count() {
            table
                .tree(IndexRef::Secondary(i))
                .remove(table.secondary_key(i, &row, oid).as_bytes(), oid);
        }
    }

    fn version(&self, row: Box<[u8]>) -> Shared<Version> {
        Shared::new(Version {
            stamp: AtomicU64::new(self.stamp),
            row: RowBytes::new(row, 1),
            next: AtomicShared::null(),
        })
    }

    /// A fresh OID of `table` from this thread's block (no transaction runs, so none waits to
    /// be recycled: the watermark given is 0).
    fn allocate(&mut self, table: &'t Table) -> Oid {
        let i = match self
            .blocks
            .iter()
            .position(|(t, _)| std::ptr::eq(*t, table))
        {
            Some(i) => i,
            None => {
                self.blocks.push((table, OidBlock::default()));
                self.blocks.len() - 1
            }
        };
        let region = NoPreemptGuard::new();
        table.records.allocate(0, &mut self.blocks[i].1, &region)
    }
}

impl Drop for Restorer<'_> {
    /// The OIDs a block handed out but no row took go back for the transactions after opening.
    fn drop(&mut self) {
        for (table, block) in &mut self.blocks {
            for oid in block.take_unused() {
                table.records.release_unpublished(oid);
            }
        }
    }
}

fn duplicate_secondary(table: &Table) -> String {
    format!(
        "two rows of {} under one key of a secondary index",
        table.name()
    )
}
