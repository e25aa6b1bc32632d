//! Binding `ANALYZE [table [(columns)]]`: the tables whose statistics it takes — the one named,
//! or every table. As PostgreSQL does, it skips what it cannot analyze (views, sequences) and
//! tables the user does not own, and refuses a column the table does not have (42703).

use std::sync::Arc;

use sqlparser::ast;

use crate::bind::{ident, object_name};
use crate::catalog::pending::Tables;
use crate::catalog::{RelKind, SqlTable};
use crate::error::{Result, SqlError, sqlstate};

/// The tables `ANALYZE` (`a`) takes statistics of.
pub(super) fn analyzed(tables: Tables<'_>, a: &ast::Analyze) -> Result<Vec<Arc<SqlTable>>> {
    let candidates = match &a.table_name {
        Some(name) => {
            let table = tables.table(&object_name(name)?)?;
            for c in &a.columns {
                let c = ident(c);
                if !table.columns.iter().any(|col| col.name == c) {
                    return Err(SqlError::new(
                        sqlstate::UNDEFINED_COLUMN,
                        format!(
                            "column \"{c}\" of relation \"{}\" does not exist",
                            table.name
                        ),
                    ));
                }
            }
            vec![table]
        }
        None => tables.all(),
    };
    Ok(candidates
        .into_iter()
        .filter(|t| t.kind() == RelKind::Table)
        .filter(|t| tables.actor.is_none_or(|a| t.acl.is_owner(a)))
        .collect())
}
