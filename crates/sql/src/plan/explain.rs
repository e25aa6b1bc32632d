//! EXPLAIN: a plan as lines of text, its tree in PostgreSQL's shape ("Index Scan using ... on
//! ...  (cost=0.29..4.30 rows=1 width=40)"), a line per node with its estimate (see `estimate`;
//! not with `COSTS off`), then lines of detail ("Index Cond: ...", "Filter: ..."). Nothing in
//! parentheses comes before the estimate: postgres_fdw reads it from the first line as the first
//! parenthesis.

use crate::catalog::SqlTable;
use crate::plan::estimate::{self, Estimate};
use crate::plan::{Access, Command, InsertSource, PlanNode, Query, Relation, SelectPlan};

/// How EXPLAIN prints: with estimates (`COSTS`, on by default) or without.
#[derive(Clone, Copy, Debug)]
pub struct ExplainOptions {
    pub costs: bool,
}

impl Default for ExplainOptions {
    fn default() -> Self {
        ExplainOptions { costs: true }
    }
}

/// A node's line and its detail.
struct Line {
    text: String,
    /// E.g. "Index Cond: one row by its primary key".
    detail: Option<String>,
}

impl From<String> for Line {
    fn from(text: String) -> Line {
        Line { text, detail: None }
    }
}

fn with_detail(text: String, detail: String) -> Line {
    Line {
        text,
        detail: Some(detail),
    }
}

fn access_line(table: &SqlTable, shown: &str, access: &Access) -> Line {
    let alias = if shown == table.name {
        String::new()
    } else {
        format!(" {shown}")
    };
    match access {
        Access::Scan => format!("Seq Scan on {}{alias}", table.name).into(),
        Access::Hash(keys) => with_detail(
            format!("Hash Scan on {}{alias}", table.name),
            hashed(keys.len()),
        ),
        Access::Key(_) => with_detail(
            format!(
                "Index Scan using {}_pkey on {}{alias}",
                table.name, table.name
            ),
            "Index Cond: one row by its primary key".into(),
        ),
        Access::Tid(_) => format!("Tid Scan on {}{alias}", table.name).into(),
        Access::Keys(keys) => {
            let columns = keys.first().map_or(0, Vec::len);
            let what = if columns == table.primary_key.len() {
                "primary keys".to_owned()
            } else {
                format!(
                    "key prefixes of {columns} leading column{}",
                    plural(columns)
                )
            };
            with_detail(
                format!(
                    "Index Scan using {}_pkey on {}{alias}",
                    table.name, table.name
                ),
                format!("Index Cond: rows by {} {what}", keys.len()),
            )
        }
        Access::Range {
            index,
            eq,
            lower,
            upper,
        } => with_detail(
            format!(
                "Index Scan using {} on {}{alias}",
                match index {
                    Some(i) => table.indexes[*i].name.clone(),
                    None => format!("{}_pkey", table.name),
                },
                table.name,
            ),
            format!(
                "Index Cond: key range: {} leading column{} equal{}{}",
                eq.len(),
                plural(eq.len()),
                if lower.is_some() { ", lower bound" } else { "" },
                if upper.is_some() { ", upper bound" } else { "" },
            ),
        ),
    }
}

/// A hash scan's detail: how many columns it hashes its rows on (once, then probed).
fn hashed(columns: usize) -> String {
    format!(
        "Hash Cond: hashed once on {columns} column{}",
        plural(columns)
    )
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// PostgreSQL's indentation for a node `depth` levels down.
fn indent(depth: usize) -> String {
    match depth {
        0 => String::new(),
        d => format!("{}->  ", " ".repeat(6 * (d - 1) + 2)),
    }
}

/// Where the lines go, and whether they carry estimates.
struct Out {
    lines: Vec<String>,
    costs: bool,
}

impl Out {
    /// A node's line (with `estimate` if costs are shown), its detail, and its filter.
    fn node(&mut self, depth: usize, line: Line, filters: usize, estimate: impl Fn() -> Estimate) {
        let prefix = indent(depth);
        let text = match self.costs {
            true => format!("{prefix}{}  {}", line.text, estimate().text()),
            false => format!("{prefix}{}", line.text),
        };
        self.lines.push(text);
        let pad = " ".repeat(prefix.len());
        if let Some(detail) = line.detail {
            self.lines.push(format!("{pad}  {detail}"));
        }
        if filters > 0 {
            let s = if filters == 1 { "" } else { "s" };
            self.lines
                .push(format!("{pad}  Filter: {filters} condition{s}"));
        }
    }
}

/// The lines of `n` and the nodes under it, `n` at `depth`. Projections print nothing (as in
/// PostgreSQL's plans: the node below shows the projection's estimate, `shown`); `lock_rows`
/// prints LockRows above the first node that reads rows.
fn tree_lines(
    n: &PlanNode,
    shown: Option<&PlanNode>,
    lock_rows: bool,
    out: &mut Out,
    depth: usize,
) {
    let shown_or_n = shown.unwrap_or(n);
    let (line, filters, inputs): (Line, usize, Vec<&PlanNode>) = match n {
        PlanNode::Project { input, .. } => {
            return tree_lines(input, Some(shown_or_n), lock_rows, out, depth);
        }
        PlanNode::Result { .. } | PlanNode::Scan { .. } | PlanNode::NestedLoop { .. }
            if lock_rows =>
        {
            out.node(depth, "LockRows".to_owned().into(), 0, || {
                estimate::of(shown_or_n)
            });
            return tree_lines(n, shown, false, out, depth + 1);
        }
        PlanNode::Result { filter } => ("Result".to_owned().into(), filter.len(), vec![]),
        PlanNode::Scan { source, filter, .. } => (
            match &source.relation {
                Relation::Table(t) => access_line(t, &source.name, &source.access),
                Relation::Rows { relation, .. } if relation == &source.name => {
                    format!("Seq Scan on {relation}").into()
                }
                Relation::Rows { relation, .. } => {
                    format!("Seq Scan on {relation} {}", source.name).into()
                }
                Relation::Settings => {
                    format!("Function Scan on pg_show_all_settings {}", source.name).into()
                }
                Relation::Classes => {
                    format!("Function Scan on overtake_stat_classes {}", source.name).into()
                }
                Relation::Subquery(_) => match &source.access {
                    Access::Hash(keys) => with_detail(
                        format!("Hash Subquery Scan on {}", source.name),
                        hashed(keys.len()),
                    ),
                    _ => format!("Subquery Scan on {}", source.name).into(),
                },
                Relation::WorkTable(_) => format!("WorkTable Scan on {}", source.name).into(),
                Relation::Function { func, .. } => {
                    format!("Function Scan on {} {}", func.name(), source.name).into()
                }
            },
            filter.len(),
            match &source.relation {
                Relation::Subquery(plan) => vec![&plan.root],
                _ => vec![],
            },
        ),
        PlanNode::ProjectSet { input, .. } => {
            return tree_lines(input, Some(shown_or_n), lock_rows, out, depth);
        }
        PlanNode::RecursiveUnion {
            anchor, recursive, ..
        } => (
            "Recursive Union".to_owned().into(),
            0,
            vec![&anchor.root, &recursive.root],
        ),
        PlanNode::DistinctOn { input, .. } => ("Unique".to_owned().into(), 0, vec![input]),
        PlanNode::Values { rows, .. } => (
            with_detail(
                "Values Scan on \"*VALUES*\"".to_owned(),
                format!("Rows: {}", rows.len()),
            ),
            0,
            vec![],
        ),
        PlanNode::SetOp {
            left,
            right,
            op,
            all,
            ..
        } => (
            with_detail(
                match op {
                    crate::plan::SetOp::Union => "Append",
                    crate::plan::SetOp::Intersect => "SetOp Intersect",
                    crate::plan::SetOp::Except => "SetOp Except",
                }
                .to_owned(),
                format!(
                    "Set Operation: {}{}",
                    match op {
                        crate::plan::SetOp::Union => "UNION",
                        crate::plan::SetOp::Intersect => "INTERSECT",
                        crate::plan::SetOp::Except => "EXCEPT",
                    },
                    if *all { " ALL" } else { "" }
                ),
            ),
            0,
            vec![&left.root, &right.root],
        ),
        PlanNode::Filter { input, filter } => (
            with_detail("Filter".to_owned(), "Subqueries: in its conditions".into()),
            filter.len(),
            vec![input],
        ),
        PlanNode::SemiJoin { outer, inner, anti } => (
            if *anti {
                "Nested Loop Anti Join".to_owned().into()
            } else {
                "Nested Loop Semi Join".to_owned().into()
            },
            0,
            vec![outer, inner],
        ),
        PlanNode::NestedLoop {
            outer,
            inner,
            left,
            right,
            filter,
        } => (
            match (left, right) {
                (Some(_), Some(r)) if !r.keys.is_empty() => "Hash Full Join",
                (Some(_), Some(_)) => "Nested Loop Full Join",
                (None, Some(r)) if !r.keys.is_empty() => "Hash Right Join",
                (None, Some(_)) => "Nested Loop Right Join",
                (Some(_), None) => "Nested Loop Left Join",
                (None, None) => "Nested Loop",
            }
            .to_owned()
            .into(),
            filter.len(),
            vec![outer, inner],
        ),
        PlanNode::Aggregate { input, aggregate } => {
            let name = match aggregate.group_by.is_empty() {
                true => "Aggregate",
                false => "HashAggregate",
            };
            (name.to_owned().into(), 0, vec![input])
        }
        PlanNode::Distinct { input, .. } => ("Unique".to_owned().into(), 0, vec![input]),
        PlanNode::Window { input, .. } => ("WindowAgg".to_owned().into(), 0, vec![input]),
        PlanNode::Sort { input, .. } => ("Sort".to_owned().into(), 0, vec![input]),
        PlanNode::Limit { input, .. } => ("Limit".to_owned().into(), 0, vec![input]),
    };
    out.node(depth, line, filters, || estimate::of(shown_or_n));
    for input in inputs {
        tree_lines(input, None, lock_rows, out, depth + 1);
    }
}

fn select_lines(plan: &SelectPlan, out: &mut Out, depth: usize) {
    tree_lines(&plan.root, None, plan.for_update, out, depth);
}

/// The plan of `command`, a line per node and its detail.
pub fn explain(command: &Command, options: ExplainOptions) -> Vec<String> {
    let mut out = Out {
        lines: Vec::new(),
        costs: options.costs,
    };
    let Command::Query(query) = command else {
        return vec!["Utility Statement".into()];
    };
    match query.as_ref() {
        Query::Select(s) => select_lines(s, &mut out, 0),
        Query::Insert(i) => {
            let rows = match &i.source {
                InsertSource::Values(rows) => rows.len() as f64,
                InsertSource::Select(s) => estimate::of_select(s).rows,
            };
            out.node(0, format!("Insert on {}", i.table.name).into(), 0, || {
                Estimate::write(0.0, rows * 0.01)
            });
            match &i.source {
                InsertSource::Values(rows) => {
                    let n = rows.len() as f64;
                    out.node(
                        1,
                        with_detail("Values Scan on \"*VALUES*\"".into(), format!("Rows: {n}")),
                        0,
                        || Estimate::new(0.0, n * 0.01, n, 8),
                    );
                }
                InsertSource::Select(s) => select_lines(s, &mut out, 1),
            }
        }
        Query::Update(u) => written("Update", &u.table, &u.access, &mut out),
        Query::Analyze(_) => out.lines.push("Analyze".into()),
        Query::Delete(d) => written("Delete", &d.table, &d.access, &mut out),
    }
    out.lines
}

/// An UPDATE's or DELETE's lines: the write, then how it finds its rows.
fn written(what: &str, table: &SqlTable, access: &Access, out: &mut Out) {
    let found = estimate::of_access(table, access);
    out.node(0, format!("{what} on {}", table.name).into(), 0, || {
        Estimate::write(found.startup, found.total + found.rows * 0.01)
    });
    out.node(1, access_line(table, &table.name, access), 0, || found);
}
