//! Catalog changes a transaction block has made and not yet committed: the block's own view of
//! the catalog until it ends, published to every session when it commits, undone when it rolls
//! back (PostgreSQL's transactional DDL).
//!
//! A change is carried out inside the block's engine transaction — the catalog row that records
//! it, the rows a rebuild copies — so the engine commits it with the block's other writes or not
//! at all. What the engine cannot take back is an engine table's creation: a block that rolls
//! back drops the engine tables its changes made (a crash leaves them undescribed, and opening
//! the catalog drops them); one that commits drops those its changes replaced.
//!
//! Must never change the shared catalog before the block's engine transaction has committed.

use std::collections::HashMap;
use std::sync::Arc;

use crate::catalog::acl::Actor;
use crate::catalog::{Catalog, SqlTable};
use crate::error::{Result, SqlError, sqlstate};

/// One change to the catalog.
#[derive(Clone, Debug)]
pub enum Change {
    /// A table created.
    Add(Arc<SqlTable>),
    /// A table rebuilt (TRUNCATE, ADD PRIMARY KEY, CREATE INDEX): `new` stands for `old`. Or
    /// only its description changed (its owner or grants): `new` has `old`'s engine table.
    Replace {
        old: Arc<SqlTable>,
        new: Arc<SqlTable>,
    },
    /// A table dropped.
    Drop(Arc<SqlTable>),
}

/// A table's name, the table a block found under it (if any) and the one it leaves (if any).
type NetChange = (String, Option<Arc<SqlTable>>, Option<Arc<SqlTable>>);

/// A block's uncommitted changes, in order, and the tables as they make them look.
#[derive(Clone, Debug, Default)]
pub struct Pending {
    changes: Vec<Change>,
    /// Tables by name as the changes leave them (`None`: dropped).
    tables: HashMap<String, Option<Arc<SqlTable>>>,
}

impl Pending {
    /// Whether the block has changed nothing.
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }

    /// Table `name` as the block's changes leave it: `Some(None)` if they dropped it, `None` if
    /// they did not touch it.
    pub fn table(&self, name: &str) -> Option<Option<Arc<SqlTable>>> {
        self.tables.get(name).cloned()
    }

    /// The tables the block's changes leave (not those they dropped).
    pub fn tables(&self) -> impl Iterator<Item = &Arc<SqlTable>> {
        self.tables.values().flatten()
    }

    /// How many changes the block has made: where a savepoint stands in them.
    pub fn len(&self) -> usize {
        self.changes.len()
    }

    /// The changes after the first `kept`, taken out (a rollback to a savepoint made then): the
    /// caller discards them (see [`discard`](Self::discard)) once the block's transaction no
    /// longer holds their writes.
    pub fn split_off(&mut self, kept: usize) -> Pending {
        let later = Pending {
            changes: self.changes.split_off(kept.min(self.changes.len())),
            tables: HashMap::new(),
        };
        let kept = std::mem::take(&mut self.changes);
        self.tables.clear();
        self.record(kept);
        later
    }

    /// Records `changes`, made in the block's transaction.
    pub fn record(&mut self, changes: Vec<Change>) {
        for c in changes {
            match &c {
                Change::Add(t) | Change::Replace { new: t, .. } => {
                    self.tables.insert(t.name.clone(), Some(Arc::clone(t)));
                }
                Change::Drop(t) => {
                    self.tables.insert(t.name.clone(), None);
                }
            }
            self.changes.push(c);
        }
    }

    /// The block committed: every session sees its changes from now on, and the engine tables
    /// they replaced or dropped go. The catalog moves from what the block saw (a table the
    /// block replaced must still be the one it replaced); a change another block made to the
    /// same table since fails this one (its catalog row's write would have conflicted first,
    /// so this is a safety net).
    pub fn publish(self, catalog: &Catalog) -> Result<()> {
        // The net effect per name: the first table the block saw, and the last it left.
        let mut net: Vec<NetChange> = Vec::new();
        let mut gone = Vec::new();
        for c in self.changes {
            let (name, before, after) = match c {
                Change::Add(t) => (t.name.clone(), None, Some(t)),
                Change::Replace { old, new } => (new.name.clone(), Some(old), Some(new)),
                Change::Drop(t) => (t.name.clone(), Some(t), None),
            };
            match net.iter_mut().find(|(n, _, _)| *n == name) {
                Some(entry) => {
                    // A table this block made and then replaced or dropped is its own to drop.
                    if let Some(previous) = entry.2.take() {
                        gone.push(previous);
                    }
                    entry.2 = after;
                }
                None => net.push((name, before, after)),
            }
        }
        let mut result = Ok(());
        // A change of description alone leaves the engine table in use.
        let kept: Vec<Arc<overtake_engine::Table>> = net
            .iter()
            .filter_map(|(_, _, after)| after.as_ref().map(|t| Arc::clone(&t.engine)))
            .collect();
        gone.retain(|t: &Arc<SqlTable>| !kept.iter().any(|k| Arc::ptr_eq(k, &t.engine)));
        for (name, before, after) in net {
            let moved = catalog.exchange(&name, before.as_ref(), after);
            if !moved {
                result = Err(SqlError::new(
                    sqlstate::SERIALIZATION_FAILURE,
                    format!("table \"{name}\" was changed concurrently"),
                ));
                continue;
            }
            if let Some(before) = before
                && !kept.iter().any(|k| Arc::ptr_eq(k, &before.engine))
            {
                gone.push(before);
            }
        }
        for t in gone {
            // Already gone only if a concurrent change dropped it: nothing to do then.
            drop_engine_tables(catalog, &t);
        }
        result
    }

    /// The block rolled back: the engine tables its changes made are dropped.
    pub fn discard(self, catalog: &Catalog) {
        for c in self.changes {
            match c {
                Change::Add(t) => drop_engine_tables(catalog, &t),
                Change::Replace { old, new } if !Arc::ptr_eq(&old.engine, &new.engine) => {
                    drop_engine_tables(catalog, &new);
                }
                _ => {}
            }
        }
    }
}

/// The catalog as one transaction sees it: the shared catalog under its block's uncommitted
/// changes, and the role its statements act for (checked by catalog changes; `None`: the
/// catalog's own statements, which are not checked).
#[derive(Clone, Copy)]
pub struct Tables<'a> {
    pub catalog: &'a Catalog,
    pub pending: Option<&'a Pending>,
    pub actor: Option<&'a Actor>,
}

impl<'a> Tables<'a> {
    /// The shared catalog alone.
    pub fn shared(catalog: &'a Catalog) -> Self {
        Tables {
            catalog,
            pending: None,
            actor: None,
        }
    }

    /// The shared catalog under `pending`.
    pub fn with(catalog: &'a Catalog, pending: &'a Pending) -> Self {
        Tables {
            catalog,
            pending: Some(pending),
            actor: None,
        }
    }

    /// The same, acting for `actor`.
    pub fn acting_for(self, actor: &'a Actor) -> Self {
        Tables {
            actor: Some(actor),
            ..self
        }
    }

    /// The table called `name`.
    pub fn table(&self, name: &str) -> Result<Arc<SqlTable>> {
        match self.pending.and_then(|p| p.table(name)) {
            Some(Some(t)) => Ok(t),
            Some(None) => Err(SqlError::new(
                sqlstate::UNDEFINED_TABLE,
                format!("relation \"{name}\" does not exist"),
            )),
            None => self.catalog.table(name),
        }
    }

    /// Every table, by name.
    pub fn all(&self) -> Vec<Arc<SqlTable>> {
        let mut all: Vec<Arc<SqlTable>> = self
            .catalog
            .tables()
            .into_iter()
            .filter(|t| self.pending.and_then(|p| p.table(&t.name)).is_none())
            .collect();
        if let Some(p) = self.pending {
            all.extend(p.tables.values().flatten().cloned());
        }
        all.sort_by(|a, b| a.name.cmp(&b.name));
        all
    }

    /// Whether the block has changed anything (plans made under its changes are its own).
    pub fn is_pending(&self) -> bool {
        self.pending.is_some_and(|p| !p.is_empty())
    }
}

/// Drops `table`'s engine tables (see [`SqlTable::engine_tables`]); one already gone is no
/// error (a concurrent change dropped it).
fn drop_engine_tables(catalog: &Catalog, table: &SqlTable) {
    for t in table.engine_tables() {
        let _ = catalog.database().drop_table(t.name());
    }
}
