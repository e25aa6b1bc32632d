//! `INSERT ... ON CONFLICT`: each proposed row is written after a savepoint; if an arbiter's
//! values are taken the row's writes are rolled back to it and the row is skipped (`DO
//! NOTHING`) or the row holding the values is locked, read as it now is, and updated (`DO
//! UPDATE`), as PostgreSQL's speculative insertion does. A conflict on an index that is not an
//! arbiter fails the statement with its 23505.
//!
//! Must never update a row this statement already wrote (21000, as PostgreSQL), nor loop
//! without bound when concurrent writers keep taking and giving back the values (40001).

use std::collections::HashSet;
use std::ops::{Bound, ControlFlow};

use overtake_engine::{KeyBuf, KeyRange, ScanOptions, Transaction};

use super::rows::{key_of, read_row, stored_key};
use super::{
    Integrity, Taken, Written, lock_for_writing, proposed_row, send_returning, update_row,
    write_row,
};
use crate::catalog::SqlTable;
use crate::error::{Result, SqlError, sqlstate};
use crate::expr::Context;
use crate::plan::{ConflictUpdate, InsertPlan, OnConflict};
use crate::values::datum::Datum;

/// Times a row is tried again when the row holding its values went away before it could be
/// updated (each try waits for the concurrent writer that moved them).
const ATTEMPTS: usize = 100;

/// Inserts `rows` (values for the plan's columns) as `plan`, whose conflicts `on` handles;
/// returns how many rows were inserted or updated.
pub(super) fn insert_rows(
    txn: &mut Transaction<'_>,
    plan: &InsertPlan,
    on: &OnConflict,
    rows: Vec<Vec<Datum>>,
    (cx, fk): (&Context<'_>, &mut Integrity<'_>),
    emit: &mut dyn FnMut(Vec<Datum>) -> Result<()>,
) -> Result<u64> {
    let table = &plan.table;
    lock_for_writing(txn, table)?;
    // The engine keys of the rows this statement wrote, which a DO UPDATE may not change.
    let mut written: HashSet<Vec<u8>> = HashSet::new();
    let mut n = 0;
    for source in rows {
        let row = proposed_row(table, &plan.columns, source, cx)?;
        if let Some(done) = insert_or_update(txn, table, on, row, &mut written, (cx, fk))? {
            send_returning(&plan.returning, &done, cx, emit)?;
            n += 1;
        }
    }
    Ok(n)
}

impl OnConflict {
    fn arbitrates(&self, taken: Taken) -> bool {
        match taken {
            Taken::PrimaryKey => self.primary_key,
            Taken::Index(i) => self.indexes.contains(&i),
        }
    }
}

/// Inserts `row`, or on a conflict does what `on` says; returns the row inserted or updated,
/// or `None` if it was skipped.
fn insert_or_update(
    txn: &mut Transaction<'_>,
    table: &SqlTable,
    on: &OnConflict,
    row: Vec<Datum>,
    written: &mut HashSet<Vec<u8>>,
    (cx, fk): (&Context<'_>, &mut Integrity<'_>),
) -> Result<Option<Vec<Datum>>> {
    for _ in 0..ATTEMPTS {
        let savepoint = txn.savepoint()?;
        let taken = match write_row(txn, table, &row)? {
            Written::Row(row_id) => {
                if on.update.is_some() {
                    written.insert(engine_key(table, &row, row_id)?.as_bytes().to_vec());
                }
                fk.inserted(table, &row);
                return Ok(Some(row));
            }
            Written::Taken(taken) if on.arbitrates(taken) => {
                txn.rollback_to(&savepoint)?;
                taken
            }
            Written::Taken(other) => {
                // PostgreSQL looks for the arbiters' values first: if one's are taken too,
                // that is the conflict handled.
                txn.rollback_to(&savepoint)?;
                match arbiter_taken(txn, table, on, &row)? {
                    Some(taken) => taken,
                    None => return Err(other.error(table, &row)),
                }
            }
        };
        let Some(update) = &on.update else {
            return Ok(None);
        };
        let Some(key) = holder(txn, table, taken, &row)? else {
            continue; // Gone since the insert met it: try again.
        };
        if written.contains(key.as_bytes()) {
            return Err(SqlError::new(
                sqlstate::CARDINALITY_VIOLATION,
                "ON CONFLICT DO UPDATE command cannot affect row a second time",
            )
            .with_hint(
                "Ensure that no rows proposed for insertion within the same command have duplicate constrained values.",
            ));
        }
        txn.lock_row(&table.engine, &key)?;
        let Some(existing) = txn.get(&table.engine, &key, |r| read_row(table, r))? else {
            continue;
        };
        if !same_values(taken.columns(table), &existing, &row)? {
            continue; // Its values changed while this waited for its lock.
        }
        let holder = (&key, existing);
        let Some(changed) = update_holder(txn, table, update, holder, &row, (cx, fk))? else {
            return Ok(None);
        };
        written.insert(key.as_bytes().to_vec());
        if !table.primary_key.is_empty() {
            written.insert(engine_key(table, &changed, None)?.as_bytes().to_vec());
        }
        return Ok(Some(changed));
    }
    Err(SqlError::new(
        sqlstate::SERIALIZATION_FAILURE,
        "could not serialize access due to concurrent update",
    ))
}

/// Applies `update` to the row under `key` (locked), which holds `existing`, with `proposed`
/// as `excluded`; returns the row as it became, or `None` if its condition does not hold.
fn update_holder(
    txn: &mut Transaction<'_>,
    table: &SqlTable,
    update: &ConflictUpdate,
    (key, existing): (&KeyBuf, Vec<Datum>),
    proposed: &[Datum],
    (cx, fk): (&Context<'_>, &mut Integrity<'_>),
) -> Result<Option<Vec<Datum>>> {
    let mut both = existing.clone();
    both.extend_from_slice(proposed);
    if let Some(f) = &update.filter
        && !f.holds(&both, cx)?
    {
        return Ok(None);
    }
    let mut new = Vec::with_capacity(update.assignments.len());
    for (col, e) in &update.assignments {
        new.push((*col, e.eval(&both, cx)?.cast(table.columns[*col].ty)?));
    }
    update_row(txn, table, (key, existing), new, cx, true, fk)
}

/// True if `a` and `b` hold equal values in `columns`.
fn same_values(columns: &[usize], a: &[Datum], b: &[Datum]) -> Result<bool> {
    for &c in columns {
        if a[c].sql_cmp(&b[c])? != Some(std::cmp::Ordering::Equal) {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The engine key of `row` of `table`: its primary key, or `row_id` in a table without one.
pub(super) fn engine_key(table: &SqlTable, row: &[Datum], row_id: Option<i64>) -> Result<KeyBuf> {
    if let Some(id) = row_id {
        let mut kb = table.engine.key();
        kb.value(overtake_engine::Value::Int(id));
        return Ok(kb.finish()?);
    }
    let values: Vec<Datum> = table.primary_key.iter().map(|&c| row[c].clone()).collect();
    key_of(table, None, &values, false)?
        .ok_or_else(|| SqlError::new(sqlstate::INTERNAL_ERROR, "a stored key cannot be built"))
}

/// The first arbiter of `on` whose values in `row` another row holds.
fn arbiter_taken(
    txn: &mut Transaction<'_>,
    table: &SqlTable,
    on: &OnConflict,
    row: &[Datum],
) -> Result<Option<Taken>> {
    let arbiters = on
        .primary_key
        .then_some(Taken::PrimaryKey)
        .into_iter()
        .chain(on.indexes.iter().map(|&i| Taken::Index(i)));
    for taken in arbiters {
        if taken.columns(table).iter().any(|&c| row[c].is_null()) {
            continue; // NULLs are never taken.
        }
        let Some(key) = holder(txn, table, taken, row)? else {
            continue;
        };
        if taken != Taken::PrimaryKey || txn.exists(&table.engine, &key)? {
            return Ok(Some(taken));
        }
    }
    Ok(None)
}

/// The engine key of the row holding `row`'s `taken` values, if one does (for the primary
/// key: the key they make, whether a row holds it or not).
fn holder(
    txn: &mut Transaction<'_>,
    table: &SqlTable,
    taken: Taken,
    row: &[Datum],
) -> Result<Option<KeyBuf>> {
    let values: Vec<Datum> = taken
        .columns(table)
        .iter()
        .map(|&c| row[c].clone())
        .collect();
    let index = match taken {
        Taken::PrimaryKey => return key_of(table, None, &values, false),
        Taken::Index(i) => i,
    };
    let Some(prefix) = key_of(table, Some(index), &values, true)? else {
        return Ok(None);
    };
    let upper = prefix
        .prefix_successor()
        .map_or(Bound::Unbounded, Bound::Excluded);
    let range = KeyRange::new(Bound::Included(prefix), upper);
    let mut found = None;
    txn.scan_index(
        &table.engine,
        table.indexes[index].id,
        &range,
        ScanOptions::forward().limit(1),
        |r| {
            found = Some(stored_key(table, &r));
            ControlFlow::Break(())
        },
    )?;
    found.transpose()
}
