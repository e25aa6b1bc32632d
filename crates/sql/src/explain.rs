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
        Access::Range { eq, lower, upper } => format!(
            "Index Scan using {}_pkey on {}{alias} (key range: {} leading column{} equal{}{})",
            table.name,
            table.name,
            eq.len(),
            if eq.len() == 1 { "" } else { "s" },
            if lower.is_some() { ", lower bound" } else { "" },
            if upper.is_some() { ", upper bound" } else { "" },
        ),
    }
}

fn select_lines(plan: &SelectPlan, out: &mut Vec<String>, depth: usize) {
    let mut depth = depth;
    let push = |out: &mut Vec<String>, depth: usize, text: String| {
        let prefix = if depth == 0 {
            String::new()
        } else {
            format!("{}->  ", "  ".repeat(depth * 2 - 1))
        };
        out.push(format!("{prefix}{text}"));
    };
    if plan.limit.is_some() || plan.offset.is_some() {
        push(out, depth, "Limit".into());
        depth += 1;
    }
    if !plan.order_by.is_empty() {
        push(out, depth, "Sort".into());
        depth += 1;
    }
    if plan.distinct {
        push(out, depth, "Unique".into());
        depth += 1;
    }
    if let Some(agg) = &plan.aggregate {
        push(
            out,
            depth,
            if agg.group_by.is_empty() {
                "Aggregate".into()
            } else {
                "HashAggregate".into()
            },
        );
        depth += 1;
    }
    if plan.for_update {
        push(out, depth, "LockRows".into());
        depth += 1;
    }
    let n = plan.sources.len();
    if n == 0 {
        push(out, depth, "Result".into());
        return;
    }
    // A left-deep nested loop: each join's outer side is the joins before it.
    for (i, s) in plan.sources.iter().enumerate().rev() {
        if i > 0 {
            push(out, depth + (n - 1 - i), "Nested Loop".into());
        }
        let at = depth + (n - 1 - i) + usize::from(i > 0);
        push(out, at, access_line(&s.table, &s.name, &s.access));
        if !plan.filters[i].is_empty() {
            out.push(format!(
                "{}      Filter: {} condition{}",
                "  ".repeat(at * 2),
                plan.filters[i].len(),
                if plan.filters[i].len() == 1 { "" } else { "s" }
            ));
        }
    }
}

/// The plan of `command`, one line per node.
pub fn explain(command: &Command) -> Vec<String> {
    let mut out = Vec::new();
    match command {
        Command::Query(Query::Select(s)) => select_lines(s, &mut out, 0),
        Command::Query(Query::Insert(i)) => {
            out.push(format!("Insert on {}", i.table.name));
            match &i.source {
                InsertSource::Values(rows) => {
                    out.push(format!("  ->  Values Scan ({} rows)", rows.len()))
                }
                InsertSource::Select(s) => select_lines(s, &mut out, 1),
            }
        }
        Command::Query(Query::Update(u)) => {
            out.push(format!("Update on {}", u.table.name));
            out.push(format!(
                "  ->  {}",
                access_line(&u.table, &u.table.name, &u.access)
            ));
        }
        Command::Query(Query::Delete(d)) => {
            out.push(format!("Delete on {}", d.table.name));
            out.push(format!(
                "  ->  {}",
                access_line(&d.table, &d.table.name, &d.access)
            ));
        }
        _ => out.push("Utility Statement".into()),
    }
    out
}
