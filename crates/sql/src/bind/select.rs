//! Binding a SELECT: its FROM and WHERE (`from`), then grouping, projection, ordering and
//! limits.

use sqlparser::ast::{self, GroupByExpr, OrderByKind, SelectItem, SelectItemQualifiedWildcardKind};

use crate::bind::from::FromWhere;
use crate::bind::set_ops::Tail;
use crate::bind::window::{Windows, place_windows};
use crate::bind::{Binder, Grouping, ScopeColumn, has_aggregate, ident, object_name};
use crate::error::{Result, SqlError, sqlstate};
use crate::expr::Expr;
use crate::plan::{Aggregate, OutputColumn, SelectParts, SelectPlan, SortKey};

impl Binder<'_> {
    /// Binds a query returning rows.
    pub fn select(&mut self, query: &ast::Query) -> Result<(SelectPlan, Vec<OutputColumn>)> {
        self.select_in(query, &[])
    }

    /// Binds a query returning rows inside one whose columns are `outer` (a subquery, which
    /// may name them).
    pub(crate) fn select_in(
        &mut self,
        query: &ast::Query,
        outer: &[ScopeColumn],
    ) -> Result<(SelectPlan, Vec<OutputColumn>)> {
        self.nested_query(|b| b.select_nested(query, outer))
    }

    /// Binds a query nested in another with `bind`. A query nests in FROM as well as in
    /// expressions: each level counts against the same bound, on a stack grown as an
    /// expression's is (see `expr`), and queries nest no deeper than `MAX_QUERY_DEPTH` (their
    /// plans run and drop on tasks' fixed stacks).
    pub(crate) fn nested_query<T>(
        &mut self,
        bind: impl FnOnce(&mut Self) -> Result<T>,
    ) -> Result<T> {
        self.depth += 1;
        self.query_depth += 1;
        let bound = stacker::maybe_grow(2 * crate::depth::RED_ZONE, 16 << 20, || {
            crate::depth::check(self.depth)?;
            if self.query_depth > crate::depth::MAX_QUERY_DEPTH {
                return Err(crate::depth::too_deep());
            }
            bind(self)
        });
        self.depth -= 1;
        self.query_depth -= 1;
        bound
    }

    fn select_nested(
        &mut self,
        query: &ast::Query,
        outer: &[ScopeColumn],
    ) -> Result<(SelectPlan, Vec<OutputColumn>)> {
        let in_scope = self.ctes.len();
        let bound = (|| {
            if let Some(with) = &query.with {
                self.bind_with(with)?;
            }
            let tail = Tail {
                order_by: query.order_by.as_ref(),
                limit: query.limit_clause.as_ref(),
                locks: &query.locks,
                fetch: query.fetch.as_ref(),
            };
            self.select_body(&query.body, tail, outer)
        })();
        // The WITH queries are this query's only.
        self.ctes.truncate(in_scope);
        bound
    }

    /// A SELECT (not a set operation) with what follows it (`tail`).
    pub(crate) fn select_core(
        &mut self,
        select: &ast::Select,
        tail: Tail<'_>,
        outer: &[ScopeColumn],
    ) -> Result<(SelectPlan, Vec<OutputColumn>)> {
        // The enclosing query's window calls are its own, whatever becomes of this one.
        let enclosing = self.windows.take();
        let bound = self.select_core_windowed(select, tail, outer);
        self.windows = enclosing;
        bound
    }

    fn select_core_windowed(
        &mut self,
        select: &ast::Select,
        tail: Tail<'_>,
        outer: &[ScopeColumn],
    ) -> Result<(SelectPlan, Vec<OutputColumn>)> {
        let query = tail;
        refuse_windows(select)?;
        // Clauses PostgreSQL's grammar has that are not taken here: refused, never ignored.
        if select.into.is_some() {
            return Err(SqlError::unsupported("SELECT ... INTO"));
        }
        let FromWhere {
            sources,
            scope,
            filters,
            after_join,
            semi_joins,
            post_filter,
            from_order,
        } = self.bind_from_where(select, outer)?;
        refuse_nullable_locks(query.locks, &sources)?;

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
        functionally_dependent(&sources, &scope, &mut grouping);
        let mut grouping_ref = if aggregating {
            Some(&mut grouping)
        } else {
            None
        };

        // A correlated subquery runs under each row of the projection (not over groups).
        let per_row = std::mem::replace(&mut self.per_row_ok, !aggregating);
        // Window calls may be in the select list and ORDER BY (a subquery's are its own).
        self.windows = Some(Windows::new(&select.named_window));
        // Projection.
        let mut set_functions = Vec::new();
        let mut projection = Vec::new();
        let mut columns = Vec::new();
        for item in &select.projection {
            match item {
                SelectItem::Wildcard(_) => {
                    if aggregating {
                        return Err(SqlError::syntax("SELECT * with GROUP BY"));
                    }
                    // In FROM's order, however the sources are joined.
                    let positions: Vec<usize> = match &from_order {
                        Some(order) => order
                            .iter()
                            .flat_map(|&s| sources[s].offset..sources[s].offset + sources[s].width)
                            .collect(),
                        None => (0..scope.len()).collect(),
                    };
                    // USING's columns first, then the others.
                    let (using, others): (Vec<usize>, Vec<usize>) =
                        positions.into_iter().partition(|&i| scope[i].using);
                    let own = using.into_iter().chain(others).map(|i| (i, &scope[i]));
                    for (i, c) in own.filter(|(_, c)| !c.outer && !c.merged && !c.system) {
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
                    let own = scope
                        .iter()
                        .enumerate()
                        .filter(|(_, c)| !c.outer && !c.system);
                    for (i, c) in own.filter(|(_, c)| c.table == t) {
                        projection.push(Expr::Column(i));
                        columns.push(OutputColumn {
                            name: c.name.clone(),
                            ty: c.ty,
                        });
                    }
                }
                SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. }
                    if let Some((func, args)) = set_function_call(e) =>
                {
                    if aggregating {
                        return Err(SqlError::unsupported(format!(
                            "{} in the select list of a grouping query",
                            func.name()
                        )));
                    }
                    let (args, ty) = self.set_function(func, &args, &scope)?;
                    set_functions.push((projection.len(), func, args));
                    projection.push(Expr::Literal(crate::values::datum::Datum::Null));
                    let name = match item {
                        SelectItem::ExprWithAlias { alias, .. } => ident(alias),
                        _ => func.name().to_owned(),
                    };
                    columns.push(OutputColumn { name, ty });
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
        let windows = self.windows.take();
        let having = match &select.having {
            Some(h) => Some(self.folded(h, &scope, &mut grouping_ref)?.0),
            None => None,
        };
        self.windows = windows;

        // ORDER BY: an output column by position or name, or any expression (sorted on as a
        // hidden column).
        let visible = projection.len();
        let mut order_by = Vec::new();
        if let Some(ob) = query.order_by {
            let OrderByKind::Expressions(items) = &ob.kind else {
                return Err(SqlError::unsupported("ORDER BY ALL"));
            };
            for item in items {
                let column = self.output_column(
                    &item.expr,
                    (&columns, &mut projection, visible),
                    &scope,
                    &mut grouping_ref,
                    "ORDER BY",
                )?;
                let descending = matches!(item.options.sort, Some(ast::OrderBySort::Desc));
                order_by.push(SortKey {
                    column,
                    descending,
                    // PostgreSQL: NULLs sort as larger than every value.
                    nulls_first: item.options.nulls_first.unwrap_or(descending),
                });
            }
        }
        // DISTINCT ON: the first row of each group of these values, in ORDER BY's order
        // (whose leading items must be among them).
        let mut distinct_on = Vec::new();
        if let Some(ast::Distinct::On(exprs)) = &select.distinct {
            for e in exprs {
                let column = self.output_column(
                    e,
                    (&columns, &mut projection, visible),
                    &scope,
                    &mut grouping_ref,
                    "DISTINCT ON",
                )?;
                distinct_on.push(column);
            }
            let leading = order_by.iter().take(distinct_on.len());
            if leading
                .into_iter()
                .any(|k: &SortKey| !distinct_on.contains(&k.column))
            {
                return Err(SqlError::new(
                    crate::error::sqlstate::INVALID_COLUMN_REFERENCE,
                    "SELECT DISTINCT ON expressions must match initial ORDER BY expressions",
                ));
            }
        }
        self.per_row_ok = per_row;
        let windows = self.windows.take().map(|w| w.calls).unwrap_or_default();
        if !windows.is_empty() {
            if !set_functions.is_empty() {
                return Err(SqlError::unsupported(
                    "a set-returning function in the select list of a query with window functions",
                ));
            }
            // The window node's input: the aggregated row, or the joined one.
            let width = if aggregating {
                grouping.group_by.len() + grouping.calls.len()
            } else {
                scope.len()
            };
            place_windows(&mut projection, width);
        }
        let (limit, offset) = self.limit_offset(query)?;
        let distinct = matches!(select.distinct, Some(ast::Distinct::Distinct));
        let aggregate = aggregating.then_some(Aggregate {
            group_by: grouping.group_by,
            calls: grouping.calls,
            having,
        });
        Ok((
            SelectPlan::build(SelectParts {
                sources,
                filters,
                after_join,
                semi_joins,
                post_filter,
                set_functions,
                aggregate,
                windows,
                projection,
                visible,
                distinct,
                distinct_on,
                order_by,
                limit,
                offset,
                lock: (!query.locks.is_empty()).then(|| lock_wait(query.locks)),
            }),
            columns,
        ))
    }
}

impl Binder<'_> {
    /// The output column `e` names for `clause` (ORDER BY, DISTINCT ON): one by position or
    /// name, else `e` bound over the query's row, a hidden column added where no output
    /// column computes it.
    fn output_column(
        &mut self,
        e: &ast::Expr,
        (columns, projection, visible): (&[OutputColumn], &mut Vec<Expr>, usize),
        scope: &[ScopeColumn],
        grouping: &mut Option<&mut Grouping>,
        clause: &str,
    ) -> Result<usize> {
        let position = match e {
            ast::Expr::Value(v) => match &v.value {
                ast::Value::Number(n, _) => Some(
                    n.parse::<usize>()
                        .ok()
                        .filter(|p| (1..=visible).contains(p))
                        .ok_or_else(|| {
                            SqlError::syntax(format!("{clause} position {n} is not in select list"))
                        })?
                        - 1,
                ),
                _ => None,
            },
            ast::Expr::Identifier(id) => {
                let name = ident(id);
                let mut named = (0..visible).filter(|&i| columns[i].name == name);
                let first = named.next();
                // Two output columns of that name computing different values.
                if let Some(f) = first
                    && named.any(|i| projection[i] != projection[f])
                {
                    return Err(SqlError::new(
                        crate::error::sqlstate::AMBIGUOUS_COLUMN,
                        format!("{clause} \"{name}\" is ambiguous"),
                    ));
                }
                first
            }
            _ => None,
        };
        let (column, ty) = match position {
            Some(p) => (p, columns[p].ty),
            None => {
                let (x, ty) = self.folded(e, scope, grouping)?;
                let at = match projection.iter().position(|p| *p == x) {
                    Some(p) => p,
                    None => {
                        projection.push(x);
                        projection.len() - 1
                    }
                };
                (at, ty)
            }
        };
        if clause == "ORDER BY" {
            super::json::check_orderable(ty)?;
        }
        Ok(column)
    }
}

/// `e` as a call of a set-returning function with plain arguments, if it is one.
fn set_function_call(e: &ast::Expr) -> Option<(crate::plan::SetFunc, Vec<ast::Expr>)> {
    let ast::Expr::Function(f) = e else {
        return None;
    };
    let func = crate::plan::SetFunc::named(&object_name(&f.name).ok()?)?;
    let ast::FunctionArguments::List(list) = &f.args else {
        return None;
    };
    if f.over.is_some() || f.filter.is_some() || !list.clauses.is_empty() {
        return None;
    }
    let args = list
        .args
        .iter()
        .map(|a| match a {
            ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => Some(e.clone()),
            _ => None,
        })
        .collect::<Option<Vec<_>>>()?;
    Some((func, args))
}

/// The name PostgreSQL gives an unnamed output column.
pub(crate) fn output_name(e: &ast::Expr) -> String {
    match e {
        ast::Expr::Identifier(id) => ident(id),
        ast::Expr::CompoundIdentifier(parts) => parts.last().map(ident).unwrap_or_default(),
        ast::Expr::Function(f) => object_name(&f.name).unwrap_or_else(|_| "?column?".into()),
        ast::Expr::Cast { expr, .. } | ast::Expr::Nested(expr) => output_name(expr),
        // A scalar subquery is named as its column is.
        ast::Expr::Subquery(q) => match &*q.body {
            ast::SetExpr::Select(s) => match s.projection.as_slice() {
                [SelectItem::UnnamedExpr(e)] => output_name(e),
                [SelectItem::ExprWithAlias { alias, .. }] => ident(alias),
                _ => "?column?".into(),
            },
            _ => "?column?".into(),
        },
        _ => "?column?".into(),
    }
}

/// A window function call where none may be: PostgreSQL's 42P20, naming the clause.
fn refuse_windows(select: &ast::Select) -> Result<()> {
    let groups = match &select.group_by {
        GroupByExpr::Expressions(exprs, _) => exprs.as_slice(),
        GroupByExpr::All(_) => &[],
    };
    let joins = select
        .from
        .iter()
        .flat_map(|t| &t.joins)
        .filter_map(|j| match &j.join_operator {
            ast::JoinOperator::Join(ast::JoinConstraint::On(e))
            | ast::JoinOperator::Inner(ast::JoinConstraint::On(e))
            | ast::JoinOperator::Left(ast::JoinConstraint::On(e))
            | ast::JoinOperator::LeftOuter(ast::JoinConstraint::On(e)) => Some(e),
            _ => None,
        });
    let clauses = select
        .selection
        .iter()
        .map(|e| (e, "WHERE"))
        .chain(groups.iter().map(|e| (e, "GROUP BY")))
        .chain(select.having.iter().map(|e| (e, "HAVING")))
        .chain(joins.map(|e| (e, "JOIN conditions")));
    for (e, clause) in clauses {
        if crate::bind::has_window(e) {
            return Err(SqlError::new(
                crate::error::sqlstate::WINDOWING_ERROR,
                format!("window functions are not allowed in {clause}"),
            ));
        }
    }
    Ok(())
}

/// PostgreSQL's refusal of a locking clause on a table an outer join may give NULLs for (the
/// inner side of a left join, each side before a right join, both of a full join): all of them
/// unless it names its tables (`OF`).
fn refuse_nullable_locks(locks: &[ast::LockClause], sources: &[crate::plan::Source]) -> Result<()> {
    let last_right = sources.iter().rposition(|s| s.right.is_some());
    let nullable = |i: usize| sources[i].left || last_right.is_some_and(|r| i < r);
    for lock in locks {
        let named = match &lock.of {
            Some(name) => Some(object_name(name)?),
            None => None,
        };
        let refused = (0..sources.len())
            .filter(|&i| named.as_ref().is_none_or(|n| *n == sources[i].name))
            .any(nullable);
        if refused {
            return Err(SqlError::new(
                sqlstate::FEATURE_NOT_SUPPORTED,
                format!(
                    "FOR {} cannot be applied to the nullable side of an outer join",
                    lock.lock_type
                ),
            ));
        }
    }
    Ok(())
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

/// PostgreSQL's functional dependency: grouping by a table's whole primary key groups by each
/// of its columns, so they may be named outside aggregates (`GROUP BY w_id` lets `w_ytd` be
/// selected). They join the grouping keys (one value per group: the groups do not change).
fn functionally_dependent(
    sources: &[crate::plan::Source],
    scope: &[ScopeColumn],
    grouping: &mut Grouping,
) {
    for source in sources {
        let Some(table) = source.table() else {
            continue;
        };
        let grouped = |group_by: &[Expr], c: usize| {
            group_by
                .iter()
                .any(|g| matches!(g, Expr::Column(x) if *x == source.offset + c))
        };
        if table.primary_key.is_empty()
            || !table
                .primary_key
                .iter()
                .all(|&k| grouped(&grouping.group_by, k))
        {
            continue;
        }
        for c in 0..table.columns.len() {
            if !grouped(&grouping.group_by, c) {
                grouping.group_by.push(Expr::Column(source.offset + c));
                grouping.group_types.push(scope[source.offset + c].ty);
            }
        }
    }
}
