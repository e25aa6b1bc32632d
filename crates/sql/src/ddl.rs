//! Executing catalog changes. A table is created as an engine table; TRUNCATE, ADD PRIMARY KEY
//! and CREATE INDEX build a new engine table (copying the rows, checking the new key) and swap it
//! in, which is how a table gets a key or an index the engine did not declare at creation.
//! Each change is recorded in the stored catalog in one engine transaction (with the copied rows,
//! for a rebuild) before the in-memory catalog follows it; an engine table the change made is
//! dropped if that transaction fails, the one it replaced or dropped once it commits.
//!
//! Limitation: a rebuild is not isolated from writers of the table that commit while it copies
//! (PostgreSQL would lock them out); run such DDL when the table is quiet, as pgbench's
//! initialization does.

use std::sync::Arc;

use overtake_engine::{
    ColumnType, Isolation, KeyRange, Priority, ScanOptions, TableSchema, Transaction,
};

use crate::catalog::{Catalog, ROW_ID_COLUMN, RowIds, SqlColumn, SqlIndex, SqlTable};
use crate::datum::Datum;
use crate::error::{Result, SqlError, sqlstate};
use crate::exec::insert_rows;
use crate::expr::Context;
use crate::plan::Ddl;
use crate::stored;

/// Creates an engine table for a SQL table described by `columns`, `primary_key` and `indexes`
/// (column positions), and returns the SQL table over it.
fn build(
    catalog: &Catalog,
    name: &str,
    columns: Vec<SqlColumn>,
    primary_key: Vec<usize>,
    indexes: &[(String, Vec<usize>)],
) -> Result<SqlTable> {
    let engine_name = catalog.engine_name(name);
    let mut schema = TableSchema::builder(engine_name);
    for (i, c) in columns.iter().enumerate() {
        let in_key = primary_key.contains(&i) || indexes.iter().any(|(_, cols)| cols.contains(&i));
        let ty = c.ty.column_type(in_key);
        schema = if c.nullable {
            schema.nullable_column(c.name.clone(), ty)
        } else {
            schema.column(c.name.clone(), ty)
        };
    }
    let names =
        |cols: &[usize]| -> Vec<&str> { cols.iter().map(|&c| columns[c].name.as_str()).collect() };
    let row_ids = primary_key.is_empty().then(|| RowIds::after(0));
    schema = if row_ids.is_some() {
        schema
            .column(ROW_ID_COLUMN, ColumnType::Int64)
            .primary_key(&[ROW_ID_COLUMN])
    } else {
        schema.primary_key(&names(&primary_key))
    };
    for (index, cols) in indexes {
        schema = schema.index(index.clone(), &names(cols));
    }
    let schema = schema
        .build()
        .map_err(|e| SqlError::new(sqlstate::PROGRAM_LIMIT_EXCEEDED, e.to_string()))?;
    let engine = catalog.database().create_table(schema)?;
    let indexes = indexes
        .iter()
        .map(|(index, cols)| SqlIndex {
            id: engine.index(index).expect("declared above"),
            name: index.clone(),
            columns: cols.clone(),
        })
        .collect();
    Ok(SqlTable {
        name: name.to_owned(),
        columns,
        primary_key,
        indexes,
        engine,
        row_ids,
    })
}

/// Runs `change` in one transaction at `priority` and commits it; if anything fails, drops the
/// engine table of `new`, which nothing then describes.
fn commit_or_discard(
    catalog: &Catalog,
    new: &SqlTable,
    priority: Priority,
    change: impl FnOnce(&mut Transaction<'_>) -> Result<()>,
) -> Result<()> {
    let db = catalog.database();
    let done = db
        .begin(priority, Isolation::Snapshot)
        .map_err(SqlError::from)
        .and_then(|mut txn| {
            change(&mut txn)?;
            txn.commit()?;
            Ok(())
        });
    if done.is_err() {
        // Not described anywhere: dropping it can only fail if it is gone already.
        let _ = db.drop_table(new.engine.name());
    }
    done
}

/// Copies every row of `old` into `new` in `txn`.
fn copy_rows(txn: &mut Transaction<'_>, old: &SqlTable, new: &SqlTable) -> Result<()> {
    let mut rows = Vec::new();
    txn.scan(&old.engine, &KeyRange::all(), ScanOptions::forward(), |r| {
        rows.push(
            old.columns
                .iter()
                .enumerate()
                .map(|(i, c)| Datum::from_value(r.get(i), c.ty))
                .collect::<Vec<_>>(),
        );
        std::ops::ControlFlow::Continue(())
    })?;
    // A column that becomes NOT NULL must hold no NULL (checked first, as PostgreSQL does).
    for (i, c) in new.columns.iter().enumerate() {
        if !c.nullable && rows.iter().any(|r| r[i].is_null()) {
            return Err(SqlError::new(
                sqlstate::NOT_NULL_VIOLATION,
                format!(
                    "column \"{}\" of relation \"{}\" contains null values",
                    c.name, new.name
                ),
            ));
        }
    }
    let all: Vec<usize> = (0..new.columns.len()).collect();
    let cx = Context::new(&[], crate::time::now_micros());
    insert_rows(txn, new, &all, rows, &cx)?;
    Ok(())
}

fn positions(table: &SqlTable, names: &[String]) -> Result<Vec<usize>> {
    names
        .iter()
        .map(|n| {
            table.column(n).ok_or_else(|| {
                SqlError::new(
                    sqlstate::UNDEFINED_COLUMN,
                    format!("column \"{n}\" does not exist"),
                )
            })
        })
        .collect()
}

fn index_list(table: &SqlTable) -> Vec<(String, Vec<usize>)> {
    table
        .indexes
        .iter()
        .map(|i| (i.name.clone(), i.columns.clone()))
        .collect()
}

/// A table's shape: its columns, primary key and indexes (name, columns).
type Shape = (Vec<SqlColumn>, Vec<usize>, Vec<(String, Vec<usize>)>);

/// Rebuilds `old` as described, copying its rows unless `empty`.
fn rebuild(
    catalog: &Catalog,
    old: &Arc<SqlTable>,
    (columns, primary_key, indexes): Shape,
    empty: bool,
    priority: Priority,
) -> Result<()> {
    let new = build(catalog, &old.name, columns, primary_key, &indexes)?;
    commit_or_discard(catalog, &new, priority, |txn| {
        if !empty {
            copy_rows(txn, old, &new)?;
        }
        stored::write(txn, catalog.stored(), &new, true)
    })?;
    catalog.replace(old, new)?;
    catalog.database().drop_table(old.engine.name())?;
    Ok(())
}

/// Runs `ddl`; returns its command tag.
pub fn execute(catalog: &Catalog, ddl: &Ddl, priority: Priority) -> Result<&'static str> {
    match ddl {
        Ddl::CreateTable {
            name,
            columns,
            primary_key,
            if_not_exists,
        } => {
            if *if_not_exists && catalog.table(name).is_ok() {
                return Ok("CREATE TABLE");
            }
            if catalog.table(name).is_ok() {
                return Err(SqlError::new(
                    sqlstate::DUPLICATE_TABLE,
                    format!("relation \"{name}\" already exists"),
                ));
            }
            if columns.iter().any(|c| c.name == ROW_ID_COLUMN) {
                return Err(SqlError::new(
                    sqlstate::DUPLICATE_COLUMN,
                    format!("column name \"{ROW_ID_COLUMN}\" conflicts with a system column name"),
                ));
            }
            let table = build(catalog, name, columns.clone(), primary_key.clone(), &[])?;
            commit_or_discard(catalog, &table, priority, |txn| {
                stored::write(txn, catalog.stored(), &table, false)
            })
            .map_err(|e| match catalog.table(name) {
                // Another session created it meanwhile.
                Ok(_) => SqlError::new(
                    sqlstate::DUPLICATE_TABLE,
                    format!("relation \"{name}\" already exists"),
                ),
                Err(_) => e,
            })?;
            catalog.add(table)?;
            Ok("CREATE TABLE")
        }
        Ddl::DropTable { names, if_exists } => {
            let mut tables = Vec::new();
            for n in names {
                match catalog.table(n) {
                    Ok(_) if tables.iter().any(|t: &Arc<SqlTable>| t.name == *n) => {}
                    Ok(t) => tables.push(t),
                    Err(_) if *if_exists => {}
                    Err(e) => return Err(e),
                }
            }
            let db = catalog.database();
            let mut txn = db.begin(priority, Isolation::Snapshot)?;
            for t in &tables {
                stored::remove(&mut txn, catalog.stored(), &t.name)?;
            }
            txn.commit()?;
            for t in &tables {
                catalog.remove(&t.name);
                db.drop_table(t.engine.name())?;
            }
            Ok("DROP TABLE")
        }
        Ddl::Truncate(names) => {
            let tables = names
                .iter()
                .map(|n| catalog.table(n))
                .collect::<Result<Vec<_>>>()?;
            for t in &tables {
                let shape = (t.columns.clone(), t.primary_key.clone(), index_list(t));
                rebuild(catalog, t, shape, true, priority)?;
            }
            Ok("TRUNCATE TABLE")
        }
        Ddl::AddPrimaryKey { table, columns } => {
            let old = catalog.table(table)?;
            if !old.primary_key.is_empty() {
                return Err(SqlError::new(
                    sqlstate::INVALID_PARAMETER_VALUE,
                    format!("multiple primary keys for table \"{table}\" are not allowed"),
                ));
            }
            let key = positions(&old, columns)?;
            let mut cols = old.columns.clone();
            for &k in &key {
                cols[k].nullable = false;
            }
            rebuild(
                catalog,
                &old,
                (cols, key, index_list(&old)),
                false,
                priority,
            )?;
            Ok("ALTER TABLE")
        }
        Ddl::CreateIndex {
            name,
            table,
            columns,
            if_not_exists,
        } => {
            let old = catalog.table(table)?;
            if old.indexes.iter().any(|i| i.name == *name) {
                if *if_not_exists {
                    return Ok("CREATE INDEX");
                }
                return Err(SqlError::new(
                    sqlstate::DUPLICATE_TABLE,
                    format!("relation \"{name}\" already exists"),
                ));
            }
            let mut indexes = index_list(&old);
            let cols = positions(&old, columns)?;
            if let Some(&c) = cols.iter().find(|&&c| old.columns[c].nullable) {
                return Err(SqlError::unsupported(format!(
                    "an index on column \"{}\", which may be NULL (the engine's index keys cannot hold NULL; declare it NOT NULL),",
                    old.columns[c].name
                )));
            }
            indexes.push((name.clone(), cols));
            let shape = (old.columns.clone(), old.primary_key.clone(), indexes);
            rebuild(catalog, &old, shape, false, priority)?;
            Ok("CREATE INDEX")
        }
    }
}
