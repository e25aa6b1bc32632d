//! Aggregates as they run: count, sum, min, max, avg, bool_and and bool_or over the rows of a
//! group (those its `FILTER` holds for), DISTINCT ones over their distinct values; NULLs are
//! skipped and an empty group's result is NULL (count: 0), as in PostgreSQL; array_agg (NULLs
//! kept), string_agg and json_agg/jsonb_agg collect their values, in their ORDER BY's order.

use std::borrow::Cow;

use crate::error::Result;
use crate::expr::{Context, Expr};
use crate::plan::{AggCall, AggFunc};
use crate::values::datum::Datum;
use crate::values::numeric::Num;
use crate::values::types::SqlType;

/// An aggregate's running state (cloned by a window aggregate to finish it at each row).
#[derive(Clone)]
pub(crate) enum AggState {
    Count(i64),
    /// Sum, min or max so far (NULL until a value is seen); with AVG, how many were summed.
    Value(Datum, i64),
    /// A numeric sum or average of integers so far, in a machine integer (which 2^64 values
    /// of 64 bits cannot overflow); how many were summed.
    IntSum(i128, i64),
    Distinct(crate::values::key::KeySet, Vec<Datum>),
    /// array_agg's and string_agg's values with their ORDER BY keys, and string_agg's
    /// separator.
    Collect(Vec<(Vec<Datum>, Datum)>, Option<String>),
}

impl AggState {
    pub(crate) fn new(call: &AggCall) -> AggState {
        if call.distinct {
            AggState::Distinct(Default::default(), Vec::new())
        } else if call.func == AggFunc::Count {
            AggState::Count(0)
        } else if matches!(
            call.func,
            AggFunc::ArrayAgg | AggFunc::StringAgg | AggFunc::JsonAgg | AggFunc::JsonbAgg
        ) {
            AggState::Collect(Vec::new(), None)
        } else {
            AggState::Value(Datum::Null, 0)
        }
    }

    /// Adds `row`'s value; returns how many bytes the state holds more (which the statement's
    /// memory budget is charged).
    pub(crate) fn add(&mut self, call: &AggCall, row: &[Datum], cx: &Context<'_>) -> Result<usize> {
        if let Some(filter) = &call.filter
            && !filter.holds(row, cx)?
        {
            return Ok(0);
        }
        // Borrowed where the argument is a column: a numeric sum adds the row's value where it
        // is instead of copying it (a copy of a numeric is an allocation, per row).
        let v = match &call.arg {
            Some(e) => e.eval_ref(row, cx)?,
            None => Cow::Owned(Datum::Bool(true)), // count(*) counts rows
        };
        if let AggState::Collect(values, separator) = self {
            // array_agg keeps NULLs; string_agg skips them.
            if v.is_null() && call.func == AggFunc::StringAgg {
                return Ok(0);
            }
            if separator.is_none()
                && let Some(s) = &call.separator
            {
                *separator = s.eval(row, cx)?.to_text();
            }
            let keys = call
                .order_by
                .iter()
                .map(|(e, _, _)| e.eval(row, cx))
                .collect::<Result<Vec<_>>>()?;
            let bytes = crate::values::datum::row_bytes(&keys)
                + crate::values::datum::row_bytes(std::slice::from_ref(&*v))
                + 32;
            values.push((keys, v.into_owned()));
            return Ok(bytes);
        }
        if v.is_null() {
            return Ok(0);
        }
        match self {
            AggState::Count(n) => *n += 1,
            AggState::Distinct(seen, values) => {
                let v = v.into_owned();
                let key = crate::values::key::Key::one(v.clone());
                if !seen.contains(&key) {
                    let bytes = 2 * crate::values::datum::row_bytes(&key.0) + 32;
                    seen.insert(key);
                    values.push(v);
                    return Ok(bytes);
                }
            }
            AggState::Collect(..) => unreachable!("collected above"),
            AggState::IntSum(sum, n) => match *v {
                Datum::Int(i) => {
                    *sum += i128::from(i);
                    *n += 1;
                }
                // Only integers are summed here (the argument has one type); anything else
                // continues as a numeric sum.
                _ => {
                    let acc = Datum::Numeric(Num::from_i128(*sum)).arith('+', &v)?;
                    *self = AggState::Value(acc, *n + 1);
                }
            },
            AggState::Value(acc, n) => {
                *n += 1;
                let summing = matches!(call.func, AggFunc::Sum | AggFunc::Avg);
                match (&mut *acc, &*v) {
                    // A bigint sum and an integer average are numerics, which do not overflow
                    // where 64 bits would (PostgreSQL's): summed as integers until finished.
                    (Datum::Null, Datum::Int(i))
                        if summing && matches!(call.ty, SqlType::Numeric(_)) =>
                    {
                        *self = AggState::IntSum(i128::from(*i), 1);
                        return Ok(0);
                    }
                    // A numeric sum grows in place.
                    (Datum::Numeric(a), Datum::Numeric(b)) if summing => {
                        a.add_assign(b)?;
                        return Ok(0);
                    }
                    _ => {}
                }
                *acc = match (call.func, &*acc) {
                    // A double average starts from zero, as PostgreSQL's does (so -0 averages
                    // to 0, where a sum of it stays -0).
                    (AggFunc::Avg, Datum::Null) if matches!(*v, Datum::Float(_)) => {
                        Datum::Float(0.0).arith('+', &v)?
                    }
                    (AggFunc::BoolAnd | AggFunc::BoolOr, _) => {
                        let b = v.truth()? == Some(true);
                        let before = match &*acc {
                            Datum::Bool(a) => Some(*a),
                            _ => None,
                        };
                        Datum::Bool(match (call.func, before) {
                            (_, None) => b,
                            (AggFunc::BoolAnd, Some(a)) => a && b,
                            (_, Some(a)) => a || b,
                        })
                    }
                    (_, Datum::Null) => v.into_owned(),
                    (AggFunc::Sum | AggFunc::Avg, _) => acc.arith('+', &v)?,
                    (AggFunc::Min, _) if v.sort_cmp(acc).is_lt() => v.into_owned(),
                    (AggFunc::Max, _) if v.sort_cmp(acc).is_gt() => v.into_owned(),
                    _ => return Ok(0),
                };
            }
        }
        Ok(0)
    }

    pub(crate) fn finish(self, call: &AggCall) -> Result<Datum> {
        let (acc, n) = match self {
            AggState::Count(n) => return Ok(Datum::Int(n)),
            AggState::Value(acc, n) => (acc, n),
            AggState::IntSum(sum, n) => (Datum::Numeric(Num::from_i128(sum)), n),
            AggState::Collect(mut values, separator) => {
                if values.is_empty() {
                    return Ok(Datum::Null);
                }
                // Stable: equal keys keep their rows' order.
                values.sort_by(|(a, _), (b, _)| {
                    for ((x, y), (_, descending, nulls_first)) in
                        a.iter().zip(b).zip(&call.order_by)
                    {
                        let o = match (x.is_null(), y.is_null()) {
                            (true, true) => std::cmp::Ordering::Equal,
                            (true, false) if *nulls_first => std::cmp::Ordering::Less,
                            (true, false) => std::cmp::Ordering::Greater,
                            (false, true) if *nulls_first => std::cmp::Ordering::Greater,
                            (false, true) => std::cmp::Ordering::Less,
                            _ if *descending => y.sort_cmp(x),
                            _ => x.sort_cmp(y),
                        };
                        if o != std::cmp::Ordering::Equal {
                            return o;
                        }
                    }
                    std::cmp::Ordering::Equal
                });
                let values = values.into_iter().map(|(_, v)| v);
                return Ok(match call.func {
                    AggFunc::StringAgg => Datum::Text(
                        values
                            .filter_map(|v| v.to_text())
                            .collect::<Vec<_>>()
                            .join(separator.as_deref().unwrap_or("")),
                    ),
                    AggFunc::JsonAgg | AggFunc::JsonbAgg => {
                        let items: Vec<String> = values.filter_map(|v| v.to_text()).collect();
                        let text = format!("[{}]", items.join(", "));
                        Datum::Text(match call.func {
                            AggFunc::JsonbAgg => crate::values::json::parse_jsonb(&text)?,
                            _ => text,
                        })
                    }
                    _ => Datum::Array(values.collect()),
                });
            }
            AggState::Distinct(_, mut values) => {
                // PostgreSQL finds the distinct values by sorting them: they come in order.
                values.sort_by(|a, b| a.sort_cmp(b));
                if call.func == AggFunc::Count {
                    return Ok(Datum::Int(values.len() as i64));
                }
                // The values kept passed the filter already.
                let plain = AggCall {
                    distinct: false,
                    filter: None,
                    ..call.clone()
                };
                let mut state = AggState::new(&plain);
                let cx = Context::new(&[], 0);
                for v in values {
                    state.add(
                        &AggCall {
                            arg: Some(Expr::Literal(v)),
                            ..plain.clone()
                        },
                        &[],
                        &cx,
                    )?;
                }
                return state.finish(&plain);
            }
        };
        let value = match call.func {
            AggFunc::Avg if n > 0 => acc.arith('/', &Datum::Int(n))?,
            _ => acc,
        };
        value.cast(call.ty)
    }
}
