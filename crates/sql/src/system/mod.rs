//! The system catalogs tools and drivers read — `pg_catalog`'s relations and
//! `information_schema`'s views — as relations whose rows are built from the SQL catalog when a
//! statement reading them is planned. Such a plan is made again at every execution (see
//! `Prepared::pending`), so it shows the catalog as the statement's block sees it, its
//! uncommitted DDL included, as PostgreSQL's transactional catalogs do.
//!
//! Parts: `pg_catalog` and `information_schema` (each relation's columns and rows), `lookup`
//! (the tables the `reg*` casts and catalog functions answer from); the built-in types are
//! `values::builtin_types`.
//!
//! Must never write anything, or be read except through a plan made afresh for each execution.

mod information_schema;
pub mod lookup;

pub use lookup::{schema_oids, schema_texts};
mod pg_catalog;
pub(crate) use pg_catalog::classes::rows as class_rows;
pub(crate) use pg_catalog::settings::rows as settings_rows;

use std::sync::Arc;

use crate::catalog::SqlTable;
use crate::catalog::pending::Tables;
use crate::catalog::roles::{self, Role};
use crate::error::Result;
use crate::values::datum::Datum;
use crate::values::types::SqlType;

/// Object ids of the schemas (PostgreSQL's).
pub const PG_CATALOG_OID: u32 = 11;
pub const PUBLIC_OID: u32 = 2200;
pub const INFORMATION_SCHEMA_OID: u32 = 13_207;
/// The database's object id.
pub const DATABASE_OID: u32 = 5;
pub use crate::expr::DATABASE_NAME;

/// A schema: where a relation is, and how names are qualified in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Schema {
    PgCatalog,
    InformationSchema,
    Public,
}

impl Schema {
    pub fn name(self) -> &'static str {
        match self {
            Schema::PgCatalog => "pg_catalog",
            Schema::InformationSchema => "information_schema",
            Schema::Public => "public",
        }
    }

    pub fn oid(self) -> u32 {
        match self {
            Schema::PgCatalog => PG_CATALOG_OID,
            Schema::InformationSchema => INFORMATION_SCHEMA_OID,
            Schema::Public => PUBLIC_OID,
        }
    }

    /// The schema called `name`, if there is one.
    pub fn named(name: &str) -> Option<Schema> {
        [Schema::PgCatalog, Schema::InformationSchema, Schema::Public]
            .into_iter()
            .find(|s| s.name() == name)
    }
}

/// A system relation: where it is, its columns, and how its rows are made.
pub struct SystemRelation {
    pub schema: Schema,
    pub name: &'static str,
    pub oid: u32,
    /// A view (`relkind` 'v') rather than a table.
    pub view: bool,
    pub columns: &'static [(&'static str, SqlType)],
    rows: fn(&Snapshot) -> Vec<Vec<Datum>>,
}

impl std::fmt::Debug for SystemRelation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.schema.name(), self.name)
    }
}

impl SystemRelation {
    /// A catalog table of `schema` called `name`, with object id `oid`, `columns`, and `rows`
    /// making its rows.
    const fn table(
        schema: Schema,
        (name, oid): (&'static str, u32),
        columns: &'static [(&'static str, SqlType)],
        rows: fn(&Snapshot) -> Vec<Vec<Datum>>,
    ) -> SystemRelation {
        SystemRelation {
            schema,
            name,
            oid,
            view: false,
            columns,
            rows,
        }
    }

    /// The same relation as a view (`relkind` 'v').
    const fn into_view(self) -> SystemRelation {
        SystemRelation { view: true, ..self }
    }

    /// Its rows over `snapshot`.
    pub fn rows(&self, snapshot: &Snapshot) -> Vec<Vec<Datum>> {
        (self.rows)(snapshot)
    }
}

/// Every system relation.
fn all() -> impl Iterator<Item = &'static SystemRelation> {
    pg_catalog::RELATIONS
        .iter()
        .chain(information_schema::RELATIONS)
}

/// The system relation `name` in `schema` (`None`: as an unqualified name finds it, where
/// `pg_catalog` comes first on the search path).
pub fn find(schema: Option<Schema>, name: &str) -> Option<&'static SystemRelation> {
    all().find(|r| r.name == name && schema.unwrap_or(Schema::PgCatalog) == r.schema)
}

/// What the system relations show: the catalog as a statement's block sees it, and the roles.
pub struct Snapshot {
    pub tables: Vec<Arc<SqlTable>>,
    pub roles: Vec<Role>,
}

/// A foreign key as the system catalogs show it: its table, its position there, the table it
/// references and the index it references there.
pub(crate) struct ForeignKeyView<'s> {
    pub table: &'s SqlTable,
    pub position: usize,
    pub parent: &'s SqlTable,
    pub index: crate::catalog::references::ReferencedIndex,
}

impl ForeignKeyView<'_> {
    pub fn constraint(&self) -> &crate::catalog::ForeignKey {
        &self.table.foreign_keys[self.position]
    }

    /// The referenced columns' positions in the parent, in the constraint's order.
    pub fn parent_columns(&self) -> Vec<usize> {
        let c = self.constraint();
        c.parent_columns
            .iter()
            .filter_map(|n| self.parent.column(n))
            .collect()
    }

    /// The object id of the index it references.
    pub fn index_oid(&self) -> u32 {
        match self.index {
            crate::catalog::references::ReferencedIndex::PrimaryKey => {
                self.parent.primary_key_oid()
            }
            crate::catalog::references::ReferencedIndex::Unique(i) => self.parent.indexes[i].oid,
        }
    }

    /// Its definition, as `pg_get_constraintdef` gives it.
    pub fn definition(&self) -> String {
        let c = self.constraint();
        let names = |cols: &mut dyn Iterator<Item = &str>| -> String {
            cols.map(|n| lookup::relation_text(n, Schema::Public))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let own = names(
            &mut c
                .columns
                .iter()
                .map(|&i| self.table.columns[i].name.as_str()),
        );
        let theirs = names(&mut c.parent_columns.iter().map(String::as_str));
        let mut def = format!(
            "FOREIGN KEY ({own}) REFERENCES {}({theirs})",
            lookup::relation_text(&self.parent.name, Schema::Public)
        );
        for (when, action) in [("UPDATE", c.on_update), ("DELETE", c.on_delete)] {
            if action != crate::catalog::RefAction::NoAction {
                def.push_str(&format!(" ON {when} {}", action.sql()));
            }
        }
        def
    }
}

impl Snapshot {
    /// Every foreign key whose referenced table and index are found.
    pub(crate) fn foreign_keys(&self) -> Vec<ForeignKeyView<'_>> {
        let mut out = Vec::new();
        for t in &self.tables {
            for (position, c) in t.foreign_keys.iter().enumerate() {
                let Some(parent) = self.tables.iter().find(|p| p.name == c.parent) else {
                    continue;
                };
                let Ok(index) =
                    crate::catalog::references::referenced_index(parent, &c.parent_columns)
                else {
                    continue;
                };
                out.push(ForeignKeyView {
                    table: t,
                    position,
                    parent,
                    index,
                });
            }
        }
        out
    }

    /// The catalog as `tables` shows it, and the roles committed now.
    pub fn take(tables: &Tables<'_>) -> Result<Snapshot> {
        let catalog = tables.catalog;
        let db = catalog.database();
        let mut txn = db.begin(
            overtake_engine::Priority::HIGH,
            overtake_engine::Isolation::ReadCommitted,
        )?;
        let mut roles = roles::all(&mut txn, catalog.roles())?;
        txn.commit()?;
        let tables_now = tables.all();
        // Without authentication a role is whatever name a client gives: the session's own and
        // the tables' owners are roles too, as far as the catalogs show.
        let actor = tables.actor.map(|a| (a.name.clone(), a.superuser));
        let owners = tables_now
            .iter()
            .filter_map(|t| t.acl.owner.clone().map(|o| (o, false)));
        for (name, superuser) in actor.into_iter().chain(owners) {
            if !roles.iter().any(|r| r.name == name) {
                roles.push(Role {
                    name,
                    superuser,
                    login: true,
                    password: None,
                });
            }
        }
        Ok(Snapshot {
            tables: tables_now,
            roles,
        })
    }

    /// The object id of the owner of `table` (the first superuser for a table that records
    /// none, as tables of older versions do).
    fn owner_oid(&self, table: &SqlTable) -> u32 {
        match &table.acl.owner {
            Some(owner) => role_oid(owner),
            None => self.superuser_oid(),
        }
    }

    /// The name of `table`'s owner (the first superuser's for one kept with none).
    fn owner_name(&self, table: &SqlTable) -> String {
        match &table.acl.owner {
            Some(owner) => owner.clone(),
            None => self
                .roles
                .iter()
                .find(|r| r.superuser)
                .map_or_else(|| "postgres".to_owned(), |r| r.name.clone()),
        }
    }

    /// The object id of the first superuser: the owner of the system's objects.
    fn superuser_oid(&self) -> u32 {
        self.roles
            .iter()
            .find(|r| r.superuser)
            .map_or(BOOTSTRAP_ROLE_OID, |r| role_oid(&r.name))
    }

    /// Every relation `pg_class` lists, as (oid, name, schema): tables, their indexes, and the
    /// system relations.
    pub fn relation_names(&self) -> Vec<(u32, String, Schema)> {
        let mut out = Vec::new();
        for t in &self.tables {
            out.push((t.oid, t.name.clone(), Schema::Public));
            if !t.primary_key.is_empty() {
                out.push((t.primary_key_oid(), t.primary_key_name(), Schema::Public));
            }
            for i in &t.indexes {
                out.push((i.oid, i.name.clone(), Schema::Public));
            }
        }
        out.extend(all().map(|r| (r.oid, r.name.to_owned(), r.schema)));
        out
    }
}

/// PostgreSQL's `pg_database_owner` role, which owns `public`.
pub const DATABASE_OWNER_ROLE: (u32, &str) = (6171, "pg_database_owner");

/// The object id of the role that owns what a catalog without roles owns.
const BOOTSTRAP_ROLE_OID: u32 = 10;

/// A role's object id: derived from its name (roles keep no id), so the same across plans and
/// restarts, and above the range tables take in practice (ids from 2^31 up).
pub fn role_oid(name: &str) -> u32 {
    // FNV-1a.
    let mut h: u32 = 0x811c_9dc5;
    for b in name.bytes() {
        h = (h ^ u32::from(b)).wrapping_mul(0x0100_0193);
    }
    0x8000_0000 | h
}

/// A row of `columns`, each at its type's empty value until set: false, 0 or the empty
/// string, and NULL for columns of types shown as text (arrays, expressions, ACLs), which
/// PostgreSQL leaves NULL when there is nothing to say.
struct Row {
    columns: &'static [(&'static str, SqlType)],
    values: Vec<Datum>,
}

impl Row {
    /// A row of NULLs (as `information_schema` leaves what it does not say).
    fn nulls(columns: &'static [(&'static str, SqlType)]) -> Row {
        Row {
            columns,
            values: vec![Datum::Null; columns.len()],
        }
    }

    fn new(columns: &'static [(&'static str, SqlType)]) -> Row {
        let values = columns
            .iter()
            .map(|(_, ty)| match ty {
                SqlType::Bool => Datum::Bool(false),
                SqlType::Int2 | SqlType::Int4 | SqlType::Int8 | SqlType::Oid => Datum::Int(0),
                SqlType::Float8 => Datum::Float(0.0),
                SqlType::Name | SqlType::CharByte => Datum::Text(String::new()),
                _ => Datum::Null,
            })
            .collect();
        Row { columns, values }
    }

    /// Sets column `name` (which the relation must have: a misspelt one is this file's bug).
    fn set(mut self, name: &str, value: impl Into<Value>) -> Row {
        let i = self
            .columns
            .iter()
            .position(|(n, _)| *n == name)
            .unwrap_or_else(|| panic!("system relation has no column {name}"));
        self.values[i] = value.into().0;
        self
    }

    fn done(self) -> Vec<Datum> {
        self.values
    }
}

/// A value for [`Row::set`].
struct Value(Datum);

impl From<&str> for Value {
    fn from(s: &str) -> Value {
        Value(Datum::Text(s.to_owned()))
    }
}

impl From<String> for Value {
    fn from(s: String) -> Value {
        Value(Datum::Text(s))
    }
}

impl From<bool> for Value {
    fn from(b: bool) -> Value {
        Value(Datum::Bool(b))
    }
}

impl From<i64> for Value {
    fn from(n: i64) -> Value {
        Value(Datum::Int(n))
    }
}

impl From<u32> for Value {
    fn from(n: u32) -> Value {
        Value(Datum::Int(i64::from(n)))
    }
}

impl From<Datum> for Value {
    fn from(d: Datum) -> Value {
        Value(d)
    }
}

impl From<f64> for Value {
    fn from(f: f64) -> Value {
        Value(Datum::Float(f))
    }
}

impl From<Option<String>> for Value {
    fn from(s: Option<String>) -> Value {
        Value(s.map_or(Datum::Null, Datum::Text))
    }
}

/// Columns' positions (1-based), as `int2vector` and `int2[]` hold them.
fn attnums(columns: &[usize]) -> Datum {
    Datum::Array(columns.iter().map(|c| Datum::Int(*c as i64 + 1)).collect())
}

/// A view's query as `pg_get_viewdef` and the catalogs show it: its SQL as kept (PostgreSQL
/// prints its own rewriting of it), set off as PostgreSQL sets it off.
pub(crate) fn view_definition(view: &crate::catalog::View) -> String {
    format!(" {};", view.sql)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_relation_builds_rows_of_its_columns() {
        let snapshot = Snapshot {
            tables: Vec::new(),
            roles: vec![Role {
                name: "admin".into(),
                superuser: true,
                login: true,
                password: None,
            }],
        };
        for r in all() {
            for row in r.rows(&snapshot) {
                assert_eq!(row.len(), r.columns.len(), "{r:?}");
            }
        }
    }

    #[test]
    fn names_are_unique_within_a_schema_and_oids_are_unique() {
        let all: Vec<_> = all().collect();
        for (i, a) in all.iter().enumerate() {
            for b in &all[i + 1..] {
                assert!(a.oid != b.oid, "{a:?} {b:?}");
                assert!(a.name != b.name || a.schema != b.schema, "{a:?}");
            }
        }
    }
}
