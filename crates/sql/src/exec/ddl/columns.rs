//! `ALTER TABLE` on columns: `ADD COLUMN`, `DROP COLUMN`, `RENAME COLUMN` and `ALTER COLUMN
//! SET|DROP DEFAULT`, `SET|DROP NOT NULL`, `[SET DATA] TYPE ... [USING ...]`, each a rebuild of
//! the table with its new columns (rows copied, a new column filled with its default as
//! PostgreSQL fills it, a column of a new type converted), under the same table locks as any
//! rebuild.
//!
//! Must never leave the stored catalog describing what it cannot read back: a change that would
//! (a CHECK constraint's text naming a renamed column, a serial's sequence owned by a column
//! that goes) is refused with 0A000.

use std::sync::Arc;

use overtake_engine::Transaction;

use super::{IndexSpec, index_list, rebuild_with, table_to_change};
use crate::catalog::SqlTable;
use crate::catalog::pending::{Change, Tables};
use crate::error::{Result, SqlError, sqlstate};
use crate::exec::access;
use crate::plan::ColumnChange;

/// Runs `change` on `table`.
pub(super) fn alter(
    tables: &Tables<'_>,
    txn: &mut Transaction<'_>,
    table: &str,
    change: &ColumnChange,
) -> Result<(&'static str, Vec<Change>)> {
    let action = match change {
        ColumnChange::Add { .. } => "ADD COLUMN",
        ColumnChange::Drop { .. } => "DROP COLUMN",
        ColumnChange::Rename { .. } => "RENAME COLUMN",
        ColumnChange::Default { .. } => "ALTER COLUMN ... SET DEFAULT",
        ColumnChange::Nullable { .. } => "ALTER COLUMN ... SET NOT NULL",
        ColumnChange::Type { .. } => "ALTER COLUMN ... SET DATA TYPE",
    };
    let what = format!("ALTER action {action} cannot be performed on");
    let old = table_to_change(tables, table, &what)?;
    access::require_owner(tables.actor, &old)?;
    let mut columns = old.columns.clone();
    let mut primary_key = old.primary_key.clone();
    let mut indexes = index_list(&old);
    let mut checks = old.checks.clone();
    let mut foreign_keys = old.foreign_keys.clone();
    let mut sources: Vec<Option<usize>> = (0..columns.len()).map(Some).collect();
    // A column whose values a `USING` expression makes, and the expression.
    let mut computed: Option<(usize, crate::expr::Expr)> = None;
    let missing = |name: &str| {
        SqlError::new(
            sqlstate::UNDEFINED_COLUMN,
            format!("column \"{name}\" of relation \"{table}\" does not exist"),
        )
    };
    let exists = |name: &str| {
        SqlError::new(
            sqlstate::DUPLICATE_COLUMN,
            format!("column \"{name}\" of relation \"{table}\" already exists"),
        )
    };
    match change {
        ColumnChange::Add {
            column,
            if_not_exists,
        } => {
            crate::catalog::check_not_system_column(&column.name)?;
            if old.column(&column.name).is_some() {
                if *if_not_exists {
                    return Ok(("ALTER TABLE", Vec::new()));
                }
                return Err(exists(&column.name));
            }
            columns.push(column.clone());
            sources.push(None);
        }
        ColumnChange::Drop { name, if_exists } => {
            let Some(at) = old.column(name) else {
                if *if_exists {
                    return Ok(("ALTER TABLE", Vec::new()));
                }
                return Err(missing(name));
            };
            let by = referenced(tables, &old, name);
            if !by.is_empty() {
                let what = format!("column {name} of table {table}");
                return Err(super::foreign_key::depended_on(&what, &by, &what));
            }
            if columns.len() == 1 {
                return Err(SqlError::unsupported("a table without columns"));
            }
            refuse_owned(tables, &old, name, "DROP COLUMN")?;
            foreign_keys.retain(|f| !f.columns.contains(&at));
            // What involves the column goes with it, as in PostgreSQL; what reads a later
            // column would need its positions moved, which a CHECK's cannot be here.
            checks.retain(|c| !reads(&c.expr, at));
            if checks
                .iter()
                .any(|c| c.expr.max_column().is_some_and(|m| m > at))
            {
                return Err(SqlError::unsupported(
                    "DROP COLUMN of a column before one a CHECK constraint reads",
                ));
            }
            if primary_key.contains(&at) {
                primary_key.clear();
            }
            indexes.retain(|i| !i.columns.contains(&at));
            columns.remove(at);
            sources.remove(at);
            let shift = |c: &mut usize| {
                if *c > at {
                    *c -= 1;
                }
            };
            primary_key.iter_mut().for_each(shift);
            indexes
                .iter_mut()
                .for_each(|i: &mut IndexSpec| i.columns.iter_mut().for_each(shift));
            foreign_keys
                .iter_mut()
                .for_each(|f| f.columns.iter_mut().for_each(shift));
        }
        ColumnChange::Rename { from, to } => {
            let at = old.column(from).ok_or_else(|| {
                SqlError::new(
                    sqlstate::UNDEFINED_COLUMN,
                    format!("column \"{from}\" does not exist"),
                )
            })?;
            crate::catalog::check_not_system_column(to)?;
            if old.column(to).is_some() {
                return Err(exists(to));
            }
            refuse_owned(tables, &old, from, "RENAME COLUMN")?;
            if !referenced(tables, &old, from).is_empty() {
                return Err(SqlError::unsupported(
                    "RENAME COLUMN of a column a foreign key references",
                ));
            }
            if !old.checks.is_empty() {
                return Err(SqlError::unsupported(
                    "RENAME COLUMN in a table with CHECK constraints",
                ));
            }
            columns[at].name = to.clone();
        }
        ColumnChange::Default { name, default } => {
            let at = old.column(name).ok_or_else(|| missing(name))?;
            columns[at].default = default.clone();
        }
        ColumnChange::Nullable { name, nullable } => {
            let at = old.column(name).ok_or_else(|| missing(name))?;
            if *nullable && primary_key.contains(&at) {
                return Err(SqlError::new(
                    sqlstate::INVALID_TABLE_DEFINITION,
                    format!("column \"{name}\" is in a primary key"),
                ));
            }
            columns[at].nullable = *nullable;
        }
        ColumnChange::Type { name, ty, using } => {
            let at = old.column(name).ok_or_else(|| missing(name))?;
            // A foreign key's columns must keep types that compare with the other side's.
            if !referenced(tables, &old, name).is_empty()
                || old.foreign_keys.iter().any(|f| f.columns.contains(&at))
            {
                return Err(SqlError::unsupported(
                    "ALTER COLUMN ... TYPE of a column in a foreign key",
                ));
            }
            let using = using.as_deref();
            let converted = crate::bind::converted_column(*tables, &old, at, *ty, using)?;
            computed = converted.map(|e| (at, e));
            columns[at].ty = *ty;
            if checks.iter().any(|c| reads(&c.expr, at)) {
                checks = crate::bind::rebound_checks(*tables, table, &columns, &checks)?;
            }
        }
    }
    let shape = (columns, primary_key, indexes);
    let constraints = (checks, foreign_keys);
    let sources = super::Sources {
        columns: &sources,
        computed: computed.as_ref().map(|(at, e)| (*at, e)),
    };
    let rebuilt = rebuild_with(tables.catalog, txn, &old, shape, constraints, Some(sources))?;
    // A view reading the column keeps the table as it is (PostgreSQL's dependency).
    let broken = super::view::broken_readers(tables, &rebuilt);
    if let Some(view) = broken.first() {
        super::discard_made(tables.catalog, vec![rebuilt]);
        return Err(match change {
            ColumnChange::Drop { name, .. } => {
                let what = format!("column {name} of table {table}");
                let lines: Vec<String> = broken
                    .iter()
                    .map(|v| format!("view {v} depends on {what}"))
                    .collect();
                super::still_depended_on(&what, &lines)
            }
            ColumnChange::Type { name, .. } => SqlError::new(
                sqlstate::FEATURE_NOT_SUPPORTED,
                "cannot alter type of a column used by a view or rule",
            )
            .with_detail(format!(
                "rule _RETURN on view {view} depends on column \"{name}\""
            )),
            ColumnChange::Rename { from, .. } => SqlError::new(
                sqlstate::FEATURE_NOT_SUPPORTED,
                format!(
                    "cannot rename column \"{from}\" of table \"{table}\": view \"{view}\" reads it"
                ),
            )
            .with_detail("Overtake keeps a view's query as written: drop the view first."),
            _ => SqlError::new(
                sqlstate::INTERNAL_ERROR,
                format!("ALTER TABLE {table} would leave view \"{view}\" unreadable"),
            ),
        });
    }
    Ok(("ALTER TABLE", vec![rebuilt]))
}

/// The foreign keys (of any table, `table` included) referencing column `name` of `table`.
fn referenced(
    tables: &Tables<'_>,
    table: &SqlTable,
    name: &str,
) -> Vec<crate::catalog::references::Referencing> {
    crate::catalog::references::referencing(tables, &table.name)
        .into_iter()
        .filter(|r| r.constraint().parent_columns.iter().any(|c| c == name))
        .collect()
}

/// True if `expr` reads column `at`.
fn reads(expr: &crate::expr::Expr, at: usize) -> bool {
    let mut found = false;
    expr.visit(&mut |e| found |= matches!(e, crate::expr::Expr::Column(c) if *c == at));
    found
}

/// Refuses `what` on column `name` of `table` if a sequence is owned by it (a serial or
/// identity column's): its catalog row names the column.
fn refuse_owned(tables: &Tables<'_>, table: &Arc<SqlTable>, name: &str, what: &str) -> Result<()> {
    let owned = tables.all().iter().any(|s| {
        s.sequence.as_ref().is_some_and(|q| {
            q.options
                .owned_by
                .as_ref()
                .is_some_and(|(t, c)| *t == table.name && c == name)
        })
    });
    if owned {
        return Err(SqlError::unsupported(format!(
            "{what} of a serial or identity column"
        )));
    }
    Ok(())
}
