//! Dates and timestamps as text: `YYYY-MM-DD`, `YYYY-MM-DD HH:MM:SS[.ffffff]`, and with a time
//! zone `...+00`; days or microseconds since 1970-01-01 (a timestamp with time zone in UTC, the
//! one zone sessions show), the proleptic Gregorian calendar by day counts.

pub const MICROS_PER_DAY: i64 = 86_400_000_000;

/// Days since 1970-01-01 of a civil date.
pub(crate) fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The civil date of a day count since 1970-01-01.
pub(crate) fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (
        if m <= 2 {
            yoe + era * 400 + 1
        } else {
            yoe + era * 400
        },
        m,
        d,
    )
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Years a timestamp may have (PostgreSQL's range, without its BC years).
const YEARS: std::ops::RangeInclusive<i64> = 1..=294_276;

/// Whether a timestamp lies within the years timestamps hold.
pub fn in_range(micros: i64) -> bool {
    YEARS.contains(&civil_from_days(micros.div_euclid(MICROS_PER_DAY)).0)
}

/// Days since 1970-01-01 of a `YYYY-MM-DD` date; `None` if it is not one.
pub fn parse_date(date: &str) -> Option<i64> {
    let mut parts = date.trim().splitn(3, '-');
    let y: i64 = parts.next()?.parse().ok()?;
    let m: i64 = parts.next()?.parse().ok()?;
    let d: i64 = parts.next()?.parse().ok()?;
    if !(1..=12).contains(&m) || d < 1 || d > days_in_month(y, m) || !YEARS.contains(&y) {
        return None;
    }
    Some(days_from_civil(y, m, d))
}

/// Whether `text`, which did not parse, has a date's (and time's) shape with a field out of its
/// range (`2024-13-01`, `2023-02-29`, `24:00:01`): PostgreSQL tells that apart (22008) from text
/// that is no date at all (22007).
pub fn field_out_of_range(text: &str) -> bool {
    let (date, time) = match text.trim().split_once([' ', 'T']) {
        Some((d, t)) => (d, Some(t)),
        None => (text.trim(), None),
    };
    let numbers = |s: &str, sep: char| -> Option<Vec<i64>> {
        s.split(sep).map(|p| p.trim().parse().ok()).collect()
    };
    let Some(ymd) = numbers(date, '-').filter(|f| f.len() == 3) else {
        return false;
    };
    let (y, m, d) = (ymd[0], ymd[1], ymd[2]);
    if !(1..=12).contains(&m) || d < 1 || d > days_in_month(y, m) || !YEARS.contains(&y) {
        return true;
    }
    let Some(hms) = time
        .and_then(|t| split_zone(t))
        .and_then(|(t, _)| numbers(t.split('.').next().unwrap_or(t), ':'))
    else {
        return false;
    };
    hms.first().is_some_and(|h| !(0..24).contains(h))
        || hms.iter().skip(1).any(|v| !(0..60).contains(v))
}

/// A date as PostgreSQL shows it (ISO).
pub fn format_date(days: i64) -> String {
    let (y, m, d) = civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02}")
}

/// Splits a time of day from its zone (`Z`, `UTC`, `+05`, `-05:30`, `+0530`): the time and the
/// zone's offset east of UTC in seconds, if it has one. `None` if the zone is not one.
fn split_zone(time: &str) -> Option<(&str, Option<i64>)> {
    let time = time.trim();
    if let Some(t) = time.strip_suffix('Z').or_else(|| time.strip_suffix("UTC")) {
        return Some((t.trim(), Some(0)));
    }
    let Some(at) = time.find(['+', '-']) else {
        return Some((time, None));
    };
    let (t, zone) = time.split_at(at);
    let sign = if zone.starts_with('-') { -1 } else { 1 };
    let digits: String = zone[1..].chars().filter(|c| *c != ':').collect();
    if digits.is_empty() || digits.len() > 6 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let (h, rest) = digits.split_at(digits.len().min(2));
    let (m, s) = rest.split_at(rest.len().min(2));
    let field = |f: &str| {
        if f.is_empty() {
            Some(0)
        } else {
            f.parse::<i64>().ok()
        }
    };
    let (h, m, s) = (field(h)?, field(m)?, field(s)?);
    if h > 15 || m > 59 || s > 59 {
        return None;
    }
    Some((t.trim(), Some(sign * ((h * 60 + m) * 60 + s))))
}

/// Parses a timestamp; `None` if it is not one. A zone it names is ignored, as PostgreSQL's
/// timestamp without time zone ignores it.
pub fn parse_timestamp(text: &str) -> Option<i64> {
    parse_zoned(text).map(|(micros, _)| micros)
}

/// Parses a timestamp with time zone: the instant in UTC (a timestamp without a zone is one in
/// UTC, the sessions' zone).
pub fn parse_timestamptz(text: &str) -> Option<i64> {
    let (micros, offset) = parse_zoned(text)?;
    let utc = micros.checked_sub(offset.unwrap_or(0) * 1_000_000)?;
    in_range(utc).then_some(utc)
}

/// A timestamp's local microseconds and its zone's offset, if it names one.
fn parse_zoned(text: &str) -> Option<(i64, Option<i64>)> {
    let (date, time) = match text.trim().split_once([' ', 'T']) {
        Some((d, t)) => (d, Some(t.trim())),
        None => (text.trim(), None),
    };
    let mut micros = parse_date(date)? * MICROS_PER_DAY;
    let mut offset = None;
    if let Some(time) = time {
        let (time, zone) = split_zone(time)?;
        offset = zone;
        // A date with a zone alone is its midnight there (pgjdbc sends dates so: `... +00`).
        if !(time.is_empty() && zone.is_some()) {
            micros += parse_clock(time).filter(|m| *m < MICROS_PER_DAY)?;
        }
    }
    Some((micros, offset))
}

/// A time of day `h:mm[:ss[.ffffff]]` in microseconds since midnight (24:00:00 included, as
/// PostgreSQL's `time` takes it); `None` if it is not one.
fn parse_clock(time: &str) -> Option<i64> {
    let mut hms = time.splitn(3, ':');
    let h: i64 = hms.next()?.trim().parse().ok()?;
    let min: i64 = hms.next()?.trim().parse().ok()?;
    let (s, frac) = match hms.next() {
        Some(sec) => match sec.split_once('.') {
            Some((s, f)) => (s.parse().ok()?, f),
            None => (sec.parse().ok()?, ""),
        },
        None => (0i64, ""),
    };
    if !(0..=24).contains(&h) || !(0..60).contains(&min) || !(0..60).contains(&s) {
        return None;
    }
    if frac.len() > 6 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let frac_micros = if frac.is_empty() {
        0
    } else {
        frac.parse::<i64>().ok()? * 10i64.pow(6 - frac.len() as u32)
    };
    let micros = ((h * 60 + min) * 60 + s) * 1_000_000 + frac_micros;
    (micros <= MICROS_PER_DAY).then_some(micros)
}

/// Parses a `time` (without time zone): `13:45`, `1:02:03.5`, `1:00 pm`, `allballs`, or a
/// timestamp's time; a zone it names is ignored, as PostgreSQL ignores it.
pub fn parse_time(text: &str) -> Option<i64> {
    let t = text.trim();
    if t.eq_ignore_ascii_case("allballs") {
        return Some(0);
    }
    // A timestamp's text gives its time.
    let t = match t.split_once([' ', 'T']) {
        Some((date, time)) if parse_date(date).is_some() => time.trim(),
        _ => t,
    };
    let lower = t.to_ascii_lowercase();
    let (clock, pm) = match lower.strip_suffix("am") {
        Some(c) => (c.trim(), Some(false)),
        None => match lower.strip_suffix("pm") {
            Some(c) => (c.trim(), Some(true)),
            None => (lower.as_str(), None),
        },
    };
    let (clock, _) = split_zone(clock)?;
    let micros = parse_clock(clock)?;
    let Some(pm) = pm else {
        return Some(micros);
    };
    // 12 am is midnight and 12 pm noon; an hour past 12 takes no am or pm.
    const HOUR: i64 = 3_600_000_000;
    let hour = micros / HOUR;
    if !(1..=12).contains(&hour) || micros >= 13 * HOUR {
        return None;
    }
    Some(match (pm, hour) {
        (false, 12) => micros - 12 * HOUR,
        (true, 12) | (false, _) => micros,
        (true, _) => micros + 12 * HOUR,
    })
}

/// Whether `text`, which did not parse as a time, has a time's shape (`25:00`, `24:00:01`), so
/// a field is out of range: 22008 in PostgreSQL, not 22007.
pub fn time_field_out_of_range(text: &str) -> bool {
    let fields: Option<Vec<i64>> = text
        .trim()
        .split('.')
        .next()
        .unwrap_or("")
        .split(':')
        .map(|f| f.trim().parse().ok())
        .collect();
    matches!(fields, Some(f) if (2..=3).contains(&f.len()))
}

/// Microseconds since midnight as `hh:mm:ss[.ffffff]`, trailing zeros of the fraction dropped.
fn format_clock(micros: i64) -> String {
    let secs = micros / 1_000_000;
    let frac = micros % 1_000_000;
    let mut s = format!("{:02}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60);
    if frac != 0 {
        let f = format!("{frac:06}");
        s.push('.');
        s.push_str(f.trim_end_matches('0'));
    }
    s
}

/// A `time` as PostgreSQL shows it.
pub fn format_time(micros: i64) -> String {
    format_clock(micros)
}

/// Formats a timestamp as PostgreSQL does (fractional seconds only when there are any).
pub fn format_timestamp(micros: i64) -> String {
    let days = micros.div_euclid(MICROS_PER_DAY);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02} {}",
        format_clock(micros.rem_euclid(MICROS_PER_DAY))
    )
}

/// Formats a timestamp with time zone as PostgreSQL does in a session whose zone is UTC.
pub fn format_timestamptz(micros: i64) -> String {
    let mut s = format_timestamp(micros);
    s.push_str("+00");
    s
}

/// `days` (since 1970-01-01) moved by `months` by the calendar: the same day of the month, or
/// the month's last if it has fewer.
pub fn add_months(days: i64, months: i32) -> Option<i64> {
    let (y, m, d) = civil_from_days(days);
    let total = y.checked_mul(12)? + (m - 1) + i64::from(months);
    let (y, m) = (total.div_euclid(12), total.rem_euclid(12) + 1);
    Some(days_from_civil(y, m, d.min(days_in_month(y, m))))
}

/// The day of a timestamp (days since 1970-01-01).
pub fn day_of(micros: i64) -> i64 {
    micros.div_euclid(MICROS_PER_DAY)
}

/// The timestamp of a day's midnight.
pub fn midnight(days: i64) -> i64 {
    days * MICROS_PER_DAY
}

/// Now, in microseconds since the epoch.
pub fn now_micros() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_round_trip_through_text() {
        for text in [
            "1970-01-01 00:00:00",
            "2000-02-29 23:59:59.5",
            "1969-12-31 23:59:59.999999",
            "2026-11-27 17:24:31.123",
        ] {
            let micros = parse_timestamp(text).expect(text);
            assert_eq!(format_timestamp(micros), text);
        }
        assert_eq!(parse_timestamp("1970-01-02"), Some(MICROS_PER_DAY));
        assert_eq!(parse_timestamp("2023-02-29 00:00:00"), None);
        assert_eq!(parse_timestamp("yesterday"), None);
    }
}

#[cfg(test)]
mod zone_tests {
    use super::*;

    #[test]
    fn zones_move_a_timestamp_with_time_zone_and_leave_one_without_alone() {
        let noon = parse_timestamp("2024-03-01 12:00:00").expect("noon");
        assert_eq!(parse_timestamp("2024-03-01 12:00:00+05"), Some(noon));
        assert_eq!(parse_timestamp("2024-03-01 12:00:00-05"), Some(noon));
        let hour = 3_600_000_000;
        assert_eq!(
            parse_timestamptz("2024-03-01 12:00:00+05"),
            Some(noon - 5 * hour)
        );
        assert_eq!(
            parse_timestamptz("2024-03-01 12:00:00-05:30"),
            Some(noon + 11 * hour / 2)
        );
        assert_eq!(parse_timestamptz("2024-03-01T12:00:00Z"), Some(noon));
        assert_eq!(parse_timestamptz("2024-03-01 12:00:00"), Some(noon));
        assert_eq!(parse_timestamptz("2024-03-01 12:00:00+99"), None);
        assert_eq!(format_timestamptz(noon), "2024-03-01 12:00:00+00");
        assert_eq!(
            parse_date("2024-02-29").map(format_date).as_deref(),
            Some("2024-02-29")
        );
        assert_eq!(parse_date("2023-02-29"), None);
    }
}
