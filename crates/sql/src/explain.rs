//! EXPLAIN: a plan as lines of text, in PostgreSQL's shape ("Index Scan using ... on ...").

use crate::catalog::SqlTable;
use crate::plan::{Access, Command, InsertSource, Query, SelectPlan};

fn access_line(table: &SqlTable, shown: &str, access: &Access) -> String {
    let alias = if shown == table.name {
        String::new()
    } else {
        format!(" {shown}")
    };
    match access {
        Access::Scan => format!("Seq Scan on {}{alias}", table.name),
        Access::Key(_) => format!(
            "Index Scan using {}_pkey on {}{alias} (one row by its primary key)",
            table.name, table.name
        ),
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
            if eq.len() == 1 { "" } else { "s" },
            if lower.is_some() { ", lower bound" } else { "" },
            if upper.is_some() { ", upper bound" } else { "" },
        ),
    }
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

/// The first `n` sources as a left-deep tree of nested loops.
fn join_lines(plan: &SelectPlan, n: usize, out: &mut Vec<String>, depth: usize) {
    let last = &plan.sources[n - 1];
    let line = access_line(&last.table, &last.name, &last.access);
    if n == 1 {
        node(out, depth, &line, plan.filters[0].len());
        return;
    }
    node(out, depth, "Nested Loop", 0);
    join_lines(plan, n - 1, out, depth + 1);
    node(out, depth + 1, &line, plan.filters[n - 1].len());
}

fn select_lines(plan: &SelectPlan, out: &mut Vec<String>, depth: usize) {
    let mut depth = depth;
    let wrappers = [
        (plan.limit.is_some() || plan.offset.is_some(), "Limit"),
        (!plan.order_by.is_empty(), "Sort"),
        (plan.distinct, "Unique"),
        (
            plan.aggregate.is_some(),
            if plan
                .aggregate
                .as_ref()
                .is_some_and(|a| !a.group_by.is_empty())
            {
                "HashAggregate"
            } else {
                "Aggregate"
            },
        ),
        (plan.for_update, "LockRows"),
    ];
    for (_, name) in wrappers.iter().filter(|(on, _)| *on) {
        node(out, depth, name, 0);
        depth += 1;
    }
    match plan.sources.len() {
        0 => node(out, depth, "Result", plan.filters[0].len()),
        n => join_lines(plan, n, out, depth),
    }
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
