//! What json's and jsonb's operators and functions compute (bound in `bind::json`), over
//! documents held as text (see `values::json`). NULL in, NULL out, but for the builders, which
//! take NULL as JSON null.

use serde_json::Value;

use super::{Context, Expr, JsonFunc};
use crate::error::{Result, SqlError, sqlstate};
use crate::values::datum::Datum;
use crate::values::json::{self, Step};
use crate::values::types::SqlType;

/// The text of each path element of `d` (a text array, or one text value).
fn path_of(d: Datum) -> Vec<Option<String>> {
    match d {
        Datum::Array(items) => items.iter().map(Datum::to_text).collect(),
        other => vec![other.to_text()],
    }
}

fn jsonb(text: &str) -> Result<Value> {
    json::read(text, "jsonb")
}

pub(super) fn eval(f: JsonFunc, args: &[Expr], row: &[Datum], cx: &Context<'_>) -> Result<Datum> {
    match f {
        JsonFunc::ToJson(ty) => return Ok(Datum::Text(to_json(args[0].eval(row, cx)?, ty))),
        JsonFunc::BuildObject => return build_object(args, row, cx),
        JsonFunc::BuildArray => {
            let mut items = Vec::with_capacity(args.len());
            for a in args {
                items.push(a.eval(row, cx)?.to_text().unwrap_or_else(|| "null".into()));
            }
            return Ok(Datum::Text(format!("[{}]", items.join(", "))));
        }
        _ => {}
    }
    let mut values = Vec::with_capacity(args.len());
    for a in args {
        match a.eval(row, cx)? {
            Datum::Null => return Ok(Datum::Null),
            d => values.push(d),
        }
    }
    let doc = values[0].to_text().unwrap_or_default();
    let text_of = |d: &Datum| d.to_text().unwrap_or_default();
    let out = |v: Option<String>| Ok(v.map_or(Datum::Null, Datum::Text));
    match f {
        JsonFunc::Get { raw, text, .. } | JsonFunc::GetPath { raw, text } => {
            let keys: Vec<String>;
            let steps: Vec<Step> = match f {
                JsonFunc::Get { index: true, .. } => {
                    match values[1].clone().cast(SqlType::Int8)? {
                        Datum::Int(i) => vec![Step::Index(i)],
                        _ => return Ok(Datum::Null),
                    }
                }
                JsonFunc::Get { .. } => {
                    keys = vec![text_of(&values[1])];
                    vec![Step::Key(&keys[0])]
                }
                _ => {
                    let mut path = Vec::new();
                    for d in values.drain(1..) {
                        for p in path_of(d) {
                            match p {
                                Some(p) => path.push(p),
                                None => return Ok(Datum::Null),
                            }
                        }
                    }
                    keys = path;
                    keys.iter().map(|p| Step::Path(p)).collect()
                }
            };
            if raw {
                match json::get_raw(&doc, &steps)? {
                    Some(found) if text => out(json::raw_as_text(&found)?),
                    found => out(found),
                }
            } else {
                let v = jsonb(&doc)?;
                let found = json::get_path(&v, &steps);
                out(found.and_then(|v| match text {
                    true => json::as_text(v),
                    false => Some(json::canonical(v)),
                }))
            }
        }
        JsonFunc::Contains => Ok(Datum::Bool(json::contains(
            &jsonb(&doc)?,
            &jsonb(&text_of(&values[1]))?,
        ))),
        JsonFunc::Equal => Ok(Datum::Bool(json::equal(
            &jsonb(&doc)?,
            &jsonb(&text_of(&values[1]))?,
        ))),
        JsonFunc::Exists => Ok(Datum::Bool(json::exists(
            &jsonb(&doc)?,
            &text_of(&values[1]),
        ))),
        JsonFunc::ExistsAny | JsonFunc::ExistsAll => {
            let v = jsonb(&doc)?;
            let keys = path_of(values.swap_remove(1));
            let mut found = keys.iter().flatten().map(|k| json::exists(&v, k));
            Ok(Datum::Bool(if f == JsonFunc::ExistsAny {
                found.any(|b| b)
            } else {
                found.all(|b| b)
            }))
        }
        JsonFunc::Concat => {
            let joined = json::concat(jsonb(&doc)?, jsonb(&text_of(&values[1]))?);
            Ok(Datum::Text(json::canonical(&joined)))
        }
        JsonFunc::Delete { index } => {
            let mut v = jsonb(&doc)?;
            if index {
                let Datum::Int(i) = values[1].clone().cast(SqlType::Int8)? else {
                    return Ok(Datum::Null);
                };
                v = json::delete(v, Step::Index(i))?;
            } else {
                for key in path_of(values.swap_remove(1)).into_iter().flatten() {
                    v = json::delete(v, Step::Key(&key))?;
                }
            }
            Ok(Datum::Text(json::canonical(&v)))
        }
        JsonFunc::SetPath | JsonFunc::DeletePath => {
            let mut v = jsonb(&doc)?;
            let path: Vec<String> = path_of(values[1].clone()).into_iter().flatten().collect();
            if f == JsonFunc::DeletePath {
                json::delete_path(&mut v, &path)?;
            } else {
                let create = values.get(3).is_none_or(|c| *c == Datum::Bool(true));
                json::set_path(&mut v, &path, jsonb(&text_of(&values[2]))?, create)?;
            }
            Ok(Datum::Text(json::canonical(&v)))
        }
        JsonFunc::StripNulls => {
            let mut v = jsonb(&doc)?;
            json::strip_nulls(&mut v);
            Ok(Datum::Text(json::canonical(&v)))
        }
        JsonFunc::Pretty => Ok(Datum::Text(json::pretty(&jsonb(&doc)?))),
        JsonFunc::TypeOf => Ok(Datum::Text(json::type_name(&jsonb(&doc)?).into())),
        JsonFunc::ArrayLength => match jsonb(&doc)? {
            Value::Array(items) => Ok(Datum::Int(items.len() as i64)),
            Value::Object(_) => Err(SqlError::new(
                sqlstate::INVALID_PARAMETER_VALUE,
                "cannot get array length of a non-array",
            )),
            _ => Err(SqlError::new(
                sqlstate::INVALID_PARAMETER_VALUE,
                "cannot get array length of a scalar",
            )),
        },
        JsonFunc::Scalar(target) => Ok(Datum::Text(json::scalar_text(
            &jsonb(&doc)?,
            &target.name(),
        )?)),
        JsonFunc::ToJson(_) | JsonFunc::BuildObject | JsonFunc::BuildArray => {
            unreachable!("evaluated above")
        }
    }
}

/// `json_build_object(key, value, ...)`: each value already JSON (bound through `ToJson`).
fn build_object(args: &[Expr], row: &[Datum], cx: &Context<'_>) -> Result<Datum> {
    let mut out = String::from("{");
    for (i, pair) in args.chunks(2).enumerate() {
        let (key, value) = (pair[0].eval(row, cx)?, pair[1].eval(row, cx)?);
        let Some(key) = key.to_text() else {
            return Err(SqlError::new(
                sqlstate::NULL_VALUE_NOT_ALLOWED,
                "null value not allowed for object key",
            ));
        };
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(&json::quote(&key));
        out.push_str(" : ");
        out.push_str(&value.to_text().unwrap_or_else(|| "null".into()));
    }
    out.push('}');
    Ok(Datum::Text(out))
}

/// `to_json(v)` of a value of type `ty`, as PostgreSQL writes it: numbers and booleans bare,
/// documents as they are, arrays as JSON arrays, times in ISO 8601, the rest as strings.
pub(super) fn to_json(v: Datum, ty: SqlType) -> String {
    match (v, ty) {
        (Datum::Null, _) => "null".into(),
        (Datum::Bool(b), _) => b.to_string(),
        (d @ (Datum::Int(_) | Datum::Numeric(_)), t) if t.is_numeric() => {
            d.to_text().unwrap_or_default()
        }
        (Datum::Float(f), _) if f.is_finite() => Datum::Float(f).to_text().unwrap_or_default(),
        (Datum::Text(s), SqlType::Json | SqlType::Jsonb) => s,
        (Datum::Array(items), SqlType::Array(e)) => {
            let items: Vec<String> = items.into_iter().map(|d| to_json(d, e.ty())).collect();
            format!("[{}]", items.join(","))
        }
        (d @ (Datum::Timestamp(_) | Datum::TimestampTz(_)), _) => {
            let text = d.to_text().unwrap_or_default().replacen(' ', "T", 1);
            // An offset of whole hours is written `+00:00`.
            let offset = text.len().saturating_sub(3);
            let whole_hours = matches!(ty, SqlType::TimestampTz)
                && text[offset..].starts_with(['+', '-'])
                && text[offset + 1..].bytes().all(|b| b.is_ascii_digit());
            json::quote(&if whole_hours {
                format!("{text}:00")
            } else {
                text
            })
        }
        (d, _) => json::quote(&d.to_text_cast().unwrap_or_default()),
    }
}
