//! Subqueries in expressions: a scalar subquery, `EXISTS` and `IN` where they are not a
//! WHERE's AND-ed condition (those become joins, see `from`). One that reads nothing of the
//! query around it is planned as the statement's InitPlan, computed once before its rows are
//! read, as PostgreSQL computes an uncorrelated subquery; a scalar or `EXISTS` one that names
//! the enclosing query's columns is run under each row (a SubPlan) where the binder allows it
//! (`per_row_ok`: a SELECT's projection and WHERE), and refused (0A000) elsewhere.

use sqlparser::ast;

use crate::bind::{Binder, Grouping, ScopeColumn};
use crate::error::{Result, SqlError, sqlstate};
use crate::expr::Expr;
use crate::plan::{InitKind, InitPlan, OutputColumn, SelectPlan};
use crate::values::types::SqlType;

impl Binder<'_> {
    /// A scalar subquery, `EXISTS` or `IN (subquery)` as an expression.
    pub(crate) fn subquery(
        &mut self,
        e: &ast::Expr,
        scope: &[ScopeColumn],
        g: &mut Option<&mut Grouping>,
    ) -> Result<(Expr, SqlType)> {
        Ok(match e {
            ast::Expr::Subquery(q) => {
                let (plan, columns, correlated) = self.planned(q, scope, true)?;
                let ty = one_column(&columns)?;
                (
                    self.init_plan(
                        plan,
                        InitKind::Scalar,
                        ty,
                        correlated.then_some(scope.len()),
                    ),
                    ty,
                )
            }
            ast::Expr::Exists { subquery, negated } => {
                let (plan, _, correlated) = self.planned(subquery, scope, true)?;
                let exists = self.init_plan(
                    plan,
                    InitKind::Exists,
                    SqlType::Bool,
                    correlated.then_some(scope.len()),
                );
                let e = if *negated {
                    Expr::Not(Box::new(exists))
                } else {
                    exists
                };
                (e, SqlType::Bool)
            }
            ast::Expr::In {
                expr,
                target: ast::InTarget::Subquery(subquery),
                negated,
                ..
            } => {
                let (x, _) = self.expr(expr, scope, g)?;
                let (plan, columns, _) = self.planned(subquery, scope, false)?;
                let ty = one_column(&columns)?;
                let Expr::Init(id) = self.init_plan(plan, InitKind::In, ty, None) else {
                    unreachable!("init_plan makes an Init");
                };
                let e = Expr::InInit {
                    expr: Box::new(x),
                    id,
                    negated: *negated,
                };
                (e, SqlType::Bool)
            }
            other => return Err(SqlError::unsupported(format!("expression {other}"))),
        })
    }

    /// `ARRAY(SELECT ...)`: its one column's values as an array.
    pub(crate) fn array_subquery(
        &mut self,
        q: &ast::Query,
        scope: &[ScopeColumn],
    ) -> Result<(Expr, SqlType)> {
        let (plan, columns, correlated) = self.planned(q, scope, true)?;
        let elem = one_column(&columns)?;
        let ty = crate::bind::arrays::array_of(elem)?;
        Ok((
            self.init_plan(plan, InitKind::Array, ty, correlated.then_some(scope.len())),
            ty,
        ))
    }

    /// `q` planned on its own, or (`correlated` in the result) inside the query around it
    /// (`scope`) where it names that query's columns and may (`may_correlate` here, and
    /// `per_row_ok`); 0A000 where it may not.
    fn planned(
        &mut self,
        q: &ast::Query,
        scope: &[ScopeColumn],
        may_correlate: bool,
    ) -> Result<(SelectPlan, Vec<OutputColumn>, bool)> {
        let before = self.init.len();
        let per_row = std::mem::replace(&mut self.per_row_ok, false);
        let alone = self.select(q);
        let planned = match alone {
            Ok((plan, columns)) => Ok((plan, columns, false)),
            Err(e) if e.code == sqlstate::UNDEFINED_COLUMN && !scope.is_empty() => {
                // What the failed attempt planned is not the statement's.
                self.init.truncate(before);
                match self.select_in(q, scope) {
                    Ok((plan, columns)) if may_correlate && per_row => Ok((plan, columns, true)),
                    Ok(_) => Err(SqlError::unsupported(
                        "a subquery naming the outer query's columns here (it may in a SELECT's select list and WHERE)",
                    )),
                    Err(_) => Err(e),
                }
            }
            Err(e) => Err(e),
        };
        self.per_row_ok = per_row;
        planned
    }

    /// `plan` as the statement's next subquery, read by the expression returned (once before
    /// the rows, or under each row where `correlated`: the width of the row it reads).
    fn init_plan(
        &mut self,
        plan: SelectPlan,
        kind: InitKind,
        ty: SqlType,
        correlated: Option<usize>,
    ) -> Expr {
        self.init.push(InitPlan {
            plan,
            kind,
            ty,
            correlated: correlated.is_some(),
            outer_width: correlated.unwrap_or(0),
            owner: self.view_owner.clone(),
        });
        let id = self.init.len() - 1;
        if correlated.is_some() {
            Expr::SubPlan(id)
        } else {
            Expr::Init(id)
        }
    }
}

/// The type of a subquery's one column; 42601 if it has more.
fn one_column(columns: &[OutputColumn]) -> Result<SqlType> {
    match columns {
        [c] => Ok(c.ty),
        _ => Err(SqlError::new(
            sqlstate::SYNTAX_ERROR,
            "subquery must return only one column",
        )),
    }
}
