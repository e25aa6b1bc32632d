//! Finding a table's rows: the engine key or key range an [`Access`] reads, evaluated against
//! the row joined so far; the rows it finds that pass a filter; and, for a locking read or a
//! write, each row locked and read again. Never decides which access to use (the binder did).

use std::ops::{Bound, ControlFlow};

use overtake_engine::{KeyBuf, KeyRange, RecordId, ScanOptions, Transaction};

use crate::catalog::SqlTable;
use crate::error::{Result, SqlError, sqlstate};
use crate::expr::{Context, Expr};
use crate::plan::{Access, LockWait};
use crate::values::datum::Datum;

/// A table row as values.
pub(super) fn read_row(table: &SqlTable, row: overtake_engine::RowRef<'_>) -> Vec<Datum> {
    table
        .columns
        .iter()
        .enumerate()
        .map(|(i, c)| Datum::from_value(row.get(i), c.ty))
        .collect()
}

/// A table row as values, followed by its `ctid` (`id`) if the table has one: the row as an
/// UPDATE or DELETE reads it.
pub(super) fn read_located(
    table: &SqlTable,
    row: overtake_engine::RowRef<'_>,
    id: RecordId,
) -> Vec<Datum> {
    let mut values = read_row(table, row);
    if table.has_ctid() {
        values.push(ctid(id));
    }
    values
}

/// The `ctid` of the row kept at `id`.
pub(super) fn ctid(id: RecordId) -> Datum {
    Datum::Tid(crate::values::tid::of_record(id))
}

/// The columns of the primary key, or of secondary index `index`.
fn key_columns(table: &SqlTable, index: Option<usize>) -> &[usize] {
    match index {
        None => &table.primary_key,
        Some(i) => &table.indexes[i].columns,
    }
}

/// `d` as a value of column type `ty`, if the column can hold a value equal to it: not for NULL,
/// nor for a value the cast would change (`1.5` for an integer column) or cannot make (out of
/// range), which the condition compares as it is.
pub(super) fn exactly(d: &Datum, ty: crate::values::types::SqlType) -> Option<Datum> {
    let cast = d.clone().cast(ty).ok()?;
    (cast.sql_cmp(d).ok()? == Some(std::cmp::Ordering::Equal)).then_some(cast)
}

/// The engine key of primary-key values `values` (in key order), or with `index` of that
/// secondary index's leading columns; `None` if no row's key can equal them.
pub(super) fn key_of(
    table: &SqlTable,
    index: Option<usize>,
    values: &[Datum],
    prefix: bool,
) -> Result<Option<KeyBuf>> {
    let mut kb = match index {
        None => table.engine.key(),
        Some(i) => table.engine.index_key(table.indexes[i].id),
    };
    for (d, &col) in values.iter().zip(key_columns(table, index)) {
        let ty = table.columns[col].ty;
        let Some(d) = exactly(d, ty) else {
            return Ok(None);
        };
        kb.value(d.to_value(ty)?.value());
    }
    Ok(Some(if prefix { kb.prefix()? } else { kb.finish()? }))
}

/// The engine key of a stored row: its primary key, or its row id in a table without one.
pub(super) fn stored_key(table: &SqlTable, row: &overtake_engine::RowRef<'_>) -> Result<KeyBuf> {
    let mut kb = table.engine.key();
    if table.row_ids.is_some() {
        kb.value(row.get(table.columns.len()));
    } else if table.primary_key.is_empty() {
        return Err(SqlError::unsupported(format!(
            "UPDATE, DELETE or FOR UPDATE on table \"{}\", kept without row ids by an older version (recreate it, or give it a primary key with ALTER TABLE ... ADD PRIMARY KEY),",
            table.name
        )));
    } else {
        for &col in &table.primary_key {
            kb.value(row.get(col));
        }
    }
    Ok(kb.finish()?)
}

/// What [`Access::Range`] holds: the index, the values of its leading columns, and the bounds
/// on the next.
type RangeParts<'a> = (
    Option<usize>,
    &'a [Expr],
    &'a Option<(Expr, bool)>,
    &'a Option<(Expr, bool)>,
);

/// Each of `exprs`' values against `outer`.
fn eval_all(exprs: &[Expr], outer: &[Datum], cx: &Context<'_>) -> Result<Vec<Datum>> {
    exprs.iter().map(|e| e.eval(outer, cx)).collect()
}

/// The key range of a range access over the primary key or secondary index `index`
/// (leading columns equal to `eq`, the next within the bounds), evaluated against `outer`;
/// `None` if it can match nothing.
fn range_of(
    table: &SqlTable,
    (index, eq, lower, upper): RangeParts<'_>,
    outer: &[Datum],
    cx: &Context<'_>,
) -> Result<Option<KeyRange>> {
    let eq = eval_all(eq, outer, cx)?;
    let bounded_type = key_columns(table, index)
        .get(eq.len())
        .map(|&c| table.columns[c].ty);
    let bound = |b: &Option<(Expr, bool)>, is_lower: bool| -> Result<Option<Bound<KeyBuf>>> {
        // The bound of the keys that start with `eq`.
        let by_eq = || -> Result<Option<Bound<KeyBuf>>> {
            if eq.is_empty() {
                return Ok(Some(Bound::Unbounded));
            }
            Ok(Some(match key_of(table, index, &eq, true)? {
                None => return Ok(None),
                Some(p) if is_lower => Bound::Included(p),
                Some(p) => p
                    .prefix_successor()
                    .map_or(Bound::Unbounded, Bound::Excluded),
            }))
        };
        let Some((e, inclusive)) = b else {
            return by_eq();
        };
        let v = e.eval(outer, cx)?;
        if v.is_null() {
            return Ok(None); // A comparison with NULL holds for no row.
        }
        if bounded_type.and_then(|ty| exactly(&v, ty)).is_none() {
            // `k > 1.5` on an integer key: the range keeps to `eq` and the
            // condition, checked on each row, does the rest.
            return by_eq();
        }
        let mut values = eq.clone();
        values.push(v);
        let Some(p) = key_of(table, index, &values, true)? else {
            return Ok(None);
        };
        // Every key starting with `p` is equal to the bound in its leading columns.
        Ok(Some(match (is_lower, inclusive) {
            (true, true) => Bound::Included(p),
            (false, false) => Bound::Excluded(p),
            (true, false) | (false, true) => match p.prefix_successor() {
                Some(s) if is_lower => Bound::Included(s),
                Some(s) => Bound::Excluded(s),
                None if is_lower => return Ok(None),
                None => Bound::Unbounded,
            },
        }))
    };
    Ok(match (bound(lower, true)?, bound(upper, false)?) {
        (Some(l), Some(u)) => Some(KeyRange::new(l, u)),
        _ => None,
    })
}

/// The rows of `table` that `access` finds given `outer` and that pass `filter` (evaluated
/// against `outer` followed by the row), as values; with `keys`, their engine keys are pushed
/// there instead (for a write that locks and reads each row again).
#[allow(clippy::too_many_arguments)]
pub(super) fn fetch(
    txn: &mut Transaction<'_>,
    table: &SqlTable,
    access: &Access,
    filter: &[Expr],
    outer: &[Datum],
    cx: &Context<'_>,
    limit: Option<usize>,
    mut keys: Option<&mut Vec<KeyBuf>>,
) -> Result<Vec<Vec<Datum>>> {
    let mut rows = Vec::new();
    let base = outer.len();
    // Taking keys, a row's values are not needed past the filter.
    let none = keys.is_some().then(|| vec![false; table.columns.len()]);
    fetch_each(
        txn,
        (table, access, filter, none.as_deref()),
        &mut outer.to_vec(),
        cx,
        &mut 0,
        &mut |combined, row| {
            let found = match keys.as_deref_mut() {
                Some(keys) => {
                    keys.push(stored_key(table, row)?);
                    keys.len()
                }
                None => {
                    let taken = combined[base..].iter_mut();
                    rows.push(taken.map(|d| std::mem::replace(d, Datum::Null)).collect());
                    rows.len()
                }
            };
            Ok(limit.is_none_or(|l| found < l))
        },
    )?;
    Ok(rows)
}

/// What [`fetch_each`] passes each row it finds to: the joined row (the outer row followed by
/// the found row's columns, those not needed NULL; it may take the values) and the engine's
/// row; it answers whether to go on.
pub(super) type EachRow<'e> =
    dyn FnMut(&mut [Datum], &overtake_engine::RowRef<'_>) -> Result<bool> + 'e;

/// The rows of `table` that `access` finds given the outer row `combined` and that pass
/// `filter`, each passed to `each` as `combined` followed by its values (with `needed`, only
/// the columns it marks and those the filter reads are decoded, the others left NULL),
/// counting in `read` the rows the access read. `each` runs where the engine reads the row:
/// it must do little (collect, hash) and never wait.
pub(super) fn fetch_each(
    txn: &mut Transaction<'_>,
    (table, access, filter, needed): (&SqlTable, &Access, &[Expr], Option<&[bool]>),
    combined: &mut Vec<Datum>,
    cx: &Context<'_>,
    read: &mut u64,
    each: &mut EachRow<'_>,
) -> Result<()> {
    let base = combined.len();
    // Run as a closure so that `combined` is the outer row again however it ends.
    let mut found = |combined: &mut Vec<Datum>| -> Result<()> {
        let reads = reads(txn, table, access, combined, cx)?;
        let mut failure = None;
        let outer = combined.len();
        combined.resize(outer + table.row_width(), Datum::Null);
        // The columns the filter reads are decoded first; the others only for a row that passes
        // (a scan that keeps few rows decodes little: strings are copies).
        let (first, mut rest, filter_reads_ctid) = split_columns(table, filter, outer);
        if let Some(needed) = needed {
            rest.retain(|&c| needed.get(c).copied().unwrap_or(true));
        }
        // The `ctid`, set only for a statement that reads it.
        let ctid_at = table.columns.len();
        let wants_ctid = table.has_ctid()
            && (filter_reads_ctid
                || needed.is_none_or(|n| n.get(ctid_at).copied().unwrap_or(true)));
        let mut visit = |row: overtake_engine::RowRef<'_>, id: RecordId| {
            // A cancelled statement stops within a few hundred rows (a load per row would do too;
            // this keeps it off the hot path of point reads).
            *read += 1;
            if read.is_multiple_of(256)
                && let Err(e) = cx.check_cancel()
            {
                failure = Some(e);
                return ControlFlow::Break(());
            }
            let decode = |combined: &mut Vec<Datum>, columns: &[usize]| {
                for &c in columns {
                    combined[outer + c] = Datum::from_value(row.get(c), table.columns[c].ty);
                }
            };
            if wants_ctid {
                combined[outer + ctid_at] = ctid(id);
            }
            decode(combined, &first);
            let passed = filter.iter().try_fold(true, |ok, f| {
                Ok::<_, SqlError>(ok && f.holds(combined, cx)?)
            });
            let go_on = match passed {
                Ok(true) => {
                    decode(combined, &rest);
                    each(combined, &row)
                }
                Ok(false) => Ok(true),
                Err(e) => Err(e),
            };
            match go_on {
                Ok(true) => ControlFlow::Continue(()),
                Ok(false) => ControlFlow::Break(()),
                Err(e) => {
                    failure = Some(e);
                    ControlFlow::Break(())
                }
            }
        };
        match reads {
            Reads::Nothing => {}
            Reads::Key(key) => {
                txn.get_located(&table.engine, &key, &mut visit)?;
            }
            Reads::Keys(keys, whole) => {
                for key in keys {
                    let mut broke = false;
                    let mut each = |r: overtake_engine::RowRef<'_>, id: RecordId| {
                        let flow = visit(r, id);
                        broke |= flow.is_break();
                        flow
                    };
                    if whole {
                        txn.get_located(&table.engine, &key, &mut each)?;
                    } else {
                        let range = KeyRange::prefix(key);
                        let forward = ScanOptions::forward();
                        txn.scan_located(&table.engine, &range, forward, &mut each)?;
                    }
                    if broke {
                        break;
                    }
                }
            }
            Reads::Range(Some(id), range) => {
                let forward = ScanOptions::forward();
                txn.scan_index_located(&table.engine, id, &range, forward, visit)?;
            }
            Reads::Range(None, range) => {
                txn.scan_located(&table.engine, &range, ScanOptions::forward(), visit)?;
            }
        }
        match failure {
            Some(e) => Err(e),
            None => Ok(()),
        }
    };
    let found = found(combined);
    combined.truncate(base);
    found
}

/// Where an access reads, once evaluated against the outer row.
enum Reads {
    Nothing,
    Key(KeyBuf),
    /// Whole keys (read one by one) or leading parts of keys (the ranges they start).
    Keys(Vec<KeyBuf>, bool),
    Range(Option<overtake_engine::IndexId>, KeyRange),
}

/// Where `access` reads given the outer row `outer`.
fn reads(
    txn: &mut Transaction<'_>,
    table: &SqlTable,
    access: &Access,
    outer: &[Datum],
    cx: &Context<'_>,
) -> Result<Reads> {
    Ok(match access {
        // The row a `ctid` names, found again by its key (the condition on the `ctid` stays
        // with the scan's others: a record reused meanwhile holds another row).
        Access::Tid(e) => {
            // A value of another type (a text column's) is read as a tid, as the condition
            // compares it.
            let id = match e
                .eval(outer, cx)?
                .cast(crate::values::types::SqlType::Tid)?
            {
                Datum::Tid(t) => crate::values::tid::record(t),
                _ => None,
            };
            match id {
                Some(id) => match txn.key_of_record(&table.engine, id)? {
                    Some(key) => Reads::Key(key),
                    None => Reads::Nothing,
                },
                None => Reads::Nothing,
            }
        }
        Access::Key(es) => match key_of(table, None, &eval_all(es, outer, cx)?, false)? {
            Some(key) => Reads::Key(key),
            None => Reads::Nothing,
        },
        Access::Keys(lists) => {
            let whole = lists.first().map(Vec::len) == Some(table.primary_key.len());
            let mut keys = Vec::with_capacity(lists.len());
            for es in lists {
                keys.extend(key_of(table, None, &eval_all(es, outer, cx)?, !whole)?);
            }
            // In key order, each once: a row listed twice is still one row.
            keys.sort_unstable_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
            keys.dedup();
            Reads::Keys(keys, whole)
        }
        // A hash join's build reads every row (see `exec::select`); read here, it is a scan.
        Access::Scan | Access::Hash(_) => Reads::Range(None, KeyRange::all()),
        Access::Range {
            index,
            eq,
            lower,
            upper,
        } => match range_of(table, (*index, eq, lower, upper), outer, cx)? {
            Some(range) => Reads::Range(index.map(|i| table.indexes[i].id), range),
            None => Reads::Nothing,
        },
    })
}

/// `table`'s columns split in two: those `filter` reads (its columns from `outer` on), and the
/// others; and whether it reads the row's `ctid`.
fn split_columns(
    table: &SqlTable,
    filter: &[Expr],
    outer: usize,
) -> (Vec<usize>, Vec<usize>, bool) {
    let mut read = vec![false; table.row_width()];
    for f in filter {
        f.visit(&mut |e| {
            if let Expr::Column(i) = e
                && let Some(r) = i.checked_sub(outer).and_then(|c| read.get_mut(c))
            {
                *r = true;
            }
        });
    }
    let own = table.columns.len();
    let (first, rest) = (0..own).partition(|&c| read[c]);
    (first, rest, read.get(own).copied().unwrap_or(false))
}

/// Locks the row under `key` for writing and reads it again: the row, if it is still there
/// and `filter` still holds.
pub(super) fn lock_row(
    txn: &mut Transaction<'_>,
    (table, wait): (&SqlTable, LockWait),
    key: &KeyBuf,
    filter: &[Expr],
    outer: &[Datum],
    cx: &Context<'_>,
) -> Result<Option<Vec<Datum>>> {
    match wait {
        LockWait::Wait => txn.lock_row(&table.engine, key)?,
        LockWait::NoWait if !txn.try_lock_row(&table.engine, key)? => {
            return Err(SqlError::new(
                sqlstate::LOCK_NOT_AVAILABLE,
                format!(
                    "could not obtain lock on row in relation \"{}\"",
                    table.name
                ),
            ));
        }
        LockWait::SkipLocked if !txn.try_lock_row(&table.engine, key)? => return Ok(None),
        LockWait::NoWait | LockWait::SkipLocked => {}
    }
    let Some(latest) =
        txn.get_located(&table.engine, key, |row, id| read_located(table, row, id))?
    else {
        return Ok(None);
    };
    let mut combined = outer.to_vec();
    combined.extend(latest.iter().cloned());
    let holds = filter.iter().try_fold(true, |ok, f| {
        Ok::<_, SqlError>(ok && f.holds(&combined, cx)?)
    })?;
    Ok(holds.then_some(latest))
}
