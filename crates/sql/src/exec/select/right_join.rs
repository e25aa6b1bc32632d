//! Right and full joins (`PlanNode::NestedLoop` with `right`): the inner side is read once and
//! each of its rows remembered as matched or not while the outer rows are joined to it; at the
//! end the rows no outer row matched come out with NULLs for the outer side. A full join also
//! keeps each outer row nothing matched, with NULLs for the inner side, as a left join does.
//!
//! Where the ON conditions join the sides by equalities of hashable values, the inner rows are
//! kept by those values and each outer row looks at those of its own alone (NULL matches
//! nothing); otherwise each outer row is compared with every inner row.
//!
//! Must never read the inner side under each outer row (a row matched under one would not be
//! known as matched under another), and holds the inner rows against the statement's budget.

use super::{Run, Sink, all_hold, node};
use crate::error::{Result, SqlError, sqlstate};
use crate::expr::Expr;
use crate::plan::{PlanNode, RightJoinOn};
use crate::values::datum::{Datum, row_bytes};
use crate::values::key::{Key, KeyMap};

/// What a right or full join is given: its two sides, the inner side's width when the outer
/// rows nothing matched are kept too (a full join), its ON conditions, and the conditions
/// checked on each joined row (WHERE's on the sides it may give NULLs for).
pub(super) struct RightJoin<'p> {
    pub outer: &'p PlanNode,
    pub inner: &'p PlanNode,
    pub left: Option<usize>,
    pub on: &'p RightJoinOn,
    pub filter: &'p [Expr],
}

/// The values of `exprs` over `row`, if none is NULL.
fn key_of<'e>(
    exprs: impl Iterator<Item = &'e Expr>,
    row: &[Datum],
    run: &Run<'_, '_, '_>,
) -> Result<Option<Key>> {
    let mut values = Vec::new();
    for e in exprs {
        match e.eval(row, run.cx)? {
            Datum::Null => return Ok(None),
            v => values.push(v),
        }
    }
    Ok(Some(Key(values)))
}

/// Runs `join` under `row` (an enclosing query's columns, if any), sending its rows to `sink`.
pub(super) fn right_join(
    join: &RightJoin<'_>,
    run: &mut Run<'_, '_, '_>,
    row: &mut Vec<Datum>,
    sink: &mut Sink<'_>,
) -> Result<bool> {
    let PlanNode::Scan { source, .. } = join.inner else {
        return Err(SqlError::new(
            sqlstate::INTERNAL_ERROR,
            "a right join's inner side is not a scan",
        ));
    };
    let base = row.len();
    let offset = source.offset;
    // The inner rows, read under NULLs for the outer side's columns (the inner side's own
    // conditions read none of them: the ON conditions are checked here).
    row.resize(offset, Datum::Null);
    let mut rows: Vec<Vec<Datum>> = Vec::new();
    let hashed = !join.on.keys.is_empty();
    let mut by_key: KeyMap<Vec<usize>> = KeyMap::default();
    let read = node(join.inner, run, row, &mut |run, r| {
        let inner_row = r[offset..].to_vec();
        run.budget.take(row_bytes(&inner_row))?;
        if hashed && let Some(key) = key_of(join.on.keys.iter().map(|(k, _)| k), r, run)? {
            by_key.entry(key).or_default().push(rows.len());
        }
        rows.push(inner_row);
        Ok(true)
    });
    row.truncate(base);
    read?;
    let every: Vec<usize> = if hashed {
        Vec::new()
    } else {
        (0..rows.len()).collect()
    };
    let mut matched = vec![false; rows.len()];
    let go_on = node(join.outer, run, row, &mut |run, r| {
        run.cx.check_cancel()?;
        let outer_len = r.len();
        let candidates = match hashed {
            false => &every,
            true => match key_of(join.on.keys.iter().map(|(_, e)| e), r, run)? {
                Some(key) => by_key.get(&key).unwrap_or(&every),
                None => &every,
            },
        };
        let mut any = false;
        for &i in candidates {
            r.truncate(outer_len);
            r.extend_from_slice(&rows[i]);
            if !all_hold(&join.on.on, r, run.cx)? {
                continue;
            }
            matched[i] = true;
            any = true;
            if all_hold(join.filter, r, run.cx)? && !sink(run, r)? {
                r.truncate(outer_len);
                return Ok(false);
            }
        }
        r.truncate(outer_len);
        let Some(width) = join.left.filter(|_| !any) else {
            return Ok(true);
        };
        r.resize(outer_len + width, Datum::Null);
        let go_on = !all_hold(join.filter, r, run.cx)? || sink(run, r)?;
        r.truncate(outer_len);
        Ok(go_on)
    })?;
    if !go_on {
        return Ok(false);
    }
    for (inner_row, _) in rows.iter().zip(&matched).filter(|(_, m)| !**m) {
        row.truncate(base);
        row.resize(offset, Datum::Null);
        row.extend_from_slice(inner_row);
        if all_hold(join.filter, row, run.cx)? && !sink(run, row)? {
            row.truncate(base);
            return Ok(false);
        }
    }
    row.truncate(base);
    Ok(true)
}
