//! Changing a jsonb document along a path: `jsonb_set`, `#-` and `jsonb_strip_nulls`.
//!
//! Must never change anything off the path: a path that leaves the document changes nothing.

use serde_json::Value;

use super::position;
use crate::error::{Result, SqlError, sqlstate};

/// A path element used as an array position: an integer, else 22P02 naming its place.
fn path_index(p: &str, at: usize) -> Result<i64> {
    p.trim().parse().map_err(|_| {
        SqlError::new(
            sqlstate::INVALID_TEXT_REPRESENTATION,
            format!(
                "path element at position {} is not an integer: \"{p}\"",
                at + 1
            ),
        )
    })
}

fn in_scalar(what: &str) -> SqlError {
    SqlError::new(
        sqlstate::INVALID_PARAMETER_VALUE,
        format!("cannot {what} path in scalar"),
    )
}

/// `jsonb_set(v, path, new, create)`: `v` with the value at `path` replaced by `new` (or
/// added, when `create` and only the last step is missing: a key, or an element before the
/// start or after the end of an array). A path that leaves the document changes nothing.
pub fn set_path(v: &mut Value, path: &[String], new: Value, create: bool) -> Result<()> {
    if !matches!(v, Value::Object(_) | Value::Array(_)) {
        return Err(in_scalar("set"));
    }
    let mut at = v;
    for (i, p) in path.iter().enumerate() {
        let last = i + 1 == path.len();
        at = match at {
            Value::Object(map) if last => {
                if create || map.contains_key(p) {
                    map.insert(p.clone(), new);
                }
                return Ok(());
            }
            Value::Object(map) => match map.get_mut(p) {
                Some(next) => next,
                None => return Ok(()),
            },
            Value::Array(items) => {
                let n = path_index(p, i)?;
                match position(items.len(), n) {
                    Some(k) if last => {
                        items[k] = new;
                        return Ok(());
                    }
                    Some(k) => &mut items[k],
                    None if last && create => {
                        if n < 0 {
                            items.insert(0, new);
                        } else {
                            items.push(new);
                        }
                        return Ok(());
                    }
                    None => return Ok(()),
                }
            }
            _ => return Ok(()),
        };
    }
    Ok(())
}

/// `v #- path`: `v` without the value at `path` (unchanged if there is none).
pub fn delete_path(v: &mut Value, path: &[String]) -> Result<()> {
    if !matches!(v, Value::Object(_) | Value::Array(_)) {
        return Err(in_scalar("delete"));
    }
    let Some((last, steps)) = path.split_last() else {
        return Ok(());
    };
    let mut at = v;
    for (i, p) in steps.iter().enumerate() {
        let next = match at {
            Value::Object(map) => map.get_mut(p),
            Value::Array(items) => {
                let k = position(items.len(), path_index(p, i)?);
                k.map(|k| &mut items[k])
            }
            _ => None,
        };
        match next {
            Some(next) => at = next,
            None => return Ok(()),
        }
    }
    match at {
        Value::Object(map) => {
            map.remove(last);
        }
        Value::Array(items) => {
            if let Some(k) = position(items.len(), path_index(last, steps.len())?) {
                items.remove(k);
            }
        }
        _ => {}
    }
    Ok(())
}

/// `jsonb_strip_nulls(v)`: `v` without the object fields whose value is null, at any depth.
pub fn strip_nulls(v: &mut Value) {
    match v {
        Value::Object(map) => {
            map.retain(|_, item| !item.is_null());
            map.values_mut().for_each(strip_nulls);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_nulls),
        _ => {}
    }
}
