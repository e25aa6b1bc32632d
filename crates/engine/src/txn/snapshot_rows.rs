//! Every row a transaction's snapshot sees, record by record, without the indexes: how a
//! checkpoint reads a table. Each call visits a bounded run of records in one non-preemptible
//! region and hands the rows to its caller inside it, so the caller must only copy them.
//!
//! Must never record what it reads (a checkpoint validates nothing) or hold a region across
//! calls.

use std::ops::Range;

use overtake_runtime::NoPreemptGuard;

use crate::catalog::table::Table;
use crate::mvcc::Reader;
use crate::mvcc::epoch::EpochGuard;
use crate::storage::record::Oid;

use super::Transaction;

impl Transaction<'_> {
    /// Calls `row` with the bytes of each live row [`snapshot`](Self::snapshot) sees (even under two-phase
    /// locking, where its reads otherwise see the latest commits) among the
    /// records `oids` of `table` (clipped to the records the table has), in record order; returns
    /// where the next run starts, or `None` at the table's end.
    pub(crate) fn visible_rows(
        &self,
        table: &Table,
        oids: Range<Oid>,
        mut row: impl FnMut(&[u8]),
    ) -> Option<Oid> {
        let _region = NoPreemptGuard::new();
        let epoch = EpochGuard::enter();
        let guard = epoch.guard();
        let limit = table.records.oid_limit();
        let end = oids.end.min(limit);
        let reader = Reader {
            snapshot: self.lease.snapshot,
            me: self.lease.stamp,
        };
        for oid in oids.start..end {
            if let Some(v) = self
                .engine
                .txns
                .visible(table.records.slot(oid), reader, guard)
                && !v.is_deleted()
            {
                row(&v.row);
            }
        }
        (end < limit).then_some(end)
    }
}
