//! Binding the DDL and privilege statements: CREATE TABLE (columns, defaults, keys), the
//! columns of an index, and what GRANT and REVOKE name (privileges, objects, grantees). Only
//! reads the catalog; the plans it makes change it when they run.

use sqlparser::ast::{self, ColumnOption, TableConstraint};

use crate::bind::{Binder, ident, object_name};
use crate::catalog::acl::{Grantee, Privileges};
use crate::catalog::pending::Tables;
use crate::catalog::{Catalog, ColumnDefault, SqlColumn};
use crate::error::{Result, SqlError, sqlstate};
use crate::plan::{Ddl, GrantOn};
use crate::values::types::SqlType;

pub(super) fn index_columns(cols: &[ast::IndexColumn]) -> Result<Vec<String>> {
    cols.iter()
        .map(|c| match &c.column.expr {
            ast::Expr::Identifier(id) => Ok(ident(id)),
            other => Err(SqlError::unsupported(format!("an index on {other}"))),
        })
        .collect()
}

pub(super) fn create_table(catalog: &Catalog, ct: &ast::CreateTable) -> Result<Ddl> {
    if ct.query.is_some() {
        return Err(SqlError::unsupported("CREATE TABLE AS"));
    }
    let mut columns = Vec::new();
    let mut primary_key = Vec::new();
    for (i, c) in ct.columns.iter().enumerate() {
        let mut column = SqlColumn {
            name: ident(&c.name),
            ty: SqlType::from_ast(&c.data_type)?,
            nullable: true,
            default: None,
        };
        for o in &c.options {
            match &o.option {
                ColumnOption::NotNull => column.nullable = false,
                ColumnOption::Null => {}
                ColumnOption::PrimaryKey(_) => {
                    column.nullable = false;
                    primary_key.push(i);
                }
                ColumnOption::Default(e) => {
                    let (default, _) =
                        Binder::new(Tables::shared(catalog), &[]).expr(e, &[], &mut None)?;
                    if default.max_column().is_some() {
                        return Err(SqlError::syntax("a default cannot refer to columns"));
                    }
                    column.default = Some(ColumnDefault {
                        expr: default,
                        sql: e.to_string(),
                    });
                }
                other => return Err(SqlError::unsupported(format!("column option {other}"))),
            }
        }
        if columns.iter().any(|c: &SqlColumn| c.name == column.name) {
            return Err(SqlError::new(
                sqlstate::DUPLICATE_COLUMN,
                format!("column \"{}\" specified more than once", column.name),
            ));
        }
        columns.push(column);
    }
    for c in &ct.constraints {
        match c {
            TableConstraint::PrimaryKey(pk) => {
                for name in index_columns(&pk.columns)? {
                    let i = columns.iter().position(|c| c.name == name).ok_or_else(|| {
                        SqlError::new(
                            sqlstate::UNDEFINED_COLUMN,
                            format!("column \"{name}\" named in key does not exist"),
                        )
                    })?;
                    columns[i].nullable = false;
                    primary_key.push(i);
                }
            }
            other => return Err(SqlError::unsupported(format!("constraint {other}"))),
        }
    }
    Ok(Ddl::CreateTable {
        name: object_name(&ct.name)?,
        columns,
        primary_key,
        if_not_exists: ct.if_not_exists,
    })
}

/// The roles a GRANT or REVOKE names.
/// The table privileges a GRANT or REVOKE names (`ALL`: every one).
pub(super) fn table_privileges(privileges: &ast::Privileges) -> Result<Privileges> {
    match privileges {
        ast::Privileges::All { .. } => Ok(Privileges::ALL),
        ast::Privileges::Actions(actions) => actions.iter().try_fold(Privileges::NONE, |all, a| {
            let keyword = a.to_string();
            if keyword.contains('(') {
                return Err(SqlError::unsupported("a privilege on columns"));
            }
            Ok(all.union(Privileges::from_keyword(&keyword)?))
        }),
    }
}

/// The tables a GRANT or REVOKE is on.
pub(super) fn grant_on(objects: Option<&ast::GrantObjects>) -> Result<GrantOn> {
    match objects {
        Some(ast::GrantObjects::Tables(names)) => Ok(GrantOn::Tables(
            names.iter().map(object_name).collect::<Result<_>>()?,
        )),
        Some(ast::GrantObjects::AllTablesInSchema { schemas })
            if schemas
                .iter()
                .all(|s| object_name(s).is_ok_and(|n| n == "public")) =>
        {
            Ok(GrantOn::AllTables)
        }
        Some(other) => Err(SqlError::unsupported(format!("GRANT ON {other}"))),
        None => Err(SqlError::syntax("GRANT or REVOKE names no object")),
    }
}

/// The roles (or PUBLIC) a table privilege is granted to.
pub(super) fn table_grantees(grantees: &[ast::Grantee]) -> Result<Vec<Grantee>> {
    grantees
        .iter()
        .map(|g| match (&g.grantee_type, &g.name) {
            (ast::GranteesType::Public, _) => Ok(Grantee::Public),
            (_, Some(ast::GranteeName::ObjectName(n))) => Ok(Grantee::Role(object_name(n)?)),
            _ => Err(SqlError::unsupported(format!("grantee {g}"))),
        })
        .collect()
}

pub(super) fn grantees(grantees: &[ast::Grantee]) -> Result<Vec<String>> {
    grantees
        .iter()
        .map(|g| match &g.name {
            Some(ast::GranteeName::ObjectName(n)) => object_name(n),
            _ => Err(SqlError::unsupported("this kind of grantee")),
        })
        .collect()
}
