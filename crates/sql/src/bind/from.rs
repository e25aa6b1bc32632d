//! Binding a SELECT's FROM and WHERE: its sources (tables, system catalogs, sequences and
//! derived tables) in join order, inner and left joins, each condition at the first level where
//! its columns are all joined (a left join's own conditions in its scan, a WHERE condition on
//! its columns after its NULLs), and the WHERE's `EXISTS` and `IN` subqueries among its AND-ed
//! conditions as semi and anti joins — correlated or not, each run under the outer row.

use std::sync::Arc;

use sqlparser::ast::{self, JoinConstraint, JoinOperator, SetExpr, TableFactor};

use super::or_conditions::{factor_common, implied_restrictions};
use super::row_values::row_items;
use crate::bind::access::{
    choose_access, conjuncts, hash_keys, implied_equalities, order_conditions, row_scope,
};
use crate::bind::{Binder, ScopeColumn, has_aggregate, ident, object_name};
use crate::catalog::SqlTable;
use crate::error::{Result, SqlError, sqlstate};
use crate::expr::{BinOp, Expr, Func};
use crate::plan::select::join_tree;
use crate::plan::{Access, PlanNode, Relation, SetFunc, Source};
use crate::values::datum::Datum;
use crate::values::types::SqlType;

/// A SELECT's FROM and WHERE, bound.
pub(crate) struct FromWhere {
    pub sources: Vec<Source>,
    /// The columns in scope: an enclosing query's first (marked `outer`), then the sources'.
    pub scope: Vec<ScopeColumn>,
    /// Conditions by level (see `SelectParts`).
    pub filters: Vec<Vec<Expr>>,
    pub after_join: Vec<Vec<Expr>>,
    /// The WHERE's subqueries as joins: each inner tree, and whether it is an anti join.
    pub semi_joins: Vec<(PlanNode, bool)>,
    /// WHERE conditions holding correlated subqueries: checked on the joined rows, where
    /// the executor can run them.
    pub post_filter: Vec<Expr>,
    /// Where the sources are joined in another order than FROM lists them (see
    /// `join_order`): for each FROM item, its source's position in `sources` (`SELECT *`
    /// shows their columns in FROM's order).
    pub from_order: Option<Vec<usize>>,
}

impl FromWhere {
    /// Where condition `c` is checked: at the level of the last source it reads (the first when
    /// it reads none, or only an enclosing query's columns); on a left join's level, after its
    /// NULLs. A WHERE condition (`after_outer_joins`) on sources a right or full join may
    /// give NULLs for is checked after that join's NULLs too.
    fn place(&mut self, c: Expr, after_outer_joins: bool) {
        let level = c.max_column().map_or(0, |col| {
            self.sources
                .iter()
                .rposition(|s| s.offset <= col)
                .unwrap_or(0)
        });
        let last_right = self.sources.iter().rposition(|s| s.right.is_some());
        if after_outer_joins && let Some(r) = last_right.filter(|&r| r >= level) {
            self.after_join[r].push(c);
            return;
        }
        if self.sources.get(level).is_some_and(|s| s.left) {
            self.after_join[level].push(c);
        } else {
            self.filters[level].push(c);
        }
    }

    /// The tree reading the sources, with the semi joins on top.
    fn into_tree(self) -> PlanNode {
        let mut node = join_tree(self.sources, self.filters, self.after_join, None);
        for (inner, anti) in self.semi_joins {
            node = PlanNode::SemiJoin {
                outer: Box::new(node),
                inner: Box::new(inner),
                anti,
            };
        }
        if !self.post_filter.is_empty() {
            node = PlanNode::Filter {
                input: Box::new(node),
                filter: self.post_filter,
            };
        }
        node
    }
}

/// A WHERE condition that becomes a semi or anti join: its subquery, the value `IN` compares
/// (none for `EXISTS`), and whether it is negated.
struct SemiCondition<'q> {
    select: &'q ast::Select,
    value: Option<&'q ast::Expr>,
    anti: bool,
}

/// `USING (name)`'s equality between the left side's column `name` (among the scope before
/// `right_start`) and the right side's, which it marks merged.
fn using_column(scope: &mut [ScopeColumn], right_start: usize, name: &str) -> Result<Expr> {
    let find = |range: std::ops::Range<usize>, side: &str| -> Result<usize> {
        let mut found = scope[range.clone()]
            .iter()
            .enumerate()
            .filter(|(_, c)| !c.outer && !c.merged && c.name == name)
            .map(|(i, _)| range.start + i);
        match (found.next(), found.next()) {
            (Some(i), None) => Ok(i),
            (Some(_), Some(_)) => Err(SqlError::new(
                sqlstate::AMBIGUOUS_COLUMN,
                format!("common column name \"{name}\" appears more than once in {side} table"),
            )),
            (None, _) => Err(SqlError::new(
                sqlstate::UNDEFINED_COLUMN,
                format!(
                    "column \"{name}\" specified in USING clause does not exist in {side} table"
                ),
            )),
        }
    };
    let left = find(0..right_start, "left")?;
    let right = find(right_start..scope.len(), "right")?;
    scope[right].merged = true;
    scope[left].using = true;
    Ok(Expr::Binary(
        BinOp::Eq,
        Box::new(Expr::Column(left)),
        Box::new(Expr::Column(right)),
    ))
}

/// A function's arguments, each an expression (no names, no `*`).
fn plain_args(args: &[ast::FunctionArg]) -> Result<Vec<ast::Expr>> {
    args.iter()
        .map(|a| match a {
            ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => Ok(e.clone()),
            other => Err(SqlError::unsupported(format!("argument {other}"))),
        })
        .collect()
}

/// Whether `e` holds a correlated subquery (which only the executor's Filter can run).
fn holds_subplan(e: &Expr) -> bool {
    let mut found = false;
    e.visit(&mut |x| found |= matches!(x, Expr::SubPlan(_)));
    found
}

/// The AND-ed conditions of `e`, parentheses removed.
fn and_chain<'a>(e: &'a ast::Expr, out: &mut Vec<&'a ast::Expr>) {
    let mut pending = vec![e];
    while let Some(x) = pending.pop() {
        match x {
            ast::Expr::BinaryOp {
                left,
                op: ast::BinaryOperator::And,
                right,
            } => {
                pending.push(right);
                pending.push(left);
            }
            ast::Expr::Nested(inner) => pending.push(inner),
            other => out.push(other),
        }
    }
}

/// The SELECT of `q` if a join can stand for it: no grouping, aggregates, limits or set
/// operations (which a join would change).
fn joinable(q: &ast::Query) -> Option<&ast::Select> {
    if q.with.is_some() || q.limit_clause.is_some() || q.fetch.is_some() {
        return None;
    }
    let SetExpr::Select(s) = q.body.as_ref() else {
        return None;
    };
    let grouped = match &s.group_by {
        ast::GroupByExpr::Expressions(e, _) => !e.is_empty(),
        ast::GroupByExpr::All(_) => true,
    };
    let aggregates = s.projection.iter().any(|item| match item {
        ast::SelectItem::UnnamedExpr(e) | ast::SelectItem::ExprWithAlias { expr: e, .. } => {
            has_aggregate(e)
        }
        _ => false,
    });
    let distinct_on = matches!(s.distinct, Some(ast::Distinct::On(_)));
    (!grouped && s.having.is_none() && !aggregates && !distinct_on && s.qualify.is_none())
        .then_some(s.as_ref())
}

/// `c` as a semi or anti join, if it is an `[NOT] EXISTS` or `[NOT] IN` of a joinable subquery.
fn semi_condition(c: &ast::Expr) -> Option<SemiCondition<'_>> {
    match c {
        ast::Expr::Exists { subquery, negated } => Some(SemiCondition {
            select: joinable(subquery)?,
            value: None,
            anti: *negated,
        }),
        ast::Expr::In {
            expr,
            target: ast::InTarget::Subquery(subquery),
            negated,
            ..
        } => {
            let select = joinable(subquery)?;
            // One column (a row value: one per item), each named by an expression.
            let named = |item: &ast::SelectItem| {
                matches!(
                    item,
                    ast::SelectItem::UnnamedExpr(_) | ast::SelectItem::ExprWithAlias { .. }
                )
            };
            let one = select.projection.len() == 1;
            if !select.projection.iter().all(named) || (!one && row_items(expr).is_none()) {
                return None;
            }
            Some(SemiCondition {
                select,
                value: Some(expr),
                anti: *negated,
            })
        }
        ast::Expr::UnaryOp {
            op: ast::UnaryOperator::Not,
            expr,
        } => {
            let inner = match expr.as_ref() {
                ast::Expr::Nested(e) => e.as_ref(),
                e => e,
            };
            let mut s = semi_condition(inner)?;
            s.anti = !s.anti;
            Some(s)
        }
        _ => None,
    }
}

impl Binder<'_> {
    /// Binds `select`'s FROM and WHERE inside a query whose columns are `outer` (none at the
    /// top), its sources joined in the order `join_order` chooses.
    pub(crate) fn bind_from_where(
        &mut self,
        select: &ast::Select,
        outer: &[ScopeColumn],
    ) -> Result<FromWhere> {
        let (init, work_tables) = (self.init.len(), self.work_tables);
        // `a RIGHT JOIN b` is joined as `b LEFT JOIN a`, its columns shown as written.
        if let Some((swapped, written_order)) = right_joins_as_left(select) {
            let mut fw = self.bind_from_where_as_written(&swapped, outer, false)?;
            fw.from_order = Some(written_order);
            return Ok(fw);
        }
        let written = self.bind_from_where_as_written(select, outer, false)?;
        let Some(order) = super::join_order::choose(select, &written.sources, &written.filters)
        else {
            return Ok(written);
        };
        // Bound again in that order: what the first binding planned is not the statement's.
        self.init.truncate(init);
        self.work_tables = work_tables;
        let mut reordered = select.clone();
        reordered.from = order.iter().map(|&i| select.from[i].clone()).collect();
        let mut fw = self.bind_from_where_as_written(&reordered, outer, true)?;
        let from_order = (0..order.len())
            .map(|p| order.iter().position(|&x| x == p).unwrap_or(p))
            .collect();
        fw.from_order = Some(from_order);
        Ok(fw)
    }

    /// Binds `select`'s FROM and WHERE with its sources joined in the order written (`reordered`:
    /// an order `join_order` chose).
    fn bind_from_where_as_written(
        &mut self,
        select: &ast::Select,
        outer: &[ScopeColumn],
        reordered: bool,
    ) -> Result<FromWhere> {
        let mut sources = Vec::new();
        let mut scope: Vec<ScopeColumn> = outer
            .iter()
            .map(|c| ScopeColumn {
                outer: true,
                ..c.clone()
            })
            .collect();
        // Inner joins' conditions (applied as WHERE's are), and left, right and full joins' with
        // their level.
        let mut on = Vec::new();
        let mut left_on = Vec::new();
        let mut right_on = Vec::new();
        // USING's equalities, bound already (with their left join's level, if one).
        let mut using: Vec<(Option<usize>, Expr)> = Vec::new();
        for twj in &select.from {
            self.add_source(&twj.relation, &mut sources, &mut scope)?;
            for join in &twj.joins {
                let (constraint, left, right) = match &join.join_operator {
                    JoinOperator::Join(c) | JoinOperator::Inner(c) => (c, false, false),
                    JoinOperator::CrossJoin(c) => (c, false, false),
                    JoinOperator::Left(c) | JoinOperator::LeftOuter(c) => (c, true, false),
                    // (A RIGHT JOIN written first was made a LEFT JOIN: `right_joins_as_left`.)
                    JoinOperator::Right(c) | JoinOperator::RightOuter(c) => (c, false, true),
                    JoinOperator::FullOuter(c) => (c, true, true),
                    other => return Err(SqlError::unsupported(join_kind(other))),
                };
                self.add_source(&join.relation, &mut sources, &mut scope)?;
                let level = sources.len() - 1;
                sources[level].left = left;
                if right {
                    sources[level].right = Some(Default::default());
                }
                match constraint {
                    JoinConstraint::On(e) if right => right_on.push((level, e)),
                    JoinConstraint::On(e) if left => left_on.push((level, e)),
                    JoinConstraint::None if right => {
                        return Err(SqlError::syntax("RIGHT or FULL JOIN without ON"));
                    }
                    JoinConstraint::Using(_) if right => {
                        return Err(SqlError::unsupported(
                            "FULL JOIN ... USING, or RIGHT JOIN ... USING after another join (write ON)",
                        ));
                    }
                    JoinConstraint::On(e) => on.push(e),
                    JoinConstraint::None if left => {
                        return Err(SqlError::syntax("LEFT JOIN without ON"));
                    }
                    JoinConstraint::None => {}
                    JoinConstraint::Using(names) => {
                        let right_start = sources[level].offset;
                        for name in names {
                            let name = object_name(name)?;
                            let equal = using_column(&mut scope, right_start, &name)?;
                            using.push((left.then_some(level), equal));
                        }
                    }
                    JoinConstraint::UsingAlias(..) => {
                        return Err(SqlError::unsupported("JOIN ... USING ... AS"));
                    }
                    JoinConstraint::Natural => return Err(SqlError::unsupported("NATURAL JOIN")),
                }
            }
        }
        let mut wheres = Vec::new();
        if let Some(w) = &select.selection {
            and_chain(w, &mut wheres);
        }
        // An IN whose subquery reads nothing of this query is a set made once and looked up
        // under each row (PostgreSQL's hashed subplan), not a join under each row.
        let mut semis = Vec::new();
        let mut plain = Vec::new();
        for c in wheres {
            match semi_condition(c) {
                // (A row value's is a join always: the set made once holds single values.)
                Some(s)
                    if s.value.is_none_or(|v| row_items(v).is_some()) || !self.reads_alone(c) =>
                {
                    semis.push((c, Some(s)))
                }
                _ => plain.push(c),
            }
        }
        let mut conditions = Vec::new();
        // Beside a right or full join, an inner join's conditions hold where it is written (they
        // choose the rows the outer join matches), and WHERE's after it (see `place`).
        let outer_joined = sources.iter().any(|s| s.right.is_some());
        let mut inner_on = Vec::new();
        let per_row = std::mem::replace(&mut self.per_row_ok, true);
        for e in &on {
            let bound = self.folded(e, &scope, &mut None)?.0;
            conjuncts(
                bound,
                if outer_joined {
                    &mut inner_on
                } else {
                    &mut conditions
                },
            );
        }
        for e in plain {
            let bound = self.folded(e, &scope, &mut None);
            conjuncts(bound?.0, &mut conditions);
        }
        self.per_row_ok = per_row;
        let mut using_left = Vec::new();
        for (level, equal) in using {
            match level {
                Some(level) => using_left.push((level, equal)),
                None => conditions.push(equal),
            }
        }
        let ranges: Vec<_> = sources
            .iter()
            .map(|s| s.offset..s.offset + s.width)
            .collect();
        factor_common(&mut conditions, &ranges);
        implied_equalities(&mut conditions, &scope);
        implied_restrictions(&mut conditions, &ranges);
        order_conditions(&mut conditions);
        let (post_filter, conditions): (Vec<Expr>, Vec<Expr>) =
            conditions.into_iter().partition(holds_subplan);
        let levels = sources.len().max(1);
        let mut fw = FromWhere {
            sources,
            scope,
            filters: (0..levels).map(|_| Vec::new()).collect(),
            after_join: (0..levels).map(|_| Vec::new()).collect(),
            semi_joins: Vec::new(),
            post_filter,
            from_order: None,
        };
        for c in conditions {
            fw.place(c, true);
        }
        for c in inner_on {
            if holds_subplan(&c) {
                return Err(SqlError::unsupported(
                    "a subquery in a JOIN's ON beside a RIGHT or FULL JOIN",
                ));
            }
            fw.place(c, false);
        }
        // A right or full join's ON conditions are checked between each outer row and each of
        // its rows (read once: see `exec::select::right_join`).
        for (level, e) in right_on {
            let (bound, _) = self.folded(e, &fw.scope, &mut None)?;
            let mut mine = Vec::new();
            conjuncts(bound, &mut mine);
            if mine.iter().any(holds_subplan) {
                return Err(SqlError::unsupported(
                    "a subquery in a RIGHT or FULL JOIN's ON",
                ));
            }
            if fw.sources[level].left {
                full_join_condition(&mine, &fw.sources, level)?;
            }
            order_conditions(&mut mine);
            let s = &fw.sources[level];
            let keys =
                hash_keys(s.offset..s.offset + s.width, &mine, &fw.scope).unwrap_or_default();
            fw.sources[level].right = Some(crate::plan::RightJoinOn { on: mine, keys });
        }
        // A left join's ON conditions choose the rows it joins: checked in its scan, however
        // few of its columns they read.
        for (level, e) in left_on {
            let (bound, _) = self.folded(e, &fw.scope, &mut None)?;
            let mut mine = Vec::new();
            conjuncts(bound, &mut mine);
            order_conditions(&mut mine);
            fw.filters[level].extend(mine);
        }
        for (level, equal) in using_left {
            fw.filters[level].push(equal);
        }
        for (s, f) in fw.sources.iter_mut().zip(&fw.filters) {
            if let Relation::Table(t) = &s.relation {
                s.access = choose_access(t, s.offset, f);
            }
            // A source read in full under each row before it, with no index for the join (or
            // one pinning fewer of its columns than the join's equalities do): read once into
            // a hash table instead.
            let (pinned, lookup) = match &s.access {
                Access::Scan => (Some(0), None),
                // Only in a FROM list joined in a chosen order (a query over many rows, as
                // far as the planner can tell): elsewhere the index serves a lookup best,
                // unless the run finds it reads much of the table each time (`hash_fallback`).
                Access::Range {
                    eq,
                    lower: None,
                    upper: None,
                    ..
                } => (reordered.then_some(eq.len()), Some(eq.len())),
                // A lookup by primary key under each row before it: many of them cost more
                // than reading the table once (`hash_fallback` too).
                Access::Key(es) if es.iter().any(|e| e.max_column().is_some()) => {
                    (None, Some(es.len()))
                }
                Access::Keys(lists) if lists.iter().flatten().any(|e| e.max_column().is_some()) => {
                    (None, Some(0))
                }
                _ => (None, None),
            };
            if !matches!(s.relation, Relation::Table(_) | Relation::Subquery(_)) {
                continue;
            }
            let keys = hash_keys(s.offset..s.offset + s.width, f, &fw.scope);
            match (keys, pinned, lookup) {
                (Some(keys), Some(pinned), _) if keys.len() > pinned => {
                    s.access = Access::Hash(keys);
                }
                // Its probes would find no more rows than the lookups: the table's own
                // conditions (the range's constants among them) apply as it is built.
                (Some(keys), None, Some(_)) => s.hash_fallback = Some(keys),
                _ => {}
            }
        }
        for (_, semi) in semis {
            let semi = semi.expect("partitioned on it");
            let join = self.semi_join(&semi, &fw.scope)?;
            fw.semi_joins.push(join);
        }
        Ok(fw)
    }

    /// Whether `c`, an `[NOT] x IN (subquery)`, has a subquery that reads nothing of the
    /// query around it (it binds alone).
    fn reads_alone(&mut self, c: &ast::Expr) -> bool {
        let query = match c {
            ast::Expr::In {
                target: ast::InTarget::Subquery(q),
                ..
            } => q,
            ast::Expr::UnaryOp { expr, .. } => {
                let inner = match expr.as_ref() {
                    ast::Expr::Nested(e) => e.as_ref(),
                    e => e,
                };
                return self.reads_alone(inner);
            }
            _ => return false,
        };
        let (init, work_tables) = (self.init.len(), self.work_tables);
        let alone = self.select(query).is_ok();
        // Only a look: the condition is bound where it is used.
        self.init.truncate(init);
        self.work_tables = work_tables;
        alone
    }

    /// A subquery condition of the WHERE as a join under the outer row (whose columns are
    /// `scope`): `EXISTS` finds any row; `x IN (SELECT y ...)` one where `x = y`; `x NOT IN`
    /// is an anti join on `x = y` being true or NULL (a NULL on either side keeps it from being
    /// true, as PostgreSQL's NOT IN does).
    fn semi_join(
        &mut self,
        semi: &SemiCondition<'_>,
        scope: &[ScopeColumn],
    ) -> Result<(PlanNode, bool)> {
        self.nested_query(|b| b.semi_join_nested(semi, scope))
    }

    fn semi_join_nested(
        &mut self,
        semi: &SemiCondition<'_>,
        scope: &[ScopeColumn],
    ) -> Result<(PlanNode, bool)> {
        let mut inner = self.bind_from_where(semi.select, scope)?;
        if let Some(value) = semi.value {
            // `x IN (SELECT y ...)`: `x = y`; `(a, b) IN (SELECT x, y ...)`: `a = x AND b = y`
            // (NULL where no pair is unequal and one is NULL, as PostgreSQL's row equality).
            let values = row_items(value).unwrap_or(std::slice::from_ref(value));
            let items = &semi.select.projection;
            if values.len() != items.len() {
                let few = values.len() > items.len();
                return Err(SqlError::syntax(format!(
                    "subquery has too {} columns",
                    if few { "few" } else { "many" }
                )));
            }
            let mut equal = None;
            for (value, item) in values.iter().zip(items) {
                let (x, _) = self.folded(value, scope, &mut None)?;
                let item = match item {
                    ast::SelectItem::UnnamedExpr(e)
                    | ast::SelectItem::ExprWithAlias { expr: e, .. } => e,
                    _ => unreachable!("checked by semi_condition"),
                };
                let (y, _) = self.folded(item, &inner.scope, &mut None)?;
                let pair = Expr::Binary(BinOp::Eq, Box::new(x), Box::new(y));
                equal = Some(match equal {
                    None => pair,
                    Some(e) => Expr::Binary(BinOp::And, Box::new(e), Box::new(pair)),
                });
            }
            let equal = equal.expect("a subquery has a column");
            if semi.anti {
                let condition = Expr::Func(
                    Func::Coalesce,
                    vec![equal, Expr::Literal(Datum::Bool(true))],
                );
                inner.place(condition, true);
            } else {
                // Each pair on its own, for the accesses they allow.
                let mut pairs = Vec::new();
                conjuncts(equal, &mut pairs);
                for pair in pairs {
                    inner.place(pair, true);
                }
            }
            // The new condition may give a source a better access.
            for (s, f) in inner.sources.iter_mut().zip(&inner.filters) {
                if let Relation::Table(t) = &s.relation {
                    s.access = choose_access(t, s.offset, f);
                }
            }
        }
        Ok((inner.into_tree(), semi.anti))
    }

    /// A set-returning function in FROM: one column, named by the alias's column list, or the
    /// alias, or the function.
    fn add_function(
        &mut self,
        (func, args, ordinality): (SetFunc, &[ast::Expr], bool),
        alias: Option<&ast::TableAlias>,
        sources: &mut Vec<Source>,
        scope: &mut Vec<ScopeColumn>,
    ) -> Result<()> {
        let (args, ty) = self.set_function(func, args, scope)?;
        let table = alias.map_or_else(|| func.name().to_owned(), |a| ident(&a.name));
        let renamed = |i: usize| alias.and_then(|a| a.columns.get(i).map(|c| ident(&c.name)));
        let column = renamed(0)
            .or_else(|| alias.map(|a| ident(&a.name)))
            .unwrap_or_else(|| func.name().to_owned());
        let offset = scope.len();
        let mut columns = vec![(column, ty)];
        if ordinality {
            let name = renamed(1).unwrap_or_else(|| "ordinality".to_owned());
            columns.push((name, SqlType::Int8));
        }
        let width = columns.len();
        for (name, ty) in columns {
            scope.push(ScopeColumn {
                table: table.clone(),
                name,
                ty,
                outer: false,
                merged: false,
                using: false,
                system: false,
            });
        }
        sources.push(Source {
            hash_fallback: None,
            needed: None,
            relation: Relation::Function {
                func,
                args,
                ordinality,
            },
            name: table,
            offset,
            width,
            access: Access::Scan,
            left: false,
            right: None,
        });
        Ok(())
    }

    /// A subquery in FROM: its rows under `alias` (which PostgreSQL 15 requires), its columns
    /// renamed by the alias's column list.
    fn add_derived(
        &mut self,
        subquery: &ast::Query,
        alias: Option<&ast::TableAlias>,
        sources: &mut Vec<Source>,
        scope: &mut Vec<ScopeColumn>,
    ) -> Result<()> {
        let Some(alias) = alias else {
            return Err(SqlError::syntax("subquery in FROM must have an alias"));
        };
        let (plan, columns) = self.select(subquery)?;
        let shown = ident(&alias.name);
        let renamed: Vec<String> = alias.columns.iter().map(|c| ident(&c.name)).collect();
        if renamed.len() > columns.len() {
            return Err(SqlError::new(
                sqlstate::INVALID_COLUMN_REFERENCE,
                format!(
                    "table \"{shown}\" has {} columns available but {} columns specified",
                    columns.len(),
                    renamed.len()
                ),
            ));
        }
        let offset = scope.len();
        for (i, c) in columns.iter().enumerate() {
            scope.push(ScopeColumn {
                table: shown.clone(),
                name: renamed.get(i).cloned().unwrap_or_else(|| c.name.clone()),
                ty: c.ty,
                outer: false,
                merged: false,
                using: false,
                system: false,
            });
        }
        sources.push(Source {
            hash_fallback: None,
            needed: None,
            relation: Relation::Subquery(Arc::new(plan)),
            name: shown,
            offset,
            width: columns.len(),
            access: Access::Scan,
            left: false,
            right: None,
        });
        Ok(())
    }

    fn add_source(
        &mut self,
        factor: &TableFactor,
        sources: &mut Vec<Source>,
        scope: &mut Vec<ScopeColumn>,
    ) -> Result<()> {
        let (name, alias, args) = match factor {
            TableFactor::Table {
                name,
                alias,
                args: Some(args),
                with_ordinality,
                ..
            } => {
                let args = plain_args(&args.args)?;
                let func = SetFunc::named(&object_name(name)?)
                    .ok_or_else(|| SqlError::unsupported(format!("table function {name}")))?;
                let call = (func, &args[..], *with_ordinality);
                return self.add_function(call, alias.as_ref(), sources, scope);
            }
            TableFactor::Table {
                name, alias, args, ..
            } => (name, alias, args),
            TableFactor::Derived {
                lateral: false,
                subquery,
                alias,
                ..
            } => return self.add_derived(subquery, alias.as_ref(), sources, scope),
            TableFactor::Derived { lateral: true, .. } => {
                return Err(SqlError::unsupported("LATERAL"));
            }
            TableFactor::UNNEST {
                alias,
                array_exprs,
                with_offset: false,
                with_ordinality,
                ..
            } if array_exprs.len() == 1 => {
                let call = (SetFunc::Unnest, &array_exprs[..], *with_ordinality);
                return self.add_function(call, alias.as_ref(), sources, scope);
            }
            TableFactor::Function {
                name,
                args,
                with_ordinality,
                alias,
                ..
            } => {
                let args = plain_args(args)?;
                let func = SetFunc::named(&object_name(name)?)
                    .ok_or_else(|| SqlError::unsupported(format!("table function {name}")))?;
                let call = (func, &args[..], *with_ordinality);
                return self.add_function(call, alias.as_ref(), sources, scope);
            }
            other => return Err(SqlError::unsupported(format!("FROM {other}"))),
        };
        if args.is_some() {
            return Err(SqlError::unsupported(format!("table function {name}")));
        }
        let offset = scope.len();
        // A WITH query's name hides a table's.
        if args.is_none()
            && let Some(cte) = self.cte(name)
        {
            let shown = alias
                .as_ref()
                .map_or_else(|| cte.name.clone(), |a| ident(&a.name));
            let renames: Vec<String> = alias
                .iter()
                .flat_map(|a| a.columns.iter().map(|c| ident(&c.name)))
                .collect();
            for (i, c) in cte.columns.iter().enumerate() {
                scope.push(ScopeColumn {
                    table: shown.clone(),
                    name: renames.get(i).cloned().unwrap_or_else(|| c.name.clone()),
                    ty: c.ty,
                    outer: false,
                    merged: false,
                    using: false,
                    system: false,
                });
            }
            sources.push(Source {
                hash_fallback: None,
                needed: None,
                relation: cte.relation.relation(),
                name: shown,
                offset,
                width: cte.columns.len(),
                access: Access::Scan,
                left: false,
                right: None,
            });
            return Ok(());
        }
        let relation = match self.system_relation(name)? {
            Some(system) => {
                let shown = alias
                    .as_ref()
                    .map_or_else(|| system.name.to_owned(), |a| ident(&a.name));
                scope.extend(system.columns.iter().map(|(c, ty)| ScopeColumn {
                    table: shown.clone(),
                    name: (*c).to_owned(),
                    ty: *ty,
                    outer: false,
                    merged: false,
                    using: false,
                    system: false,
                }));
                if system.name == "pg_settings" {
                    self.reads_settings = true;
                    (Relation::Settings, shown)
                } else if system.name == "overtake_stat_classes" {
                    (Relation::Classes, shown)
                } else {
                    let rows = system.rows(self.snapshot()?);
                    let relation = system.name.to_owned();
                    (Relation::Rows { relation, rows }, shown)
                }
            }
            None => {
                let table: Arc<SqlTable> = self.tables.table(&object_name(name)?)?;
                let shown = alias
                    .as_ref()
                    .map_or_else(|| table.name.clone(), |a| ident(&a.name));
                scope.extend(row_scope(&table, &shown));
                if let Some(view) = &table.view {
                    let plan = self.view_query(&table, view)?;
                    (Relation::Subquery(Arc::new(plan)), shown)
                } else {
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
            }
        };
        sources.push(Source {
            hash_fallback: None,
            needed: None,
            relation: relation.0,
            name: relation.1,
            offset,
            width: scope.len() - offset,
            access: Access::Scan,
            left: false,
            right: None,
        });
        Ok(())
    }
}

/// `select` with each `a RIGHT JOIN b ON c` that starts a FROM item written `b LEFT JOIN a ON
/// c` (the same rows), and for each source in the order written, its position in the order
/// joined; `None` if there is no such RIGHT JOIN. A RIGHT JOIN after another join (whose left
/// side is itself a join) stays one (see `PlanNode::NestedLoop`).
fn right_joins_as_left(select: &ast::Select) -> Option<(ast::Select, Vec<usize>)> {
    let right = |j: &ast::Join| {
        matches!(
            j.join_operator,
            JoinOperator::Right(_) | JoinOperator::RightOuter(_)
        )
    };
    if !select
        .from
        .iter()
        .any(|t| t.joins.first().is_some_and(right))
    {
        return None;
    }
    let mut swapped = select.clone();
    let mut order = Vec::new();
    for twj in &mut swapped.from {
        let at = order.len();
        order.extend(at..at + 1 + twj.joins.len());
        let Some(first) = twj.joins.first_mut().filter(|j| right(j)) else {
            continue;
        };
        let constraint = match &first.join_operator {
            JoinOperator::Right(c) | JoinOperator::RightOuter(c) => c.clone(),
            _ => continue,
        };
        std::mem::swap(&mut twj.relation, &mut first.relation);
        first.join_operator = JoinOperator::LeftOuter(constraint);
        order.swap(at, at + 1);
    }
    Some((swapped, order))
}

/// PostgreSQL's refusal of a FULL JOIN it cannot run as a merge or hash join: one whose ON
/// `conditions` hold no equality of an expression of the left side's columns with one of the
/// right side's (source `level`'s), yet compare columns otherwise (`a.k < b.k`, `a.id > 1`,
/// an OR). An enclosing query's columns count as constants.
fn full_join_condition(conditions: &[Expr], sources: &[Source], level: usize) -> Result<()> {
    let first = sources[0].offset;
    let inner = sources[level].offset..sources[level].offset + sources[level].width;
    // Which sides an expression reads: (left, right).
    let sides = |e: &Expr| {
        let (mut left, mut right) = (false, false);
        e.visit(&mut |x| {
            if let Expr::Column(c) = x {
                left |= (first..inner.start).contains(c);
                right |= inner.contains(c);
            }
        });
        (left, right)
    };
    let joins_by_equality = conditions.iter().any(|c| match c {
        Expr::Binary(BinOp::Eq, l, r) => matches!(
            (sides(l), sides(r)),
            ((true, false), (false, true)) | ((false, true), (true, false))
        ),
        _ => false,
    });
    let compares_otherwise = conditions
        .iter()
        .any(|c| !matches!(c, Expr::Binary(BinOp::Eq, ..)) && sides(c) != (false, false));
    if !joins_by_equality && compares_otherwise {
        return Err(SqlError::new(
            sqlstate::FEATURE_NOT_SUPPORTED,
            "FULL JOIN is only supported with merge-joinable or hash-joinable join conditions",
        ));
    }
    Ok(())
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
