//! Keeping FOREIGN KEY constraints, as PostgreSQL's referential-integrity triggers do: a
//! statement's writes note what each constraint must look at, and at the end of the statement
//! ([`Integrity::finish`]) each new or changed referencing row finds the row it references, and
//! each referenced row deleted or re-keyed has its referencing rows refused, deleted or changed
//! as the constraint's action says (the changes of a cascade are checked in turn).
//!
//! Concurrency as PostgreSQL's: a check takes the referenced key's lock shared (its FOR KEY
//! SHARE) and a delete or re-key takes it exclusive (`Transaction::lock_key`), so a check and
//! the removal of what it found never both commit. Under READ COMMITTED each then reads the
//! newest committed rows; under REPEATABLE READ and SERIALIZABLE each read is validated at
//! commit, so a change committed after the snapshot fails the transaction (40001) instead.
//!
//! Must never skip a check for a write it was told of, nor write a row of the statement's
//! own table other than through the actions.

use std::collections::VecDeque;
use std::ops::ControlFlow;
use std::sync::Arc;

use overtake_engine::{Isolation, KeyBuf, KeyLock, KeyRange, ScanOptions, Table, Transaction};

use super::rows::{exactly, key_of, read_row, stored_key};
use crate::catalog::references::{ReferencedIndex, References, referenced_index};
use crate::catalog::{ForeignKey, RefAction, SqlTable};
use crate::error::{Result, SqlError, sqlstate};
use crate::expr::Context;
use crate::values::datum::Datum;

/// What a statement's writes left for its foreign keys to do at its end.
enum Event {
    /// A row of `table` was written with values for its foreign key `fk` (none NULL): they
    /// must be a referenced row's.
    Check {
        table: String,
        fk: usize,
        row: Vec<Datum>,
    },
    /// A row of `parent` holding `old` was deleted (`new`: `None`) or changed to `new`, and
    /// foreign key `fk` of `child` references its values in `old`.
    Gone {
        parent: String,
        child: String,
        fk: usize,
        old: Vec<Datum>,
        new: Option<Vec<Datum>>,
    },
}

/// A statement's foreign-key work: the constraints its writes may involve (none: nothing to
/// do) and what its writes so far left to do.
pub(crate) struct Integrity<'r> {
    refs: Option<&'r References>,
    events: VecDeque<Event>,
}

impl<'r> Integrity<'r> {
    /// For a statement whose writes may involve `refs` (`None`: no foreign key involves them).
    pub(crate) fn new(refs: Option<&'r References>) -> Self {
        Integrity {
            refs,
            events: VecDeque::new(),
        }
    }

    /// For writes no foreign key is checked for (a rebuild's copy of rows already checked).
    pub(crate) fn none() -> Integrity<'static> {
        Integrity {
            refs: None,
            events: VecDeque::new(),
        }
    }

    /// Whether a foreign key may involve the statement's writes.
    pub(crate) fn is_active(&self) -> bool {
        self.refs.is_some()
    }

    /// `row` (every column) was inserted into `table`.
    pub(crate) fn inserted(&mut self, table: &SqlTable, row: &[Datum]) {
        if self.refs.is_none() {
            return;
        }
        for (fk, c) in table.foreign_keys.iter().enumerate() {
            if c.columns.iter().all(|&col| !row[col].is_null()) {
                self.events.push_back(Event::Check {
                    table: table.name.clone(),
                    fk,
                    row: row.to_vec(),
                });
            }
        }
    }

    /// A row of `table` holding `old` was deleted (its lock held): the keys foreign keys may
    /// reference in it are locked against checks until the transaction ends.
    pub(crate) fn deleted(
        &mut self,
        txn: &mut Transaction<'_>,
        table: &SqlTable,
        old: &[Datum],
    ) -> Result<()> {
        self.gone(txn, table, old, None)
    }

    /// A row of `table` holding `old` was changed to `new` (every column).
    pub(crate) fn updated(
        &mut self,
        txn: &mut Transaction<'_>,
        table: &SqlTable,
        old: &[Datum],
        new: &[Datum],
    ) -> Result<()> {
        if self.refs.is_none() {
            return Ok(());
        }
        for (fk, c) in table.foreign_keys.iter().enumerate() {
            if c.columns.iter().all(|&col| !new[col].is_null())
                && !same(old, new, c.columns.iter().copied())?
            {
                self.events.push_back(Event::Check {
                    table: table.name.clone(),
                    fk,
                    row: new.to_vec(),
                });
            }
        }
        self.gone(txn, table, old, Some(new))
    }

    fn gone(
        &mut self,
        txn: &mut Transaction<'_>,
        table: &SqlTable,
        old: &[Datum],
        new: Option<&[Datum]>,
    ) -> Result<()> {
        let Some(refs) = self.refs else {
            return Ok(());
        };
        for r in refs.referencing(&table.name) {
            let c = r.constraint();
            let cols = parent_columns(table, c)?;
            if cols.iter().any(|&col| old[col].is_null()) {
                continue; // Nothing references a NULL.
            }
            if let Some(new) = new
                && same(old, new, cols.iter().copied())?
            {
                continue;
            }
            let index = referenced_index(table, &c.parent_columns)?;
            if let Some((engine, key)) = referenced_key(table, index, |col| &old[col])? {
                txn.lock_key(&engine, &key, KeyLock::Update)?;
            }
            self.events.push_back(Event::Gone {
                parent: table.name.clone(),
                child: r.child.name.clone(),
                fk: r.fk,
                old: old.to_vec(),
                new: new.map(<[Datum]>::to_vec),
            });
        }
        Ok(())
    }

    /// The statement's end: does what its writes (and the actions' writes in turn) left to do.
    pub(crate) fn finish(&mut self, txn: &mut Transaction<'_>, cx: &Context<'_>) -> Result<()> {
        let Some(refs) = self.refs else {
            return Ok(());
        };
        while let Some(event) = self.events.pop_front() {
            cx.check_cancel()?;
            match event {
                Event::Check { table, fk, row } => check_written(txn, refs, (&table, fk), &row)?,
                Event::Gone {
                    parent,
                    child,
                    fk,
                    old,
                    new,
                } => {
                    let parent = refs.table(&parent)?;
                    let child = refs.table(&child)?;
                    self.act(txn, (parent, child, fk), &old, new.as_deref(), cx)?;
                }
            }
        }
        Ok(())
    }

    /// Does what foreign key `fk` of `child` says to the rows referencing `old`, a row of
    /// `parent` deleted or changed to `new`.
    fn act(
        &mut self,
        txn: &mut Transaction<'_>,
        (parent, child, fk): (&Arc<SqlTable>, &Arc<SqlTable>, usize),
        old: &[Datum],
        new: Option<&[Datum]>,
        cx: &Context<'_>,
    ) -> Result<()> {
        let c = &child.foreign_keys[fk];
        let cols = parent_columns(parent, c)?;
        let action = if new.is_some() {
            c.on_update
        } else {
            c.on_delete
        };
        if action == RefAction::NoAction && present(txn, parent, c, |j| &old[cols[j]])? {
            return Ok(()); // Another row holds the key now.
        }
        let values: Vec<Datum> = cols.iter().map(|&col| old[col].clone()).collect();
        let rows = referencing_rows(txn, child, c, &values)?;
        if rows.is_empty() {
            return Ok(());
        }
        if action != RefAction::NoAction && action != RefAction::Restrict {
            // The actions write the referencing table: under its write lock, as every writer
            // (a rebuild of the table then waits for this transaction, or fails it with 40001).
            super::lock_for_writing(txn, child)?;
        }
        match action {
            RefAction::NoAction | RefAction::Restrict => {
                Err(still_referenced(parent, child, c, &values))
            }
            RefAction::Cascade if new.is_none() => {
                for (key, _) in rows {
                    let Some(row) = relocked(txn, child, c, &key, &values)? else {
                        continue;
                    };
                    txn.delete(&child.engine, &key)?;
                    super::unique::release(txn, child, &row)?;
                    self.deleted(txn, child, &row)?;
                }
                Ok(())
            }
            RefAction::Cascade | RefAction::SetNull | RefAction::SetDefault => {
                for (key, _) in rows {
                    let Some(row) = relocked(txn, child, c, &key, &values)? else {
                        continue;
                    };
                    let mut changes = Vec::with_capacity(c.columns.len());
                    for (j, &col) in c.columns.iter().enumerate() {
                        let column = &child.columns[col];
                        let v = match (action, new) {
                            (RefAction::Cascade, Some(new)) => new[cols[j]].clone(),
                            (RefAction::SetDefault, _) => match &column.default {
                                Some(d) => d.expr.eval(&[], cx)?,
                                None => Datum::Null,
                            },
                            _ => Datum::Null,
                        };
                        changes.push((col, v.cast(column.ty)?));
                    }
                    super::update_row(txn, child, (&key, row), changes, cx, false, self)?;
                }
                // Defaults equal to the key that went leave rows referencing it, which their
                // unchanged columns would not check again (PostgreSQL looks once more too).
                if action == RefAction::SetDefault
                    && !referencing_rows(txn, child, c, &values)?.is_empty()
                {
                    return Err(still_referenced(parent, child, c, &values));
                }
                Ok(())
            }
        }
    }
}

/// True if `a` and `b` hold equal values (NULLs alike) in `columns`.
fn same(a: &[Datum], b: &[Datum], mut columns: impl Iterator<Item = usize>) -> Result<bool> {
    columns.try_fold(true, |same, c| {
        Ok(same
            && match (a[c].is_null(), b[c].is_null()) {
                (true, true) => true,
                (false, false) => a[c].sql_cmp(&b[c])? == Some(std::cmp::Ordering::Equal),
                _ => false,
            })
    })
}

/// The positions in `parent` of the columns foreign key `c` references, in `c`'s order.
fn parent_columns(parent: &SqlTable, c: &ForeignKey) -> Result<Vec<usize>> {
    c.parent_columns
        .iter()
        .map(|n| {
            parent.column(n).ok_or_else(|| {
                SqlError::new(
                    sqlstate::UNDEFINED_COLUMN,
                    format!(
                        "column \"{n}\" of relation \"{}\" does not exist",
                        parent.name
                    ),
                )
            })
        })
        .collect()
}

/// The engine table and key that stand for `parent`'s values of `index` (`value` gives each
/// column's, by its position in `parent`): its own key for the primary key, the key of the
/// unique index's table otherwise; `None` if no row can hold them (a value the column's type
/// cannot hold exactly).
fn referenced_key<'v>(
    parent: &SqlTable,
    index: ReferencedIndex,
    value: impl Fn(usize) -> &'v Datum,
) -> Result<Option<(Arc<Table>, KeyBuf)>> {
    let columns = index.columns(parent);
    match index {
        ReferencedIndex::PrimaryKey => {
            let values: Vec<Datum> = columns.iter().map(|&c| value(c).clone()).collect();
            Ok(key_of(parent, None, &values, false)?.map(|k| (Arc::clone(&parent.engine), k)))
        }
        ReferencedIndex::Unique(i) => {
            let Some(keys) = &parent.indexes[i].unique else {
                return Ok(None);
            };
            let mut kb = keys.engine.key();
            for &c in columns {
                let ty = parent.columns[c].ty;
                let Some(d) = exactly(value(c), ty) else {
                    return Ok(None);
                };
                kb.value(d.to_value(ty)?.value());
            }
            Ok(Some((Arc::clone(&keys.engine), kb.finish()?)))
        }
    }
}

/// Options of a read a foreign key's decision rests on: validated at commit unless the
/// transaction reads the newest committed rows (READ COMMITTED, after taking the key's lock).
fn decisive(txn: &Transaction<'_>) -> ScanOptions {
    match txn.isolation() {
        Isolation::ReadCommitted => ScanOptions::forward(),
        _ => ScanOptions::forward().validated(),
    }
}

/// True if a row of `parent` holds the values foreign key `c` references, `value(j)` giving
/// the one of its `j`-th column, after taking their key's lock shared.
fn present<'v>(
    txn: &mut Transaction<'_>,
    parent: &SqlTable,
    c: &ForeignKey,
    value: impl Fn(usize) -> &'v Datum,
) -> Result<bool> {
    let index = referenced_index(parent, &c.parent_columns)?;
    let cols = parent_columns(parent, c)?;
    let by_column = |col: usize| value(cols.iter().position(|&x| x == col).unwrap_or(0));
    let Some((engine, key)) = referenced_key(parent, index, by_column)? else {
        return Ok(false);
    };
    txn.lock_key(&engine, &key, KeyLock::Share)?;
    let options = decisive(txn);
    let found = txn.scan(&engine, &KeyRange::point(key), options, |_| {
        ControlFlow::Break(())
    })?;
    Ok(found > 0)
}

/// Fails with 23503 unless the row of `table` written as `row` finds the row its foreign key
/// `fk` references.
fn check_written(
    txn: &mut Transaction<'_>,
    refs: &References,
    (table, fk): (&str, usize),
    row: &[Datum],
) -> Result<()> {
    let child = refs.table(table)?;
    let parent = refs.table(&child.foreign_keys[fk].parent)?;
    check(txn, (child, fk), parent, row)
}

/// Checks every row of `child` against its foreign key `fk`, which references `parent` (a
/// constraint being added).
pub(crate) fn validate(
    txn: &mut Transaction<'_>,
    child: &SqlTable,
    fk: usize,
    parent: &SqlTable,
) -> Result<()> {
    let c = &child.foreign_keys[fk];
    let mut rows = Vec::new();
    txn.scan(
        &child.engine,
        &KeyRange::all(),
        ScanOptions::forward(),
        |r| {
            let row = read_row(child, r);
            if c.columns.iter().all(|&col| !row[col].is_null()) {
                rows.push(row);
            }
            ControlFlow::Continue(())
        },
    )?;
    for row in rows {
        check(txn, (child, fk), parent, &row)?;
    }
    Ok(())
}

/// Fails with 23503 unless `row`, of `child`, finds the row of `parent` its foreign key `fk`
/// references.
fn check(
    txn: &mut Transaction<'_>,
    (child, fk): (&SqlTable, usize),
    parent: &SqlTable,
    row: &[Datum],
) -> Result<()> {
    let c = &child.foreign_keys[fk];
    if present(txn, parent, c, |j| &row[c.columns[j]])? {
        return Ok(());
    }
    let names: Vec<&str> = c
        .columns
        .iter()
        .map(|&col| child.columns[col].name.as_str())
        .collect();
    let values: Vec<Datum> = c.columns.iter().map(|&col| row[col].clone()).collect();
    Err(SqlError::new(
        sqlstate::FOREIGN_KEY_VIOLATION,
        format!(
            "insert or update on table \"{}\" violates foreign key constraint \"{}\"",
            child.name, c.name
        ),
    )
    .with_detail(format!(
        "Key ({})=({}) is not present in table \"{}\".",
        names.join(", "),
        super::row_text(&values),
        parent.name
    ))
    .concerning(&child.name, None, Some(c.name.clone())))
}

/// The 23503 of a row of `parent` whose `values` (of the columns `c` references) a row of
/// `child` still references.
fn still_referenced(
    parent: &SqlTable,
    child: &SqlTable,
    c: &ForeignKey,
    values: &[Datum],
) -> SqlError {
    SqlError::new(
        sqlstate::FOREIGN_KEY_VIOLATION,
        format!(
            "update or delete on table \"{}\" violates foreign key constraint \"{}\" on table \"{}\"",
            parent.name, c.name, child.name
        ),
    )
    .with_detail(format!(
        "Key ({})=({}) is still referenced from table \"{}\".",
        c.parent_columns.join(", "),
        super::row_text(values),
        child.name
    ))
    .concerning(&child.name, None, Some(c.name.clone()))
}

/// The rows of `child` (engine key and values) whose columns of foreign key `c` hold `values`,
/// read through an index that starts with those columns where the table has one.
fn referencing_rows(
    txn: &mut Transaction<'_>,
    child: &SqlTable,
    c: &ForeignKey,
    values: &[Datum],
) -> Result<Vec<(KeyBuf, Vec<Datum>)>> {
    let mut found = Vec::new();
    let mut failure = None;
    let mut visit = |r: overtake_engine::RowRef<'_>| {
        let row = read_row(child, r);
        let holds = c
            .columns
            .iter()
            .zip(values)
            .try_fold(true, |ok, (&col, v)| {
                Ok::<_, SqlError>(ok && row[col].sql_cmp(v)? == Some(std::cmp::Ordering::Equal))
            });
        match holds.and_then(|h| Ok(h.then_some(stored_key(child, &r)?))) {
            Ok(Some(key)) => found.push((key, row)),
            Ok(None) => {}
            Err(e) => {
                failure = Some(e);
                return ControlFlow::Break(());
            }
        }
        ControlFlow::Continue(())
    };
    let options = decisive(txn);
    // The leading columns of an index, in its order, if they are the constraint's.
    let leading = |cols: &[usize]| -> Option<Vec<Datum>> {
        let head = cols.get(..c.columns.len())?;
        head.iter()
            .map(|col| {
                let j = c.columns.iter().position(|x| x == col)?;
                Some(values[j].clone())
            })
            .collect()
    };
    if let Some(key_values) = leading(&child.primary_key)
        && child.row_ids.is_none()
    {
        if let Some(prefix) = key_of(child, None, &key_values, true)? {
            txn.scan(
                &child.engine,
                &KeyRange::prefix(prefix),
                options,
                &mut visit,
            )?;
        }
    } else if let Some((i, key_values)) = child
        .indexes
        .iter()
        .enumerate()
        .find_map(|(i, x)| Some((i, leading(&x.columns)?)))
    {
        if let Some(prefix) = key_of(child, Some(i), &key_values, true)? {
            let id = child.indexes[i].id;
            let range = KeyRange::prefix(prefix);
            txn.scan_index(&child.engine, id, &range, options, &mut visit)?;
        }
    } else {
        txn.scan(&child.engine, &KeyRange::all(), options, &mut visit)?;
    }
    match failure {
        Some(e) => Err(e),
        None => Ok(found),
    }
}

/// Locks the row of `child` under `key` for writing and reads it again: the row, if it is
/// still there and still references `values` through `c`.
fn relocked(
    txn: &mut Transaction<'_>,
    child: &SqlTable,
    c: &ForeignKey,
    key: &KeyBuf,
    values: &[Datum],
) -> Result<Option<Vec<Datum>>> {
    txn.lock_row(&child.engine, key)?;
    let Some(row) = txn.get(&child.engine, key, |r| read_row(child, r))? else {
        return Ok(None);
    };
    for (&col, v) in c.columns.iter().zip(values) {
        if row[col].sql_cmp(v)? != Some(std::cmp::Ordering::Equal) {
            return Ok(None);
        }
    }
    Ok(Some(row))
}
