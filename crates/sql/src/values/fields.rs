//! The fields of dates, timestamps and intervals (`extract`, `date_part`) and timestamps
//! truncated to one (`date_trunc`), by PostgreSQL's rules: ISO weeks start on Monday, `dow`
//! counts from Sunday (0), `epoch` is seconds since 1970-01-01, and seconds carry their
//! fraction.

use crate::error::{Result, SqlError, sqlstate};
use crate::values::interval::Interval;
use crate::values::time::{MICROS_PER_DAY, civil_from_days, days_from_civil};

const MICROS_PER_SECOND: i64 = 1_000_000;

/// 22023: `field` is not one `what` has.
fn unknown(field: &str, what: &str) -> SqlError {
    SqlError::new(
        sqlstate::INVALID_PARAMETER_VALUE,
        format!("unit \"{field}\" not recognized for type {what}"),
    )
}

/// A field's value: a whole number, or seconds with their microseconds (`extract` gives it as
/// a numeric of scale 6).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldValue {
    Whole(i64),
    Micros(i64),
}

/// The ISO 8601 year and week of a day (days since 1970-01-01).
fn iso_week(days: i64) -> (i64, i64) {
    // Monday = 0.
    let weekday = (days + 3).rem_euclid(7);
    let thursday = days - weekday + 3;
    let (year, _, _) = civil_from_days(thursday);
    let first = days_from_civil(year, 1, 1);
    (year, (thursday - first) / 7 + 1)
}

/// Field `field` (lower case) of a timestamp of `micros` since the epoch.
pub fn of_timestamp(field: &str, micros: i64, what: &str) -> Result<FieldValue> {
    let days = micros.div_euclid(MICROS_PER_DAY);
    let in_day = micros.rem_euclid(MICROS_PER_DAY);
    let (y, m, d) = civil_from_days(days);
    Ok(FieldValue::Whole(match field {
        "year" | "years" => y,
        "month" | "months" => m,
        "day" | "days" => d,
        "hour" | "hours" => in_day / (3600 * MICROS_PER_SECOND),
        "minute" | "minutes" => in_day / (60 * MICROS_PER_SECOND) % 60,
        "second" | "seconds" => return Ok(FieldValue::Micros(in_day % (60 * MICROS_PER_SECOND))),
        "millisecond" | "milliseconds" => {
            return Ok(FieldValue::Micros(in_day % (60 * MICROS_PER_SECOND) * 1000));
        }
        "microsecond" | "microseconds" => in_day % (60 * MICROS_PER_SECOND),
        "epoch" => return Ok(FieldValue::Micros(micros)),
        "dow" => (days + 4).rem_euclid(7),
        "isodow" => (days + 3).rem_euclid(7) + 1,
        "doy" => days - days_from_civil(y, 1, 1) + 1,
        "week" => iso_week(days).1,
        "isoyear" => iso_week(days).0,
        "quarter" => (m - 1) / 3 + 1,
        "decade" => y.div_euclid(10),
        "century" => (y - 1).div_euclid(100) + 1,
        "millennium" => (y - 1).div_euclid(1000) + 1,
        "timezone" | "timezone_hour" | "timezone_minute" => 0,
        other => return Err(unknown(other, what)),
    }))
}

/// Field `field` of an interval.
pub fn of_interval(field: &str, iv: &Interval) -> Result<FieldValue> {
    let micros = iv.micros;
    Ok(FieldValue::Whole(match field {
        "year" | "years" => i64::from(iv.months) / 12,
        "month" | "months" => i64::from(iv.months) % 12,
        "day" | "days" => i64::from(iv.days),
        "hour" | "hours" => micros / (3600 * MICROS_PER_SECOND),
        "minute" | "minutes" => micros / (60 * MICROS_PER_SECOND) % 60,
        "second" | "seconds" => return Ok(FieldValue::Micros(micros % (60 * MICROS_PER_SECOND))),
        "epoch" => {
            // A month is 30 days and a year 365.25, as PostgreSQL counts them.
            let years = i64::from(iv.months) / 12;
            let months = i64::from(iv.months) % 12;
            let seconds = years * 31_557_600 + months * 30 * 86_400 + i64::from(iv.days) * 86_400;
            return Ok(FieldValue::Micros(seconds * MICROS_PER_SECOND + micros));
        }
        other => return Err(unknown(other, "interval")),
    }))
}

/// A timestamp truncated to `field`: the start of its year, month, week (Monday), day, hour...
pub fn truncate(field: &str, micros: i64) -> Result<i64> {
    let days = micros.div_euclid(MICROS_PER_DAY);
    let in_day = micros.rem_euclid(MICROS_PER_DAY);
    let (y, m, _) = civil_from_days(days);
    let at_day = |d: i64| d * MICROS_PER_DAY;
    Ok(match field {
        "microseconds" | "microsecond" => micros,
        "milliseconds" | "millisecond" => micros - micros.rem_euclid(1000),
        "second" | "seconds" => micros - micros.rem_euclid(MICROS_PER_SECOND),
        "minute" | "minutes" => micros - micros.rem_euclid(60 * MICROS_PER_SECOND),
        "hour" | "hours" => micros - micros.rem_euclid(3600 * MICROS_PER_SECOND),
        "day" | "days" => micros - in_day,
        "week" | "weeks" => at_day(days - (days + 3).rem_euclid(7)),
        "month" | "months" => at_day(days_from_civil(y, m, 1)),
        "quarter" => at_day(days_from_civil(y, (m - 1) / 3 * 3 + 1, 1)),
        "year" | "years" => at_day(days_from_civil(y, 1, 1)),
        "decade" => at_day(days_from_civil(y - y.rem_euclid(10), 1, 1)),
        "century" => at_day(days_from_civil((y - 1).div_euclid(100) * 100 + 1, 1, 1)),
        "millennium" => at_day(days_from_civil((y - 1).div_euclid(1000) * 1000 + 1, 1, 1)),
        other => return Err(unknown(other, "timestamp")),
    })
}

/// An interval truncated to `field`.
pub fn truncate_interval(field: &str, iv: &Interval) -> Result<Interval> {
    let micros = iv.micros;
    let keep = |unit: i64| micros - micros % unit;
    Ok(match field {
        "year" | "years" => Interval {
            months: iv.months - iv.months % 12,
            days: 0,
            micros: 0,
        },
        "month" | "months" => Interval {
            days: 0,
            micros: 0,
            ..*iv
        },
        "day" | "days" => Interval { micros: 0, ..*iv },
        "hour" | "hours" => Interval {
            micros: keep(3600 * MICROS_PER_SECOND),
            ..*iv
        },
        "minute" | "minutes" => Interval {
            micros: keep(60 * MICROS_PER_SECOND),
            ..*iv
        },
        "second" | "seconds" => Interval {
            micros: keep(MICROS_PER_SECOND),
            ..*iv
        },
        other => return Err(unknown(other, "interval")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(y: i64, m: i64, d: i64, h: i64, mi: i64, s: i64) -> i64 {
        days_from_civil(y, m, d) * MICROS_PER_DAY + ((h * 60 + mi) * 60 + s) * MICROS_PER_SECOND
    }

    #[test]
    fn fields_are_postgresqls() {
        let t = ts(2024, 5, 17, 10, 11, 12) + 345_000;
        assert_eq!(
            of_timestamp("year", t, "").unwrap(),
            FieldValue::Whole(2024)
        );
        assert_eq!(
            of_timestamp("second", t, "").unwrap(),
            FieldValue::Micros(12_345_000)
        );
        assert_eq!(of_timestamp("dow", t, "").unwrap(), FieldValue::Whole(5));
        assert_eq!(of_timestamp("doy", t, "").unwrap(), FieldValue::Whole(138));
        assert_eq!(
            of_timestamp("quarter", t, "").unwrap(),
            FieldValue::Whole(2)
        );
        assert_eq!(
            of_timestamp("week", ts(2024, 1, 1, 0, 0, 0), "").unwrap(),
            FieldValue::Whole(1)
        );
        assert_eq!(
            of_timestamp("week", ts(2021, 1, 3, 0, 0, 0), "").unwrap(),
            FieldValue::Whole(53)
        );
        assert!(of_timestamp("fortnight", t, "").is_err());
    }

    #[test]
    fn truncation_goes_to_the_start_of_the_unit() {
        let t = ts(2024, 5, 17, 10, 11, 12);
        assert_eq!(truncate("month", t).unwrap(), ts(2024, 5, 1, 0, 0, 0));
        assert_eq!(truncate("week", t).unwrap(), ts(2024, 5, 13, 0, 0, 0));
        assert_eq!(truncate("hour", t).unwrap(), ts(2024, 5, 17, 10, 0, 0));
        assert_eq!(truncate("quarter", t).unwrap(), ts(2024, 4, 1, 0, 0, 0));
        assert_eq!(truncate("century", t).unwrap(), ts(2001, 1, 1, 0, 0, 0));
    }
}
