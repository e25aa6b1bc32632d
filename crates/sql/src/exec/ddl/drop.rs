//! Dropping and emptying tables: `DROP TABLE` / `DROP SEQUENCE` / `DROP VIEW` (a table's
//! serial sequences go with it; CASCADE drops the foreign keys referencing it and the views
//! reading it) and `TRUNCATE` (a rebuild with no
//! rows; a table referenced by a foreign key only with the tables referencing it).
//!
//! Must never drop a sequence a remaining default draws from, nor leave a foreign key naming a
//! table that is gone or rows referencing rows that are, nor a view reading a relation that is.

use std::sync::Arc;

use overtake_engine::Transaction;

use super::{
    describe_anew, discard_made, foreign_key, index_list, lock_for_rebuild, not_a, plain_table,
    rebuild,
};
use crate::catalog::acl::Privileges;
use crate::catalog::pending::{Change, Tables};
use crate::catalog::{RelKind, SqlTable};
use crate::error::{Result, SqlError, sqlstate};
use crate::exec::{access, stored};
use crate::expr::Expr;

/// `DROP TABLE names` (or `DROP SEQUENCE`, `DROP VIEW`: `kind`; `cascade`: `... CASCADE`).
pub(super) fn tables(
    tables: &Tables<'_>,
    txn: &mut Transaction<'_>,
    names: &[String],
    if_exists: bool,
    (kind, cascade): (RelKind, bool),
) -> Result<(&'static str, Vec<Change>)> {
    let catalog = tables.catalog;
    let mut dropped: Vec<Arc<SqlTable>> = Vec::new();
    for n in names {
        match tables.table(n) {
            Ok(_) if dropped.iter().any(|t| t.name == *n) => {}
            Ok(t) if t.kind() != kind => {
                let is = t.kind();
                return Err(not_a(n, kind.noun()).with_hint(format!(
                    "Use {} to remove a {}.",
                    is.drop_tag(),
                    is.noun()
                )));
            }
            Ok(t) => dropped.push(t),
            Err(_) if if_exists => {}
            Err(_) => {
                return Err(SqlError::new(
                    sqlstate::UNDEFINED_TABLE,
                    format!("{} \"{n}\" does not exist", kind.noun()),
                ));
            }
        }
    }
    // A table's serial and identity sequences go with it.
    let all = tables.all();
    let owned: Vec<Arc<SqlTable>> = all
        .iter()
        .filter(|s| {
            s.sequence.as_ref().is_some_and(|q| {
                q.options
                    .owned_by
                    .as_ref()
                    .is_some_and(|(t, _)| dropped.iter().any(|d| d.name == *t))
            }) && !dropped.iter().any(|d| d.name == s.name)
        })
        .cloned()
        .collect();
    dropped.extend(owned);
    // A sequence a remaining table's default draws from cannot go (PostgreSQL's
    // dependency; CASCADE is not offered).
    for t in all
        .iter()
        .filter(|t| !dropped.iter().any(|d| d.name == t.name))
    {
        for c in &t.columns {
            let Some(d) = &c.default else { continue };
            let mut uses = None;
            d.expr.visit(&mut |e| {
                if let Expr::Sequence(s, _) = e
                    && let Some(gone) = dropped
                        .iter()
                        .find(|g| g.sequence.as_ref().is_some_and(|q| Arc::ptr_eq(q, s)))
                {
                    uses = Some(gone.name.clone());
                }
            });
            if let Some(s) = uses {
                return Err(SqlError::new(
                    sqlstate::DEPENDENT_OBJECTS_STILL_EXIST,
                    format!("cannot drop sequence {s} because other objects depend on it"),
                )
                .with_detail(format!(
                    "default value for column {} of table {} depends on sequence {s}",
                    c.name, t.name
                )));
            }
        }
    }
    for t in &dropped {
        access::require_owner(tables.actor, t)?;
    }
    dependent_views(tables, &mut dropped, cascade)?;
    // The foreign keys of remaining tables that reference a dropped one: refused, or
    // (CASCADE) dropped from their tables, as PostgreSQL drops them.
    let mut losing: Vec<(Arc<SqlTable>, Vec<String>)> = Vec::new();
    for t in &dropped {
        let by = foreign_key::referencing_from_others(tables, &t.name, &dropped);
        if !cascade && !by.is_empty() {
            let what = format!("table {}", t.name);
            return Err(foreign_key::depended_on(&what, &by, &what));
        }
        for r in by {
            let name = r.constraint().name.clone();
            match losing.iter_mut().find(|(c, _)| c.name == r.child.name) {
                Some((_, names)) => names.push(name),
                None => losing.push((Arc::clone(&r.child), vec![name])),
            }
        }
    }
    let mut changes = Vec::new();
    for (child, names) in losing {
        let mut foreign_keys = child.foreign_keys.clone();
        foreign_keys.retain(|f| !names.contains(&f.name));
        let acl = child.acl.clone();
        changes.push(describe_anew(catalog, txn, &child, (acl, foreign_keys))?);
    }
    for t in &dropped {
        lock_for_rebuild(txn, t)?;
        stored::check_current(txn, catalog.stored(), t)?;
        stored::remove(txn, catalog.stored(), &t.name)?;
    }
    changes.extend(dropped.into_iter().map(Change::Drop));
    Ok((kind.drop_tag(), changes))
}

/// Adds to `dropped` the views that read a relation in it, in turn (CASCADE), or refuses
/// with 2BP01 naming them.
pub(super) fn dependent_views(
    tables: &Tables<'_>,
    dropped: &mut Vec<Arc<SqlTable>>,
    cascade: bool,
) -> Result<()> {
    let all = tables.all();
    let mut at = 0;
    while at < dropped.len() {
        let gone = Arc::clone(&dropped[at]);
        let readers: Vec<Arc<SqlTable>> = all
            .iter()
            .filter(|v| {
                v.view
                    .as_ref()
                    .is_some_and(|q| q.depends_on.contains(&gone.name))
                    && !dropped.iter().any(|d| d.name == v.name)
            })
            .cloned()
            .collect();
        if !cascade && !readers.is_empty() {
            let what = format!("{} {}", gone.kind().noun(), gone.name);
            let lines: Vec<String> = readers
                .iter()
                .map(|v| format!("view {} depends on {what}", v.name))
                .collect();
            return Err(super::still_depended_on(&what, &lines));
        }
        // As PostgreSQL: the role must own what it names, not what goes with it.
        dropped.extend(readers);
        at += 1;
    }
    Ok(())
}

/// `TRUNCATE names` (`cascade`: `... CASCADE`).
pub(super) fn truncate(
    tables: &Tables<'_>,
    txn: &mut Transaction<'_>,
    names: &[String],
    cascade: bool,
) -> Result<(&'static str, Vec<Change>)> {
    let catalog = tables.catalog;
    let mut olds = Vec::new();
    for n in names {
        let t = plain_table(tables, n)?;
        if !olds.iter().any(|o: &Arc<SqlTable>| o.name == t.name) {
            olds.push(t);
        }
    }
    // A referenced table goes with the tables referencing it (CASCADE adds them, in
    // turn), or not at all.
    let mut at = 0;
    while at < olds.len() {
        let name = olds[at].name.clone();
        for r in foreign_key::referencing_from_others(tables, &name, &olds) {
            if !cascade {
                return Err(SqlError::new(
                    sqlstate::FEATURE_NOT_SUPPORTED,
                    "cannot truncate a table referenced in a foreign key constraint",
                )
                .with_detail(format!("Table \"{}\" references \"{name}\".", r.child.name))
                .with_hint(format!(
                    "Truncate table \"{}\" at the same time, or use TRUNCATE ... CASCADE.",
                    r.child.name
                )));
            }
            olds.push(r.child);
        }
        at += 1;
    }
    for t in &olds {
        access::require(tables.actor, t, Privileges::TRUNCATE)?;
    }
    let mut changes = Vec::new();
    for t in &olds {
        let shape = (t.columns.clone(), t.primary_key.clone(), index_list(t));
        match rebuild(catalog, txn, t, shape, true) {
            Ok(c) => changes.push(c),
            Err(e) => {
                discard_made(catalog, changes);
                return Err(e);
            }
        }
    }
    Ok(("TRUNCATE TABLE", changes))
}
