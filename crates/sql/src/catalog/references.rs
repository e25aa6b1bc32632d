//! Which tables refer to which through FOREIGN KEY constraints, as one statement sees the
//! catalog: the tables a write of one table may have to read (the rows its new values
//! reference) or change (the rows referencing the rows it deletes or re-keys, through
//! `ON DELETE` / `ON UPDATE` actions, and theirs in turn), resolved when the statement is
//! planned so that running it needs no catalog lookup. A plan is made again whenever the
//! catalog changes, so what it resolved stays the catalog's.
//!
//! Must never decide what a constraint does to rows (`exec::foreign_keys` does).

use std::collections::HashMap;
use std::sync::Arc;

use crate::catalog::pending::Tables;
use crate::catalog::{ForeignKey, SqlTable};
use crate::error::{Result, SqlError, sqlstate};

/// The index of a table whose values a foreign key references: its primary key, or the
/// unique index at this position of its `indexes`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReferencedIndex {
    PrimaryKey,
    Unique(usize),
}

impl ReferencedIndex {
    /// The columns of `table` it is on, in its key order.
    pub fn columns(self, table: &SqlTable) -> &[usize] {
        match self {
            ReferencedIndex::PrimaryKey => &table.primary_key,
            ReferencedIndex::Unique(i) => &table.indexes[i].columns,
        }
    }

    /// The name of the constraint or index it is (what a foreign key depends on).
    pub fn name(self, table: &SqlTable) -> String {
        match self {
            ReferencedIndex::PrimaryKey => table.primary_key_name(),
            ReferencedIndex::Unique(i) => table.indexes[i].name.clone(),
        }
    }
}

/// The primary key or unique index of `parent` on exactly the columns `names` (in any order),
/// as PostgreSQL looks for the one a foreign key references; 42830 if there is none.
pub fn referenced_index(parent: &SqlTable, names: &[String]) -> Result<ReferencedIndex> {
    let mut wanted = names
        .iter()
        .map(|n| {
            parent.column(n).ok_or_else(|| {
                SqlError::new(
                    sqlstate::UNDEFINED_COLUMN,
                    format!("column \"{n}\" referenced in foreign key constraint does not exist"),
                )
            })
        })
        .collect::<Result<Vec<_>>>()?;
    wanted.sort_unstable();
    let same = |cols: &[usize]| {
        let mut cols = cols.to_vec();
        cols.sort_unstable();
        cols == wanted
    };
    if !parent.primary_key.is_empty() && same(&parent.primary_key) {
        return Ok(ReferencedIndex::PrimaryKey);
    }
    parent
        .indexes
        .iter()
        .position(|i| i.unique.is_some() && same(&i.columns))
        .map(ReferencedIndex::Unique)
        .ok_or_else(|| {
            SqlError::new(
                sqlstate::INVALID_FOREIGN_KEY,
                format!(
                    "there is no unique constraint matching given keys for referenced table \"{}\"",
                    parent.name
                ),
            )
        })
}

/// A foreign key of a table in [`References`]: the referencing table and the constraint's
/// position in its `foreign_keys`.
#[derive(Clone, Debug)]
pub struct Referencing {
    pub child: Arc<SqlTable>,
    pub fk: usize,
}

impl Referencing {
    pub fn constraint(&self) -> &ForeignKey {
        &self.child.foreign_keys[self.fk]
    }
}

/// The tables one statement's writes may reach through foreign keys, by name, and the foreign
/// keys referencing each.
#[derive(Debug, Default)]
pub struct References {
    tables: HashMap<String, Arc<SqlTable>>,
    referencing: HashMap<String, Vec<Referencing>>,
}

impl References {
    /// What a write of `table` may reach, or `None` if no foreign key involves it (nothing to
    /// check: the common case, found without listing the tables when no table of the catalog
    /// has a foreign key).
    pub fn of(tables: &Tables<'_>, table: &Arc<SqlTable>) -> Option<Arc<References>> {
        let pending_have = tables
            .pending
            .is_some_and(|p| p.tables().any(|t| !t.foreign_keys.is_empty()));
        if !tables.catalog.may_have_foreign_keys() && !pending_have {
            return None;
        }
        let all = tables.all();
        let mut referencing: HashMap<String, Vec<Referencing>> = HashMap::new();
        for t in &all {
            for (fk, c) in t.foreign_keys.iter().enumerate() {
                referencing
                    .entry(c.parent.clone())
                    .or_default()
                    .push(Referencing {
                        child: Arc::clone(t),
                        fk,
                    });
            }
        }
        if table.foreign_keys.is_empty() && !referencing.contains_key(&table.name) {
            return None;
        }
        let by_name: HashMap<&str, &Arc<SqlTable>> =
            all.iter().map(|t| (t.name.as_str(), t)).collect();
        // Every table reachable through foreign keys either way: a write's checks read
        // parents, its actions change children, whose own checks and actions go on.
        let mut reached: HashMap<String, Arc<SqlTable>> = HashMap::new();
        let mut todo = vec![Arc::clone(table)];
        while let Some(t) = todo.pop() {
            if reached.contains_key(&t.name) {
                continue;
            }
            for c in &t.foreign_keys {
                if let Some(p) = by_name.get(c.parent.as_str()) {
                    todo.push(Arc::clone(p));
                }
            }
            for r in referencing.get(&t.name).into_iter().flatten() {
                todo.push(Arc::clone(&r.child));
            }
            reached.insert(t.name.clone(), t);
        }
        referencing.retain(|name, _| reached.contains_key(name));
        Some(Arc::new(References {
            tables: reached,
            referencing,
        }))
    }

    /// Table `name` as the statement sees it; 42P01 if a foreign key names a table that is
    /// gone (which dropping it prevents).
    pub fn table(&self, name: &str) -> Result<&Arc<SqlTable>> {
        self.tables.get(name).ok_or_else(|| {
            SqlError::new(
                sqlstate::UNDEFINED_TABLE,
                format!("relation \"{name}\" does not exist"),
            )
        })
    }

    /// The foreign keys referencing table `name`.
    pub fn referencing(&self, name: &str) -> &[Referencing] {
        self.referencing.get(name).map_or(&[], Vec::as_slice)
    }
}

/// The foreign keys of the catalog as `tables` shows it that reference table `name`, with
/// their tables (for DDL: a table, index or column they depend on).
pub fn referencing(tables: &Tables<'_>, name: &str) -> Vec<Referencing> {
    let mut found = Vec::new();
    for t in tables.all() {
        for (fk, c) in t.foreign_keys.iter().enumerate() {
            if c.parent == name {
                found.push(Referencing {
                    child: Arc::clone(&t),
                    fk,
                });
            }
        }
    }
    found
}
