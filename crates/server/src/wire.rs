//! Values on the wire: result columns described by type OID, rows encoded in text or binary
//! format as each column asks, parameters decoded from either, and errors as ErrorResponse
//! fields.

use bytes::{BufMut, BytesMut};
use overtake_sql::datum::Num;
use overtake_sql::plan::OutputColumn;
use overtake_sql::{Datum, SqlError, SqlType, sqlstate};
use pgwire::api::Type;
use pgwire::api::portal::Format;
use pgwire::api::results::{FieldFormat, FieldInfo};
use pgwire::error::{ErrorInfo, PgWireError};
use pgwire::messages::data::DataRow;

/// PostgreSQL's error for text that is not UTF-8, naming the first byte that is not.
fn not_utf8(bytes: &[u8], e: &std::str::Utf8Error) -> SqlError {
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

/// The format of column `i` (text when the client named fewer formats than columns).
pub fn format_of(format: &Format, i: usize) -> FieldFormat {
    match format {
        Format::UnifiedText => FieldFormat::Text,
        Format::UnifiedBinary => FieldFormat::Binary,
        Format::Individual(codes) => match codes.get(i) {
            Some(1) => FieldFormat::Binary,
            _ => FieldFormat::Text,
        },
    }
}

/// The PostgreSQL type of a SQL type.
pub fn pg_type(ty: SqlType) -> Type {
    Type::from_oid(ty.oid()).unwrap_or(Type::TEXT)
}

/// Row descriptions of `columns`, in `format`.
pub fn fields(columns: &[OutputColumn], format: &Format) -> Vec<FieldInfo> {
    columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            FieldInfo::new(
                c.name.clone(),
                None,
                None,
                pg_type(c.ty),
                format_of(format, i),
            )
        })
        .collect()
}

/// A data row of `values` (typed as `columns`), each column in its format.
pub fn data_row(values: &[Datum], columns: &[OutputColumn], format: &Format) -> DataRow {
    let mut buf = BytesMut::with_capacity(16 * values.len());
    for (i, v) in values.iter().enumerate() {
        let at = buf.len();
        buf.put_i32(-1);
        let written = match format_of(format, i) {
            FieldFormat::Text => v.to_text().map(|t| buf.put_slice(t.as_bytes())),
            FieldFormat::Binary => {
                encode_binary(v, columns.get(i).map_or(SqlType::Text, |c| c.ty), &mut buf)
            }
        };
        if written.is_some() {
            let len = (buf.len() - at - 4) as i32;
            buf[at..at + 4].copy_from_slice(&len.to_be_bytes());
        }
    }
    DataRow::new(buf, values.len() as i16)
}

fn encode_binary(v: &Datum, ty: SqlType, buf: &mut BytesMut) -> Option<()> {
    let v = match v {
        Datum::Null => return None,
        v => v.clone().cast(ty).unwrap_or_else(|_| v.clone()),
    };
    match (&v, ty) {
        (Datum::Bool(b), _) => buf.put_u8(u8::from(*b)),
        (Datum::Int(n), SqlType::Int2) => buf.put_i16(*n as i16),
        (Datum::Int(n), SqlType::Int4) => buf.put_i32(*n as i32),
        (Datum::Int(n), _) => buf.put_i64(*n),
        (Datum::Float(f), _) => buf.put_f64(*f),
        (Datum::Timestamp(t) | Datum::TimestampTz(t), _) => buf.put_i64(t - PG_EPOCH_MICROS),
        (Datum::Date(d), _) => buf.put_i32((d - PG_EPOCH_DAYS) as i32),
        (Datum::Interval(iv), _) => {
            buf.put_i64(iv.micros);
            buf.put_i32(iv.days);
            buf.put_i32(iv.months);
        }
        (Datum::Numeric(n), _) => encode_numeric(*n, buf),
        (other, _) => buf.put_slice(other.to_text().unwrap_or_default().as_bytes()),
    }
    Some(())
}

/// PostgreSQL's binary numeric: base-10000 digits with a weight, a sign and a display scale.
fn encode_numeric(n: Num, buf: &mut BytesMut) {
    let text = Num {
        units: n.units.abs(),
        scale: n.scale,
    }
    .to_string();
    let (int, frac) = text.split_once('.').unwrap_or((&text, ""));
    let int = int.trim_start_matches('0');
    let mut digits: Vec<i16> = Vec::new();
    let pad = (4 - int.len() % 4) % 4;
    let int_padded = format!("{}{int}", "0".repeat(pad));
    for chunk in int_padded.as_bytes().chunks(4) {
        digits.push(std::str::from_utf8(chunk).map_or(0, |s| s.parse().unwrap_or(0)));
    }
    let int_groups = digits.len() as i16;
    let frac_padded = format!("{frac}{}", "0".repeat((4 - frac.len() % 4) % 4));
    for chunk in frac_padded.as_bytes().chunks(4) {
        digits.push(std::str::from_utf8(chunk).map_or(0, |s| s.parse().unwrap_or(0)));
    }
    let mut weight = int_groups - 1;
    while digits.first() == Some(&0) {
        digits.remove(0);
        weight -= 1;
    }
    while digits.last() == Some(&0) {
        digits.pop();
    }
    if digits.is_empty() {
        weight = 0;
    }
    buf.put_i16(digits.len() as i16);
    buf.put_i16(weight);
    buf.put_u16(if n.units < 0 { 0x4000 } else { 0 });
    buf.put_u16(u16::from(n.scale));
    for d in digits {
        buf.put_i16(d);
    }
}

fn bad_binary(ty: SqlType) -> SqlError {
    SqlError::new(
        sqlstate::PROTOCOL_VIOLATION,
        format!(
            "incorrect binary data format in a parameter of type {}",
            ty.name()
        ),
    )
}

/// A parameter's value from its bytes in `binary` or text format.
pub fn decode_param(bytes: Option<&[u8]>, ty: SqlType, binary: bool) -> Result<Datum, SqlError> {
    let Some(b) = bytes else {
        return Ok(Datum::Null);
    };
    if !binary {
        let text = std::str::from_utf8(b).map_err(|e| not_utf8(b, &e))?;
        return Datum::parse(text, ty);
    }
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
        SqlType::Float8 => match b.len() {
            4 => Datum::Float(f64::from(f32::from_be_bytes(
                b.try_into().expect("4 bytes"),
            ))),
            8 => Datum::Float(f64::from_be_bytes(b.try_into().expect("8 bytes"))),
            _ => return Err(bad_binary(ty)),
        },
        SqlType::Interval => {
            let b = fixed(16)?;
            Datum::Interval(overtake_sql::interval::Interval {
                micros: i64::from_be_bytes(b[..8].try_into().expect("8 bytes")),
                days: i32::from_be_bytes(b[8..12].try_into().expect("4 bytes")),
                months: i32::from_be_bytes(b[12..].try_into().expect("4 bytes")),
            })
        }
        SqlType::Date => {
            let since_2000 = i32::from_be_bytes(fixed(4)?.try_into().expect("4 bytes"));
            let days = i64::from(since_2000) + PG_EPOCH_DAYS;
            if !overtake_sql::time::in_range(overtake_sql::time::midnight(days)) {
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
                .filter(|m| overtake_sql::time::in_range(*m))
                .ok_or_else(|| {
                    SqlError::new(sqlstate::DATETIME_FIELD_OVERFLOW, "timestamp out of range")
                })?;
            if ty == SqlType::TimestampTz {
                Datum::TimestampTz(micros)
            } else {
                Datum::Timestamp(micros)
            }
        }
        SqlType::Numeric { .. } => decode_numeric(b).ok_or_else(|| bad_binary(ty))?.cast(ty)?,
        SqlType::Text | SqlType::VarChar(_) | SqlType::Char(_) => {
            let s = std::str::from_utf8(b).map_err(|e| not_utf8(b, &e))?;
            Datum::Text(s.to_owned()).cast(ty)?
        }
    })
}

fn decode_numeric(b: &[u8]) -> Option<Datum> {
    let word = |i: usize| -> Option<i16> { Some(i16::from_be_bytes([*b.get(i)?, *b.get(i + 1)?])) };
    let (n, weight, sign, scale) = (
        word(0)? as usize,
        word(2)?,
        word(4)? as u16,
        word(6)? as u16,
    );
    if b.len() != 8 + 2 * n || sign == 0xC000 {
        return None;
    }
    let mut text = String::new();
    for i in 0..n {
        let d = word(8 + 2 * i)?;
        if !(0..10_000).contains(&d) {
            return None;
        }
        text.push_str(&format!("{d:04}"));
    }
    // The digits stand for groups `weight` down to `weight - n + 1`; place the decimal point.
    let int_groups = i32::from(weight) + 1;
    let digits = text.len() as i32;
    let (int, frac) = if int_groups <= 0 {
        (
            String::from("0"),
            "0".repeat((-int_groups * 4) as usize) + &text,
        )
    } else if int_groups * 4 >= digits {
        (
            text.clone() + &"0".repeat((int_groups * 4 - digits) as usize),
            String::new(),
        )
    } else {
        (
            text[..(int_groups * 4) as usize].to_owned(),
            text[(int_groups * 4) as usize..].to_owned(),
        )
    };
    let frac: String = frac
        .chars()
        .chain(std::iter::repeat('0'))
        .take(usize::from(scale))
        .collect();
    let s = format!(
        "{}{}{}{}",
        if sign == 0x4000 { "-" } else { "" },
        int,
        if frac.is_empty() { "" } else { "." },
        frac
    );
    Datum::parse(
        &s,
        SqlType::Numeric {
            precision: 38,
            scale: scale.min(16) as u8,
        },
    )
    .ok()
}

/// The ErrorResponse fields of `e`.
/// An error that ends the session (FATAL: the connection closes after it).
pub fn fatal(code: &str, message: String) -> PgWireError {
    PgWireError::UserError(Box::new(ErrorInfo::new(
        "FATAL".into(),
        code.into(),
        message,
    )))
}

pub fn error_info(e: &SqlError) -> ErrorInfo {
    // Errors that end the session are FATAL: the connection closes after them.
    let severity = match e.code {
        sqlstate::IDLE_IN_TRANSACTION_TIMEOUT | sqlstate::ADMIN_SHUTDOWN => "FATAL",
        _ => "ERROR",
    };
    let mut info = ErrorInfo::new(severity.to_owned(), e.code.to_owned(), e.message.clone());
    if let Some(about) = &e.about {
        info.detail = about.detail.clone();
        if about.table.is_some() {
            // One schema, as PostgreSQL's default search path shows it.
            info.schema = Some("public".to_owned());
        }
        info.table = about.table.clone();
        info.column = about.column.clone();
        info.constraint = about.constraint.clone();
    }
    info
}

/// `e` as pgwire's error.
pub fn pg_error(e: &SqlError) -> PgWireError {
    PgWireError::UserError(Box::new(error_info(e)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numerics_round_trip_through_the_binary_format() {
        for (units, scale) in [
            (0i128, 2u8),
            (1234567, 2),
            (-5, 3),
            (100_000_000, 0),
            (7, 6),
            (-123_400_000, 4),
        ] {
            let n = Num { units, scale };
            let mut buf = BytesMut::new();
            encode_numeric(n, &mut buf);
            let back = decode_numeric(&buf).expect("decodes");
            assert_eq!(
                back.sql_cmp(&Datum::Numeric(n)).unwrap(),
                Some(std::cmp::Ordering::Equal),
                "{n}"
            );
        }
        assert!(decode_numeric(&[0, 5]).is_none());
    }
}
