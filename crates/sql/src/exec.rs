//! Running plans inside an engine transaction: nested-loop joins over the chosen accesses,
//! aggregation, sorting and limits for SELECT; INSERT, UPDATE and DELETE row by row.
//!
//! UPDATE and DELETE first find the rows to change, then, for each, take its write lock
//! (`Transaction::lock_row`: under READ COMMITTED this waits for a concurrent writer and moves the
//! snapshot past its commit), read the row again and check the condition on what they read, as
//! PostgreSQL re-checks a row that changed under it. Nothing here blocks a worker: lock waits
//! park the task.

use std::collections::HashMap;
use std::ops::{Bound, ControlFlow};

use overtake_engine::{KeyBuf, KeyRange, ScanOptions, TableLock, Transaction};

use crate::aggregate::AggState;
use crate::catalog::SqlTable;
use crate::datum::Datum;
use crate::error::{Result, SqlError, sqlstate};
use crate::expr::{Context, Expr};
use crate::plan::{
    Access, DeletePlan, InsertPlan, InsertSource, LockWait, Query, SelectPlan, UpdatePlan,
};

/// What a statement returns: its command tag (`SELECT 3`, `INSERT 0 1`) and rows.
#[derive(Debug, Default)]
pub struct Output {
    pub tag: String,
    pub rows: Vec<Vec<Datum>>,
}

/// Runs `query` in `txn`.
pub fn execute(txn: &mut Transaction<'_>, query: &Query, cx: &Context<'_>) -> Result<Output> {
    let mut rows = Vec::new();
    let tag = execute_each(txn, query, cx, &mut |r| {
        rows.push(r);
        Ok(())
    })?;
    Ok(Output { tag, rows })
}

/// Runs `query` in `txn`, passing the rows it returns to `emit` as they are made (see
/// [`select_each`]); returns its command tag.
pub fn execute_each(
    txn: &mut Transaction<'_>,
    query: &Query,
    cx: &Context<'_>,
    emit: &mut dyn FnMut(Vec<Datum>) -> Result<()>,
) -> Result<String> {
    Ok(match query {
        Query::Select(s) => format!("SELECT {}", select_each(txn, s, cx, emit)?),
        Query::Insert(i) => insert(txn, i, cx)?.tag,
        Query::Update(u) => update(txn, u, cx)?.tag,
        Query::Delete(d) => delete(txn, d, cx)?.tag,
    })
}

/// A table row as values.
fn read_row(table: &SqlTable, row: overtake_engine::RowRef<'_>) -> Vec<Datum> {
    table
        .columns
        .iter()
        .enumerate()
        .map(|(i, c)| Datum::from_value(row.get(i), c.ty))
        .collect()
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
fn exactly(d: &Datum, ty: crate::types::SqlType) -> Option<Datum> {
    let cast = d.clone().cast(ty).ok()?;
    (cast.sql_cmp(d).ok()? == Some(std::cmp::Ordering::Equal)).then_some(cast)
}

/// The engine key of primary-key values `values` (in key order), or with `index` of that
/// secondary index's leading columns; `None` if no row's key can equal them.
fn key_of(
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
fn stored_key(table: &SqlTable, row: &overtake_engine::RowRef<'_>) -> Result<KeyBuf> {
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

/// The key range `access` reads, evaluated against `outer`; `None` if it can match nothing.
fn range_of(
    table: &SqlTable,
    access: &Access,
    outer: &[Datum],
    cx: &Context<'_>,
) -> Result<Option<KeyRange>> {
    let eval = |es: &[Expr]| {
        es.iter()
            .map(|e| e.eval(outer, cx))
            .collect::<Result<Vec<_>>>()
    };
    Ok(match access {
        Access::Scan => Some(KeyRange::all()),
        Access::Key(es) => key_of(table, None, &eval(es)?, false)?.map(KeyRange::point),
        Access::Range {
            index,
            eq,
            lower,
            upper,
        } => {
            let eq = eval(eq)?;
            let bounded_type = key_columns(table, *index)
                .get(eq.len())
                .map(|&c| table.columns[c].ty);
            let bound =
                |b: &Option<(Expr, bool)>, is_lower: bool| -> Result<Option<Bound<KeyBuf>>> {
                    // The bound of the keys that start with `eq`.
                    let by_eq = || -> Result<Option<Bound<KeyBuf>>> {
                        if eq.is_empty() {
                            return Ok(Some(Bound::Unbounded));
                        }
                        Ok(Some(match key_of(table, *index, &eq, true)? {
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
                    let Some(p) = key_of(table, *index, &values, true)? else {
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
            match (bound(lower, true)?, bound(upper, false)?) {
                (Some(l), Some(u)) => Some(KeyRange::new(l, u)),
                _ => None,
            }
        }
    })
}

/// The rows of `table` that `access` finds given `outer` and that pass `filter` (evaluated
/// against `outer` followed by the row), as values; with `keys`, their engine keys are pushed
/// there instead (for a write that locks and reads each row again).
#[allow(clippy::too_many_arguments)]
fn fetch(
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
    let mut failure = None;
    let mut combined = outer.to_vec();
    let mut seen = 0u32;
    let mut visit = |row: overtake_engine::RowRef<'_>| {
        // A cancelled statement stops within a few hundred rows (a load per row would do too;
        // this keeps it off the hot path of point reads).
        seen = seen.wrapping_add(1);
        if seen.is_multiple_of(256)
            && let Err(e) = cx.check_cancel()
        {
            failure = Some(e);
            return ControlFlow::Break(());
        }
        let values = read_row(table, row);
        combined.truncate(outer.len());
        combined.extend(values);
        match filter.iter().try_fold(true, |ok, f| {
            Ok::<_, SqlError>(ok && f.holds(&combined, cx)?)
        }) {
            Ok(true) => {
                let found = match keys.as_deref_mut() {
                    Some(keys) => match stored_key(table, &row) {
                        Ok(key) => {
                            keys.push(key);
                            keys.len()
                        }
                        Err(e) => {
                            failure = Some(e);
                            return ControlFlow::Break(());
                        }
                    },
                    None => {
                        rows.push(combined[outer.len()..].to_vec());
                        rows.len()
                    }
                };
                if limit.is_some_and(|l| found >= l) {
                    return ControlFlow::Break(());
                }
            }
            Ok(false) => {}
            Err(e) => {
                failure = Some(e);
                return ControlFlow::Break(());
            }
        }
        ControlFlow::Continue(())
    };
    if let Access::Key(es) = access {
        let values = es
            .iter()
            .map(|e| e.eval(outer, cx))
            .collect::<Result<Vec<_>>>()?;
        if let Some(key) = key_of(table, None, &values, false)? {
            txn.get(&table.engine, &key, &mut visit)?;
        }
    } else if let Some(range) = range_of(table, access, outer, cx)? {
        match access {
            Access::Range { index: Some(i), .. } => {
                let id = table.indexes[*i].id;
                txn.scan_index(&table.engine, id, &range, ScanOptions::forward(), visit)?
            }
            _ => txn.scan(&table.engine, &range, ScanOptions::forward(), visit)?,
        };
    }
    match failure {
        Some(e) => Err(e),
        None => Ok(rows),
    }
}

/// Joins the sources from `level` on, calling `sink` with each joined row that passes every
/// filter; stops when `sink` says so (false).
fn join(
    txn: &mut Transaction<'_>,
    plan: &SelectPlan,
    level: usize,
    row: &mut Vec<Datum>,
    cx: &Context<'_>,
    sink: &mut dyn FnMut(&[Datum]) -> Result<bool>,
) -> Result<bool> {
    let Some(source) = plan.sources.get(level) else {
        if plan.sources.is_empty() {
            for f in &plan.filters[0] {
                if !f.holds(row, cx)? {
                    return Ok(true);
                }
            }
        }
        return sink(row);
    };
    let filter = &plan.filters[level];
    let found = if plan.for_update {
        let mut keys = Vec::new();
        let (access, table) = (&source.access, &source.table);
        fetch(txn, table, access, filter, row, cx, None, Some(&mut keys))?;
        lock_rows(txn, (table, plan.lock_wait), keys, filter, row, cx)?
    } else {
        fetch(
            txn,
            &source.table,
            &source.access,
            filter,
            row,
            cx,
            None,
            None,
        )?
    };
    for r in found {
        if level + 1 < plan.sources.len() {
            // Each inner read may find a row or two: the join checks between them.
            cx.check_cancel()?;
        }
        row.extend(r);
        let go_on = join(txn, plan, level + 1, row, cx, sink)?;
        row.truncate(source.offset);
        if !go_on {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Locks the rows under each of `keys` for writing, reads each again and keeps it if `filter`
/// still holds.
fn lock_rows(
    txn: &mut Transaction<'_>,
    (table, wait): (&SqlTable, LockWait),
    keys: Vec<KeyBuf>,
    filter: &[Expr],
    outer: &[Datum],
    cx: &Context<'_>,
) -> Result<Vec<Vec<Datum>>> {
    let mut kept = Vec::with_capacity(keys.len());
    for key in keys {
        match wait {
            LockWait::Wait => txn.lock_row(&table.engine, &key)?,
            LockWait::NoWait if !txn.try_lock_row(&table.engine, &key)? => {
                return Err(SqlError::new(
                    sqlstate::LOCK_NOT_AVAILABLE,
                    format!(
                        "could not obtain lock on row in relation \"{}\"",
                        table.name
                    ),
                ));
            }
            LockWait::SkipLocked if !txn.try_lock_row(&table.engine, &key)? => continue,
            LockWait::NoWait | LockWait::SkipLocked => {}
        }
        if let Some(latest) = txn.get(&table.engine, &key, |row| read_row(table, row))? {
            let mut combined = outer.to_vec();
            combined.extend(latest.iter().cloned());
            if filter.iter().try_fold(true, |ok, f| {
                Ok::<_, SqlError>(ok && f.holds(&combined, cx)?)
            })? {
                kept.push(latest);
            }
        }
    }
    Ok(kept)
}

/// A count argument (LIMIT, OFFSET).
fn count(e: &Option<Expr>, cx: &Context<'_>) -> Result<Option<usize>> {
    match e {
        None => Ok(None),
        Some(e) => match e.eval(&[], cx)? {
            Datum::Null => Ok(None),
            d => match d.cast(crate::types::SqlType::Int8)? {
                Datum::Int(n) if n >= 0 => Ok(Some(n as usize)),
                _ => Err(SqlError::new(
                    sqlstate::INVALID_PARAMETER_VALUE,
                    "LIMIT and OFFSET must not be negative",
                )),
            },
        },
    }
}

/// Runs a SELECT, returning its rows.
pub fn select(
    txn: &mut Transaction<'_>,
    plan: &SelectPlan,
    cx: &Context<'_>,
) -> Result<Vec<Vec<Datum>>> {
    let mut rows = Vec::new();
    select_each(txn, plan, cx, &mut |r| {
        rows.push(r);
        Ok(())
    })?;
    Ok(rows)
}

/// Memory a statement holds for its sorts, groups and DISTINCT, against its budget
/// (`Context::memory`): past it the statement fails with 53200, rather than the server growing
/// without bound (nothing spills to disk here).
struct Budget {
    held: usize,
    limit: usize,
}

impl Budget {
    fn take(&mut self, bytes: usize) -> Result<()> {
        self.held += bytes;
        if self.held > self.limit {
            return Err(SqlError::new(
                sqlstate::OUT_OF_MEMORY,
                "out of memory",
            )
            .with_detail(format!(
                "The statement's sorts, groups and DISTINCT need more than statement_mem ({} kB).",
                self.limit / 1024
            )));
        }
        Ok(())
    }
}

/// Runs a SELECT, passing each row of its result to `emit` as soon as it is known: as the scan
/// finds it when nothing reorders or groups rows, else after the sort or grouping (held against
/// the statement's memory budget). Returns how many rows it passed.
pub fn select_each(
    txn: &mut Transaction<'_>,
    plan: &SelectPlan,
    cx: &Context<'_>,
    emit: &mut dyn FnMut(Vec<Datum>) -> Result<()>,
) -> Result<u64> {
    let limit = count(&plan.limit, cx)?;
    let offset = count(&plan.offset, cx)?.unwrap_or(0);
    let streaming = plan.aggregate.is_none() && plan.order_by.is_empty() && !plan.distinct;
    let mut row = Vec::new();
    if streaming {
        // Rows leave as the joins find them: nothing is held but the row in hand.
        let (mut seen, mut sent) = (0usize, 0u64);
        if limit == Some(0) {
            return Ok(0);
        }
        join(txn, plan, 0, &mut row, cx, &mut |r| {
            seen += 1;
            if seen > offset {
                let mut out: Vec<Datum> = plan
                    .projection
                    .iter()
                    .map(|e| e.eval(r, cx))
                    .collect::<Result<_>>()?;
                out.truncate(plan.visible);
                emit(out)?;
                sent += 1;
            }
            Ok(limit.is_none_or(|l| seen < l + offset))
        })?;
        return Ok(sent);
    }
    let mut budget = Budget {
        held: 0,
        limit: cx.memory,
    };
    let mut out: Vec<Vec<Datum>> = Vec::new();
    match &plan.aggregate {
        None => {
            join(txn, plan, 0, &mut row, cx, &mut |r| {
                let projected: Vec<Datum> = plan
                    .projection
                    .iter()
                    .map(|e| e.eval(r, cx))
                    .collect::<Result<_>>()?;
                budget.take(crate::datum::row_bytes(&projected))?;
                out.push(projected);
                Ok(true)
            })?;
        }
        Some(agg) => {
            let mut groups: Vec<(Vec<Datum>, Vec<AggState>)> = Vec::new();
            let mut index: HashMap<String, usize> = HashMap::new();
            join(txn, plan, 0, &mut row, cx, &mut |r| {
                let key: Vec<Datum> = agg
                    .group_by
                    .iter()
                    .map(|e| e.eval(r, cx))
                    .collect::<Result<_>>()?;
                let id = crate::datum::group_key(&key);
                let g = match index.get(&id) {
                    Some(&g) => g,
                    None => {
                        budget.take(
                            crate::datum::row_bytes(&key)
                                + 2 * id.len()
                                + agg.calls.len() * std::mem::size_of::<AggState>()
                                + 64,
                        )?;
                        groups.push((key, agg.calls.iter().map(AggState::new).collect()));
                        index.insert(id, groups.len() - 1);
                        groups.len() - 1
                    }
                };
                for (state, call) in groups[g].1.iter_mut().zip(&agg.calls) {
                    state.add(call, r, cx)?;
                }
                Ok(true)
            })?;
            if groups.is_empty() && agg.group_by.is_empty() {
                groups.push((Vec::new(), agg.calls.iter().map(AggState::new).collect()));
            }
            drop(index);
            for (key, states) in groups {
                let mut r = key;
                for (state, call) in states.into_iter().zip(&agg.calls) {
                    r.push(state.finish(call)?);
                }
                if let Some(h) = &agg.having
                    && !h.holds(&r, cx)?
                {
                    continue;
                }
                out.push(
                    plan.projection
                        .iter()
                        .map(|e| e.eval(&r, cx))
                        .collect::<Result<_>>()?,
                );
            }
        }
    }
    if plan.distinct {
        let mut seen = std::collections::HashSet::new();
        let mut kept = Vec::with_capacity(out.len());
        for r in out {
            let key = crate::datum::group_key(&r[..plan.visible]);
            if !seen.contains(&key) {
                budget.take(key.len() + 32)?;
                seen.insert(key);
                kept.push(r);
            }
        }
        out = kept;
    }
    if !plan.order_by.is_empty() {
        out.sort_by(|a, b| {
            for k in &plan.order_by {
                let (x, y) = (&a[k.column], &b[k.column]);
                let ord = match (x.is_null(), y.is_null()) {
                    (true, true) => std::cmp::Ordering::Equal,
                    (true, false) => {
                        if k.nulls_first {
                            std::cmp::Ordering::Less
                        } else {
                            std::cmp::Ordering::Greater
                        }
                    }
                    (false, true) => {
                        if k.nulls_first {
                            std::cmp::Ordering::Greater
                        } else {
                            std::cmp::Ordering::Less
                        }
                    }
                    _ => {
                        let o = x.sort_cmp(y);
                        if k.descending { o.reverse() } else { o }
                    }
                };
                if ord != std::cmp::Ordering::Equal {
                    return ord;
                }
            }
            std::cmp::Ordering::Equal
        });
    }
    let mut sent = 0;
    for mut r in out
        .into_iter()
        .skip(offset)
        .take(limit.unwrap_or(usize::MAX))
    {
        r.truncate(plan.visible);
        emit(r)?;
        sent += 1;
    }
    Ok(sent)
}

/// Inserts `rows` (values for `columns`, in order) into `table`.
pub fn insert_rows(
    txn: &mut Transaction<'_>,
    table: &SqlTable,
    columns: &[usize],
    rows: impl IntoIterator<Item = Vec<Datum>>,
    cx: &Context<'_>,
) -> Result<u64> {
    lock_for_writing(txn, table)?;
    let mut n = 0;
    for source in rows {
        let mut values: Vec<Option<Datum>> = vec![None; table.columns.len()];
        for (d, &col) in source.into_iter().zip(columns) {
            values[col] = Some(d);
        }
        let mut builder = table.engine.row_builder();
        let mut cast = Vec::with_capacity(values.len());
        for (v, c) in values.into_iter().zip(&table.columns) {
            let v = match v {
                Some(v) => v,
                None => match &c.default {
                    Some(d) => d.expr.eval(&[], cx)?,
                    None => Datum::Null,
                },
            };
            cast.push(v.cast(c.ty)?);
        }
        check_not_null(table, &cast)?;
        for (i, (v, c)) in cast.iter().zip(&table.columns).enumerate() {
            builder.set(i, v.to_value(c.ty)?.value());
        }
        if let Some(ids) = &table.row_ids {
            builder.set(table.columns.len(), overtake_engine::Value::Int(ids.take()));
        }
        txn.insert(&table.engine, builder.finish()?)
            .map_err(|e| match e {
                overtake_engine::Error::DuplicateKey { .. } => duplicate_key(table, &cast),
                e => e.into(),
            })?;
        n += 1;
    }
    Ok(n)
}

/// Fails with 23502, as PostgreSQL reports it, if `row` (every column of `table`) holds a NULL
/// where its column may not.
fn check_not_null(table: &SqlTable, row: &[Datum]) -> Result<()> {
    let Some((c, _)) = table
        .columns
        .iter()
        .zip(row)
        .find(|(c, v)| v.is_null() && !c.nullable)
    else {
        return Ok(());
    };
    Err(SqlError::new(
        sqlstate::NOT_NULL_VIOLATION,
        format!(
            "null value in column \"{}\" of relation \"{}\" violates not-null constraint",
            c.name, table.name
        ),
    )
    .with_detail(format!("Failing row contains ({}).", row_text(row)))
    .concerning(&table.name, Some(&c.name), None))
}

/// A row's values as PostgreSQL lists them in an error's detail (`1, null, abc`).
fn row_text(row: &[Datum]) -> String {
    row.iter()
        .map(|v| v.to_text().unwrap_or_else(|| "null".into()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The 23505 of a row of `table` whose primary key is taken, as PostgreSQL reports it.
fn duplicate_key(table: &SqlTable, row: &[Datum]) -> SqlError {
    let constraint = format!("{}_pkey", table.name);
    let columns: Vec<&str> = table
        .primary_key
        .iter()
        .map(|&c| table.columns[c].name.as_str())
        .collect();
    let values: Vec<Datum> = table.primary_key.iter().map(|&c| row[c].clone()).collect();
    SqlError::new(
        sqlstate::UNIQUE_VIOLATION,
        format!("duplicate key value violates unique constraint \"{constraint}\""),
    )
    .with_detail(format!(
        "Key ({})=({}) already exists.",
        columns.join(", "),
        row_text(&values)
    ))
    .concerning(&table.name, None, Some(constraint))
}

fn insert(txn: &mut Transaction<'_>, plan: &InsertPlan, cx: &Context<'_>) -> Result<Output> {
    let rows = match &plan.source {
        InsertSource::Values(rows) => rows
            .iter()
            .map(|r| {
                r.iter()
                    .map(|e| e.eval(&[], cx))
                    .collect::<Result<Vec<_>>>()
            })
            .collect::<Result<Vec<_>>>()?,
        InsertSource::Select(s) => select(txn, s, cx)?,
    };
    let n = insert_rows(txn, &plan.table, &plan.columns, rows, cx)?;
    Ok(Output {
        tag: format!("INSERT 0 {n}"),
        rows: Vec::new(),
    })
}

/// The keys of the rows an UPDATE or DELETE changes, each re-read under its write lock and
/// checked again: `change` gets each row that still qualifies.
fn for_each_target(
    txn: &mut Transaction<'_>,
    table: &SqlTable,
    (access, filter): (&Access, &[Expr]),
    cx: &Context<'_>,
    mut change: impl FnMut(&mut Transaction<'_>, &KeyBuf, Vec<Datum>) -> Result<()>,
) -> Result<u64> {
    let mut keys = Vec::new();
    fetch(txn, table, access, filter, &[], cx, None, Some(&mut keys))?;
    let mut n = 0;
    for key in keys {
        txn.lock_row(&table.engine, &key)?;
        let Some(latest) = txn.get(&table.engine, &key, |r| read_row(table, r))? else {
            continue; // Deleted since it was found.
        };
        if !filter
            .iter()
            .try_fold(true, |ok, f| Ok::<_, SqlError>(ok && f.holds(&latest, cx)?))?
        {
            continue;
        }
        change(txn, &key, latest)?;
        n += 1;
    }
    Ok(n)
}

/// Takes `table`'s write lock for the rest of the transaction, as PostgreSQL's writers take
/// ROW EXCLUSIVE: it waits while a block rebuilding the table (TRUNCATE, ADD PRIMARY KEY,
/// CREATE INDEX, DROP) holds it, and keeps the rebuild from starting meanwhile; a table such a
/// block replaced while this waited is refused (40001) rather than written where nobody reads.
fn lock_for_writing(txn: &mut Transaction<'_>, table: &SqlTable) -> Result<()> {
    Ok(txn.lock_table(&table.engine, TableLock::Write)?)
}

fn update(txn: &mut Transaction<'_>, plan: &UpdatePlan, cx: &Context<'_>) -> Result<Output> {
    let table = &plan.table;
    lock_for_writing(txn, table)?;
    let n = for_each_target(
        txn,
        table,
        (&plan.access, &plan.filter),
        cx,
        |txn, key, row| {
            let mut new = Vec::with_capacity(plan.assignments.len());
            let mut moves = false;
            for (col, e) in &plan.assignments {
                let v = e.eval(&row, cx)?.cast(table.columns[*col].ty)?;
                moves |= table.primary_key.contains(col)
                    && v.sql_cmp(&row[*col])? != Some(std::cmp::Ordering::Equal);
                new.push((*col, v));
            }
            if new
                .iter()
                .any(|(col, v)| v.is_null() && !table.columns[*col].nullable)
            {
                // The error shows the row as it would have become.
                let mut changed = row.clone();
                for (col, v) in &new {
                    changed[*col] = v.clone();
                }
                check_not_null(table, &changed)?;
            }
            if moves {
                // A new key is a new row to the engine: the old one is deleted and the changed
                // one inserted, which fails with 23505 if the new key is taken (checked row by
                // row, as PostgreSQL checks a unique constraint that is not deferred).
                let mut changed = row;
                for (col, v) in new {
                    changed[col] = v;
                }
                txn.delete(&table.engine, key)?;
                let all: Vec<usize> = (0..table.columns.len()).collect();
                insert_rows(txn, table, &all, [changed], cx)?;
                return Ok(());
            }
            let values = new
                .iter()
                .map(|(col, v)| Ok((*col, v.to_value(table.columns[*col].ty)?)))
                .collect::<Result<Vec<_>>>()?;
            txn.update(&table.engine, key, |m| {
                for (col, v) in &values {
                    m.set(*col, v.value());
                }
            })?;
            Ok(())
        },
    )?;
    Ok(Output {
        tag: format!("UPDATE {n}"),
        rows: Vec::new(),
    })
}

fn delete(txn: &mut Transaction<'_>, plan: &DeletePlan, cx: &Context<'_>) -> Result<Output> {
    lock_for_writing(txn, &plan.table)?;
    let n = for_each_target(
        txn,
        &plan.table,
        (&plan.access, &plan.filter),
        cx,
        |txn, key, _| {
            txn.delete(&plan.table.engine, key)?;
            Ok(())
        },
    )?;
    Ok(Output {
        tag: format!("DELETE {n}"),
        rows: Vec::new(),
    })
}
