//! Views: `CREATE [OR REPLACE] VIEW` bound (its query checked, its columns fixed, the
//! relations it names recorded), and a view read where a statement names it: its query bound
//! there, against the catalog that statement sees, as a derived table that reads with the view
//! owner's privileges.
//!
//! Must never let a view's query see the reading statement's WITH queries or columns, nor read
//! with the reading role's privileges.

use std::ops::ControlFlow;
use std::sync::Arc;

use sqlparser::ast;

use crate::bind::{Binder, ident, object_name};
use crate::catalog::acl::Actor;
use crate::catalog::pending::Tables;
use crate::catalog::{SqlColumn, SqlTable, View};
use crate::error::{Result, SqlError, sqlstate};
use crate::plan::{Ddl, SelectPlan, ViewRead};

impl Binder<'_> {
    /// View `table`'s query, bound where a statement reads the view: its rows, with the
    /// view's recorded columns.
    pub(super) fn view_query(&mut self, table: &Arc<SqlTable>, view: &View) -> Result<SelectPlan> {
        if self.views_open.contains(&table.name) {
            return Err(SqlError::new(
                sqlstate::INVALID_OBJECT_DEFINITION,
                format!(
                    "infinite recursion detected in rules for relation \"{}\"",
                    table.name
                ),
            ));
        }
        let owner = match &table.acl.owner {
            Some(name) => Actor {
                name: name.clone(),
                superuser: self.tables.catalog.role(name)?.is_some_and(|r| r.superuser),
            },
            // Kept by a version that recorded no owner: only superusers own it.
            None => Actor {
                name: String::new(),
                superuser: true,
            },
        };
        let ctes = std::mem::take(&mut self.ctes);
        let reader = self.view_owner.replace(owner.clone());
        self.views_open.push(table.name.clone());
        let bound = self.select(&view.query);
        self.views_open.pop();
        self.view_owner = reader;
        self.ctes = ctes;
        let (mut plan, columns) = bound?;
        // The query shows the recorded columns first (a `*` may show more since).
        let same = columns.len() >= table.columns.len()
            && columns
                .iter()
                .zip(&table.columns)
                .all(|(c, r)| c.ty == r.ty)
            && columns
                .iter()
                .zip(&view.query_columns)
                .all(|(c, n)| c.name == *n);
        if !same {
            return Err(SqlError::new(
                sqlstate::INVALID_OBJECT_DEFINITION,
                format!(
                    "the query of view \"{}\" no longer returns the view's columns",
                    table.name
                ),
            ));
        }
        plan.visible = table.columns.len();
        plan.view = Some(Box::new(ViewRead {
            view: Arc::clone(table),
            owner,
        }));
        Ok(plan)
    }
}

/// Whether view `table` can still be read as the catalog `tables` shows it: its query binds
/// and shows its recorded columns.
pub(crate) fn still_reads(tables: Tables<'_>, table: &Arc<SqlTable>) -> bool {
    let Some(view) = &table.view else {
        return true;
    };
    Binder::new(tables, &[]).view_query(table, view).is_ok()
}

/// `CREATE [OR REPLACE] VIEW name [(columns)] AS query`.
pub(super) fn create(tables: Tables<'_>, cv: &ast::CreateView) -> Result<Ddl> {
    let refused = if cv.materialized {
        Some("CREATE MATERIALIZED VIEW")
    } else if cv.temporary {
        Some("CREATE TEMPORARY VIEW")
    } else if cv.or_alter || cv.secure || cv.to.is_some() || cv.params.is_some() {
        Some("this form of CREATE VIEW")
    } else if !cv.cluster_by.is_empty() || cv.comment.is_some() {
        Some("CREATE VIEW with options")
    } else if !matches!(cv.options, ast::CreateTableOptions::None) {
        Some("CREATE VIEW ... WITH options")
    } else {
        None
    };
    if let Some(what) = refused {
        return Err(SqlError::unsupported(what));
    }
    if cv.if_not_exists {
        return Err(SqlError::syntax("syntax error at or near \"NOT\""));
    }
    let name = object_name(&cv.name)?;
    let mut b = Binder::new(tables, &[]);
    let (_, output) = b.select(&cv.query)?;
    if !b.params.is_empty() {
        return Err(SqlError::new(
            sqlstate::UNDEFINED_PARAMETER,
            "there is no parameter $1",
        ));
    }
    if cv.columns.len() > output.len() {
        return Err(SqlError::syntax(
            "CREATE VIEW specifies more column names than columns",
        ));
    }
    if let Some(c) = cv.columns.iter().find(|c| c.data_type.is_some()) {
        return Err(SqlError::syntax(format!(
            "syntax error at or near \"{}\"",
            c.data_type
                .as_ref()
                .map(|t| t.to_string())
                .unwrap_or_default()
        )));
    }
    let mut columns: Vec<SqlColumn> = Vec::with_capacity(output.len());
    for (i, c) in output.iter().enumerate() {
        let name = cv
            .columns
            .get(i)
            .map_or_else(|| c.name.clone(), |v| ident(&v.name));
        if columns.iter().any(|k| k.name == name) {
            return Err(SqlError::new(
                sqlstate::DUPLICATE_COLUMN,
                format!("column \"{name}\" specified more than once"),
            ));
        }
        columns.push(SqlColumn {
            name,
            ty: c.ty,
            nullable: true,
            default: None,
            identity: None,
        });
    }
    let view = View {
        query: cv.query.clone(),
        sql: cv.query.to_string(),
        depends_on: named_relations(&tables, &cv.query),
        query_columns: output.iter().map(|c| c.name.clone()).collect(),
    };
    Ok(Ddl::CreateView {
        name,
        columns,
        view: Arc::new(view),
        or_replace: cv.or_replace,
    })
}

/// The relations of the catalog `query` names, each once.
fn named_relations(tables: &Tables<'_>, query: &ast::Query) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    let _ = ast::visit_relations(query, |r| {
        if let Ok(n) = object_name(r)
            && !names.contains(&n)
            && tables.table(&n).is_ok()
        {
            names.push(n);
        }
        ControlFlow::<()>::Continue(())
    });
    names
}
