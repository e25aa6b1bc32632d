//! Running plans inside an engine transaction: a SELECT's plan tree; INSERT, UPDATE and DELETE
//! row by row.
//!
//! UPDATE and DELETE first find the rows to change, then, for each, take its write lock
//! (`Transaction::lock_row`: under READ COMMITTED this waits for a concurrent writer and moves the
//! snapshot past its commit), read the row again and check the condition on what they read, as
//! PostgreSQL re-checks a row that changed under it. Nothing here blocks a worker: lock waits
//! park the task.
//!
//! Parts: `access` (the privileges a plan needs, checked before it runs, as PostgreSQL's executor
//! checks them), `select` (a SELECT's plan tree, node by node), `rows` (finding, locking and
//! reading a table's rows), `aggregate` (aggregates as they run), `ddl` (catalog changes in a
//! transaction) and `stored` (the catalog kept in the database, written by DDL and read back
//! by `Catalog::open`), `copy` (COPY's text format), `analyze` (a table's statistics).

pub mod access;
pub(crate) mod aggregate;
mod analyze;
pub mod copy;
pub mod ddl;
pub(crate) mod foreign_keys;
mod on_conflict;
mod rows;
mod select;
mod set_functions;
pub(crate) mod stored;
mod unique;

pub use analyze::analyze as analyze_table;
pub use select::{select, select_each, select_first};

use foreign_keys::Integrity;
use rows::{fetch, read_located};

use overtake_engine::{KeyBuf, TableLock, Transaction};

use crate::catalog::SqlTable;
use crate::catalog::references::References;
use crate::error::{Result, SqlError, sqlstate};
use crate::expr::{Context, Expr, InSet, InitValue};
use crate::plan::{
    Access, DeletePlan, InitKind, InitPlan, InsertPlan, InsertSource, Query, UpdatePlan,
};
use crate::values::datum::Datum;

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
    let init = init_values(txn, query.init(), cx)?;
    let with_init = cx.with_init(&init);
    let cx = &with_init;
    Ok(match query {
        Query::Select(s) => format!("SELECT {}", select_each(txn, s, cx, emit)?),
        Query::Insert(i) => insert(txn, i, cx, emit)?.tag,
        Query::Update(u) => update(txn, u, cx, emit)?.tag,
        Query::Delete(d) => delete(txn, d, cx, emit)?.tag,
        Query::Analyze(tables) => {
            for table in tables {
                analyze::analyze(txn, table, cx)?;
            }
            "ANALYZE".into()
        }
    })
}

/// The values of the statement's uncorrelated subqueries, each computed with those before it
/// (the ones inside it) known.
fn init_values(
    txn: &mut Transaction<'_>,
    plans: &[InitPlan],
    cx: &Context<'_>,
) -> Result<Vec<InitValue>> {
    let mut values = Vec::with_capacity(plans.len());
    for p in plans {
        if p.correlated {
            // Run under each row where it is read; a placeholder keeps the numbering.
            values.push(InitValue::Value(Datum::Null));
            continue;
        }
        let rows = {
            let cx = cx.with_init(&values);
            let limit = match p.kind {
                // Two rows decide a scalar subquery's error; one an EXISTS.
                InitKind::Scalar => 2,
                InitKind::Exists => 1,
                InitKind::In | InitKind::Array => usize::MAX,
            };
            select_first(txn, (&p.plan, plans), &cx, limit)?
        };
        values.push(match p.kind {
            InitKind::Scalar if rows.len() > 1 => {
                return Err(SqlError::new(
                    sqlstate::CARDINALITY_VIOLATION,
                    "more than one row returned by a subquery used as an expression",
                ));
            }
            InitKind::Scalar => InitValue::Value(
                rows.into_iter()
                    .next()
                    .and_then(|r| r.into_iter().next())
                    .unwrap_or(Datum::Null),
            ),
            InitKind::Exists => InitValue::Value(Datum::Bool(!rows.is_empty())),
            InitKind::Array => InitValue::Value(Datum::Array(
                rows.into_iter()
                    .filter_map(|r| r.into_iter().next())
                    .collect(),
            )),
            InitKind::In => {
                let ty = p.ty;
                InitValue::Set(InSet::new(
                    rows.into_iter()
                        .filter_map(|r| r.into_iter().next())
                        .collect(),
                    ty,
                ))
            }
        });
    }
    Ok(values)
}

/// Inserts `rows` (values for `columns`, in order) into `table`, as one statement whose
/// foreign keys `refs` says (see [`References::of`]).
pub fn insert_rows(
    txn: &mut Transaction<'_>,
    (table, refs): (&SqlTable, Option<&References>),
    columns: &[usize],
    rows: impl IntoIterator<Item = Vec<Datum>>,
    cx: &Context<'_>,
) -> Result<u64> {
    let mut insertion = Insertion::new(table, refs);
    let n = insertion.rows(txn, columns, rows, cx)?;
    insertion.finish(txn, cx)?;
    Ok(n)
}

/// One statement's rows for one table, given in pieces (COPY's data as it arrives): each
/// piece is written at once, and the foreign keys are checked once the statement ends
/// ([`finish`](Self::finish)), as for any statement.
pub struct Insertion<'r> {
    table: &'r SqlTable,
    fk: Integrity<'r>,
}

impl<'r> Insertion<'r> {
    /// Rows for `table`, whose foreign keys `refs` says (see [`References::of`]).
    pub fn new(table: &'r SqlTable, refs: Option<&'r References>) -> Self {
        Insertion {
            table,
            fk: Integrity::new(refs),
        }
    }

    /// Inserts `rows` (values for `columns`, in order); returns how many.
    pub fn rows(
        &mut self,
        txn: &mut Transaction<'_>,
        columns: &[usize],
        rows: impl IntoIterator<Item = Vec<Datum>>,
        cx: &Context<'_>,
    ) -> Result<u64> {
        let fk = &mut self.fk;
        let rows = (columns, rows);
        insert_rows_returning(txn, self.table, rows, (cx, fk), false, &mut |_| Ok(()))
    }

    /// The statement's end: checks the foreign keys of every row inserted.
    pub fn finish(mut self, txn: &mut Transaction<'_>, cx: &Context<'_>) -> Result<()> {
        self.fk.finish(txn, cx)
    }
}

/// Inserts `rows` as [`insert_rows`] does, passing each row as inserted (every column) to
/// `inserted` and leaving its foreign keys' checks in `fk`.
fn insert_rows_returning(
    txn: &mut Transaction<'_>,
    table: &SqlTable,
    (columns, rows): (&[usize], impl IntoIterator<Item = Vec<Datum>>),
    (cx, fk): (&Context<'_>, &mut Integrity<'_>),
    located: bool,
    inserted: &mut dyn FnMut(&[Datum]) -> Result<()>,
) -> Result<u64> {
    lock_for_writing(txn, table)?;
    let mut n = 0;
    for source in rows {
        let mut row = proposed_row(table, columns, source, cx)?;
        let row_id = match write_row(txn, table, &row)? {
            Written::Taken(taken) => return Err(taken.error(table, &row)),
            Written::Row(row_id) => row_id,
        };
        fk.inserted(table, &row);
        if located && table.has_ctid() {
            // Where the row is kept, as its own write shows it.
            let key = on_conflict::engine_key(table, &row, row_id)?;
            let id = txn.get_located(&table.engine, &key, |_, id| id)?;
            row.push(id.map_or(Datum::Null, rows::ctid));
        }
        inserted(&row)?;
        n += 1;
    }
    Ok(n)
}

/// The row `source` (values for `columns`, in order) proposes for `table`: every column, the
/// missing ones from their defaults, cast to the columns' types, its NOT NULL and CHECK
/// constraints met.
fn proposed_row(
    table: &SqlTable,
    columns: &[usize],
    source: Vec<Datum>,
    cx: &Context<'_>,
) -> Result<Vec<Datum>> {
    let mut values: Vec<Option<Datum>> = vec![None; table.columns.len()];
    for (d, &col) in source.into_iter().zip(columns) {
        values[col] = Some(d);
    }
    let mut row = Vec::with_capacity(values.len());
    for (v, c) in values.into_iter().zip(&table.columns) {
        let v = match v {
            Some(v) => v,
            None => match &c.default {
                Some(d) => d.expr.eval(&[], cx)?,
                None => Datum::Null,
            },
        };
        row.push(v.cast(c.ty)?);
    }
    check_not_null(table, &row)?;
    check_constraints(table, &row, cx)?;
    Ok(row)
}

/// What writing a row did.
enum Written {
    /// It is written, with this row id in a table without a primary key.
    Row(Option<i64>),
    /// Another row holds some of its values: nothing of it may stay (the caller fails the
    /// statement or rolls back to a savepoint taken before).
    Taken(Taken),
}

/// Which values of a row another row holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Taken {
    PrimaryKey,
    /// Those of the unique index at this position of the table's `indexes`.
    Index(usize),
}

impl Taken {
    /// The columns whose values are taken.
    fn columns(self, table: &SqlTable) -> &[usize] {
        match self {
            Taken::PrimaryKey => &table.primary_key,
            Taken::Index(i) => &table.indexes[i].columns,
        }
    }

    /// The 23505 of `row`, as PostgreSQL reports it.
    fn error(self, table: &SqlTable, row: &[Datum]) -> SqlError {
        match self {
            Taken::PrimaryKey => duplicate_key(table, row),
            Taken::Index(i) => {
                let index = &table.indexes[i];
                unique::duplicate(table, &index.name, &index.columns, row)
            }
        }
    }
}

/// Writes `row` (every column, as [`proposed_row`] makes it) into `table` and claims its values
/// of each unique index.
fn write_row(txn: &mut Transaction<'_>, table: &SqlTable, row: &[Datum]) -> Result<Written> {
    let mut builder = table.engine.row_builder();
    for (i, (v, c)) in row.iter().zip(&table.columns).enumerate() {
        builder.set(i, v.to_value(c.ty)?.value());
    }
    let row_id = table.row_ids.as_ref().map(|ids| ids.take());
    if let Some(id) = row_id {
        builder.set(table.columns.len(), overtake_engine::Value::Int(id));
    }
    match txn.insert(&table.engine, builder.finish()?) {
        Ok(()) => {}
        Err(overtake_engine::Error::DuplicateKey { .. }) => {
            return Ok(Written::Taken(Taken::PrimaryKey));
        }
        Err(e) => return Err(e.into()),
    }
    Ok(match unique::claim(txn, table, row)? {
        Some(i) => Written::Taken(Taken::Index(i)),
        None => Written::Row(row_id),
    })
}

/// Sends `returning`'s values over `row` to `emit` (nothing without RETURNING).
fn send_returning(
    returning: &[Expr],
    row: &[Datum],
    cx: &Context<'_>,
    emit: &mut dyn FnMut(Vec<Datum>) -> Result<()>,
) -> Result<()> {
    if returning.is_empty() {
        return Ok(());
    }
    let values = returning
        .iter()
        .map(|e| e.eval(row, cx))
        .collect::<Result<Vec<_>>>()?;
    emit(values)
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
    .with_detail(failing_row(table, row))
    .concerning(&table.name, Some(&c.name), None))
}

/// Fails with 23514, as PostgreSQL reports it, if a CHECK constraint of `table` is false on
/// `row` (NULL passes).
fn check_constraints(table: &SqlTable, row: &[Datum], cx: &Context<'_>) -> Result<()> {
    for c in &table.checks {
        if c.expr.eval(row, cx)?.truth()? == Some(false) {
            return Err(SqlError::new(
                sqlstate::CHECK_VIOLATION,
                format!(
                    "new row for relation \"{}\" violates check constraint \"{}\"",
                    table.name, c.name
                ),
            )
            .with_detail(failing_row(table, row))
            .concerning(&table.name, None, Some(c.name.clone())));
        }
    }
    Ok(())
}

/// PostgreSQL's detail of a constraint error: the row's own columns (not its `ctid`).
fn failing_row(table: &SqlTable, row: &[Datum]) -> String {
    let own = &row[..table.columns.len().min(row.len())];
    format!("Failing row contains ({}).", row_text(own))
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
    unique::duplicate(table, &table.primary_key_name(), &table.primary_key, row)
}

fn insert(
    txn: &mut Transaction<'_>,
    plan: &InsertPlan,
    cx: &Context<'_>,
    emit: &mut dyn FnMut(Vec<Datum>) -> Result<()>,
) -> Result<Output> {
    let rows = match &plan.source {
        InsertSource::Values(rows) => rows
            .iter()
            .map(|r| {
                r.iter()
                    .map(|e| e.eval(&[], cx))
                    .collect::<Result<Vec<_>>>()
            })
            .collect::<Result<Vec<_>>>()?,
        InsertSource::Select(s) => select_first(txn, (s, &plan.init), cx, usize::MAX)?,
    };
    let mut fk = Integrity::new(plan.references.as_deref());
    let n = match &plan.on_conflict {
        None => insert_rows_returning(
            txn,
            &plan.table,
            (&plan.columns, rows),
            (cx, &mut fk),
            !plan.returning.is_empty(),
            &mut |row| send_returning(&plan.returning, row, cx, emit),
        )?,
        Some(on) => on_conflict::insert_rows(txn, plan, on, rows, (cx, &mut fk), emit)?,
    };
    fk.finish(txn, cx)?;
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
        let latest = txn.get_located(&table.engine, &key, |r, id| read_located(table, r, id))?;
        let Some(latest) = latest else {
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

fn update(
    txn: &mut Transaction<'_>,
    plan: &UpdatePlan,
    cx: &Context<'_>,
    emit: &mut dyn FnMut(Vec<Datum>) -> Result<()>,
) -> Result<Output> {
    let table = &plan.table;
    lock_for_writing(txn, table)?;
    let mut fk = Integrity::new(plan.references.as_deref());
    let n = for_each_target(
        txn,
        table,
        (&plan.access, &plan.filter),
        cx,
        |txn, key, row| {
            let mut new = Vec::with_capacity(plan.assignments.len());
            for (col, e) in &plan.assignments {
                new.push((*col, e.eval(&row, cx)?.cast(table.columns[*col].ty)?));
            }
            let keep = !plan.returning.is_empty();
            if let Some(changed) = update_row(txn, table, (key, row), new, cx, keep, &mut fk)? {
                send_returning(&plan.returning, &changed, cx, emit)?;
            }
            Ok(())
        },
    )?;
    fk.finish(txn, cx)?;
    Ok(Output {
        tag: format!("UPDATE {n}"),
        rows: Vec::new(),
    })
}

/// Changes the row of `table` under `key` (locked), which holds `row`, by `new` (column
/// positions and their values, of the columns' types): checks its NOT NULL and CHECK
/// constraints and unique indexes as it becomes, and moves it to its new key if its primary key
/// changes, leaving its foreign keys' work in `fk`. Returns the row as it became if `keep` (or
/// if it was made anyway).
fn update_row(
    txn: &mut Transaction<'_>,
    table: &SqlTable,
    (key, row): (&KeyBuf, Vec<Datum>),
    new: Vec<(usize, Datum)>,
    cx: &Context<'_>,
    keep: bool,
    fk: &mut Integrity<'_>,
) -> Result<Option<Vec<Datum>>> {
    let keep = keep || fk.is_active();
    let moves = new.iter().try_fold(false, |moves, (col, v)| {
        Ok::<_, SqlError>(
            moves
                || (table.primary_key.contains(col)
                    && v.sql_cmp(&row[*col])? != Some(std::cmp::Ordering::Equal)),
        )
    })?;
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
        // A new key is a new row to the engine: the old one is deleted and the changed one
        // inserted, which fails with 23505 if the new key is taken (checked row by row, as
        // PostgreSQL checks a unique constraint that is not deferred).
        txn.delete(&table.engine, key)?;
        unique::release(txn, table, &row)?;
        let old = fk.is_active().then(|| row.clone());
        let mut changed = row;
        for (col, v) in new {
            changed[col] = v;
        }
        let all: Vec<usize> = (0..table.columns.len()).collect();
        let mut became = None;
        // The row's foreign keys see it as changed, not as new (below).
        let mut inserted = Integrity::none();
        // A new key is a new record: the row's `ctid` (for RETURNING) is the new one's.
        let changed = (&all[..], [changed]);
        insert_rows_returning(txn, table, changed, (cx, &mut inserted), keep, &mut |r| {
            became = Some(r.to_vec());
            Ok(())
        })
        .map(|_| ())?;
        if let (Some(old), Some(became)) = (&old, &became) {
            fk.updated(txn, table, old, became)?;
        }
        return Ok(became);
    }
    // The row as it becomes, for its CHECK constraints, unique indexes and RETURNING.
    let unique = new.iter().any(|(col, _)| {
        table
            .indexes
            .iter()
            .any(|i| i.unique.is_some() && i.columns.contains(col))
    });
    let changed = (unique || !table.checks.is_empty() || keep).then(|| {
        let mut changed = row.clone();
        for (col, v) in &new {
            changed[*col] = v.clone();
        }
        changed
    });
    if let Some(changed) = &changed {
        check_constraints(table, changed, cx)?;
        unique::change(txn, table, &row, changed)?;
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
    if let Some(changed) = &changed {
        fk.updated(txn, table, &row, changed)?;
    }
    Ok(changed)
}

fn delete(
    txn: &mut Transaction<'_>,
    plan: &DeletePlan,
    cx: &Context<'_>,
    emit: &mut dyn FnMut(Vec<Datum>) -> Result<()>,
) -> Result<Output> {
    lock_for_writing(txn, &plan.table)?;
    let mut fk = Integrity::new(plan.references.as_deref());
    let n = for_each_target(
        txn,
        &plan.table,
        (&plan.access, &plan.filter),
        cx,
        |txn, key, row| {
            txn.delete(&plan.table.engine, key)?;
            unique::release(txn, &plan.table, &row)?;
            fk.deleted(txn, &plan.table, &row)?;
            send_returning(&plan.returning, &row, cx, emit)
        },
    )?;
    fk.finish(txn, cx)?;
    Ok(Output {
        tag: format!("DELETE {n}"),
        rows: Vec::new(),
    })
}
