//! `pg_catalog`'s relations: the rows PostgreSQL's catalogs would hold for the user's tables,
//! their columns, keys and indexes, the roles, the one database, and the built-in types; the
//! catalogs of things Overtake does not have (functions, inheritance, comments, enums, range
//! types) are there and empty, so the queries tools join them into still run.

pub(crate) mod classes;
mod columns;
pub(crate) mod settings;

use columns::*;

use super::{
    DATABASE_NAME, DATABASE_OID, Row, Schema, Snapshot, SystemRelation, all, attnums, role_oid,
};
use crate::catalog::{RelKind, SqlTable};
use crate::values::builtin_types::{BUILTIN_TYPES, builtin, typmod};
use crate::values::datum::Datum;
use crate::values::types::SqlType;

/// Object ids of the access methods.
const HEAP_AM: u32 = 2;
const BTREE_AM: u32 = 403;
/// The default collation's object id.
const DEFAULT_COLLATION: u32 = 100;

pub(super) const RELATIONS: &[SystemRelation] = &[
    relation("pg_namespace", 2615, PG_NAMESPACE, namespaces),
    relation("pg_class", 1259, PG_CLASS, classes),
    relation("pg_attribute", 1249, PG_ATTRIBUTE, attributes),
    relation("pg_type", 1247, PG_TYPE, types),
    relation("pg_index", 2610, PG_INDEX, indexes),
    relation("pg_constraint", 2606, PG_CONSTRAINT, constraints),
    relation("pg_database", 1262, PG_DATABASE, databases),
    relation("pg_roles", 12_000, PG_ROLES, roles).into_view(),
    relation("pg_user", 12_014, PG_USER, users).into_view(),
    relation("pg_am", 2601, PG_AM, access_methods),
    relation("pg_attrdef", 2604, PG_ATTRDEF, defaults),
    relation("pg_description", 2609, PG_DESCRIPTION, none),
    relation("pg_proc", 1255, PG_PROC, none),
    relation("pg_inherits", 2611, PG_INHERITS, none),
    relation("pg_tablespace", 1213, PG_TABLESPACE, tablespaces),
    relation("pg_collation", 3456, PG_COLLATION, collations),
    relation("pg_enum", 3501, PG_ENUM, none),
    relation("pg_range", 3541, PG_RANGE, none),
    relation("pg_sequence", 2224, PG_SEQUENCE, sequences),
    relation("pg_views", 12_028, PG_VIEWS, views).into_view(),
    // Its rows are the session's settings as the statement runs: see `settings`.
    relation("pg_settings", 12_104, PG_SETTINGS, none).into_view(),
    // Overtake's own: its rows are the scheduler's as the statement runs (see `classes`).
    relation("overtake_stat_classes", 12_900, classes::COLUMNS, none).into_view(),
    // What Overtake has none of (policies, extended statistics, publications, role
    // memberships, triggers, rules, foreign and partitioned tables): empty, for the queries
    // psql's \d and \du join them into.
    relation("pg_depend", 2608, PG_DEPEND, dependencies),
    relation("pg_policy", 3256, PG_POLICY, none),
    relation("pg_statistic_ext", 3381, PG_STATISTIC_EXT, none),
    relation("pg_publication", 6104, PG_PUBLICATION, none),
    relation(
        "pg_publication_namespace",
        6237,
        PG_PUBLICATION_NAMESPACE,
        none,
    ),
    relation("pg_publication_rel", 6106, PG_PUBLICATION_REL, none),
    relation("pg_auth_members", 1261, PG_AUTH_MEMBERS, none),
    relation("pg_trigger", 2620, PG_TRIGGER, none),
    relation("pg_rewrite", 2618, PG_REWRITE, none),
    relation("pg_foreign_table", 3118, PG_FOREIGN_TABLE, none),
    relation("pg_partitioned_table", 3350, PG_PARTITIONED_TABLE, none),
];

const fn relation(
    name: &'static str,
    oid: u32,
    columns: &'static [(&'static str, SqlType)],
    rows: fn(&Snapshot) -> Vec<Vec<Datum>>,
) -> SystemRelation {
    SystemRelation::table(Schema::PgCatalog, (name, oid), columns, rows)
}

fn none(_: &Snapshot) -> Vec<Vec<Datum>> {
    Vec::new()
}

fn namespaces(s: &Snapshot) -> Vec<Vec<Datum>> {
    [Schema::PgCatalog, Schema::Public, Schema::InformationSchema]
        .into_iter()
        .map(|n| {
            // PostgreSQL 15's `public` belongs to the database's owner, whoever that is.
            let owner = match n {
                Schema::Public => super::DATABASE_OWNER_ROLE.0,
                _ => s.superuser_oid(),
            };
            Row::new(PG_NAMESPACE)
                .set("oid", n.oid())
                .set("nspname", n.name())
                .set("nspowner", owner)
                .done()
        })
        .collect()
}

/// A table's index as the catalogs show it.
struct IndexRow {
    oid: u32,
    name: String,
    columns: Vec<usize>,
    primary: bool,
    unique: bool,
}

/// A table's indexes, its primary key's first.
fn table_indexes(t: &SqlTable) -> Vec<IndexRow> {
    let mut out = Vec::new();
    if !t.primary_key.is_empty() {
        out.push(IndexRow {
            oid: t.primary_key_oid(),
            name: t.primary_key_name(),
            columns: t.primary_key.clone(),
            primary: true,
            unique: true,
        });
    }
    for i in &t.indexes {
        out.push(IndexRow {
            oid: i.oid,
            name: i.name.clone(),
            columns: i.columns.clone(),
            primary: false,
            unique: i.unique.is_some(),
        });
    }
    out
}

fn classes(s: &Snapshot) -> Vec<Vec<Datum>> {
    let mut out = Vec::new();
    let class = |oid: u32, name: &str, kind: &str| {
        Row::new(PG_CLASS)
            .set("oid", oid)
            .set("relname", name)
            .set("relfilenode", oid)
            .set("relpersistence", "p")
            .set("relkind", kind)
            .set("reltuples", -1.0)
            .set("relispopulated", true)
            .set("relreplident", "d")
    };
    for t in &s.tables {
        let owner = s.owner_oid(t);
        let indexes = table_indexes(t);
        let kind = t.kind();
        let table = kind == RelKind::Table;
        // Rows as ANALYZE last counted them (a table never analyzed: -1, its indexes 0; a
        // sequence: its one row), as PostgreSQL shows them.
        let analyzed = t.statistics.sample().map(|s| s.rows as f64);
        let tuples = match kind {
            RelKind::Sequence => 1.0,
            _ => analyzed.unwrap_or(-1.0),
        };
        out.push(
            class(t.oid, &t.name, kind.letter())
                .set("reltuples", tuples)
                .set("relnamespace", Schema::Public.oid())
                .set("reltype", t.row_type_oid())
                .set("relowner", owner)
                .set("relam", if table { HEAP_AM } else { 0 })
                .set(
                    "relreplident",
                    if kind == RelKind::View { "n" } else { "d" },
                )
                .set("relhasindex", !indexes.is_empty())
                .set("relchecks", t.checks.len() as i64)
                // PostgreSQL keeps foreign keys with triggers on both tables (psql's \d shows
                // them only where this is set).
                .set("relhastriggers", has_foreign_keys(s, t))
                .set("relnatts", t.columns.len() as i64)
                .done(),
        );
        for IndexRow {
            oid, name, columns, ..
        } in indexes
        {
            out.push(
                class(oid, &name, "i")
                    .set("reltuples", analyzed.unwrap_or(0.0))
                    .set("relnamespace", Schema::Public.oid())
                    .set("relowner", owner)
                    .set("relam", BTREE_AM)
                    .set("relnatts", columns.len() as i64)
                    .set("relreplident", "n")
                    .done(),
            );
        }
    }
    let owner = s.superuser_oid();
    for r in all() {
        out.push(
            class(r.oid, r.name, if r.view { "v" } else { "r" })
                .set("relnamespace", r.schema.oid())
                .set("relowner", owner)
                .set("relam", if r.view { 0 } else { HEAP_AM })
                .set("relnatts", r.columns.len() as i64)
                .set("relreplident", if r.view { "n" } else { "d" })
                .done(),
        );
    }
    out
}

/// A column's `pg_attribute` row: of relation `rel`, at position `num` (1-based).
fn attribute(rel: u32, name: &str, num: usize, ty: SqlType) -> Row {
    let t = builtin(ty.oid());
    Row::new(PG_ATTRIBUTE)
        .set("attrelid", rel)
        .set("attname", name)
        .set("atttypid", ty.oid())
        .set("attstattarget", -1i64)
        .set("attlen", t.map_or(-1, |t| i64::from(t.len)))
        .set("attnum", num as i64)
        .set("attcacheoff", -1i64)
        .set("atttypmod", i64::from(typmod(ty)))
        .set("attbyval", t.is_some_and(|t| t.by_value))
        .set(
            "attalign",
            t.map_or("i".to_owned(), |t| char::from(t.align).to_string()),
        )
        .set(
            "attstorage",
            t.map_or("x".to_owned(), |t| char::from(t.storage).to_string()),
        )
        .set("attislocal", true)
        .set(
            "attcollation",
            if ty.is_string() { DEFAULT_COLLATION } else { 0 },
        )
}

fn attributes(s: &Snapshot) -> Vec<Vec<Datum>> {
    let mut out = Vec::new();
    for t in &s.tables {
        for (i, c) in t.columns.iter().enumerate() {
            out.push(
                attribute(t.oid, &c.name, i + 1, c.ty)
                    .set("attnotnull", !c.nullable)
                    // An identity column's value comes from its sequence, not a default.
                    .set("atthasdef", c.default.is_some() && c.identity.is_none())
                    .set("attidentity", c.identity.map_or("", |i| i.letter()))
                    .done(),
            );
        }
        for IndexRow { oid, columns, .. } in table_indexes(t) {
            for (i, &c) in columns.iter().enumerate() {
                let c = &t.columns[c];
                out.push(attribute(oid, &c.name, i + 1, c.ty).done());
            }
        }
    }
    for r in all() {
        for (i, (name, ty)) in r.columns.iter().enumerate() {
            out.push(attribute(r.oid, name, i + 1, *ty).done());
        }
    }
    out
}

fn types(s: &Snapshot) -> Vec<Vec<Datum>> {
    let owner = s.superuser_oid();
    let mut out: Vec<Vec<Datum>> = BUILTIN_TYPES
        .iter()
        .map(|t| {
            Row::new(PG_TYPE)
                .set("oid", t.oid)
                .set("typname", t.name)
                .set("typnamespace", Schema::PgCatalog.oid())
                .set("typowner", owner)
                .set("typlen", i64::from(t.len))
                .set("typbyval", t.by_value)
                .set("typtype", char::from(t.kind).to_string())
                .set("typcategory", char::from(t.category).to_string())
                .set("typisdefined", true)
                .set("typdelim", ",")
                .set("typelem", t.element)
                .set("typarray", t.array)
                .set("typalign", char::from(t.align).to_string())
                .set("typstorage", char::from(t.storage).to_string())
                .set("typtypmod", -1i64)
                .set(
                    "typcollation",
                    if t.category == b'S' {
                        DEFAULT_COLLATION
                    } else {
                        0
                    },
                )
                .done()
        })
        .collect();
    // Each table's row type.
    for t in &s.tables {
        out.push(
            Row::new(PG_TYPE)
                .set("oid", t.row_type_oid())
                .set("typname", t.name.as_str())
                .set("typnamespace", Schema::Public.oid())
                .set("typowner", s.owner_oid(t))
                .set("typlen", -1i64)
                .set("typtype", "c")
                .set("typcategory", "C")
                .set("typisdefined", true)
                .set("typdelim", ",")
                .set("typrelid", t.oid)
                .set("typalign", "d")
                .set("typstorage", "x")
                .set("typtypmod", -1i64)
                .done(),
        );
    }
    out
}

fn indexes(s: &Snapshot) -> Vec<Vec<Datum>> {
    let mut out = Vec::new();
    for t in &s.tables {
        for IndexRow {
            oid,
            columns,
            primary,
            unique,
            ..
        } in table_indexes(t)
        {
            let zeros = || Datum::Array(vec![Datum::Int(0); columns.len()]);
            out.push(
                Row::new(PG_INDEX)
                    .set("indexrelid", oid)
                    .set("indrelid", t.oid)
                    .set("indnatts", columns.len() as i64)
                    .set("indnkeyatts", columns.len() as i64)
                    .set("indisunique", unique)
                    .set("indisprimary", primary)
                    .set("indimmediate", true)
                    .set("indisvalid", true)
                    .set("indisready", true)
                    .set("indislive", true)
                    .set("indkey", attnums(&columns))
                    .set("indcollation", zeros())
                    .set("indclass", zeros())
                    .set("indoption", zeros())
                    .done(),
            );
        }
    }
    out
}

/// Whether `t` has a foreign key or is referenced by one.
fn has_foreign_keys(s: &Snapshot, t: &SqlTable) -> bool {
    !t.foreign_keys.is_empty()
        || s.tables
            .iter()
            .any(|o| o.foreign_keys.iter().any(|f| f.parent == t.name))
}

fn constraints(s: &Snapshot) -> Vec<Vec<Datum>> {
    let constraint = |t: &SqlTable, oid: u32, name: String, kind: &str| {
        Row::new(PG_CONSTRAINT)
            .set("oid", oid)
            .set("conname", name)
            .set("connamespace", Schema::Public.oid())
            .set("contype", kind)
            .set("convalidated", true)
            .set("conrelid", t.oid)
            .set("confupdtype", " ")
            .set("confdeltype", " ")
            .set("confmatchtype", " ")
            .set("conislocal", true)
    };
    let mut out = Vec::new();
    for t in &s.tables {
        if !t.primary_key.is_empty() {
            out.push(
                constraint(t, t.primary_key_constraint_oid(), t.primary_key_name(), "p")
                    .set("conindid", t.primary_key_oid())
                    .set("connoinherit", true)
                    .set("conkey", attnums(&t.primary_key))
                    .done(),
            );
        }
        for i in t.indexes.iter().filter(|i| i.is_unique_constraint()) {
            out.push(
                constraint(t, i.constraint_oid(), i.name.clone(), "u")
                    .set("conindid", i.oid)
                    .set("connoinherit", true)
                    .set("conkey", attnums(&i.columns))
                    .done(),
            );
        }
        for (i, c) in t.checks.iter().enumerate() {
            let mut read = Vec::new();
            c.expr.visit(&mut |x| {
                if let crate::expr::Expr::Column(col) = x
                    && !read.contains(col)
                {
                    read.push(*col);
                }
            });
            read.sort_unstable();
            out.push(
                constraint(t, t.check_oid(i), c.name.clone(), "c")
                    .set("conkey", attnums(&read))
                    .set("conbin", c.sql.as_str())
                    .done(),
            );
        }
    }
    for f in s.foreign_keys() {
        let c = f.constraint();
        out.push(
            constraint(
                f.table,
                f.table.foreign_key_oid(f.position),
                c.name.clone(),
                "f",
            )
            .set("confrelid", f.parent.oid)
            .set("conindid", f.index_oid())
            .set("connoinherit", true)
            .set("conkey", attnums(&c.columns))
            .set("confkey", attnums(&f.parent_columns()))
            .set("confupdtype", c.on_update.letter())
            .set("confdeltype", c.on_delete.letter())
            .set("confmatchtype", "s")
            .done(),
        );
    }
    out
}

fn databases(s: &Snapshot) -> Vec<Vec<Datum>> {
    vec![
        Row::new(PG_DATABASE)
            .set("oid", DATABASE_OID)
            .set("datname", DATABASE_NAME)
            .set("datdba", s.superuser_oid())
            .set("encoding", 6i64)
            .set("datlocprovider", "c")
            .set("datallowconn", true)
            .set("datconnlimit", -1i64)
            .set("dattablespace", 1663u32)
            .set("datcollate", "C")
            .set("datctype", "C")
            .done(),
    ]
}

/// What `pg_roles` and `pg_user` show for a password (never the verifier).
fn shown_password(has: bool) -> Option<String> {
    has.then(|| "********".to_owned())
}

fn roles(s: &Snapshot) -> Vec<Vec<Datum>> {
    let (oid, name) = super::DATABASE_OWNER_ROLE;
    let database_owner = Row::new(PG_ROLES)
        .set("rolname", name)
        .set("rolinherit", true)
        .set("rolconnlimit", -1i64)
        .set("oid", oid)
        .done();
    std::iter::once(database_owner)
        .chain(s.roles.iter().map(|r| {
            Row::new(PG_ROLES)
                .set("rolname", r.name.as_str())
                .set("rolsuper", r.superuser)
                .set("rolinherit", true)
                .set("rolcreaterole", r.superuser)
                .set("rolcreatedb", r.superuser)
                .set("rolcanlogin", r.login)
                .set("rolconnlimit", -1i64)
                .set("rolpassword", shown_password(r.password.is_some()))
                .set("rolbypassrls", r.superuser)
                .set("oid", role_oid(&r.name))
                .done()
        }))
        .collect()
}

fn users(s: &Snapshot) -> Vec<Vec<Datum>> {
    s.roles
        .iter()
        .filter(|r| r.login)
        .map(|r| {
            Row::new(PG_USER)
                .set("usename", r.name.as_str())
                .set("usesysid", role_oid(&r.name))
                .set("usecreatedb", r.superuser)
                .set("usesuper", r.superuser)
                .set("usebypassrls", r.superuser)
                .set("passwd", shown_password(r.password.is_some()))
                .done()
        })
        .collect()
}

fn access_methods(_: &Snapshot) -> Vec<Vec<Datum>> {
    [(HEAP_AM, "heap", "t"), (BTREE_AM, "btree", "i")]
        .into_iter()
        .map(|(oid, name, kind)| {
            Row::new(PG_AM)
                .set("oid", oid)
                .set("amname", name)
                .set("amhandler", format!("{name}handler"))
                .set("amtype", kind)
                .done()
        })
        .collect()
}

/// A column default's object id: derived from its table's and its position (defaults keep
/// none), in a range of its own.
fn default_oid(table: u32, attnum: usize) -> u32 {
    0x4000_0000 | (table.wrapping_mul(1601).wrapping_add(attnum as u32) & 0x3fff_ffff)
}

fn defaults(s: &Snapshot) -> Vec<Vec<Datum>> {
    let mut out = Vec::new();
    for t in &s.tables {
        for (i, c) in t.columns.iter().enumerate() {
            if let Some(d) = c.default.as_ref().filter(|_| c.identity.is_none()) {
                out.push(
                    Row::new(PG_ATTRDEF)
                        .set("oid", default_oid(t.oid, i + 1))
                        .set("adrelid", t.oid)
                        .set("adnum", (i + 1) as i64)
                        // The expression's SQL stands for its tree: pg_get_expr gives it back.
                        .set("adbin", d.sql.as_str())
                        .done(),
                );
            }
        }
    }
    out
}

fn tablespaces(s: &Snapshot) -> Vec<Vec<Datum>> {
    [(1663u32, "pg_default"), (1664, "pg_global")]
        .into_iter()
        .map(|(oid, name)| {
            Row::new(PG_TABLESPACE)
                .set("oid", oid)
                .set("spcname", name)
                .set("spcowner", s.superuser_oid())
                .done()
        })
        .collect()
}

fn collations(s: &Snapshot) -> Vec<Vec<Datum>> {
    vec![
        Row::new(PG_COLLATION)
            .set("oid", DEFAULT_COLLATION)
            .set("collname", "default")
            .set("collnamespace", Schema::PgCatalog.oid())
            .set("collowner", s.superuser_oid())
            .set("collprovider", "d")
            .set("collisdeterministic", true)
            .set("collencoding", -1i64)
            .done(),
    ]
}

fn sequences(s: &Snapshot) -> Vec<Vec<Datum>> {
    s.tables
        .iter()
        .filter_map(|t| Some((t, t.sequence.as_ref()?)))
        .map(|(t, q)| {
            let o = &q.options;
            Row::new(PG_SEQUENCE)
                .set("seqrelid", t.oid)
                .set("seqtypid", o.ty.oid())
                .set("seqstart", o.start)
                .set("seqincrement", o.increment)
                .set("seqmax", o.max)
                .set("seqmin", o.min)
                .set("seqcache", 1i64)
                .set("seqcycle", o.cycle)
                .done()
        })
        .collect()
}

/// `pg_class`'s own object id: what `pg_depend` rows between relations name as their class.
const PG_CLASS_OID: u32 = 1259;

/// The dependencies tools read: a serial or identity column's sequence on the column (`a`,
/// automatic: it goes with the table; `i`, internal, for an identity column's).
fn dependencies(s: &Snapshot) -> Vec<Vec<Datum>> {
    let mut out = Vec::new();
    for seq in &s.tables {
        let Some((table, column)) = seq
            .sequence
            .as_ref()
            .and_then(|q| q.options.owned_by.clone())
        else {
            continue;
        };
        let Some(owner) = s.tables.iter().find(|t| t.name == table) else {
            continue;
        };
        let Some(attnum) = owner.column(&column) else {
            continue;
        };
        out.push(
            Row::new(PG_DEPEND)
                .set("classid", PG_CLASS_OID)
                .set("objid", seq.oid)
                .set("refclassid", PG_CLASS_OID)
                .set("refobjid", owner.oid)
                .set("refobjsubid", (attnum + 1) as i64)
                // An identity column's sequence is internal to it; a serial's goes with it.
                .set(
                    "deptype",
                    if owner.columns[attnum].identity.is_some() {
                        "i"
                    } else {
                        "a"
                    },
                )
                .done(),
        );
    }
    out
}

/// `pg_views`: the user's views, each with its owner and query.
fn views(s: &Snapshot) -> Vec<Vec<Datum>> {
    s.tables
        .iter()
        .filter_map(|t| Some((t, t.view.as_ref()?)))
        .map(|(t, v)| {
            Row::new(PG_VIEWS)
                .set("schemaname", Schema::Public.name())
                .set("viewname", t.name.as_str())
                .set("viewowner", s.owner_name(t))
                .set("definition", super::view_definition(v))
                .done()
        })
        .collect()
}
