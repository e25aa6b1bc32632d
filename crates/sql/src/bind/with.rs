//! `WITH` queries: each bound once, where the WITH is, and read by every reference to its name
//! as one derived table (run once per execution, as PostgreSQL materializes a WITH query read
//! more than once); `WITH RECURSIVE` queries of the form `anchor UNION [ALL] recursive`, whose
//! recursive part reads the rows of the round before (a work table).

use std::sync::Arc;

use sqlparser::ast::{self, SetExpr, SetOperator, SetQuantifier};

use crate::bind::set_ops::Tail;
use crate::bind::{Binder, ident};
use crate::error::{Result, SqlError, sqlstate};
use crate::plan::{OutputColumn, PlanNode, Relation, SelectPlan};

/// A WITH query in scope: its name and columns, and what a reference reads.
pub(crate) struct CteBinding {
    pub name: String,
    pub columns: Vec<OutputColumn>,
    pub relation: CteRelation,
}

/// What a reference to a WITH query reads.
pub(crate) enum CteRelation {
    /// Its plan, shared by every reference.
    Plan(Arc<SelectPlan>),
    /// Inside its own recursive part: the round before's rows.
    WorkTable(usize),
}

impl CteRelation {
    /// The relation a reference scans.
    pub(crate) fn relation(&self) -> Relation {
        match self {
            CteRelation::Plan(plan) => Relation::Subquery(Arc::clone(plan)),
            CteRelation::WorkTable(id) => Relation::WorkTable(*id),
        }
    }
}

/// Whether `query` reads a relation called `name` (a recursive reference).
fn reads(query: &ast::Query, name: &str) -> bool {
    let mut found = false;
    let _ = ast::visit_relations(query, |r| {
        if let [ast::ObjectNamePart::Identifier(id)] = r.0.as_slice()
            && ident(id) == name
        {
            found = true;
            return std::ops::ControlFlow::Break(());
        }
        std::ops::ControlFlow::Continue(())
    });
    found
}

/// `columns` renamed by a WITH query's column list.
fn renamed(mut columns: Vec<OutputColumn>, alias: &ast::TableAlias) -> Result<Vec<OutputColumn>> {
    if alias.columns.len() > columns.len() {
        return Err(SqlError::new(
            sqlstate::INVALID_COLUMN_REFERENCE,
            format!(
                "WITH query \"{}\" has {} columns available but {} columns specified",
                ident(&alias.name),
                columns.len(),
                alias.columns.len()
            ),
        ));
    }
    for (c, name) in columns.iter_mut().zip(&alias.columns) {
        c.name = ident(&name.name);
    }
    Ok(columns)
}

impl Binder<'_> {
    /// Binds `with`'s queries in order (each sees those before it) and puts them in scope;
    /// returns how many it put (the caller takes them out of scope after the query).
    pub(crate) fn bind_with(&mut self, with: &ast::With) -> Result<usize> {
        for (i, cte) in with.cte_tables.iter().enumerate() {
            let name = ident(&cte.alias.name);
            if with.cte_tables[..i]
                .iter()
                .any(|c| ident(&c.alias.name) == name)
            {
                return Err(SqlError::new(
                    sqlstate::DUPLICATE_ALIAS,
                    format!("WITH query name \"{name}\" specified more than once"),
                ));
            }
            let binding = if with.recursive && reads(&cte.query, &name) {
                self.recursive_cte(&name, cte)?
            } else {
                let (plan, columns) = self.select_in(&cte.query, &[])?;
                CteBinding {
                    name,
                    columns: renamed(columns, &cte.alias)?,
                    relation: CteRelation::Plan(Arc::new(plan)),
                }
            };
            self.ctes.push(binding);
        }
        Ok(with.cte_tables.len())
    }

    /// `name AS (anchor UNION [ALL] recursive)`.
    fn recursive_cte(&mut self, name: &str, cte: &ast::Cte) -> Result<CteBinding> {
        let q = &cte.query;
        let SetExpr::SetOperation {
            op: SetOperator::Union,
            set_quantifier,
            left,
            right,
        } = q.body.as_ref()
        else {
            return Err(SqlError::new(
                sqlstate::INVALID_RECURSION,
                format!(
                    "recursive query \"{name}\" does not have the form non-recursive-term UNION [ALL] recursive-term"
                ),
            ));
        };
        if q.order_by.is_some() || q.limit_clause.is_some() || q.with.is_some() {
            return Err(SqlError::unsupported(format!(
                "ORDER BY, LIMIT or WITH in recursive query \"{name}\""
            )));
        }
        let (anchor, columns) = self.select_body(left, Tail::NONE, &[])?;
        let columns = renamed(columns, &cte.alias)?;
        let id = self.work_tables;
        self.work_tables += 1;
        self.ctes.push(CteBinding {
            name: name.to_owned(),
            columns: columns.clone(),
            relation: CteRelation::WorkTable(id),
        });
        let recursive = self.select_body(right, Tail::NONE, &[]);
        self.ctes.pop();
        let (recursive, rcols) = recursive?;
        if rcols.len() != columns.len() {
            return Err(SqlError::syntax(
                "each UNION query must have the same number of columns",
            ));
        }
        let types = columns.iter().map(|c| c.ty).collect();
        let all = matches!(set_quantifier, SetQuantifier::All);
        let plan = SelectPlan {
            root: PlanNode::RecursiveUnion {
                anchor: Box::new(anchor),
                recursive: Box::new(recursive),
                id,
                all,
                types,
            },
            visible: columns.len(),
            for_update: false,
            init: Vec::new(),
            view: None,
        };
        Ok(CteBinding {
            name: name.to_owned(),
            columns,
            relation: CteRelation::Plan(Arc::new(plan)),
        })
    }

    /// The WITH query in scope called `name`, if any (the innermost).
    pub(crate) fn cte(&self, name: &ast::ObjectName) -> Option<&CteBinding> {
        let [ast::ObjectNamePart::Identifier(id)] = name.0.as_slice() else {
            return None;
        };
        let name = ident(id);
        self.ctes.iter().rev().find(|c| c.name == name)
    }
}
