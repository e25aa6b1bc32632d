//! What a plan's nodes are expected to return: rows, their average width in bytes, and a cost in
//! PostgreSQL's units (a sequential page read is 1, a row handled 0.01), for EXPLAIN's
//! `(cost=startup..total rows=n width=w)`. Tools read these back: postgres_fdw, with
//! `use_remote_estimate`, plans its side of a query with the first line's figures.
//!
//! The figures describe a plan already chosen (the join order is costed in `bind::join_order`,
//! with the tables' samples); they must never be used to choose one. Conditions count with the
//! fixed shares the join order gives conditions its samples cannot tell
//! (`statistics::guessed_share`), tables with the rows ANALYZE counted
//! (`SqlTable::rows_estimate`).

use crate::catalog::SqlTable;
use crate::catalog::statistics::guessed_share;
use crate::expr::{BinOp, Expr};
use crate::plan::{Access, PlanNode, Relation, SelectPlan, SetOp};
use crate::values::types::SqlType;

/// A node's expected output and cost (see the [module documentation](self)).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Estimate {
    /// The cost before its first row.
    pub startup: f64,
    /// The cost of all its rows.
    pub total: f64,
    pub rows: f64,
    /// Average bytes per row.
    pub width: u32,
}

/// Cost units, PostgreSQL's defaults.
const PAGE: f64 = 1.0;
const RANDOM_PAGE: f64 = 4.0;
const ROW: f64 = 0.01;
const OPERATOR: f64 = 0.0025;
const PAGE_BYTES: f64 = 8192.0;
/// Rows of what has no count (a function's, a derived table's without one): PostgreSQL's
/// guess for a set-returning function.
const UNCOUNTED: f64 = 1000.0;
/// Groups of a GROUP BY or DISTINCT whose values nothing counted: PostgreSQL's guess.
const GROUPS: f64 = 200.0;

impl Estimate {
    pub fn new(startup: f64, total: f64, rows: f64, width: u32) -> Estimate {
        Estimate {
            startup,
            total: total.max(startup),
            rows: rows.max(1.0).round(),
            width,
        }
    }

    /// A write's: it returns no rows.
    pub fn write(startup: f64, total: f64) -> Estimate {
        Estimate {
            startup,
            total: total.max(startup),
            rows: 0.0,
            width: 0,
        }
    }

    /// EXPLAIN's figures, as PostgreSQL prints them.
    pub fn text(&self) -> String {
        format!(
            "(cost={:.2}..{:.2} rows={} width={})",
            self.startup, self.total, self.rows, self.width
        )
    }
}

/// The average width of a value of `ty`: its fixed length, or 32 bytes for one that varies
/// (PostgreSQL's guess for a column without statistics).
pub fn type_width(ty: &SqlType) -> u32 {
    crate::values::builtin_types::builtin(ty.oid())
        .and_then(|t| u32::try_from(t.len).ok())
        .filter(|&n| n > 0)
        .unwrap_or(32)
}

/// The share of rows `conditions` keep.
fn share(conditions: &[Expr]) -> f64 {
    conditions.iter().map(guessed_share).product()
}

fn table_rows(table: &SqlTable) -> f64 {
    table.rows_estimate(table.statistics.sample().as_deref()) as f64
}

fn table_width(table: &SqlTable) -> u32 {
    table.columns.iter().map(|c| type_width(&c.ty)).sum()
}

/// What reading `table` through `access` returns and costs, before the scan's own filter.
pub fn of_access(table: &SqlTable, access: &Access) -> Estimate {
    let (rows, width) = (table_rows(table), table_width(table));
    let pages = (rows * f64::from(width) / PAGE_BYTES).ceil().max(1.0);
    // A descent of the index, then a random page read per row found.
    let lookup = |found: f64| 0.29 + found * (RANDOM_PAGE + ROW);
    match access {
        Access::Scan | Access::Hash(_) => {
            Estimate::new(0.0, pages * PAGE + rows * ROW, rows, width)
        }
        Access::Key(_) | Access::Tid(_) => Estimate::new(0.29, lookup(1.0), 1.0, width),
        Access::Keys(keys) => {
            let found = keys.len() as f64;
            Estimate::new(0.29, lookup(found), found, width)
        }
        Access::Range {
            eq, lower, upper, ..
        } => {
            let bounds = usize::from(lower.is_some()) + usize::from(upper.is_some());
            let found = rows * 0.05f64.powi(eq.len() as i32) * 0.5f64.powi(bounds as i32);
            // Read in key order: pages in turn, not one per row.
            let read = found.min(rows) * ROW + (found * f64::from(width) / PAGE_BYTES).ceil();
            Estimate::new(0.29, 0.29 + read, found, width)
        }
    }
}

/// A node that reads its input once and passes on `rows` of it.
fn over(input: Estimate, rows: f64, per_row: f64) -> Estimate {
    Estimate::new(
        input.startup,
        input.total + input.rows * per_row,
        rows,
        input.width,
    )
}

/// The whole of a SELECT's plan.
pub fn of_select(plan: &SelectPlan) -> Estimate {
    of(&plan.root)
}

/// `node` and what is under it.
pub fn of(node: &PlanNode) -> Estimate {
    match node {
        PlanNode::Result { filter } => Estimate::new(0.0, 0.01, 1.0 * share(filter), 4),
        PlanNode::Scan { source, filter, .. } => {
            let read = match &source.relation {
                Relation::Table(t) => of_access(t, &source.access),
                Relation::Rows { rows, .. } => {
                    let n = rows.len() as f64;
                    Estimate::new(0.0, n * ROW, n, 8 * source.width as u32)
                }
                Relation::Subquery(plan) => of_select(plan),
                Relation::WorkTable(_)
                | Relation::Settings
                | Relation::Classes
                | Relation::Function { .. } => {
                    Estimate::new(0.0, UNCOUNTED * ROW, UNCOUNTED, 8 * source.width as u32)
                }
            };
            let per_row = OPERATOR * filter.len() as f64;
            over(read, read.rows * share(filter), per_row)
        }
        PlanNode::NestedLoop {
            outer,
            inner,
            left,
            filter,
            ..
        } => {
            let (o, i) = (of(outer), of(inner));
            // Joined on an equality: each row meets about one (a key's); else every pair.
            let equi = filter
                .iter()
                .any(|c| matches!(c, Expr::Binary(BinOp::Eq, ..)));
            let mut rows = if equi {
                o.rows.max(i.rows)
            } else {
                o.rows * i.rows * share(filter)
            };
            if left.is_some() {
                rows = rows.max(o.rows);
            }
            // An inner side read by key per outer row; else read once (hashed or kept).
            let keyed = i.rows <= 1.0;
            let total = if keyed {
                o.total + o.rows * i.total
            } else {
                o.total + i.total + (o.rows + i.rows) * ROW
            };
            Estimate::new(
                o.startup + i.startup,
                total + rows * ROW,
                rows,
                o.width + i.width,
            )
        }
        PlanNode::SemiJoin { outer, inner, .. } => {
            let (o, i) = (of(outer), of(inner));
            Estimate::new(
                o.startup + i.total,
                o.total + i.total + o.rows * ROW,
                o.rows * 0.5,
                o.width,
            )
        }
        PlanNode::Aggregate { input, aggregate } => {
            let i = of(input);
            let groups = if aggregate.group_by.is_empty() {
                1.0
            } else {
                i.rows.min(GROUPS)
            };
            let total = i.total + i.rows * (ROW + OPERATOR * aggregate.calls.len() as f64);
            let width = 8 * (aggregate.group_by.len() + aggregate.calls.len()).max(1) as u32;
            Estimate::new(total, total + groups * ROW, groups, width)
        }
        PlanNode::Window { input, .. } => {
            let i = of(input);
            over(i, i.rows, ROW)
        }
        PlanNode::Filter { input, filter } => {
            let i = of(input);
            over(i, i.rows * share(filter), OPERATOR * filter.len() as f64)
        }
        PlanNode::RecursiveUnion {
            anchor, recursive, ..
        } => {
            let (a, r) = (of_select(anchor), of_select(recursive));
            let rows = a.rows + 10.0 * r.rows;
            Estimate::new(0.0, a.total + 10.0 * r.total, rows, a.width)
        }
        PlanNode::Values { rows, types } => {
            let n = rows.len() as f64;
            Estimate::new(0.0, n * ROW, n, types.iter().map(type_width).sum())
        }
        PlanNode::SetOp {
            left, right, op, ..
        } => {
            let (l, r) = (of_select(left), of_select(right));
            let rows = match op {
                SetOp::Union => l.rows + r.rows,
                SetOp::Intersect => l.rows.min(r.rows),
                SetOp::Except => l.rows,
            };
            let total = l.total + r.total + (l.rows + r.rows) * ROW;
            Estimate::new(l.startup + r.startup, total, rows, l.width.max(r.width))
        }
        PlanNode::ProjectSet { input, .. } => {
            let i = of(input);
            over(i, i.rows * UNCOUNTED, ROW * UNCOUNTED)
        }
        PlanNode::Project { input, exprs } => {
            let i = of(input);
            // A bound expression carries no type here: a value's width each.
            let width = 8 * exprs.len().max(1) as u32;
            Estimate {
                width,
                ..over(i, i.rows, OPERATOR * exprs.len() as f64)
            }
        }
        PlanNode::Distinct { input, .. } | PlanNode::DistinctOn { input, .. } => {
            let i = of(input);
            over(i, i.rows.min(GROUPS), ROW)
        }
        PlanNode::Sort { input, .. } => {
            let i = of(input);
            // Comparisons of n log n, all before the first row leaves.
            let sorted = i.total + 2.0 * OPERATOR * i.rows * i.rows.max(2.0).log2();
            Estimate::new(sorted, sorted + i.rows * ROW, i.rows, i.width)
        }
        PlanNode::Limit { input, limit, .. } => {
            let i = of(input);
            let Some(n) = limit.as_ref().and_then(constant_count) else {
                return i;
            };
            let rows = i.rows.min(n.max(1.0));
            // Only the share of the input's rows that the limit takes is paid for after the
            // first.
            let total = i.startup + (i.total - i.startup) * (rows / i.rows.max(1.0));
            Estimate::new(i.startup, total, rows, i.width)
        }
    }
}

/// A LIMIT's count, if it is a constant.
fn constant_count(e: &Expr) -> Option<f64> {
    match e {
        Expr::Literal(crate::Datum::Int(n)) => Some(*n as f64),
        _ => None,
    }
}
