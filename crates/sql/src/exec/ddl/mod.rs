//! Executing catalog changes inside a transaction, as PostgreSQL's DDL: a table is created as
//! an engine table; TRUNCATE, ADD PRIMARY KEY and CREATE INDEX build a new engine table (copying
//! the rows the transaction sees, its own writes included, and checking the new key), which
//! stands for the old one once the transaction commits. Each change writes the stored catalog's
//! row in the transaction (with the copied rows, for a rebuild) and returns what it changed
//! ([`Change`]): the session keeps that as its block's view of the catalog, published when the
//! block commits and undone when it rolls back (see `pending`).
//!
//! A rebuild or drop first takes the table's rebuild lock (see `lock_for_rebuild`), and every
//! writer holds the table's write lock until its transaction ends (`exec`), so no commit ever
//! lands in a table that is being replaced.
//!
//! Parts: `index` (indexes and constraints on them), `columns` (ALTER TABLE on columns),
//! `foreign_key` (FOREIGN KEY constraints and what depends on a referenced table), `drop`
//! (DROP TABLE, TRUNCATE), `view` (CREATE VIEW).

use std::sync::Arc;

use overtake_engine::{
    ColumnType, Isolation, KeyRange, Priority, ScanOptions, TableLock, TableSchema, Transaction,
};

use crate::catalog::acl::Acl;
use crate::catalog::pending::{Change, Pending, Tables};
use crate::catalog::{
    Catalog, Check, ForeignKey, ROW_ID_COLUMN, RowIds, SqlColumn, SqlIndex, SqlTable, UniqueKeys,
};
use crate::error::{Result, SqlError, sqlstate};
use crate::exec::access;
use crate::exec::insert_rows;
use crate::exec::stored;
use crate::exec::unique;
use crate::expr::Context;
use crate::plan::{Ddl, GrantOn, IndexKind};
use crate::sequence::Sequence;
use crate::values::datum::Datum;

mod columns;
mod drop;
mod foreign_key;
mod index;
mod view;

/// A secondary index to build.
#[derive(Clone)]
struct IndexSpec {
    name: String,
    /// Positions of its columns.
    columns: Vec<usize>,
    oid: u32,
    kind: IndexKind,
}

/// Creates an engine table for a SQL table (object id `oid`) described by `columns`,
/// `primary_key` and `indexes` (column positions), and returns the SQL table over it.
fn build(
    catalog: &Catalog,
    (name, oid): (&str, u32),
    columns: Vec<SqlColumn>,
    primary_key: Vec<usize>,
    indexes: &[IndexSpec],
    acl: Acl,
) -> Result<SqlTable> {
    if let Some(c) = columns
        .iter()
        .find(|c| c.ty == crate::values::types::SqlType::Interval)
    {
        return Err(SqlError::unsupported(format!(
            "a column of type interval (\"{}\")",
            c.name
        )));
    }
    let keyed = primary_key
        .iter()
        .chain(indexes.iter().flat_map(|i| &i.columns));
    if let Some(c) = keyed
        .map(|&i| &columns[i])
        .find(|c| matches!(c.ty, crate::values::types::SqlType::Array(_)))
    {
        return Err(SqlError::unsupported(format!(
            "a key or index on array column \"{}\"",
            c.name
        )));
    }
    let engine_name = catalog.engine_name(name);
    let mut schema = TableSchema::builder(engine_name);
    for (i, c) in columns.iter().enumerate() {
        let in_key = primary_key.contains(&i) || indexes.iter().any(|x| x.columns.contains(&i));
        let ty = c.ty.column_type(in_key);
        schema = if c.nullable {
            schema.nullable_column(c.name.clone(), ty)
        } else {
            schema.column(c.name.clone(), ty)
        };
    }
    let names =
        |cols: &[usize]| -> Vec<&str> { cols.iter().map(|&c| columns[c].name.as_str()).collect() };
    let row_ids = primary_key.is_empty().then(|| Arc::new(RowIds::after(0)));
    schema = if row_ids.is_some() {
        schema
            .column(ROW_ID_COLUMN, ColumnType::Int64)
            .primary_key(&[ROW_ID_COLUMN])
    } else {
        schema.primary_key(&names(&primary_key))
    };
    for index in indexes {
        schema = schema.index(index.name.clone(), &names(&index.columns));
    }
    let schema = schema
        .build()
        .map_err(|e| SqlError::new(sqlstate::PROGRAM_LIMIT_EXCEEDED, e.to_string()))?;
    let engine = catalog.database().create_table(schema)?;
    let mut made = Vec::with_capacity(indexes.len());
    for index in indexes {
        let unique = match index.kind {
            IndexKind::Plain => Ok(None),
            IndexKind::Unique | IndexKind::UniqueConstraint => {
                unique_keys(catalog, &engine, &columns, index).map(Some)
            }
        };
        let unique = match unique {
            Ok(u) => u,
            Err(e) => {
                for t in std::iter::once(&engine).chain(made.iter().filter_map(unique_engine)) {
                    let _ = catalog.database().drop_table(t.name());
                }
                return Err(e);
            }
        };
        made.push(SqlIndex {
            id: engine.index(&index.name).expect("declared above"),
            name: index.name.clone(),
            columns: index.columns.clone(),
            oid: index.oid,
            unique,
        });
    }
    Ok(SqlTable {
        name: name.to_owned(),
        oid,
        columns,
        primary_key,
        indexes: made,
        engine,
        row_ids,
        statistics: Default::default(),
        acl,
        checks: Vec::new(),
        foreign_keys: Vec::new(),
        sequence: None,
        view: None,
    })
}

fn unique_engine(index: &SqlIndex) -> Option<&Arc<overtake_engine::Table>> {
    index.unique.as_ref().map(|u| &u.engine)
}

/// Creates the engine table that keeps `index` of the table over `engine` (of `columns`)
/// unique: keyed by the index's columns, named after the table's engine table and the index.
fn unique_keys(
    catalog: &Catalog,
    engine: &overtake_engine::Table,
    columns: &[SqlColumn],
    index: &IndexSpec,
) -> Result<UniqueKeys> {
    let mut schema = TableSchema::builder(unique::engine_name(engine, &index.name));
    let mut names = Vec::with_capacity(index.columns.len());
    for &c in &index.columns {
        schema = schema.column(columns[c].name.clone(), columns[c].ty.column_type(true));
        names.push(columns[c].name.as_str());
    }
    let schema = schema
        .primary_key(&names)
        .build()
        .map_err(|e| SqlError::new(sqlstate::PROGRAM_LIMIT_EXCEEDED, e.to_string()))?;
    Ok(UniqueKeys {
        engine: catalog.database().create_table(schema)?,
        constraint: index.kind == IndexKind::UniqueConstraint,
    })
}

/// Creates `sequence`'s engine table and its catalog row in `txn` (object id `oid`), and
/// returns it as a relation.
fn make_sequence(
    catalog: &Catalog,
    txn: &mut Transaction<'_>,
    sequence: &Arc<Sequence>,
    acl: Acl,
) -> Result<SqlTable> {
    let schema = crate::sequence::engine_schema(catalog.engine_name(&sequence.name))?;
    let engine = catalog.database().create_table(schema)?;
    let table = SqlTable {
        name: sequence.name.clone(),
        oid: catalog.new_oids(SqlTable::OIDS),
        columns: stored::sequence_columns(),
        primary_key: Vec::new(),
        indexes: Vec::new(),
        engine: Arc::clone(&engine),
        row_ids: None,
        statistics: Default::default(),
        acl,
        checks: Vec::new(),
        foreign_keys: Vec::new(),
        sequence: Some(Arc::clone(sequence)),
        view: None,
    };
    let done = sequence
        .attach(Arc::clone(catalog.database()), engine)
        .and_then(|()| stored::write(txn, catalog.stored(), &table, false))
        .map_err(|e| already_exists(e, &table.name));
    or_discard(catalog, &table, done)?;
    Ok(table)
}

/// A unique violation writing a new catalog row: another session made the relation meanwhile.
fn already_exists(e: SqlError, name: &str) -> SqlError {
    if e.code == sqlstate::UNIQUE_VIOLATION {
        relation_exists(name)
    } else {
        e
    }
}

/// 42P07: relation `name` already exists.
fn relation_exists(name: &str) -> SqlError {
    SqlError::new(
        sqlstate::DUPLICATE_TABLE,
        format!("relation \"{name}\" already exists"),
    )
}

/// The relation `name` as a table: 42809 for a sequence or a view (which table DDL refuses).
fn plain_table(tables: &Tables<'_>, name: &str) -> Result<Arc<SqlTable>> {
    let t = tables.table(name)?;
    if t.kind() != crate::catalog::RelKind::Table {
        return Err(not_a(name, "table"));
    }
    Ok(t)
}

/// The relation `name` as a table that `what` changes (`"ALTER action ADD COLUMN cannot be
/// performed on"`, `"cannot create index on"`): 42809 for a sequence or a view, in PostgreSQL's
/// words.
fn table_to_change(tables: &Tables<'_>, name: &str, what: &str) -> Result<Arc<SqlTable>> {
    let t = tables.table(name)?;
    match t.kind() {
        crate::catalog::RelKind::Table => Ok(t),
        kind => Err(SqlError::new(
            sqlstate::WRONG_OBJECT_TYPE,
            format!("{what} relation \"{name}\""),
        )
        .with_detail(format!(
            "This operation is not supported for {}s.",
            kind.noun()
        ))),
    }
}

/// 2BP01: `what` (`table p`, `column c of table t`) cannot go while the objects each of
/// `lines` names depend on it (`view v depends on table p`).
fn still_depended_on(what: &str, lines: &[String]) -> SqlError {
    SqlError::new(
        sqlstate::DEPENDENT_OBJECTS_STILL_EXIST,
        format!("cannot drop {what} because other objects depend on it"),
    )
    .with_detail(lines.join("\n"))
    .with_hint("Use DROP ... CASCADE to drop the dependent objects too.")
}

/// What `ALTER TABLE ... ADD CONSTRAINT` on a sequence or view says.
const ADD_CONSTRAINT: &str = "ALTER action ADD CONSTRAINT cannot be performed on";

/// 42809: relation `name` is not a `kind`.
fn not_a(name: &str, kind: &str) -> SqlError {
    SqlError::new(
        sqlstate::WRONG_OBJECT_TYPE,
        format!(
            "\"{name}\" is not {} {kind}",
            if kind.starts_with('i') { "an" } else { "a" }
        ),
    )
}

/// Where a rebuilt table's columns come from: column `i` of the new table takes column
/// `sources[i]` of the old one, or its default where that is `None`; and, with `computed`,
/// the new column it names takes instead the value of its expression over the old row (an
/// `ALTER COLUMN ... TYPE ... USING`).
#[derive(Clone, Copy)]
pub(super) struct Sources<'a> {
    pub(super) columns: &'a [Option<usize>],
    pub(super) computed: Option<(usize, &'a crate::expr::Expr)>,
}

/// Copies every row of `old` into `new` in `txn`, each column from where `sources` says (the
/// value converted to the new column's type as an assignment converts it).
fn copy_rows(
    txn: &mut Transaction<'_>,
    old: &SqlTable,
    new: &SqlTable,
    sources: Sources<'_>,
) -> Result<()> {
    let taken: Vec<usize> = sources.columns.iter().filter_map(|s| *s).collect();
    let into: Vec<usize> = (0..new.columns.len())
        .filter(|&i| sources.columns[i].is_some())
        .collect();
    let cx = Context::new(&[], crate::values::time::now_micros());
    // The computed column's place among those copied.
    let computed = sources
        .computed
        .and_then(|(col, e)| Some((into.iter().position(|&i| i == col)?, e)));
    let mut rows = Vec::new();
    let mut failure = None;
    // Validated: under REPEATABLE READ or SERIALIZABLE the snapshot may predate a commit the
    // rebuild's lock waited out, and then the rebuild must fail rather than leave it behind.
    let options = ScanOptions::forward().validated();
    txn.scan(&old.engine, &KeyRange::all(), options, |r| {
        let mut row: Vec<Datum> = taken
            .iter()
            .map(|&i| Datum::from_value(r.get(i), old.columns[i].ty))
            .collect();
        if let Some((at, e)) = computed {
            let whole = crate::exec::rows::read_row(old, r);
            match e.eval(&whole, &cx) {
                Ok(v) => row[at] = v,
                Err(err) => {
                    failure = Some(err);
                    return std::ops::ControlFlow::Break(());
                }
            }
        }
        rows.push(row);
        std::ops::ControlFlow::Continue(())
    })?;
    if let Some(err) = failure {
        return Err(err);
    }
    // A column that becomes NOT NULL must hold no NULL (checked first, as PostgreSQL does).
    for (i, c) in new.columns.iter().enumerate() {
        let nulls = match into.iter().position(|&n| n == i) {
            Some(at) => rows.iter().any(|r| r[at].is_null()),
            None => !rows.is_empty() && c.default.is_none(),
        };
        if !c.nullable && nulls {
            return Err(SqlError::new(
                sqlstate::NOT_NULL_VIOLATION,
                format!(
                    "column \"{}\" of relation \"{}\" contains null values",
                    c.name, new.name
                ),
            ));
        }
    }
    insert_rows(txn, (new, None), &into, rows, &cx)?;
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

fn index_list(table: &SqlTable) -> Vec<IndexSpec> {
    table
        .indexes
        .iter()
        .map(|i| IndexSpec {
            name: i.name.clone(),
            columns: i.columns.clone(),
            oid: i.oid,
            kind: match &i.unique {
                None => IndexKind::Plain,
                Some(u) if u.constraint => IndexKind::UniqueConstraint,
                Some(_) => IndexKind::Unique,
            },
        })
        .collect()
}

/// A table's shape: its columns, primary key and indexes.
type Shape = (Vec<SqlColumn>, Vec<usize>, Vec<IndexSpec>);

/// Drops the engine table of `new` if the change that made it fails: nothing describes it.
fn or_discard<T>(catalog: &Catalog, new: &SqlTable, done: Result<T>) -> Result<T> {
    if done.is_err() {
        // Not described anywhere: dropping it can only fail if it is gone already.
        for t in new.engine_tables() {
            let _ = catalog.database().drop_table(t.name());
        }
    }
    done
}

/// Takes `table`'s rebuild lock (PostgreSQL's ACCESS EXCLUSIVE), waiting for every block that
/// wrote to it to end and keeping new writers out until this transaction ends, so that no
/// commit lands in the table being replaced. A table another block replaced meanwhile fails
/// with 40001 (as `stored::check_current` would).
fn lock_for_rebuild(txn: &mut Transaction<'_>, table: &SqlTable) -> Result<()> {
    Ok(txn.lock_table(&table.engine, TableLock::Rebuild)?)
}

/// A table's constraints besides its keys: its CHECK and FOREIGN KEY constraints.
type Constraints = (Vec<Check>, Vec<ForeignKey>);

/// Rebuilds `old` as described in `txn`, copying its rows unless `empty`.
fn rebuild(
    catalog: &Catalog,
    txn: &mut Transaction<'_>,
    old: &Arc<SqlTable>,
    shape: Shape,
    empty: bool,
) -> Result<Change> {
    let constraints = (old.checks.clone(), old.foreign_keys.clone());
    rebuild_checked(catalog, txn, old, shape, constraints, empty, None)
}

/// [`rebuild_checked`] of a table whose rows are copied.
fn rebuild_with(
    catalog: &Catalog,
    txn: &mut Transaction<'_>,
    old: &Arc<SqlTable>,
    shape: Shape,
    constraints: Constraints,
    sources: Option<Sources<'_>>,
) -> Result<Change> {
    rebuild_checked(catalog, txn, old, shape, constraints, false, sources)
}

/// [`rebuild`] with the constraints `checks` and `foreign_keys` in place of `old`'s, and the
/// new columns' sources in `old` (see [`copy_rows`]; `None`: the same columns).
fn rebuild_checked(
    catalog: &Catalog,
    txn: &mut Transaction<'_>,
    old: &Arc<SqlTable>,
    (columns, primary_key, indexes): Shape,
    (checks, foreign_keys): Constraints,
    empty: bool,
    sources: Option<Sources<'_>>,
) -> Result<Change> {
    lock_for_rebuild(txn, old)?;
    stored::check_current(txn, catalog.stored(), old)?;
    let mut new = build(
        catalog,
        (&old.name, old.oid),
        columns,
        primary_key,
        &indexes,
        old.acl.clone(),
    )?;
    new.checks = checks;
    new.foreign_keys = foreign_keys;
    let done = (|| {
        if !empty {
            let same: Vec<Option<usize>>;
            let sources = match sources {
                Some(s) => s,
                None => {
                    same = (0..old.columns.len()).map(Some).collect();
                    Sources {
                        columns: &same,
                        computed: None,
                    }
                }
            };
            copy_rows(txn, old, &new, sources)?;
        }
        stored::write(txn, catalog.stored(), &new, true)
    })();
    or_discard(catalog, &new, done)?;
    Ok(Change::Replace {
        old: Arc::clone(old),
        new: Arc::new(new),
    })
}

/// Runs `ddl` alone, as a transaction of its own at `priority`, and publishes it.
pub fn execute(catalog: &Catalog, ddl: &Ddl, priority: Priority) -> Result<&'static str> {
    // READ COMMITTED: a rebuild's copy reads what committed before its lock was granted.
    let mut txn = catalog
        .database()
        .begin(priority, Isolation::ReadCommitted)?;
    let (tag, changes) = execute_in(Tables::shared(catalog), &mut txn, ddl)?;
    let mut pending = Pending::default();
    pending.record(changes);
    match txn.commit() {
        Ok(()) => pending.publish(catalog)?,
        Err(e) => {
            pending.discard(catalog);
            return Err(e.into());
        }
    }
    Ok(tag)
}

/// Runs `ddl` in `txn`, over the catalog as `tables` shows it; returns its command tag and what
/// it changed (to record in the block's [`Pending`] changes). On an error, no engine table it
/// made is left behind; the transaction must roll back.
pub fn execute_in(
    tables: Tables<'_>,
    txn: &mut Transaction<'_>,
    ddl: &Ddl,
) -> Result<(&'static str, Vec<Change>)> {
    let catalog = tables.catalog;
    match ddl {
        Ddl::CreateSequence {
            sequence,
            if_not_exists,
        } => {
            let name = &sequence.name;
            if tables.table(name).is_ok() {
                if *if_not_exists {
                    return Ok(("CREATE SEQUENCE", Vec::new()));
                }
                return Err(relation_exists(name));
            }
            if let Some((table, column)) = &sequence.options.owned_by {
                plain_table(&tables, table)?.column(column).ok_or_else(|| {
                    SqlError::new(
                        sqlstate::UNDEFINED_COLUMN,
                        format!("column \"{column}\" of relation \"{table}\" does not exist"),
                    )
                })?;
            }
            let made = make_sequence(catalog, txn, sequence, Acl::owned_by(tables.actor))?;
            Ok(("CREATE SEQUENCE", vec![Change::Add(Arc::new(made))]))
        }
        Ddl::CreateTable {
            name,
            columns,
            primary_key,
            if_not_exists,
            sequences,
            checks,
            uniques,
            foreign_keys,
        } => {
            if tables.table(name).is_ok() {
                if *if_not_exists {
                    return Ok(("CREATE TABLE", Vec::new()));
                }
                return Err(relation_exists(name));
            }
            for c in columns {
                crate::catalog::check_not_system_column(&c.name)?;
            }
            let acl = Acl::owned_by(tables.actor);
            let oid = catalog.new_oids(SqlTable::OIDS);
            let indexes: Vec<IndexSpec> = uniques
                .iter()
                .map(|(index, cols)| IndexSpec {
                    name: index.clone(),
                    columns: cols.clone(),
                    oid: catalog.new_oids(1),
                    kind: IndexKind::UniqueConstraint,
                })
                .collect();
            if let Some(taken) = indexes
                .iter()
                .find(|i| tables.table(&i.name).is_ok() || i.name == *name)
            {
                return Err(relation_exists(&taken.name));
            }
            let mut table = build(
                catalog,
                (name, oid),
                columns.clone(),
                primary_key.clone(),
                &indexes,
                acl,
            )?;
            table.checks = checks.clone();
            let done = (|| {
                for def in foreign_keys {
                    let fk = foreign_key::resolve(&tables, &table, def)?;
                    table.foreign_keys.push(fk);
                }
                stored::write(txn, catalog.stored(), &table, false)
                    .map_err(|e| already_exists(e, name))
            })();
            or_discard(catalog, &table, done)?;
            let mut changes = vec![Change::Add(Arc::new(table))];
            for s in sequences {
                if tables.table(&s.name).is_ok() {
                    discard_made(catalog, changes);
                    return Err(relation_exists(&s.name));
                }
                match make_sequence(catalog, txn, s, Acl::owned_by(tables.actor)) {
                    Ok(made) => changes.push(Change::Add(Arc::new(made))),
                    Err(e) => {
                        discard_made(catalog, changes);
                        return Err(e);
                    }
                }
            }
            Ok(("CREATE TABLE", changes))
        }
        Ddl::CreateView {
            name,
            columns,
            view,
            or_replace,
        } => view::create(&tables, txn, (name, columns, view), *or_replace),
        Ddl::DropTable {
            names,
            if_exists,
            kind,
            cascade,
        } => drop::tables(&tables, txn, names, *if_exists, (*kind, *cascade)),
        Ddl::Truncate { names, cascade } => drop::truncate(&tables, txn, names, *cascade),
        Ddl::AddPrimaryKey { table, columns } => {
            let old = table_to_change(&tables, table, ADD_CONSTRAINT)?;
            access::require_owner(tables.actor, &old)?;
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
            let change = rebuild(catalog, txn, &old, (cols, key, index_list(&old)), false)?;
            Ok(("ALTER TABLE", vec![change]))
        }
        Ddl::CreateIndex {
            name,
            table,
            columns,
            if_not_exists,
            kind,
        } => index::create(
            &tables,
            txn,
            name.as_deref(),
            (table, columns),
            *if_not_exists,
            *kind,
        ),
        Ddl::DropIndex { names, if_exists } => index::drop(&tables, txn, names, *if_exists),
        Ddl::DropConstraint {
            table,
            name,
            if_exists,
        } => index::drop_constraint(&tables, txn, table, name, *if_exists),
        Ddl::AlterColumn { table, change } => columns::alter(&tables, txn, table, change),
        Ddl::Steps(steps) => {
            // Each step sees the ones before it, as the statements of a block would.
            let mut seen = tables.pending.cloned().unwrap_or_default();
            let mut changes = Vec::new();
            for step in steps {
                let view = Tables {
                    pending: Some(&seen),
                    ..tables
                };
                match execute_in(view, txn, step) {
                    Ok((_, made)) => {
                        seen.record(made.clone());
                        changes.extend(made);
                    }
                    Err(e) => {
                        discard_made(catalog, changes);
                        return Err(e);
                    }
                }
            }
            Ok(("ALTER TABLE", changes))
        }
        Ddl::AddForeignKey { table, foreign_key } => {
            foreign_key::add(&tables, txn, table, foreign_key)
        }
        Ddl::Grant {
            privileges,
            on,
            grantees,
            revoke,
        } => {
            let targets = match on {
                GrantOn::Tables(names) => {
                    let mut named: Vec<Arc<SqlTable>> = Vec::new();
                    for n in names {
                        let t = tables.table(n)?;
                        if !named.iter().any(|x| x.name == t.name) {
                            named.push(t);
                        }
                    }
                    named
                }
                GrantOn::AllTables => tables.all(),
            };
            let mut changes = Vec::new();
            for old in &targets {
                // A role that may do something with the table but does not own it grants
                // nothing (PostgreSQL warns); one that may do nothing is refused.
                if let Some(actor) = tables.actor
                    && !old.acl.is_owner(actor)
                {
                    if old.acl.privileges_of(actor).is_empty() {
                        return Err(access::denied(old));
                    }
                    continue;
                }
                let mut acl = old.acl.clone();
                for g in grantees {
                    acl.grant(g, *privileges, *revoke);
                }
                let foreign_keys = old.foreign_keys.clone();
                changes.push(describe_anew(catalog, txn, old, (acl, foreign_keys))?);
            }
            Ok((if *revoke { "REVOKE" } else { "GRANT" }, changes))
        }
        Ddl::SetOwner { table, owner } => {
            let old = tables.table(table)?;
            access::require_owner(tables.actor, &old)?;
            if let Some(actor) = tables.actor
                && !actor.superuser
                && actor.name != *owner
            {
                return Err(SqlError::new(
                    sqlstate::INSUFFICIENT_PRIVILEGE,
                    format!("must be member of role \"{owner}\""),
                ));
            }
            let acl = Acl {
                owner: Some(owner.clone()),
                ..old.acl.clone()
            };
            let described = (acl, old.foreign_keys.clone());
            Ok((
                "ALTER TABLE",
                vec![describe_anew(catalog, txn, &old, described)?],
            ))
        }
    }
}

/// `old` with `acl` and `foreign_keys` instead of its own, over the same engine table: its
/// catalog row rewritten in `txn`.
fn describe_anew(
    catalog: &Catalog,
    txn: &mut Transaction<'_>,
    old: &Arc<SqlTable>,
    (acl, foreign_keys): (Acl, Vec<ForeignKey>),
) -> Result<Change> {
    stored::check_current(txn, catalog.stored(), old)?;
    let new = SqlTable {
        name: old.name.clone(),
        oid: old.oid,
        columns: old.columns.clone(),
        primary_key: old.primary_key.clone(),
        indexes: old.indexes.clone(),
        engine: Arc::clone(&old.engine),
        row_ids: old.row_ids.clone(),
        statistics: Arc::clone(&old.statistics),
        acl,
        checks: old.checks.clone(),
        foreign_keys,
        sequence: old.sequence.clone(),
        view: old.view.clone(),
    };
    stored::write(txn, catalog.stored(), &new, true)?;
    Ok(Change::Replace {
        old: Arc::clone(old),
        new: Arc::new(new),
    })
}

/// Drops the engine tables `changes` made (a statement that made some of its changes failed).
fn discard_made(catalog: &Catalog, changes: Vec<Change>) {
    let mut pending = Pending::default();
    pending.record(changes);
    pending.discard(catalog);
}
