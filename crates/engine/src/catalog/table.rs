//! A table: its schema and row layout, its primary and secondary indexes, and its records.
//!
//! Tables are created through [`Database::create_table`](crate::Database::create_table) and shared
//! as `Arc<Table>`. A `Table` hands out the builders for its rows and keys; reading and writing go
//! through a [`Transaction`](crate::Transaction).
//!
//! A table without a declared primary key uses its records' OIDs as hidden row ids: unique while the
//! record lives, and only reused after the old key has left every index.

use sdd::Guard;

use crate::catalog::point_cache::{Buckets, PointCache};
use crate::index::OrderedIndex;
use crate::storage::key::{KeyBuf, KeyBuilder};
use crate::storage::key_columns::KeyColumns;
use crate::storage::record::{Chain, Oid, RecordStore};
use crate::storage::row::{RowBuilder, RowLayout, RowRef};
use crate::storage::schema::{ColumnType, TableSchema};

/// Identifies a table within its database.
pub type TableId = u32;

/// Identifies a secondary index of a table (its position in the schema's index list).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct IndexId(pub(crate) usize);

/// Which index of a table a scan walks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum IndexRef {
    Primary,
    Secondary(usize),
}

struct SecondaryIndex {
    name: String,
    /// How the indexed columns of a row are encoded (the primary key follows them).
    columns: KeyColumns,
    /// Types of the indexed columns followed by the primary key's.
    key_types: Box<[ColumnType]>,
    /// Which of `key_types` may be NULL; `None` if none may.
    key_nullable: Option<Box<[bool]>>,
    tree: OrderedIndex,
}

/// A table of the database.
pub struct Table {
    database: u64,
    id: TableId,
    schema: TableSchema,
    layout: RowLayout,
    pk_types: Box<[ColumnType]>,
    /// How a row's primary key is encoded (unused for a hidden key).
    pk_columns: KeyColumns,
    primary: OrderedIndex,
    secondary: Box<[SecondaryIndex]>,
    /// Every column some secondary index holds.
    secondary_columns: Box<[usize]>,
    pub(crate) records: RecordStore,
    /// Where point lookups find a key's record without descending the primary index (a hint
    /// checked against the row; see `point_cache`). None for a table without a primary key.
    point_cache: Option<PointCache>,
    /// Set when the table is dropped: it keeps its id, its rows stay readable by whoever holds
    /// it, and its writes no longer matter to recovery or checkpoints.
    dropped: std::sync::atomic::AtomicBool,
    /// Set when a transaction that held its [`TableLock::Rebuild`](crate::TableLock::Rebuild)
    /// commits: what it wrote stands for this table now, so writers must not write here.
    replaced: std::sync::atomic::AtomicBool,
}

impl Table {
    pub(crate) fn new(database: u64, id: TableId, schema: TableSchema) -> Self {
        let layout = RowLayout::for_owner(&schema, id);
        let hidden_key = schema.primary_key().is_empty();
        let pk_types: Box<[ColumnType]> = if hidden_key {
            Box::new([ColumnType::Int64])
        } else {
            schema
                .primary_key()
                .iter()
                .map(|&c| schema.columns()[c].ty)
                .collect()
        };
        let secondary = schema
            .indexes()
            .iter()
            .map(|def| SecondaryIndex {
                name: def.name.clone(),
                columns: KeyColumns::new(&layout, &def.columns),
                key_types: def
                    .columns
                    .iter()
                    .map(|&c| schema.columns()[c].ty)
                    .chain(pk_types.iter().copied())
                    .collect(),
                key_nullable: def
                    .columns
                    .iter()
                    .any(|&c| schema.columns()[c].nullable)
                    .then(|| {
                        def.columns
                            .iter()
                            .map(|&c| schema.columns()[c].nullable)
                            .chain(pk_types.iter().map(|_| false))
                            .collect()
                    }),
                tree: OrderedIndex::new(),
            })
            .collect();
        // A hidden key is the OID, pushed without reading the row.
        let pk_columns = KeyColumns::new(&layout, schema.primary_key());
        let mut secondary_columns: Vec<usize> = schema
            .indexes()
            .iter()
            .flat_map(|def| def.columns.iter().copied())
            .collect();
        secondary_columns.sort_unstable();
        secondary_columns.dedup();
        Table {
            database,
            secondary_columns: secondary_columns.into_boxed_slice(),
            id,
            schema,
            layout,
            pk_types,
            pk_columns,
            primary: OrderedIndex::new(),
            secondary,
            records: RecordStore::new(),
            point_cache: (!hidden_key).then(PointCache::new),
            dropped: std::sync::atomic::AtomicBool::new(false),
            replaced: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Whether the table was dropped ([`Database::drop_table`](crate::Database::drop_table)).
    pub fn is_dropped(&self) -> bool {
        self.dropped.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Whether a transaction holding its rebuild lock committed (see `Transaction::lock_table`).
    pub fn is_replaced(&self) -> bool {
        self.replaced.load(std::sync::atomic::Ordering::Acquire)
    }

    pub(crate) fn mark_replaced(&self) {
        self.replaced
            .store(true, std::sync::atomic::Ordering::Release);
    }

    pub(crate) fn mark_dropped(&self) {
        self.dropped
            .store(true, std::sync::atomic::Ordering::Release);
    }

    /// Identity of the database the table belongs to.
    pub(crate) fn database(&self) -> u64 {
        self.database
    }

    /// The table's id.
    pub fn id(&self) -> TableId {
        self.id
    }

    /// The table's name.
    pub fn name(&self) -> &str {
        self.schema.name()
    }

    /// The declared schema.
    pub fn schema(&self) -> &TableSchema {
        &self.schema
    }

    /// How rows of this table are laid out.
    pub fn layout(&self) -> &RowLayout {
        &self.layout
    }

    /// Position of the column called `name`.
    pub fn column(&self, name: &str) -> Option<usize> {
        self.schema.column_index(name)
    }

    /// How many record slots (OIDs) the table has handed out; dead records' OIDs are reused, so on a
    /// table with as many deletes as inserts this stays bounded.
    pub fn slots_allocated(&self) -> u64 {
        self.records.oid_limit()
    }

    /// A builder for new rows of this table.
    pub fn row_builder(&self) -> RowBuilder<'_> {
        RowBuilder::new(&self.layout)
    }

    /// A builder for primary keys, one part per key column.
    pub fn key(&self) -> KeyBuilder<'_> {
        KeyBuilder::new("primary key", &self.pk_types, None)
    }

    /// The secondary index called `name`.
    pub fn index(&self, name: &str) -> Option<IndexId> {
        self.secondary
            .iter()
            .position(|s| s.name == name)
            .map(IndexId)
    }

    /// A builder for keys of a secondary index: the indexed columns, then (for complete keys) the
    /// primary key. Scans usually use a prefix of the indexed columns.
    pub fn index_key(&self, index: IndexId) -> KeyBuilder<'_> {
        let s = &self.secondary[index.0];
        KeyBuilder::new(&s.name, &s.key_types, s.key_nullable.as_deref())
    }

    /// The columns some secondary index holds (an update setting none of them keeps every
    /// secondary key).
    pub(crate) fn secondary_columns(&self) -> &[usize] {
        &self.secondary_columns
    }

    pub(crate) fn secondary_count(&self) -> usize {
        self.secondary.len()
    }

    /// The column types of `index`'s keys (a secondary key ends with the primary key).
    pub(crate) fn key_types(&self, index: IndexRef) -> &[ColumnType] {
        match index {
            IndexRef::Primary => &self.pk_types,
            IndexRef::Secondary(i) => &self.secondary[i].key_types,
        }
    }

    /// Which columns of `index`'s keys may be NULL; `None` if none may.
    pub(crate) fn key_nullable(&self, index: IndexRef) -> Option<&[bool]> {
        match index {
            IndexRef::Primary => None,
            IndexRef::Secondary(i) => self.secondary[i].key_nullable.as_deref(),
        }
    }

    pub(crate) fn tree(&self, index: IndexRef) -> &OrderedIndex {
        match index {
            IndexRef::Primary => &self.primary,
            IndexRef::Secondary(i) => &self.secondary[i].tree,
        }
    }

    /// The point cache's buckets, if the table has a primary key.
    #[inline]
    pub(crate) fn point_cache<'g>(&self, guard: &'g Guard) -> Option<&'g Buckets> {
        self.point_cache.as_ref()?.buckets(guard)
    }

    /// The record the point cache names for `key`, unchecked: it is the key's only if the row
    /// read there carries the key ([`carries_primary_key`](Self::carries_primary_key)). `None`
    /// means "ask the index".
    #[inline]
    pub(crate) fn cached_record(&self, key: &[u8], guard: &Guard) -> Option<Oid> {
        let buckets = self.point_cache(guard)?;
        buckets.get(buckets.probe(key))
    }

    /// True if the stored row `row` has primary key `key` (what makes a point-cache entry good).
    #[inline]
    pub(crate) fn carries_primary_key(&self, row: &[u8], key: &[u8]) -> bool {
        if row.is_empty() {
            return false;
        }
        if self.schema.primary_key().is_empty() {
            return self.primary_key(&self.row(row), 0).as_bytes() == key;
        }
        self.pk_columns.matches(&self.row(row), key)
    }

    /// Tells the point cache that the primary index maps `key` to `oid`.
    #[inline]
    pub(crate) fn remember_record(&self, key: &[u8], oid: Oid, guard: &Guard) {
        if let Some(cache) = &self.point_cache {
            cache.put(key, oid, self.records.oid_limit(), guard);
        }
    }

    /// The primary key's column names, comma-separated (for messages).
    pub(crate) fn primary_key_names(&self) -> String {
        let columns = self.schema.columns();
        let names: Vec<&str> = self
            .schema
            .primary_key()
            .iter()
            .map(|&c| columns[c].name.as_str())
            .collect();
        names.join(", ")
    }

    /// The primary key of a stored row (`oid` stands in for a hidden row id).
    pub(crate) fn primary_key(&self, row: &RowRef<'_>, oid: Oid) -> KeyBuf {
        let mut key = KeyBuf::new();
        self.push_primary_key(&mut key, row, oid);
        key
    }

    fn push_primary_key(&self, key: &mut KeyBuf, row: &RowRef<'_>, oid: Oid) {
        if self.schema.primary_key().is_empty() {
            key.push_row_id(oid);
        } else {
            self.pk_columns.push(key, row);
        }
    }

    /// The full key of `row` in secondary index `index`.
    pub(crate) fn secondary_key(&self, index: usize, row: &RowRef<'_>, oid: Oid) -> KeyBuf {
        let s = &self.secondary[index];
        let mut key = KeyBuf::new();
        s.columns.push(&mut key, row);
        self.push_primary_key(&mut key, row, oid);
        key
    }

    pub(crate) fn row<'r>(&'r self, bytes: &'r [u8]) -> RowRef<'r> {
        RowRef::new(&self.layout, bytes)
    }

    /// True if some version of record `oid` (committed or pending) has `key` in `index`: the
    /// record needs that entry. Deletion markers carry no key; the deleted row below one does. A
    /// dead record (or an OID recycled for a record with other keys) carries none of the old ones.
    pub(crate) fn record_carries(
        &self,
        index: IndexRef,
        key: &[u8],
        oid: Oid,
        guard: &Guard,
    ) -> bool {
        Chain::at(self.records.slot(oid), guard).any(|v| {
            if v.is_deleted() {
                return false;
            }
            let row = self.row(&v.row);
            let carried = match index {
                IndexRef::Primary => self.primary_key(&row, oid),
                IndexRef::Secondary(i) => self.secondary_key(i, &row, oid),
            };
            carried.as_bytes() == key
        })
    }
}

impl std::fmt::Debug for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Table")
            .field("id", &self.id)
            .field("name", &self.name())
            .finish_non_exhaustive()
    }
}
