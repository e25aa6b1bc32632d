//! Which columns of its tables a SELECT reads: a scan decodes only those (and its conditions'),
//! leaving NULL in the others, so a join carrying a wide table (a customer's 500-byte c_data,
//! a stock row's ten district strings) neither copies nor allocates what nothing reads.
//!
//! Must never leave out a column anything reads. The columns kept are every column position any
//! expression of the whole statement names (its subqueries', derived tables' and correlated
//! subqueries' included, whatever row they index: more than needed, never fewer), and a plan
//! is only pruned where its joined rows are read through expressions alone: under a Project
//! (or an Aggregate), with nothing between them and the joins that reads a row by position.

use crate::expr::Expr;
use std::sync::Arc;

use crate::plan::{PlanNode, Relation, SelectPlan};

/// Marks in each scan of `plan` (and of the derived tables it reads) the columns it must
/// decode, where its shape allows (see the module).
pub fn prune(plan: &mut SelectPlan) {
    let mut named = Vec::new();
    collect(plan, &mut named);
    prune_with(plan, &named);
}

/// Every column position named anywhere in `plan`, its subqueries included.
fn collect(plan: &SelectPlan, named: &mut Vec<bool>) {
    let mut mark = |e: &Expr| {
        if let Expr::Column(c) = e {
            if *c >= named.len() {
                named.resize(c + 1, false);
            }
            named[*c] = true;
        }
    };
    plan.root.visit_exprs(&mut mark);
    // What `visit_exprs` leaves out: aggregate calls' filters, orderings and separators, and
    // the keys a lookup may turn into a hash join on.
    plan.root.visit_nodes(&mut |n| match n {
        PlanNode::Aggregate { aggregate, .. } => {
            for call in &aggregate.calls {
                let extra = call.filter.iter().chain(&call.separator);
                for e in extra.chain(call.order_by.iter().map(|(e, _, _)| e)) {
                    e.visit(&mut mark);
                }
            }
        }
        PlanNode::Scan { source, .. } => {
            for (k, e) in source.hash_fallback.iter().flatten() {
                k.visit(&mut mark);
                e.visit(&mut mark);
            }
        }
        _ => {}
    });
    for init in &plan.init {
        collect(&init.plan, named);
    }
    plan.root.visit_nodes(&mut |n| match n {
        PlanNode::SetOp { left, right, .. } => {
            collect(left, named);
            collect(right, named);
        }
        PlanNode::RecursiveUnion {
            anchor, recursive, ..
        } => {
            collect(anchor, named);
            collect(recursive, named);
        }
        _ => {}
    });
}

fn prune_with(plan: &mut SelectPlan, named: &[bool]) {
    if let Some(joins) = joins_under_projection(&mut plan.root) {
        mark_scans(joins, named);
    }
    // Subqueries (uncorrelated or not) are plans of their own, read through their projections
    // alike; `named` holds their columns too.
    for init in &mut plan.init {
        prune_with(&mut init.plan, named);
    }
}

/// The joins whose rows `node` reads through expressions only: below any Sort, Limit and
/// DISTINCT over a Project, that Project's input (past Window nodes and one Aggregate).
fn joins_under_projection(node: &mut PlanNode) -> Option<&mut PlanNode> {
    match node {
        PlanNode::Sort { input, .. }
        | PlanNode::Limit { input, .. }
        | PlanNode::Distinct { input, .. }
        | PlanNode::DistinctOn { input, .. } => joins_under_projection(input),
        PlanNode::Project { input, .. } => {
            let mut below = &mut **input;
            while let PlanNode::Window { input, .. } = below {
                below = &mut **input;
            }
            if let PlanNode::Aggregate { input, .. } = below {
                below = &mut **input;
            }
            Some(below)
        }
        _ => None,
    }
}

/// Marks the columns each table scan among `joins` decodes; leaves everything as it is if the
/// joins hold a node that reads rows by position.
fn mark_scans(joins: &mut PlanNode, named: &[bool]) {
    if plain(joins) {
        mark(joins, named);
    }
}

/// Whether `node` is joins and conditions alone (a derived table's own plan aside).
fn plain(node: &PlanNode) -> bool {
    match node {
        PlanNode::Scan { .. } | PlanNode::Result { .. } => true,
        PlanNode::NestedLoop { outer, inner, .. } | PlanNode::SemiJoin { outer, inner, .. } => {
            plain(outer) && plain(inner)
        }
        PlanNode::Filter { input, .. } => plain(input),
        _ => false,
    }
}

fn mark(node: &mut PlanNode, named: &[bool]) {
    match node {
        PlanNode::Scan { source, .. } => match &mut source.relation {
            Relation::Table(_) => {
                let own = source.offset..source.offset + source.width;
                let needed: Vec<bool> = own
                    .map(|c| named.get(c).copied().unwrap_or(false))
                    .collect();
                if needed.iter().any(|n| !n) {
                    source.needed = Some(needed.into());
                }
            }
            // A plan shared with another reference (none are, as bound) stays whole.
            Relation::Subquery(plan) => {
                if let Some(plan) = Arc::get_mut(plan) {
                    prune_with(plan, named);
                }
            }
            _ => {}
        },
        PlanNode::NestedLoop { outer, inner, .. } | PlanNode::SemiJoin { outer, inner, .. } => {
            mark(outer, named);
            mark(inner, named);
        }
        PlanNode::Filter { input, .. } => mark(input, named),
        _ => {}
    }
}
