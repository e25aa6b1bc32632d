//! What bytea's functions and operators compute (bound in `bind::bytea`), over values held as
//! `\x` and hex digits (see `values::bytea`). NULL in, NULL out.

use super::{ByteaFunc, Context, Expr};
use crate::error::{Result, SqlError, sqlstate};
use crate::values::bytea;
use crate::values::datum::Datum;

/// Only UTF-8 is a database encoding here (as `server_encoding` says).
fn utf8(name: &str) -> Result<()> {
    match name.to_ascii_lowercase().replace(['-', '_'], "").as_str() {
        "utf8" | "unicode" => Ok(()),
        _ => Err(SqlError::unsupported(format!(
            "converting from or to encoding \"{name}\" (only UTF8)"
        ))),
    }
}

pub(super) fn eval(f: ByteaFunc, args: &[Expr], row: &[Datum], cx: &Context<'_>) -> Result<Datum> {
    let mut values = Vec::with_capacity(args.len());
    // Every argument but substring's (evaluated there) first, as text.
    for a in args.iter().take(if f == ByteaFunc::Substr { 1 } else { 2 }) {
        match a.eval(row, cx)? {
            Datum::Null => return Ok(Datum::Null),
            Datum::Text(s) => values.push(s),
            other => values.push(other.to_text().unwrap_or_default()),
        }
    }
    let first = &values[0];
    Ok(match f {
        ByteaFunc::Concat => Datum::Text(bytea::concat(first, &values[1])),
        ByteaFunc::Length => Datum::Int(bytea::len(first) as i64),
        ByteaFunc::Md5 => {
            use md5::Digest as _;
            let digest = md5::Md5::digest(bytea::to_bytes(first));
            Datum::Text(bytea::from_bytes(&digest)[2..].to_owned())
        }
        ByteaFunc::Encode => Datum::Text(bytea::encode(first, &values[1])?),
        ByteaFunc::Decode => Datum::Text(bytea::decode(first, &values[1])?),
        ByteaFunc::Substr => {
            let Some((skip, take)) = super::substring_range(args, row, cx)? else {
                return Ok(Datum::Null);
            };
            let bytes = bytea::to_bytes(first);
            let kept: Vec<u8> = bytes.into_iter().skip(skip).take(take).collect();
            Datum::Text(bytea::from_bytes(&kept))
        }
        ByteaFunc::GetByte => {
            let n = values[1].parse::<i64>().unwrap_or(-1);
            let len = bytea::len(first);
            match usize::try_from(n).ok().filter(|n| *n < len) {
                Some(n) => Datum::Int(i64::from(bytea::to_bytes(&first[2 + 2 * n..4 + 2 * n])[0])),
                None => {
                    return Err(SqlError::new(
                        sqlstate::ARRAY_SUBSCRIPT_ERROR,
                        format!("index {n} out of valid range, 0..{}", len as i64 - 1),
                    ));
                }
            }
        }
        ByteaFunc::ConvertTo => {
            utf8(&values[1])?;
            Datum::Text(bytea::from_bytes(first.as_bytes()))
        }
        ByteaFunc::ConvertFrom => {
            utf8(&values[1])?;
            let bytes = bytea::to_bytes(first);
            match String::from_utf8(bytes) {
                Ok(s) if !s.contains('\0') => Datum::Text(s),
                Ok(_) => {
                    return Err(SqlError::new(
                        sqlstate::CHARACTER_NOT_IN_REPERTOIRE,
                        "invalid byte sequence for encoding \"UTF8\": 0x00",
                    ));
                }
                Err(e) => {
                    let at = e.utf8_error().valid_up_to();
                    let bad = &e.as_bytes()[at..];
                    let shown: Vec<String> =
                        bad.iter().take(2).map(|b| format!("0x{b:02x}")).collect();
                    return Err(SqlError::new(
                        sqlstate::CHARACTER_NOT_IN_REPERTOIRE,
                        format!(
                            "invalid byte sequence for encoding \"UTF8\": {}",
                            shown.join(" ")
                        ),
                    ));
                }
            }
        }
    })
}
