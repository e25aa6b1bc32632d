//! Binding a query's body beyond one SELECT: `UNION`, `INTERSECT` and `EXCEPT` (`ALL` or not)
//! of queries with the same number of columns, a `VALUES` list as a query, a parenthesized
//! query, and what follows a body (`ORDER BY` over its output columns, `LIMIT`, `OFFSET`).

use sqlparser::ast::{self, LimitClause, OrderByKind, SetExpr, SetOperator, SetQuantifier};

use crate::bind::{Binder, ScopeColumn, ident, result_type};
use crate::error::{Result, SqlError, sqlstate};
use crate::expr::Expr;
use crate::plan::{OutputColumn, PlanNode, SelectPlan, SetOp, SortKey};
use crate::values::types::SqlType;

/// What follows a query's body: ORDER BY, LIMIT/OFFSET and locking clauses.
#[derive(Clone, Copy)]
pub(crate) struct Tail<'q> {
    pub order_by: Option<&'q ast::OrderBy>,
    pub limit: Option<&'q LimitClause>,
    pub locks: &'q [ast::LockClause],
    /// `FETCH FIRST n ROWS ONLY`: a LIMIT spelt the standard's way.
    pub fetch: Option<&'q ast::Fetch>,
}

impl Tail<'_> {
    /// Nothing follows (a set operation's operand).
    pub(crate) const NONE: Tail<'static> = Tail {
        order_by: None,
        limit: None,
        locks: &[],
        fetch: None,
    };
}

impl Binder<'_> {
    /// A query's body with its `tail`.
    pub(crate) fn select_body(
        &mut self,
        body: &SetExpr,
        tail: Tail<'_>,
        outer: &[ScopeColumn],
    ) -> Result<(SelectPlan, Vec<OutputColumn>)> {
        let (root, columns) = match body {
            SetExpr::Select(s) => return self.select_core(s, tail, outer),
            SetExpr::Query(q)
                if tail.order_by.is_none() && tail.limit.is_none() && tail.fetch.is_none() =>
            {
                return self.select_in(q, outer);
            }
            SetExpr::Query(q) => {
                let (plan, columns) = self.select_in(q, outer)?;
                (plan.root, columns)
            }
            SetExpr::SetOperation {
                op,
                set_quantifier,
                left,
                right,
            } => self.set_operation(*op, *set_quantifier, (left, right), outer)?,
            SetExpr::Values(values) => self.values(values, outer)?,
            other => return Err(SqlError::unsupported(format!("query {other}"))),
        };
        if !tail.locks.is_empty() {
            return Err(SqlError::new(
                sqlstate::FEATURE_NOT_SUPPORTED,
                "FOR UPDATE is not allowed with UNION/INTERSECT/EXCEPT or VALUES",
            ));
        }
        self.with_tail(root, columns, tail)
    }

    /// `left op right`: their rows, which must have as many columns, of types that meet.
    fn set_operation(
        &mut self,
        op: SetOperator,
        quantifier: SetQuantifier,
        (left, right): (&SetExpr, &SetExpr),
        outer: &[ScopeColumn],
    ) -> Result<(PlanNode, Vec<OutputColumn>)> {
        let name = op.to_string();
        let (l, lcols) = self.select_body(left, Tail::NONE, outer)?;
        let (r, rcols) = self.select_body(right, Tail::NONE, outer)?;
        if lcols.len() != rcols.len() {
            return Err(SqlError::syntax(format!(
                "each {name} query must have the same number of columns"
            )));
        }
        let mut columns = Vec::with_capacity(lcols.len());
        for (a, b) in lcols.iter().zip(&rcols) {
            let ty = meet(a.ty, b.ty).ok_or_else(|| {
                SqlError::new(
                    sqlstate::DATATYPE_MISMATCH,
                    format!(
                        "{name} types {} and {} cannot be matched",
                        a.ty.name(),
                        b.ty.name()
                    ),
                )
            })?;
            columns.push(OutputColumn {
                name: a.name.clone(),
                ty,
            });
        }
        let all = matches!(quantifier, SetQuantifier::All);
        let kind = match op {
            SetOperator::Union => SetOp::Union,
            SetOperator::Intersect => SetOp::Intersect,
            SetOperator::Except => SetOp::Except,
            other => return Err(SqlError::unsupported(format!("{other}"))),
        };
        Ok((
            PlanNode::SetOp {
                left: Box::new(l),
                right: Box::new(r),
                op: kind,
                all,
                types: columns.iter().map(|c| c.ty).collect(),
            },
            columns,
        ))
    }

    /// `VALUES (...), (...)` as a query: columns `column1`, `column2`, ...
    fn values(
        &mut self,
        values: &ast::Values,
        outer: &[ScopeColumn],
    ) -> Result<(PlanNode, Vec<OutputColumn>)> {
        let width = values.rows.first().map_or(0, |r| r.len());
        let mut rows = Vec::with_capacity(values.rows.len());
        let mut types: Vec<SqlType> = vec![SqlType::Text; width];
        for row in &values.rows {
            if row.len() != width {
                return Err(SqlError::syntax("VALUES lists must all be the same length"));
            }
            let mut bound = Vec::with_capacity(width);
            for (i, e) in row.iter().enumerate() {
                let (x, ty) = self.folded(e, outer, &mut None)?;
                types[i] = meet(types[i], ty).ok_or_else(|| {
                    SqlError::new(
                        sqlstate::DATATYPE_MISMATCH,
                        format!(
                            "VALUES types {} and {} cannot be matched",
                            types[i].name(),
                            ty.name()
                        ),
                    )
                })?;
                bound.push(x);
            }
            rows.push(bound);
        }
        let columns = types
            .iter()
            .enumerate()
            .map(|(i, ty)| OutputColumn {
                name: format!("column{}", i + 1),
                ty: *ty,
            })
            .collect();
        Ok((PlanNode::Values { rows, types }, columns))
    }

    /// `root`'s rows sorted and limited as `tail` says: ORDER BY names output columns (by
    /// position or name).
    fn with_tail(
        &mut self,
        mut root: PlanNode,
        columns: Vec<OutputColumn>,
        tail: Tail<'_>,
    ) -> Result<(SelectPlan, Vec<OutputColumn>)> {
        if let Some(ob) = tail.order_by {
            let OrderByKind::Expressions(items) = &ob.kind else {
                return Err(SqlError::unsupported("ORDER BY ALL"));
            };
            let mut keys = Vec::with_capacity(items.len());
            for item in items {
                let column = match &item.expr {
                    ast::Expr::Value(v) => match &v.value {
                        ast::Value::Number(n, _) => n
                            .parse::<usize>()
                            .ok()
                            .filter(|p| (1..=columns.len()).contains(p))
                            .map(|p| p - 1),
                        _ => None,
                    },
                    ast::Expr::Identifier(id) => {
                        let name = ident(id);
                        columns.iter().position(|c| c.name == name)
                    }
                    _ => None,
                };
                let Some(column) = column else {
                    return Err(SqlError::new(
                        sqlstate::UNDEFINED_COLUMN,
                        format!(
                            "invalid UNION/INTERSECT/EXCEPT ORDER BY clause: {} is not a result column",
                            item.expr
                        ),
                    ));
                };
                let descending = matches!(item.options.sort, Some(ast::OrderBySort::Desc));
                keys.push(SortKey {
                    column,
                    descending,
                    nulls_first: item.options.nulls_first.unwrap_or(descending),
                });
            }
            root = PlanNode::Sort {
                input: Box::new(root),
                keys,
            };
        }
        let (limit, offset) = self.limit_offset(tail)?;
        if limit.is_some() || offset.is_some() {
            root = PlanNode::Limit {
                input: Box::new(root),
                limit,
                offset,
            };
        }
        let plan = SelectPlan {
            root,
            visible: columns.len(),
            for_update: false,
            init: Vec::new(),
            view: None,
        };
        Ok((plan, columns))
    }

    /// LIMIT (or FETCH FIRST) and OFFSET, each a count (a bigint).
    pub(crate) fn limit_offset(&mut self, tail: Tail<'_>) -> Result<(Option<Expr>, Option<Expr>)> {
        let (mut limit, offset) = match tail.limit {
            None => (None, None),
            Some(LimitClause::LimitOffset { limit, offset, .. }) => {
                (limit.as_ref(), offset.as_ref().map(|o| &o.value))
            }
            Some(LimitClause::OffsetCommaLimit { .. }) => {
                return Err(SqlError::unsupported("LIMIT a, b"));
            }
        };
        // FETCH FIRST [n] ROW[S] ONLY: n rows (one without n).
        let one = ast::Expr::value(ast::Value::Number("1".into(), false));
        if let Some(fetch) = tail.fetch {
            if fetch.with_ties || fetch.percent {
                return Err(SqlError::unsupported(
                    "FETCH FIRST ... WITH TIES or PERCENT",
                ));
            }
            if limit.is_some() {
                return Err(SqlError::syntax("multiple LIMIT clauses not allowed"));
            }
            limit = Some(fetch.quantity.as_ref().unwrap_or(&one));
        }
        let mut bound_count = |e: Option<&ast::Expr>| -> Result<Option<Expr>> {
            e.map(|e| {
                let (x, _) = self.expr(e, &[], &mut None)?;
                self.infer(&x, SqlType::Int8);
                Ok(x)
            })
            .transpose()
        };
        Ok((bound_count(limit)?, bound_count(offset)?))
    }
}

/// The type two columns of a set operation (or VALUES rows) meet in: an untyped side takes the
/// other's, numbers the wider; `None` where PostgreSQL finds no common type.
fn meet(a: SqlType, b: SqlType) -> Option<SqlType> {
    let kind = |t: SqlType| {
        if t.is_numeric() {
            1
        } else if t.is_string() {
            2
        } else {
            0
        }
    };
    match (a, b) {
        (SqlType::Text, t) | (t, SqlType::Text) => Some(t),
        (x, y) if x == y => Some(x),
        (x, y) if kind(x) == kind(y) && kind(x) != 0 => Some(result_type(x, y)),
        (x, y) if crate::bind::is_timestamp(x) && crate::bind::is_timestamp(y) => {
            Some(SqlType::TimestampTz)
        }
        _ => None,
    }
}
