//! Set operations (`UNION`, `INTERSECT`, `EXCEPT`, with or without `ALL`) and `WITH
//! RECURSIVE`'s rounds: the rows they hold (for duplicates, counts, the last round) are charged
//! to the statement's budget, and each round of a recursive query checks for cancellation.

use super::{Run, Sink, node, select_first};
use crate::error::Result;
use crate::plan::{SelectPlan, SetOp};
use crate::values::datum::{Datum, row_bytes};
use crate::values::key::{Key, KeyMap, KeySet};
use crate::values::types::SqlType;

/// `left op right` (see `PlanNode::SetOp`): both sides' rows, each value converted to its
/// column's type; the rows held for duplicates and counts charged to the budget.
pub(super) fn set_operation(
    run: &mut Run<'_, '_, '_>,
    (left, right): (&SelectPlan, &SelectPlan),
    (op, all): (SetOp, bool),
    types: &[SqlType],
    sink: &mut Sink<'_>,
) -> Result<bool> {
    let rows_of = |run: &mut Run<'_, '_, '_>, plan: &SelectPlan| -> Result<Vec<Vec<Datum>>> {
        let rows = select_first(run.txn, (plan, run.subqueries), run.cx, usize::MAX)?;
        run.budget.take(rows.iter().map(|r| row_bytes(r)).sum())?;
        rows.into_iter()
            .map(|r| {
                r.into_iter()
                    .zip(types)
                    .map(|(v, ty)| v.cast(*ty))
                    .collect()
            })
            .collect()
    };
    let left_rows = rows_of(run, left)?;
    let right_rows = rows_of(run, right)?;
    let mut seen = KeySet::default();
    // How many times each row of the right side is there (INTERSECT, EXCEPT).
    let mut counts: KeyMap<usize> = KeyMap::default();
    if op != SetOp::Union {
        for r in &right_rows {
            *counts.entry(Key(r.clone())).or_default() += 1;
        }
    }
    let right_rows = if op == SetOp::Union {
        right_rows
    } else {
        Vec::new()
    };
    for mut r in left_rows.into_iter().chain(right_rows) {
        let key = Key(r.clone());
        let keep = match (op, all) {
            (SetOp::Union, true) => true,
            (SetOp::Union, false) => seen.insert(key),
            (SetOp::Intersect, _) => match counts.get_mut(&key) {
                Some(n) if *n > 0 => {
                    // Without ALL, one of each: none is left for a duplicate.
                    *n = if all { *n - 1 } else { 0 };
                    true
                }
                _ => false,
            },
            (SetOp::Except, true) => match counts.get_mut(&key) {
                Some(n) if *n > 0 => {
                    *n -= 1;
                    false
                }
                _ => true,
            },
            (SetOp::Except, false) => !counts.contains_key(&key) && seen.insert(key),
        };
        if keep && !sink(run, &mut r)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The rows of `plan` under `row`, run within `run` (so they read its work tables), each
/// value converted to its column's type.
fn rows_under(
    run: &mut Run<'_, '_, '_>,
    plan: &SelectPlan,
    row: &[Datum],
    types: &[SqlType],
) -> Result<Vec<Vec<Datum>>> {
    let mut rows = Vec::new();
    let visible = plan.visible;
    node(&plan.root, run, &mut row.to_vec(), &mut |run, r| {
        let mut out = std::mem::take(r);
        out.truncate(visible);
        let out = out
            .into_iter()
            .zip(types)
            .map(|(v, ty)| v.cast(*ty))
            .collect::<Result<Vec<_>>>()?;
        run.budget.take(row_bytes(&out))?;
        rows.push(out);
        Ok(true)
    })?;
    Ok(rows)
}

/// `WITH RECURSIVE` (see `PlanNode::RecursiveUnion`): each round's rows go to `sink` as they
/// are made, and feed the next round; a round is checked for cancellation, and every row held
/// is charged to the budget (a query that never stops ends at its memory budget).
pub(super) fn recursive_union(
    run: &mut Run<'_, '_, '_>,
    row: &[Datum],
    (anchor, recursive): (&SelectPlan, &SelectPlan),
    (id, all): (usize, bool),
    types: &[SqlType],
    sink: &mut Sink<'_>,
) -> Result<bool> {
    let mut seen = KeySet::default();
    let mut round = rows_under(run, anchor, row, types)?;
    loop {
        run.cx.check_cancel()?;
        let mut made = Vec::with_capacity(round.len());
        for r in round {
            if !all && !seen.insert(Key(r.clone())) {
                continue;
            }
            let mut out = r.clone();
            if !sink(run, &mut out)? {
                return Ok(false);
            }
            made.push(r);
        }
        if made.is_empty() {
            return Ok(true);
        }
        run.work_tables.insert(id, std::rc::Rc::new(made));
        round = rows_under(run, recursive, row, types)?;
    }
}
