//! Binding `INSERT ... ON CONFLICT`: the arbiters a conflict target names (the unique indexes
//! whose columns are exactly the listed ones, or the named constraint) and a `DO UPDATE`'s
//! assignments and condition over the existing row and `excluded`, as PostgreSQL infers and
//! binds them.
//!
//! Must never choose an arbiter PostgreSQL would not: a target that matches no unique index
//! is 42P10, not a guess.

use sqlparser::ast::{self, AssignmentTarget, ConflictTarget, OnConflictAction};

use crate::bind::access::table_scope;
use crate::bind::{Binder, ident, object_name, require_boolean};
use crate::catalog::SqlTable;
use crate::error::{Result, SqlError, sqlstate};
use crate::plan::{ConflictUpdate, OnConflict};

impl Binder<'_> {
    /// `on` for an INSERT into `table` (called `alias` in expressions).
    pub(super) fn on_conflict(
        &mut self,
        on: &ast::OnConflict,
        table: &SqlTable,
        alias: &str,
    ) -> Result<OnConflict> {
        let (primary_key, indexes) = match &on.conflict_target {
            None => match on.action {
                OnConflictAction::DoNothing => (
                    !table.primary_key.is_empty(),
                    (0..table.indexes.len())
                        .filter(|&i| table.indexes[i].unique.is_some())
                        .collect(),
                ),
                OnConflictAction::DoUpdate(_) => {
                    return Err(SqlError::syntax(
                        "ON CONFLICT DO UPDATE requires inference specification or constraint name",
                    )
                    .with_hint("For example, ON CONFLICT (column_name)."));
                }
            },
            Some(ConflictTarget::Columns {
                columns,
                predicate: None,
            }) => inferred(table, columns)?,
            Some(ConflictTarget::Columns { .. }) => {
                return Err(SqlError::unsupported(
                    "an ON CONFLICT target with a WHERE clause",
                ));
            }
            Some(ConflictTarget::OnConstraint(name)) => named(table, &object_name(name)?)?,
        };
        let update = match &on.action {
            OnConflictAction::DoNothing => None,
            OnConflictAction::DoUpdate(u) => Some(self.conflict_update(u, table, alias)?),
        };
        Ok(OnConflict {
            targeted: on.conflict_target.is_some(),
            primary_key,
            indexes,
            update,
        })
    }

    fn conflict_update(
        &mut self,
        u: &ast::DoUpdate,
        table: &SqlTable,
        alias: &str,
    ) -> Result<ConflictUpdate> {
        let mut scope = table_scope(table, alias);
        scope.extend(table_scope(table, "excluded"));
        let mut assignments = Vec::with_capacity(u.assignments.len());
        for a in &u.assignments {
            let AssignmentTarget::ColumnName(name) = &a.target else {
                return Err(SqlError::unsupported("UPDATE of a tuple of columns"));
            };
            let col = match name.0.as_slice() {
                [_] => self.target_columns(table, &[object_name(name)?])?[0],
                // PostgreSQL reads `t.c` as a field `c` of a column `t`, which no table has.
                [first, ..] => {
                    let first = first.as_ident().map_or_else(String::new, ident);
                    return Err(SqlError::new(
                        sqlstate::UNDEFINED_COLUMN,
                        format!(
                            "column \"{first}\" of relation \"{}\" does not exist",
                            table.name
                        ),
                    ));
                }
                [] => return Err(SqlError::syntax("an assignment without a column")),
            };
            assignments.push((col, self.assignment(&table.columns[col], &a.value, &scope)?));
        }
        let filter = match &u.selection {
            None => None,
            Some(e) => {
                let (x, ty) = self.folded(e, &scope, &mut None)?;
                require_boolean("WHERE", ty)?;
                Some(x)
            }
        };
        Ok(ConflictUpdate {
            assignments,
            filter,
        })
    }
}

/// The arbiters of `ON CONFLICT (columns)`: the primary key and every unique index whose
/// columns are exactly those (in any order).
fn inferred(table: &SqlTable, columns: &[ast::Ident]) -> Result<(bool, Vec<usize>)> {
    let mut wanted = Vec::with_capacity(columns.len());
    for name in columns.iter().map(ident) {
        wanted.push(table.column(&name).ok_or_else(|| {
            SqlError::new(
                sqlstate::UNDEFINED_COLUMN,
                format!("column \"{name}\" does not exist"),
            )
        })?);
    }
    let set = |cols: &[usize]| {
        let mut cols = cols.to_vec();
        cols.sort_unstable();
        cols.dedup();
        cols
    };
    let wanted = set(&wanted);
    let primary_key = !table.primary_key.is_empty() && set(&table.primary_key) == wanted;
    let indexes: Vec<usize> = (0..table.indexes.len())
        .filter(|&i| table.indexes[i].unique.is_some() && set(&table.indexes[i].columns) == wanted)
        .collect();
    if !primary_key && indexes.is_empty() {
        return Err(SqlError::new(
            sqlstate::INVALID_COLUMN_REFERENCE,
            "there is no unique or exclusion constraint matching the ON CONFLICT specification",
        ));
    }
    Ok((primary_key, indexes))
}

/// The arbiter of `ON CONFLICT ON CONSTRAINT name`: the primary key or a UNIQUE constraint.
fn named(table: &SqlTable, name: &str) -> Result<(bool, Vec<usize>)> {
    if !table.primary_key.is_empty() && table.primary_key_name() == name {
        return Ok((true, Vec::new()));
    }
    match table
        .indexes
        .iter()
        .position(|i| i.name == name && i.is_unique_constraint())
    {
        Some(i) => Ok((false, vec![i])),
        None => Err(SqlError::new(
            sqlstate::UNDEFINED_OBJECT,
            format!(
                "constraint \"{name}\" for table \"{}\" does not exist",
                table.name
            ),
        )),
    }
}
