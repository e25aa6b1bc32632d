//! Binding a SELECT: the FROM clause into nested-loop levels (each table's rows found by primary
//! key, key range or scan, whichever its conditions allow, with every condition checked at the
//! first level where its columns are all joined), then grouping, projection, ordering and limits.

use std::sync::Arc;

use sqlparser::ast::{
    self, GroupByExpr, JoinConstraint, JoinOperator, LimitClause, OrderByKind, SelectItem,
    SelectItemQualifiedWildcardKind, SetExpr, TableFactor,
};

use crate::bind::{Binder, Grouping, ScopeColumn, has_aggregate, ident, object_name};
use crate::catalog::SqlTable;
use crate::error::{Result, SqlError};
use crate::expr::{BinOp, Expr};
use crate::plan::{
    Access, Aggregate, OutputColumn, Relation, SelectParts, SelectPlan, SortKey, Source,
};
use crate::values::datum::Datum;
use crate::values::types::SqlType;

/// Splits a condition into its AND-ed parts.
pub fn conjuncts(e: Expr, out: &mut Vec<Expr>) {
    match e {
        Expr::Binary(BinOp::And, l, r) => {
            conjuncts(*l, out);
            conjuncts(*r, out);
        }
        other => out.push(other),
    }
}

/// A condition constantly false or NULL passes no row: as PostgreSQL's one-time filter, it is
/// then the only condition, so no other is computed for any row.
fn one_time_filter(conditions: &mut Vec<Expr>) {
    let never = conditions.iter().position(|c| {
        matches!(
            c,
            Expr::Literal(
                crate::values::datum::Datum::Bool(false) | crate::values::datum::Datum::Null
            )
        )
    });
    if let Some(never) = never {
        let only = conditions.swap_remove(never);
        *conditions = vec![only];
    }
}

/// Orders a statement's conditions as PostgreSQL's planner does before it checks them on a row:
/// a constantly false one alone (see [`one_time_filter`]), else the cheapest first, in its
/// cost units, the order written among equals (`order_qual_clauses`). Which conditions are
/// computed for a row decides which errors a statement can raise: in `c % c >= 1 AND c IN (1,
/// 2)`, PostgreSQL checks the IN list first and never divides by a zero `c`.
pub fn order_conditions(conditions: &mut Vec<Expr>) {
    one_time_filter(conditions);
    conditions.sort_by(|a, b| cost(a).total_cmp(&cost(b)));
}

/// What PostgreSQL's `cost_qual_eval` charges for computing `e`, in operator calls: one per
/// operator, function or cast, none for AND, OR, NOT, IS NULL, COALESCE, a column or a
/// constant, and for an IN list of constants half a comparison per element (PostgreSQL's
/// `= ANY` of an array), one per element holding a column.
fn cost(e: &Expr) -> f64 {
    let children = |es: &mut dyn Iterator<Item = &Expr>| es.map(cost).sum::<f64>();
    match e {
        Expr::Column(_) | Expr::Param(_) | Expr::Literal(_) => 0.0,
        Expr::Not(x) | Expr::IsNull(x, _) => cost(x),
        Expr::Negate(x) | Expr::Cast(x, _) | Expr::Lookup(x, _) => 1.0 + cost(x),
        Expr::Sequence(_, args) => 1.0 + args.iter().map(cost).sum::<f64>(),
        Expr::Binary(BinOp::And | BinOp::Or, l, r) => cost(l) + cost(r),
        Expr::Binary(_, l, r) => 1.0 + cost(l) + cost(r),
        Expr::Between {
            expr, low, high, ..
        } => 2.0 + cost(expr) + cost(low) + cost(high),
        Expr::InList { expr, list, .. } => {
            let (columns, constants): (Vec<&Expr>, Vec<&Expr>) =
                list.iter().partition(|x| x.max_column().is_some());
            let compare = match constants.len() {
                0 => 0.0,
                1 => 1.0,
                n => 0.5 * n as f64,
            };
            cost(expr) + compare + columns.len() as f64 + children(&mut list.iter())
        }
        Expr::Func(crate::expr::Func::Coalesce, args) => children(&mut args.iter()),
        Expr::Func(_, args) => 1.0 + children(&mut args.iter()),
        Expr::Case {
            operand,
            whens,
            otherwise,
        } => {
            // With an operand, each WHEN compares it to a value.
            let compares = if operand.is_some() {
                whens.len() as f64
            } else {
                0.0
            };
            compares
                + operand.as_deref().map_or(0.0, cost)
                + children(&mut whens.iter().flat_map(|(w, t)| [w, t]))
                + otherwise.as_deref().map_or(0.0, cost)
        }
    }
}

/// The columns a table contributes to a scope, under `name`.
pub fn table_scope(table: &SqlTable, name: &str) -> Vec<ScopeColumn> {
    table
        .columns
        .iter()
        .map(|c| ScopeColumn {
            table: name.to_owned(),
            name: c.name.clone(),
            ty: c.ty,
        })
        .collect()
}

/// `op` with its operands swapped: `a < b` is `b > a`.
fn mirrored(op: BinOp) -> BinOp {
    match op {
        BinOp::Lt => BinOp::Gt,
        BinOp::LtEq => BinOp::GtEq,
        BinOp::Gt => BinOp::Lt,
        BinOp::GtEq => BinOp::LtEq,
        other => other,
    }
}

/// What conditions say of an index's columns: leading ones equal to known values, then bounds
/// on the next (`true`: inclusive).
type KeyConditions = (Vec<Expr>, Option<(Expr, bool)>, Option<(Expr, bool)>);

/// Chooses how the table whose columns are `offset..offset + n` is read, given the conditions
/// checked at its level: by primary key if each key column is equated to something already
/// known, else by a range of the primary key or of a secondary index on a leading part of its
/// columns (the one whose conditions pin most columns; the primary key on a tie), else by a scan.
pub fn choose_access(table: &SqlTable, offset: usize, conditions: &[Expr]) -> Access {
    let known = |e: &Expr| e.max_column().is_none_or(|c| c < offset);
    // A comparison of table column `col` with a known value, as `col op value` (a comparison
    // written the other way round, `value < col`, is mirrored).
    let compared = |c: &Expr| -> Option<(usize, BinOp, Expr)> {
        let Expr::Binary(op, l, r) = c else {
            return None;
        };
        let column = |e: &Expr| match e {
            Expr::Column(c) if (offset..offset + table.columns.len()).contains(c) => {
                Some(*c - offset)
            }
            _ => None,
        };
        match (column(l), column(r)) {
            (Some(col), _) if known(r) => Some((col, *op, (**r).clone())),
            (_, Some(col)) if known(l) => Some((col, mirrored(*op), (**l).clone())),
            _ => None,
        }
    };
    // What the conditions say of table column `col`: equal to a known value.
    let equal_to = |col: usize| {
        conditions.iter().find_map(|c| match compared(c) {
            Some((c, BinOp::Eq, value)) if c == col => Some(value),
            _ => None,
        })
    };
    // The range conditions give over `columns` (an index's, in order): leading columns equal to
    // known values, then bounds on the next one.
    let range = |columns: &[usize]| {
        let mut eq = Vec::new();
        for &col in columns {
            match equal_to(col) {
                Some(e) => eq.push(e),
                None => break,
            }
        }
        let (mut lower, mut upper) = (None, None);
        if let Some(&col) = columns.get(eq.len()) {
            for c in conditions {
                if let Expr::Between {
                    expr,
                    low,
                    high,
                    negated: false,
                } = c
                    && matches!(**expr, Expr::Column(e) if e == offset + col)
                    && known(low)
                    && known(high)
                {
                    lower = Some(((**low).clone(), true));
                    upper = Some(((**high).clone(), true));
                    continue;
                }
                match compared(c) {
                    Some((c, op, value)) if c == col => match op {
                        BinOp::Gt => lower = Some((value, false)),
                        BinOp::GtEq => lower = Some((value, true)),
                        BinOp::Lt => upper = Some((value, false)),
                        BinOp::LtEq => upper = Some((value, true)),
                        _ => {}
                    },
                    _ => {}
                }
            }
        }
        (eq, lower, upper)
    };
    // How selective a range is: columns pinned, then a bound on the next.
    let rank = |(eq, lower, upper): &KeyConditions| {
        2 * eq.len() + usize::from(lower.is_some() || upper.is_some())
    };
    let primary = range(&table.primary_key);
    if !table.primary_key.is_empty() && primary.0.len() == table.primary_key.len() {
        return Access::Key(primary.0);
    }
    let mut best = (None, primary);
    for (i, index) in table.indexes.iter().enumerate() {
        let candidate = range(&index.columns);
        if rank(&candidate) > rank(&best.1) {
            best = (Some(i), candidate);
        }
    }
    match best {
        (_, (eq, None, None)) if eq.is_empty() => Access::Scan,
        (index, (eq, lower, upper)) => Access::Range {
            index,
            eq,
            lower,
            upper,
        },
    }
}

impl Binder<'_> {
    /// Binds a query returning rows.
    pub fn select(&mut self, query: &ast::Query) -> Result<(SelectPlan, Vec<OutputColumn>)> {
        if query.with.is_some() {
            return Err(SqlError::unsupported("WITH"));
        }
        let select = match query.body.as_ref() {
            SetExpr::Select(s) => s,
            SetExpr::Query(q) if query.order_by.is_none() && query.limit_clause.is_none() => {
                return self.select(q);
            }
            SetExpr::SetOperation { op, .. } => {
                return Err(SqlError::unsupported(format!("{op}")));
            }
            other => return Err(SqlError::unsupported(format!("query {other}"))),
        };
        // FROM: the sources in join order, and the join conditions.
        let mut sources = Vec::new();
        let mut scope = Vec::new();
        let mut on = Vec::new();
        for twj in &select.from {
            self.add_source(&twj.relation, &mut sources, &mut scope)?;
            for join in &twj.joins {
                let constraint = match &join.join_operator {
                    JoinOperator::Join(c) | JoinOperator::Inner(c) => c,
                    JoinOperator::CrossJoin(c) => c,
                    other => return Err(SqlError::unsupported(join_kind(other))),
                };
                self.add_source(&join.relation, &mut sources, &mut scope)?;
                match constraint {
                    JoinConstraint::On(e) => on.push(e),
                    JoinConstraint::None => {}
                    JoinConstraint::Using(_) | JoinConstraint::UsingAlias(..) => {
                        return Err(SqlError::unsupported("JOIN ... USING"));
                    }
                    JoinConstraint::Natural => return Err(SqlError::unsupported("NATURAL JOIN")),
                }
            }
        }
        let mut conditions = Vec::new();
        for e in on.into_iter().chain(select.selection.as_ref()) {
            let (bound, _) = self.folded(e, &scope, &mut None)?;
            conjuncts(bound, &mut conditions);
        }
        order_conditions(&mut conditions);
        let levels = sources.len().max(1);
        let mut filters: Vec<Vec<Expr>> = (0..levels).map(|_| Vec::new()).collect();
        for c in conditions {
            let level = c.max_column().map_or(0, |col| {
                sources
                    .iter()
                    .rposition(|s: &Source| s.offset <= col)
                    .unwrap_or(0)
            });
            filters[level].push(c);
        }
        for (s, f) in sources.iter_mut().zip(&filters) {
            if let Relation::Table(t) = &s.relation {
                s.access = choose_access(t, s.offset, f);
            }
        }

        // Grouping.
        let group_asts: Vec<&ast::Expr> = match &select.group_by {
            GroupByExpr::Expressions(exprs, _) => exprs.iter().collect(),
            GroupByExpr::All(_) => return Err(SqlError::unsupported("GROUP BY ALL")),
        };
        let aggregating = !group_asts.is_empty()
            || select.having.is_some()
            || select.projection.iter().any(|item| match item {
                SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => {
                    has_aggregate(e)
                }
                _ => false,
            });
        let mut grouping = Grouping {
            group_by: Vec::new(),
            group_types: Vec::new(),
            calls: Vec::new(),
        };
        for g in &group_asts {
            // GROUP BY 2: the second output column.
            let g = match g {
                ast::Expr::Value(v) => match &v.value {
                    ast::Value::Number(n, _) => match n
                        .parse::<usize>()
                        .ok()
                        .and_then(|n| n.checked_sub(1).and_then(|i| select.projection.get(i)))
                    {
                        Some(
                            SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. },
                        ) => e,
                        _ => {
                            return Err(SqlError::syntax(format!(
                                "GROUP BY position {n} is not in select list"
                            )));
                        }
                    },
                    _ => g,
                },
                _ => g,
            };
            let (e, ty) = self.expr(g, &scope, &mut None)?;
            grouping.group_by.push(e);
            grouping.group_types.push(ty);
        }
        let mut grouping_ref = if aggregating {
            Some(&mut grouping)
        } else {
            None
        };

        // Projection.
        let mut projection = Vec::new();
        let mut columns = Vec::new();
        for item in &select.projection {
            match item {
                SelectItem::Wildcard(_) => {
                    if aggregating {
                        return Err(SqlError::syntax("SELECT * with GROUP BY"));
                    }
                    for (i, c) in scope.iter().enumerate() {
                        projection.push(Expr::Column(i));
                        columns.push(OutputColumn {
                            name: c.name.clone(),
                            ty: c.ty,
                        });
                    }
                }
                SelectItem::QualifiedWildcard(
                    SelectItemQualifiedWildcardKind::ObjectName(n),
                    _,
                ) => {
                    let t = object_name(n)?;
                    for (i, c) in scope.iter().enumerate().filter(|(_, c)| c.table == t) {
                        projection.push(Expr::Column(i));
                        columns.push(OutputColumn {
                            name: c.name.clone(),
                            ty: c.ty,
                        });
                    }
                }
                SelectItem::UnnamedExpr(e) => {
                    let (x, ty) = self.folded(e, &scope, &mut grouping_ref)?;
                    let (x, ty) = self.output(x, ty)?;
                    projection.push(x);
                    columns.push(OutputColumn {
                        name: output_name(e),
                        ty,
                    });
                }
                SelectItem::ExprWithAlias { expr, alias } => {
                    let (x, ty) = self.folded(expr, &scope, &mut grouping_ref)?;
                    let (x, ty) = self.output(x, ty)?;
                    projection.push(x);
                    columns.push(OutputColumn {
                        name: ident(alias),
                        ty,
                    });
                }
                other => return Err(SqlError::unsupported(format!("select item {other}"))),
            }
        }
        let having = match &select.having {
            Some(h) => Some(self.folded(h, &scope, &mut grouping_ref)?.0),
            None => None,
        };

        // ORDER BY: an output column by position or name, or any expression (sorted on as a
        // hidden column).
        let visible = projection.len();
        let mut order_by = Vec::new();
        if let Some(ob) = &query.order_by {
            let OrderByKind::Expressions(items) = &ob.kind else {
                return Err(SqlError::unsupported("ORDER BY ALL"));
            };
            for item in items {
                let position = match &item.expr {
                    ast::Expr::Value(v) => match &v.value {
                        ast::Value::Number(n, _) => Some(
                            n.parse::<usize>()
                                .ok()
                                .filter(|p| (1..=visible).contains(p))
                                .ok_or_else(|| {
                                    SqlError::syntax(format!(
                                        "ORDER BY position {n} is not in select list"
                                    ))
                                })?
                                - 1,
                        ),
                        _ => None,
                    },
                    ast::Expr::Identifier(id) => {
                        let name = ident(id);
                        columns.iter().position(|c| c.name == name)
                    }
                    _ => None,
                };
                let column = match position {
                    Some(p) => p,
                    None => {
                        let (x, _) = self.folded(&item.expr, &scope, &mut grouping_ref)?;
                        match projection.iter().position(|p| *p == x) {
                            Some(p) => p,
                            None => {
                                projection.push(x);
                                projection.len() - 1
                            }
                        }
                    }
                };
                let descending = matches!(item.options.sort, Some(ast::OrderBySort::Desc));
                order_by.push(SortKey {
                    column,
                    descending,
                    // PostgreSQL: NULLs sort as larger than every value.
                    nulls_first: item.options.nulls_first.unwrap_or(descending),
                });
            }
        }
        let (limit, offset) = match &query.limit_clause {
            None => (None, None),
            Some(LimitClause::LimitOffset { limit, offset, .. }) => {
                (limit.as_ref(), offset.as_ref().map(|o| &o.value))
            }
            Some(LimitClause::OffsetCommaLimit { .. }) => {
                return Err(SqlError::unsupported("LIMIT a, b"));
            }
        };
        let mut bound_count = |e: Option<&ast::Expr>| -> Result<Option<Expr>> {
            e.map(|e| {
                let (x, _) = self.expr(e, &[], &mut None)?;
                self.infer(&x, SqlType::Int8);
                Ok(x)
            })
            .transpose()
        };
        let limit = bound_count(limit)?;
        let offset = bound_count(offset)?;
        let distinct = match &select.distinct {
            None | Some(ast::Distinct::All) => false,
            Some(ast::Distinct::Distinct) => true,
            Some(other) => return Err(SqlError::unsupported(format!("{other}"))),
        };
        let aggregate = aggregating.then_some(Aggregate {
            group_by: grouping.group_by,
            calls: grouping.calls,
            having,
        });
        Ok((
            SelectPlan::build(SelectParts {
                sources,
                filters,
                aggregate,
                projection,
                visible,
                distinct,
                order_by,
                limit,
                offset,
                lock: (!query.locks.is_empty()).then(|| lock_wait(&query.locks)),
            }),
            columns,
        ))
    }

    fn add_source(
        &mut self,
        factor: &TableFactor,
        sources: &mut Vec<Source>,
        scope: &mut Vec<ScopeColumn>,
    ) -> Result<()> {
        let TableFactor::Table {
            name, alias, args, ..
        } = factor
        else {
            return Err(SqlError::unsupported(format!("FROM {factor}")));
        };
        if args.is_some() {
            return Err(SqlError::unsupported(format!("table function {name}")));
        }
        let offset = scope.len();
        let relation = match self.system_relation(name)? {
            Some(system) => {
                let shown = alias
                    .as_ref()
                    .map_or_else(|| system.name.to_owned(), |a| ident(&a.name));
                scope.extend(system.columns.iter().map(|(c, ty)| ScopeColumn {
                    table: shown.clone(),
                    name: (*c).to_owned(),
                    ty: *ty,
                }));
                let rows = system.rows(self.snapshot()?);
                (
                    Relation::Rows {
                        relation: system.name.to_owned(),
                        rows,
                    },
                    shown,
                )
            }
            None => {
                let table: Arc<SqlTable> = self.tables.table(&object_name(name)?)?;
                let shown = alias
                    .as_ref()
                    .map_or_else(|| table.name.clone(), |a| ident(&a.name));
                scope.extend(table_scope(&table, &shown));
                match &table.sequence {
                    // A sequence reads as its one row, as it stands when the statement runs
                    // (planned afresh each time).
                    Some(s) => {
                        self.volatile = true;
                        let (last, called) = s.current();
                        let row = vec![Datum::Int(last), Datum::Int(0), Datum::Bool(called)];
                        let relation = table.name.clone();
                        (
                            Relation::Rows {
                                relation,
                                rows: vec![row],
                            },
                            shown,
                        )
                    }
                    None => (Relation::Table(table), shown),
                }
            }
        };
        sources.push(Source {
            relation: relation.0,
            name: relation.1,
            offset,
            access: Access::Scan,
        });
        Ok(())
    }
}

/// The name PostgreSQL gives an unnamed output column.
pub(crate) fn output_name(e: &ast::Expr) -> String {
    match e {
        ast::Expr::Identifier(id) => ident(id),
        ast::Expr::CompoundIdentifier(parts) => parts.last().map(ident).unwrap_or_default(),
        ast::Expr::Function(f) => object_name(&f.name).unwrap_or_else(|_| "?column?".into()),
        ast::Expr::Cast { expr, .. } | ast::Expr::Nested(expr) => output_name(expr),
        _ => "?column?".into(),
    }
}

/// What the locking clauses say about rows other transactions hold: PostgreSQL takes the
/// strictest one given (`NOWAIT` over `SKIP LOCKED` over waiting).
fn lock_wait(locks: &[ast::LockClause]) -> crate::plan::LockWait {
    use crate::plan::LockWait;
    let waits = locks.iter().map(|l| match l.nonblock {
        Some(ast::NonBlock::Nowait) => LockWait::NoWait,
        Some(ast::NonBlock::SkipLocked) => LockWait::SkipLocked,
        None => LockWait::Wait,
    });
    waits
        .max_by_key(|w| match w {
            LockWait::Wait => 0,
            LockWait::SkipLocked => 1,
            LockWait::NoWait => 2,
        })
        .unwrap_or_default()
}

/// The name of a join this binder does not take, for its error.
fn join_kind(op: &JoinOperator) -> &'static str {
    match op {
        JoinOperator::Left(_) | JoinOperator::LeftOuter(_) => "LEFT JOIN",
        JoinOperator::Right(_) | JoinOperator::RightOuter(_) => "RIGHT JOIN",
        JoinOperator::FullOuter(_) => "FULL JOIN",
        JoinOperator::LeftSemi(_) | JoinOperator::RightSemi(_) => "a semi join",
        JoinOperator::LeftAnti(_) | JoinOperator::RightAnti(_) => "an anti join",
        JoinOperator::CrossApply | JoinOperator::OuterApply => "APPLY",
        _ => "this kind of join",
    }
}
