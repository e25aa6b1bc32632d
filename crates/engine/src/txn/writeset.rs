//! The write set: a transaction's inserts, updates and deletes, buffered until commit.
//!
//! Nothing a transaction writes is visible to anyone else, or blocks anyone else, before its commit
//! installs it (inside one non-preemptible region, see `install`). A paused writer therefore holds
//! no write lock an urgent transaction could need: the rule that lets a low-priority writer be
//! preempted anywhere.
//!
//! Each record the transaction wrote has exactly one entry holding the row it ends with (repeated
//! writes of a record overwrite it in place), found by primary key (point reads and writes) and by
//! OID (scans meet records by OID). The maps keep their capacity from one transaction of a slot to
//! the next, so a steady stream of transactions allocates nothing here but the rows themselves.
//!
//! Must never touch shared state: it is private to its transaction.

use std::cell::Cell;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use hashbrown::HashTable;
use rustc_hash::FxHasher;

use crate::catalog::table::TableId;
use crate::index::LeafHint;
use crate::storage::key::IndexKey;
use crate::storage::record::Oid;

type FxMap<K, V> = HashMap<K, V, BuildHasherDefault<FxHasher>>;

/// The hash a primary key is found by in the write set.
#[inline]
fn key_hash(key: &[u8]) -> u64 {
    let mut h = FxHasher::default();
    h.write(key);
    h.finish()
}

/// The record a buffered write goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Target {
    /// A record that existed in the transaction's snapshot (live, or a deleted row whose record
    /// still exists). `base_live` says which: deleting a record whose row was already deleted
    /// installs nothing.
    Existing { base_live: bool },
    /// A new record, under an OID allocated for it. `unpublished` until the commit installs it
    /// (an OID never installed is handed back when the transaction ends).
    Fresh { unpublished: bool },
}

/// One record's buffered write.
pub(crate) struct Buffered {
    pub(crate) table: TableId,
    pub(crate) oid: Oid,
    pub(crate) target: Target,
    /// The primary key (the index entry a fresh record gets, and the key point accesses use).
    pub(crate) key: IndexKey,
    /// The row the record ends with; `None` if the transaction deleted it.
    pub(crate) row: Option<Box<[u8]>>,
    /// For a fresh record: where the lookup that found its key absent found the key's leaf, so
    /// the commit can enter the key without descending the index again.
    pub(crate) hint: Option<LeafHint>,
    /// False if no write of this entry set a column of a secondary index: the record keeps its
    /// secondary keys, and the commit need not compute them.
    pub(crate) secondary_may_change: bool,
    /// The snapshot the write read its record at: the commit installs it only if no version was
    /// committed since. The transaction's snapshot, except under READ COMMITTED, whose snapshot
    /// moves on with each statement.
    pub(crate) read_at: u64,
}

impl Buffered {
    /// True if committing this entry changes the record (a delete of a row that did not exist in
    /// the snapshot, or of a row this transaction inserted, changes nothing).
    pub(crate) fn changes_anything(&self) -> bool {
        self.row.is_some() || self.target == (Target::Existing { base_live: true })
    }
}

/// Lookups of one table's entries.
#[derive(Default)]
struct TableEntries {
    /// Positions of the table's entries, in the order they were pushed (iterating a map would
    /// walk its whole capacity, kept from earlier transactions).
    positions: Vec<u32>,
    /// Positions of the table's entries, found by their primary key (which stays in the entry:
    /// nothing is cloned into the map, and emptying it drops nothing).
    by_key: HashTable<u32>,
    /// Built only when a scan needs it (see `index_oids`): most transactions never scan what
    /// they wrote, and one map per write is half the cost of buffering it.
    by_oid: FxMap<Oid, u32>,
    /// How many of `positions`, from the first, have been checked for ascending key order, and
    /// whether one of them broke it (checked only when a scan asks, see
    /// `positions_in_key_order`).
    order_checked: Cell<(u32, bool)>,
}

/// The buffered writes of one transaction.
#[derive(Default)]
pub(crate) struct WriteSet {
    entries: Vec<Buffered>,
    /// Indexed by table id; only the tables in `touched` hold anything. Maps are keyed per table
    /// so that a lookup borrows the key's bytes (no `IndexKey` is built, none allocated).
    tables: Vec<TableEntries>,
    touched: Vec<TableId>,
    /// `entries[..oids_indexed]` are in their table's `by_oid`.
    oids_indexed: usize,
    /// While a savepoint is open: entries below this position keep, in `undo`, how they were
    /// before a change (0: no savepoint, nothing is kept).
    floor: usize,
    /// How entries below `floor` were before the changes made to them since the savepoints.
    undo: Vec<Undo>,
}

/// A point of the write set to roll back to (a SQL savepoint): how many entries it had, and how
/// much of the undo log had been written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Mark {
    entries: usize,
    undo: usize,
}

/// How an entry was before a write after a savepoint changed it.
struct Undo {
    index: u32,
    row: Option<Box<[u8]>>,
    secondary_may_change: bool,
}

impl WriteSet {
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// The lookups of `table`, if the transaction wrote it.
    #[inline]
    fn table(&self, table: TableId) -> Option<&TableEntries> {
        self.tables
            .get(table as usize)
            .filter(|t| !t.by_key.is_empty())
    }

    /// True if the transaction wrote `table`.
    #[inline]
    pub(crate) fn touches(&self, table: TableId) -> bool {
        self.table(table).is_some()
    }

    /// The entry of the record with primary key `key`.
    #[inline]
    pub(crate) fn by_key(&self, table: TableId, key: &[u8]) -> Option<usize> {
        self.table(table)?
            .by_key
            .find(key_hash(key), |&i| {
                self.entries[i as usize].key.as_slice() == key
            })
            .map(|&i| i as usize)
    }

    /// The positions of `table`'s entries, in the order they were written.
    pub(crate) fn entries_of(&self, table: TableId) -> impl Iterator<Item = usize> + '_ {
        self.table(table)
            .map_or(&[][..], |t| &t.positions[..])
            .iter()
            .map(|&i| i as usize)
    }

    /// The positions of `table`'s entries in ascending primary-key order, if that is the order
    /// they were written in (as most transactions write: a New-Order's order lines, a
    /// Delivery's districts one after another). A scan of the table's range then finds its own
    /// rows by binary search instead of testing every entry. Each entry is compared with the one
    /// before it once, at the first call after it was pushed.
    pub(crate) fn positions_in_key_order(&self, table: TableId) -> Option<&[u32]> {
        let t = self.table(table)?;
        let (mut checked, mut broken) = t.order_checked.get();
        let n = t.positions.len() as u32;
        while !broken && checked < n {
            if checked > 0 {
                let key = |i: u32| {
                    self.entries[t.positions[i as usize] as usize]
                        .key
                        .as_slice()
                };
                broken = key(checked - 1) >= key(checked);
            }
            checked += 1;
        }
        t.order_checked.set((checked, broken));
        (!broken).then_some(&t.positions[..])
    }

    /// Makes [`by_oid`](Self::by_oid) see every entry pushed so far.
    pub(crate) fn index_oids(&mut self) {
        for (i, e) in self.entries.iter().enumerate().skip(self.oids_indexed) {
            self.tables[e.table as usize].by_oid.insert(e.oid, i as u32);
        }
        self.oids_indexed = self.entries.len();
    }

    /// The entry of record `oid`, among the entries pushed before the last
    /// [`index_oids`](Self::index_oids).
    #[inline]
    pub(crate) fn by_oid(&self, table: TableId, oid: Oid) -> Option<usize> {
        self.table(table)?.by_oid.get(&oid).map(|&i| i as usize)
    }

    pub(crate) fn get(&self, index: usize) -> &Buffered {
        &self.entries[index]
    }

    /// The entry at `index`, to change at commit (no savepoint can be rolled back to then).
    pub(crate) fn get_mut(&mut self, index: usize) -> &mut Buffered {
        &mut self.entries[index]
    }

    /// The entry at `index`, to change by a write: if a savepoint is open and the entry is older
    /// than it, how the entry was is kept first, so that rolling back to the savepoint restores it.
    pub(crate) fn get_mut_for_write(&mut self, index: usize) -> &mut Buffered {
        if index < self.floor {
            let e = &self.entries[index];
            self.undo.push(Undo {
                index: index as u32,
                row: e.row.clone(),
                secondary_may_change: e.secondary_may_change,
            });
        }
        &mut self.entries[index]
    }

    /// A savepoint: the writes from here on can be undone with [`roll_back_to`](Self::roll_back_to).
    pub(crate) fn mark(&mut self) -> Mark {
        // Entries below every open savepoint's position are logged: a later savepoint is at or
        // after the earlier ones (a floor higher than an older savepoint needs only logs more).
        self.floor = self.floor.max(self.entries.len());
        Mark {
            entries: self.entries.len(),
            undo: self.undo.len(),
        }
    }

    /// No savepoint is open any more: changes are no longer logged.
    pub(crate) fn forget_marks(&mut self) {
        self.floor = 0;
        self.undo.clear();
    }

    /// Undoes every write since `mark` (which stays usable, as SQL's ROLLBACK TO keeps its
    /// savepoint): entries changed since are restored, entries added since are removed and
    /// returned (their unpublished OIDs are the caller's to hand back).
    pub(crate) fn roll_back_to(&mut self, mark: Mark) -> Vec<Buffered> {
        assert!(
            mark.entries <= self.entries.len() && mark.undo <= self.undo.len(),
            "a savepoint used after a rollback to an earlier one"
        );
        for u in self.undo.drain(mark.undo..).rev() {
            if let Some(e) = self.entries.get_mut(u.index as usize) {
                e.row = u.row;
                e.secondary_may_change = u.secondary_may_change;
            }
        }
        let n = mark.entries;
        let removed: Vec<Buffered> = self.entries.drain(n..).collect();
        if removed.is_empty() {
            return removed;
        }
        let below = |i: &u32| (*i as usize) < n;
        let tables = &mut self.tables;
        self.touched.retain(|&t| {
            let lookups = &mut tables[t as usize];
            while lookups.positions.last().is_some_and(|i| !below(i)) {
                lookups.positions.pop();
            }
            lookups.by_key.retain(|i| below(&*i));
            lookups.by_oid.retain(|_, i| below(&*i));
            let (checked, broken) = lookups.order_checked.get();
            let kept = lookups.positions.len() as u32;
            // Order was checked over a prefix: what remains of it is still checked.
            lookups.order_checked.set(if checked > kept {
                (kept, broken)
            } else {
                (checked, broken)
            });
            !lookups.by_key.is_empty()
        });
        self.oids_indexed = self.oids_indexed.min(n);
        removed
    }

    pub(crate) fn entries(&self) -> &[Buffered] {
        &self.entries
    }

    /// Adds the write of a record not written before by this transaction.
    pub(crate) fn push(&mut self, entry: Buffered) {
        debug_assert!(
            self.by_key(entry.table, entry.key.as_slice()).is_none(),
            "one entry per primary key"
        );
        let index = self.entries.len() as u32;
        let t = entry.table as usize;
        if self.tables.len() <= t {
            self.tables.resize_with(t + 1, TableEntries::default);
        }
        let hash = key_hash(entry.key.as_slice());
        self.entries.push(entry);
        let entries = &self.entries;
        let lookups = &mut self.tables[t];
        if lookups.by_key.is_empty() {
            self.touched.push(t as TableId);
        }
        lookups.positions.push(index);
        lookups.by_key.insert_unique(hash, index, |&i| {
            key_hash(entries[i as usize].key.as_slice())
        });
    }

    /// Empties the set, keeping its capacity (bounded, so that one huge transaction does not pin
    /// its memory in the slot).
    pub(crate) fn clear(&mut self, keep: usize) {
        self.entries.clear();
        for &t in &self.touched {
            let lookups = &mut self.tables[t as usize];
            lookups.positions.clear();
            lookups.positions.shrink_to(keep);
            lookups.order_checked.set((0, false));
            lookups.by_key.clear();
            lookups.by_oid.clear();
            lookups
                .by_key
                .shrink_to(keep, |_| unreachable!("the table is empty"));
            lookups.by_oid.shrink_to(keep);
        }
        self.touched.clear();
        self.oids_indexed = 0;
        self.forget_marks();
        self.undo.shrink_to(keep);
        self.entries.shrink_to(keep);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(table: TableId, oid: Oid, key: u8) -> Buffered {
        Buffered {
            table,
            oid,
            target: Target::Fresh { unpublished: true },
            key: IndexKey::new(&[key]),
            row: Some(Box::new([key])),
            hint: None,
            secondary_may_change: true,
            read_at: 0,
        }
    }

    /// Enough entries to make the key lookups grow several times, over two transactions of the
    /// same set: each key finds its own entry, and nothing of the first transaction is left.
    #[test]
    fn many_entries_are_each_found_by_key_after_growth_and_clearing() {
        let mut set = WriteSet::default();
        let key = |n: u32| n.to_be_bytes();
        for round in 0..2u32 {
            for n in 0..1000u32 {
                let mut e = entry(1 + n % 2, Oid::from(n), 0);
                e.key = IndexKey::new(&key(n + round * 1000));
                set.push(e);
            }
            for n in 0..1000u32 {
                let found = set.by_key(1 + n % 2, &key(n + round * 1000));
                assert_eq!(found, Some(n as usize), "round {round}, key {n}");
                assert_eq!(set.by_key(2 - n % 2, &key(n + round * 1000)), None);
            }
            assert_eq!(set.by_key(1, &key(5000)), None);
            set.clear(64);
            assert_eq!(set.by_key(1, &key(round * 1000)), None, "cleared");
        }
    }

    #[test]
    fn entries_are_found_by_key_and_by_oid_within_their_table() {
        let mut set = WriteSet::default();
        set.push(entry(1, 10, 7));
        set.push(entry(65, 11, 8));
        set.index_oids();
        assert_eq!(set.by_key(1, &[7]), Some(0));
        assert_eq!(set.by_oid(65, 11), Some(1));
        assert_eq!(set.by_key(65, &[7]), None, "same key, other table");
        assert_eq!(set.by_oid(1, 11), None);
        assert!(set.touches(1) && !set.touches(2));
        set.clear(16);
        assert!(set.entries().is_empty());
        assert_eq!(set.by_key(1, &[7]), None);
    }

    #[test]
    fn deleting_what_did_not_exist_changes_nothing() {
        let mut e = entry(1, 1, 1);
        assert!(e.changes_anything());
        e.row = None;
        assert!(!e.changes_anything(), "a fresh row deleted again");
        e.target = Target::Existing { base_live: false };
        assert!(!e.changes_anything(), "a deleted row deleted again");
        e.target = Target::Existing { base_live: true };
        assert!(e.changes_anything());
    }
}
