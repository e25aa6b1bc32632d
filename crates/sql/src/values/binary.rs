//! PostgreSQL's binary format of values, as the protocol's binary parameters and results and
//! binary COPY carry them: big-endian integers, times from 2000-01-01, numerics in base-10000
//! digits, one-dimensional arrays. Pure computation on values.

use bytes::BufMut;

use crate::error::{SqlError, sqlstate};
use crate::values::datum::Datum;
use crate::values::numeric::Num;
use crate::values::types::SqlType;

/// PostgreSQL's error for text that is not UTF-8, naming the first byte that is not.
pub fn not_utf8(bytes: &[u8], e: &std::str::Utf8Error) -> SqlError {
    SqlError::new(
        sqlstate::CHARACTER_NOT_IN_REPERTOIRE,
        format!(
            "invalid byte sequence for encoding \"UTF8\": 0x{:02x}",
            bytes[e.valid_up_to()]
        ),
    )
}

/// Microseconds from the Unix epoch to PostgreSQL's (2000-01-01).
const PG_EPOCH_MICROS: i64 = 946_684_800_000_000;
/// Days from the Unix epoch to PostgreSQL's.
const PG_EPOCH_DAYS: i64 = 10_957;

/// Text from bytes that must be UTF-8.
pub fn utf8(bytes: &[u8]) -> Result<&str, SqlError> {
    std::str::from_utf8(bytes).map_err(|e| not_utf8(bytes, &e))
}

/// Writes a field: its length (-1 for NULL: `write` wrote nothing), then what `write` wrote.
pub fn put_field<B: BufMut + AsMut<[u8]>>(buf: &mut B, write: impl FnOnce(&mut B) -> Option<()>) {
    let at = buf.as_mut().len();
    buf.put_i32(-1);
    if write(buf).is_some() {
        let len = (buf.as_mut().len() - at - 4) as i32;
        buf.as_mut()[at..at + 4].copy_from_slice(&len.to_be_bytes());
    }
}

/// Writes `v` (of type `ty`) to `buf` in PostgreSQL's binary format; `None` (nothing written) for
/// NULL.
pub fn encode<B: BufMut + AsMut<[u8]>>(v: &Datum, ty: SqlType, buf: &mut B) -> Option<()> {
    let v = match v {
        Datum::Null => return None,
        v => v.clone().cast(ty).unwrap_or_else(|_| v.clone()),
    };
    match (&v, ty) {
        (Datum::Bool(b), _) => buf.put_u8(u8::from(*b)),
        (Datum::Int(n), SqlType::Int2) => buf.put_i16(*n as i16),
        (Datum::Int(n), SqlType::Int4) => buf.put_i32(*n as i32),
        (Datum::Int(n), ty) if ty.is_oid() => buf.put_u32(*n as u32),
        (Datum::Int(n), _) => buf.put_i64(*n),
        (Datum::Float(f), _) => buf.put_f64(*f),
        (Datum::Timestamp(t) | Datum::TimestampTz(t), _) => buf.put_i64(t - PG_EPOCH_MICROS),
        (Datum::Date(d), _) => buf.put_i32((d - PG_EPOCH_DAYS) as i32),
        (Datum::Time(t), _) => buf.put_i64(*t),
        (Datum::Interval(iv), _) => {
            buf.put_i64(iv.micros);
            buf.put_i32(iv.days);
            buf.put_i32(iv.months);
        }
        (Datum::Numeric(n), _) => encode_numeric(n, buf),
        (Datum::Array(values), SqlType::Array(e)) => encode_array(values, e.ty(), buf),
        // Its 16 bytes, from the canonical text the value is held as.
        (Datum::Text(t), SqlType::Char(_)) => buf.put_slice(ty.shown(t).as_bytes()),
        (Datum::Text(t), SqlType::Bytea) => buf.put_slice(&crate::values::bytea::to_bytes(t)),
        // jsonb's binary format: a version byte (1), then the text.
        (Datum::Text(t), SqlType::Jsonb) => {
            buf.put_u8(1);
            buf.put_slice(t.as_bytes());
        }
        (Datum::Tid(t), _) => buf.put_slice(&crate::values::tid::to_binary(*t)),
        (Datum::Text(t), SqlType::Uuid) => {
            let hex: String = t.chars().filter(|c| *c != '-').collect();
            buf.put_u128(u128::from_str_radix(&hex, 16).unwrap_or_default());
        }
        (other, _) => buf.put_slice(other.to_text().unwrap_or_default().as_bytes()),
    }
    Some(())
}

/// PostgreSQL's binary array, one dimension: its dimensions, whether it holds a NULL, the
/// element type, then each element's length and bytes (-1: NULL).
fn encode_array<B: BufMut + AsMut<[u8]>>(values: &[Datum], elem: SqlType, buf: &mut B) {
    buf.put_i32(i32::from(!values.is_empty()));
    buf.put_i32(i32::from(values.iter().any(Datum::is_null)));
    buf.put_u32(elem.oid());
    if !values.is_empty() {
        buf.put_i32(values.len() as i32);
        buf.put_i32(1);
    }
    for v in values {
        put_field(buf, |buf| encode(v, elem, buf));
    }
}

/// A binary array parameter's elements, of type `elem` (one dimension; 22P03 otherwise).
fn decode_array(b: &[u8], ty: SqlType, elem: SqlType) -> Result<Datum, SqlError> {
    let mut at = 0;
    let int = |at: &mut usize| -> Result<i32, SqlError> {
        let bytes = b.get(*at..*at + 4).ok_or_else(|| bad_binary(ty))?;
        *at += 4;
        Ok(i32::from_be_bytes(bytes.try_into().expect("4 bytes")))
    };
    let dims = int(&mut at)?;
    let _has_null = int(&mut at)?;
    let _elem_oid = int(&mut at)?;
    let n = match dims {
        0 => 0,
        1 => {
            let n = int(&mut at)?;
            let _lower = int(&mut at)?;
            usize::try_from(n).map_err(|_| bad_binary(ty))?
        }
        _ => {
            return Err(SqlError::unsupported(
                "an array parameter of more than one dimension",
            ));
        }
    };
    let mut values = Vec::with_capacity(n.min(b.len() / 4));
    for _ in 0..n {
        let len = int(&mut at)?;
        if len < 0 {
            values.push(Datum::Null);
            continue;
        }
        let end = at.checked_add(len as usize).ok_or_else(|| bad_binary(ty))?;
        let bytes = b.get(at..end).ok_or_else(|| bad_binary(ty))?;
        values.push(decode(bytes, elem)?);
        at = end;
    }
    if at != b.len() {
        return Err(bad_binary(ty));
    }
    Ok(Datum::Array(values))
}

/// PostgreSQL's binary numeric: base-10000 digits with a weight, a sign and a display scale.
fn encode_numeric<B: BufMut>(n: &Num, buf: &mut B) {
    let scale = usize::from(n.scale());
    let mut text = n.magnitude_digits();
    if text.len() <= scale {
        text = "0".repeat(scale + 1 - text.len()) + &text;
    }
    // Groups of four digits aligned on the point.
    let int_len = text.len() - scale;
    let lead = (4 - int_len % 4) % 4;
    let padded = "0".repeat(lead) + &text + &"0".repeat((4 - scale % 4) % 4);
    let mut digits: Vec<i16> = padded
        .as_bytes()
        .chunks(4)
        .map(|c| c.iter().fold(0i16, |acc, d| acc * 10 + i16::from(d - b'0')))
        .collect();
    let mut weight = ((int_len + lead) / 4) as i16 - 1;
    let leading = digits.iter().take_while(|&&d| d == 0).count();
    digits.drain(..leading);
    weight -= leading as i16;
    while digits.last() == Some(&0) {
        digits.pop();
    }
    if digits.is_empty() {
        weight = 0;
    }
    buf.put_i16(digits.len() as i16);
    buf.put_i16(weight);
    buf.put_u16(if n.is_negative() { 0x4000 } else { 0 });
    buf.put_u16(n.scale());
    for d in digits {
        buf.put_i16(d);
    }
}

fn bad_binary(ty: SqlType) -> SqlError {
    SqlError::new(
        sqlstate::INVALID_BINARY_REPRESENTATION,
        format!("incorrect binary data format for type {}", ty.name()),
    )
}

/// A value of type `ty` from its bytes in PostgreSQL's binary format (22P03 if they are not one).
pub fn decode(b: &[u8], ty: SqlType) -> Result<Datum, SqlError> {
    let fixed = |n: usize| -> Result<&[u8], SqlError> {
        if b.len() == n {
            Ok(b)
        } else {
            Err(bad_binary(ty))
        }
    };
    Ok(match ty {
        SqlType::Bool => Datum::Bool(fixed(1)?[0] != 0),
        SqlType::Int2 | SqlType::Int4 | SqlType::Int8 => match b.len() {
            2 => Datum::Int(i64::from(i16::from_be_bytes([b[0], b[1]]))),
            4 => Datum::Int(i64::from(i32::from_be_bytes(
                b.try_into().expect("4 bytes"),
            ))),
            8 => Datum::Int(i64::from_be_bytes(b.try_into().expect("8 bytes"))),
            _ => return Err(bad_binary(ty)),
        }
        .cast(ty)?,
        SqlType::Oid | SqlType::RegClass | SqlType::RegType | SqlType::RegNamespace => Datum::Int(
            i64::from(u32::from_be_bytes(fixed(4)?.try_into().expect("4 bytes"))),
        ),
        SqlType::Array(e) => decode_array(b, ty, e.ty())?,
        SqlType::Bytea => Datum::Text(crate::values::bytea::from_bytes(b)),
        SqlType::Tid => Datum::Tid(crate::values::tid::from_binary(
            fixed(6)?.try_into().expect("6 bytes"),
        )),
        SqlType::Uuid => {
            let bits = u128::from_be_bytes(fixed(16)?.try_into().expect("16 bytes"));
            Datum::parse(&format!("{bits:032x}"), ty)?
        }
        SqlType::Float8 => match b.len() {
            4 => Datum::Float(f64::from(f32::from_be_bytes(
                b.try_into().expect("4 bytes"),
            ))),
            8 => Datum::Float(f64::from_be_bytes(b.try_into().expect("8 bytes"))),
            _ => return Err(bad_binary(ty)),
        },
        SqlType::Interval => {
            let b = fixed(16)?;
            Datum::Interval(crate::values::interval::Interval {
                micros: i64::from_be_bytes(b[..8].try_into().expect("8 bytes")),
                days: i32::from_be_bytes(b[8..12].try_into().expect("4 bytes")),
                months: i32::from_be_bytes(b[12..].try_into().expect("4 bytes")),
            })
        }
        SqlType::Time => {
            let micros = i64::from_be_bytes(fixed(8)?.try_into().expect("8 bytes"));
            if !(0..=crate::values::time::MICROS_PER_DAY).contains(&micros) {
                return Err(SqlError::new(
                    sqlstate::DATETIME_FIELD_OVERFLOW,
                    "time out of range",
                ));
            }
            Datum::Time(micros)
        }
        SqlType::Date => {
            let since_2000 = i32::from_be_bytes(fixed(4)?.try_into().expect("4 bytes"));
            let days = i64::from(since_2000) + PG_EPOCH_DAYS;
            if !crate::values::time::in_range(crate::values::time::midnight(days)) {
                return Err(SqlError::new(
                    sqlstate::DATETIME_FIELD_OVERFLOW,
                    "date out of range",
                ));
            }
            Datum::Date(days)
        }
        SqlType::Timestamp | SqlType::TimestampTz => {
            let since_2000 = i64::from_be_bytes(fixed(8)?.try_into().expect("8 bytes"));
            // PostgreSQL's infinities (i64::MAX and MIN) and anything past the years a
            // timestamp holds here are refused, not wrapped.
            let micros = since_2000
                .checked_add(PG_EPOCH_MICROS)
                .filter(|m| crate::values::time::in_range(*m))
                .ok_or_else(|| {
                    SqlError::new(sqlstate::DATETIME_FIELD_OVERFLOW, "timestamp out of range")
                })?;
            if ty == SqlType::TimestampTz {
                Datum::TimestampTz(micros)
            } else {
                Datum::Timestamp(micros)
            }
        }
        SqlType::Numeric(_) => decode_numeric(b).ok_or_else(|| bad_binary(ty))?.cast(ty)?,
        SqlType::Jsonb => match b.split_first() {
            Some((1, text)) => {
                let s = utf8(text)?;
                Datum::parse(s, ty)?
            }
            _ => return Err(bad_binary(ty)),
        },
        SqlType::Text
        | SqlType::VarChar(_)
        | SqlType::Char(_)
        | SqlType::Name
        | SqlType::Json
        | SqlType::CharByte => {
            let s = utf8(b)?;
            Datum::Text(s.to_owned()).cast(ty)?
        }
    })
}

/// A binary numeric; digits past its display scale are cut off, as PostgreSQL's receive does.
fn decode_numeric(b: &[u8]) -> Option<Datum> {
    let word = |i: usize| -> Option<i16> { Some(i16::from_be_bytes([*b.get(i)?, *b.get(i + 1)?])) };
    let (n, weight, sign, scale) = (word(0)?, word(2)?, word(4)? as u16, word(6)? as u16);
    let n = usize::try_from(n).ok()?;
    if b.len() != 8 + 2 * n
        || !matches!(sign, 0 | 0x4000)
        || scale > crate::values::numeric::MAX_SCALE
    {
        return None;
    }
    let mut text = String::with_capacity(4 * n);
    for i in 0..n {
        let d = word(8 + 2 * i)?;
        if !(0..10_000).contains(&d) {
            return None;
        }
        text.push_str(&format!("{d:04}"));
    }
    if text.is_empty() {
        text.push('0');
    }
    // The digits are groups `weight` down to `weight - n + 1`: text * 10^(4 * (weight - n + 1)).
    let exponent = 4 * (i64::from(weight) - n as i64 + 1);
    let value = Num::parse(&format!("{text}e{exponent}")).ok()??;
    let value = value.truncate(i64::from(scale));
    Some(Datum::Numeric(if sign == 0x4000 {
        value.neg()
    } else {
        value
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numerics_round_trip_through_the_binary_format() {
        for text in [
            "0.00",
            "12345.67",
            "-0.005",
            "100000000",
            "0.000007",
            "-12340.0000",
            "123456789012345678901234567890.123456789",
        ] {
            let n = Num::parse(text).unwrap().unwrap();
            let mut buf = Vec::new();
            encode_numeric(&n, &mut buf);
            let back = decode_numeric(&buf).expect("decodes");
            assert_eq!(back.to_text().as_deref(), Some(text));
        }
        // PostgreSQL's bytes for 12345.67: 3 digits, weight 1, positive, scale 2: 1 2345 6700.
        let mut buf = Vec::new();
        encode_numeric(&Num::parse("12345.67").unwrap().unwrap(), &mut buf);
        assert_eq!(
            &buf[..],
            &[0, 3, 0, 1, 0, 0, 0, 2, 0, 1, 0x09, 0x29, 0x1A, 0x2C]
        );
        assert!(decode_numeric(&[0, 5]).is_none());
    }

    #[test]
    fn bytea_travels_as_its_raw_bytes() {
        let raw = [0u8, 0x41, 0xff, b'\\'];
        let held = decode(&raw, SqlType::Bytea).expect("decodes");
        assert_eq!(held, Datum::Text("\\x0041ff5c".into()));
        let mut buf = Vec::new();
        encode(&held, SqlType::Bytea, &mut buf).expect("not null");
        assert_eq!(&buf[..], &raw);
    }

    #[test]
    fn jsonb_travels_with_its_version_byte() {
        let held = decode(b"\x01{\"b\":1,\"a\":2}", SqlType::Jsonb).unwrap();
        assert_eq!(held, Datum::Text(r#"{"a": 2, "b": 1}"#.into()));
        let mut buf = Vec::new();
        encode(&held, SqlType::Jsonb, &mut buf).expect("not null");
        assert_eq!(&buf[..], b"\x01{\"a\": 2, \"b\": 1}");
        assert!(decode(b"\x02{}", SqlType::Jsonb).is_err());
        let json = decode(b"{\"b\" : 1}", SqlType::Json).unwrap();
        assert_eq!(json, Datum::Text(r#"{"b" : 1}"#.into()));
    }
}
