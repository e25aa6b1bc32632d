//! Index and constraint DDL: `CREATE [UNIQUE] INDEX`, `ALTER TABLE ... ADD UNIQUE`, `DROP
//! INDEX` and `ALTER TABLE ... DROP CONSTRAINT`, each a rebuild of the table with its new set of
//! indexes (see the parent module), named and refused as PostgreSQL names and refuses them.
//!
//! Must never drop an index a constraint stands on through `DROP INDEX`: PostgreSQL asks for the
//! constraint to be dropped instead, and so does this.

use std::sync::Arc;

use overtake_engine::Transaction;

use super::{IndexSpec, index_list, not_a, positions, rebuild, rebuild_with, relation_exists};
use crate::catalog::SqlTable;
use crate::catalog::pending::{Change, Tables};
use crate::error::{Result, SqlError, sqlstate};
use crate::exec::access;
use crate::plan::IndexKind;

/// `CREATE [UNIQUE] INDEX [name] ON table (columns)`, or (`kind` `UniqueConstraint`) `ALTER
/// TABLE table ADD [CONSTRAINT name] UNIQUE (columns)`.
pub(super) fn create(
    tables: &Tables<'_>,
    txn: &mut Transaction<'_>,
    name: Option<&str>,
    (table, columns): (&str, &[String]),
    if_not_exists: bool,
    kind: IndexKind,
) -> Result<(&'static str, Vec<Change>)> {
    let what = match kind {
        IndexKind::UniqueConstraint => super::ADD_CONSTRAINT,
        IndexKind::Plain | IndexKind::Unique => "cannot create index on",
    };
    let old = super::table_to_change(tables, table, what)?;
    access::require_owner(tables.actor, &old)?;
    let cols = positions(&old, columns)?;
    let taken = |n: &str| {
        old.indexes.iter().any(|i| i.name == n)
            || tables.table(n).is_ok()
            || n == old.primary_key_name()
    };
    let name = match name {
        Some(n) if taken(n) => {
            if if_not_exists {
                return Ok(("CREATE INDEX", Vec::new()));
            }
            return Err(relation_exists(n));
        }
        Some(n) => n.to_owned(),
        None => {
            let names: Vec<&str> = cols.iter().map(|&c| old.columns[c].name.as_str()).collect();
            let suffix = if kind == IndexKind::UniqueConstraint {
                "key"
            } else {
                "idx"
            };
            crate::bind::relation_name(table, &names, suffix, taken)
        }
    };
    let mut indexes = index_list(&old);
    indexes.push(IndexSpec {
        name: name.clone(),
        columns: cols,
        oid: tables.catalog.new_oids(1),
        kind,
    });
    let shape = (old.columns.clone(), old.primary_key.clone(), indexes);
    let change = rebuild(tables.catalog, txn, &old, shape, false).map_err(|e| {
        let about = e.about.as_deref();
        if e.code != sqlstate::UNIQUE_VIOLATION
            || about.and_then(|a| a.constraint.as_deref()) != Some(name.as_str())
        {
            return e;
        }
        // The rows copied into the new table met a value twice.
        let detail = about.and_then(|a| a.detail.as_deref());
        let refused = SqlError::new(
            sqlstate::UNIQUE_VIOLATION,
            format!("could not create unique index \"{name}\""),
        )
        .concerning(&old.name, None, Some(name.clone()));
        match detail {
            Some(d) => refused.with_detail(d.replace("already exists", "is duplicated")),
            None => refused,
        }
    })?;
    let tag = if kind == IndexKind::UniqueConstraint {
        "ALTER TABLE"
    } else {
        "CREATE INDEX"
    };
    Ok((tag, vec![change]))
}

/// `DROP INDEX [IF EXISTS] names`: one rebuild per table that loses indexes.
pub(super) fn drop(
    tables: &Tables<'_>,
    txn: &mut Transaction<'_>,
    names: &[String],
    if_exists: bool,
) -> Result<(&'static str, Vec<Change>)> {
    let all = tables.all();
    // Each table with the names of the indexes it loses, in the order first named.
    let mut losing: Vec<(Arc<SqlTable>, Vec<&str>)> = Vec::new();
    for n in names {
        let owner = all.iter().find(|t| {
            t.indexes.iter().any(|i| i.name == *n)
                || (!t.primary_key.is_empty() && t.primary_key_name() == *n)
        });
        let Some(table) = owner else {
            if let Ok(t) = tables.table(n) {
                let kind = t.kind();
                return Err(not_a(n, "index").with_hint(format!(
                    "Use {} to remove a {}.",
                    kind.drop_tag(),
                    kind.noun()
                )));
            }
            if if_exists {
                continue;
            }
            return Err(SqlError::new(
                sqlstate::UNDEFINED_OBJECT,
                format!("index \"{n}\" does not exist"),
            ));
        };
        // PostgreSQL checks the owner first, and names the index.
        access::require_owner(tables.actor, table)
            .map_err(|e| SqlError::new(e.code, format!("must be owner of index {n}")))?;
        let constraint = *n == table.primary_key_name()
            || table
                .indexes
                .iter()
                .any(|i| i.name == *n && i.is_unique_constraint());
        if constraint {
            let t = &table.name;
            return Err(SqlError::new(
                sqlstate::DEPENDENT_OBJECTS_STILL_EXIST,
                format!("cannot drop index {n} because constraint {n} on table {t} requires it"),
            )
            .with_hint(format!("You can drop constraint {n} on table {t} instead.")));
        }
        super::foreign_key::refuse_referenced_index(tables, table, n, &format!("index {n}"))?;
        match losing.iter_mut().find(|(t, _)| t.name == table.name) {
            Some((_, lost)) => lost.push(n),
            None => losing.push((Arc::clone(table), vec![n])),
        }
    }
    let mut changes = Vec::with_capacity(losing.len());
    for (table, lost) in &losing {
        let mut indexes = index_list(table);
        indexes.retain(|i| !lost.contains(&i.name.as_str()));
        let shape = (table.columns.clone(), table.primary_key.clone(), indexes);
        match rebuild(tables.catalog, txn, table, shape, false) {
            Ok(c) => changes.push(c),
            Err(e) => {
                super::discard_made(tables.catalog, changes);
                return Err(e);
            }
        }
    }
    Ok(("DROP INDEX", changes))
}

/// `ALTER TABLE table DROP CONSTRAINT [IF EXISTS] name`: a primary key (the table keeps its
/// columns' NOT NULL, as in PostgreSQL), a UNIQUE constraint or a CHECK constraint.
pub(super) fn drop_constraint(
    tables: &Tables<'_>,
    txn: &mut Transaction<'_>,
    table: &str,
    name: &str,
    if_exists: bool,
) -> Result<(&'static str, Vec<Change>)> {
    let what = "ALTER action DROP CONSTRAINT cannot be performed on";
    let old = super::table_to_change(tables, table, what)?;
    access::require_owner(tables.actor, &old)?;
    if let Some(change) = super::foreign_key::drop(tables, txn, &old, name)? {
        return Ok(("ALTER TABLE", vec![change]));
    }
    let what = format!("constraint {name} on table {table}");
    super::foreign_key::refuse_referenced_index(tables, &old, name, &what)?;
    let mut primary_key = old.primary_key.clone();
    let mut indexes = index_list(&old);
    let mut checks = old.checks.clone();
    if !primary_key.is_empty() && old.primary_key_name() == name {
        primary_key.clear();
    } else if let Some(at) = indexes
        .iter()
        .position(|i| i.name == name && i.kind == IndexKind::UniqueConstraint)
    {
        indexes.remove(at);
    } else if let Some(at) = checks.iter().position(|c| c.name == name) {
        checks.remove(at);
    } else if if_exists {
        return Ok(("ALTER TABLE", Vec::new()));
    } else {
        return Err(SqlError::new(
            sqlstate::UNDEFINED_OBJECT,
            format!("constraint \"{name}\" of relation \"{table}\" does not exist"),
        ));
    }
    let shape = (old.columns.clone(), primary_key, indexes);
    let constraints = (checks, old.foreign_keys.clone());
    let change = rebuild_with(tables.catalog, txn, &old, shape, constraints, None)?;
    Ok(("ALTER TABLE", vec![change]))
}
