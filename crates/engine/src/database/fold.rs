//! Folding a log segment's writes to what each record ends with, before any reaches storage.
//!
//! A segment of TPC-C's log writes each record it touches about twice (measured by kind: a
//! stock row several times, an order line inserted and then delivered, a new-order row inserted
//! and then deleted, every district row thousands of times). What storage must end with is the
//! last image of each record, with the patches after it applied: folded in memory (one hash
//! probe per write), a record costs one index descent and one version however often it was
//! written, and the records are then restored in key order, so that descents share the upper
//! levels of the index and leaves are visited in turn.
//!
//! Must never reorder two writes of one record, and never fold writes of different records into
//! one: records are told apart by table and primary key, which is what the log names them by.

use std::borrow::Cow;
use std::collections::hash_map::Entry;

use rustc_hash::FxHashMap;

use crate::catalog::table::Table;
use crate::log::record::{Image, Patch};

/// What a record ends with after a segment's writes.
pub(super) enum Change<'l> {
    /// It is deleted (if it was there).
    Deleted,
    /// It holds this row.
    Row(Cow<'l, [u8]>),
    /// The row it held before the segment, changed by these patches in order.
    Patched(Vec<Patch<'l>>),
}

impl<'l> Change<'l> {
    /// What a record's first write in the segment leaves.
    fn from_first(image: Image<'l>) -> Self {
        match image {
            Image::Deleted => Change::Deleted,
            Image::Row(row) => Change::Row(Cow::Borrowed(row)),
            Image::Patch(patch) => Change::Patched(vec![patch]),
        }
    }
}

/// A row inserted into a table without a primary key.
pub(super) type KeylessRow<'t, 'l> = (&'t Table, &'l [u8]);

/// What the record under a primary key of a table ends with.
pub(super) type KeyedChange<'t, 'l> = (&'t Table, &'l [u8], Change<'l>);

/// One partition's writes of one segment, folded per record.
pub(super) struct Folded<'t, 'l> {
    records: FxHashMap<(u32, &'l [u8]), (&'t Table, Change<'l>)>,
    /// Rows inserted into tables without a primary key, in log order: each is a new record.
    keyless: Vec<KeylessRow<'t, 'l>>,
}

impl<'t, 'l> Folded<'t, 'l> {
    /// Room for about `records` records without growing.
    pub(super) fn with_capacity(records: usize) -> Self {
        Folded {
            records: FxHashMap::with_capacity_and_hasher(records, Default::default()),
            keyless: Vec::new(),
        }
    }

    /// Adds a write, the latest of its record so far, of `image` to `key` of `table`.
    pub(super) fn add(
        &mut self,
        table: &'t Table,
        key: &'l [u8],
        image: Image<'l>,
    ) -> Result<(), String> {
        if table.schema().primary_key().is_empty() {
            // Only inserts are logged for such a table (its hidden ids are not reproduced).
            return match image {
                Image::Row(row) => {
                    self.keyless.push((table, row));
                    Ok(())
                }
                _ => Err(format!(
                    "a change to a row of {}, which has no primary key",
                    table.name()
                )),
            };
        }
        // One probe per write: a record's first write enters it, later ones change it in place.
        let change = match self.records.entry((table.id(), key)) {
            Entry::Vacant(vacant) => {
                vacant.insert((table, Change::from_first(image)));
                return Ok(());
            }
            Entry::Occupied(occupied) => &mut occupied.into_mut().1,
        };
        match (change, image) {
            (change, Image::Deleted) => *change = Change::Deleted,
            (change, Image::Row(row)) => *change = Change::Row(Cow::Borrowed(row)),
            (Change::Patched(patches), Image::Patch(patch)) => patches.push(patch),
            (Change::Row(row), Image::Patch(patch)) => patch
                .apply_in_place(row.to_mut())
                .map_err(|e| format!("{}: {e}", table.name()))?,
            (Change::Deleted, Image::Patch(_)) => {
                return Err(format!(
                    "a change to a row of {} after its deletion",
                    table.name()
                ));
            }
        }
        Ok(())
    }

    /// The rows inserted into tables without a primary key, in log order, then every other
    /// record's change, by table and key.
    pub(super) fn into_changes(self) -> (Vec<KeylessRow<'t, 'l>>, Vec<KeyedChange<'t, 'l>>) {
        let mut changes: Vec<_> = self
            .records
            .into_iter()
            .map(|((_, key), (table, change))| (table, key, change))
            .collect();
        changes.sort_unstable_by(|a, b| (a.0.id(), a.1).cmp(&(b.0.id(), b.1)));
        (self.keyless, changes)
    }
}
