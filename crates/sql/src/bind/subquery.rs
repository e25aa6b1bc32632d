//! Subqueries in expressions that read nothing of the query around them: a scalar subquery,
//! `EXISTS` and `IN` where they are not a WHERE's AND-ed condition (those become joins, see
//! `from`). Each is planned as the statement's InitPlan, computed once before its rows are
//! read, as PostgreSQL computes an uncorrelated subquery; one that names the enclosing query's
//! columns is refused here (0A000).

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
                let (plan, columns) = self.uncorrelated(q, scope)?;
                let ty = one_column(&columns)?;
                (self.init_plan(plan, InitKind::Scalar, ty), ty)
            }
            ast::Expr::Exists { subquery, negated } => {
                let (plan, _) = self.uncorrelated(subquery, scope)?;
                let exists = self.init_plan(plan, InitKind::Exists, SqlType::Bool);
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
                let (plan, columns) = self.uncorrelated(subquery, scope)?;
                let ty = one_column(&columns)?;
                let Expr::Init(id) = self.init_plan(plan, InitKind::In, ty) else {
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

    /// `q` planned on its own; 0A000 if it names a column of the query around it (`scope`).
    fn uncorrelated(
        &mut self,
        q: &ast::Query,
        scope: &[ScopeColumn],
    ) -> Result<(SelectPlan, Vec<OutputColumn>)> {
        match self.select(q) {
            Err(e) if e.code == sqlstate::UNDEFINED_COLUMN && !scope.is_empty() => {
                if self.select_in(q, scope).is_ok() {
                    Err(SqlError::unsupported(
                        "a subquery naming the outer query's columns outside the WHERE's AND-ed EXISTS and IN conditions",
                    ))
                } else {
                    Err(e)
                }
            }
            other => other,
        }
    }

    /// `plan` as the statement's next InitPlan, read by the expression returned.
    fn init_plan(&mut self, plan: SelectPlan, kind: InitKind, ty: SqlType) -> Expr {
        self.init.push(InitPlan { plan, kind, ty });
        Expr::Init(self.init.len() - 1)
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
