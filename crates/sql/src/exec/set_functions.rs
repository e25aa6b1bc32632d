//! The set-returning functions' values (`unnest`, `generate_series`, `generate_subscripts`),
//! each a list held against the statement's memory budget: a series past it fails with 53200
//! rather than grow the server without bound.

use crate::error::{Result, SqlError, sqlstate};
use crate::plan::SetFunc;
use crate::values::datum::Datum;
use crate::values::interval::Interval;
use crate::values::json;

/// The values `func` makes for `args`; `take` is asked for the bytes of each as it is made.
pub(super) fn values(
    func: SetFunc,
    args: Vec<Datum>,
    take: &mut dyn FnMut(usize) -> Result<()>,
) -> Result<Vec<Datum>> {
    let mut args = args.into_iter();
    let mut next = || args.next().unwrap_or(Datum::Null);
    Ok(match func {
        SetFunc::Unnest => match next() {
            Datum::Array(v) => {
                take(v.len() * std::mem::size_of::<Datum>())?;
                v
            }
            _ => Vec::new(),
        },
        SetFunc::GenerateSubscripts => match (next(), next()) {
            (Datum::Array(v), Datum::Int(1)) => (1..=v.len() as i64).map(Datum::Int).collect(),
            _ => Vec::new(),
        },
        SetFunc::GenerateSeries => {
            let (start, stop, step) = (next(), next(), next());
            series(start, stop, step, take)?
        }
        SetFunc::PartitionAncestors => Vec::new(),
        SetFunc::JsonArrayElements { jsonb, text } => match next().to_text() {
            Some(doc) => {
                let items = json::elements(&doc, !jsonb, text)?;
                take(
                    items
                        .iter()
                        .map(|i| i.as_ref().map_or(0, String::len))
                        .sum(),
                )?;
                items
                    .into_iter()
                    .map(|i| i.map_or(Datum::Null, Datum::Text))
                    .collect()
            }
            None => Vec::new(),
        },
        SetFunc::JsonbObjectKeys => match next().to_text() {
            Some(doc) => {
                let keys = json::keys(&doc)?;
                take(keys.iter().map(String::len).sum())?;
                keys.into_iter().map(Datum::Text).collect()
            }
            None => Vec::new(),
        },
    })
}

/// `generate_series(start, stop [, step])` over integers, numerics or timestamps.
fn series(
    start: Datum,
    stop: Datum,
    step: Datum,
    take: &mut dyn FnMut(usize) -> Result<()>,
) -> Result<Vec<Datum>> {
    if start.is_null() || stop.is_null() {
        return Ok(Vec::new());
    }
    let timestamps = matches!(start, Datum::Timestamp(_) | Datum::TimestampTz(_));
    let step = match step {
        Datum::Null if timestamps => return Ok(Vec::new()),
        Datum::Null => Datum::Int(1),
        s => s,
    };
    let zero = match &step {
        Datum::Interval(iv) => *iv == Interval::default(),
        s => s.sql_cmp(&Datum::Int(0))? == Some(std::cmp::Ordering::Equal),
    };
    if zero {
        return Err(SqlError::new(
            sqlstate::INVALID_PARAMETER_VALUE,
            "step size cannot equal zero",
        ));
    }
    let up = match &step {
        Datum::Interval(iv) => (iv.months, iv.days, iv.micros) > (0, 0, 0),
        s => s.sql_cmp(&Datum::Int(0))? == Some(std::cmp::Ordering::Greater),
    };
    let mut out = Vec::new();
    let mut v = start;
    loop {
        let past = match v.sql_cmp(&stop)? {
            Some(o) if up => o == std::cmp::Ordering::Greater,
            Some(o) => o == std::cmp::Ordering::Less,
            None => true,
        };
        if past {
            return Ok(out);
        }
        take(std::mem::size_of::<Datum>())?;
        let after = match v.arith('+', &step) {
            Ok(a) => Some(a),
            // Past the type's range: the series ends with this value.
            Err(e) if e.code == sqlstate::NUMERIC_VALUE_OUT_OF_RANGE => None,
            Err(e) => return Err(e),
        };
        out.push(v);
        match after {
            Some(a) => v = a,
            None => return Ok(out),
        }
    }
}
