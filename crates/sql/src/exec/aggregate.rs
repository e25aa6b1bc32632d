//! Aggregates as they run: count, sum, min, max and avg over the rows of a group (those its
//! `FILTER` holds for), DISTINCT ones over their distinct values; NULLs are skipped and an empty group's result is NULL (count: 0),
//! as in PostgreSQL.

use crate::error::Result;
use crate::expr::{Context, Expr};
use crate::plan::{AggCall, AggFunc};
use crate::values::datum::Datum;
use crate::values::types::SqlType;

/// An aggregate's running state.
pub(crate) enum AggState {
    Count(i64),
    /// Sum, min or max so far (NULL until a value is seen); with AVG, how many were summed.
    Value(Datum, i64),
    Distinct(std::collections::HashSet<String>, Vec<Datum>),
}

impl AggState {
    pub(crate) fn new(call: &AggCall) -> AggState {
        if call.distinct {
            AggState::Distinct(Default::default(), Vec::new())
        } else if call.func == AggFunc::Count {
            AggState::Count(0)
        } else {
            AggState::Value(Datum::Null, 0)
        }
    }

    pub(crate) fn add(&mut self, call: &AggCall, row: &[Datum], cx: &Context<'_>) -> Result<()> {
        if let Some(filter) = &call.filter
            && !filter.holds(row, cx)?
        {
            return Ok(());
        }
        let v = match &call.arg {
            Some(e) => e.eval(row, cx)?,
            None => Datum::Bool(true), // count(*) counts rows
        };
        if v.is_null() {
            return Ok(());
        }
        match self {
            AggState::Count(n) => *n += 1,
            AggState::Distinct(seen, values) => {
                if seen.insert(crate::values::datum::group_key(std::slice::from_ref(&v))) {
                    values.push(v);
                }
            }
            AggState::Value(acc, n) => {
                *n += 1;
                *acc = match (call.func, &*acc) {
                    // A bigint sum and an integer average are numerics, which do not overflow
                    // where 64 bits would (PostgreSQL's).
                    (AggFunc::Sum | AggFunc::Avg, Datum::Null)
                        if matches!(call.ty, SqlType::Numeric(_)) && matches!(v, Datum::Int(_)) =>
                    {
                        Datum::Numeric(v.as_num()?)
                    }
                    // A double average starts from zero, as PostgreSQL's does (so -0 averages
                    // to 0, where a sum of it stays -0).
                    (AggFunc::Avg, Datum::Null) if matches!(v, Datum::Float(_)) => {
                        Datum::Float(0.0).arith('+', &v)?
                    }
                    (_, Datum::Null) => v,
                    (AggFunc::Sum | AggFunc::Avg, _) => acc.arith('+', &v)?,
                    (AggFunc::Min, _) if v.sort_cmp(acc).is_lt() => v,
                    (AggFunc::Max, _) if v.sort_cmp(acc).is_gt() => v,
                    _ => return Ok(()),
                };
            }
        }
        Ok(())
    }

    pub(crate) fn finish(self, call: &AggCall) -> Result<Datum> {
        let (acc, n) = match self {
            AggState::Count(n) => return Ok(Datum::Int(n)),
            AggState::Value(acc, n) => (acc, n),
            AggState::Distinct(_, values) => {
                if call.func == AggFunc::Count {
                    return Ok(Datum::Int(values.len() as i64));
                }
                let mut state = AggState::Value(Datum::Null, 0);
                // The values kept passed the filter already.
                let plain = AggCall {
                    distinct: false,
                    filter: None,
                    ..call.clone()
                };
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
