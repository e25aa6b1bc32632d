//! The catalog: a database's tables, by id and by name; a table ([`table`]) with its indexes and
//! records, and the point cache beside its primary index ([`point_cache`]).
//!
//! Lookups by id are what commit, rollback and the collector use, inside non-preemptible regions:
//! they take no lock (each id's cell is written once). Names go through a region latch, taken only
//! when tables are created or looked up by name. Must never hand out a table of another database.

pub(crate) mod point_cache;
pub(crate) mod table;

use std::collections::HashMap;
use std::sync::Arc;

use overtake_runtime::{NoPreemptGuard, RegionOnceLock, RegionRwLock};

use crate::catalog::table::{Table, TableId};
use crate::error::{Error, Result};
use crate::storage::schema::TableSchema;

/// Largest number of tables in one database.
pub const MAX_TABLES: usize = 4096;

/// Tables by id (lock-free lookup, used on commit paths) and by name.
pub(crate) struct Catalog {
    tables: Box<[RegionOnceLock<Arc<Table>>]>,
    names: RegionRwLock<HashMap<String, TableId>>,
}

impl Catalog {
    pub(crate) fn new() -> Self {
        Catalog {
            tables: (0..MAX_TABLES).map(|_| RegionOnceLock::new()).collect(),
            names: RegionRwLock::new(HashMap::new()),
        }
    }

    /// Creates a table of database `database`.
    pub(crate) fn create(&self, database: u64, schema: TableSchema) -> Result<Arc<Table>> {
        self.create_announced(database, schema, |_, _, _| {})
    }

    /// Like [`create`](Self::create); `announce` (given the table's id) runs once the table is sure to be created and
    /// before anyone can see it, inside the catalog's latch and region (the log appends the
    /// creation there, so that no transaction's write to the table is logged before it).
    pub(crate) fn create_announced(
        &self,
        database: u64,
        schema: TableSchema,
        announce: impl FnOnce(TableId, &TableSchema, &NoPreemptGuard),
    ) -> Result<Arc<Table>> {
        let region = NoPreemptGuard::new();
        let mut names = self.names.write(&region);
        if names.contains_key(schema.name()) {
            return Err(Error::TableExists(schema.name().to_owned()));
        }
        // Ids are dense in creation order; dropped tables keep theirs (and their cells).
        let id = self.all_count();
        if id >= MAX_TABLES {
            return Err(Error::TooManyTables(MAX_TABLES));
        }
        announce(id as TableId, &schema, &region);
        let name = schema.name().to_owned();
        let table = Arc::new(Table::new(database, id as TableId, schema));
        // `id` is fresh, so the cell is empty.
        let _ = self.tables[id].set(&region, Arc::clone(&table));
        names.insert(name, id as TableId);
        Ok(table)
    }

    /// Drops the table called `name`: its name is free at once, and `announce` (given its id)
    /// runs inside the catalog's latch and region, before anyone can create a table of that
    /// name again (the log appends the drop there).
    pub(crate) fn drop_announced(
        &self,
        name: &str,
        announce: impl FnOnce(TableId, &NoPreemptGuard),
    ) -> Result<Arc<Table>> {
        let region = NoPreemptGuard::new();
        let mut names = self.names.write(&region);
        let table = names
            .get(name)
            .and_then(|&id| self.tables[id as usize].get().cloned())
            .ok_or_else(|| Error::NoSuchTable(name.to_owned()))?;
        announce(table.id(), &region);
        names.remove(name);
        table.mark_dropped();
        Ok(table)
    }

    /// Marks table `id` dropped as the log or a checkpoint says (again is fine: a drop logged
    /// while a checkpoint was taken is in both).
    pub(crate) fn redrop(&self, id: TableId) -> Result<()> {
        let table = self
            .get(id)
            .ok_or_else(|| Error::NoSuchTable(format!("table {id}")))?;
        let region = NoPreemptGuard::new();
        let mut names = self.names.write(&region);
        if names.get(table.name()) == Some(&id) {
            names.remove(table.name());
        }
        table.mark_dropped();
        Ok(())
    }

    /// The table called `name`.
    pub(crate) fn by_name(&self, name: &str) -> Result<Arc<Table>> {
        let region = NoPreemptGuard::new();
        let names = self.names.read(&region);
        names
            .get(name)
            .and_then(|&id| self.tables[id as usize].get().cloned())
            .ok_or_else(|| Error::NoSuchTable(name.to_owned()))
    }

    /// Every table, in creation order.
    pub(crate) fn all(&self) -> Vec<Arc<Table>> {
        self.tables
            .iter()
            .map_while(|cell| cell.get().cloned())
            .collect()
    }

    /// Tables created so far, dropped ones included.
    fn all_count(&self) -> usize {
        self.tables.partition_point(|cell| cell.get().is_some())
    }

    pub(crate) fn get(&self, id: TableId) -> Option<&Table> {
        self.tables.get(id as usize)?.get().map(|t| &**t)
    }

    /// A table that a transaction of this database recorded; it exists for the database's life.
    pub(crate) fn recorded(&self, id: TableId) -> &Table {
        self.get(id)
            .expect("transactions only record tables of their own database")
    }
}
