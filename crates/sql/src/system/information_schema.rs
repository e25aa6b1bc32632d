//! `information_schema`'s views over the user's tables: `schemata`, `tables`, `columns`,
//! `table_constraints`, `key_column_usage`, `referential_constraints` and
//! `constraint_column_usage`, as PostgreSQL 15 shows them (its domains
//! `sql_identifier`, `character_data`, `yes_or_no` and `cardinal_number` shown as `name`,
//! `text`, `text` and `integer`).

use super::{DATABASE_NAME, Row, Schema, Snapshot, SystemRelation};
use crate::catalog::Identity;
use crate::values::builtin_types::builtin;
use crate::values::datum::Datum;
use crate::values::types::SqlType::{self, *};
use crate::values::types::{LENGTH_MAX, Typmod};

pub(super) const RELATIONS: &[SystemRelation] = &[
    view("schemata", 13_382, SCHEMATA, schemata),
    view("tables", 13_425, TABLES, tables),
    view("columns", 13_295, COLUMNS, columns),
    view(
        "table_constraints",
        13_411,
        TABLE_CONSTRAINTS,
        table_constraints,
    ),
    view(
        "key_column_usage",
        13_329,
        KEY_COLUMN_USAGE,
        key_column_usage,
    ),
    view(
        "referential_constraints",
        13_339,
        REFERENTIAL_CONSTRAINTS,
        referential_constraints,
    ),
    view("views", 13_483, VIEWS, views),
    view(
        "constraint_column_usage",
        13_300,
        CONSTRAINT_COLUMN_USAGE,
        constraint_column_usage,
    ),
];

const fn view(
    name: &'static str,
    oid: u32,
    columns: &'static [(&'static str, SqlType)],
    rows: fn(&Snapshot) -> Vec<Vec<Datum>>,
) -> SystemRelation {
    SystemRelation::table(Schema::InformationSchema, (name, oid), columns, rows).into_view()
}

fn yes(b: bool) -> &'static str {
    if b { "YES" } else { "NO" }
}

fn schemata(s: &Snapshot) -> Vec<Vec<Datum>> {
    let owner = s.roles.iter().find(|r| r.superuser).map(|r| r.name.clone());
    [Schema::PgCatalog, Schema::Public, Schema::InformationSchema]
        .into_iter()
        .map(|n| {
            Row::nulls(SCHEMATA)
                .set("catalog_name", DATABASE_NAME)
                .set("schema_name", n.name())
                .set(
                    "schema_owner",
                    match n {
                        Schema::Public => Some(super::DATABASE_OWNER_ROLE.1.to_owned()),
                        _ => owner.clone(),
                    },
                )
                .done()
        })
        .collect()
}

/// The leading columns every view here has: the table's catalog, schema and name.
fn of_table(row: Row, prefix: &str, table: &str) -> Row {
    row.set(&format!("{prefix}_catalog"), DATABASE_NAME)
        .set(&format!("{prefix}_schema"), Schema::Public.name())
        .set(&format!("{prefix}_name"), table)
}

fn tables(s: &Snapshot) -> Vec<Vec<Datum>> {
    s.tables
        .iter()
        .filter(|t| t.sequence.is_none())
        .map(|t| {
            let view = t.view.is_some();
            of_table(Row::nulls(TABLES), "table", &t.name)
                .set("table_type", if view { "VIEW" } else { "BASE TABLE" })
                .set("is_insertable_into", yes(!view))
                .set("is_typed", "NO")
                .done()
        })
        .collect()
}

fn columns(s: &Snapshot) -> Vec<Vec<Datum>> {
    let mut out = Vec::new();
    for t in s.tables.iter().filter(|t| t.sequence.is_none()) {
        for (i, c) in t.columns.iter().enumerate() {
            let udt = builtin(c.ty.oid()).map_or("", |b| b.name);
            let data_type = match c.ty {
                VarChar(_) => "character varying".to_owned(),
                Char(_) => "character".to_owned(),
                Numeric(_) => "numeric".to_owned(),
                other => builtin(other.oid()).map_or_else(|| other.name(), |b| b.format.into()),
            };
            let mut row = of_table(Row::nulls(COLUMNS), "table", &t.name)
                .set("column_name", c.name.as_str())
                .set("ordinal_position", (i + 1) as i64)
                .set(
                    "column_default",
                    (c.default.as_ref())
                        .filter(|_| c.identity.is_none())
                        .map(|d| d.sql.clone()),
                )
                .set("is_nullable", yes(c.nullable))
                .set("data_type", data_type)
                .set("udt_catalog", DATABASE_NAME)
                .set("udt_schema", Schema::PgCatalog.name())
                .set("udt_name", udt)
                .set("dtd_identifier", (i + 1).to_string())
                .set("is_self_referencing", "NO")
                .set("is_identity", yes(c.identity.is_some()))
                .set(
                    "identity_generation",
                    c.identity.map(|i| match i {
                        Identity::Always => "ALWAYS".to_owned(),
                        Identity::ByDefault => "BY DEFAULT".to_owned(),
                    }),
                )
                .set("identity_cycle", "NO")
                .set("is_generated", "NEVER")
                .set("is_updatable", yes(t.view.is_none()));
            row = match c.ty {
                VarChar(n) | Char(n) => {
                    let bounded = n < LENGTH_MAX || matches!(c.ty, Char(_));
                    let octets = if bounded {
                        i64::from(n) * 4
                    } else {
                        1_073_741_824
                    };
                    row.set("character_octet_length", octets).set(
                        "character_maximum_length",
                        Value(bounded.then_some(i64::from(n))),
                    )
                }
                Text => row.set("character_octet_length", 1_073_741_824i64),
                Int2 | Int4 | Int8 => {
                    let bits = match c.ty {
                        Int2 => 16i64,
                        Int4 => 32,
                        _ => 64,
                    };
                    row.set("numeric_precision", bits)
                        .set("numeric_precision_radix", 2i64)
                        .set("numeric_scale", 0i64)
                }
                Float8 => row
                    .set("numeric_precision", 53i64)
                    .set("numeric_precision_radix", 2i64),
                Numeric(Some(Typmod { precision, scale })) => row
                    .set("numeric_precision", i64::from(precision))
                    .set("numeric_precision_radix", 10i64)
                    .set("numeric_scale", i64::from(scale)),
                Numeric(None) => row.set("numeric_precision_radix", 10i64),
                Date => row.set("datetime_precision", 0i64),
                Timestamp | TimestampTz | Time | Interval => row.set("datetime_precision", 6i64),
                _ => row,
            };
            out.push(row.done());
        }
    }
    out
}

/// An optional integer for [`Row::set`] (NULL when absent).
struct Value(Option<i64>);

impl From<Value> for super::Value {
    fn from(v: Value) -> super::Value {
        super::Value(v.0.map_or(Datum::Null, Datum::Int))
    }
}

/// The name PostgreSQL gives a column's NOT NULL constraint in `information_schema`.
fn not_null_name(table: u32, attnum: usize) -> String {
    format!("{}_{table}_{attnum}_not_null", Schema::Public.oid())
}

fn table_constraints(s: &Snapshot) -> Vec<Vec<Datum>> {
    let mut out = Vec::new();
    for t in &s.tables {
        let constraint = |name: String, kind: &str| {
            of_table(
                of_table(Row::nulls(TABLE_CONSTRAINTS), "table", &t.name),
                "constraint",
                &name,
            )
            .set("constraint_type", kind)
            .set("is_deferrable", "NO")
            .set("initially_deferred", "NO")
            .set("enforced", "YES")
        };
        if !t.primary_key.is_empty() {
            out.push(
                constraint(t.primary_key_name(), "PRIMARY KEY")
                    .set("nulls_distinct", Option::<String>::None)
                    .done(),
            );
        }
        for i in t.indexes.iter().filter(|i| i.is_unique_constraint()) {
            out.push(
                constraint(i.name.clone(), "UNIQUE")
                    .set("nulls_distinct", "YES")
                    .done(),
            );
        }
        for c in &t.checks {
            out.push(constraint(c.name.clone(), "CHECK").done());
        }
        for f in &t.foreign_keys {
            out.push(constraint(f.name.clone(), "FOREIGN KEY").done());
        }
        for (i, c) in t.columns.iter().enumerate() {
            if !c.nullable {
                out.push(constraint(not_null_name(t.oid, i + 1), "CHECK").done());
            }
        }
    }
    out
}

fn key_column_usage(s: &Snapshot) -> Vec<Vec<Datum>> {
    let mut out = Vec::new();
    for t in &s.tables {
        let unique = t.indexes.iter().filter(|i| i.is_unique_constraint());
        let keys = std::iter::once((t.primary_key_name(), &t.primary_key))
            .chain(unique.map(|i| (i.name.clone(), &i.columns)));
        for (name, columns) in keys {
            for (position, &c) in columns.iter().enumerate() {
                out.push(
                    of_table(
                        of_table(Row::nulls(KEY_COLUMN_USAGE), "table", &t.name),
                        "constraint",
                        &name,
                    )
                    .set("column_name", t.columns[c].name.as_str())
                    .set("ordinal_position", (position + 1) as i64)
                    .done(),
                );
            }
        }
    }
    for f in s.foreign_keys() {
        let c = f.constraint();
        let unique = f.index.columns(f.parent);
        for (position, (&col, parent_col)) in c.columns.iter().zip(f.parent_columns()).enumerate() {
            let in_unique = match unique.iter().position(|&u| u == parent_col) {
                Some(p) => Datum::Int(p as i64 + 1),
                None => Datum::Null,
            };
            out.push(
                of_table(
                    of_table(Row::nulls(KEY_COLUMN_USAGE), "table", &f.table.name),
                    "constraint",
                    &c.name,
                )
                .set("column_name", f.table.columns[col].name.as_str())
                .set("ordinal_position", (position + 1) as i64)
                .set("position_in_unique_constraint", in_unique)
                .done(),
            );
        }
    }
    out
}

fn referential_constraints(s: &Snapshot) -> Vec<Vec<Datum>> {
    s.foreign_keys()
        .iter()
        .map(|f| {
            let c = f.constraint();
            let row = of_table(Row::nulls(REFERENTIAL_CONSTRAINTS), "constraint", &c.name);
            of_table(row, "unique_constraint", &f.index.name(f.parent))
                .set("match_option", "NONE")
                .set("update_rule", c.on_update.sql())
                .set("delete_rule", c.on_delete.sql())
                .done()
        })
        .collect()
}

/// The columns each constraint uses: a key's or CHECK's own, a foreign key's referenced ones.
fn constraint_column_usage(s: &Snapshot) -> Vec<Vec<Datum>> {
    let mut out = Vec::new();
    let mut push = |table: &str, column: &str, constraint: &str| {
        let row = of_table(Row::nulls(CONSTRAINT_COLUMN_USAGE), "table", table);
        out.push(
            of_table(row, "constraint", constraint)
                .set("column_name", column)
                .done(),
        );
    };
    for t in &s.tables {
        let unique = t.indexes.iter().filter(|i| i.is_unique_constraint());
        let keys = std::iter::once((t.primary_key_name(), &t.primary_key))
            .chain(unique.map(|i| (i.name.clone(), &i.columns)));
        for (name, columns) in keys {
            for &c in columns {
                push(&t.name, &t.columns[c].name, &name);
            }
        }
        for c in &t.checks {
            let mut read = Vec::new();
            c.expr.visit(&mut |x| {
                if let crate::expr::Expr::Column(col) = x
                    && !read.contains(col)
                {
                    read.push(*col);
                }
            });
            for col in read {
                push(&t.name, &t.columns[col].name, &c.name);
            }
        }
    }
    for f in s.foreign_keys() {
        for col in f.parent_columns() {
            push(
                &f.parent.name,
                &f.parent.columns[col].name,
                &f.constraint().name,
            );
        }
    }
    out
}
const REFERENTIAL_CONSTRAINTS: &[(&str, SqlType)] = &[
    ("constraint_catalog", Name),
    ("constraint_schema", Name),
    ("constraint_name", Name),
    ("unique_constraint_catalog", Name),
    ("unique_constraint_schema", Name),
    ("unique_constraint_name", Name),
    ("match_option", Text),
    ("update_rule", Text),
    ("delete_rule", Text),
];

const CONSTRAINT_COLUMN_USAGE: &[(&str, SqlType)] = &[
    ("table_catalog", Name),
    ("table_schema", Name),
    ("table_name", Name),
    ("column_name", Name),
    ("constraint_catalog", Name),
    ("constraint_schema", Name),
    ("constraint_name", Name),
];

const SCHEMATA: &[(&str, SqlType)] = &[
    ("catalog_name", Name),
    ("schema_name", Name),
    ("schema_owner", Name),
    ("default_character_set_catalog", Name),
    ("default_character_set_schema", Name),
    ("default_character_set_name", Name),
    ("sql_path", Text),
];

const VIEWS: &[(&str, SqlType)] = &[
    ("table_catalog", Name),
    ("table_schema", Name),
    ("table_name", Name),
    ("view_definition", Text),
    ("check_option", Text),
    ("is_updatable", Text),
    ("is_insertable_into", Text),
    ("is_trigger_updatable", Text),
    ("is_trigger_deletable", Text),
    ("is_trigger_insertable_into", Text),
];

/// `views`: the user's views, none of them written through.
fn views(s: &Snapshot) -> Vec<Vec<Datum>> {
    s.tables
        .iter()
        .filter_map(|t| Some((t, t.view.as_ref()?)))
        .map(|(t, v)| {
            of_table(Row::nulls(VIEWS), "table", &t.name)
                .set("view_definition", super::view_definition(v))
                .set("check_option", "NONE")
                .set("is_updatable", "NO")
                .set("is_insertable_into", "NO")
                .set("is_trigger_updatable", "NO")
                .set("is_trigger_deletable", "NO")
                .set("is_trigger_insertable_into", "NO")
                .done()
        })
        .collect()
}

const TABLES: &[(&str, SqlType)] = &[
    ("table_catalog", Name),
    ("table_schema", Name),
    ("table_name", Name),
    ("table_type", Text),
    ("self_referencing_column_name", Name),
    ("reference_generation", Text),
    ("user_defined_type_catalog", Name),
    ("user_defined_type_schema", Name),
    ("user_defined_type_name", Name),
    ("is_insertable_into", Text),
    ("is_typed", Text),
    ("commit_action", Text),
];

const COLUMNS: &[(&str, SqlType)] = &[
    ("table_catalog", Name),
    ("table_schema", Name),
    ("table_name", Name),
    ("column_name", Name),
    ("ordinal_position", Int4),
    ("column_default", Text),
    ("is_nullable", Text),
    ("data_type", Text),
    ("character_maximum_length", Int4),
    ("character_octet_length", Int4),
    ("numeric_precision", Int4),
    ("numeric_precision_radix", Int4),
    ("numeric_scale", Int4),
    ("datetime_precision", Int4),
    ("interval_type", Text),
    ("interval_precision", Int4),
    ("character_set_catalog", Name),
    ("character_set_schema", Name),
    ("character_set_name", Name),
    ("collation_catalog", Name),
    ("collation_schema", Name),
    ("collation_name", Name),
    ("domain_catalog", Name),
    ("domain_schema", Name),
    ("domain_name", Name),
    ("udt_catalog", Name),
    ("udt_schema", Name),
    ("udt_name", Name),
    ("scope_catalog", Name),
    ("scope_schema", Name),
    ("scope_name", Name),
    ("maximum_cardinality", Int4),
    ("dtd_identifier", Name),
    ("is_self_referencing", Text),
    ("is_identity", Text),
    ("identity_generation", Text),
    ("identity_start", Text),
    ("identity_increment", Text),
    ("identity_maximum", Text),
    ("identity_minimum", Text),
    ("identity_cycle", Text),
    ("is_generated", Text),
    ("generation_expression", Text),
    ("is_updatable", Text),
];

const TABLE_CONSTRAINTS: &[(&str, SqlType)] = &[
    ("constraint_catalog", Name),
    ("constraint_schema", Name),
    ("constraint_name", Name),
    ("table_catalog", Name),
    ("table_schema", Name),
    ("table_name", Name),
    ("constraint_type", Text),
    ("is_deferrable", Text),
    ("initially_deferred", Text),
    ("enforced", Text),
    ("nulls_distinct", Text),
];

const KEY_COLUMN_USAGE: &[(&str, SqlType)] = &[
    ("constraint_catalog", Name),
    ("constraint_schema", Name),
    ("constraint_name", Name),
    ("table_catalog", Name),
    ("table_schema", Name),
    ("table_name", Name),
    ("column_name", Name),
    ("ordinal_position", Int4),
    ("position_in_unique_constraint", Int4),
];
