//! `CREATE [OR REPLACE] VIEW`: a view is a relation of the catalog with an engine table that
//! stays empty (so it is kept, dropped, owned and granted as every relation is) and a query
//! (see `catalog::View`).
//!
//! Must never make a view over a relation that a concurrent block is dropping: the relations
//! its query names are locked as a writer locks them (shared with writers, not with a drop or a
//! rebuild) and checked current.

use std::sync::Arc;

use overtake_engine::{ColumnType, TableLock, TableSchema, Transaction};

use super::{already_exists, not_a, or_discard, relation_exists};
use crate::catalog::acl::Acl;
use crate::catalog::pending::{Change, Tables};
use crate::catalog::{RelKind, SqlColumn, SqlTable, View};
use crate::error::{Result, SqlError, sqlstate};
use crate::exec::{access, stored};

/// Makes view `name` with `columns` over `view`'s query (`or_replace`: replaces the view of
/// that name, whose columns it must keep, first and in order).
pub(super) fn create(
    tables: &Tables<'_>,
    txn: &mut Transaction<'_>,
    (name, columns, view): (&str, &[SqlColumn], &Arc<View>),
    or_replace: bool,
) -> Result<(&'static str, Vec<Change>)> {
    let catalog = tables.catalog;
    let old = match tables.table(name) {
        Ok(old) if or_replace && old.kind() == RelKind::View => Some(old),
        Ok(_) if or_replace => return Err(not_a(name, "view")),
        Ok(_) => return Err(relation_exists(name)),
        Err(_) => None,
    };
    for read in &view.depends_on {
        let t = tables.table(read)?;
        txn.lock_table(&t.engine, TableLock::Write)?;
        stored::check_current(txn, catalog.stored(), &t)?;
    }
    let Some(old) = old else {
        let schema = TableSchema::builder(catalog.engine_name(name))
            .column("none", ColumnType::Int32)
            .primary_key(&["none"])
            .build()
            .map_err(|e| SqlError::new(sqlstate::INTERNAL_ERROR, e.to_string()))?;
        let engine = catalog.database().create_table(schema)?;
        let made = SqlTable {
            name: name.to_owned(),
            oid: catalog.new_oids(SqlTable::OIDS),
            columns: columns.to_vec(),
            primary_key: Vec::new(),
            indexes: Vec::new(),
            engine,
            row_ids: None,
            statistics: Default::default(),
            acl: Acl::owned_by(tables.actor),
            checks: Vec::new(),
            foreign_keys: Vec::new(),
            sequence: None,
            view: Some(Arc::clone(view)),
        };
        let done =
            stored::write(txn, catalog.stored(), &made, false).map_err(|e| already_exists(e, name));
        or_discard(catalog, &made, done)?;
        return Ok(("CREATE VIEW", vec![Change::Add(Arc::new(made))]));
    };
    access::require_owner(tables.actor, &old)?;
    keeps_columns(&old.columns, columns)?;
    stored::check_current(txn, catalog.stored(), &old)?;
    let new = SqlTable {
        name: old.name.clone(),
        oid: old.oid,
        columns: columns.to_vec(),
        primary_key: Vec::new(),
        indexes: Vec::new(),
        engine: Arc::clone(&old.engine),
        row_ids: None,
        statistics: Default::default(),
        acl: old.acl.clone(),
        checks: Vec::new(),
        foreign_keys: Vec::new(),
        sequence: None,
        view: Some(Arc::clone(view)),
    };
    stored::write(txn, catalog.stored(), &new, true)?;
    Ok((
        "CREATE VIEW",
        vec![Change::Replace {
            old,
            new: Arc::new(new),
        }],
    ))
}

/// The views reading the relation `change` replaces that could no longer be read after it
/// (their queries fail to bind, or show other columns).
pub(super) fn broken_readers(tables: &Tables<'_>, change: &Change) -> Vec<String> {
    let Change::Replace { new, .. } = change else {
        return Vec::new();
    };
    let mut pending = tables.pending.cloned().unwrap_or_default();
    pending.record(vec![change.clone()]);
    let after = Tables {
        catalog: tables.catalog,
        pending: Some(&pending),
        actor: None,
    };
    after
        .all()
        .into_iter()
        .filter(|v| {
            v.view
                .as_ref()
                .is_some_and(|q| q.depends_on.contains(&new.name))
        })
        .filter(|v| !crate::bind::view::still_reads(after, v))
        .map(|v| v.name.clone())
        .collect()
}

/// Fails with 42P16 unless `new` begins with `old`'s columns (names and types), as PostgreSQL
/// requires of a replaced view.
fn keeps_columns(old: &[SqlColumn], new: &[SqlColumn]) -> Result<()> {
    let refuse = |message: String| SqlError::new(sqlstate::INVALID_TABLE_DEFINITION, message);
    if new.len() < old.len() {
        return Err(refuse("cannot drop columns from view".into()));
    }
    for (o, n) in old.iter().zip(new) {
        if o.name != n.name {
            return Err(refuse(format!(
                "cannot change name of view column \"{}\" to \"{}\"",
                o.name, n.name
            ))
            .with_hint(
                "Use ALTER VIEW ... RENAME COLUMN ... to change name of view column instead.",
            ));
        }
        if o.ty != n.ty {
            return Err(refuse(format!(
                "cannot change data type of view column \"{}\" from {} to {}",
                o.name,
                o.ty.name(),
                n.ty.name()
            )));
        }
    }
    Ok(())
}
