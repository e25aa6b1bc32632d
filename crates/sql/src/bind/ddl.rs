//! Binding the DDL and privilege statements: CREATE TABLE (columns, defaults, keys), the
//! columns of an index, and what GRANT and REVOKE name (privileges, objects, grantees). Only
//! reads the catalog; the plans it makes change it when they run.

use std::sync::Arc;

use sqlparser::ast::{self, ColumnOption, TableConstraint};

use crate::bind::constraint::{plain_key, plain_unique};
use crate::bind::{Binder, ScopeColumn, ident, object_name};
use crate::catalog::acl::{Grantee, Privileges};
use crate::catalog::pending::Tables;
use crate::catalog::{Check, ColumnDefault, SqlColumn};
use crate::error::{Result, SqlError, sqlstate};
use crate::expr::Expr;
use crate::plan::{Ddl, GrantOn};
use crate::sequence::{Sequence, SequenceOptions};
use crate::values::datum::Datum;
use crate::values::types::SqlType;

pub(super) fn index_columns(cols: &[ast::IndexColumn]) -> Result<Vec<String>> {
    cols.iter()
        .map(|c| match &c.column.expr {
            ast::Expr::Identifier(id) => Ok(ident(id)),
            other => Err(SqlError::unsupported(format!("an index on {other}"))),
        })
        .collect()
}

/// The integer type of a `serial`, `bigserial` or `smallserial` column, if `ty` is one.
fn serial_type(ty: &ast::DataType) -> Option<SqlType> {
    let ast::DataType::Custom(name, modifiers) = ty else {
        return None;
    };
    let last = name.0.last()?.as_ident()?;
    if !modifiers.is_empty() || last.quote_style.is_some() {
        return None;
    }
    match last.value.to_ascii_lowercase().as_str() {
        "serial" | "serial4" => Some(SqlType::Int4),
        "bigserial" | "serial8" => Some(SqlType::Int8),
        "smallserial" | "serial2" => Some(SqlType::Int2),
        _ => None,
    }
}

/// A column's sequence (a serial or identity column's), named as PostgreSQL names it, and the
/// default that draws from it.
fn column_sequence(
    table: &str,
    column: &mut SqlColumn,
    options: &[ast::SequenceOptions],
) -> Result<Arc<Sequence>> {
    let name = format!("{table}_{}_seq", column.name);
    let mut options = sequence_options(column.ty, options)?;
    options.owned_by = Some((table.to_owned(), column.name.clone()));
    let sequence = Arc::new(Sequence::new(name.clone(), options));
    column.nullable = false;
    column.default = Some(ColumnDefault {
        expr: Expr::Sequence(Arc::clone(&sequence), Vec::new()),
        sql: format!("nextval('{}'::regclass)", name.replace('\'', "''")),
    });
    Ok(sequence)
}

/// A constant integer of a sequence option.
fn option_value(e: &ast::Expr, what: &str) -> Result<i64> {
    let text = e.to_string().replace(' ', "");
    text.parse().map_err(|_| {
        SqlError::new(
            sqlstate::INVALID_PARAMETER_VALUE,
            format!("{what} must be an integer: {e}"),
        )
    })
}

/// What a sequence's options declare, over the defaults of one of type `ty` (checked as
/// PostgreSQL checks them).
pub(super) fn sequence_options(
    mut ty: SqlType,
    given: &[ast::SequenceOptions],
) -> Result<SequenceOptions> {
    use ast::SequenceOptions as O;
    let invalid = |m: String| SqlError::new(sqlstate::INVALID_PARAMETER_VALUE, m);
    let mut increment = 1;
    let (mut min, mut max, mut start, mut cycle, mut owned_by) = (None, None, None, false, None);
    for o in given {
        match o {
            O::DataType(t) => {
                ty = SqlType::from_ast(t)?;
                if !matches!(ty, SqlType::Int2 | SqlType::Int4 | SqlType::Int8) {
                    return Err(invalid(
                        "sequence type must be smallint, integer, or bigint".into(),
                    ));
                }
            }
            O::IncrementBy(e, _) => increment = option_value(e, "INCREMENT")?,
            O::MinValue(e) => {
                min = e
                    .as_ref()
                    .map(|e| option_value(e, "MINVALUE"))
                    .transpose()?
            }
            O::MaxValue(e) => {
                max = e
                    .as_ref()
                    .map(|e| option_value(e, "MAXVALUE"))
                    .transpose()?
            }
            O::StartWith(e, _) => start = Some(option_value(e, "START")?),
            O::Cache(e) => {
                option_value(e, "CACHE")?;
            }
            // The flag says NO CYCLE.
            O::Cycle(no) => cycle = !*no,
            O::OwnedBy(Some(name)) => match name.0.as_slice() {
                [t, c] => {
                    owned_by = Some((
                        t.as_ident().map(ident).unwrap_or_default(),
                        c.as_ident().map(ident).unwrap_or_default(),
                    ))
                }
                _ => return Err(SqlError::unsupported(format!("OWNED BY {name}"))),
            },
            O::OwnedBy(None) => owned_by = None,
        }
    }
    if increment == 0 {
        return Err(invalid("INCREMENT must not be zero".into()));
    }
    let mut options = SequenceOptions::defaults(ty, increment);
    let (low, high, type_name) = ty.integer_range().unwrap_or((i64::MIN, i64::MAX, "bigint"));
    for (value, what) in [(min, "MINVALUE"), (max, "MAXVALUE")] {
        if let Some(v) = value
            && !(low..=high).contains(&v)
        {
            return Err(invalid(format!(
                "{what} ({v}) is out of range for sequence data type {type_name}"
            )));
        }
    }
    options.min = min.unwrap_or(options.min);
    options.max = max.unwrap_or(options.max);
    if options.min >= options.max {
        return Err(invalid(format!(
            "MINVALUE ({}) must be less than MAXVALUE ({})",
            options.min, options.max
        )));
    }
    options.start = start.unwrap_or(if increment > 0 {
        options.min
    } else {
        options.max
    });
    if options.start < options.min {
        return Err(invalid(format!(
            "START value ({}) cannot be less than MINVALUE ({})",
            options.start, options.min
        )));
    }
    if options.start > options.max {
        return Err(invalid(format!(
            "START value ({}) cannot be greater than MAXVALUE ({})",
            options.start, options.max
        )));
    }
    options.cycle = cycle;
    options.owned_by = owned_by;
    Ok(options)
}

/// A column's `DEFAULT e`.
pub(super) fn column_default(tables: Tables<'_>, e: &ast::Expr) -> Result<ColumnDefault> {
    let (default, _) = Binder::new(tables, &[]).expr(e, &[], &mut None)?;
    if default.max_column().is_some() {
        return Err(SqlError::syntax("a default cannot refer to columns"));
    }
    Ok(ColumnDefault {
        expr: default,
        sql: e.to_string(),
    })
}

/// The column `ALTER TABLE ... ADD COLUMN` declares: a type, `NULL`/`NOT NULL` and a default
/// (serial and identity columns and constraints are refused: 0A000).
pub(super) fn added_column(tables: Tables<'_>, c: &ast::ColumnDef) -> Result<SqlColumn> {
    if serial_type(&c.data_type).is_some() {
        return Err(SqlError::unsupported("ADD COLUMN of a serial column"));
    }
    let mut column = SqlColumn {
        name: ident(&c.name),
        ty: SqlType::from_ast(&c.data_type)?,
        nullable: true,
        default: None,
        identity: None,
    };
    for o in &c.options {
        match &o.option {
            ColumnOption::NotNull => column.nullable = false,
            ColumnOption::Null => {}
            ColumnOption::Default(e) => column.default = Some(column_default(tables, e)?),
            other => {
                return Err(SqlError::unsupported(format!(
                    "ADD COLUMN with column option {other}"
                )));
            }
        }
    }
    Ok(column)
}

pub(super) fn create_table(tables: Tables<'_>, ct: &ast::CreateTable) -> Result<Ddl> {
    if ct.query.is_some() {
        return Err(SqlError::unsupported("CREATE TABLE AS"));
    }
    let table_name = object_name(&ct.name)?;
    let mut columns = Vec::new();
    let mut primary_key = Vec::new();
    let mut sequences = Vec::new();
    // CHECK conditions (name, condition), bound once every column is known.
    let mut check_asts: Vec<(Option<String>, &ast::Expr)> = Vec::new();
    // UNIQUE constraints (name, columns), named once every column is known.
    let mut unique_asts: Vec<(Option<String>, Vec<usize>)> = Vec::new();
    let mut foreign_keys = Vec::new();
    for (i, c) in ct.columns.iter().enumerate() {
        let serial = serial_type(&c.data_type);
        let mut column = SqlColumn {
            name: ident(&c.name),
            ty: match serial {
                Some(ty) => ty,
                None => SqlType::from_ast(&c.data_type)?,
            },
            nullable: true,
            default: None,
            identity: None,
        };
        if serial.is_some() {
            sequences.push(column_sequence(&table_name, &mut column, &[])?);
        }
        for o in &c.options {
            match &o.option {
                ColumnOption::Generated {
                    generated_as:
                        generated @ (ast::GeneratedAs::ByDefault | ast::GeneratedAs::Always),
                    sequence_options,
                    generation_expr: None,
                    ..
                } if column.default.is_none() => {
                    column.identity = Some(match generated {
                        ast::GeneratedAs::Always => crate::catalog::Identity::Always,
                        _ => crate::catalog::Identity::ByDefault,
                    });
                    if !matches!(column.ty, SqlType::Int2 | SqlType::Int4 | SqlType::Int8) {
                        return Err(SqlError::new(
                            sqlstate::INVALID_PARAMETER_VALUE,
                            "identity column type must be smallint, integer, or bigint",
                        ));
                    }
                    let options = sequence_options.as_deref().unwrap_or(&[]);
                    sequences.push(column_sequence(&table_name, &mut column, options)?);
                }
                ColumnOption::NotNull => column.nullable = false,
                ColumnOption::Check(check) => {
                    let name = o.name.as_ref().or(check.name.as_ref()).map(ident);
                    check_asts.push((name, &check.expr));
                }
                ColumnOption::Null => {}
                ColumnOption::Unique(u) => {
                    plain_unique(u)?;
                    unique_asts.push((o.name.as_ref().or(u.name.as_ref()).map(ident), vec![i]));
                }
                ColumnOption::ForeignKey(fk) => {
                    if !fk.columns.is_empty() {
                        return Err(SqlError::syntax(
                            "a column's REFERENCES names no columns of its own",
                        ));
                    }
                    let name = o.name.as_ref();
                    let declared = vec![column.name.clone()];
                    foreign_keys.push(super::constraint::foreign_key(fk, name, declared)?);
                }
                ColumnOption::PrimaryKey(pk) => {
                    plain_key(pk.characteristics.as_ref(), &pk.include)?;
                    column.nullable = false;
                    primary_key.push(i);
                }
                ColumnOption::Default(_) if serial.is_some() => {
                    return Err(SqlError::syntax(format!(
                        "multiple default values specified for column \"{}\" of table \"{table_name}\"",
                        column.name
                    )));
                }
                ColumnOption::Default(e) => column.default = Some(column_default(tables, e)?),
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
                plain_key(pk.characteristics.as_ref(), &pk.include)?;
                for name in index_columns(&pk.columns)? {
                    let i = column_position(&columns, &name)?;
                    columns[i].nullable = false;
                    primary_key.push(i);
                }
            }
            TableConstraint::Check(check) => {
                check_asts.push((check.name.as_ref().map(ident), &check.expr));
            }
            TableConstraint::Unique(u) => {
                plain_unique(u)?;
                let cols = index_columns(&u.columns)?
                    .iter()
                    .map(|name| column_position(&columns, name))
                    .collect::<Result<Vec<_>>>()?;
                unique_asts.push((u.name.as_ref().map(ident), cols));
            }
            TableConstraint::ForeignKey(fk) => {
                let declared = fk.columns.iter().map(ident).collect();
                foreign_keys.push(super::constraint::foreign_key(fk, None, declared)?);
            }
            other => return Err(SqlError::unsupported(format!("constraint {other}"))),
        }
    }
    let checks = bind_checks(tables, &table_name, &columns, check_asts)?;
    let mut uniques: Vec<(String, Vec<usize>)> = Vec::new();
    for (name, cols) in unique_asts {
        // The same columns twice make one constraint, as in PostgreSQL.
        if uniques.iter().any(|(_, c)| *c == cols) || cols == primary_key {
            continue;
        }
        let name = match name {
            Some(n) => n,
            None => {
                let names: Vec<&str> = cols.iter().map(|&c| columns[c].name.as_str()).collect();
                let taken = |n: &str| uniques.iter().any(|(u, _)| u == n);
                relation_name(&table_name, &names, "key", taken)
            }
        };
        uniques.push((name, cols));
    }
    Ok(Ddl::CreateTable {
        name: table_name,
        columns,
        primary_key,
        if_not_exists: ct.if_not_exists,
        sequences,
        checks,
        uniques,
        foreign_keys,
    })
}

/// The position of column `name` that a key names.
fn column_position(columns: &[SqlColumn], name: &str) -> Result<usize> {
    columns.iter().position(|c| c.name == name).ok_or_else(|| {
        SqlError::new(
            sqlstate::UNDEFINED_COLUMN,
            format!("column \"{name}\" named in key does not exist"),
        )
    })
}

/// The name PostgreSQL gives an index or constraint of `table` on `columns` that its statement
/// did not name: `{table}_{columns}_{suffix}` (`t_a_b_key`), within 63 bytes, numbered past a
/// name `taken` (`t_a_key1`).
pub(crate) fn relation_name(
    table: &str,
    columns: &[&str],
    suffix: &str,
    taken: impl Fn(&str) -> bool,
) -> String {
    let base = format!("{table}_{}", columns.join("_"));
    (0..)
        .map(|n| {
            let tail = if n == 0 {
                format!("_{suffix}")
            } else {
                format!("_{suffix}{n}")
            };
            let mut head = base.clone();
            while head.len() + tail.len() > 63 {
                head.pop();
            }
            head + &tail
        })
        .find(|name| !taken(name))
        .expect("some number is free")
}

/// CHECK constraints of table `table` (of `columns`), each bound over the table's row and
/// named as PostgreSQL names them where the statement did not: `{table}_{column}_check` for one
/// reading a single column, `{table}_check` otherwise, numbered past a name taken.
fn bind_checks(
    tables: Tables<'_>,
    table: &str,
    columns: &[SqlColumn],
    asts: Vec<(Option<String>, &ast::Expr)>,
) -> Result<Vec<Check>> {
    let scope: Vec<ScopeColumn> = columns
        .iter()
        .map(|c| ScopeColumn {
            table: table.to_owned(),
            name: c.name.clone(),
            ty: c.ty,
            outer: false,
            merged: false,
            using: false,
            system: false,
        })
        .collect();
    let mut checks: Vec<Check> = Vec::with_capacity(asts.len());
    for (name, e) in asts {
        let mut binder = Binder::new(tables, &[]);
        let (expr, ty) = binder.folded(e, &scope, &mut None)?;
        crate::bind::require_boolean("CHECK", ty)?;
        if binder.volatile || !binder.init.is_empty() {
            return Err(SqlError::new(
                sqlstate::FEATURE_NOT_SUPPORTED,
                "cannot use subquery in check constraint",
            ));
        }
        let name = match name {
            Some(n) => {
                if checks.iter().any(|c| c.name == n) {
                    return Err(SqlError::new(
                        sqlstate::DUPLICATE_OBJECT,
                        format!("check constraint \"{n}\" already exists"),
                    ));
                }
                n
            }
            None => {
                let mut read = Vec::new();
                expr.visit(&mut |x| {
                    if let Expr::Column(i) = x
                        && !read.contains(i)
                    {
                        read.push(*i);
                    }
                });
                let base = match read.as_slice() {
                    [only] => format!("{table}_{}_check", columns[*only].name),
                    _ => format!("{table}_check"),
                };
                let mut name = base.clone();
                let mut n = 0;
                while checks.iter().any(|c| c.name == name) {
                    n += 1;
                    name = format!("{base}{n}");
                }
                name
            }
        };
        checks.push(Check {
            name,
            expr,
            sql: e.to_string(),
        });
    }
    Ok(checks)
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

/// The type `ALTER COLUMN ... TYPE` changes a column to: a serial is no type there (42704),
/// as in PostgreSQL.
pub(super) fn altered_type(ty: &ast::DataType) -> Result<SqlType> {
    if serial_type(ty).is_some() {
        return Err(SqlError::new(
            sqlstate::UNDEFINED_OBJECT,
            format!(
                "type \"{}\" does not exist",
                ty.to_string().to_ascii_lowercase()
            ),
        ));
    }
    SqlType::from_ast(ty)
}

/// How `ALTER COLUMN ... TYPE ty [USING using]` makes column `column` of `table`'s new values:
/// `None` if each is its old value converted (which PostgreSQL does without `USING` only by an
/// implicit or assignment cast: 42804 otherwise), else the bound `USING` expression over the
/// table's columns (a value of its own, converted the same way).
pub(crate) fn converted_column(
    tables: Tables<'_>,
    table: &crate::catalog::SqlTable,
    column: usize,
    ty: SqlType,
    using: Option<&ast::Expr>,
) -> Result<Option<Expr>> {
    let name = &table.columns[column].name;
    let Some(using) = using else {
        if table.columns[column].ty.assignable_to(ty) {
            return Ok(None);
        }
        return Err(SqlError::new(
            sqlstate::DATATYPE_MISMATCH,
            format!(
                "column \"{name}\" cannot be cast automatically to type {}",
                ty.name()
            ),
        )
        .with_hint(format!(
            "You might need to specify \"USING {name}::{}\".",
            ty.name()
        )));
    };
    let scope = crate::bind::access::table_scope(table, &table.name);
    let (expr, from) = Binder::new(tables, &[]).expr(using, &scope, &mut None)?;
    let mut refused = None;
    expr.visit(&mut |e| match e {
        Expr::Init(_) | Expr::SubPlan(_) | Expr::InInit { .. } => {
            refused = Some("cannot use subquery in transform expression");
        }
        Expr::Param(_) => refused = Some("there is no parameter $1"),
        _ => {}
    });
    if let Some(message) = refused {
        return Err(SqlError::new(sqlstate::FEATURE_NOT_SUPPORTED, message));
    }
    // An untyped literal (`USING '2020-01-01'`) is read as the new type.
    let untyped = matches!(expr, Expr::Literal(Datum::Text(_) | Datum::Null));
    if !from.assignable_to(ty) && !untyped {
        return Err(SqlError::new(
            sqlstate::DATATYPE_MISMATCH,
            format!(
                "result of USING clause for column \"{name}\" cannot be cast automatically to type {}",
                ty.name()
            ),
        )
        .with_hint("You might need to add an explicit cast."));
    }
    Ok(Some(expr))
}

/// `checks` of table `table` bound again over its columns as they become (`columns`): a
/// column's new type changes what a constraint's expression means, as PostgreSQL rebinds it.
/// Names and texts stay.
pub(crate) fn rebound_checks(
    tables: Tables<'_>,
    table: &str,
    columns: &[SqlColumn],
    checks: &[Check],
) -> Result<Vec<Check>> {
    let mut parsed = Vec::with_capacity(checks.len());
    for c in checks {
        let e = sqlparser::parser::Parser::new(&sqlparser::dialect::PostgreSqlDialect {})
            .try_with_sql(&c.sql)
            .and_then(|mut p| p.parse_expr())
            .map_err(|e| {
                SqlError::new(
                    sqlstate::INTERNAL_ERROR,
                    format!("check constraint \"{}\" cannot be read again: {e}", c.name),
                )
            })?;
        parsed.push((c.name.clone(), e));
    }
    let asts = parsed.iter().map(|(n, e)| (Some(n.clone()), e)).collect();
    bind_checks(tables, table, columns, asts)
}
