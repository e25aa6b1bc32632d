//! The tables the `reg*` casts and the catalog's functions answer from (see `expr::lookup`),
//! built from a [`Snapshot`].

use std::collections::HashMap;

use super::{Schema, Snapshot, role_oid};
use crate::expr::lookup::{Key, Lookup, Missing};
use crate::values::builtin_types::{BUILTIN_TYPES, format_type};
use crate::values::datum::Datum;

/// A relation's name as `regclass` writes it: qualified unless its schema is on the path,
/// quoted where SQL would need it.
pub(crate) fn relation_text(name: &str, schema: Schema) -> String {
    let quoted = if name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit())
    {
        name.to_owned()
    } else {
        format!("\"{}\"", name.replace('"', "\"\""))
    };
    match schema {
        Schema::InformationSchema => format!("information_schema.{quoted}"),
        _ => quoted,
    }
}

/// Schema object id to its name: a `regnamespace` as text.
pub fn schema_texts() -> Lookup {
    Lookup {
        key: Key::Oid,
        entries: SCHEMAS
            .iter()
            .map(|s| (s.oid().to_string(), Datum::Text(s.name().to_owned())))
            .collect(),
        missing: Missing::Echo,
    }
}

/// Schema name to its object id: `::regnamespace` (42704 for one there is not).
pub fn schema_oids() -> Lookup {
    Lookup {
        key: Key::TypeName,
        entries: SCHEMAS
            .iter()
            .map(|s| (s.name().to_owned(), Datum::Int(i64::from(s.oid()))))
            .collect(),
        missing: Missing::NoSchema,
    }
}

const SCHEMAS: [Schema; 3] = [Schema::PgCatalog, Schema::Public, Schema::InformationSchema];

impl Snapshot {
    /// Relation name to object id: `::regclass` (`missing_ok`: `to_regclass`).
    pub fn relation_oids(&self, missing_ok: bool) -> Lookup {
        let entries = self
            .relation_names()
            .into_iter()
            .map(|(oid, name, schema)| {
                let key = match schema {
                    Schema::InformationSchema => format!("information_schema.{name}"),
                    _ => name,
                };
                (key, Datum::Int(i64::from(oid)))
            })
            .collect();
        Lookup {
            key: Key::RelationName,
            entries,
            missing: if missing_ok {
                Missing::Null
            } else {
                Missing::NoRelation
            },
        }
    }

    /// Relation object id to its name: a `regclass` as text.
    pub fn relation_texts(&self) -> Lookup {
        let mut entries: HashMap<String, Datum> = self
            .relation_names()
            .into_iter()
            .map(|(oid, name, schema)| (oid.to_string(), Datum::Text(relation_text(&name, schema))))
            .collect();
        // No relation (a catalog's unset reference) shows as PostgreSQL shows it.
        entries.insert("0".to_owned(), Datum::Text("-".to_owned()));
        Lookup {
            key: Key::Oid,
            entries,
            missing: Missing::Echo,
        }
    }

    /// Type name to object id: `::regtype` (`missing_ok`: `to_regtype`).
    pub fn type_oids(&self, missing_ok: bool) -> Lookup {
        let mut entries: HashMap<String, Datum> = HashMap::new();
        for t in BUILTIN_TYPES {
            let oid = Datum::Int(i64::from(t.oid));
            entries.insert(t.format.to_owned(), oid.clone());
            entries.insert(t.name.to_owned(), oid);
        }
        for (alias, name) in [
            ("int", "int4"),
            ("decimal", "numeric"),
            ("float", "float8"),
            ("char", "bpchar"),
            ("character", "bpchar"),
        ] {
            let oid = entries[name].clone();
            entries.insert(alias.to_owned(), oid);
        }
        for t in &self.tables {
            entries.insert(t.name.clone(), Datum::Int(i64::from(t.row_type_oid())));
        }
        Lookup {
            key: Key::TypeName,
            entries,
            missing: if missing_ok {
                Missing::Null
            } else {
                Missing::NoType
            },
        }
    }

    /// Type object id to its name: a `regtype` as text.
    pub fn type_texts(&self) -> Lookup {
        let mut entries: HashMap<String, Datum> = BUILTIN_TYPES
            .iter()
            .map(|t| (t.oid.to_string(), Datum::Text(format_type(t.oid, None))))
            .collect();
        for t in &self.tables {
            entries.insert(
                t.row_type_oid().to_string(),
                Datum::Text(relation_text(&t.name, Schema::Public)),
            );
        }
        Lookup {
            key: Key::Oid,
            entries,
            missing: Missing::Echo,
        }
    }

    /// Role object id to its name: `pg_get_userbyid` (an id no role has: `unknown (OID=n)`,
    /// which the function's caller spells out).
    pub fn role_names(&self) -> Lookup {
        Lookup {
            key: Key::Oid,
            entries: self
                .roles
                .iter()
                .map(|r| (role_oid(&r.name), r.name.as_str()))
                .chain(std::iter::once(super::DATABASE_OWNER_ROLE))
                .map(|(oid, name)| (oid.to_string(), Datum::Text(name.to_owned())))
                .collect(),
            missing: Missing::Echo,
        }
    }

    /// `table.column` (the table as `regclass` writes it) to the sequence its default draws
    /// from, schema-qualified: `pg_get_serial_sequence`.
    pub fn serial_sequences(&self) -> Lookup {
        let mut entries = HashMap::new();
        for t in &self.tables {
            for c in &t.columns {
                let mut sequence = None;
                if let Some(d) = &c.default {
                    d.expr.visit(&mut |e| {
                        if let crate::expr::Expr::Sequence(s, args) = e
                            && args.is_empty()
                        {
                            sequence = Some(s.name.clone());
                        }
                    });
                }
                if let Some(s) = sequence {
                    let key = format!("{}.{}", relation_text(&t.name, Schema::Public), c.name);
                    let value = format!("public.{}", relation_text(&s, Schema::Public));
                    entries.insert(key, Datum::Text(value));
                }
            }
        }
        Lookup {
            key: Key::Text,
            entries,
            missing: Missing::Null,
        }
    }

    /// View object id, or its name, to its query (`pg_get_viewdef`).
    pub fn view_definitions(&self) -> Lookup {
        let mut entries = HashMap::new();
        for t in &self.tables {
            if let Some(v) = &t.view {
                let definition = Datum::Text(super::view_definition(v));
                entries.insert(t.oid.to_string(), definition.clone());
                entries.insert(t.name.clone(), definition);
            }
        }
        Lookup {
            key: Key::Text,
            entries,
            missing: Missing::Null,
        }
    }

    /// Index object id to its `CREATE INDEX` (`pg_get_indexdef`; `pretty`: the table not
    /// schema-qualified, as PostgreSQL prints it where the search path finds it).
    pub fn index_definitions(&self, pretty: bool) -> Lookup {
        let schema = if pretty { "" } else { "public." };
        let mut entries = HashMap::new();
        for t in &self.tables {
            let names = |cols: &[usize]| {
                cols.iter()
                    .map(|&c| relation_text(&t.columns[c].name, Schema::Public))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let table = relation_text(&t.name, Schema::Public);
            if !t.primary_key.is_empty() {
                let def = format!(
                    "CREATE UNIQUE INDEX {} ON {schema}{table} USING btree ({})",
                    relation_text(&t.primary_key_name(), Schema::Public),
                    names(&t.primary_key)
                );
                entries.insert(t.primary_key_oid().to_string(), Datum::Text(def));
            }
            for i in &t.indexes {
                let unique = if i.unique.is_some() { "UNIQUE " } else { "" };
                let def = format!(
                    "CREATE {unique}INDEX {} ON {schema}{table} USING btree ({})",
                    relation_text(&i.name, Schema::Public),
                    names(&i.columns)
                );
                entries.insert(i.oid.to_string(), Datum::Text(def));
            }
        }
        Lookup {
            key: Key::Oid,
            entries,
            missing: Missing::Null,
        }
    }

    /// `index.n` (object id and 1-based column) to the index's column n, as
    /// `pg_get_indexdef(index, n, ...)` gives it.
    pub fn index_columns(&self) -> Lookup {
        let mut entries = HashMap::new();
        for t in &self.tables {
            let pk = (!t.primary_key.is_empty()).then(|| (t.primary_key_oid(), &t.primary_key));
            let secondary = t.indexes.iter().map(|i| (i.oid, &i.columns));
            for (oid, columns) in pk.into_iter().chain(secondary) {
                for (n, &c) in columns.iter().enumerate() {
                    let name = relation_text(&t.columns[c].name, Schema::Public);
                    entries.insert(format!("{oid}.{}", n + 1), Datum::Text(name));
                }
            }
        }
        Lookup {
            key: Key::Text,
            entries,
            missing: Missing::Empty,
        }
    }

    /// Constraint object id to its definition (`pg_get_constraintdef`; `pretty`: a CHECK's
    /// condition without the parentheses PostgreSQL adds around it otherwise).
    pub fn constraint_definitions(&self, pretty: bool) -> Lookup {
        let mut entries = HashMap::new();
        for t in &self.tables {
            if !t.primary_key.is_empty() {
                let columns: Vec<String> = t
                    .primary_key
                    .iter()
                    .map(|&c| relation_text(&t.columns[c].name, Schema::Public))
                    .collect();
                entries.insert(
                    t.primary_key_constraint_oid().to_string(),
                    Datum::Text(format!("PRIMARY KEY ({})", columns.join(", "))),
                );
            }
            for i in t.indexes.iter().filter(|i| i.is_unique_constraint()) {
                let columns: Vec<String> = i
                    .columns
                    .iter()
                    .map(|&c| relation_text(&t.columns[c].name, Schema::Public))
                    .collect();
                entries.insert(
                    i.constraint_oid().to_string(),
                    Datum::Text(format!("UNIQUE ({})", columns.join(", "))),
                );
            }
            for (i, c) in t.checks.iter().enumerate() {
                let def = if pretty {
                    format!("CHECK ({})", c.sql)
                } else {
                    format!("CHECK (({}))", c.sql)
                };
                entries.insert(t.check_oid(i).to_string(), Datum::Text(def));
            }
        }
        for f in self.foreign_keys() {
            let oid = f.table.foreign_key_oid(f.position);
            entries.insert(oid.to_string(), Datum::Text(f.definition()));
        }
        Lookup {
            key: Key::Oid,
            entries,
            missing: Missing::Null,
        }
    }

    /// Relation object id to whether an unqualified name finds it: `pg_table_is_visible`
    /// (those in `pg_catalog` and `public`).
    /// Each relation's size in bytes as `pg_relation_size` gives it, with `indexes` its
    /// indexes' too (`pg_total_relation_size`). Rows live in memory here, so this is an
    /// estimate of what they take: the table's rows (as ANALYZE counted them, or the record
    /// slots it has handed out) times a row's width (fixed-width columns at their width,
    /// others at their average in ANALYZE's sample, else 32 bytes; 24 bytes of header), each
    /// index 32 bytes a row, in whole 8 kB pages as PostgreSQL's sizes are. A view has none.
    pub fn relation_sizes(&self, indexes: bool) -> Lookup {
        const PAGE: u64 = 8192;
        let entries = self.tables.iter().map(|t| {
            let bytes = match t.kind() {
                crate::catalog::RelKind::View => 0,
                crate::catalog::RelKind::Sequence => PAGE,
                crate::catalog::RelKind::Table => {
                    let sample = t.statistics.sample();
                    let slots = t.engine.slots_allocated();
                    let rows = match &sample {
                        Some(s) if slots <= 2 * s.rows + 64 => s.rows,
                        _ => slots,
                    };
                    let width: u64 = (t.columns.iter().enumerate())
                        .map(|(i, c)| match c.ty.column_type(false).fixed_width() {
                            Some(w) => w as u64,
                            None => sample.as_ref().map_or(32, |s| average_width(&s.values, i)),
                        })
                        .sum::<u64>()
                        + 24;
                    let index_bytes = if indexes {
                        32 * rows * (t.indexes.len() as u64 + u64::from(!t.primary_key.is_empty()))
                    } else {
                        0
                    };
                    (rows * width + index_bytes).div_ceil(PAGE) * PAGE
                }
            };
            (t.oid.to_string(), Datum::Int(bytes as i64))
        });
        Lookup {
            key: Key::Oid,
            entries: entries.collect(),
            missing: Missing::Null,
        }
    }

    pub fn visible_relations(&self) -> Lookup {
        Lookup {
            key: Key::Oid,
            entries: self
                .relation_names()
                .into_iter()
                .map(|(oid, _, schema)| {
                    (
                        oid.to_string(),
                        Datum::Bool(schema != Schema::InformationSchema),
                    )
                })
                .collect(),
            missing: Missing::Null,
        }
    }
}

/// The average width in bytes of column `column`'s values in `rows` (NULLs count as none).
fn average_width(rows: &[Vec<Datum>], column: usize) -> u64 {
    let values = rows
        .iter()
        .filter_map(|r| r.get(column))
        .filter(|v| !v.is_null());
    let (n, bytes) = values.fold((0u64, 0u64), |(n, b), v| {
        (n + 1, b + v.text_ref().map_or(0, |t| t.len() as u64))
    });
    bytes.checked_div(n).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relation_names_are_quoted_where_sql_needs_it() {
        assert_eq!(relation_text("t", Schema::Public), "t");
        assert_eq!(relation_text("T", Schema::Public), "\"T\"");
        assert_eq!(
            relation_text("tables", Schema::InformationSchema),
            "information_schema.tables"
        );
    }
}
