//! FOREIGN KEY constraints in DDL: resolving a declared one against the tables it joins,
//! adding one to a table (a rebuild whose rows are then checked, as PostgreSQL validates a new
//! constraint), and what other DDL must respect: a referenced table, index or column cannot go
//! while a constraint depends on it (2BP01), nor a referenced table be truncated alone (0A000).
//!
//! Must never leave a constraint that names a table, index or column that is gone.

use std::sync::Arc;

use overtake_engine::Transaction;

use super::{index_list, plain_table, rebuild_with};
use crate::bind::relation_name;
use crate::catalog::acl::Privileges;
use crate::catalog::pending::{Change, Tables};
use crate::catalog::references::{Referencing, referenced_index, referencing};
use crate::catalog::{ForeignKey, SqlTable};
use crate::error::{Result, SqlError, sqlstate};
use crate::exec::access;
use crate::exec::foreign_keys::validate;
use crate::plan::ForeignKeyDef;

/// The constraint `def` declares on `child` (its new description: columns, keys, and the
/// constraints before this one), over the catalog as `tables` shows it; a constraint
/// referencing `child` itself resolves against that description.
pub(super) fn resolve(
    tables: &Tables<'_>,
    child: &SqlTable,
    def: &ForeignKeyDef,
) -> Result<ForeignKey> {
    let own;
    let parent: &SqlTable = if def.parent == child.name {
        child
    } else {
        own = plain_table(tables, &def.parent)?;
        access::require(tables.actor, &own, Privileges::REFERENCES)?;
        &own
    };
    let columns = def
        .columns
        .iter()
        .map(|n| {
            child.column(n).ok_or_else(|| {
                SqlError::new(
                    sqlstate::UNDEFINED_COLUMN,
                    format!("column \"{n}\" referenced in foreign key constraint does not exist"),
                )
            })
        })
        .collect::<Result<Vec<usize>>>()?;
    let parent_columns = if def.parent_columns.is_empty() {
        if parent.primary_key.is_empty() {
            return Err(SqlError::new(
                sqlstate::UNDEFINED_OBJECT,
                format!(
                    "there is no primary key for referenced table \"{}\"",
                    parent.name
                ),
            ));
        }
        parent
            .primary_key
            .iter()
            .map(|&c| parent.columns[c].name.clone())
            .collect()
    } else {
        def.parent_columns.clone()
    };
    if parent_columns.len() != columns.len() {
        return Err(SqlError::new(
            sqlstate::INVALID_FOREIGN_KEY,
            "number of referencing and referenced columns for foreign key disagree",
        ));
    }
    referenced_index(parent, &parent_columns)?;
    let names: Vec<&str> = columns
        .iter()
        .map(|&c| child.columns[c].name.as_str())
        .collect();
    let name = match &def.name {
        Some(n) => n.clone(),
        None => relation_name(&child.name, &names, "fkey", |n| constraint_taken(child, n)),
    };
    for (&c, p) in columns.iter().zip(&parent_columns) {
        let (ty, pty) = (
            child.columns[c].ty,
            parent.columns[parent.column(p).unwrap_or(0)].ty,
        );
        let comparable = ty == pty
            || (ty.is_numeric() && pty.is_numeric())
            || (ty.is_string() && pty.is_string());
        if !comparable {
            return Err(SqlError::new(
                sqlstate::DATATYPE_MISMATCH,
                format!("foreign key constraint \"{name}\" cannot be implemented"),
            )
            .with_detail(format!(
                "Key columns \"{}\" and \"{p}\" are of incompatible types: {} and {}.",
                child.columns[c].name,
                ty.name(),
                pty.name()
            )));
        }
    }
    Ok(ForeignKey {
        name,
        columns,
        parent: parent.name.clone(),
        parent_columns,
        on_delete: def.on_delete,
        on_update: def.on_update,
    })
}

/// Whether a constraint or index of `table` is called `name`.
fn constraint_taken(table: &SqlTable, name: &str) -> bool {
    table.primary_key_name() == name
        || table.checks.iter().any(|c| c.name == name)
        || table.indexes.iter().any(|i| i.name == name)
        || table.foreign_keys.iter().any(|f| f.name == name)
}

/// `ALTER TABLE table ADD FOREIGN KEY`: rebuilds the table with the constraint (writers wait
/// meanwhile) and checks every row against the referenced table.
pub(super) fn add(
    tables: &Tables<'_>,
    txn: &mut Transaction<'_>,
    table: &str,
    def: &ForeignKeyDef,
) -> Result<(&'static str, Vec<Change>)> {
    let old = super::table_to_change(tables, table, super::ADD_CONSTRAINT)?;
    access::require_owner(tables.actor, &old)?;
    let fk = resolve(tables, &old, def)?;
    if constraint_taken(&old, &fk.name) {
        return Err(SqlError::new(
            sqlstate::DUPLICATE_OBJECT,
            format!(
                "constraint \"{}\" for relation \"{table}\" already exists",
                fk.name
            ),
        ));
    }
    let mut foreign_keys = old.foreign_keys.clone();
    foreign_keys.push(fk);
    let shape = (
        old.columns.clone(),
        old.primary_key.clone(),
        index_list(&old),
    );
    let constraints = (old.checks.clone(), foreign_keys);
    let change = rebuild_with(tables.catalog, txn, &old, shape, constraints, None)?;
    let Change::Replace { new, .. } = &change else {
        unreachable!("a rebuild replaces");
    };
    let at = new.foreign_keys.len() - 1;
    let parent_name = &new.foreign_keys[at].parent;
    let parent = if *parent_name == new.name {
        Arc::clone(new)
    } else {
        tables.table(parent_name)?
    };
    let checked = validate(txn, new, at, &parent);
    if let Err(e) = checked {
        super::discard_made(tables.catalog, vec![change]);
        return Err(e);
    }
    Ok(("ALTER TABLE", vec![change]))
}

/// The foreign keys of tables other than those in `going` that reference table `name`.
pub(super) fn referencing_from_others(
    tables: &Tables<'_>,
    name: &str,
    going: &[Arc<SqlTable>],
) -> Vec<Referencing> {
    referencing(tables, name)
        .into_iter()
        .filter(|r| !going.iter().any(|g| g.name == r.child.name))
        .collect()
}

/// 2BP01: `what` (`table p`, `index p_pkey`) cannot go while the constraints `by` depend on it
/// (`on`: how the detail names the object, `table p`).
pub(super) fn depended_on(what: &str, by: &[Referencing], on: &str) -> SqlError {
    let lines: Vec<String> = by
        .iter()
        .map(|r| {
            let name = &r.constraint().name;
            format!(
                "constraint {name} on table {} depends on {on}",
                r.child.name
            )
        })
        .collect();
    super::still_depended_on(what, &lines)
}

/// Refuses to drop the primary key or unique index `index` of `table` (its name) while a
/// foreign key references its columns.
pub(super) fn refuse_referenced_index(
    tables: &Tables<'_>,
    table: &SqlTable,
    index: &str,
    what: &str,
) -> Result<()> {
    let by: Vec<Referencing> = referencing(tables, &table.name)
        .into_iter()
        .filter(|r| {
            referenced_index(table, &r.constraint().parent_columns)
                .is_ok_and(|i| i.name(table) == index)
        })
        .collect();
    if by.is_empty() {
        return Ok(());
    }
    Err(depended_on(what, &by, &format!("index {index}")))
}

/// `old` without its foreign key `name`, described anew (no rebuild): the change, or `None` if
/// it has no such constraint.
pub(super) fn drop(
    tables: &Tables<'_>,
    txn: &mut Transaction<'_>,
    old: &Arc<SqlTable>,
    name: &str,
) -> Result<Option<Change>> {
    if !old.foreign_keys.iter().any(|f| f.name == name) {
        return Ok(None);
    }
    let mut foreign_keys = old.foreign_keys.clone();
    foreign_keys.retain(|f| f.name != name);
    let acl = old.acl.clone();
    super::describe_anew(tables.catalog, txn, old, (acl, foreign_keys)).map(Some)
}
