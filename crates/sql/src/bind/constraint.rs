//! What binding keys and constraints shares: the forms of PRIMARY KEY, UNIQUE and FOREIGN KEY
//! that are kept as declared, and FOREIGN KEY constraints (`REFERENCES` on a column, `FOREIGN
//! KEY (...) REFERENCES` in a table or `ALTER TABLE ... ADD`) by names only, resolved against
//! the catalog when the statement runs (the referenced table may be the one being created, or,
//! when a kept catalog is read back, one not read yet).
//!
//! Must never accept what it would keep as something else: DEFERRABLE constraints, INCLUDE
//! columns, NULLS NOT DISTINCT, and MATCH FULL and PARTIAL are refused with 0A000.

use sqlparser::ast;

use crate::bind::{ident, object_name};
use crate::catalog::RefAction;
use crate::error::{Result, SqlError};
use crate::plan::ForeignKeyDef;

/// The foreign key `fk` declares on `columns` (those it names, or, on a column, that column),
/// named `name` if the statement names it.
pub(crate) fn foreign_key(
    fk: &ast::ForeignKeyConstraint,
    name: Option<&ast::Ident>,
    columns: Vec<String>,
) -> Result<ForeignKeyDef> {
    plain_key(fk.characteristics.as_ref(), &[])?;
    match fk.match_kind {
        None | Some(ast::ConstraintReferenceMatchKind::Simple) => {}
        Some(other) => {
            return Err(SqlError::unsupported(format!("a foreign key {other}")));
        }
    }
    Ok(ForeignKeyDef {
        name: name.or(fk.name.as_ref()).map(ident),
        columns,
        parent: object_name(&fk.foreign_table)?,
        parent_columns: fk.referred_columns.iter().map(ident).collect(),
        on_delete: action(fk.on_delete),
        on_update: action(fk.on_update),
    })
}

fn action(a: Option<ast::ReferentialAction>) -> RefAction {
    match a {
        None | Some(ast::ReferentialAction::NoAction) => RefAction::NoAction,
        Some(ast::ReferentialAction::Restrict) => RefAction::Restrict,
        Some(ast::ReferentialAction::Cascade) => RefAction::Cascade,
        Some(ast::ReferentialAction::SetNull) => RefAction::SetNull,
        Some(ast::ReferentialAction::SetDefault) => RefAction::SetDefault,
    }
}

/// Refuses what would make a key other than an immediate one over its own columns:
/// `DEFERRABLE` (checked at the end of the statement or transaction) and `INCLUDE` columns.
pub(crate) fn plain_key(
    characteristics: Option<&ast::ConstraintCharacteristics>,
    include: &[ast::Ident],
) -> Result<()> {
    if let Some(c) = characteristics
        && (c.deferrable == Some(true)
            || c.initially == Some(ast::DeferrableInitial::Deferred)
            || c.enforced.is_some())
    {
        return Err(SqlError::unsupported(format!("a constraint that is {c}")));
    }
    if !include.is_empty() {
        return Err(SqlError::unsupported("an index with INCLUDE columns"));
    }
    Ok(())
}

/// [`plain_key`] for a UNIQUE constraint, which also keeps NULLs distinct.
pub(crate) fn plain_unique(u: &ast::UniqueConstraint) -> Result<()> {
    if u.nulls_distinct == ast::NullsDistinctOption::NotDistinct {
        return Err(SqlError::unsupported("UNIQUE NULLS NOT DISTINCT"));
    }
    plain_key(u.characteristics.as_ref(), &u.include)
}
