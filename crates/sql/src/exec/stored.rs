//! The SQL catalog kept in the database itself: one row per SQL table in an engine table of its
//! own, holding the engine table with its rows and a description of the table in SQL (a
//! `CREATE TABLE` followed by its `CREATE INDEX`es), so a database opened from its directory
//! has its SQL tables back exactly as they were declared.
//!
//! A catalog row is written in the same engine transaction as the change it records where
//! there is one (a rebuild's copied rows), so a crash leaves either the old table or the new
//! one described, never a mix; an engine table no row describes (a crash between creating it
//! and describing it) is dropped when the catalog is opened.
//!
//! Must never be read or written except through these functions: the description's text is an
//! on-disk format.

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::sync::Arc;

use overtake_engine::{
    ColumnType, Database, Isolation, KeyRange, Priority, ScanOptions, Table, TableSchema,
    Transaction,
};

use crate::bind::statement::{parse, prepare};
use crate::catalog::acl::{Acl, Grantee};
use crate::catalog::{
    Catalog, ForeignKey, Identity, ROW_ID_COLUMN, RowIds, SqlColumn, SqlIndex, SqlTable, UniqueKeys,
};
use crate::error::{Result, SqlError, sqlstate};
use crate::plan::{Command, Ddl, IndexKind};
use crate::sequence::Sequence;
use crate::values::types::SqlType;

/// The engine table holding the catalog. Engine tables of SQL tables are named `name#n`, so no
/// SQL table's engine table can take this name.
pub(crate) const TABLE: &str = "overtake_sql_catalog";

const NAME: usize = 0;
const ENGINE: usize = 1;
const DESCRIPTION: usize = 2;

/// Longest description (bytes): what fits a row.
const DESCRIPTION_MAX: u16 = 60_000;

impl Catalog {
    /// The catalog of `db`: the tables its stored catalog describes (none in a new database).
    /// Engine tables of SQL tables that no row describes, left by a crash in the middle of a
    /// catalog change, are dropped.
    pub fn open(db: Arc<Database>) -> Result<Catalog> {
        let stored = open_table(&db)?;
        let roles = crate::catalog::roles::open_table(&db)?;
        // Engine names are `name#n`; new ones continue after every number in use.
        let generation = db
            .tables()
            .iter()
            .filter_map(|t| t.name().rsplit_once('#')?.1.parse::<u64>().ok())
            .max()
            .map_or(0, |n| n + 1);
        let described = {
            let mut txn = db.begin(Priority::HIGH, Isolation::Snapshot)?;
            read_all(&mut txn, &stored)?
        };
        // Descriptions are planned like the statements they are (against no tables).
        let tables_of = (Arc::clone(&stored), Arc::clone(&roles));
        let binding = Catalog::assemble(Arc::clone(&db), tables_of, HashMap::new(), 0);
        // Tables an older version kept get object ids after every one kept.
        let kept = described.iter().filter_map(|d| kept_oids(&d.description));
        let last_kept = kept.flatten().max().unwrap_or(0);
        binding.reserve_oids_through(last_kept.saturating_add(SqlTable::OIDS));
        // Sequences first: the defaults of the tables' columns name them. Views last, each
        // once the relations its query reads are back (a view may read views).
        let mut tables = HashMap::new();
        let (sequences, rest): (Vec<&Described>, Vec<&Described>) = described
            .iter()
            .partition(|d| d.description.starts_with("CREATE SEQUENCE"));
        let (mut views, plain): (Vec<&Described>, Vec<&Described>) = rest
            .into_iter()
            .partition(|d| d.description.starts_with("CREATE VIEW"));
        for d in sequences.into_iter().chain(plain) {
            let restored = Arc::new(restore(&binding, d)?);
            binding.exchange(&d.name, None, Some(Arc::clone(&restored)));
            tables.insert(d.name.clone(), restored);
        }
        while !views.is_empty() {
            let before = views.len();
            let mut first_error = None;
            for d in std::mem::take(&mut views) {
                match restore(&binding, d) {
                    Ok(restored) => {
                        let restored = Arc::new(restored);
                        binding.exchange(&d.name, None, Some(Arc::clone(&restored)));
                        tables.insert(d.name.clone(), restored);
                    }
                    Err(e) => {
                        first_error.get_or_insert(e);
                        views.push(d);
                    }
                }
            }
            // A round that brought none back cannot be followed by one that does.
            if views.len() == before
                && let Some(e) = first_error
            {
                return Err(e);
            }
        }
        for t in db.tables() {
            let described = tables
                .values()
                .any(|s| s.engine_tables().any(|e| Arc::ptr_eq(e, &t)));
            if t.name().contains('#') && !described {
                db.drop_table(t.name())?;
            }
        }
        let last = tables
            .values()
            .flat_map(|t| {
                let own = t.oid.saturating_add(SqlTable::OIDS - 1);
                std::iter::once(own).chain(t.indexes.iter().map(|i| i.oid))
            })
            .max()
            .unwrap_or(0);
        let catalog = Catalog::assemble(db, (stored, roles), tables, generation);
        catalog.reserve_oids_through(last);
        Ok(catalog)
    }
}

/// The catalog's engine table in `db`, created if it has none.
fn open_table(db: &Database) -> Result<Arc<Table>> {
    if let Ok(t) = db.table(TABLE) {
        return Ok(t);
    }
    let schema = TableSchema::builder(TABLE)
        .column(
            "name",
            ColumnType::VarChar(crate::values::types::TEXT_KEY_MAX),
        )
        .column("engine", ColumnType::VarChar(255))
        .column("description", ColumnType::VarChar(DESCRIPTION_MAX))
        .primary_key(&["name"])
        .build()
        .map_err(|e| SqlError::new(sqlstate::INTERNAL_ERROR, e.to_string()))?;
    Ok(db.create_table(schema)?)
}

/// A described table: its SQL name, its engine table's name, and its description.
struct Described {
    name: String,
    engine: String,
    description: String,
}

/// Every row of the catalog.
fn read_all(txn: &mut Transaction<'_>, stored: &Table) -> Result<Vec<Described>> {
    let mut out = Vec::new();
    txn.scan(stored, &KeyRange::all(), ScanOptions::forward(), |r| {
        out.push(Described {
            name: r.str(NAME).to_owned(),
            engine: r.str(ENGINE).to_owned(),
            description: r.str(DESCRIPTION).to_owned(),
        });
        ControlFlow::Continue(())
    })?;
    Ok(out)
}

/// Writes `table`'s row: a new one, or (`replace`) over the one of its name.
pub(crate) fn write(
    txn: &mut Transaction<'_>,
    stored: &Table,
    table: &SqlTable,
    replace: bool,
) -> Result<()> {
    let description = describe(table);
    if description.len() > usize::from(DESCRIPTION_MAX) {
        return Err(SqlError::new(
            sqlstate::PROGRAM_LIMIT_EXCEEDED,
            format!(
                "the description of table \"{}\" is {} bytes, longer than the catalog's limit of {DESCRIPTION_MAX}",
                table.name,
                description.len()
            ),
        ));
    }
    let row = stored
        .row_builder()
        .str(NAME, &table.name)
        .str(ENGINE, table.engine.name())
        .str(DESCRIPTION, &description)
        .finish()?;
    if replace {
        txn.delete(stored, &key(stored, &table.name)?)?;
    }
    txn.insert(stored, row)?;
    Ok(())
}

/// Fails with 40001 unless the catalog's row for `table` still describes it: another
/// transaction changed the table (and committed) since this one found it. Takes the row's write
/// lock first where the isolation level has row locks (READ COMMITTED), so the check and the
/// change that follows see the newest row; elsewhere a concurrent change fails one of the two
/// at commit.
pub(crate) fn check_current(
    txn: &mut Transaction<'_>,
    stored: &Table,
    table: &SqlTable,
) -> Result<()> {
    let key = key(stored, &table.name)?;
    txn.lock_row(stored, &key)?;
    let row = txn.get(stored, &key, |r| {
        (r.str(ENGINE).to_owned(), r.str(DESCRIPTION).to_owned())
    })?;
    // The owner and grants too: changing them keeps the engine table. (Only they are compared:
    // the rest of a description written by an older version may be worded otherwise.)
    let current = row.is_some_and(|(engine, description)| {
        engine == table.engine.name() && acl_lines(&description) == acl_lines(&describe(table))
    });
    if !current {
        return Err(SqlError::new(
            sqlstate::SERIALIZATION_FAILURE,
            format!(
                "could not serialize access: table \"{}\" was changed concurrently",
                table.name
            ),
        ));
    }
    Ok(())
}

/// Removes the row of table `name`.
pub(crate) fn remove(txn: &mut Transaction<'_>, stored: &Table, name: &str) -> Result<()> {
    txn.delete(stored, &key(stored, name)?)?;
    Ok(())
}

fn key(stored: &Table, name: &str) -> Result<overtake_engine::KeyBuf> {
    Ok(stored.key().str(name).finish()?)
}

/// Quotes an identifier as PostgreSQL does (`"` doubled inside).
fn quoted(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// The columns a sequence shows as a relation (`SELECT * FROM s`), as PostgreSQL's.
pub(crate) fn sequence_columns() -> Vec<SqlColumn> {
    [
        ("last_value", SqlType::Int8),
        ("log_cnt", SqlType::Int8),
        ("is_called", SqlType::Bool),
    ]
    .into_iter()
    .map(|(name, ty)| SqlColumn {
        name: name.into(),
        ty,
        nullable: false,
        default: None,
        identity: None,
    })
    .collect()
}

/// A sequence in SQL: its `CREATE SEQUENCE` with every option.
fn describe_sequence(name: &str, s: &Sequence) -> String {
    let o = &s.options;
    let mut sql = format!(
        "CREATE SEQUENCE {} AS {} INCREMENT BY {} MINVALUE {} MAXVALUE {} START WITH {}{}",
        quoted(name),
        o.ty.name(),
        o.increment,
        o.min,
        o.max,
        o.start,
        if o.cycle { " CYCLE" } else { " NO CYCLE" }
    );
    if let Some((table, column)) = &o.owned_by {
        sql.push_str(&format!(" OWNED BY {}.{}", quoted(table), quoted(column)));
    }
    sql.push(';');
    sql
}

/// `table` in SQL: a `CREATE TABLE` with its columns' types, NULL-ability and defaults and its
/// primary key, then a `CREATE INDEX` per index (a sequence: its `CREATE SEQUENCE`; a view: its
/// `CREATE VIEW` naming its columns).
fn describe(table: &SqlTable) -> String {
    if let Some(v) = &table.view {
        let columns: Vec<String> = table.columns.iter().map(|c| quoted(&c.name)).collect();
        let mut sql = format!(
            "CREATE VIEW {} ({}) AS {};",
            quoted(&table.name),
            columns.join(", "),
            v.sql
        );
        describe_rest(table, &mut sql);
        return sql;
    }
    if let Some(s) = &table.sequence {
        let mut sql = describe_sequence(&table.name, s);
        describe_rest(table, &mut sql);
        return sql;
    }
    let mut parts: Vec<String> = table
        .columns
        .iter()
        .map(|c| {
            let mut column = format!("{} {}", quoted(&c.name), c.ty.name());
            if !c.nullable {
                column.push_str(" NOT NULL");
            }
            if let Some(d) = &c.default {
                column.push_str(" DEFAULT ");
                column.push_str(&d.sql);
            }
            column
        })
        .collect();
    let names = |cols: &[usize]| -> String {
        cols.iter()
            .map(|&c| quoted(&table.columns[c].name))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if !table.primary_key.is_empty() {
        parts.push(format!("PRIMARY KEY ({})", names(&table.primary_key)));
    }
    for c in &table.checks {
        parts.push(format!("CONSTRAINT {} CHECK ({})", quoted(&c.name), c.sql));
    }
    let mut sql = format!(
        "CREATE TABLE {} ({});",
        quoted(&table.name),
        parts.join(", ")
    );
    for index in &table.indexes {
        let (name, on, columns) = (
            quoted(&index.name),
            quoted(&table.name),
            names(&index.columns),
        );
        sql.push_str(&match &index.unique {
            None => format!("\nCREATE INDEX {name} ON {on} ({columns});"),
            Some(u) if u.constraint => {
                format!("\nALTER TABLE {on} ADD CONSTRAINT {name} UNIQUE ({columns});")
            }
            Some(_) => format!("\nCREATE UNIQUE INDEX {name} ON {on} ({columns});"),
        });
    }
    for f in &table.foreign_keys {
        sql.push_str(&format!(
            "\nALTER TABLE {} ADD CONSTRAINT {} FOREIGN KEY ({}) REFERENCES {} ({}) ON DELETE {} ON UPDATE {};",
            quoted(&table.name),
            quoted(&f.name),
            names(&f.columns),
            quoted(&f.parent),
            f.parent_columns.iter().map(|c| quoted(c)).collect::<Vec<_>>().join(", "),
            f.on_delete.sql(),
            f.on_update.sql()
        ));
    }
    // An identity column is kept as the serial it works as (its sequence is kept apart), its
    // kind in a comment.
    for (i, c) in table.columns.iter().enumerate() {
        if let Some(identity) = c.identity {
            sql.push_str(&format!("\n{IDENTITY_LINE}{i} {}", identity.letter()));
        }
    }
    describe_rest(table, &mut sql);
    sql
}

/// How a line giving an identity column's position and kind starts.
const IDENTITY_LINE: &str = "-- identity ";

/// Marks the identity columns among `columns` a description's lines name.
fn kept_identities(description: &str, columns: &mut [SqlColumn]) {
    for line in description.lines() {
        let Some((at, letter)) = line
            .strip_prefix(IDENTITY_LINE)
            .and_then(|l| l.split_once(' '))
        else {
            continue;
        };
        let identity = match letter {
            "a" => Identity::Always,
            _ => Identity::ByDefault,
        };
        if let Some(c) = at.parse().ok().and_then(|i: usize| columns.get_mut(i)) {
            c.identity = Some(identity);
        }
    }
}

/// The lines every description ends with: the owner, the grants and the object ids.
fn describe_rest(table: &SqlTable, sql: &mut String) {
    if let Some(owner) = &table.acl.owner {
        sql.push_str(&format!(
            "\nALTER TABLE {} OWNER TO {};",
            quoted(&table.name),
            quoted(owner)
        ));
    }
    for (grantee, privileges) in &table.acl.grants {
        let grantee = match grantee {
            Grantee::Public => "PUBLIC".to_owned(),
            Grantee::Role(r) => quoted(r),
        };
        sql.push_str(&format!(
            "\nGRANT {privileges} ON {} TO {grantee};",
            quoted(&table.name)
        ));
    }
    // Last, as a comment (the statements above stay the table's SQL): the object ids of the
    // table and its indexes, in order.
    sql.push_str(&format!("\n{OIDS_LINE}{}", table.oid));
    for index in &table.indexes {
        sql.push_str(&format!(" {}", index.oid));
    }
}

/// How the line giving a table's object ids starts.
const OIDS_LINE: &str = "-- oids ";

/// The object ids a description's last line gives (a table's, then its indexes'), if it gives
/// them (older versions kept none).
fn kept_oids(description: &str) -> Option<Vec<u32>> {
    let line = description.lines().last()?.strip_prefix(OIDS_LINE)?;
    line.split(' ').map(|n| n.parse().ok()).collect()
}

/// The lines of a description that give the table's owner and grants.
fn acl_lines(description: &str) -> Vec<&str> {
    description
        .lines()
        .filter(|l| l.starts_with("ALTER TABLE ") || l.starts_with("GRANT "))
        .collect()
}

/// The SQL table a catalog row describes, over its engine table in `catalog`'s database.
fn restore(catalog: &Catalog, described: &Described) -> Result<SqlTable> {
    let damaged = |why: &str| {
        SqlError::new(
            sqlstate::INTERNAL_ERROR,
            format!(
                "the catalog's description of table \"{}\" {why}: {}",
                described.name, described.description
            ),
        )
    };
    let engine = catalog.database().table(&described.engine).map_err(|_| {
        damaged(&format!(
            "names engine table {}, which does not exist",
            described.engine
        ))
    })?;
    let mut statements = parse(&described.description)?.into_iter();
    let first = statements.next();
    // A view's columns are those it named when kept (its query may show more since).
    let view_columns = match first.as_deref() {
        Some(sqlparser::ast::Statement::CreateView(cv)) => cv.columns.len(),
        _ => 0,
    };
    let first = first
        .map(|s| prepare(catalog, &s, &[]).map(|p| p.command))
        .transpose()?;
    let mut view_of = None;
    let (name, columns, primary_key, sequence, checks) = match first {
        Some(Command::Ddl(Ddl::CreateTable {
            name,
            columns,
            primary_key,
            checks,
            ..
        })) => {
            let mut columns = columns;
            kept_identities(&described.description, &mut columns);
            (name, columns, primary_key, None, checks)
        }
        Some(Command::Ddl(Ddl::CreateView {
            name,
            columns,
            view,
            ..
        })) => {
            if view_columns > columns.len() {
                return Err(damaged("names more columns than its query returns"));
            }
            let mut view = Arc::unwrap_or_clone(view);
            view.query_columns.truncate(view_columns);
            view_of = Some(Arc::new(view));
            let columns = columns[..view_columns].to_vec();
            (name, columns, Vec::new(), None, Vec::new())
        }
        Some(Command::Ddl(Ddl::CreateSequence { sequence, .. })) => {
            sequence.attach(Arc::clone(catalog.database()), Arc::clone(&engine))?;
            (
                sequence.name.clone(),
                sequence_columns(),
                Vec::new(),
                Some(sequence),
                Vec::new(),
            )
        }
        _ => {
            return Err(damaged(
                "does not begin with CREATE TABLE, CREATE SEQUENCE or CREATE VIEW",
            ));
        }
    };
    let engine_columns = engine.schema().columns();
    // A keyless table has its row ids after its columns (older versions kept none).
    let has_row_ids = primary_key.is_empty()
        && sequence.is_none()
        && view_of.is_none()
        && engine_columns.len() == columns.len() + 1
        && engine_columns[columns.len()].name == ROW_ID_COLUMN;
    // A sequence's engine table keeps its mark, not its columns; a view's keeps nothing.
    let columns_match = sequence.is_some()
        || view_of.is_some()
        || columns.len() + usize::from(has_row_ids) == engine_columns.len();
    if name != described.name || !columns_match {
        return Err(damaged("does not match its engine table"));
    }
    let row_ids = if has_row_ids {
        Some(Arc::new(RowIds::after(last_row_id(
            catalog.database(),
            &engine,
        )?)))
    } else {
        None
    };
    let mut indexes = Vec::new();
    let mut foreign_keys = Vec::new();
    // Tables kept by versions that recorded no owner have none.
    let mut acl = Acl::default();
    for s in statements {
        let (index, names, kind) = match prepare(catalog, &s, &[])?.command {
            Command::Ddl(Ddl::CreateIndex {
                name: Some(name),
                columns: names,
                kind,
                ..
            }) => (name, names, kind),
            Command::Ddl(Ddl::SetOwner { owner, .. }) => {
                acl.owner = Some(owner);
                continue;
            }
            Command::Ddl(Ddl::AddForeignKey {
                foreign_key: def, ..
            }) => {
                let cols = def
                    .columns
                    .iter()
                    .map(|n| columns.iter().position(|c| c.name == *n))
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| damaged("has a foreign key on a column it does not have"))?;
                foreign_keys.push(ForeignKey {
                    name: def
                        .name
                        .ok_or_else(|| damaged("has an unnamed foreign key"))?,
                    columns: cols,
                    parent: def.parent,
                    parent_columns: def.parent_columns,
                    on_delete: def.on_delete,
                    on_update: def.on_update,
                });
                continue;
            }
            Command::Ddl(Ddl::Grant {
                privileges,
                grantees,
                revoke: false,
                ..
            }) => {
                for g in &grantees {
                    acl.grant(g, privileges, false);
                }
                continue;
            }
            _ => {
                return Err(damaged(
                    "holds something other than CREATE INDEX, FOREIGN KEY, OWNER or GRANT",
                ));
            }
        };
        let columns = names
            .iter()
            .map(|n| columns.iter().position(|c| c.name == *n))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| damaged("indexes a column it does not have"))?;
        let id = engine
            .index(&index)
            .ok_or_else(|| damaged(&format!("has index {index}, which its engine table lacks")))?;
        let unique = match kind {
            IndexKind::Plain => None,
            IndexKind::Unique | IndexKind::UniqueConstraint => {
                let keys = super::unique::engine_name(&engine, &index);
                let keys = catalog.database().table(&keys).map_err(|_| {
                    damaged(&format!(
                        "has unique index {index}, whose engine table {keys} is missing"
                    ))
                })?;
                Some(UniqueKeys {
                    engine: keys,
                    constraint: kind == IndexKind::UniqueConstraint,
                })
            }
        };
        indexes.push(SqlIndex {
            name: index,
            columns,
            id,
            oid: 0,
            unique,
        });
    }
    // Object ids kept with the description, or new ones for one an older version kept.
    let oids = match kept_oids(&described.description) {
        Some(oids) if oids.len() == indexes.len() + 1 => oids,
        Some(_) => return Err(damaged("gives object ids that do not match its indexes")),
        None => {
            let mut oids = vec![catalog.new_oids(SqlTable::OIDS)];
            oids.extend(indexes.iter().map(|_| catalog.new_oids(1)));
            oids
        }
    };
    for (index, &oid) in indexes.iter_mut().zip(&oids[1..]) {
        index.oid = oid;
    }
    Ok(SqlTable {
        name,
        oid: oids[0],
        columns: columns.into_iter().collect::<Vec<SqlColumn>>(),
        primary_key,
        indexes,
        engine,
        row_ids,
        statistics: Default::default(),
        acl,
        checks,
        foreign_keys,
        sequence,
        view: view_of,
    })
}

/// The largest row id in keyless table `engine` (0 if it is empty): its key's last entry.
fn last_row_id(db: &Database, engine: &Table) -> Result<u64> {
    let mut txn = db.begin(Priority::HIGH, Isolation::Snapshot)?;
    let mut last = 0;
    let row_id = engine.schema().columns().len() - 1;
    txn.scan(
        engine,
        &KeyRange::all(),
        ScanOptions::reverse().limit(1),
        |r| {
            if let overtake_engine::Value::Int(id) = r.get(row_id) {
                last = id.max(0) as u64;
            }
            ControlFlow::Break(())
        },
    )?;
    txn.commit()?;
    Ok(last)
}
