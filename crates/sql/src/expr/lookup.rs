//! A function of one value answered from a table built when its statement was planned: what
//! the `reg*` casts and the catalog's functions answer (`'t'::regclass`, a `regtype` as text,
//! `pg_get_userbyid`, `pg_table_is_visible`). The tables are built from the system catalogs'
//! snapshot (`system`), and a plan holding one is made again at every execution, so the
//! answers are the catalog's as the statement sees it.
//!
//! Must never be kept past the plan it was built for.

use std::collections::HashMap;

use crate::error::{Result, SqlError, sqlstate};
use crate::values::datum::Datum;

/// How a lookup's input becomes its key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Key {
    /// An object id.
    Oid,
    /// A relation's name, as SQL writes it (case folded unless quoted, `pg_catalog.` or
    /// `public.` in front).
    RelationName,
    /// A type's name.
    TypeName,
    /// The input's text as it is.
    Text,
}

/// What a lookup answers for a key it does not have.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Missing {
    Null,
    /// The input as text (`regclass` of an id no relation has prints the id).
    Echo,
    /// Fails: no relation of that name (42P01).
    NoRelation,
    /// Fails: no type of that name (42704).
    NoType,
    /// Fails: no schema of that name (3F000).
    NoSchema,
    /// The empty string.
    Empty,
}

/// A function of one value, answered from a table.
#[derive(Clone, Debug, PartialEq)]
pub struct Lookup {
    pub key: Key,
    pub entries: HashMap<String, Datum>,
    pub missing: Missing,
}

impl Lookup {
    /// The answer for `input` (NULL for NULL).
    pub fn get(&self, input: &Datum) -> Result<Datum> {
        let text = match input {
            Datum::Null => return Ok(Datum::Null),
            d => d.to_text().unwrap_or_default(),
        };
        let key = match self.key {
            Key::Oid | Key::Text => text.clone(),
            Key::RelationName | Key::TypeName => normalized(&text),
        };
        if let Some(found) = self.entries.get(&key) {
            return Ok(found.clone());
        }
        // A name of a relation or type may be given as its object id (`'16384'::regclass`),
        // as PostgreSQL's input functions take it.
        if matches!(self.key, Key::RelationName | Key::TypeName)
            && let Ok(oid) = text.trim().parse::<u32>()
        {
            return Ok(Datum::Int(i64::from(oid)));
        }
        match self.missing {
            Missing::Null => Ok(Datum::Null),
            Missing::Echo => Ok(Datum::Text(text)),
            Missing::Empty => Ok(Datum::Text(String::new())),
            Missing::NoRelation => Err(SqlError::new(
                sqlstate::UNDEFINED_TABLE,
                format!("relation \"{text}\" does not exist"),
            )),
            Missing::NoType => Err(SqlError::new(
                sqlstate::UNDEFINED_OBJECT,
                format!("type \"{text}\" does not exist"),
            )),
            Missing::NoSchema => Err(SqlError::new(
                sqlstate::INVALID_SCHEMA_NAME,
                format!("schema \"{text}\" does not exist"),
            )),
        }
    }
}

/// A name as SQL writes it, as the catalog holds it: each part case-folded unless quoted, and
/// without a `pg_catalog.` or `public.` in front.
pub(crate) fn normalized(text: &str) -> String {
    let mut parts = Vec::new();
    let mut rest = text.trim();
    while !rest.is_empty() {
        let (part, after) = if let Some(quoted) = rest.strip_prefix('"') {
            let mut out = String::new();
            let mut chars = quoted.char_indices();
            let mut end = quoted.len();
            while let Some((i, c)) = chars.next() {
                if c == '"' {
                    if quoted[i + 1..].starts_with('"') {
                        out.push('"');
                        chars.next();
                    } else {
                        end = i + 1;
                        break;
                    }
                } else {
                    out.push(c);
                }
            }
            (out, &quoted[end..])
        } else {
            let end = rest.find('.').unwrap_or(rest.len());
            (rest[..end].trim().to_lowercase(), &rest[end..])
        };
        parts.push(part);
        rest = after
            .trim_start()
            .strip_prefix('.')
            .unwrap_or(after)
            .trim_start();
    }
    if parts.len() == 2 && (parts[0] == "pg_catalog" || parts[0] == "public") {
        parts.remove(0);
    }
    parts.join(".")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_fold_case_unless_quoted_and_lose_the_path_schemas() {
        assert_eq!(normalized("Foo"), "foo");
        assert_eq!(normalized("\"Foo\""), "Foo");
        assert_eq!(normalized("public.Foo"), "foo");
        assert_eq!(normalized("pg_catalog.pg_class"), "pg_class");
        assert_eq!(
            normalized("information_schema.Tables"),
            "information_schema.tables"
        );
        assert_eq!(normalized("\"a\"\"b\""), "a\"b");
        assert_eq!(normalized("character varying"), "character varying");
    }
}
