//! `json` and `jsonb`: JSON documents held as text in a `Datum::Text`. A `json` value is the
//! text it was given, checked to be JSON (PostgreSQL keeps it as written: spaces, key order
//! and duplicate keys); a `jsonb` value is its canonical form, PostgreSQL's jsonb output (keys
//! once each, the last given winning, ordered shorter first then bytewise; numbers as
//! `numeric` shows them; `", "` and `": "` between items), so that equal documents are the
//! same text wherever they are stored, compared or hashed. The operators' work lives here:
//! fields, elements and paths, containment, key existence, concatenation and deletion.
//!
//! Must never hold a jsonb value in any other spelling, and never read a document deeper than
//! `serde_json`'s nesting limit (128) without an error: no input can exhaust the stack.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::error::{Result, SqlError, sqlstate};
use crate::values::numeric::Num;

mod edit;
pub use edit::{delete_path, set_path, strip_nulls};

/// A document read from `text` (`ty` names the type in errors).
pub fn read(text: &str, ty: &str) -> Result<Value> {
    serde_json::from_str(text).map_err(|e| syntax_error(&e, ty))
}

fn syntax_error(e: &serde_json::Error, ty: &str) -> SqlError {
    if e.to_string().contains("recursion limit") {
        return SqlError::new(
            sqlstate::STATEMENT_TOO_COMPLEX,
            format!("{ty} value nests more than 128 levels deep"),
        );
    }
    let detail = e.to_string();
    let detail = detail.split(" at line").next().unwrap_or(&detail);
    SqlError::new(
        sqlstate::INVALID_TEXT_REPRESENTATION,
        format!("invalid input syntax for type {ty}"),
    )
    .with_detail(format!(
        "{detail} (line {}, column {}).",
        e.line(),
        e.column()
    ))
}

/// A `json` value: `text` itself, once checked to be JSON.
pub fn parse_json(text: &str) -> Result<String> {
    serde_json::from_str::<&RawValue>(text).map_err(|e| syntax_error(&e, "json"))?;
    Ok(text.to_owned())
}

/// A `jsonb` value: the canonical form of the document `text` holds.
pub fn parse_jsonb(text: &str) -> Result<String> {
    let v = read(text, "jsonb")?;
    check_jsonb(&v)?;
    Ok(canonical(&v))
}

/// jsonb's text is PostgreSQL text, which holds no NUL character.
fn check_jsonb(v: &Value) -> Result<()> {
    let nul = |s: &str| s.contains('\0');
    let bad = match v {
        Value::String(s) => nul(s),
        Value::Array(items) => return items.iter().try_for_each(check_jsonb),
        Value::Object(map) => {
            if map.keys().any(|k| nul(k)) {
                true
            } else {
                return map.values().try_for_each(check_jsonb);
            }
        }
        _ => false,
    };
    if bad {
        return Err(
            SqlError::new("22P05", "unsupported Unicode escape sequence")
                .with_detail("\\u0000 cannot be converted to text."),
        );
    }
    Ok(())
}

/// PostgreSQL's order of a jsonb object's keys: shorter first, then bytewise.
fn key_order(a: &str, b: &str) -> Ordering {
    a.len().cmp(&b.len()).then_with(|| a.cmp(b))
}

/// The canonical (jsonb output) text of `v`.
pub fn canonical(v: &Value) -> String {
    let mut out = String::new();
    write_canonical(v, &mut out);
    out
}

fn write_canonical(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&number_text(n)),
        Value::String(s) => quote_into(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (k, item)) in sorted(map).into_iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                quote_into(k, out);
                out.push_str(": ");
                write_canonical(item, out);
            }
            out.push('}');
        }
    }
}

fn sorted(map: &Map<String, Value>) -> Vec<(&String, &Value)> {
    let mut pairs: Vec<_> = map.iter().collect();
    pairs.sort_by(|a, b| key_order(a.0, b.0));
    pairs
}

/// A JSON number as `numeric` shows it (`1e2` is `100`, `1.50` stays `1.50`).
fn number_text(n: &serde_json::Number) -> String {
    let text = n.to_string();
    match Num::parse(&text) {
        Ok(Some(num)) => num.to_string(),
        _ => text,
    }
}

fn number(n: &serde_json::Number) -> Option<Num> {
    Num::parse(&n.to_string()).ok().flatten()
}

/// `s` as a JSON string, escaped as PostgreSQL escapes it.
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    quote_into(s, &mut out);
    out
}

fn quote_into(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// `jsonb_typeof`: `object`, `array`, `string`, `number`, `boolean` or `null`.
pub fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Object(_) => "object",
        Value::Array(_) => "array",
        Value::String(_) => "string",
        Value::Number(_) => "number",
        Value::Bool(_) => "boolean",
        Value::Null => "null",
    }
}

/// One step into a document: an object's field by key, an array's element by position
/// (from the end when negative), or a path element (`#>`): a key in an object, a position
/// written as an integer in an array.
#[derive(Clone, Copy)]
pub enum Step<'a> {
    Key(&'a str),
    Index(i64),
    Path(&'a str),
}

impl<'a> Step<'a> {
    /// The position this step names in an array, if it names one.
    fn index(self) -> Option<i64> {
        match self {
            Step::Index(i) => Some(i),
            Step::Path(p) => p.trim().parse().ok(),
            Step::Key(_) => None,
        }
    }

    /// The key this step names in an object, if it names one.
    fn key(self) -> Option<&'a str> {
        match self {
            Step::Key(k) | Step::Path(k) => Some(k),
            Step::Index(_) => None,
        }
    }
}

pub(super) fn position(len: usize, i: i64) -> Option<usize> {
    let at = if i < 0 { len as i64 + i } else { i };
    usize::try_from(at).ok().filter(|at| *at < len)
}

/// What `v -> step` reaches, if anything.
pub fn get<'v>(v: &'v Value, step: Step<'_>) -> Option<&'v Value> {
    match v {
        Value::Object(map) => map.get(step.key()?),
        Value::Array(items) => items.get(position(items.len(), step.index()?)?),
        _ => None,
    }
}

/// What `v -> s1 -> s2 ...` reaches (`#>` with path steps).
pub fn get_path<'v>(v: &'v Value, steps: &[Step<'_>]) -> Option<&'v Value> {
    steps.iter().try_fold(v, |v, s| get(v, *s))
}

/// What `->>` gives of a reached value: a string's characters, no value for JSON null, the
/// canonical text of the rest.
pub fn as_text(v: &Value) -> Option<String> {
    match v {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        v => Some(canonical(v)),
    }
}

/// `json -> s1 -> s2 ...` on a `json` value: the reached value's text as it was written.
pub fn get_raw(text: &str, steps: &[Step<'_>]) -> Result<Option<String>> {
    let mut at = serde_json::from_str::<&RawValue>(text).map_err(|e| syntax_error(&e, "json"))?;
    for step in steps {
        match raw_step(at, *step) {
            Some(next) => at = next,
            None => return Ok(None),
        }
    }
    Ok(Some(at.get().to_owned()))
}

/// One step into a value held as written; the last of duplicate keys wins, as PostgreSQL's
/// `->` on json finds it.
fn raw_step<'t>(raw: &'t RawValue, step: Step<'_>) -> Option<&'t RawValue> {
    match raw.get().trim_start().as_bytes().first()? {
        b'{' => {
            let fields: BTreeMap<String, &RawValue> = serde_json::from_str(raw.get()).ok()?;
            fields.get(step.key()?).copied()
        }
        b'[' => {
            let items: Vec<&RawValue> = serde_json::from_str(raw.get()).ok()?;
            items.get(position(items.len(), step.index()?)?).copied()
        }
        _ => None,
    }
}

/// `->>` of a `json` value reached as written: a string's characters, none for null.
pub fn raw_as_text(raw: &str) -> Result<Option<String>> {
    Ok(as_text(&read(raw, "json")?))
}

/// The elements of the array document `doc` (`raw`: a json value, its elements as written;
/// else canonical), each as `->` gives it or (`text`) as `->>` does.
pub fn elements(doc: &str, raw: bool, text: bool) -> Result<Vec<Option<String>>> {
    let ty = if raw { "json" } else { "jsonb" };
    let not_array = |what: &str| {
        SqlError::new(
            sqlstate::INVALID_PARAMETER_VALUE,
            format!("cannot extract elements from {what}"),
        )
    };
    if raw {
        let first = doc.trim_start().as_bytes().first().copied();
        if first != Some(b'[') {
            read(doc, ty)?;
            return Err(not_array(if first == Some(b'{') {
                "an object"
            } else {
                "a scalar"
            }));
        }
        let items: Vec<&RawValue> = serde_json::from_str(doc).map_err(|e| syntax_error(&e, ty))?;
        return items
            .into_iter()
            .map(|i| {
                if text {
                    raw_as_text(i.get())
                } else {
                    Ok(Some(i.get().to_owned()))
                }
            })
            .collect();
    }
    match read(doc, ty)? {
        Value::Array(items) => Ok(items
            .iter()
            .map(|i| if text { as_text(i) } else { Some(canonical(i)) })
            .collect()),
        Value::Object(_) => Err(not_array("an object")),
        _ => Err(not_array("a scalar")),
    }
}

/// The keys of the object document `doc`, in jsonb's order.
pub fn keys(doc: &str) -> Result<Vec<String>> {
    match read(doc, "jsonb")? {
        Value::Object(map) => Ok(sorted(&map).into_iter().map(|(k, _)| k.clone()).collect()),
        other => Err(SqlError::new(
            sqlstate::INVALID_PARAMETER_VALUE,
            format!(
                "cannot call jsonb_object_keys on {}",
                if other.is_array() {
                    "an array"
                } else {
                    "a scalar"
                }
            ),
        )),
    }
}

/// Whether two documents are equal as jsonb compares them (numbers by value: `1.0` = `1`).
pub fn equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (number(x), number(y)) {
            (Some(x), Some(y)) => x.cmp(&y) == Ordering::Equal,
            _ => x == y,
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| equal(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, a)| y.get(k).is_some_and(|b| equal(a, b)))
        }
        _ => a == b,
    }
}

/// `a @> b`: every part of `b` is in `a` (an object's pairs, an array's elements in any
/// order; an array contains a scalar it holds at its top).
pub fn contains(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => y
            .iter()
            .all(|(k, bv)| x.get(k).is_some_and(|av| contains(av, bv))),
        (Value::Array(x), Value::Array(y)) => y.iter().all(|bv| {
            x.iter().any(|av| match (av, bv) {
                (Value::Array(_), Value::Array(_)) | (Value::Object(_), Value::Object(_)) => {
                    contains(av, bv)
                }
                _ => equal(av, bv),
            })
        }),
        (Value::Array(x), scalar) if !matches!(scalar, Value::Object(_)) => {
            x.iter().any(|av| equal(av, scalar))
        }
        _ => equal(a, b),
    }
}

/// `v ? key`: an object's key, an array's string element, or the string itself.
pub fn exists(v: &Value, key: &str) -> bool {
    match v {
        Value::Object(map) => map.contains_key(key),
        Value::Array(items) => items.iter().any(|i| i.as_str() == Some(key)),
        Value::String(s) => s == key,
        _ => false,
    }
}

/// `a || b`: two objects merged (`b`'s values winning), or the two as one array.
pub fn concat(a: Value, b: Value) -> Value {
    match (a, b) {
        (Value::Object(mut x), Value::Object(y)) => {
            x.extend(y);
            Value::Object(x)
        }
        (a, b) => {
            let mut items = match a {
                Value::Array(items) => items,
                other => vec![other],
            };
            match b {
                Value::Array(more) => items.extend(more),
                other => items.push(other),
            }
            Value::Array(items)
        }
    }
}

/// `v - step`: without an object's key (or an array's string elements equal to it), or an
/// array's element at a position.
pub fn delete(v: Value, step: Step<'_>) -> Result<Value> {
    Ok(match (v, step) {
        (Value::Object(mut map), Step::Key(k)) => {
            map.remove(k);
            Value::Object(map)
        }
        (Value::Array(mut items), Step::Key(k)) => {
            items.retain(|i| i.as_str() != Some(k));
            Value::Array(items)
        }
        (Value::Array(mut items), Step::Index(i)) => {
            if let Some(at) = position(items.len(), i) {
                items.remove(at);
            }
            Value::Array(items)
        }
        (Value::Object(_), Step::Index(_)) => {
            return Err(SqlError::new(
                sqlstate::INVALID_PARAMETER_VALUE,
                "cannot delete from object using integer index",
            ));
        }
        _ => {
            return Err(SqlError::new(
                sqlstate::INVALID_PARAMETER_VALUE,
                "cannot delete from scalar",
            ));
        }
    })
}

/// `jsonb_pretty(v)`: one item a line, four spaces a level, as PostgreSQL lays it out (an
/// empty container's closing bracket too on a line of its own).
pub fn pretty(v: &Value) -> String {
    fn write(v: &Value, depth: usize, out: &mut String) {
        let (open, close, items): (char, char, Vec<(Option<&String>, &Value)>) = match v {
            Value::Object(map) => (
                '{',
                '}',
                sorted(map).into_iter().map(|(k, v)| (Some(k), v)).collect(),
            ),
            Value::Array(items) => ('[', ']', items.iter().map(|v| (None, v)).collect()),
            scalar => return write_canonical(scalar, out),
        };
        out.push(open);
        for (i, (key, item)) in items.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push('\n');
            out.push_str(&" ".repeat(4 * (depth + 1)));
            if let Some(k) = key {
                quote_into(k, out);
                out.push_str(": ");
            }
            write(item, depth + 1, out);
        }
        out.push('\n');
        out.push_str(&" ".repeat(4 * depth));
        out.push(close);
    }
    let mut out = String::new();
    write(v, 0, &mut out);
    out
}

/// A scalar document as the value `::integer`, `::numeric`, `::boolean` and the like read:
/// its number or boolean text, or 22023 naming what it is instead.
pub fn scalar_text(v: &Value, target: &str) -> Result<String> {
    match v {
        Value::Number(n) => Ok(number_text(n)),
        Value::Bool(b) => Ok(b.to_string()),
        other => Err(SqlError::new(
            sqlstate::INVALID_PARAMETER_VALUE,
            format!("cannot cast jsonb {} to type {target}", cast_kind(other)),
        )),
    }
}

fn cast_kind(v: &Value) -> &'static str {
    match v {
        Value::Object(_) => "object",
        Value::Array(_) => "array",
        Value::String(_) => "string",
        Value::Number(_) => "numeric",
        Value::Bool(_) => "boolean",
        Value::Null => "null",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jsonb_is_held_in_postgresqls_canonical_spelling() {
        let cases = [
            (
                r#"{"b":1, "a" : [1,2.50,1e2], "a":3}"#,
                r#"{"a": 3, "b": 1}"#,
            ),
            (r#"{"aa":1,"b":2,"a":3}"#, r#"{"a": 3, "b": 2, "aa": 1}"#),
            (r#" "\u00e9\n\u0001\b" "#, r#""é\n\u0001\b""#),
            ("[]", "[]"),
            ("{}", "{}"),
            ("-0.0", "0.0"),
            ("1.5e-3", "0.0015"),
        ];
        for (input, held) in cases {
            assert_eq!(parse_jsonb(input).unwrap(), held, "{input}");
            assert_eq!(parse_jsonb(held).unwrap(), held, "idempotent: {held}");
        }
        assert_eq!(parse_json(" [1, 2] ").unwrap(), " [1, 2] ");
        assert_eq!(parse_json("{a:1}").unwrap_err().code, "22P02");
        assert_eq!(parse_jsonb(r#""\u0000""#).unwrap_err().code, "22P05");
        let deep = "[".repeat(10_000);
        assert_eq!(parse_jsonb(&deep).unwrap_err().code, "54001");
    }

    #[test]
    fn operators_answer_as_postgresqls() {
        let v = read(r#"{"a": [1, {"b": null}], "c": "x"}"#, "jsonb").unwrap();
        assert_eq!(
            get(&v, Step::Key("c")).and_then(as_text).as_deref(),
            Some("x")
        );
        let path = [Step::Path("a"), Step::Path("-1"), Step::Path("b")];
        assert_eq!(get_path(&v, &path), Some(&Value::Null));
        assert!(get(&v, Step::Index(0)).is_none());
        let raw = r#"{"a": {"b" :1}, "a": {"b" : 2}}"#;
        assert_eq!(
            get_raw(raw, &[Step::Key("a")]).unwrap().as_deref(),
            Some(r#"{"b" : 2}"#)
        );
        let j = |t: &str| read(t, "jsonb").unwrap();
        assert!(contains(&j("[1, 2]"), &j("1")));
        assert!(contains(
            &j(r#"{"a": [1, 2], "b": 1}"#),
            &j(r#"{"a": [2]}"#)
        ));
        assert!(!contains(&j("[[1]]"), &j("[1]")));
        assert!(equal(&j("1.0"), &j("1.00")));
        assert!(exists(&j(r#"["a", 1]"#), "a") && !exists(&j("[1]"), "1"));
        assert_eq!(
            canonical(&concat(j(r#"{"a": 1}"#), j("[2]"))),
            r#"[{"a": 1}, 2]"#
        );
        assert_eq!(
            canonical(&delete(j("[1, 2, 3]"), Step::Index(-1)).unwrap()),
            "[1, 2]"
        );
        assert!(delete(j("1"), Step::Key("a")).is_err());
    }
}
