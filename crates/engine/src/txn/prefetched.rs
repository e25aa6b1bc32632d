//! The rows a transaction prefetched, remembered with the record each key mapped to and the index
//! leaf it was found in, so that reading or writing the row soon after needs no second descent of
//! the primary index.
//!
//! A remembered row is only a claim about the leaf at one version ([`LeafHint`]): whoever uses it
//! must first confirm the leaf is still at that version (`OrderedIndex::unchanged_since`), and
//! otherwise look the key up as usual. A leaf's version moves with every change to its entries,
//! so a confirmed claim is as good as a lookup made now, even if the record it names was since
//! removed and its OID reused (the removal changed the leaf).
//!
//! Lookups are cheapest in the order the rows were prefetched (the usual order: a New-Order
//! prefetches its lines' items and stocks, then reads them one by one): the memo checks the row
//! after the last one used first. It never allocates for keys short enough to be stored inline,
//! holds at most [`PrefetchedRows::MAX`] rows (of the latest prefetch only, so a transaction that
//! prefetches batch after batch searches one batch), and is private to its transaction.

use crate::catalog::table::TableId;
use crate::index::LeafHint;
use crate::storage::key::IndexKey;
use crate::storage::record::Oid;

struct PrefetchedRow {
    table: TableId,
    key: IndexKey,
    oid: Oid,
    hint: LeafHint,
}

/// What a transaction's prefetches found (see the module comment).
#[derive(Default)]
pub(crate) struct PrefetchedRows {
    rows: Vec<PrefetchedRow>,
    /// The row the next lookup checks first: the one after the row the last hit used.
    next: usize,
    /// Bit `t % 64` set for every table `t` with a remembered row, so that lookups in other
    /// tables (a New-Order's inserts) are refused without a search.
    tables: u64,
}

fn table_bit(table: TableId) -> u64 {
    1 << (table % 64)
}

impl PrefetchedRows {
    /// Rows remembered at most; a bigger prefetch still loads the rest, and they are looked up.
    pub(crate) const MAX: usize = 64;

    /// Forgets every row (the transaction ended).
    pub(crate) fn clear(&mut self) {
        self.rows.clear();
        self.next = 0;
        self.tables = 0;
    }

    /// Remembers that `key` of `table` mapped to `oid` in the leaf `hint` names (if there is room).
    pub(crate) fn remember(&mut self, table: TableId, key: &[u8], oid: Oid, hint: LeafHint) {
        if self.rows.len() < Self::MAX {
            self.tables |= table_bit(table);
            self.rows.push(PrefetchedRow {
                table,
                key: IndexKey::new(key),
                oid,
                hint,
            });
        }
    }

    /// The record `key` of `table` mapped to when it was prefetched, and the leaf to confirm
    /// before trusting it.
    #[inline]
    pub(crate) fn find(&mut self, table: TableId, key: &[u8]) -> Option<(Oid, LeafHint)> {
        if self.tables & table_bit(table) == 0 {
            return None;
        }
        let is_it = |row: &PrefetchedRow| row.table == table && row.key.as_slice() == key;
        // The usual case first: the row after the last one used.
        let found = match self.rows.get(self.next) {
            Some(row) if is_it(row) => self.next,
            _ => self.rows.iter().position(is_it)?,
        };
        self.next = found + 1;
        let row = &self.rows[found];
        Some((row.oid, row.hint))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::OrderedIndex;

    fn hint_of(index: &OrderedIndex, key: &[u8]) -> LeafHint {
        index.get_hinted(key).1
    }

    #[test]
    fn rows_are_found_in_any_order_by_table_and_key() {
        let index = OrderedIndex::new();
        let hint = hint_of(&index, b"a");
        let mut rows = PrefetchedRows::default();
        rows.remember(1, b"a", 10, hint);
        rows.remember(2, b"a", 20, hint);
        rows.remember(1, b"b", 30, hint);
        assert_eq!(rows.find(1, b"b").map(|f| f.0), Some(30));
        // Not the row after the last hit: found by searching them all.
        assert_eq!(rows.find(1, b"a").map(|f| f.0), Some(10));
        assert_eq!(rows.find(2, b"a").map(|f| f.0), Some(20));
        assert_eq!(rows.find(2, b"b"), None);
        assert_eq!(rows.find(3, b"a"), None);
        rows.clear();
        assert_eq!(rows.find(1, b"a"), None);
    }

    #[test]
    fn at_most_max_rows_are_remembered() {
        let index = OrderedIndex::new();
        let hint = hint_of(&index, b"k");
        let mut rows = PrefetchedRows::default();
        for i in 0..PrefetchedRows::MAX as u64 + 5 {
            rows.remember(1, &i.to_be_bytes(), i, hint);
        }
        let last_kept = PrefetchedRows::MAX as u64 - 1;
        assert_eq!(
            rows.find(1, &last_kept.to_be_bytes()).map(|f| f.0),
            Some(last_kept)
        );
        assert_eq!(rows.find(1, &(last_kept + 1).to_be_bytes()), None);
    }

    #[test]
    fn a_remembered_row_is_confirmed_only_while_its_leaf_is_unchanged() {
        let index = OrderedIndex::new();
        index.insert(b"a", 7).expect("fresh");
        let hint = hint_of(&index, b"a");
        assert!(index.unchanged_since(hint));
        // Removing the key and inserting it again (as a recycled OID would) moves the leaf on.
        assert!(index.remove(b"a", 7));
        index.insert(b"a", 8).expect("fresh");
        assert!(!index.unchanged_since(hint));
    }
}
