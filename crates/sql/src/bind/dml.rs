//! Binding the statements that write rows: INSERT, UPDATE, DELETE and COPY FROM STDIN.

use std::sync::Arc;

use sqlparser::ast::{
    self, AssignmentTarget, CopySource, FromTable, SelectItem, SetExpr, TableFactor, TableObject,
};

use crate::bind::ScopeColumn;
use crate::bind::access::{choose_access, conjuncts, row_scope, table_scope};
use crate::bind::select::output_name;
use crate::bind::{Binder, check_assignable, ident, object_name};
use crate::catalog::references::References;
use crate::catalog::{Identity, RelKind, SqlColumn, SqlTable};
use crate::error::{Result, SqlError, sqlstate};
use crate::expr::Expr;
use crate::plan::copy::{CopyFormat, CopyOptions};
use crate::plan::{Access, CopyIn, DeletePlan, InsertPlan, InsertSource, OutputColumn, UpdatePlan};
use crate::values::datum::Datum;

impl Binder<'_> {
    pub(super) fn target_columns(&self, table: &SqlTable, names: &[String]) -> Result<Vec<usize>> {
        if names.is_empty() {
            return Ok((0..table.columns.len()).collect());
        }
        let mut columns = Vec::with_capacity(names.len());
        for name in names {
            let i = table.column(name).ok_or_else(|| {
                SqlError::new(
                    sqlstate::UNDEFINED_COLUMN,
                    format!(
                        "column \"{name}\" of relation \"{}\" does not exist",
                        table.name
                    ),
                )
            })?;
            if columns.contains(&i) {
                return Err(SqlError::syntax(format!(
                    "column \"{name}\" specified more than once"
                )));
            }
            columns.push(i);
        }
        Ok(columns)
    }

    /// `RETURNING items` over rows whose columns are `scope` (a table's: its own, with its
    /// `ctid` for the rows an UPDATE or DELETE changes): the expressions and the columns they
    /// make.
    fn returning(
        &mut self,
        items: Option<&Vec<SelectItem>>,
        scope: &[ScopeColumn],
    ) -> Result<(Vec<Expr>, Vec<OutputColumn>)> {
        let (mut exprs, mut columns) = (Vec::new(), Vec::new());
        for item in items.into_iter().flatten() {
            match item {
                SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..) => {
                    for (i, c) in scope.iter().enumerate().filter(|(_, c)| !c.system) {
                        exprs.push(Expr::Column(i));
                        columns.push(OutputColumn {
                            name: c.name.clone(),
                            ty: c.ty,
                        });
                    }
                }
                SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => {
                    let (x, ty) = self.folded(e, scope, &mut None)?;
                    let (x, ty) = self.output(x, ty)?;
                    let name = match item {
                        SelectItem::ExprWithAlias { alias, .. } => ident(alias),
                        _ => output_name(e),
                    };
                    exprs.push(x);
                    columns.push(OutputColumn { name, ty });
                }
                other => return Err(SqlError::unsupported(format!("RETURNING {other}"))),
            }
        }
        Ok((exprs, columns))
    }

    pub(crate) fn insert(
        &mut self,
        insert: &ast::Insert,
    ) -> Result<(InsertPlan, Vec<OutputColumn>)> {
        let TableObject::TableName(name) = &insert.table else {
            return Err(SqlError::unsupported("INSERT into a table function"));
        };
        let table = self.writable(&object_name(name)?, "insert into")?;
        // A serial column's default calls nextval: the session's currval follows it.
        if table.columns.iter().any(|c| {
            c.default
                .as_ref()
                .is_some_and(|d| matches!(d.expr, Expr::Sequence(..)))
        }) {
            self.uses_sequences = true;
        }
        let names = insert
            .columns
            .iter()
            .map(object_name)
            .collect::<Result<Vec<_>>>()?;
        let columns = self.target_columns(&table, &names)?;
        let source = insert
            .source
            .as_ref()
            .ok_or_else(|| SqlError::unsupported("INSERT ... DEFAULT VALUES"))?;
        let source = match source.body.as_ref() {
            SetExpr::Values(values)
                if source.order_by.is_none() && source.limit_clause.is_none() =>
            {
                let mut rows = Vec::with_capacity(values.rows.len());
                if values.rows.iter().any(|r| r.len() != values.rows[0].len()) {
                    return Err(SqlError::syntax("VALUES lists must all be the same length"));
                }
                for row in &values.rows {
                    if row.len() > columns.len() {
                        return Err(SqlError::syntax(
                            "INSERT has more expressions than target columns",
                        ));
                    }
                    let mut bound = Vec::with_capacity(row.len());
                    for (e, &col) in row.iter().zip(&columns) {
                        let column = &table.columns[col];
                        // `DEFAULT` in VALUES: the column's default (NULL without one); so is
                        // a value for an identity column under OVERRIDING USER VALUE.
                        if is_default(e) || identity_value(column, insert.overriding.as_ref())? {
                            bound.push(
                                column
                                    .default
                                    .as_ref()
                                    .map_or(Expr::Literal(Datum::Null), |d| d.expr.clone()),
                            );
                            continue;
                        }
                        let (x, ty) = self.folded(e, &[], &mut None)?;
                        self.infer(&x, column.ty);
                        check_assignable(ty, column.ty, &column.name)?;
                        bound.push(x);
                    }
                    rows.push(bound);
                }
                InsertSource::Values(rows)
            }
            _ => {
                let (plan, cols) = self.select(source)?;
                if cols.len() > columns.len() {
                    return Err(SqlError::syntax(
                        "INSERT has more expressions than target columns",
                    ));
                }
                for &col in &columns[..cols.len()] {
                    if identity_value(&table.columns[col], insert.overriding.as_ref())? {
                        return Err(SqlError::unsupported(
                            "INSERT ... OVERRIDING USER VALUE with a query",
                        ));
                    }
                }
                InsertSource::Select(Box::new(plan))
            }
        };
        let alias = insert
            .table_alias
            .as_ref()
            .map_or_else(|| table.name.clone(), |a| ident(&a.alias));
        let on_conflict = match &insert.on {
            None => None,
            Some(ast::OnInsert::OnConflict(on)) => Some(self.on_conflict(on, &table, &alias)?),
            Some(other) => return Err(SqlError::unsupported(format!("{other}"))),
        };
        // The rows inserted have their `ctid`, except those ON CONFLICT may update instead.
        let scope = match on_conflict {
            None => row_scope(&table, &alias),
            Some(_) => table_scope(&table, &alias),
        };
        let (returning, out) = self.returning(insert.returning.as_ref(), &scope)?;
        Ok((
            InsertPlan {
                references: References::of(&self.tables, &table),
                table,
                columns,
                source,
                returning,
                on_conflict,
                init: Vec::new(),
            },
            out,
        ))
    }

    /// Table `name`, which a statement is to write (`verb`: "insert into", "update", "delete
    /// from", "copy to"): 42809 for a sequence, which only its functions change; 0A000 for a
    /// view, which Overtake does not write through.
    fn writable(&self, name: &str, verb: &str) -> Result<Arc<SqlTable>> {
        let table = self.tables.table(name)?;
        match table.kind() {
            RelKind::Table => Ok(table),
            RelKind::Sequence => Err(SqlError::new(
                crate::error::sqlstate::WRONG_OBJECT_TYPE,
                format!("cannot change sequence \"{name}\""),
            )),
            RelKind::View => Err(SqlError::new(
                crate::error::sqlstate::FEATURE_NOT_SUPPORTED,
                format!("cannot {verb} view \"{name}\""),
            )
            .with_detail("Views are read-only in Overtake: write to the tables they read.")),
        }
    }

    /// The one table an UPDATE or DELETE names, and its scope.
    fn single_table(&self, factor: &TableFactor, verb: &str) -> Result<Arc<SqlTable>> {
        match factor {
            TableFactor::Table {
                name, args: None, ..
            } => self.writable(&object_name(name)?, verb),
            other => Err(SqlError::unsupported(format!(
                "UPDATE or DELETE of {other}"
            ))),
        }
    }

    fn row_filter(
        &mut self,
        table: &SqlTable,
        alias: &str,
        selection: Option<&ast::Expr>,
    ) -> Result<(Access, Vec<Expr>)> {
        let mut filter = Vec::new();
        if let Some(e) = selection {
            let (x, _) = self.folded(e, &row_scope(table, alias), &mut None)?;
            conjuncts(x, &mut filter);
        }
        crate::bind::access::order_conditions(&mut filter);
        Ok((choose_access(table, 0, &filter), filter))
    }

    /// The value `SET column = value` gives a row's `column`, bound over `scope`: `DEFAULT`
    /// is the column's default (NULL without one), which is all a `GENERATED ALWAYS` identity
    /// column may be set to (428C9 otherwise).
    pub(super) fn assignment(
        &mut self,
        column: &SqlColumn,
        value: &ast::Expr,
        scope: &[ScopeColumn],
    ) -> Result<Expr> {
        if is_default(value) {
            let default = column.default.as_ref();
            return Ok(default.map_or(Expr::Literal(Datum::Null), |d| d.expr.clone()));
        }
        if column.identity == Some(Identity::Always) {
            return Err(SqlError::new(
                sqlstate::GENERATED_ALWAYS,
                format!("column \"{}\" can only be updated to DEFAULT", column.name),
            )
            .with_detail(format!(
                "Column \"{}\" is an identity column defined as GENERATED ALWAYS.",
                column.name
            )));
        }
        let (x, ty) = self.folded(value, scope, &mut None)?;
        self.infer(&x, column.ty);
        check_assignable(ty, column.ty, &column.name)?;
        // A constant is converted to the column's type now, as PostgreSQL's planner folds the
        // conversion: a value that does not fit fails even if no row is updated.
        Ok(match x {
            Expr::Literal(d) if !d.is_null() => Expr::Literal(d.cast(column.ty)?),
            x => x,
        })
    }

    pub(crate) fn update(
        &mut self,
        update: &ast::Update,
    ) -> Result<(UpdatePlan, Vec<OutputColumn>)> {
        if update.from.is_some() || !update.table.joins.is_empty() {
            return Err(SqlError::unsupported("UPDATE ... FROM"));
        }
        let table = self.single_table(&update.table.relation, "update")?;
        let alias = alias_of(&update.table.relation).unwrap_or_else(|| table.name.clone());
        let scope = row_scope(&table, &alias);
        let mut assignments = Vec::with_capacity(update.assignments.len());
        for a in &update.assignments {
            let AssignmentTarget::ColumnName(name) = &a.target else {
                return Err(SqlError::unsupported("UPDATE of a tuple of columns"));
            };
            let name = object_name(name)?;
            let col = self.target_columns(&table, std::slice::from_ref(&name))?[0];
            assignments.push((col, self.assignment(&table.columns[col], &a.value, &scope)?));
        }
        let (access, filter) = self.row_filter(&table, &alias, update.selection.as_ref())?;
        let (returning, out) = self.returning(update.returning.as_ref(), &scope)?;
        Ok((
            UpdatePlan {
                references: References::of(&self.tables, &table),
                table,
                access,
                filter,
                assignments,
                returning,
                init: Vec::new(),
            },
            out,
        ))
    }

    pub(crate) fn delete(
        &mut self,
        delete: &ast::Delete,
    ) -> Result<(DeletePlan, Vec<OutputColumn>)> {
        let from = match &delete.from {
            FromTable::WithFromKeyword(f) | FromTable::WithoutKeyword(f) => f,
        };
        if delete.using.is_some() || from.len() != 1 || !from[0].joins.is_empty() {
            return Err(SqlError::unsupported("DELETE ... USING"));
        }
        let table = self.single_table(&from[0].relation, "delete from")?;
        let alias = alias_of(&from[0].relation).unwrap_or_else(|| table.name.clone());
        let (access, filter) = self.row_filter(&table, &alias, delete.selection.as_ref())?;
        let (returning, out) =
            self.returning(delete.returning.as_ref(), &row_scope(&table, &alias))?;
        Ok((
            DeletePlan {
                references: References::of(&self.tables, &table),
                table,
                access,
                filter,
                returning,
                init: Vec::new(),
            },
            out,
        ))
    }

    pub(crate) fn copy_in(
        &mut self,
        source: &CopySource,
        options: &[ast::CopyOption],
        legacy: &[ast::CopyLegacyOption],
    ) -> Result<CopyIn> {
        let CopySource::Table {
            table_name,
            columns,
        } = source
        else {
            return Err(SqlError::syntax("COPY (query) FROM is not allowed"));
        };
        let options = copy_options(options, legacy)?;
        let table = self.writable(&object_name(table_name)?, "copy to")?;
        let names: Vec<String> = columns.iter().map(ident).collect();
        let columns = self.target_columns(&table, &names)?;
        Ok(CopyIn {
            references: References::of(&self.tables, &table),
            table,
            columns,
            options,
        })
    }
}

/// A COPY's format and options, from the statement's options (in parentheses) or the legacy
/// ones (`CSV HEADER`, `BINARY`, `DELIMITER ','`, `NULL ''`).
pub(crate) fn copy_options(
    options: &[ast::CopyOption],
    legacy: &[ast::CopyLegacyOption],
) -> Result<CopyOptions> {
    use ast::{CopyLegacyCsvOption as Csv, CopyLegacyOption as L, CopyOption as O};
    let mut format = CopyFormat::Text;
    for o in options {
        if let O::Format(f) = o {
            format = match ident(f).as_str() {
                "text" => CopyFormat::Text,
                "csv" => CopyFormat::Csv,
                "binary" => CopyFormat::Binary,
                other => {
                    return Err(SqlError::new(
                        sqlstate::INVALID_PARAMETER_VALUE,
                        format!("COPY format \"{other}\" not recognized"),
                    ));
                }
            };
        }
    }
    for o in legacy {
        match o {
            L::Binary => format = CopyFormat::Binary,
            L::Csv(_) => format = CopyFormat::Csv,
            _ => {}
        }
    }
    let mut out = CopyOptions::new(format);
    let csv_only = |what: &str| {
        Err(SqlError::unsupported(format!(
            "COPY {what} outside csv format"
        )))
    };
    for o in options {
        match o {
            O::Format(_) | O::Freeze(_) => {}
            O::Delimiter(c) => out.delimiter = *c,
            O::Null(n) => out.null = n.clone(),
            O::Header(h) => out.header = *h,
            O::Quote(c) if format == CopyFormat::Csv => out.quote = *c,
            O::Escape(c) if format == CopyFormat::Csv => out.escape = *c,
            O::Quote(_) => return csv_only("quote"),
            O::Escape(_) => return csv_only("escape"),
            other => return Err(SqlError::unsupported(format!("COPY option {other}"))),
        }
    }
    for o in legacy {
        match o {
            L::Binary => {}
            L::Delimiter(c) => out.delimiter = *c,
            L::Null(n) => out.null = n.clone(),
            L::Csv(csv) => {
                for c in csv {
                    match c {
                        Csv::Header => out.header = true,
                        Csv::Quote(q) => out.quote = *q,
                        Csv::Escape(e) => out.escape = *e,
                        other => {
                            return Err(SqlError::unsupported(format!("COPY option {other}")));
                        }
                    }
                }
            }
            other => return Err(SqlError::unsupported(format!("COPY option {other}"))),
        }
    }
    // An escape not given is the quote (which may have been given).
    let escape_given = options.iter().any(|o| matches!(o, O::Escape(_)))
        || legacy
            .iter()
            .any(|o| matches!(o, L::Csv(c) if c.iter().any(|c| matches!(c, Csv::Escape(_)))));
    if !escape_given {
        out.escape = out.quote;
    }
    out.check()?;
    Ok(out)
}

fn alias_of(factor: &TableFactor) -> Option<String> {
    match factor {
        TableFactor::Table { alias: Some(a), .. } => Some(ident(&a.name)),
        _ => None,
    }
}

/// Whether `e` is the keyword `DEFAULT` (in VALUES or an UPDATE's SET).
fn is_default(e: &ast::Expr) -> bool {
    matches!(e, ast::Expr::Identifier(id)
        if id.quote_style.is_none() && id.value.eq_ignore_ascii_case("default"))
}

/// Whether a value an INSERT gives `column` is replaced by its default: under `OVERRIDING USER
/// VALUE` for an identity column. A value for a `GENERATED ALWAYS` identity column is refused
/// (428C9) unless `OVERRIDING SYSTEM VALUE` says to take it, as in PostgreSQL.
fn identity_value(column: &SqlColumn, overriding: Option<&ast::InsertOverriding>) -> Result<bool> {
    let Some(identity) = column.identity else {
        return Ok(false);
    };
    match overriding {
        Some(ast::InsertOverriding::User) => Ok(true),
        Some(ast::InsertOverriding::System) => Ok(false),
        None if identity == Identity::Always => Err(SqlError::new(
            sqlstate::GENERATED_ALWAYS,
            format!(
                "cannot insert a non-DEFAULT value into column \"{}\"",
                column.name
            ),
        )
        .with_detail(format!(
            "Column \"{}\" is an identity column defined as GENERATED ALWAYS.",
            column.name
        ))
        .with_hint("Use OVERRIDING SYSTEM VALUE to override.")),
        None => Ok(false),
    }
}
