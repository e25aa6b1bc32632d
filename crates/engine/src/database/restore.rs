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
use crate::index::LeafHint;
use crate::limits::MAX_KEY_LEN;
use crate::mvcc::epoch::EpochGuard;
use crate::storage::key::KeyBuf;
use crate::storage::record::{DEAD, Oid, OidBlock, RowBytes, Version};

/// One recovery thread's writer into storage.
pub(super) struct Restorer<'t> {
    /// The commit timestamp of every version written: one at or below the clock once the
    /// database opens, so that every snapshot sees them.
    stamp: u64,
    /// What this thread keeps per table it wrote.
    tables: Vec<PerTable<'t>>,
}

struct PerTable<'t> {
    table: &'t Table,
    /// The OIDs the table handed this thread and it has not used yet.
    block: OidBlock,
    /// Where the last row inserted went (see [`Appending`]; `None`: unknown).
    appending: Option<Appending>,
}

/// The primary-index leaf the last inserted row of a table went to: while it is unchanged but
/// for those inserts, a key after that row's and before the leaf's upper fence belongs in it too
/// (a leaf's range only widens while its version stands), so the next row of a checkpoint,
/// whose rows come in key order, goes there without a descent.
struct Appending {
    hint: LeafHint,
    /// A key that belongs in the leaf: the last one inserted there, or looked up.
    last: KeyBuf,
    /// The smallest key of the leaves to its right (`None`: it is the last leaf).
    fence: Option<KeyBuf>,
}

impl<'t> Restorer<'t> {
    pub(super) fn new(stamp: u64) -> Self {
        Restorer {
            stamp,
            tables: Vec::new(),
        }
    }

    /// Inserts `row` (stored bytes of `table`) as a new record: under its primary key, or a
    /// fresh hidden id if the table has none. An error if a record holds the key already.
    pub(super) fn insert(&mut self, table: &'t Table, row: Box<[u8]>) -> Result<(), String> {
        let i = self.per_table(table);
        let oid = self.allocate(i);
        let key = table.primary_key(&table.row(&row), oid);
        let hint = match &self.tables[i].appending {
            // The tree orders keys as their bytes do.
            Some(at)
                if key.as_bytes() > at.last.as_bytes()
                    && at
                        .fence
                        .as_ref()
                        .is_none_or(|fence| key.as_bytes() < fence.as_bytes()) =>
            {
                at.hint
            }
            _ => {
                let (_, hint, fence) = table.tree(IndexRef::Primary).get_fenced(key.as_bytes());
                self.tables[i].appending = Some(Appending {
                    hint,
                    last: key.clone(),
                    fence,
                });
                hint
            }
        };
        let created = self.create(table, oid, key.as_bytes(), row, Some(hint))?;
        let at = &mut self.tables[i].appending;
        match (created, at.as_mut()) {
            (Some(now), Some(at)) => {
                at.hint = now;
                at.last = key;
            }
            // It went elsewhere (the leaf was full or changed): the next row looks again.
            _ => *at = None,
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
                    if !table.carries_primary_key(&row, key) {
                        return Err(logged_under_another_key(table));
                    }
                    let i = self.per_table(table);
                    let oid = self.allocate(i);
                    self.create(table, oid, key, row.into(), Some(hint))
                        .map(|_| ())
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
            return Err(logged_under_another_key(table));
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

    /// Fills the unpublished record `oid` with `row`, which carries `key`, and enters it under
    /// `key` (through `hint`, the leaf a lookup found it belongs in, if unchanged) and its
    /// secondary keys. Returns the hint's leaf at its new version if the key went there; on an
    /// error, `oid` goes back unused.
    fn create(
        &self,
        table: &Table,
        oid: Oid,
        key: &[u8],
        row: Box<[u8]>,
        hint: Option<LeafHint>,
    ) -> Result<Option<LeafHint>, String> {
        let fail = |reason: String| {
            table.records.release_unpublished(oid);
            Err(reason)
        };
        let primary = table.tree(IndexRef::Primary);
        let entered = match hint {
            Some(hint) => primary.insert_hinted(key, oid, hint),
            None => primary.insert(key, oid).map(|()| None),
        };
        let Ok(now) = entered else {
            return fail(format!(
                "two rows of {} under one primary key",
                table.name()
            ));
        };
        let view = table.row(&row);
        for i in 0..table.secondary_count() {
            let secondary = table.secondary_key(i, &view, oid);
            if table
                .tree(IndexRef::Secondary(i))
                .insert(secondary.as_bytes(), oid)
                .is_err()
            {
                return fail(duplicate_secondary(table));
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
        Ok(now)
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

    /// Where this thread keeps what it knows of `table`.
    fn per_table(&mut self, table: &'t Table) -> usize {
        match self
            .tables
            .iter()
            .position(|t| std::ptr::eq(t.table, table))
        {
            Some(i) => i,
            None => {
                self.tables.push(PerTable {
                    table,
                    block: OidBlock::default(),
                    appending: None,
                });
                self.tables.len() - 1
            }
        }
    }

    /// A fresh OID of table `i` (see [`per_table`](Self::per_table)) from this thread's block
    /// (no transaction runs, so none waits to be recycled: the watermark given is 0).
    fn allocate(&mut self, i: usize) -> Oid {
        let PerTable { table, block, .. } = &mut self.tables[i];
        let region = NoPreemptGuard::new();
        table.records.allocate(0, block, &region)
    }
}

impl Drop for Restorer<'_> {
    /// The OIDs a block handed out but no row took go back for the transactions after opening.
    fn drop(&mut self) {
        for PerTable { table, block, .. } in &mut self.tables {
            for oid in block.take_unused() {
                table.records.release_unpublished(oid);
            }
        }
    }
}

fn logged_under_another_key(table: &Table) -> String {
    format!("a row of {} logged under another primary key", table.name())
}

fn duplicate_secondary(table: &Table) -> String {
    format!(
        "two rows of {} under one key of a secondary index",
        table.name()
    )
}

#[cfg(test)]
mod tests {
    use super::Restorer;
    use crate::storage::schema::{ColumnType, TableSchema};
    use crate::{Database, Isolation, Options, Priority};

    /// Rows inserted in key order between rows already in the index (leaves half full, as
    /// inserts in random order leave them) go to the leaf their key belongs in, not to the leaf
    /// the row before went to: each is found by a lookup, and the index holds no other entry.
    #[test]
    fn rows_in_key_order_go_where_their_keys_belong() {
        let db = Database::in_memory(Options::default());
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
        let row = |id: i64| {
            let row = t.row_builder().int(0, id).str(1, "o").finish();
            row.expect("row").into_bytes()
        };
        let n = 4_000;
        let mut txn = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
        // The even keys, in an order that splits leaves in the middle.
        for i in 0..n {
            let id = (i * 7_919) % n * 2;
            let row = t.row_builder().int(0, id).str(1, "o").finish();
            txn.insert(&t, row.expect("row")).expect("insert");
        }
        txn.commit().expect("commit");
        drop(txn);
        let mut restorer = Restorer::new(db.engine.txns.now());
        for id in (0..n).map(|i| i * 2 + 1) {
            restorer.insert(&t, row(id)).expect("restore");
        }
        drop(restorer);
        let mut txn = db.begin(Priority::LOW, Isolation::Snapshot).expect("begin");
        for id in 0..2 * n {
            let key = t.key().int(id).finish().expect("key");
            assert_eq!(txn.get(&t, &key, |r| r.int(0)).expect("get"), Some(id));
        }
        drop(txn);
        let census = db.census();
        let rows = 2 * n as u64;
        assert_eq!(
            (
                census.live_records,
                census.index_entries,
                census.dangling_index_entries
            ),
            (rows, 2 * rows, 0),
            "{census:?}"
        );
    }
}
