//! EXPLAIN: a plan as lines of text, its tree in PostgreSQL's shape ("Index Scan using ... on
//! ..."), one line per node.

use crate::catalog::SqlTable;
use crate::plan::{Access, Command, InsertSource, PlanNode, Query, Relation, SelectPlan};

fn access_line(table: &SqlTable, shown: &str, access: &Access) -> String {
    let alias = if shown == table.name {
        String::new()
    } else {
        format!(" {shown}")
    };
    match access {
        Access::Scan => format!("Seq Scan on {}{alias}", table.name),
        Access::Hash(keys) => format!(
            "Hash Scan on {}{alias} (hashed once on {} column{})",
            table.name,
            keys.len(),
            plural(keys.len())
        ),
        Access::Key(_) => format!(
            "Index Scan using {}_pkey on {}{alias} (one row by its primary key)",
            table.name, table.name
        ),
        Access::Tid(_) => format!("Tid Scan on {}{alias}", table.name),
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
            format!(
                "Index Scan using {}_pkey on {}{alias} (rows by {} {what})",
                table.name,
                table.name,
                keys.len()
            )
        }
        Access::Range {
            index,
            eq,
            lower,
            upper,
        } => format!(
            "Index Scan using {} on {}{alias} (key range: {} leading column{} equal{}{})",
            match index {
                Some(i) => table.indexes[*i].name.clone(),
                None => format!("{}_pkey", table.name),
            },
            table.name,
            eq.len(),
            plural(eq.len()),
            if lower.is_some() { ", lower bound" } else { "" },
            if upper.is_some() { ", upper bound" } else { "" },
        ),
    }
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

fn node(out: &mut Vec<String>, depth: usize, text: &str, filters: usize) {
    let prefix = indent(depth);
    out.push(format!("{prefix}{text}"));
    if filters > 0 {
        let s = if filters == 1 { "" } else { "s" };
        out.push(format!(
            "{}  Filter: {filters} condition{s}",
            " ".repeat(prefix.len())
        ));
    }
}

/// The lines of `n` and the nodes under it, `n` at `depth`. Projections print nothing (as in
/// PostgreSQL's plans); `lock_rows` prints LockRows above the first node that reads rows.
fn tree_lines(n: &PlanNode, lock_rows: bool, out: &mut Vec<String>, depth: usize) {
    let (line, filters, inputs): (String, usize, Vec<&PlanNode>) = match n {
        PlanNode::Project { input, .. } => return tree_lines(input, lock_rows, out, depth),
        PlanNode::Result { .. } | PlanNode::Scan { .. } | PlanNode::NestedLoop { .. }
            if lock_rows =>
        {
            node(out, depth, "LockRows", 0);
            return tree_lines(n, false, out, depth + 1);
        }
        PlanNode::Result { filter } => ("Result".into(), filter.len(), vec![]),
        PlanNode::Scan { source, filter, .. } => (
            match &source.relation {
                Relation::Table(t) => access_line(t, &source.name, &source.access),
                Relation::Rows { relation, .. } if relation == &source.name => {
                    format!("Seq Scan on {relation}")
                }
                Relation::Rows { relation, .. } => {
                    format!("Seq Scan on {relation} {}", source.name)
                }
                Relation::Settings => {
                    format!("Function Scan on pg_show_all_settings {}", source.name)
                }
                Relation::Classes => {
                    format!("Function Scan on overtake_stat_classes {}", source.name)
                }
                Relation::Subquery(_) => match &source.access {
                    Access::Hash(keys) => format!(
                        "Hash Subquery Scan on {} (hashed once on {} column{})",
                        source.name,
                        keys.len(),
                        plural(keys.len())
                    ),
                    _ => format!("Subquery Scan on {}", source.name),
                },
                Relation::WorkTable(_) => format!("WorkTable Scan on {}", source.name),
                Relation::Function { func, .. } => {
                    format!("Function Scan on {} {}", func.name(), source.name)
                }
            },
            filter.len(),
            match &source.relation {
                Relation::Subquery(plan) => vec![&plan.root],
                _ => vec![],
            },
        ),
        PlanNode::ProjectSet { input, .. } => return tree_lines(input, lock_rows, out, depth),
        PlanNode::RecursiveUnion {
            anchor, recursive, ..
        } => (
            "Recursive Union".into(),
            0,
            vec![&anchor.root, &recursive.root],
        ),
        PlanNode::DistinctOn { input, .. } => ("Unique".into(), 0, vec![input]),
        PlanNode::Values { rows, .. } => (format!("Values Scan ({} rows)", rows.len()), 0, vec![]),
        PlanNode::SetOp {
            left,
            right,
            op,
            all,
            ..
        } => (
            format!(
                "{}{}",
                match op {
                    crate::plan::SetOp::Union => "Append (UNION",
                    crate::plan::SetOp::Intersect => "SetOp Intersect (INTERSECT",
                    crate::plan::SetOp::Except => "SetOp Except (EXCEPT",
                },
                if *all { " ALL)" } else { ")" }
            ),
            0,
            vec![&left.root, &right.root],
        ),
        PlanNode::Filter { input, filter } => {
            ("Filter (subqueries)".into(), filter.len(), vec![input])
        }
        PlanNode::SemiJoin { outer, inner, anti } => (
            if *anti {
                "Nested Loop Anti Join".into()
            } else {
                "Nested Loop Semi Join".into()
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
                (Some(_), Some(r)) if !r.keys.is_empty() => "Hash Full Join".into(),
                (Some(_), Some(_)) => "Nested Loop Full Join".into(),
                (None, Some(r)) if !r.keys.is_empty() => "Hash Right Join".into(),
                (None, Some(_)) => "Nested Loop Right Join".into(),
                (Some(_), None) => "Nested Loop Left Join".into(),
                (None, None) => "Nested Loop".into(),
            },
            filter.len(),
            vec![outer, inner],
        ),
        PlanNode::Aggregate { input, aggregate } => {
            let name = match aggregate.group_by.is_empty() {
                true => "Aggregate",
                false => "HashAggregate",
            };
            (name.into(), 0, vec![input])
        }
        PlanNode::Distinct { input, .. } => ("Unique".into(), 0, vec![input]),
        PlanNode::Window { input, .. } => ("WindowAgg".into(), 0, vec![input]),
        PlanNode::Sort { input, .. } => ("Sort".into(), 0, vec![input]),
        PlanNode::Limit { input, .. } => ("Limit".into(), 0, vec![input]),
    };
    node(out, depth, &line, filters);
    for input in inputs {
        tree_lines(input, lock_rows, out, depth + 1);
    }
}

fn select_lines(plan: &SelectPlan, out: &mut Vec<String>, depth: usize) {
    tree_lines(&plan.root, plan.for_update, out, depth);
}

/// The plan of `command`, one line per node.
pub fn explain(command: &Command) -> Vec<String> {
    let mut out = Vec::new();
    let Command::Query(query) = command else {
        return vec!["Utility Statement".into()];
    };
    match query.as_ref() {
        Query::Select(s) => select_lines(s, &mut out, 0),
        Query::Insert(i) => {
            out.push(format!("Insert on {}", i.table.name));
            match &i.source {
                InsertSource::Values(rows) => {
                    out.push(format!("  ->  Values Scan ({} rows)", rows.len()))
                }
                InsertSource::Select(s) => select_lines(s, &mut out, 1),
            }
        }
        Query::Update(u) => {
            out.push(format!("Update on {}", u.table.name));
            out.push(format!(
                "  ->  {}",
                access_line(&u.table, &u.table.name, &u.access)
            ));
        }
        Query::Analyze(_) => out.push("Analyze".into()),
        Query::Delete(d) => {
            out.push(format!("Delete on {}", d.table.name));
            out.push(format!(
                "  ->  {}",
                access_line(&d.table, &d.table.name, &d.access)
            ));
        }
    }
    out
}
