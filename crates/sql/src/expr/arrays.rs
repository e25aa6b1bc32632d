//! The array functions (by [`Func`]): building, indexing, measuring and converting
//! one-dimensional arrays, with PostgreSQL's NULL rules (a NULL array gives NULL; NULL elements
//! are values like any other).

use super::{Context, Expr, Func};
use crate::error::{Result, SqlError, sqlstate};
use crate::values::datum::Datum;

/// The array (or NULL) argument `d`.
fn array(d: Datum) -> Result<Option<Vec<Datum>>> {
    match d {
        Datum::Null => Ok(None),
        Datum::Array(v) => Ok(Some(v)),
        other => Err(SqlError::new(
            sqlstate::DATATYPE_MISMATCH,
            format!(
                "an array was expected, not {}",
                other.to_text().unwrap_or_default()
            ),
        )),
    }
}

/// An integer argument (NULL: none).
fn int(d: Datum) -> Option<i64> {
    match d {
        Datum::Int(n) => Some(n),
        _ => None,
    }
}

/// Evaluates array function `f` over `args`.
pub(super) fn eval(f: Func, args: &[Expr], row: &[Datum], cx: &Context<'_>) -> Result<Datum> {
    let arg =
        |i: usize| -> Result<Datum> { args.get(i).map_or(Ok(Datum::Null), |a| a.eval(row, cx)) };
    Ok(match f {
        Func::ArrayBuild => Datum::Array(
            args.iter()
                .map(|a| a.eval(row, cx))
                .collect::<Result<_>>()?,
        ),
        Func::ArrayElement => match (array(arg(0)?)?, int(arg(1)?)) {
            (Some(v), Some(i)) if i >= 1 => {
                v.into_iter().nth((i - 1) as usize).unwrap_or(Datum::Null)
            }
            _ => Datum::Null,
        },
        Func::ArrayLength | Func::ArrayUpper | Func::ArrayLower => {
            match (array(arg(0)?)?, int(arg(1)?)) {
                (Some(v), Some(1)) if !v.is_empty() => Datum::Int(match f {
                    Func::ArrayLower => 1,
                    _ => v.len() as i64,
                }),
                _ => Datum::Null,
            }
        }
        Func::Cardinality => match array(arg(0)?)? {
            Some(v) => Datum::Int(v.len() as i64),
            None => Datum::Null,
        },
        Func::ArrayToString => {
            let (Some(v), Some(sep)) = (array(arg(0)?)?, arg(1)?.to_text()) else {
                return Ok(Datum::Null);
            };
            let null = arg(2)?.to_text();
            let parts: Vec<String> = v
                .iter()
                .filter_map(|d| d.to_text().or_else(|| null.clone()))
                .collect();
            Datum::Text(parts.join(&sep))
        }
        Func::StringToArray => {
            let Some(s) = arg(0)?.to_text() else {
                return Ok(Datum::Null);
            };
            let null = arg(2)?.to_text();
            let parts: Vec<String> = match arg(1)?.to_text() {
                // A NULL separator splits into characters; an empty one keeps the string whole.
                None => s.chars().map(String::from).collect(),
                Some(sep) if sep.is_empty() => vec![s.clone()],
                Some(sep) => s.split(sep.as_str()).map(str::to_owned).collect(),
            };
            if s.is_empty() {
                return Ok(Datum::Array(Vec::new()));
            }
            Datum::Array(
                parts
                    .into_iter()
                    .map(|p| {
                        if null.as_deref() == Some(p.as_str()) {
                            Datum::Null
                        } else {
                            Datum::Text(p)
                        }
                    })
                    .collect(),
            )
        }
        Func::ArrayPosition => {
            let Some(v) = array(arg(0)?)? else {
                return Ok(Datum::Null);
            };
            let x = arg(1)?;
            // IS NOT DISTINCT FROM: a NULL finds a NULL.
            let found = v.iter().position(|e| match (e.is_null(), x.is_null()) {
                (true, true) => true,
                (false, false) => e.sql_cmp(&x).ok().flatten() == Some(std::cmp::Ordering::Equal),
                _ => false,
            });
            found.map_or(Datum::Null, |i| Datum::Int(i as i64 + 1))
        }
        Func::ArrayAppend | Func::ArrayPrepend | Func::ArrayCat => {
            let (a, b) = (arg(0)?, arg(1)?);
            match f {
                Func::ArrayAppend => {
                    let mut v = array(a)?.unwrap_or_default();
                    v.push(b);
                    Datum::Array(v)
                }
                Func::ArrayPrepend => {
                    let mut v = vec![a];
                    v.extend(array(b)?.unwrap_or_default());
                    Datum::Array(v)
                }
                _ => match (array(a)?, array(b)?) {
                    (None, None) => Datum::Null,
                    (x, y) => {
                        let mut v = x.unwrap_or_default();
                        v.extend(y.unwrap_or_default());
                        Datum::Array(v)
                    }
                },
            }
        }
        other => unreachable!("{other:?} is not an array function"),
    })
}
