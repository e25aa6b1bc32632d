//! What locks are called: a key of an index, a range's end (the index's supremum), a whole
//! table, each a name in a per-index space; and the names told back in words for a lock-wait
//! listing.
//!
//! Must never: give two different keys of one index the same name other than by a hash
//! collision (which only makes two transactions wait for each other needlessly).

use std::collections::HashMap;
use std::ops::Bound;

use crate::catalog::Catalog;
use crate::catalog::table::{IndexRef, Table, TableId};
use crate::index::ScanBatch;
use crate::lock::LockName;
use crate::storage::key::describe as describe_key;

/// A key lock's mode (see [`Transaction::lock_key`](crate::Transaction::lock_key)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum KeyLock {
    /// Keeping the key from going away (PostgreSQL's FOR KEY SHARE: a foreign key's check of
    /// the row it references): holders share it.
    Share,
    /// Taking the key away (deleting the row or changing its key, where a foreign key may
    /// reference it): one holder, no sharers.
    Update,
}

/// A table-level lock's mode (see [`Transaction::lock_table`](crate::Transaction::lock_table)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TableLock {
    /// Writing the table's rows (PostgreSQL's ROW EXCLUSIVE): writers share it.
    Write,
    /// Replacing the table (PostgreSQL's ACCESS EXCLUSIVE): no writer holds the table meanwhile.
    Rebuild,
}

/// The low bits of a table lock's space: past any index's (see `space`).
const TABLE_SPACE: u64 = 0xFFFF;

/// The lock standing for a whole table.
pub(super) fn table_lock(table: &Table) -> LockName {
    LockName {
        space: (u64::from(table.id()) << 16) | TABLE_SPACE,
        item: 0,
    }
}

/// The low bits of the space of a table's key locks (see `key_existence_lock`): past any
/// index's, below the table lock's.
const KEY_EXISTENCE_SPACE: u64 = 0xFFFE;

/// The lock standing for the existence of primary key `key` in `table`, apart from its row's
/// other columns (PostgreSQL's FOR KEY SHARE takes it shared; deleting the row or changing its
/// key takes it exclusive; writes of other columns do not take it).
pub(super) fn key_existence_lock(table: &Table, key: &[u8]) -> LockName {
    LockName {
        space: (u64::from(table.id()) << 16) | KEY_EXISTENCE_SPACE,
        item: key_hash(key),
    }
}

/// The lock space of one index of a table.
pub(super) fn space(table: &Table, index: IndexRef) -> u64 {
    let index = match index {
        IndexRef::Primary => 0,
        IndexRef::Secondary(s) => s as u64 + 1,
    };
    (u64::from(table.id()) << 16) | index
}

/// Locks' names for people: each one's table, index and key values (`warehouse primary key
/// (1)`), or the end of the index; the raw numbers if the table is gone. The lock table keeps only
/// a hash of each key, so the keys are found again by scanning each index named for entries with
/// those hashes, once per call: a diagnostic's cost, never paid on the locking path. A key no
/// longer in its index (deleted since) shows its hash.
pub(crate) fn describe_locks(catalog: &Catalog, names: &[LockName]) -> Vec<String> {
    let mut keys: HashMap<(u64, u64), String> = HashMap::new();
    let mut spaces: Vec<u64> = names.iter().map(|n| n.space).collect();
    spaces.sort_unstable();
    spaces.dedup();
    for space in spaces {
        let Some((table, index)) = locked_index(catalog, space) else {
            continue;
        };
        let mut wanted: Vec<u64> = names
            .iter()
            .filter(|n| n.space == space && n.item != u64::MAX)
            .map(|n| n.item)
            .collect();
        let types = table.key_types(index);
        let tree = table.tree(index);
        let mut batch = ScanBatch::default();
        let mut after: Option<Vec<u8>> = None;
        while !wanted.is_empty() {
            let lower = after.as_deref().map_or(Bound::Unbounded, Bound::Excluded);
            tree.fetch_batch((lower, Bound::Unbounded), false, 256, &mut batch);
            if batch.len() == 0 {
                break;
            }
            for i in 0..batch.len() {
                let key = batch.key(i);
                let item = key_hash(key).min(u64::MAX - 1);
                if let Some(at) = wanted.iter().position(|&w| w == item) {
                    wanted.swap_remove(at);
                    if let Some(values) = describe_key(key, types, table.key_nullable(index)) {
                        keys.insert((space, item), values);
                    }
                }
            }
            after = Some(batch.key(batch.len() - 1).to_vec());
        }
    }
    names
        .iter()
        .map(|name| {
            if name.space & 0xFFFF == TABLE_SPACE
                && let Some(table) = catalog.get((name.space >> 16) as TableId)
            {
                return format!("{} table", table.name());
            }
            let Some((table, index)) = locked_index(catalog, name.space) else {
                return format!("{:#x}/{:#x}", name.space, name.item);
            };
            let index_name = match index {
                IndexRef::Primary => "primary key".to_owned(),
                IndexRef::Secondary(i) => table
                    .schema()
                    .indexes()
                    .get(i)
                    .map_or_else(|| format!("index {i}"), |d| format!("index {}", d.name)),
            };
            let item = match (name.item, keys.get(&(name.space, name.item))) {
                (u64::MAX, _) => "end of index".to_owned(),
                (_, Some(values)) => values.clone(),
                (hash, None) => format!("key hash {hash:#x}"),
            };
            format!("{} {index_name} {item}", table.name())
        })
        .collect()
}

/// The table and index a lock space names, if the table still exists.
pub(super) fn locked_index(catalog: &Catalog, space: u64) -> Option<(&Table, IndexRef)> {
    let table = catalog.get((space >> 16) as TableId)?;
    let index = match space & 0xFFFF {
        0 => IndexRef::Primary,
        i => IndexRef::Secondary(i as usize - 1),
    };
    (index == IndexRef::Primary || (space & 0xFFFF) as usize <= table.schema().indexes().len())
        .then_some((table, index))
}

/// The lock on `key` in `index` of `table`.
pub(super) fn key_lock(table: &Table, index: IndexRef, key: &[u8]) -> LockName {
    LockName {
        space: space(table, index),
        // The supremum's item is reserved.
        item: key_hash(key).min(u64::MAX - 1),
    }
}

/// The lock standing for the end of `index`: the successor of a range no entry follows.
pub(super) fn supremum(table: &Table, index: IndexRef) -> LockName {
    LockName {
        space: space(table, index),
        item: u64::MAX,
    }
}

/// A 64-bit hash of key bytes (a multiply-rotate fold; collisions cost only false waits).
pub(super) fn key_hash(key: &[u8]) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut h = key.len() as u64;
    let mut chunks = key.chunks_exact(8);
    for c in &mut chunks {
        let word = u64::from_le_bytes(c.try_into().expect("8 bytes"));
        h = (h ^ word).wrapping_mul(K).rotate_left(29);
    }
    let mut tail = [0u8; 8];
    tail[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
    h = (h ^ u64::from_le_bytes(tail)).wrapping_mul(K);
    h ^ (h >> 32)
}
