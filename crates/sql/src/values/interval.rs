//! Intervals as PostgreSQL keeps them: months, days and microseconds apart (a month is not a
//! fixed number of days, nor a day of hours across a clock change), read from PostgreSQL's text
//! forms (`1 day 02:00:00`, `3 hours 20 mins`, `-1 mon`, `2 weeks ago`), shown as its default
//! `IntervalStyle` shows them, and added to timestamps by the calendar.

use std::cmp::Ordering;
use std::fmt;

const MICROS_PER_SECOND: i64 = 1_000_000;
const MICROS_PER_HOUR: i64 = 3_600 * MICROS_PER_SECOND;
const MICROS_PER_DAY: i64 = 24 * MICROS_PER_HOUR;

/// An interval: months, days and microseconds, each with its own sign.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Interval {
    pub months: i32,
    pub days: i32,
    pub micros: i64,
}

impl Interval {
    /// Parses PostgreSQL's text forms; `None` if `text` is not an interval.
    pub fn parse(text: &str) -> Option<Interval> {
        let lower = text.trim().to_ascii_lowercase();
        let (body, ago) = match lower.strip_suffix("ago") {
            Some(b) => (b.trim_end().to_owned(), true),
            None => (lower, false),
        };
        let mut iv = Interval::default();
        let mut words = body.split_whitespace().peekable();
        let mut any = false;
        while let Some(word) = words.next() {
            any = true;
            let word = word.trim_start_matches('@');
            if word.is_empty() {
                continue;
            }
            if word.contains(':') {
                iv.micros = iv.micros.checked_add(clock(word)?)?;
                continue;
            }
            // A number, with its unit in the same word (`3h`) or the next.
            let split = word
                .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+'))
                .unwrap_or(word.len());
            let (number, unit) = word.split_at(split);
            let number: f64 = number.parse().ok()?;
            // A number alone is seconds.
            let unit = if unit.is_empty() {
                words.next().unwrap_or("seconds").to_owned()
            } else {
                unit.to_owned()
            };
            iv = iv.add(&Self::of_unit(number, unit.trim_end_matches(','))?)?;
        }
        if !any {
            return None;
        }
        Some(if ago { iv.negate()? } else { iv })
    }

    /// `number` of `unit` (fractions spill into the smaller fields, as PostgreSQL's do).
    fn of_unit(number: f64, unit: &str) -> Option<Interval> {
        let per_micros = match unit {
            "microsecond" | "microseconds" | "us" | "usec" | "usecs" => Some(1),
            "millisecond" | "milliseconds" | "ms" | "msec" | "msecs" => Some(1_000),
            "second" | "seconds" | "s" | "sec" | "secs" => Some(MICROS_PER_SECOND),
            "minute" | "minutes" | "m" | "min" | "mins" => Some(60 * MICROS_PER_SECOND),
            "hour" | "hours" | "h" | "hr" | "hrs" => Some(MICROS_PER_HOUR),
            _ => None,
        };
        if let Some(per) = per_micros {
            let v = (number * per as f64).round();
            return (v.abs() < 9.2e18).then(|| Interval {
                micros: v as i64,
                ..Interval::default()
            });
        }
        let (per_day, per_month) = match unit {
            "day" | "days" | "d" => (1.0, 0.0),
            "week" | "weeks" | "w" => (7.0, 0.0),
            "month" | "months" | "mon" | "mons" => (0.0, 1.0),
            "year" | "years" | "y" | "yr" | "yrs" => (0.0, 12.0),
            "decade" | "decades" => (0.0, 120.0),
            "century" | "centuries" => (0.0, 1200.0),
            _ => return None,
        };
        let m = number * per_month;
        let whole_months = m.trunc();
        // A fraction of a month is 30 days; a fraction of a day, hours.
        let d = number * per_day + (m - whole_months) * 30.0;
        let whole_days = d.trunc();
        let fields_fit = whole_months.abs() < 2.1e9 && whole_days.abs() < 2.1e9;
        fields_fit.then(|| Interval {
            months: whole_months as i32,
            days: whole_days as i32,
            micros: ((d - whole_days) * MICROS_PER_DAY as f64).round() as i64,
        })
    }

    pub fn add(&self, other: &Interval) -> Option<Interval> {
        Some(Interval {
            months: self.months.checked_add(other.months)?,
            days: self.days.checked_add(other.days)?,
            micros: self.micros.checked_add(other.micros)?,
        })
    }

    pub fn negate(&self) -> Option<Interval> {
        Some(Interval {
            months: self.months.checked_neg()?,
            days: self.days.checked_neg()?,
            micros: self.micros.checked_neg()?,
        })
    }

    /// Its span with a month as 30 days and a day as 24 hours: how PostgreSQL orders intervals.
    fn span(&self) -> i128 {
        (i128::from(self.months) * 30 + i128::from(self.days)) * i128::from(MICROS_PER_DAY)
            + i128::from(self.micros)
    }

    /// The interval from `b` to `a` (timestamps in microseconds), in days and time as
    /// PostgreSQL's `timestamp - timestamp` gives it.
    pub fn between(a: i64, b: i64) -> Option<Interval> {
        let d = a.checked_sub(b)?;
        Some(Interval {
            months: 0,
            days: i32::try_from(d / MICROS_PER_DAY).ok()?,
            micros: d % MICROS_PER_DAY,
        })
    }

    /// `micros` (a timestamp) moved by this interval: months by the calendar (the day kept, or
    /// the month's last), then days, then time.
    pub fn add_to(&self, micros: i64) -> Option<i64> {
        let days = micros.div_euclid(MICROS_PER_DAY);
        let time = micros.rem_euclid(MICROS_PER_DAY);
        let days = if self.months == 0 {
            days
        } else {
            crate::values::time::add_months(days, self.months)?
        };
        days.checked_add(i64::from(self.days))?
            .checked_mul(MICROS_PER_DAY)?
            .checked_add(time)?
            .checked_add(self.micros)
    }
}

impl PartialOrd for Interval {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Interval {
    fn cmp(&self, other: &Self) -> Ordering {
        self.span().cmp(&other.span())
    }
}

/// `HH:MM[:SS[.ffffff]]`, with a sign, in microseconds.
fn clock(word: &str) -> Option<i64> {
    let (sign, word) = match word.strip_prefix('-') {
        Some(w) => (-1, w),
        None => (1, word.strip_prefix('+').unwrap_or(word)),
    };
    let mut parts = word.split(':');
    let h: i64 = parts.next()?.parse().ok()?;
    let m: i64 = parts.next()?.parse().ok()?;
    let s: f64 = match parts.next() {
        Some(s) => s.parse().ok()?,
        None => 0.0,
    };
    if parts.next().is_some() || !(0..60).contains(&m) || !(0.0..60.0).contains(&s) {
        return None;
    }
    Some(sign * ((h * 60 + m) * 60 * MICROS_PER_SECOND + (s * 1e6).round() as i64))
}

impl fmt::Display for Interval {
    /// PostgreSQL's `postgres` style: `1 year 2 mons -3 days +04:05:06.5`, `00:00:00` for none.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts: Vec<String> = Vec::new();
        let (years, months) = (self.months / 12, self.months % 12);
        let plural =
            |n: i32, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
        if years != 0 {
            parts.push(plural(years, "year", "years"));
        }
        if months != 0 {
            parts.push(plural(months, "mon", "mons"));
        }
        if self.days != 0 {
            parts.push(plural(self.days, "day", "days"));
        }
        if self.micros != 0 || parts.is_empty() {
            let negative = self.micros < 0;
            let us = self.micros.unsigned_abs();
            let (h, rest) = (us / MICROS_PER_HOUR as u64, us % MICROS_PER_HOUR as u64);
            let (m, rest) = (rest / 60_000_000, rest % 60_000_000);
            let (s, frac) = (rest / 1_000_000, rest % 1_000_000);
            // A time after negative fields carries its own sign, as PostgreSQL writes it.
            let sign = if negative {
                "-"
            } else if self.months < 0 || self.days < 0 {
                "+"
            } else {
                ""
            };
            let mut clock = format!("{sign}{h:02}:{m:02}:{s:02}");
            if frac != 0 {
                clock.push_str(format!(".{frac:06}").trim_end_matches('0'));
            }
            parts.push(clock);
        }
        f.write_str(&parts.join(" "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_read_and_show_as_postgresqls() {
        for (text, shown) in [
            ("1 day", "1 day"),
            ("2 days 03:04:05", "2 days 03:04:05"),
            ("3 hours 20 mins", "03:20:00"),
            ("1 year 2 months", "1 year 2 mons"),
            ("-1 mon", "-1 mons"),
            ("1 day ago", "-1 days"),
            ("1.5 days", "1 day 12:00:00"),
            ("2 weeks", "14 days"),
            ("0", "00:00:00"),
            ("-1 days 02:00:00", "-1 days +02:00:00"),
            ("90 seconds", "00:01:30"),
            ("500 ms", "00:00:00.5"),
        ] {
            let iv = Interval::parse(text).unwrap_or_else(|| panic!("{text}"));
            assert_eq!(iv.to_string(), shown, "{text}");
        }
        assert_eq!(Interval::parse("3 parsecs"), None);
        assert_eq!(Interval::parse(""), None);
    }
}
