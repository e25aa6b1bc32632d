//! Keeping unique indexes unique: each row's values of a unique index's columns are claimed as
//! a row of the index's own engine table (see [`UniqueKeys`]) when the row is inserted, and
//! given back when it is deleted or its values change, in the writer's transaction. A value
//! that is taken fails the claim with 23505 naming the index, as PostgreSQL reports it.
//!
//! Must never decide anything about the table's own rows: the caller writes those.

use overtake_engine::{KeyBuf, Table, Transaction};

use crate::catalog::{SqlIndex, SqlTable, UniqueKeys};
use crate::error::{Result, SqlError, sqlstate};
use crate::values::datum::Datum;

/// The name of the engine table keeping index `index` of the table over `engine` unique.
/// Engine tables of SQL tables are `name#n`: this one is `name#n/index`, which errors name as
/// the SQL table (see `sql_name`) and which no SQL table's engine table can take.
pub(super) fn engine_name(engine: &Table, index: &str) -> String {
    format!("{}/{index}", engine.name())
}

/// The table's unique indexes whose columns hold no NULL in `row` (with their positions in
/// `indexes`), with what keeps them.
fn claimed<'a>(
    table: &'a SqlTable,
    row: &'a [Datum],
) -> impl Iterator<Item = (usize, &'a SqlIndex, &'a UniqueKeys)> + 'a {
    table.indexes.iter().enumerate().filter_map(move |(at, i)| {
        let keys = i.unique.as_ref()?;
        i.columns
            .iter()
            .all(|&c| !row[c].is_null())
            .then_some((at, i, keys))
    })
}

/// Claims the values of every unique index in `row` (every column of `table`, as stored).
/// If another row holds some, returns the position of the first such index (its claims made
/// before stay in the transaction: the caller fails the statement or rolls back to a savepoint).
pub(super) fn claim(
    txn: &mut Transaction<'_>,
    table: &SqlTable,
    row: &[Datum],
) -> Result<Option<usize>> {
    for (at, index, keys) in claimed(table, row) {
        match txn.insert(&keys.engine, claim_row(table, (index, keys), row)?) {
            Ok(()) => {}
            Err(overtake_engine::Error::DuplicateKey { .. }) => return Ok(Some(at)),
            Err(e) => return Err(e.into()),
        }
    }
    Ok(None)
}

/// The row of `keys`'s table claiming `row`'s values of `index`.
fn claim_row(
    table: &SqlTable,
    (index, keys): (&SqlIndex, &UniqueKeys),
    row: &[Datum],
) -> Result<overtake_engine::Row> {
    let mut builder = keys.engine.row_builder();
    for (i, &c) in index.columns.iter().enumerate() {
        builder.set(i, row[c].to_value(table.columns[c].ty)?.value());
    }
    Ok(builder.finish()?)
}

/// Gives back the values of every unique index in `row` (deleted).
pub(super) fn release(txn: &mut Transaction<'_>, table: &SqlTable, row: &[Datum]) -> Result<()> {
    for (_, index, keys) in claimed(table, row) {
        txn.delete(&keys.engine, &key(table, index, keys, row)?)?;
    }
    Ok(())
}

/// Moves the claims of row `old` to `new` (the same row changed) for each unique index whose
/// values differ between them.
pub(super) fn change(
    txn: &mut Transaction<'_>,
    table: &SqlTable,
    old: &[Datum],
    new: &[Datum],
) -> Result<()> {
    for index in table.indexes.iter().filter(|i| i.unique.is_some()) {
        let mut same = true;
        for &c in &index.columns {
            same &= old[c].sql_cmp(&new[c])? == Some(std::cmp::Ordering::Equal);
        }
        if same {
            continue;
        }
        let Some(keys) = &index.unique else { continue };
        if index.columns.iter().all(|&c| !old[c].is_null()) {
            txn.delete(&keys.engine, &key(table, index, keys, old)?)?;
        }
        if index.columns.iter().all(|&c| !new[c].is_null()) {
            txn.insert(&keys.engine, claim_row(table, (index, keys), new)?)
                .map_err(|e| match e {
                    overtake_engine::Error::DuplicateKey { .. } => {
                        duplicate(table, &index.name, &index.columns, new)
                    }
                    e => e.into(),
                })?;
        }
    }
    Ok(())
}

/// The engine key under which `row`'s values of `index` are claimed.
fn key(table: &SqlTable, index: &SqlIndex, keys: &UniqueKeys, row: &[Datum]) -> Result<KeyBuf> {
    let mut kb = keys.engine.key();
    for &c in &index.columns {
        kb.value(row[c].to_value(table.columns[c].ty)?.value());
    }
    Ok(kb.finish()?)
}

/// The 23505 of `row`, whose values of `columns` another row holds under unique index or
/// constraint `name`.
pub(super) fn duplicate(
    table: &SqlTable,
    name: &str,
    columns: &[usize],
    row: &[Datum],
) -> SqlError {
    let names: Vec<&str> = columns
        .iter()
        .map(|&c| table.columns[c].name.as_str())
        .collect();
    let values: Vec<Datum> = columns.iter().map(|&c| row[c].clone()).collect();
    SqlError::new(
        sqlstate::UNIQUE_VIOLATION,
        format!("duplicate key value violates unique constraint \"{name}\""),
    )
    .with_detail(format!(
        "Key ({})=({}) already exists.",
        names.join(", "),
        super::row_text(&values)
    ))
    .concerning(&table.name, None, Some(name.to_owned()))
}
