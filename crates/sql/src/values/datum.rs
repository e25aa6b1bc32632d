//! Values in flight: what expressions compute and rows carry between the engine and the client.
//! Comparison and arithmetic follow PostgreSQL (NULL propagates; numbers of different types
//! compare by value; integer overflow and division by zero are errors, not wraparound), as do the
//! text forms clients send and receive.

use std::cmp::Ordering;

use overtake_engine::{Decimal, NumericParts, Value};

use crate::error::{Result, SqlError, sqlstate};
use crate::values::interval::Interval;
use crate::values::numeric::{Num, division_by_zero};
use crate::values::time;
use crate::values::types::{NAME_MAX, SqlType, Typmod};

/// The longest prefix of `s` of at most `bytes` bytes that ends on a character boundary.
fn byte_prefix(mut s: String, bytes: usize) -> String {
    if s.len() > bytes {
        let mut end = bytes;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
    }
    s
}

/// A value.
#[derive(Debug, PartialEq)]
pub enum Datum {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Numeric(Num),
    Text(String),
    Timestamp(i64),
    /// An instant: microseconds since the epoch, UTC.
    TimestampTz(i64),
    /// Days since 1970-01-01.
    Date(i64),
    /// Microseconds since midnight.
    Time(i64),
    Interval(Interval),
    /// A `tid`: block and offset as `block << 16 | offset` (see `values::tid`).
    Tid(u64),
    /// A one-dimensional array's elements.
    Array(Vec<Datum>),
}

impl Clone for Datum {
    /// Values of fixed size are copied in place; only strings, numerics, intervals and arrays
    /// go through a call (joins clone every value they pass on: the derived clone, never
    /// inlined, was a tenth of CH Q15's time).
    #[inline]
    fn clone(&self) -> Datum {
        match self {
            Datum::Null => Datum::Null,
            Datum::Bool(b) => Datum::Bool(*b),
            Datum::Int(i) => Datum::Int(*i),
            Datum::Float(f) => Datum::Float(*f),
            Datum::Timestamp(t) => Datum::Timestamp(*t),
            Datum::TimestampTz(t) => Datum::TimestampTz(*t),
            Datum::Date(d) => Datum::Date(*d),
            Datum::Time(t) => Datum::Time(*t),
            _ => self.clone_allocated(),
        }
    }
}

impl Datum {
    #[inline(never)]
    fn clone_allocated(&self) -> Datum {
        match self {
            Datum::Numeric(n) => Datum::Numeric(n.clone()),
            Datum::Text(s) => Datum::Text(s.clone()),
            Datum::Interval(i) => Datum::Interval(*i),
            Datum::Tid(t) => Datum::Tid(*t),
            Datum::Array(items) => Datum::Array(items.clone()),
            other => other.clone(),
        }
    }
}

/// A value in the form the engine stores it: borrowed from a [`Datum`], or a numeric of any
/// precision encoded for the engine.
#[derive(Debug)]
pub enum Stored<'a> {
    Value(Value<'a>),
    Numeric(Vec<u8>),
    /// A value kept as its text (an array).
    Text(String),
}

impl Stored<'_> {
    /// The engine's value.
    pub fn value(&self) -> Value<'_> {
        match self {
            Stored::Value(v) => *v,
            Stored::Numeric(bytes) => Value::Numeric(bytes),
            Stored::Text(s) => Value::Str(s),
        }
    }
}

/// `n` encoded for a column holding at most `digits` significant digits.
fn stored_numeric(n: &Num, digits: u16) -> Result<Vec<u8>> {
    let parts = n.to_parts();
    if parts.digits.len() > usize::from(digits) {
        return Err(SqlError::new(
            sqlstate::PROGRAM_LIMIT_EXCEEDED,
            format!(
                "a numeric of {} significant digits is more than this column stores ({digits})",
                parts.digits.len()
            ),
        ));
    }
    let mut bytes = Vec::new();
    parts.encode(&mut bytes).ok_or_else(out_of_range)?;
    Ok(bytes)
}

/// The overflow error of integer type `ty` (PostgreSQL names the type).
pub(crate) fn integer_out_of_range(ty: SqlType) -> SqlError {
    let name = ty.integer_range().map_or("value", |(_, _, name)| name);
    SqlError::new(
        sqlstate::NUMERIC_VALUE_OUT_OF_RANGE,
        format!("{name} out of range"),
    )
}

/// `v` if integer type `ty` holds it.
pub(crate) fn in_range(v: i64, ty: SqlType) -> Result<i64> {
    match ty.integer_range() {
        Some((lo, hi, _)) if v < lo || v > hi => Err(integer_out_of_range(ty)),
        _ => Ok(v),
    }
}

pub(crate) fn out_of_range() -> SqlError {
    SqlError::new(sqlstate::NUMERIC_VALUE_OUT_OF_RANGE, "value out of range")
}

fn interval_range() -> SqlError {
    SqlError::new(sqlstate::DATETIME_FIELD_OVERFLOW, "interval out of range")
}

fn negated(iv: &Interval) -> Result<Interval> {
    iv.negate().ok_or_else(interval_range)
}

/// Timestamp `t` moved by `iv`, if a timestamp holds the result.
fn shifted(t: i64, iv: &Interval) -> Result<i64> {
    iv.add_to(t)
        .filter(|m| time::in_range(*m))
        .ok_or_else(|| SqlError::new(sqlstate::DATETIME_FIELD_OVERFLOW, "timestamp out of range"))
}

/// `days` if a date holds it.
fn date_in_range(days: i64) -> Result<i64> {
    if time::in_range(time::midnight(days)) {
        Ok(days)
    } else {
        Err(SqlError::new(
            sqlstate::DATETIME_FIELD_OVERFLOW,
            "date out of range",
        ))
    }
}

fn invalid_datetime(ty: SqlType, text: &str) -> SqlError {
    if time::field_out_of_range(text) {
        return SqlError::new(
            sqlstate::DATETIME_FIELD_OVERFLOW,
            format!("date/time field value out of range: \"{text}\""),
        );
    }
    let name = match ty {
        SqlType::TimestampTz => "timestamp with time zone".to_owned(),
        SqlType::Timestamp => "timestamp".to_owned(),
        other => other.name(),
    };
    SqlError::new(
        sqlstate::INVALID_DATETIME_FORMAT,
        format!("invalid input syntax for type {name}: \"{text}\""),
    )
}

fn invalid_text(ty: SqlType, text: &str) -> SqlError {
    SqlError::new(
        sqlstate::INVALID_TEXT_REPRESENTATION,
        format!("invalid input syntax for type {}: \"{text}\"", ty.name()),
    )
}

/// Array literal `text` of elements of type `elem`.
fn parse_array(text: &str, elem: SqlType) -> Result<Datum> {
    crate::values::array::split(text)?
        .into_iter()
        .map(|item| item.map_or(Ok(Datum::Null), |t| Datum::parse(&t, elem)))
        .collect::<Result<_>>()
        .map(Datum::Array)
}

/// `values` as an array literal.
fn format_array(values: &[Datum]) -> String {
    crate::values::array::format(values.iter().map(Datum::to_text))
}

/// A float stored as an ordered 64-bit integer (see `types`), and back.
fn float_to_key(v: f64) -> i64 {
    let bits = v.to_bits() as i64;
    if bits < 0 { bits ^ i64::MAX } else { bits }
}

fn key_to_float(k: i64) -> f64 {
    let bits = if k < 0 { k ^ i64::MAX } else { k };
    f64::from_bits(bits as u64)
}

/// A uuid's canonical text (lowercase, hyphenated 8-4-4-4-12) from any form PostgreSQL reads:
/// upper or lower case, in braces, with a hyphen after any group of four digits or none.
pub fn uuid_text(t: &str) -> Option<String> {
    let inner = match t.strip_prefix('{') {
        Some(rest) => rest.strip_suffix('}')?,
        None => t,
    };
    let mut digits = String::with_capacity(32);
    let mut since_hyphen: u32 = 0;
    for (i, c) in inner.chars().enumerate() {
        if c == '-' {
            // A hyphen only after a whole group of four digits, never first or doubled.
            if i == 0 || since_hyphen == 0 || !since_hyphen.is_multiple_of(4) {
                return None;
            }
            since_hyphen = 0;
            continue;
        }
        digits.push(c.to_ascii_lowercase());
        since_hyphen += 1;
        if !c.is_ascii_hexdigit() {
            return None;
        }
    }
    if digits.len() != 32 || inner.ends_with('-') {
        return None;
    }
    Some(format!(
        "{}-{}-{}-{}-{}",
        &digits[..8],
        &digits[8..12],
        &digits[12..16],
        &digits[16..20],
        &digits[20..]
    ))
}

impl Datum {
    pub fn is_null(&self) -> bool {
        matches!(self, Datum::Null)
    }

    /// The value of column type `ty` the engine returned.
    pub fn from_value(value: Value<'_>, ty: SqlType) -> Datum {
        match (value, ty) {
            (Value::Null, _) => Datum::Null,
            (Value::Int(v), SqlType::Bool) => Datum::Bool(v != 0),
            (Value::Int(v), SqlType::Date) => Datum::Date(v),
            (Value::Int(v), SqlType::Time) => Datum::Time(v),
            (Value::Timestamp(t), SqlType::TimestampTz) => Datum::TimestampTz(t),
            (Value::Int(v), SqlType::Float8) => Datum::Float(key_to_float(v)),
            (Value::Int(v), SqlType::Tid) => Datum::Tid(v as u64),
            (Value::Int(v), _) => Datum::Int(v),
            (Value::Decimal(d), _) => Datum::Numeric(Num::from_units(d.units(), d.scale())),
            (Value::Numeric(bytes), _) => match NumericParts::decode(bytes) {
                Some(parts) => Datum::Numeric(Num::from_parts(&parts)),
                None => Datum::Null,
            },
            (Value::Str(s), SqlType::Array(e)) => parse_array(s, e.ty()).unwrap_or(Datum::Null),
            (Value::Str(s), _) => Datum::Text(s.to_owned()),
            (Value::Timestamp(t), _) => Datum::Timestamp(t),
            _ => Datum::Null,
        }
    }

    /// This value as the engine stores a column of `ty` (the value already has that type: see
    /// [`cast`](Self::cast)).
    pub fn to_value(&self, ty: SqlType) -> Result<Stored<'_>> {
        Ok(Stored::Value(match (self, ty) {
            (Datum::Null, _) => Value::Null,
            (Datum::Bool(b), _) => Value::Int(i64::from(*b)),
            (Datum::Float(v), _) => Value::Int(float_to_key(*v)),
            (Datum::Int(v), _) => Value::Int(*v),
            (Datum::Tid(t), _) => Value::Int(*t as i64),
            (Datum::Numeric(n), _) => match ty.column_type(false) {
                overtake_engine::ColumnType::Decimal { scale, .. } => {
                    let units = n.units_at(scale).ok_or_else(out_of_range)?;
                    Value::Decimal(Decimal::new(units, scale).map_err(|_| out_of_range())?)
                }
                overtake_engine::ColumnType::Numeric(digits) => {
                    return stored_numeric(n, digits).map(Stored::Numeric);
                }
                _ => return Err(out_of_range()),
            },
            (Datum::Text(s), _) => Value::Str(s),
            (Datum::Timestamp(t) | Datum::TimestampTz(t), _) => Value::Timestamp(*t),
            (Datum::Date(d) | Datum::Time(d), _) => Value::Int(*d),
            (Datum::Interval(_), _) => return Err(out_of_range()),
            (Datum::Array(values), _) => return Ok(Stored::Text(format_array(values))),
        }))
    }

    /// Parses a value of type `ty` from its text form (a parameter, a COPY field, a literal).
    pub fn parse(text: &str, ty: SqlType) -> Result<Datum> {
        let t = text.trim();
        Ok(match ty {
            SqlType::Bool => match t.to_ascii_lowercase().as_str() {
                "t" | "true" | "yes" | "y" | "on" | "1" => Datum::Bool(true),
                "f" | "false" | "no" | "n" | "off" | "0" => Datum::Bool(false),
                _ => return Err(invalid_text(ty, text)),
            },
            // An object id: PostgreSQL also reads a negative 32-bit integer as the id it wraps
            // to.
            SqlType::Oid | SqlType::RegClass | SqlType::RegType | SqlType::RegNamespace => {
                let v: i64 = t.parse().map_err(|_| invalid_text(ty, text))?;
                match v {
                    0..=0xFFFF_FFFF => Datum::Int(v),
                    -0x8000_0000..0 => Datum::Int(v + (1 << 32)),
                    _ => {
                        return Err(SqlError::new(
                            sqlstate::NUMERIC_VALUE_OUT_OF_RANGE,
                            format!("value \"{t}\" is out of range for type oid"),
                        ));
                    }
                }
            }
            SqlType::Int2 | SqlType::Int4 | SqlType::Int8 => {
                let v: i64 = t.parse().map_err(|_| {
                    // Digits alone that do not fit are out of range; anything else is no integer.
                    let digits = t.strip_prefix(['-', '+']).unwrap_or(t);
                    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
                        integer_out_of_range(ty)
                    } else {
                        invalid_text(ty, text)
                    }
                })?;
                Datum::Int(v).cast(ty)?
            }
            SqlType::Numeric(_) => {
                Datum::Numeric(Num::parse(t)?.ok_or_else(|| invalid_text(ty, text))?).cast(ty)?
            }
            SqlType::Float8 => Datum::Float(match t.to_ascii_lowercase().as_str() {
                "nan" => f64::NAN,
                "infinity" | "inf" => f64::INFINITY,
                "-infinity" | "-inf" => f64::NEG_INFINITY,
                _ => t.parse().map_err(|_| invalid_text(ty, text))?,
            }),
            SqlType::Text
            | SqlType::VarChar(_)
            | SqlType::Char(_)
            | SqlType::Name
            | SqlType::CharByte => Datum::Text(text.to_owned()).cast(ty)?,
            SqlType::Timestamp => Datum::Timestamp(
                time::parse_timestamp(t).ok_or_else(|| invalid_datetime(ty, text))?,
            ),
            SqlType::TimestampTz => Datum::TimestampTz(
                time::parse_timestamptz(t).ok_or_else(|| invalid_datetime(ty, text))?,
            ),
            SqlType::Interval => Datum::Interval(Interval::parse(t).ok_or_else(|| {
                SqlError::new(
                    sqlstate::INVALID_DATETIME_FORMAT,
                    format!("invalid input syntax for type interval: \"{text}\""),
                )
            })?),
            SqlType::Time => Datum::Time(time::parse_time(t).ok_or_else(|| {
                if time::time_field_out_of_range(t) {
                    SqlError::new(
                        sqlstate::DATETIME_FIELD_OVERFLOW,
                        format!("date/time field value out of range: \"{text}\""),
                    )
                } else {
                    SqlError::new(
                        sqlstate::INVALID_DATETIME_FORMAT,
                        format!("invalid input syntax for type time: \"{text}\""),
                    )
                }
            })?),
            SqlType::Uuid => Datum::Text(uuid_text(t).ok_or_else(|| invalid_text(ty, text))?),
            SqlType::Tid => Datum::Tid(crate::values::tid::parse(text)?),
            // Not trimmed: spaces are bytes of an escape-form value.
            SqlType::Bytea => Datum::Text(crate::values::bytea::parse(text)?),
            SqlType::Json => Datum::Text(crate::values::json::parse_json(text)?),
            SqlType::Jsonb => Datum::Text(crate::values::json::parse_jsonb(text)?),
            SqlType::Array(e) if e.is_vector() => Datum::Array(
                t.split_whitespace()
                    .map(|v| Datum::parse(v, e.ty()))
                    .collect::<Result<_>>()?,
            ),
            SqlType::Array(e) => parse_array(t, e.ty())?,
            SqlType::Date => {
                // A timestamp's text gives its day, as PostgreSQL's date input takes it.
                let day = time::parse_date(t)
                    .or_else(|| time::parse_timestamp(t).map(time::day_of))
                    .ok_or_else(|| invalid_datetime(ty, text))?;
                Datum::Date(day)
            }
        })
    }

    /// Its text as PostgreSQL's output function for a column of type `ty` gives it (`None`:
    /// NULL): `char(n)` padded, `int2vector` and `oidvector` space-separated.
    pub fn to_text_as(&self, ty: SqlType) -> Option<String> {
        match (self, ty) {
            (Datum::Array(values), SqlType::Array(e)) if e.is_vector() => {
                let parts: Vec<String> = values.iter().filter_map(Datum::to_text).collect();
                Some(parts.join(" "))
            }
            (Datum::Text(t), SqlType::Char(_)) => Some(ty.shown(t).into_owned()),
            _ => self.to_text(),
        }
    }

    /// The text form PostgreSQL sends (`None` for NULL).
    pub fn to_text(&self) -> Option<String> {
        Some(match self {
            Datum::Null => return None,
            Datum::Bool(b) => (if *b { "t" } else { "f" }).into(),
            Datum::Int(v) => v.to_string(),
            Datum::Float(v) => format_float(*v),
            Datum::Numeric(n) => n.to_string(),
            Datum::Text(s) => s.clone(),
            Datum::Timestamp(t) => time::format_timestamp(*t),
            Datum::TimestampTz(t) => time::format_timestamptz(*t),
            Datum::Date(d) => time::format_date(*d),
            Datum::Time(t) => time::format_time(*t),
            Datum::Interval(iv) => iv.to_string(),
            Datum::Tid(t) => crate::values::tid::text(*t),
            Datum::Array(values) => format_array(values),
        })
    }

    /// [`to_text`](Self::to_text), borrowed where the value is text already.
    pub fn text_ref(&self) -> Option<std::borrow::Cow<'_, str>> {
        match self {
            Datum::Text(s) => Some(std::borrow::Cow::Borrowed(s)),
            d => d.to_text().map(std::borrow::Cow::Owned),
        }
    }

    /// The text a cast to `text` gives: the text form, but a boolean spelled out (`true`,
    /// `false`) as PostgreSQL's `bool::text` and `||` give it (its output form is `t`/`f`).
    pub fn to_text_cast(&self) -> Option<String> {
        match self {
            Datum::Bool(b) => Some((if *b { "true" } else { "false" }).into()),
            d => d.to_text(),
        }
    }

    /// This value converted to `ty` (assignment and explicit casts).
    pub fn cast(self, ty: SqlType) -> Result<Datum> {
        Ok(match (self, ty) {
            (Datum::Null, _) => Datum::Null,
            (Datum::Text(s), SqlType::Text) => Datum::Text(s),
            (Datum::Text(s), SqlType::VarChar(n)) => Datum::Text(fit(s, n, false)?),
            // Held without its trailing spaces, which `char(n)` does not count (as the
            // engine's rows give it back): padded to `n` only where a client sees it.
            (Datum::Text(s), SqlType::Char(n)) => {
                let s = fit(s, n, true)?;
                let kept = s.trim_end_matches(' ').len();
                Datum::Text(if kept == s.len() {
                    s
                } else {
                    s[..kept].to_owned()
                })
            }
            // Cut to their length in bytes, as PostgreSQL cuts them.
            (Datum::Text(s), SqlType::Name) => Datum::Text(byte_prefix(s, NAME_MAX)),
            (Datum::Text(s), SqlType::CharByte) => Datum::Text(byte_prefix(s, 1)),
            (Datum::Text(s), ty) => Datum::parse(&s, ty)?,
            (d, ty) if ty.is_string() => {
                Datum::Text(d.to_text_cast().unwrap_or_default()).cast(ty)?
            }
            (Datum::Int(v), SqlType::Int2 | SqlType::Int4 | SqlType::Int8) => {
                in_range(v, ty)?;
                Datum::Int(v)
            }
            // An integer cast to an object id wraps as a 32-bit one (`-1::oid` is 4294967295).
            (
                Datum::Int(v),
                SqlType::Oid | SqlType::RegClass | SqlType::RegType | SqlType::RegNamespace,
            ) => {
                if !(-0x8000_0000..=0xFFFF_FFFF).contains(&v) {
                    return Err(integer_out_of_range(ty));
                }
                Datum::Int(v & 0xFFFF_FFFF)
            }
            (Datum::Int(v), SqlType::Float8) => Datum::Float(v as f64),
            (Datum::Int(v), SqlType::Numeric(_)) => Datum::Numeric(Num::from_i64(v)).cast(ty)?,
            (Datum::Int(v), SqlType::Bool) => Datum::Bool(v != 0),
            (Datum::Float(v), SqlType::Int2 | SqlType::Int4 | SqlType::Int8) => {
                if !v.is_finite() || v.abs() >= 9.2e18 {
                    return Err(integer_out_of_range(ty));
                }
                Datum::Int(v.round_ties_even() as i64).cast(ty)?
            }
            (Datum::Float(v), SqlType::Float8) => Datum::Float(v),
            (Datum::Float(v), SqlType::Numeric(_)) => Datum::Numeric(Num::from_f64(v)?).cast(ty)?,
            (Datum::Numeric(n), SqlType::Numeric(None)) => Datum::Numeric(n),
            (Datum::Numeric(n), SqlType::Numeric(Some(Typmod { precision, scale }))) => {
                Datum::Numeric(n.fit(precision, scale)?)
            }
            (Datum::Numeric(n), SqlType::Int2 | SqlType::Int4 | SqlType::Int8) => {
                let v = n.to_i64().ok_or_else(|| integer_out_of_range(ty))?;
                Datum::Int(v).cast(ty)?
            }
            (Datum::Numeric(n), SqlType::Float8) => Datum::Float(n.to_f64()?),
            (Datum::Bool(b), SqlType::Bool) => Datum::Bool(b),
            (Datum::Bool(b), SqlType::Int2 | SqlType::Int4 | SqlType::Int8) => {
                Datum::Int(i64::from(b))
            }
            // The session's zone is UTC: local and UTC times are the same.
            (Datum::Timestamp(t) | Datum::TimestampTz(t), SqlType::Timestamp) => {
                Datum::Timestamp(t)
            }
            (Datum::Timestamp(t) | Datum::TimestampTz(t), SqlType::TimestampTz) => {
                Datum::TimestampTz(t)
            }
            (Datum::Timestamp(t) | Datum::TimestampTz(t), SqlType::Date) => {
                Datum::Date(time::day_of(t))
            }
            (Datum::Date(d), SqlType::Date) => Datum::Date(d),
            (Datum::Time(t), SqlType::Time) => Datum::Time(t),
            (Datum::Timestamp(t) | Datum::TimestampTz(t), SqlType::Time) => {
                Datum::Time(t.rem_euclid(time::MICROS_PER_DAY))
            }
            (Datum::Interval(iv), SqlType::Interval) => Datum::Interval(iv),
            (Datum::Tid(t), SqlType::Tid) => Datum::Tid(t),
            (Datum::Array(values), SqlType::Array(e)) => Datum::Array(
                values
                    .into_iter()
                    .map(|v| v.cast(e.ty()))
                    .collect::<Result<_>>()?,
            ),
            (Datum::Date(d), SqlType::Timestamp) => Datum::Timestamp(time::midnight(d)),
            (Datum::Date(d), SqlType::TimestampTz) => Datum::TimestampTz(time::midnight(d)),
            (d, ty) => {
                return Err(SqlError::new(
                    sqlstate::DATATYPE_MISMATCH,
                    format!("cannot cast {} to {}", d.type_name(), ty.name()),
                ));
            }
        })
    }

    fn type_name(&self) -> &'static str {
        match self {
            Datum::Null => "null",
            Datum::Bool(_) => "boolean",
            Datum::Int(_) => "integer",
            Datum::Float(_) => "double precision",
            Datum::Numeric(_) => "numeric",
            Datum::Text(_) => "text",
            Datum::Timestamp(_) => "timestamp",
            Datum::TimestampTz(_) => "timestamp with time zone",
            Datum::Date(_) => "date",
            Datum::Time(_) => "time without time zone",
            Datum::Interval(_) => "interval",
            Datum::Tid(_) => "tid",
            Datum::Array(_) => "array",
        }
    }

    /// SQL comparison: `None` if either side is NULL. A text value met by another type is read
    /// as that type (an untyped literal or parameter).
    pub fn sql_cmp(&self, other: &Datum) -> Result<Option<Ordering>> {
        use Datum::*;
        Ok(Some(match (self, other) {
            (Null, _) | (_, Null) => return Ok(None),
            (Int(a), Int(b)) => a.cmp(b),
            (Float(a), Float(b)) => float_cmp(*a, *b),
            (Int(a), Float(b)) => float_cmp(*a as f64, *b),
            (Float(a), Int(b)) => float_cmp(*a, *b as f64),
            (Numeric(a), Numeric(b)) => a.cmp(b),
            (Int(a), Numeric(b)) => Num::from_i64(*a).cmp(b),
            (Numeric(a), Int(b)) => a.cmp(&Num::from_i64(*b)),
            (Numeric(a), Float(b)) => float_cmp(a.to_f64()?, *b),
            (Float(_), Numeric(_)) => return other.sql_cmp(self).map(|o| o.map(Ordering::reverse)),
            (Text(a), Text(b)) => a.cmp(b),
            (Bool(a), Bool(b)) => a.cmp(b),
            (Timestamp(a) | TimestampTz(a), Timestamp(b) | TimestampTz(b)) => a.cmp(b),
            (Date(a), Date(b)) | (Time(a), Time(b)) => a.cmp(b),
            (Interval(a), Interval(b)) => a.cmp(b),
            (Tid(a), Tid(b)) => a.cmp(b),
            // Arrays compare element by element (NULL elements equal to each other and after
            // every value, as PostgreSQL's array comparison has them), then by length.
            (Array(a), Array(b)) => {
                for (x, y) in a.iter().zip(b) {
                    let o = x.sort_cmp(y);
                    if o != Ordering::Equal {
                        return Ok(Some(o));
                    }
                }
                a.len().cmp(&b.len())
            }
            (Date(d), Timestamp(t) | TimestampTz(t)) => time::midnight(*d).cmp(t),
            (Timestamp(t) | TimestampTz(t), Date(d)) => t.cmp(&time::midnight(*d)),
            (Text(s), typed) => {
                return typed
                    .sql_cmp(&Datum::parse(s, typed.natural_type())?)
                    .map(|o| o.map(Ordering::reverse));
            }
            (typed, Text(s)) => return typed.sql_cmp(&Datum::parse(s, typed.natural_type())?),
            (a, b) => {
                return Err(SqlError::new(
                    sqlstate::DATATYPE_MISMATCH,
                    format!("cannot compare {} with {}", a.type_name(), b.type_name()),
                ));
            }
        }))
    }

    /// The type a non-text value naturally has (for reading text against it).
    fn natural_type(&self) -> SqlType {
        match self {
            Datum::Bool(_) => SqlType::Bool,
            Datum::Int(_) => SqlType::Int8,
            Datum::Float(_) => SqlType::Float8,
            Datum::Numeric(_) => SqlType::Numeric(None),
            Datum::Timestamp(_) => SqlType::Timestamp,
            Datum::TimestampTz(_) => SqlType::TimestampTz,
            Datum::Date(_) => SqlType::Date,
            Datum::Time(_) => SqlType::Time,
            Datum::Interval(_) => SqlType::Interval,
            Datum::Tid(_) => SqlType::Tid,
            Datum::Array(values) => {
                let elem = values
                    .iter()
                    .find(|v| !v.is_null())
                    .and_then(|v| crate::values::types::ArrayElem::of(v.natural_type()))
                    .unwrap_or(crate::values::types::ArrayElem::Text);
                SqlType::Array(elem)
            }
            Datum::Null | Datum::Text(_) => SqlType::Text,
        }
    }

    /// Ordering for ORDER BY, GROUP BY and DISTINCT: NULLs last (PostgreSQL's default for
    /// ascending order), values of incomparable types by type.
    pub fn sort_cmp(&self, other: &Datum) -> Ordering {
        match (self.is_null(), other.is_null()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Greater,
            (false, true) => Ordering::Less,
            _ => self
                .sql_cmp(other)
                .ok()
                .flatten()
                .unwrap_or_else(|| self.type_name().cmp(other.type_name())),
        }
    }

    /// Arithmetic: `+ - * / %`.
    pub fn arith(&self, op: char, other: &Datum) -> Result<Datum> {
        use Datum::*;
        Ok(match (self, other) {
            (Null, _) | (_, Null) => Null,
            // Timestamps and intervals, by the calendar.
            (Timestamp(t), Interval(iv)) | (Interval(iv), Timestamp(t)) if op == '+' => {
                Timestamp(shifted(*t, iv)?)
            }
            (TimestampTz(t), Interval(iv)) | (Interval(iv), TimestampTz(t)) if op == '+' => {
                TimestampTz(shifted(*t, iv)?)
            }
            (Date(d), Interval(iv)) | (Interval(iv), Date(d)) if op == '+' => {
                Timestamp(shifted(time::midnight(*d), iv)?)
            }
            (Timestamp(t), Interval(iv)) if op == '-' => Timestamp(shifted(*t, &negated(iv)?)?),
            (TimestampTz(t), Interval(iv)) if op == '-' => TimestampTz(shifted(*t, &negated(iv)?)?),
            (Date(d), Interval(iv)) if op == '-' => {
                Timestamp(shifted(time::midnight(*d), &negated(iv)?)?)
            }
            (Timestamp(a) | TimestampTz(a), Timestamp(b) | TimestampTz(b)) if op == '-' => {
                Interval(
                    crate::values::interval::Interval::between(*a, *b)
                        .ok_or_else(interval_range)?,
                )
            }
            (Interval(a), Interval(b)) if op == '+' => {
                Interval(a.add(b).ok_or_else(interval_range)?)
            }
            (Interval(a), Interval(b)) if op == '-' => {
                Interval(a.add(&negated(b)?).ok_or_else(interval_range)?)
            }
            (Int(0), Interval(iv)) if op == '-' => Interval(negated(iv)?),
            // A date and a number of days; two dates' difference in days.
            (Date(d), Int(n)) | (Int(n), Date(d)) if op == '+' => Date(date_in_range(d + n)?),
            (Date(d), Int(n)) if op == '-' => Date(date_in_range(d - n)?),
            (Date(a), Date(b)) if op == '-' => Int(a - b),
            // A time of day moved by an interval's time part, around the clock; two times'
            // difference; a date at a time.
            (Time(t), Interval(iv)) | (Interval(iv), Time(t)) if op == '+' => {
                Time((t + iv.micros).rem_euclid(time::MICROS_PER_DAY))
            }
            (Time(t), Interval(iv)) if op == '-' => {
                Time((t - iv.micros).rem_euclid(time::MICROS_PER_DAY))
            }
            (Time(a), Time(b)) if op == '-' => Interval(crate::values::interval::Interval {
                months: 0,
                days: 0,
                micros: a - b,
            }),
            (Date(d), Time(t)) | (Time(t), Date(d)) if op == '+' => {
                Timestamp(time::midnight(*d) + t)
            }
            // Nothing else is defined on intervals and dates.
            (Interval(_) | Date(_) | Time(_), _) | (_, Interval(_) | Date(_) | Time(_)) => {
                return Err(SqlError::new(
                    sqlstate::UNDEFINED_FUNCTION,
                    format!(
                        "operator does not exist: {} {op} {}",
                        self.type_name(),
                        other.type_name()
                    ),
                ));
            }
            (Int(a), Int(b)) => Int(match op {
                '+' => a.checked_add(*b),
                '-' => a.checked_sub(*b),
                '*' => a.checked_mul(*b),
                '/' | '%' if *b == 0 => return Err(division_by_zero()),
                '/' => a.checked_div(*b),
                // The one remainder that overflows (MIN % -1) is 0, as PostgreSQL says.
                _ => Some(a.checked_rem(*b).unwrap_or(0)),
            }
            .ok_or_else(|| integer_out_of_range(SqlType::Int8))?),
            (Text(s), b) => Datum::parse(s, b.natural_type())?.arith(op, b)?,
            (a, Text(s)) => a.arith(op, &Datum::parse(s, a.natural_type())?)?,
            (Float(_), _) | (_, Float(_)) => {
                let (a, b) = (self.as_f64()?, other.as_f64()?);
                if (op == '/' || op == '%') && b == 0.0 {
                    return Err(division_by_zero());
                }
                let v = match op {
                    '+' => a + b,
                    '-' => a - b,
                    '*' => a * b,
                    '/' => a / b,
                    _ => a % b,
                };
                // PostgreSQL's float arithmetic refuses to overflow to infinity or underflow to
                // zero from finite, non-zero operands.
                if v.is_infinite() && a.is_finite() && b.is_finite() {
                    return Err(SqlError::new(
                        sqlstate::NUMERIC_VALUE_OUT_OF_RANGE,
                        "value out of range: overflow",
                    ));
                }
                let underflow = match op {
                    '*' => a != 0.0 && b != 0.0,
                    '/' => a != 0.0 && b.is_finite(),
                    _ => false,
                };
                if v == 0.0 && underflow {
                    return Err(SqlError::new(
                        sqlstate::NUMERIC_VALUE_OUT_OF_RANGE,
                        "value out of range: underflow",
                    ));
                }
                Float(v)
            }
            (a, b) => {
                let (a, b) = (a.as_num()?, b.as_num()?);
                Numeric(match op {
                    '+' => a.add(&b),
                    '-' => a.sub(&b),
                    '*' => a.mul(&b),
                    '/' => a.div(&b),
                    _ => a.rem(&b),
                }?)
            }
        })
    }

    fn as_f64(&self) -> Result<f64> {
        match self {
            Datum::Int(v) => Ok(*v as f64),
            Datum::Float(v) => Ok(*v),
            Datum::Numeric(n) => n.to_f64(),
            other => Err(not_a_number(other)),
        }
    }

    pub(crate) fn as_num(&self) -> Result<Num> {
        match self {
            Datum::Int(v) => Ok(Num::from_i64(*v)),
            Datum::Numeric(n) => Ok(n.clone()),
            other => Err(not_a_number(other)),
        }
    }
}

fn not_a_number(d: &Datum) -> SqlError {
    SqlError::new(
        sqlstate::DATATYPE_MISMATCH,
        format!("{} is not a number", d.type_name()),
    )
}

/// A string of at most `n` characters (`char(n)` keeps it unpadded: the engine pads).
fn fit(s: String, n: u32, padded: bool) -> Result<String> {
    if s.chars().count() > n as usize {
        // PostgreSQL lets an over-long value through when the excess is only spaces.
        let trimmed = s.trim_end_matches(' ');
        if trimmed.chars().count() <= n as usize {
            return Ok(trimmed.to_owned());
        }
        return Err(SqlError::new(
            sqlstate::STRING_DATA_RIGHT_TRUNCATION,
            format!(
                "value too long for type {}",
                if padded {
                    SqlType::Char(n)
                } else {
                    SqlType::VarChar(n)
                }
                .name()
            ),
        ));
    }
    Ok(s)
}

fn format_float(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        (if v > 0.0 { "Infinity" } else { "-Infinity" }).into()
    } else {
        let s = format!("{v}");
        if s.len() > 17 && (v.abs() >= 1e15 || v.abs() < 1e-4) {
            format!("{v:e}").replace('e', "e+").replace("e+-", "e-")
        } else {
            s
        }
    }
}

/// PostgreSQL's order of doubles: -0 equals 0, NaN equals NaN and is above every other value.
fn float_cmp(a: f64, b: f64) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
    }
}

/// The memory a row of values takes (an estimate: the values and what they hold on the heap),
/// for the statement's memory budget and the size of the batches a result is sent in.
pub fn row_bytes(values: &[Datum]) -> usize {
    let heap: usize = values
        .iter()
        .map(|v| match v {
            Datum::Text(s) => s.capacity(),
            Datum::Numeric(n) => n.heap_bytes(),
            Datum::Array(v) => row_bytes(v),
            _ => 0,
        })
        .sum();
    std::mem::size_of::<Vec<Datum>>() + std::mem::size_of_val(values) + heap
}
