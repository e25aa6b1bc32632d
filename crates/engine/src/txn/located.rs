//! Rows by where they are kept: a row's [`RecordId`] as reads and scans meet it, and the row
//! a [`RecordId`] names. The SQL layer shows it as PostgreSQL's `ctid`, which clients such as
//! postgres_fdw read and then update or delete rows by.
//!
//! A record id names a record's slot, which holds every version of the row: unlike
//! PostgreSQL's tuple ids it stays the same when the row is updated, and it is handed to a new
//! row only after the row it named was deleted and collected. The located scans and reads
//! check, lock and record as the plain ones do; finding a record's key takes no lock and
//! records no read: a caller that acts on the row reads it again by that key.

use std::ops::ControlFlow;

use super::scan::Source;
use super::{ScanOptions, Transaction};
use crate::catalog::table::{IndexId, IndexRef, Table};
use crate::error::Result;
use crate::mvcc::epoch::EpochGuard;
use crate::storage::key::{KeyBuf, KeyRange};
use crate::storage::record::Oid;
use crate::storage::row::RowRef;

/// Where a row of a table is kept: stable while the row lives, whatever updates it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RecordId(pub(crate) Oid);

impl RecordId {
    /// The id as a number (what a client is shown; any number may come back).
    pub fn get(self) -> u64 {
        self.0
    }

    /// The id a number names (a record there may or may not exist).
    pub fn new(id: u64) -> Self {
        RecordId(id)
    }
}

impl<'db> Transaction<'db> {
    /// [`scan`](Self::scan), also telling `visit` each row's [`RecordId`].
    pub fn scan_located(
        &mut self,
        table: &Table,
        range: &KeyRange,
        options: ScanOptions,
        mut visit: impl FnMut(RowRef<'_>, RecordId) -> ControlFlow<()>,
    ) -> Result<usize> {
        self.scan_sourced(table, IndexRef::Primary, range, options, |row, source| {
            visit(row, located(source))
        })
    }

    /// [`scan_index`](Self::scan_index), also telling `visit` each row's [`RecordId`].
    pub fn scan_index_located(
        &mut self,
        table: &Table,
        index: IndexId,
        range: &KeyRange,
        options: ScanOptions,
        mut visit: impl FnMut(RowRef<'_>, RecordId) -> ControlFlow<()>,
    ) -> Result<usize> {
        let index = IndexRef::Secondary(index.0);
        self.scan_sourced(table, index, range, options, |row, source| {
            visit(row, located(source))
        })
    }

    /// The primary key of the row `id` names in this transaction's view (its own writes
    /// included), or `None` if it names no row there. Reading the row by that key, as every
    /// caller that uses the row must, checks and records the read as any other; the row found
    /// may then be another one if the record was deleted and reused meanwhile (a caller
    /// compares its id again).
    pub fn key_of_record(&mut self, table: &Table, id: RecordId) -> Result<Option<KeyBuf>> {
        self.check(table)?;
        self.buf.ws.index_oids();
        if let Some(i) = self.buf.ws.by_oid(table.id(), id.0) {
            let entry = self.buf.ws.get(i);
            return Ok(entry
                .row
                .as_ref()
                .map(|row| table.primary_key(&table.row(row), id.0)));
        }
        let Some(slot) = table.records.slot_if_allocated(id.0) else {
            return Ok(None);
        };
        let epoch = EpochGuard::enter();
        let guard = epoch.guard();
        let Some(version) = self.engine.txns.visible(slot, self.reader(), guard) else {
            return Ok(None);
        };
        if version.is_deleted() {
            return Ok(None);
        }
        Ok(Some(table.primary_key(&table.row(&version.row), id.0)))
    }
}

/// The record id of a scanned row.
fn located(source: Source<'_>) -> RecordId {
    match source {
        Source::Record(oid, _) | Source::Own(_, oid) => RecordId(oid),
    }
}
