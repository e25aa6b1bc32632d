//! Writes: insert, update, delete, buffered in the transaction's write set until commit.
//!
//! A write reads the record as the transaction's snapshot has it, fails at once if another
//! transaction committed a newer version since (it could never commit: first committer wins), and
//! otherwise records the row the record will end with. Nothing is installed, so nothing here can
//! block or abort another transaction, however long this one stays paused. The caller's update
//! closure runs outside any region.

use std::ops::ControlFlow;
use std::sync::atomic::Ordering;

use overtake_runtime::preempt::record_access;
use sdd::{Guard, Ptr};

use super::install::Head;
use super::scan::Source;
use super::{Isolation, SCAN_BATCH, ScanOptions, Transaction};
use crate::catalog::table::{IndexRef, Table};
use crate::error::{AbortReason, Error, Result};
use crate::index::LeafHint;
use crate::mvcc::epoch::EpochGuard;
use crate::storage::key::{IndexKey, KeyBuf, KeyRange};
use crate::storage::record::{Oid, Version};
use crate::storage::row::{Row, RowMut, RowRef};
use crate::txn::footprint::{InsertLeaf, WriteKind};
use crate::txn::writeset::{Buffered, Target};

/// What a point write found under its key in the snapshot.
enum Found<'g> {
    /// A live row in record `oid`: the head, this version.
    Live(Oid, Ptr<'g, Version>, &'g Version),
    /// A deleted row whose record `oid` still holds the key.
    Deleted(Oid),
    /// Nothing; where the index would hold the key, if it has no entry for it at all.
    Absent(Option<LeafHint>),
}

impl Transaction<'_> {
    /// What the snapshot has under primary key `key` (not counting this transaction's writes).
    /// Fails with a conflict if a newer version was committed since the snapshot.
    fn find_for_write<'g>(
        &mut self,
        table: &Table,
        key: &[u8],
        guard: &'g Guard,
    ) -> Result<Found<'g>> {
        // A record the point cache names is the key's if its head carries the key (then the
        // index maps the key to it too); anything else is asked of the index. Writes do not fill
        // the cache, reads do: a key written by key alone (a queue's head, an order being
        // delivered) is seldom looked up again, and would only push others out.
        if let Some(oid) = table.cached_record(key, guard)
            && let Some(head) = table
                .records
                .slot(oid)
                .load(Ordering::Acquire, guard)
                .as_ref()
            && table.carries_primary_key(&head.row, key)
        {
            match self.found_record(table, oid, guard)? {
                // The head was a pending insert that then failed, or the record went since: the
                // key may well be another record's, so the index decides.
                Found::Absent(_) => {}
                found => return Ok(found),
            }
        }
        let lookup = self.find_primary(table, key);
        self.found_at(table, lookup, guard)
    }

    /// The record primary key `key` maps to, and where the key is or would go, for an insert:
    /// a lookup that also remembers the leaf it found and the leaf's upper fence. Inserts of
    /// ascending keys (a New-Order's ten order lines) then look each next key up in that leaf
    /// alone while it is unchanged, instead of descending the index again.
    fn find_for_insert(&mut self, table: &Table, key: &[u8]) -> (Option<Oid>, LeafHint) {
        let index = table.tree(IndexRef::Primary);
        if let Some(leaf) = &mut self.buf.insert_leaf
            && leaf.table == table.id()
            && key > leaf.last.as_bytes()
            && leaf.fence.as_ref().is_none_or(|f| key < f.as_bytes())
            && let Some(found) = index.get_in_leaf(leaf.hint, key)
        {
            leaf.last.set(key);
            return (found, leaf.hint);
        }
        let (found, hint, fence) = index.get_fenced(key);
        let mut last = KeyBuf::new();
        last.set(key);
        self.buf.insert_leaf = Some(InsertLeaf {
            table: table.id(),
            hint,
            last,
            fence,
        });
        (found, hint)
    }

    /// What the snapshot has in the record a primary-key lookup found (see
    /// [`find_for_write`](Self::find_for_write)).
    fn found_at<'g>(
        &mut self,
        table: &Table,
        (found, hint): (Option<Oid>, LeafHint),
        guard: &'g Guard,
    ) -> Result<Found<'g>> {
        match found {
            Some(oid) => self.found_record(table, oid, guard),
            None => Ok(Found::Absent(Some(hint))),
        }
    }

    /// What the snapshot has in record `oid`, which the key maps to.
    fn found_record<'g>(&mut self, table: &Table, oid: Oid, guard: &'g Guard) -> Result<Found<'g>> {
        match self.head_state(table, oid, self.read_snapshot(), guard) {
            Ok(Head::Writable(_, v)) if v.is_deleted() => Ok(Found::Deleted(oid)),
            Ok(Head::Writable(head, v)) => Ok(Found::Live(oid, head, v)),
            Ok(Head::Missing) => Ok(Found::Absent(None)),
            Err(reason) => Err(self.fail(reason)),
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
        self.insert_encoded(table, row.into_bytes())
    }

    /// [`insert`](Self::insert) of a row already encoded for `table`.
    pub(super) fn insert_encoded(&mut self, table: &Table, bytes: Box<[u8]>) -> Result<()> {
        let duplicate = || Error::DuplicateKey {
            table: table.name().to_owned(),
        };
        let hidden_key = table.schema().primary_key().is_empty();
        let key = table.primary_key(&table.row(&bytes), 0);
        // The record holding a deleted row under the key, which the insert writes over.
        // `Err` with where the key would go if no record holds it.
        let deleted = if hidden_key {
            // Every insert creates a new hidden row id.
            Err(None)
        } else if let Some(i) = self.buf.ws.by_key(table.id(), key.as_bytes()) {
            // This transaction wrote the key already: a row it deleted may be inserted again.
            let entry = self.buf.ws.get_mut_for_write(i);
            if entry.row.is_some() {
                return Err(duplicate());
            }
            entry.row = Some(bytes);
            entry.secondary_may_change = true;
            return Ok(());
        } else {
            self.lock_for_write(table, key.as_bytes())?;
            // The common case, a key no record holds, reads no version: no epoch is entered.
            let lookup = self.find_for_insert(table, key.as_bytes());
            let epoch = lookup.0.map(|_| EpochGuard::enter());
            let found = match &epoch {
                Some(epoch) => self.found_at(table, lookup, epoch.guard())?,
                None => Found::Absent(Some(lookup.1)),
            };
            self.check_revoked()?;
            match found {
                Found::Live(oid, ..) => {
                    self.check_revoked()?;
                    self.note_read(table, oid);
                    return Err(duplicate());
                }
                Found::Deleted(oid) => Ok(oid),
                Found::Absent(hint) => Err(hint),
            }
        };
        let (oid, target, hint) = match deleted {
            Ok(oid) => (oid, Target::Existing { base_live: false }, None),
            Err(hint) => (
                self.unpublished_oid(table),
                Target::Fresh { unpublished: true },
                hint,
            ),
        };
        // A table without a primary key uses the OID as its hidden row id.
        let key = if hidden_key {
            table.primary_key(&table.row(&bytes), oid)
        } else {
            key
        };
        self.buf.ws.push(Buffered {
            table: table.id(),
            oid,
            target,
            key: IndexKey::new(key.as_bytes()),
            row: Some(bytes),
            hint,
            // Writing over a deleted row: its entries are all considered again.
            secondary_may_change: true,
            read_at: self.lease.snapshot,
        });
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
        self.check_loggable_change(table)?;
        record_access();
        if let Some(i) = self.buf.ws.by_key(table.id(), key.as_bytes()) {
            let Some(current) = &self.buf.ws.get(i).row else {
                self.note_miss(table, key);
                return Ok(false);
            };
            let (bytes, keys_may_change) = changed_row(table, table.row(current), change)?;
            let entry = self.buf.ws.get_mut_for_write(i);
            entry.row = Some(bytes);
            entry.secondary_may_change |= keys_may_change;
            return Ok(true);
        }
        self.write_live_row(table, key, |current| {
            changed_row(table, current, change).map(|(row, keys)| (Some(row), keys))
        })
    }

    /// Updates every row whose primary key lies in `range`, in key order (reverse with
    /// `options.reverse`) and up to `options.limit` rows, as [`update`](Self::update) would each
    /// one: `change` receives a copy of the row to modify (`RowMut::as_ref` reads the row before
    /// the change). The scan finds the records, so no row is looked up again by its key (an
    /// `UPDATE ... WHERE key BETWEEN ...`). Returns how many rows were updated. An invalid value
    /// or a change of the primary key is returned as an error, leaving the rows before it updated
    /// and the transaction active.
    pub fn update_range(
        &mut self,
        table: &Table,
        range: &KeyRange,
        options: ScanOptions,
        mut change: impl FnMut(&mut RowMut<'_>),
    ) -> Result<usize> {
        self.check_loggable_change(table)?;
        // What the scan found: a write-set entry, or a record with the key its entry will have.
        enum Scanned {
            Own(usize),
            Record(Oid, IndexKey),
        }
        let mut found = Vec::new();
        self.scan_sourced(table, IndexRef::Primary, range, options, |_, source| {
            found.push(match source {
                Source::Own(i, _) => Scanned::Own(i),
                // The primary index's key, as stored: nothing to encode from the row.
                Source::Record(oid, key) => Scanned::Record(oid, IndexKey::new(key)),
            });
            ControlFlow::Continue(())
        })?;
        let mut updated = 0;
        // One epoch per batch of rows, as the scan had: entering one per row cost a Delivery
        // (ten orders' lines) 7% of its time; a long range still lets reclamation advance.
        let mut epoch = EpochGuard::enter();
        for (n, f) in found.into_iter().enumerate() {
            if n > 0 && n % SCAN_BATCH == 0 {
                drop(epoch);
                epoch = EpochGuard::enter();
            }
            record_access();
            match f {
                Scanned::Own(i) => {
                    let Some(current) = &self.buf.ws.get(i).row else {
                        unreachable!("a scan delivers only rows, not deletions")
                    };
                    let (bytes, keys_may_change) =
                        changed_row(table, table.row(current), &mut change)?;
                    let entry = self.buf.ws.get_mut_for_write(i);
                    entry.row = Some(bytes);
                    entry.secondary_may_change |= keys_may_change;
                }
                Scanned::Record(oid, key) => {
                    if self.locks_rows {
                        // A lock wait parks the task: no epoch is held across it.
                        drop(epoch);
                        let locked = self.lock_for_write(table, key.as_slice());
                        epoch = EpochGuard::enter();
                        locked?;
                    }
                    // The scan saw a live row of this record in the snapshot; a newer commit
                    // since is a conflict, as for `update`. (Under two-phase locking the lock
                    // keeps it the head, unless the lock was revoked: asked after the read.
                    // READ COMMITTED reads the head at the snapshot its lock renewed, which
                    // another writer may have deleted since the scan: that row is skipped.)
                    let head = self.head_state(table, oid, self.read_snapshot(), epoch.guard());
                    self.check_revoked()?;
                    let live = match head {
                        Ok(Head::Writable(head, v)) if !v.is_deleted() => (head, v),
                        Ok(_) if self.isolation == Isolation::ReadCommitted => continue,
                        Ok(_) => unreachable!("the scan's row is the record's head"),
                        Err(reason) => return Err(self.fail(reason)),
                    };
                    self.buffer_overwrite(table, (oid, key), live, epoch.guard(), |current| {
                        changed_row(table, current, &mut change).map(|(row, k)| (Some(row), k))
                    })?;
                }
            }
            updated += 1;
        }
        Ok(updated)
    }

    /// In a logged database, rows of a table without a primary key can be inserted but not
    /// changed: the log names a changed row by its key, and such a row's key is an id that
    /// recovery does not reproduce.
    fn check_loggable_change(&self, table: &Table) -> Result<()> {
        if self.engine.log.is_some() && table.schema().primary_key().is_empty() {
            return Err(Error::NotLogged {
                table: table.name().to_owned(),
            });
        }
        Ok(())
    }

    /// Deletes the row with primary key `key`. Returns false if there is no such row.
    pub fn delete(&mut self, table: &Table, key: &KeyBuf) -> Result<bool> {
        self.check(table)?;
        self.check_loggable_change(table)?;
        record_access();
        if let Some(i) = self.buf.ws.by_key(table.id(), key.as_bytes()) {
            let entry = self.buf.ws.get_mut_for_write(i);
            let deleted = entry.row.take().is_some();
            // Deleting its own insert leaves nothing to install, and so nothing that would show
            // at commit that the key is still free, which the insert relied on: that absence is
            // now a read like any miss (also when nothing was deleted, see `note_miss`).
            if !deleted || !entry.changes_anything() {
                self.note_miss(table, key);
            }
            return Ok(deleted);
        }
        self.write_live_row(table, key, |_| Ok((None, false)))
    }

    /// Buffers a write of the live row under `key` in the snapshot (a record this transaction has
    /// not written yet): `new_row` turns the current row into the new one (`None`: deleted), and
    /// says whether a column of a secondary index may have changed. False, with the absence
    /// recorded as a miss, if there is no live row.
    pub(super) fn write_live_row(
        &mut self,
        table: &Table,
        key: &KeyBuf,
        new_row: impl FnOnce(RowRef<'_>) -> Result<(Option<Box<[u8]>>, bool)>,
    ) -> Result<bool> {
        self.lock_for_write(table, key.as_bytes())?;
        let epoch = EpochGuard::enter();
        let Found::Live(oid, head, current) =
            self.find_for_write(table, key.as_bytes(), epoch.guard())?
        else {
            // "No such row" is an observation too: only while the locks hold.
            self.check_revoked()?;
            self.note_miss(table, key);
            return Ok(false);
        };
        let key = IndexKey::new(key.as_bytes());
        self.buffer_overwrite(table, (oid, key), (head, current), epoch.guard(), new_row)?;
        Ok(true)
    }

    /// Buffers the write of record `oid` (primary key `key`), whose live head `current` this
    /// transaction may write over: `new_row` turns it into the new row (`None`: deleted), as in
    /// [`write_live_row`](Self::write_live_row).
    fn buffer_overwrite(
        &mut self,
        table: &Table,
        (oid, key): (Oid, IndexKey),
        (head, current): (Ptr<'_, Version>, &Version),
        guard: &Guard,
        new_row: impl FnOnce(RowRef<'_>) -> Result<(Option<Box<[u8]>>, bool)>,
    ) -> Result<()> {
        // The row goes to application code (an update's closure): only while the locks hold.
        self.check_revoked()?;
        let (row, secondary_may_change) = new_row(table.row(&current.row))?;
        self.reserve(table, oid, (head, current), guard)?;
        self.buf.ws.push(Buffered {
            table: table.id(),
            oid,
            target: Target::Existing { base_live: true },
            key,
            row,
            hint: None,
            secondary_may_change,
            read_at: self.lease.snapshot,
        });
        Ok(())
    }
}

impl Transaction<'_> {
    /// In a promoted attempt (see `Database::run`), reserves record `oid`, about to be written for
    /// the first time: a pending copy of its head row, so that other writers conflict with it
    /// until this transaction ends; the commit installs the real write on top. Only ever done
    /// inside a non-preemptible region, so the reservation is never held by a paused context.
    fn reserve(
        &mut self,
        table: &Table,
        oid: Oid,
        (head, current): (Ptr<'_, Version>, &Version),
        guard: &Guard,
    ) -> Result<()> {
        if !self.reserving {
            return Ok(());
        }
        debug_assert!(
            overtake_runtime::region::depth() > 0,
            "reserved outside a region"
        );
        if !self.install(table, oid, head, Box::from(&*current.row), guard) {
            return Err(self.fail(AbortReason::Conflict));
        }
        self.note_write(table, oid, WriteKind::Overwrite);
        Ok(())
    }
}

/// `old` changed by `change`, encoded, and whether a column of a secondary index was set (if
/// not, the row keeps its secondary keys). Refuses a change of the primary key.
fn changed_row(
    table: &Table,
    old: RowRef<'_>,
    change: impl FnOnce(&mut RowMut<'_>),
) -> Result<(Box<[u8]>, bool)> {
    let mut copy = old.to_mut();
    change(&mut copy);
    let pk = table.schema().primary_key();
    let key_set = copy.may_have_set(pk);
    let secondary_set = copy.may_have_set(table.secondary_columns());
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
            reason: "an update cannot change the primary key (delete the row and insert it)".into(),
        });
    }
    Ok((bytes, secondary_set))
}
