//! Window functions as they run (`PlanNode::Window`): the input's rows are held (charged to
//! the statement's memory budget), and for each call sorted by its partition and ORDER BY
//! keys, each partition walked in that order to give every row its value; the rows then come
//! out in the input's order with the values appended. Never reads past its input or holds
//! anything between runs.

use std::cmp::Ordering;

use super::{Run, Sink, eval_all, sort_order};
use crate::error::{Result, SqlError, sqlstate};
use crate::exec::aggregate::AggState;
use crate::plan::SortKey;
use crate::plan::window::{Frame, FrameBound, WindowCall, WindowFunc};
use crate::values::datum::{Datum, row_bytes};

/// Sends `rows` (the input, all of it) to `sink`, each with its value of every call.
pub(super) fn windows(
    calls: &[WindowCall],
    mut rows: Vec<Vec<Datum>>,
    run: &mut Run<'_, '_, '_>,
    sink: &mut Sink<'_>,
) -> Result<bool> {
    let mut values: Vec<Vec<Datum>> = Vec::with_capacity(calls.len());
    for call in calls {
        values.push(call_values(call, &rows, run)?);
    }
    for (i, r) in rows.iter_mut().enumerate() {
        r.extend(
            values
                .iter_mut()
                .map(|v| std::mem::replace(&mut v[i], Datum::Null)),
        );
        if !sink(run, r)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The call's value for each row, by the rows' positions.
fn call_values(
    call: &WindowCall,
    rows: &[Vec<Datum>],
    run: &mut Run<'_, '_, '_>,
) -> Result<Vec<Datum>> {
    let cx = run.cx;
    // Each row's partition values then ORDER BY values, and the sort over them.
    let parts = call.partition_by.len();
    let mut keyed = Vec::with_capacity(rows.len());
    for r in rows {
        let mut k = eval_all(&call.partition_by, r, cx)?;
        for (e, _, _) in &call.order_by {
            k.push(e.eval(r, cx)?);
        }
        run.budget.take(row_bytes(&k) + 32)?;
        keyed.push(k);
    }
    let keys: Vec<SortKey> = (0..parts)
        .map(|column| SortKey {
            column,
            descending: false,
            nulls_first: false,
        })
        .chain(
            call.order_by
                .iter()
                .enumerate()
                .map(|(i, (_, descending, nulls_first))| SortKey {
                    column: parts + i,
                    descending: *descending,
                    nulls_first: *nulls_first,
                }),
        )
        .collect();
    let mut order: Vec<usize> = (0..rows.len()).collect();
    order.sort_by(|&a, &b| sort_order(&keys, &keyed[a], &keyed[b]));
    let same_partition =
        |a: usize, b: usize| sort_order(&keys[..parts], &keyed[a], &keyed[b]) == Ordering::Equal;
    let peers = |a: usize, b: usize| sort_order(&keys, &keyed[a], &keyed[b]) == Ordering::Equal;
    let start_offset = offset(&call.frame, &call.frame.start, "starting", run)?;
    let end_offset = offset(&call.frame, &call.frame.end, "ending", run)?;
    let rows_offsets = (count(&start_offset), count(&end_offset));

    let mut out = vec![Datum::Null; rows.len()];
    let mut s = 0;
    while s < order.len() {
        let mut e = s + 1;
        while e < order.len() && same_partition(order[s], order[e]) {
            e += 1;
        }
        let partition = &order[s..e];
        // Where each row's peer group starts and ends (exclusive), by position.
        let mut peer_start = vec![0; partition.len()];
        let mut peer_end = vec![0; partition.len()];
        let mut g = 0;
        while g < partition.len() {
            let mut h = g + 1;
            while h < partition.len() && peers(partition[g], partition[h]) {
                h += 1;
            }
            peer_start[g..h].fill(g);
            peer_end[g..h].fill(h);
            g = h;
        }
        let frame_of = |j: usize| {
            let peers = (peer_start[j], peer_end[j]);
            let (mut from, mut to) = frame(&call.frame, rows_offsets, j, peers, partition.len());
            // RANGE with an offset: where the one ORDER BY value reaches the bound.
            if !call.frame.rows {
                let order_key = keys.get(parts);
                let value = |p: usize| &keyed[partition[p]][parts];
                let at = |bound: &FrameBound, offset: &Option<Datum>, end: bool| {
                    let (Some(key), Some(offset)) = (order_key, offset) else {
                        return None;
                    };
                    let preceding = matches!(bound, FrameBound::Preceding(_));
                    let found = range_position(
                        (partition.len(), &value),
                        key,
                        value(j),
                        (offset, preceding, end),
                        peers,
                    );
                    Some(found)
                };
                if let Some(p) = at(&call.frame.start, &start_offset, false) {
                    from = p;
                }
                if let Some(p) = at(&call.frame.end, &end_offset, true) {
                    to = p;
                }
            }
            (from, to.max(from))
        };
        let n = partition.len();
        match &call.func {
            WindowFunc::RowNumber => {
                for (j, &i) in partition.iter().enumerate() {
                    out[i] = Datum::Int(j as i64 + 1);
                }
            }
            WindowFunc::Rank | WindowFunc::DenseRank | WindowFunc::PercentRank => {
                let mut dense = 0;
                for (j, &i) in partition.iter().enumerate() {
                    if peer_start[j] == j {
                        dense += 1;
                    }
                    let rank = peer_start[j] as i64 + 1;
                    out[i] = match call.func {
                        WindowFunc::Rank => Datum::Int(rank),
                        WindowFunc::DenseRank => Datum::Int(dense),
                        _ if n == 1 => Datum::Float(0.0),
                        _ => Datum::Float((rank - 1) as f64 / (n - 1) as f64),
                    };
                }
            }
            WindowFunc::CumeDist => {
                for (j, &i) in partition.iter().enumerate() {
                    out[i] = Datum::Float(peer_end[j] as f64 / n as f64);
                }
            }
            WindowFunc::Ntile => {
                for (j, &i) in partition.iter().enumerate() {
                    let buckets = match call.args[0].eval(&rows[i], cx)? {
                        Datum::Null => continue,
                        Datum::Int(b) if b > 0 => b as usize,
                        _ => {
                            return Err(SqlError::new(
                                sqlstate::INVALID_ARGUMENT_FOR_NTILE,
                                "argument of ntile must be greater than zero",
                            ));
                        }
                    };
                    // The first n % buckets buckets hold one row more.
                    let (size, larger) = (n / buckets, n % buckets);
                    let bucket = if j < larger * (size + 1) {
                        j / (size + 1)
                    } else {
                        larger + (j - larger * (size + 1)) / size.max(1)
                    };
                    out[i] = Datum::Int(bucket as i64 + 1);
                }
            }
            WindowFunc::Lag { lead } => {
                for (j, &i) in partition.iter().enumerate() {
                    let r = &rows[i];
                    let by = match call.args.get(1) {
                        Some(e) => match e.eval(r, cx)? {
                            Datum::Int(v) => v,
                            _ => continue, // NULL (the argument is an integer)
                        },
                        None => 1,
                    };
                    let at = if *lead { j as i64 + by } else { j as i64 - by };
                    out[i] = if (0..n as i64).contains(&at) {
                        call.args[0].eval(&rows[partition[at as usize]], cx)?
                    } else {
                        match call.args.get(2) {
                            Some(d) => d.eval(r, cx)?,
                            None => Datum::Null,
                        }
                    };
                }
            }
            WindowFunc::FirstValue | WindowFunc::LastValue | WindowFunc::NthValue => {
                for (j, &i) in partition.iter().enumerate() {
                    let (from, to) = frame_of(j);
                    let pick = match call.func {
                        WindowFunc::FirstValue => Some(from),
                        WindowFunc::LastValue => to.checked_sub(1),
                        _ => match call.args[1].eval(&rows[i], cx)? {
                            Datum::Null => continue,
                            Datum::Int(k) if k > 0 => Some(from + k as usize - 1),
                            _ => {
                                return Err(SqlError::new(
                                    sqlstate::INVALID_ARGUMENT_FOR_NTH_VALUE,
                                    "argument of nth_value must be greater than zero",
                                ));
                            }
                        },
                    };
                    out[i] = match pick {
                        Some(p) if p >= from && p < to => {
                            call.args[0].eval(&rows[partition[p]], cx)?
                        }
                        _ => Datum::Null,
                    };
                }
            }
            WindowFunc::Aggregate(agg) => {
                // A frame starting at the partition's start grows row by row: one running
                // state. Any other frame is aggregated afresh for each row. Rows whose frame
                // is the last row's (peers, a whole partition) take its value. The budget is
                // charged the largest state held, not each state made again.
                let running = call.frame.start == FrameBound::UnboundedPreceding;
                let mut state = AggState::new(agg);
                let (mut added, mut held, mut charged) = (0, 0, 0);
                let mut last: Option<((usize, usize), Datum)> = None;
                for (j, &i) in partition.iter().enumerate() {
                    let frame = frame_of(j);
                    if let Some((f, v)) = &last
                        && *f == frame
                    {
                        out[i] = v.clone();
                        continue;
                    }
                    let (from, to) = frame;
                    if !running || to < added {
                        state = AggState::new(agg);
                        (added, held) = (from, 0);
                    }
                    while added < to {
                        held += state.add(agg, &rows[partition[added]], cx)?;
                        added += 1;
                    }
                    if held > charged {
                        run.budget.take(held - charged)?;
                        charged = held;
                    }
                    let value = if from < to {
                        state.clone().finish(agg)?
                    } else {
                        AggState::new(agg).finish(agg)?
                    };
                    out[i] = value.clone();
                    last = Some((frame, value));
                }
            }
        }
        s = e;
    }
    Ok(out)
}

/// A frame bound's offset (`n PRECEDING`/`FOLLOWING`), which must not be NULL or negative.
fn offset(
    frame: &Frame,
    bound: &FrameBound,
    which: &str,
    run: &Run<'_, '_, '_>,
) -> Result<Option<Datum>> {
    let (FrameBound::Preceding(e) | FrameBound::Following(e)) = bound else {
        return Ok(None);
    };
    let v = e.eval(&[], run.cx)?;
    if v.is_null() {
        return Err(SqlError::new(
            sqlstate::NULL_VALUE_NOT_ALLOWED,
            format!("frame {which} offset must not be null"),
        ));
    }
    if v.sort_cmp(&v.arith('-', &v)?).is_lt() {
        return Err(SqlError::new(
            sqlstate::INVALID_PRECEDING_OR_FOLLOWING_SIZE,
            if frame.rows {
                format!("frame {which} offset must not be negative")
            } else {
                "invalid preceding or following size in window function".to_owned()
            },
        ));
    }
    Ok(Some(v))
}

/// A ROWS offset as a count of rows (0 where there is none).
fn count(offset: &Option<Datum>) -> usize {
    match offset {
        Some(Datum::Int(v)) => usize::try_from(*v).unwrap_or(usize::MAX),
        _ => 0,
    }
}

/// Where a RANGE bound `offset` before (`preceding`) or after the row's ORDER BY value
/// `current` falls among the partition's `n` values (sorted by `key`): the first position
/// at or past it for a frame's start, past it (`end`) for its end. A NULL value's bound is its
/// peers'; an offset reaching past what the type holds reaches past every value.
fn range_position<'v>(
    (n, value): (usize, &dyn Fn(usize) -> &'v Datum),
    key: &SortKey,
    current: &Datum,
    (offset, preceding, end): (&Datum, bool, bool),
    peers: (usize, usize),
) -> usize {
    if current.is_null() {
        return if end { peers.1 } else { peers.0 };
    }
    // Preceding is toward smaller values ascending, larger ones descending.
    let op = if preceding != key.descending {
        '-'
    } else {
        '+'
    };
    let Ok(target) = current.arith(op, offset) else {
        return if preceding { 0 } else { n };
    };
    let before = |x: &Datum| -> Ordering {
        if x.is_null() {
            return if key.nulls_first {
                Ordering::Less
            } else {
                Ordering::Greater
            };
        }
        let o = x.sort_cmp(&target);
        if key.descending { o.reverse() } else { o }
    };
    let (mut lo, mut hi) = (0, n);
    while lo < hi {
        let mid = (lo + hi) / 2;
        let o = before(value(mid));
        let left = if end {
            o != Ordering::Greater
        } else {
            o == Ordering::Less
        };
        if left {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// The positions `[from, to)` of row `j`'s frame in a partition of `n` rows, its peers at
/// `[peers.0, peers.1)`.
fn frame(
    frame: &Frame,
    (start_offset, end_offset): (usize, usize),
    j: usize,
    peers: (usize, usize),
    n: usize,
) -> (usize, usize) {
    let from = match &frame.start {
        FrameBound::UnboundedPreceding => 0,
        FrameBound::Preceding(_) => j.saturating_sub(start_offset),
        FrameBound::CurrentRow if frame.rows => j,
        FrameBound::CurrentRow => peers.0,
        FrameBound::Following(_) => j.saturating_add(start_offset).min(n),
        FrameBound::UnboundedFollowing => n,
    };
    let to = match &frame.end {
        FrameBound::UnboundedPreceding => 0,
        FrameBound::Preceding(_) => (j + 1).saturating_sub(end_offset),
        FrameBound::CurrentRow if frame.rows => j + 1,
        FrameBound::CurrentRow => peers.1,
        FrameBound::Following(_) => j.saturating_add(end_offset).saturating_add(1).min(n),
        FrameBound::UnboundedFollowing => n,
    };
    (from, to.max(from))
}
