//! Running a SELECT's plan tree: rows are pushed from the leaves up, each node handing each of
//! its rows to its parent's sink as soon as it has it, so a SELECT that neither groups nor sorts
//! holds nothing but the row in hand and its first rows leave before the scan ends. Aggregate
//! and Sort hold rows (and Distinct the keys it has seen) against the statement's memory budget
//! (`Context::memory`). A sink answering `false` stops the nodes under it: a LIMIT that has its
//! rows ends the scan.
//!
//! Scans are in `scan`, hash joins in `hash_join`, right and full joins in `right_join`, window
//! functions in `window`, set operations and recursive queries in `set_ops`.
//!
//! Nothing here blocks a worker: lock waits of `FOR UPDATE` park the task.

use std::cmp::Ordering;
use std::collections::HashMap;

use rustc_hash::FxHashMap;

use overtake_engine::Transaction;

use super::aggregate::AggState;
use crate::error::{Result, SqlError, sqlstate};
use crate::expr::{Context, Expr};
use crate::plan::{InitKind, InitPlan, PlanNode, Relation, SelectPlan, SortKey, Source};
use crate::values::datum::{Datum, row_bytes};
use crate::values::key::{Key, KeyMap, KeySet};
use crate::values::types::SqlType;

/// Memory a statement holds for its sorts, groups and DISTINCT, against its budget
/// (`Context::memory`): past it the statement fails with 53200, rather than the server growing
/// without bound (nothing spills to disk here).
struct Budget {
    held: usize,
    limit: usize,
}

impl Budget {
    fn take(&mut self, bytes: usize) -> Result<()> {
        self.held += bytes;
        if self.held > self.limit {
            return Err(SqlError::new(
                sqlstate::OUT_OF_MEMORY,
                "out of memory",
            )
            .with_detail(format!(
                "The statement's sorts, groups and DISTINCT need more than statement_mem ({} kB).",
                self.limit / 1024
            )));
        }
        Ok(())
    }
}

mod hash_join;
mod right_join;
mod row_store;
mod scan;
mod set_ops;
mod window;
use hash_join::Hashed;
use set_ops::{recursive_union, set_operation};

/// What every node of one run shares.
struct Run<'a, 't, 'c> {
    txn: &'a mut Transaction<'t>,
    cx: &'a Context<'c>,
    budget: Budget,
    /// The rows of each derived table, made the first time it is scanned (it reads nothing
    /// of the rows around it, so once per run).
    derived: HashMap<*const SelectPlan, std::rc::Rc<Vec<Vec<Datum>>>>,
    /// The statement's subqueries, which `Expr::SubPlan`s name.
    subqueries: &'a [InitPlan],
    /// The rows each recursive WITH query's last round made (`Relation::WorkTable`).
    work_tables: HashMap<usize, std::rc::Rc<Vec<Vec<Datum>>>>,
    /// The hash table of each hash join's source, built the first time it is read (see
    /// `hash_join`).
    hashed: FxHashMap<*const Source, std::rc::Rc<Hashed>>,
    /// The key a hash join probes with, kept between probes so none allocates.
    probe: Vec<Datum>,
    /// What the lookups of each source that may turn into a hash join read so far.
    lookups: FxHashMap<*const Source, scan::Lookups>,
    /// How many rows the next table scan is likely to be asked for: set by a LIMIT over that
    /// scan alone, so that it reads that many first rather than its whole range (see
    /// `scan::scan`).
    first_rows: Option<usize>,
}

/// Where a node sends each of its rows (which the sink may take); `false`: send no more.
type Sink<'s> =
    dyn for<'a, 't, 'c> FnMut(&mut Run<'a, 't, 'c>, &mut Vec<Datum>) -> Result<bool> + 's;

/// Runs a SELECT, returning its rows.
pub fn select(
    txn: &mut Transaction<'_>,
    plan: &SelectPlan,
    cx: &Context<'_>,
) -> Result<Vec<Vec<Datum>>> {
    select_first(txn, (plan, &plan.init), cx, usize::MAX)
}

/// The first `n` rows of a SELECT's result (it stops reading once it has them), given the
/// statement's subqueries (its top plan's `init`), which its correlated ones are.
pub fn select_first(
    txn: &mut Transaction<'_>,
    (plan, subqueries): (&SelectPlan, &[InitPlan]),
    cx: &Context<'_>,
    n: usize,
) -> Result<Vec<Vec<Datum>>> {
    let mut rows = Vec::new();
    if n > 0 {
        run_select(txn, (plan, subqueries), cx, &mut |r| {
            rows.push(r);
            Ok(rows.len() < n)
        })?;
    }
    Ok(rows)
}

/// Runs a SELECT, passing each row of its result to `emit` as soon as it is known: as the scan
/// finds it when nothing reorders or groups rows, else after the sort or grouping. Returns how
/// many rows it passed.
pub fn select_each(
    txn: &mut Transaction<'_>,
    plan: &SelectPlan,
    cx: &Context<'_>,
    emit: &mut dyn FnMut(Vec<Datum>) -> Result<()>,
) -> Result<u64> {
    let mut sent = 0;
    run_select(txn, (plan, &plan.init), cx, &mut |r| {
        emit(r)?;
        sent += 1;
        Ok(true)
    })?;
    Ok(sent)
}

/// Runs `plan`, passing its rows to `emit` until it answers `false`.
fn run_select(
    txn: &mut Transaction<'_>,
    (plan, subqueries): (&SelectPlan, &[InitPlan]),
    cx: &Context<'_>,
    emit: &mut dyn FnMut(Vec<Datum>) -> Result<bool>,
) -> Result<()> {
    let mut run = Run {
        txn,
        cx,
        budget: Budget {
            held: 0,
            limit: cx.memory,
        },
        derived: HashMap::new(),
        subqueries,
        work_tables: HashMap::new(),
        hashed: FxHashMap::default(),
        probe: Vec::new(),
        lookups: FxHashMap::default(),
        first_rows: None,
    };
    let visible = plan.visible;
    node(&plan.root, &mut run, &mut Vec::new(), &mut |_, r| {
        let mut out = std::mem::take(r);
        out.truncate(visible);
        emit(out)
    })?;
    Ok(())
}

/// The correlated subqueries `exprs` hold (`Expr::SubPlan`), each once.
fn subplans_in(exprs: &[Expr]) -> Vec<usize> {
    let mut ids = Vec::new();
    for e in exprs {
        e.visit(&mut |x| {
            if let Expr::SubPlan(id) = x
                && !ids.contains(id)
            {
                ids.push(*id);
            }
        });
    }
    ids
}

/// The values of correlated subqueries `ids` under `row`: each run with the row as its outer
/// row (a scalar subquery's one value, NULL for none, 21000 for more; whether an EXISTS finds
/// a row).
fn per_row_values(
    run: &mut Run<'_, '_, '_>,
    ids: &[usize],
    row: &[Datum],
) -> Result<Vec<(usize, Datum)>> {
    let mut values = Vec::with_capacity(ids.len());
    for &id in ids {
        let sub = &run.subqueries[id];
        let limit = match sub.kind {
            InitKind::Exists => 1,
            InitKind::Array | InitKind::In => usize::MAX,
            InitKind::Scalar => 2,
        };
        let visible = sub.plan.visible;
        let mut rows: Vec<Vec<Datum>> = Vec::new();
        let mut under = row[..sub.outer_width.min(row.len())].to_vec();
        node(&sub.plan.root, run, &mut under, &mut |_, r| {
            let mut out = std::mem::take(r);
            out.truncate(visible);
            rows.push(out);
            Ok(rows.len() < limit)
        })?;
        let value = match sub.kind {
            InitKind::Exists => Datum::Bool(!rows.is_empty()),
            InitKind::Array => Datum::Array(
                rows.into_iter()
                    .filter_map(|r| r.into_iter().next())
                    .collect(),
            ),
            _ if rows.len() > 1 => {
                return Err(SqlError::new(
                    sqlstate::CARDINALITY_VIOLATION,
                    "more than one row returned by a subquery used as an expression",
                ));
            }
            _ => rows
                .into_iter()
                .next()
                .and_then(|r| r.into_iter().next())
                .unwrap_or(Datum::Null),
        };
        values.push((id, value));
    }
    Ok(values)
}

/// The rows of derived table `plan`, made the first time the run reads it.
fn derived_rows(
    run: &mut Run<'_, '_, '_>,
    plan: &SelectPlan,
) -> Result<std::rc::Rc<Vec<Vec<Datum>>>> {
    let key: *const SelectPlan = plan;
    if let Some(rows) = run.derived.get(&key) {
        return Ok(std::rc::Rc::clone(rows));
    }
    let rows = select_first(run.txn, (plan, run.subqueries), run.cx, usize::MAX)?;
    let rows = std::rc::Rc::new(rows);
    run.budget.take(rows.iter().map(|r| row_bytes(r)).sum())?;
    run.derived.insert(key, std::rc::Rc::clone(&rows));
    Ok(rows)
}

/// Whether every one of `filter` holds on `row`.
fn all_hold(filter: &[Expr], row: &[Datum], cx: &Context<'_>) -> Result<bool> {
    for f in filter {
        if !f.holds(row, cx)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The rows made at planning that pass `filter`, each appended to the joined row `row`.
fn rows_node(
    rows: &[Vec<Datum>],
    filter: &[Expr],
    run: &mut Run<'_, '_, '_>,
    row: &mut Vec<Datum>,
    sink: &mut Sink<'_>,
) -> Result<bool> {
    let outer = row.len();
    'rows: for r in rows {
        row.truncate(outer);
        row.extend_from_slice(r);
        for f in filter {
            if !f.holds(row, run.cx)? {
                continue 'rows;
            }
        }
        if !sink(run, row)? {
            row.truncate(outer);
            return Ok(false);
        }
    }
    row.truncate(outer);
    Ok(true)
}

/// Runs `plan` under the joined row `row` (empty but for a join's inner side, where it holds
/// the outer row), sending its rows to `sink`; `false` if the sink wanted no more.
fn node(
    plan: &PlanNode,
    run: &mut Run<'_, '_, '_>,
    row: &mut Vec<Datum>,
    sink: &mut Sink<'_>,
) -> Result<bool> {
    // Subqueries and derived tables nest plans: 54001 rather than overflow the task's stack.
    crate::depth::check(0)?;
    match plan {
        PlanNode::Result { filter } => {
            for f in filter {
                if !f.holds(row, run.cx)? {
                    return Ok(true);
                }
            }
            sink(run, row)
        }
        PlanNode::Scan {
            source,
            filter,
            lock,
        } => scan::scan(source, filter, lock.as_ref(), run, row, sink),
        PlanNode::NestedLoop {
            outer,
            inner,
            left,
            right: Some(on),
            filter,
        } => {
            let join = right_join::RightJoin {
                outer,
                inner,
                left: *left,
                on,
                filter,
            };
            right_join::right_join(&join, run, row, sink)
        }
        PlanNode::NestedLoop {
            outer,
            inner,
            left,
            right: None,
            filter,
        } => node(outer, run, row, &mut |run, r| {
            // Each inner read may find a row or two: the join checks between them.
            run.cx.check_cancel()?;
            let mut matched = false;
            let go_on = node(inner, run, r, &mut |run, joined| {
                matched = true;
                if all_hold(filter, joined, run.cx)? {
                    sink(run, joined)
                } else {
                    Ok(true)
                }
            })?;
            match left {
                Some(width) if go_on && !matched => {
                    let outer_len = r.len();
                    r.extend(std::iter::repeat_n(Datum::Null, *width));
                    let go_on = if all_hold(filter, r, run.cx)? {
                        sink(run, r)?
                    } else {
                        true
                    };
                    r.truncate(outer_len);
                    Ok(go_on)
                }
                _ => Ok(go_on),
            }
        }),
        PlanNode::SemiJoin { outer, inner, anti } => node(outer, run, row, &mut |run, r| {
            run.cx.check_cancel()?;
            let width = r.len();
            let mut found = false;
            // The first row the inner side finds decides: it stops there.
            node(inner, run, r, &mut |_, _| {
                found = true;
                Ok(false)
            })?;
            r.truncate(width);
            if found != *anti {
                sink(run, r)
            } else {
                Ok(true)
            }
        }),
        PlanNode::Aggregate { input, aggregate } => {
            let calls = &aggregate.calls;
            // Groups in the order they were first seen; without GROUP BY, one group and no
            // hashing.
            let mut groups: Vec<Vec<AggState>> = Vec::new();
            let mut index: KeyMap<usize> = KeyMap::default();
            let grouped = !aggregate.group_by.is_empty();
            // A row's group key is made in one vector kept between rows: only a new group's
            // key is a new allocation.
            let mut probe: Vec<Datum> = Vec::new();
            node(input, run, row, &mut |run, r| {
                let g = if grouped {
                    probe.clear();
                    for e in &aggregate.group_by {
                        probe.push(e.eval(r, run.cx)?);
                    }
                    let key = Key(std::mem::take(&mut probe));
                    match index.get(&key) {
                        Some(&g) => {
                            probe = key.into_values();
                            g
                        }
                        None => {
                            run.budget.take(
                                row_bytes(&key.0)
                                    + calls.len() * std::mem::size_of::<AggState>()
                                    + 64,
                            )?;
                            groups.push(calls.iter().map(AggState::new).collect());
                            index.insert(key, groups.len() - 1);
                            groups.len() - 1
                        }
                    }
                } else {
                    if groups.is_empty() {
                        groups.push(calls.iter().map(AggState::new).collect());
                    }
                    0
                };
                for (state, call) in groups[g].iter_mut().zip(calls) {
                    let more = state.add(call, r, run.cx)?;
                    if more > 0 {
                        run.budget.take(more)?;
                    }
                }
                Ok(true)
            })?;
            if groups.is_empty() && !grouped {
                groups.push(calls.iter().map(AggState::new).collect());
            }
            let mut keys: Vec<Vec<Datum>> = vec![Vec::new(); groups.len()];
            for (key, g) in index {
                keys[g] = key.into_values();
            }
            for (key, states) in keys.into_iter().zip(groups) {
                let mut r = key;
                for (state, call) in states.into_iter().zip(calls) {
                    r.push(state.finish(call)?);
                }
                if let Some(h) = &aggregate.having
                    && !h.holds(&r, run.cx)?
                {
                    continue;
                }
                if !sink(run, &mut r)? {
                    return Ok(false);
                }
            }
            Ok(true)
        }
        PlanNode::Project { input, exprs } => {
            let subs = subplans_in(exprs);
            node(input, run, row, &mut |run, r| {
                let mut out = if subs.is_empty() {
                    eval_all(exprs, r, run.cx)?
                } else {
                    let values = per_row_values(run, &subs, r)?;
                    eval_all(exprs, r, &run.cx.with_per_row(&values))?
                };
                sink(run, &mut out)
            })
        }
        PlanNode::RecursiveUnion {
            anchor,
            recursive,
            id,
            all,
            types,
        } => recursive_union(run, row, (anchor, recursive), (*id, *all), types, sink),
        PlanNode::Values { rows, types } => {
            for r in rows {
                let mut out = r
                    .iter()
                    .zip(types)
                    .map(|(e, ty)| e.eval(row, run.cx)?.cast(*ty))
                    .collect::<Result<Vec<_>>>()?;
                if !sink(run, &mut out)? {
                    return Ok(false);
                }
            }
            Ok(true)
        }
        PlanNode::SetOp {
            left,
            right,
            op,
            all,
            types,
        } => set_operation(run, (left, right), (*op, *all), types, sink),
        PlanNode::ProjectSet {
            input,
            exprs,
            functions,
        } => node(input, run, row, &mut |run, r| {
            let mut made = Vec::with_capacity(functions.len());
            for (_, func, args) in functions {
                let values = eval_all(args, r, run.cx)?;
                let budget = &mut run.budget;
                made.push(super::set_functions::values(*func, values, &mut |n| {
                    budget.take(n)
                })?);
            }
            let rows = made.iter().map(Vec::len).max().unwrap_or(0);
            let base = eval_all(exprs, r, run.cx)?;
            for i in 0..rows {
                let mut out = base.clone();
                for ((at, _, _), values) in functions.iter().zip(&made) {
                    out[*at] = values.get(i).cloned().unwrap_or(Datum::Null);
                }
                if !sink(run, &mut out)? {
                    return Ok(false);
                }
            }
            Ok(true)
        }),
        PlanNode::Filter { input, filter } => {
            let subs = subplans_in(filter);
            node(input, run, row, &mut |run, r| {
                let values = per_row_values(run, &subs, r)?;
                if all_hold(filter, r, &run.cx.with_per_row(&values))? {
                    sink(run, r)
                } else {
                    Ok(true)
                }
            })
        }
        PlanNode::DistinctOn { input, keys } => {
            let mut seen = KeySet::default();
            node(input, run, row, &mut |run, r| {
                let key = Key(keys.iter().map(|&k| r[k].clone()).collect());
                if seen.contains(&key) {
                    return Ok(true);
                }
                run.budget.take(row_bytes(&key.0) + 32)?;
                seen.insert(key);
                sink(run, r)
            })
        }
        PlanNode::Distinct { input, columns } => {
            let mut seen = KeySet::default();
            node(input, run, row, &mut |run, r| {
                let key = Key(r[..*columns].to_vec());
                if seen.contains(&key) {
                    return Ok(true);
                }
                run.budget.take(row_bytes(&key.0) + 32)?;
                seen.insert(key);
                sink(run, r)
            })
        }
        PlanNode::Window { input, calls } => {
            let mut rows = Vec::new();
            node(input, run, row, &mut |run, r| {
                run.budget.take(row_bytes(r))?;
                // A copy: a join below reuses its row for the next one.
                rows.push(r.clone());
                Ok(true)
            })?;
            window::windows(calls, rows, run, sink)
        }
        PlanNode::Sort { input, keys } => {
            let mut rows = Vec::new();
            node(input, run, row, &mut |run, r| {
                run.budget.take(row_bytes(r))?;
                rows.push(std::mem::take(r));
                Ok(true)
            })?;
            rows.sort_by(|a, b| sort_order(keys, a, b));
            for mut r in rows {
                if !sink(run, &mut r)? {
                    return Ok(false);
                }
            }
            Ok(true)
        }
        PlanNode::Limit {
            input,
            limit,
            offset,
        } => {
            let limit = count(limit, run.cx)?;
            let offset = count(offset, run.cx)?.unwrap_or(0);
            if limit == Some(0) {
                return Ok(true);
            }
            let (mut seen, mut stopped) = (0usize, false);
            if let Some(l) = limit
                && sole_scan(input)
            {
                run.first_rows = Some(l.saturating_add(offset));
            }
            node(input, run, row, &mut |run, r| {
                seen += 1;
                if seen > offset && !sink(run, r)? {
                    stopped = true;
                    return Ok(false);
                }
                Ok(limit.is_none_or(|l| seen < l + offset))
            })?;
            Ok(!stopped)
        }
    }
}

/// Whether `node` passes on every row of one table scan and no other: each row it reads (and
/// its conditions keep) becomes one row above.
fn sole_scan(node: &PlanNode) -> bool {
    match node {
        PlanNode::Project { input, .. } => sole_scan(input),
        PlanNode::Scan { source, .. } => matches!(source.relation, Relation::Table(_)),
        _ => false,
    }
}

fn eval_all(exprs: &[Expr], row: &[Datum], cx: &Context<'_>) -> Result<Vec<Datum>> {
    exprs.iter().map(|e| e.eval(row, cx)).collect()
}

/// How two rows compare under ORDER BY's `keys` (NULLs placed as each key says).
fn sort_order(keys: &[SortKey], a: &[Datum], b: &[Datum]) -> Ordering {
    for k in keys {
        let (x, y) = (&a[k.column], &b[k.column]);
        let ord = match (x.is_null(), y.is_null()) {
            (true, true) => Ordering::Equal,
            (true, false) if k.nulls_first => Ordering::Less,
            (true, false) => Ordering::Greater,
            (false, true) if k.nulls_first => Ordering::Greater,
            (false, true) => Ordering::Less,
            _ => {
                let o = x.sort_cmp(y);
                if k.descending { o.reverse() } else { o }
            }
        };
        if ord != Ordering::Equal {
            return ord;
        }
    }
    Ordering::Equal
}

/// A count argument (LIMIT, OFFSET).
fn count(e: &Option<Expr>, cx: &Context<'_>) -> Result<Option<usize>> {
    match e {
        None => Ok(None),
        Some(e) => match e.eval(&[], cx)? {
            Datum::Null => Ok(None),
            d => match d.cast(SqlType::Int8)? {
                Datum::Int(n) if n >= 0 => Ok(Some(n as usize)),
                _ => Err(SqlError::new(
                    sqlstate::INVALID_PARAMETER_VALUE,
                    "LIMIT and OFFSET must not be negative",
                )),
            },
        },
    }
}
