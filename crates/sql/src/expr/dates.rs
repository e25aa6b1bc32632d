//! `extract`, `date_part` and `date_trunc` over a value (see `values::fields`).

use super::Func;
use crate::error::Result;
use crate::values::datum::Datum;
use crate::values::fields::{self, FieldValue};
use crate::values::numeric::Num;
use crate::values::time::{MICROS_PER_DAY, midnight};

/// `f` (Extract, DatePart or DateTrunc) of `field` over `value` (NULL for NULL).
pub(super) fn eval(f: Func, field: &str, value: Datum) -> Result<Datum> {
    if f == Func::DateTrunc {
        return Ok(match value {
            Datum::Timestamp(t) => Datum::Timestamp(fields::truncate(field, t)?),
            Datum::TimestampTz(t) => Datum::TimestampTz(fields::truncate(field, t)?),
            // A date is taken as midnight (with time zone) of its day, as PostgreSQL casts it.
            Datum::Date(d) => Datum::TimestampTz(fields::truncate(field, midnight(d))?),
            Datum::Interval(iv) => Datum::Interval(fields::truncate_interval(field, &iv)?),
            _ => Datum::Null,
        });
    }
    let v = match value {
        Datum::Timestamp(t) => fields::of_timestamp(field, t, "timestamp without time zone")?,
        Datum::TimestampTz(t) => fields::of_timestamp(field, t, "timestamp with time zone")?,
        Datum::Date(d) => fields::of_timestamp(field, midnight(d), "date")?,
        Datum::Time(t) => fields::of_timestamp(
            field,
            t.rem_euclid(MICROS_PER_DAY),
            "time without time zone",
        )?,
        Datum::Interval(iv) => fields::of_interval(field, &iv)?,
        _ => return Ok(Datum::Null),
    };
    Ok(match (f, v) {
        (Func::DatePart, FieldValue::Whole(n)) => Datum::Float(n as f64),
        (Func::DatePart, FieldValue::Micros(us)) => Datum::Float(us as f64 / 1e6),
        (_, FieldValue::Whole(n)) => Datum::Numeric(Num::from_i64(n)),
        (_, FieldValue::Micros(us)) => {
            // Seconds with six digits after the point, as PostgreSQL's extract gives them.
            let sign = if us < 0 { "-" } else { "" };
            let text = format!(
                "{sign}{}.{:06}",
                us.unsigned_abs() / 1_000_000,
                us.unsigned_abs() % 1_000_000
            );
            Datum::Numeric(Num::parse(&text)?.unwrap_or_else(|| Num::from_i64(0)))
        }
    })
}
